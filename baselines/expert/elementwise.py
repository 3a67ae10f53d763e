"""Expert elementwise kernels: add, GELU (tanh / erf), SiLU-and-mul (SwiGLU), bias + GELU.

All are the streaming skeleton (baselines/expert/streaming.py) with a few SIMD / SFU passes
per tile in FP32: they are DMA-bound by a factor of ~10 on MTIA 2i, so the expert's job is only
to keep every PE's DMA queue full (persistent grid, 32 KB double-buffered tiles).
"""
from __future__ import annotations

import torch

from baselines.expert.common import ACTS, DT, attach, cached, launch, to_f32
from baselines.expert.streaming import Operand, stream2d, tile_shape


def _f32_tmps(b, shape, n):
    return [b.tile(shape, "f32", name="tmp") for _ in range(n)]


@cached
def add_program(n: int, dtype: str):
    BR, BC = tile_shape(1, n, 8192)
    st = {}

    def setup(b):
        st["t"] = _f32_tmps(b, [BR, BC], 3)

    def body(b, ins, outs):
        x, y, acc = st["t"]
        b.add(to_f32(b, ins[0], x), to_f32(b, ins[1], y), out=acc if dtype != "f32" else outs[0])
        if dtype != "f32":
            b.cast(acc, dtype, out=outs[0])

    return stream2d(f"expert_add_{n}_{dtype}", 1, n, BR, BC,
                    [Operand("x", dtype, n), Operand("y", dtype, n)],
                    [Operand("out", dtype, n)], body, setup)


@cached
def act_program(rows: int, cols: int, dtype: str, act: str, gated: bool = False, bias: bool = False):
    """out[r, c] = act(x[r, c] (+ bias[c])) (* x[r, cols + c] when gated: SiLU-and-mul)."""
    BR, BC = tile_shape(rows, cols, 8192)
    xs = 2 * cols if gated else cols
    ins = [Operand("x", dtype, xs)]
    if gated:
        ins.append(Operand("up", dtype, xs, offset=cols))
    if bias:
        ins.append(Operand("bias", dtype, 0))
    st = {}

    def setup(b):
        st["t"] = _f32_tmps(b, [BR, BC], 4)
        st["bias"] = b.tile([1, BC], "f32", name="bias_f") if bias else None

    def body(b, tiles, outs):
        x, t0, t1, y = st["t"]
        to_f32(b, tiles[0], x) if dtype != "f32" else None
        xin = x if dtype != "f32" else tiles[0]
        if bias:
            b.add(xin, to_f32(b, tiles[-1], st["bias"]) if dtype != "f32" else tiles[-1], out=x)
            xin = x
        final = outs[0] if dtype == "f32" and not gated else y
        ACTS[act](b, xin, [t0, t1], out=final)
        if gated:
            up = tiles[1] if dtype == "f32" else b.cast(tiles[1], "f32", out=t0)
            b.mul(y, up, out=outs[0] if dtype == "f32" else y)
        if dtype != "f32":
            b.cast(y, dtype, out=outs[0])

    return stream2d(f"expert_{act}{'_mul' if gated else ''}{'_bias' if bias else ''}_{rows}x{cols}_{dtype}",
                    rows, cols, BR, BC, ins, [Operand("out", dtype, cols)], body, setup)


def add(x, y):
    n = x.numel()
    out = torch.empty_like(x)
    prog = add_program(n, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x.contiguous(), y.contiguous(), out])
    return out


def _act(x, act, **kw):
    out = torch.empty_like(x)
    prog = act_program(1, x.numel(), DT[x.dtype], act, **kw)
    launch(prog, prog.meta["grid"], [x.contiguous(), out])
    return out


def gelu_tanh(x):
    return _act(x, "gelu_tanh")


def gelu_erf(x):
    return _act(x, "gelu")


def silu_mul(x):
    m, h2 = x.shape
    h = h2 // 2
    out = torch.empty((m, h), dtype=x.dtype)
    prog = act_program(m, h, DT[x.dtype], "silu", gated=True)
    x = x.contiguous()
    launch(prog, prog.meta["grid"], [x, x, out])
    return out


def bias_gelu(x, bias):
    m, n = x.shape
    out = torch.empty_like(x)
    prog = act_program(m, n, DT[x.dtype], "gelu_tanh", bias=True)
    launch(prog, prog.meta["grid"], [x.contiguous(), bias.contiguous(), out])
    return out


attach("add", add_program, add)
attach("gelu_tanh", act_program, gelu_tanh)
attach("gelu_erf", act_program, gelu_erf)
attach("silu_mul", act_program, silu_mul)
attach("bias_gelu", act_program, bias_gelu)
