"""Expert row-wise INT8 quantise / dequantise (the streaming skeleton with whole rows: the
row max |x| comes from the reduction engine; the rounding is the reference's exact FP32
sequence, so codes compare bit for bit). MX4 block quantisation is not written yet."""
from __future__ import annotations

import torch

from baselines.expert.common import DT, attach, cached, cmp, launch, to_f32
from baselines.expert.streaming import Operand, stream2d, tile_shape


@cached
def quantize_int8_program(m: int, n: int, dtype: str):
    BR, _ = tile_shape(m, n, 8192, whole_rows=True)
    st = {}

    def setup(b):
        st["xf"] = b.tile([BR, n], "f32", name="xf") if dtype != "f32" else None
        st["y"], st["u"], st["v"] = (b.tile([BR, n], "f32", name=k) for k in "yuv")
        st["pos"] = b.tile([BR, n], "i1", name="pos")

    def body(b, tiles, outs):
        x = to_f32(b, tiles[0], st["xf"])
        y, u, v = st["y"], st["u"], st["v"]
        amax = b.maximum(b.reshape(b.reduce(b.unary("abs", x, out=y), 1, "max"), [BR, 1]), 1e-12)
        inv = b.binary("div", 127.0, amax)
        b.mul(x, inv, out=y)
        b.unary("floor", b.add(y, 0.5, out=u), out=u)
        b.unary("ceil", b.sub(y, 0.5, out=v), out=v)
        cmp(b, "oge", y, 0.0, out=st["pos"])
        b.emit("simd.select", [y], {"cond": st["pos"], "a": u, "b": v}, {"dtype": "f32"})
        b.emit("simd.clamp", [y], {"x": y, "lo": -127.0, "hi": 127.0}, {"dtype": "f32"})
        b.cast(y, "i8", out=outs[0])
        b.div(amax, 127.0, out=outs[1])

    return stream2d(f"expert_quant_int8_{m}x{n}_{dtype}", m, n, BR, n, [Operand("x", dtype, n)],
                    [Operand("q", "i8", n), Operand("scale", "f32", 0, per_row=True)], body, setup)


@cached
def dequantize_int8_program(m: int, n: int):
    BR, _ = tile_shape(m, n, 8192, whole_rows=True)
    st = {}

    def setup(b):
        st["qf"] = b.tile([BR, n], "f32", name="qf")

    def body(b, tiles, outs):
        b.mul(b.cast(tiles[0], "f32", out=st["qf"]), tiles[1], out=outs[0])

    return stream2d(f"expert_dequant_int8_{m}x{n}", m, n, BR, n,
                    [Operand("q", "i8", n), Operand("scale", "f32", 0, per_row=True)],
                    [Operand("out", "f32", n)], body, setup)


def quantize_int8_rowwise(x):
    m, n = x.shape
    q, scale = torch.empty((m, n), dtype=torch.int8), torch.empty(m, dtype=torch.float32)
    prog = quantize_int8_program(m, n, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x.contiguous(), q, scale])
    return q, scale


def dequantize_int8_rowwise(q, scale):
    m, n = q.shape
    out = torch.empty((m, n), dtype=torch.float32)
    prog = dequantize_int8_program(m, n)
    launch(prog, prog.meta["grid"], [q.contiguous(), scale.float().contiguous(), out])
    return out


attach("quantize_int8_rowwise", quantize_int8_program, quantize_int8_rowwise)
attach("dequantize_int8_rowwise", dequantize_int8_program, dequantize_int8_rowwise)
