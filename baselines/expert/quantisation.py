"""Expert row-wise INT8 quantise / dequantise (the streaming skeleton with whole rows: the
row max |x| comes from the reduction engine; the rounding is the reference's exact FP32
sequence, so codes compare bit for bit). MX4 block quantisation is in quantisation_mx4.py."""
from __future__ import annotations

import torch

from backend.sim.builder import LocalMemoryOverflow
from baselines.expert.common import DT, cached, cdiv, launch, n_pes, to_f32
from baselines.expert.streaming import Operand, stream2d, stream_tiles, tile_shape


def _quant_rows(m: int, n: int, target: int = 16384, tail: int = 1) -> list[tuple[int, int]]:
    """Candidate (rows per tile, rows per tail tile), largest first (streaming.stream_tiles):
    whole rows. The program is DMA-bound (1.7 cycles of off-chip transfer per FP32 element and
    PE against ~0.2 of SIMD), so the tile size only trades the DMA descriptor cost (16 cycles per
    tile) against the tail (the last tile's DMA latency, body and store run after the last byte
    arrives): big tiles of up to `target` elements, the last one split into tiles of `tail` rows.
    The caller takes the first that fits local memory."""
    rows_per_pe = cdiv(m, n_pes())
    br = max(1, min(rows_per_pe, target // max(n, 1)))
    br = 1 << (br.bit_length() - 1)
    out = []
    while br >= 1:
        out.append((br, max(1, min(br, tail))))
        br //= 2
    return out


@cached
def quantize_int8_program(m: int, n: int, dtype: str):
    """Per tile of BR whole rows (engine plan, critical path after the tile arrives marked *):
      SIMD* |x|            RE* amax = max |x| per row          SIMD  h = copysign(0.5, x)
      SIMD* y = x * (127 / max(amax, 1e-12))   SIMD* y += h   SIMD* q = (i8) y (truncating)
    trunc(y + copysign(0.5, y)) is the reference's round-half-away (floor(y + .5) for y >= 0,
    ceil(y - .5) below: the same fp32 additions), and h depends only on the sign of x (127 / amax
    > 0), so it runs on SIMD while the RE reduces. The reference's clamp to [-127, 127] is
    implied: |x| <= amax gives |y| <= 127 + 2 ulp < 127.5 in fp32 (NaN stays NaN either way).
    Tiles: streaming.stream_tiles (loads a tile ahead, the last big tile split into single rows);
    the tile size is the largest candidate of _quant_rows whose buffers fit the local memory."""
    def make_body(b, br):
        xf = b.tile([br, n], "f32", name="xf") if dtype != "f32" else None
        y, h = (b.tile([br, n], "f32", name=k) for k in "yh")
        amax_t = b.tile([br], "f32", name="amax")

        def body(b, tiles, outs):
            x = to_f32(b, tiles[0], xf)
            b.unary("abs", x, out=y)
            b.reduce(y, 1, "max", out=amax_t)
            b.binary("copysign", 0.5, x, out=h)
            amax = b.maximum(b.reshape(amax_t, [br, 1]), 1e-12)
            inv = b.binary("div", 127.0, amax)
            b.mul(x, inv, out=y)
            b.add(y, h, out=y)
            b.cast(y, "i8", out=outs[0])
            b.div(amax, 127.0, out=outs[1])
        return body

    for BR, BRs in _quant_rows(m, n):
        try:
            return stream_tiles(f"expert_quant_int8_{m}x{n}_{dtype}", m, n, BR, n, [Operand("x", dtype, n)],
                                [Operand("q", "i8", n), Operand("scale", "f32", 0, per_row=True)], make_body,
                                tail_rows=BRs)
        except LocalMemoryOverflow:
            if BR == 1:
                raise


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
