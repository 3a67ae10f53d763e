"""Expert elementwise kernels: add, GELU (tanh / erf), SiLU-and-mul (SwiGLU), bias + GELU.

All are the streaming skeleton (baselines/expert/streaming.py) with a few SIMD / SFU passes
per tile in FP32: they are DMA-bound by a factor of ~10 on MTIA 2i, so the expert's job is only
to keep every PE's DMA queue full (persistent grid, 32 KB double-buffered tiles). Bias + GELU
runs on the software-pipelined, column-blocked skeleton (stream_tiles): loads a tile ahead of
the body, the bias slice loaded once per program, the last tile split so the tail is short.
"""
from __future__ import annotations

import torch

from baselines.expert.common import ACTS, DT, cached, cdiv, first_fit, launch, n_pes, to_f32
from baselines.expert.streaming import Operand, stream2d, stream_tiles, tile_shape


def _f32_tmps(b, shape, n):
    return [b.tile(shape, "f32", name="tmp") for _ in range(n)]


# (elements per tile, lean) from the MTIA 2i size down: the first whose buffers fit the chip's
# local memory. lean: FP32 inputs declare no FP32 temporaries (they are unused then).
_SIZES = [(e, lean) for e in (8192, 4096, 2048, 1024) for lean in (False, True)]


@cached
def add_program(n: int, dtype: str):
    return first_fit(lambda c: _add(n, dtype, *c), _SIZES)


def _add(n: int, dtype: str, elems: int, lean: bool):
    BR, BC = tile_shape(1, n, elems)
    st = {}

    def setup(b):
        st["t"] = [None] * 3 if lean and dtype == "f32" else _f32_tmps(b, [BR, BC], 3)

    def body(b, ins, outs):
        x, y, acc = st["t"]
        b.add(to_f32(b, ins[0], x), to_f32(b, ins[1], y), out=acc if dtype != "f32" else outs[0])
        if dtype != "f32":
            b.cast(acc, dtype, out=outs[0])

    return stream2d(f"expert_add_{n}_{dtype}", 1, n, BR, BC,
                    [Operand("x", dtype, n), Operand("y", dtype, n)],
                    [Operand("out", dtype, n)], body, setup)


@cached
def act_program(rows: int, cols: int, dtype: str, act: str, gated: bool = False):
    """out[r, c] = act(x[r, c]) (* x[r, cols + c] when gated: SiLU-and-mul). With a bias:
    bias_act_program."""
    return first_fit(lambda c: _act_program(rows, cols, dtype, act, gated, c[0]), [(e, False) for e in (8192, 4096, 2048, 1024)])


def _act_program(rows: int, cols: int, dtype: str, act: str, gated: bool, elems: int):
    BR, BC = tile_shape(rows, cols, elems)
    xs = 2 * cols if gated else cols
    ins = [Operand("x", dtype, xs)]
    if gated:
        ins.append(Operand("up", dtype, xs, offset=cols))
    st = {}

    def setup(b):
        st["t"] = _f32_tmps(b, [BR, BC], 4)

    def body(b, tiles, outs):
        x, t0, t1, y = st["t"]
        to_f32(b, tiles[0], x) if dtype != "f32" else None
        xin = x if dtype != "f32" else tiles[0]
        final = outs[0] if dtype == "f32" and not gated else y
        ACTS[act](b, xin, [t0, t1], out=final)
        if gated:
            up = tiles[1] if dtype == "f32" else b.cast(tiles[1], "f32", out=t0)
            b.mul(y, up, out=outs[0] if dtype == "f32" else y)
        if dtype != "f32":
            b.cast(y, dtype, out=outs[0])

    return stream2d(f"expert_{act}{'_mul' if gated else ''}_{rows}x{cols}_{dtype}",
                    rows, cols, BR, BC, ins, [Operand("out", dtype, cols)], body, setup)


def _bias_tile(rows: int, cols: int, target: int = 8192, tail: int = 1024,
               min_bc: int = 256) -> tuple[int, int, int]:
    """[BR, BC] and the tail tile's rows for the column-blocked pipelined stream
    (streaming.stream_tiles).

    BC: the PEs are split into tc = cols / BC groups, one per column block; each program DMAs
    its BC-wide bias slice once, so a narrow block makes that load small (a full 4096-column FP32
    bias is 16 KB: ~0.5k cycles of the PE's DMA_IN at the SRAM share, against ~0.1k for 256
    columns). tc is the largest power of two <= n_pes() leaving blocks of >= min_bc elements
    (1 KB rows in FP32: the per-run DMA cost stays negligible).
    BR: the stream is DMA-bound (~1.7 cycles of off-chip transfer per FP32 element and PE against
    ~0.3 of SIMD / SFU), so the tile size only trades the DMA descriptor cost (16 cycles per
    tile) against the tail: the work left after a program's last byte arrives (DMA latency, the
    body, the store). Big tiles (`target` elements) with the last one split into `tail`-element
    tiles get both small."""
    P = n_pes()
    tc = 1
    while tc * 2 <= P and cdiv(cols, tc * 2) >= min_bc:
        tc *= 2
    bc = cdiv(cols, tc)
    if tc > 1:
        bc = -(-bc // 32) * 32   # every block row starts on a 32-byte burst
    rows_per_pe = cdiv(rows, max(1, P // cdiv(cols, bc)))

    def rows_for(elems):
        br = max(1, min(rows_per_pe, elems // bc))
        return 1 << (br.bit_length() - 1)
    return rows_for(target), bc, rows_for(tail)


@cached
def bias_act_program(rows: int, cols: int, dtype: str, act: str):
    """out[r, c] = act(x[r, c] + bias[c]) on the pipelined skeleton (streaming.stream_tiles): the
    PEs are grouped by column block, so each program DMAs (and converts) its bias block once
    instead of once per tile, and the next tile's load is queued before the current body (whose
    ~8-10 SIMD / SFU passes would otherwise hold the command processor back from issuing it).
    Per tile: [SIMD cast] SIMD x + bias, the activation (4 SIMD + 1 SFU for GELU-tanh), [SIMD cast]."""
    return first_fit(lambda e: _bias_act(rows, cols, dtype, act, e), (8192, 4096, 2048, 1024))


def _bias_act(rows: int, cols: int, dtype: str, act: str, target: int):
    BR, BC, BRs = _bias_tile(rows, cols, target, min(1024, target))
    st = {}

    def prologue(b, resident):
        if dtype == "f32":
            st["b"] = resident["bias"]
        else:
            st["b"] = b.cast(resident["bias"], "f32", out=st.get("bias_f") or b.tile([1, BC], "f32", name="bias_f"))
            st["bias_f"] = st["b"]

    def make_body(b, br):
        x, t = _f32_tmps(b, [br, BC], 2)

        def body(b, tiles, outs):
            xin = tiles[0] if dtype == "f32" else b.cast(tiles[0], "f32", out=x)
            b.add(xin, st["b"], out=x)
            ACTS[act](b, x, [t, t], out=outs[0] if dtype == "f32" else t)
            if dtype != "f32":
                b.cast(t, dtype, out=outs[0])
        return body

    return stream_tiles(f"expert_{act}_bias_{rows}x{cols}_{dtype}", rows, cols, BR, BC,
                        [Operand("x", dtype, cols), Operand("bias", dtype, 0)],
                        [Operand("out", dtype, cols)], make_body, prologue, tail_rows=BRs)


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
    prog = bias_act_program(m, n, DT[x.dtype], "gelu_tanh")
    launch(prog, prog.meta["grid"], [x.contiguous(), bias.contiguous(), out])
    return out
