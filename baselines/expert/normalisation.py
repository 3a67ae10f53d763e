"""Expert row normalisations (forward): softmax, LayerNorm, RMSNorm.

Whole rows live in local memory ([BR, n] tiles, double-buffered), so each row is read from
DRAM exactly once: the row statistics come from the reduction engine (max / sum along axis 1,
running concurrently with SIMD and SFU), and the normalised row is written once. LayerNorm and
RMSNorm load their weight / bias rows once per program (resident), in FP32.
"""
from __future__ import annotations

import torch

from baselines.expert.common import DT, cached, first_fit, launch, to_f32
from baselines.expert.streaming import Operand, stream2d, tile_shape

_ELEMS = 8192  # elements per tile (32 KB in FP32); wider rows take one row per tile


def _rows(b, x, BR):
    return b.reshape(x, [BR, 1])


@cached
def norm_program(kind: str, m: int, n: int, dtype: str, eps: float = 0.0):
    """Whole-row tiles of _ELEMS elements, fewer rows (down to one) where the chip's local
    memory is smaller; if one row still does not fit, `lean`: one FP32 row temporary fewer
    (the squares / normalised row reuse a buffer that is dead by then, see _norm)."""
    cands = [(e, lean) for e in (_ELEMS, _ELEMS // 2, _ELEMS // 4, _ELEMS // 8) for lean in (False, True)]
    return first_fit(lambda c: _norm(kind, m, n, dtype, eps, *c), cands)


def _norm(kind: str, m: int, n: int, dtype: str, eps: float, elems: int, lean: bool):
    BR, _ = tile_shape(m, n, elems, whole_rows=True)
    ins = [Operand("x", dtype, n)]
    if kind in ("layernorm", "rmsnorm"):
        ins.append(Operand("weight", dtype, 0, resident=True))
    if kind == "layernorm":
        ins.append(Operand("bias", dtype, 0, resident=True))
    st = {}

    def setup(b):
        st["xf"] = b.tile([BR, n], "f32", name="xf") if dtype != "f32" else None
        st["t"] = b.tile([BR, n], "f32", name="t")
        if kind == "softmax" or (lean and kind == "rmsnorm"):
            st["y"] = st["t"]      # softmax: one temporary; rmsnorm has no use for t otherwise
        elif lean:
            st["y"] = st["xf"]     # layernorm: x is dead once t = x - mean (FP32: the output tile)
        else:
            st["y"] = b.tile([BR, n], "f32", name="y")

    def body(b, tiles, outs):
        x = to_f32(b, tiles[0], st["xf"])
        t, y = st["t"], (st["y"] if st["y"] is not None else outs[0])
        fin = outs[0] if dtype == "f32" else y
        if kind == "softmax":
            mx = _rows(b, b.reduce(x, 1, "max"), BR)
            b.sub(x, mx, out=t)
            b.exp(t, out=t)
            s = b.unary("recip", _rows(b, b.reduce(t, 1, "sum"), BR))
            b.mul(t, s, out=outs[0] if dtype == "f32" else t)
        else:
            w = st["w"]
            if kind == "layernorm":
                mean = b.mul(_rows(b, b.reduce(x, 1, "sum"), BR), 1.0 / n)
                b.sub(x, mean, out=t)
                xc = t
            else:
                xc = x
            b.mul(xc, xc, out=y)
            var = _rows(b, b.reduce(y, 1, "sum"), BR)
            rstd = b.unary("rsqrt", b.fma(var, 1.0 / n, eps))
            b.mul(xc, rstd, out=y)
            if kind == "layernorm":
                b.fma(y, w, st["bias"], out=fin)
            else:
                b.mul(y, w, out=fin)
        if dtype != "f32":
            b.cast(y, dtype, out=outs[0])

    def prologue(b, res):
        for k, name in (("w", "weight"), ("bias", "bias")):
            if name in res:
                st[k] = to_f32(b, res[name])

    return stream2d(f"expert_{kind}_{m}x{n}_{dtype}", m, n, BR, n, ins, [Operand("out", dtype, n)],
                    body, setup, prologue=prologue)


def _run(kind, x, *params, eps=0.0):
    m, n = x.shape
    out = torch.empty_like(x)
    prog = norm_program(kind, m, n, DT[x.dtype], eps)
    launch(prog, prog.meta["grid"], [x.contiguous()] + [p.contiguous() for p in params] + [out])
    return out


def softmax(x):
    return _run("softmax", x)


def layernorm(x, weight, bias):
    return _run("layernorm", x, weight, bias, eps=1e-5)


def rmsnorm(x, weight):
    return _run("rmsnorm", x, weight, eps=1e-6)
