"""Expert MX4 (OCP MX FP4, E2M1 codes with a shared power-of-two scale per group of 32).

Tiling: the flat tensor is cut into tiles of G = 128 groups ([G, 32] elements); each persistent
program (one per PE) streams a contiguous range of tiles. Inputs are double-buffered as two
register sets with the loads of tile i + 1 issued before the compute of tile i (prefetched_loop:
a body of >8 SIMD ops would otherwise stall the in-order command processor before the next DMA),
outputs are double-buffered (copies=2) so the stores of tile i overlap tile i + 1, and the
ragged end is bounded by the DMA box (hi=), never read or written past it. Byte streams
(codes, exponents) move as 1-D boxes: the DMA prices every innermost row as one burst-padded
run, so a [G, 16] u8 box would cost twice its bytes. Both kernels are DMA-bound by a wide margin
on MTIA 2i (quantise: ~1.7 cycles of off-chip transfer per FP32 element and PE, against ~0.25
cycles of SIMD + RE work).

Quantise, per tile (engine plan):
  SIMD  |x|                                    (cast to FP32 first for BF16 inputs)
  RE    amax = max |x| along the group         (reduction engine, runs beside SIMD)
  SIMD  on [G] only: k = max(exponent field of amax - 2, 0) = the biased shared exponent (the
        reference's clamp(floor(log2 amax) - 2, -127, 127) + 127), scale = 2^(k - 127) built
        from bits (the denormal 2^-127 for k = 0) and scale / 4 (a denormal for k <= 2): exact
  SIMD  i = floor(|x| / (scale / 4))           (exact: a power-of-two scaling, then a truncating cast)
  SIMD  index = i + 32 * (x < 0) + 64 * (odd position)
  MLU   code = LUT[index]: a 128-entry table lookup (tl.gather) that folds E2M1 round-half-away
        (the rounding boundaries 0.25, 0.75, ..., 5 are integers in units of 1/4), the 6.0
        saturation, the sign bit and the nibble shift of odd positions into one u8 gather
  RE    byte = code[2j] + code[2j + 1] along the pair axis ([G, 16, 2] -> [G, 16])
Dequantise, per tile: MLU broadcast of each byte to its two positions, SIMD shift by (0, 4) and
mask to a nibble, MLU gather from the 16-entry E2M1 value table, SIMD multiply by the group scale
2^(e - 127) (built from bits, denormal for e = 0). Results compare bit for bit with the reference.
"""
from __future__ import annotations

from typing import Callable

import torch

from baselines.expert.common import ProgramBuilder
from baselines.expert.common import DT, cached, cdiv, cmp, launch, partition, pid64, s64, smin

GROUP = 32
_THRESHOLDS_X4 = (1, 3, 5, 7, 10, 14, 20)      # E2M1 rounding boundaries 0.25 .. 5, times 4
_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _quant_lut() -> list[int]:
    """LUT[64 * odd + 32 * neg + floor(4|x| / scale)] = the code, shifted into its nibble."""
    out = []
    for odd in (0, 1):
        for neg in (0, 1):
            for i in range(32):
                code = sum(i >= t for t in _THRESHOLDS_X4) | (8 if neg else 0)
                out.append(code << (4 * odd))
    return out


def _dequant_lut() -> list[float]:
    """LUT[code] = the E2M1 value (code 8 is -0.0, as the reference gives)."""
    return [(-1.0 if c & 8 else 1.0) * _E2M1[c & 7] for c in range(16)]


# ----------------------------------------------------------------------------- raw instructions

def bitcast(b: ProgramBuilder, x, to: str, out=None):
    r = out or b._new("bits", to, x.shape)
    b.emit("simd.cast", [r], {"a": x}, {"kind": "bitcast", "from": x.dtype, "to": to})
    return r


def select(b: ProgramBuilder, cond, x, y, dtype: str, shape, out=None):
    r = out or b._new("sel", dtype, shape)
    b.emit("simd.select", [r], {"cond": cond, "a": x, "b": y}, {"dtype": dtype})
    return r


def const_tile(b: ProgramBuilder, values: list, shape: list[int], dtype: str):
    r = b.tile(shape, dtype, name="lut")
    b.emit("simd.const", [r], {}, {"dtype": dtype, "shape": list(shape), "values": list(values)})
    return r


def lookup(b: ProgramBuilder, table, index, out):
    """out[g, j] = table[g, index[g, j]] (the layout unit's in-memory gather)."""
    b.emit("mlu.gather", [out], {"src": table, "index": index}, {"axis": 1})
    return out


def pow2_from_biased(b: ProgramBuilder, k, G: int, out=None):
    """[G] i32 biased exponents k (0..254) -> 2^(k - 127) in FP32, exact (k = 0: the denormal 2^-127)."""
    bits = b.binary("shl", k, 23)
    zero = cmp(b, "eq", k, 0)
    bits = select(b, zero, 1 << 22, bits, "i32", [G])
    return bitcast(b, bits, "f32", out=out)


def pe_range(b: ProgramBuilder, n_tiles: int, per: int):
    """[first, last) tile range of this program (a contiguous share, `partition`)."""
    first = s64(b, "mul", pid64(b), per)
    return first, smin(b, s64(b, "add", first, per), n_tiles)


def prefetched_loop(b: ProgramBuilder, first, last, load: Callable, body: Callable) -> None:
    """body(tiles, t) for every tile t in [first, last), with the loads of tile t + 1 issued
    before the body of tile t. The command processor issues in order and stalls once an engine
    queue is full (8 entries), so a body of more than 8 SIMD ops would otherwise hold back the
    next DMA until the current tile has arrived; here two register sets alternate (the loop is
    unrolled by two) and DMA_IN always has the next transfer queued.
    load(t, regs) issues the loads of tile t into `regs` (None: new registers) and returns them;
    it and body must bound their boxes by `last`, so a tile t >= last reads and writes nothing."""
    a = load(first, None)
    nxt = None
    with b.loop(first, last, 2, name="pair") as t:
        t1 = s64(b, "add", t, 1)
        nxt = load(t1, nxt)
        body(a, t)
        a = load(s64(b, "add", t, 2), a)
        body(nxt, t1)


# ----------------------------------------------------------------------------- quantise

@cached
def mx4_quantize_program(n: int, dtype: str, G: int = 128):
    """x [n] -> packed codes [n/2] u8, biased shared exponents [n/32] u8 (plan: module docstring)."""
    ng = n // GROUP
    n_tiles = cdiv(ng, G)
    grid, per = partition(n_tiles)
    b = ProgramBuilder(f"expert_mx4_quant_{n}_{dtype}")
    X, P, E = b.param_ptr("x", dtype), b.param_ptr("packed", "u8"), b.param_ptr("exponents", "u8")
    # resident tables: the 128-entry code LUT (one copy per group row, as tl.gather indexes rows)
    lut = b.broadcast(const_tile(b, _quant_lut(), [1, 128], "u8"), [G, 128], out=b.tile([G, 128], "u8", name="lut"))
    col = [64 * (j & 1) for j in range(GROUP)]
    col_pos = const_tile(b, col, [1, GROUP], "i32")
    col_neg = const_tile(b, [c + 32 for c in col], [1, GROUP], "i32")
    xf = b.tile([G, GROUP], "f32", name="xf") if dtype != "f32" else None
    ax = b.tile([G, GROUP], "f32", name="absx")
    idx = b.tile([G, GROUP], "i32", name="idx")
    base = b.tile([G, GROUP], "i32", name="base")
    neg = b.tile([G, GROUP], "i1", name="neg")
    code = b.tile([G, GROUP], "u8", name="code")
    amax = b.tile([G], "f32", name="amax")
    packed = b.tile([G * GROUP // 2], "u8", copies=2, name="o_packed")
    exps = b.tile([G], "u8", copies=2, name="o_exps")
    first, last = pe_range(b, n_tiles, per)
    g_end = smin(b, s64(b, "mul", last, G), ng)     # groups of this program end here

    def groups_left(t):
        g0 = s64(b, "mul", t, G)
        return g0, s64(b, "sub", g_end, g0)

    def load(t, xt):
        g0, hg = groups_left(t)
        return b.dma_load(X, s64(b, "mul", g0, GROUP), [G * GROUP], [1], copies=1,
                          hi=[s64(b, "mul", hg, GROUP)], other=0.0, out=xt)

    def body(xt, t):
        g0, hg = groups_left(t)
        xv = b.reshape(xt, [G, GROUP])
        x = b.cast(xv, "f32", out=xf) if dtype != "f32" else xv
        b.unary("abs", x, out=ax)
        b.reduce(ax, 1, "max", out=amax)
        # shared exponent (biased): max(exponent field of amax - 2, 0); amax >= 0, so no sign bit
        k = b.binary("smax", b.binary("sub", b.binary("shru", bitcast(b, amax, "i32"), 23), 2), 0)
        b.cast(k, "u8", out=exps)
        quarter = b.mul(pow2_from_biased(b, k, G), 0.25)           # 2^(shared - 2), exact
        b.binary("div", ax, b.reshape(quarter, [G, 1]), out=ax)     # 4 |x| / scale, exact
        b.cast(ax, "i32", out=idx)                                  # floor (non-negative)
        cmp(b, "olt", xv, 0.0, out=neg)
        select(b, neg, col_neg, col_pos, "i32", [G, GROUP], out=base)
        b.add(idx, base, out=idx)
        lookup(b, lut, idx, code)
        b.reduce(b.reshape(code, [G * GROUP // 2, 2]), 1, "sum", out=packed)
        b.dma_store(P, packed, s64(b, "mul", g0, GROUP // 2), [1], hi=[s64(b, "mul", hg, GROUP // 2)])
        b.dma_store(E, exps, g0, [1], hi=[hg])

    prefetched_loop(b, first, last, load, body)
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


def mx4_quantize(x):
    x = x.contiguous().reshape(-1)
    n = x.numel()
    assert n % GROUP == 0, "MX4 needs a multiple of 32 elements"
    packed = torch.empty(n // 2, dtype=torch.uint8)
    exps = torch.empty(n // GROUP, dtype=torch.uint8)
    prog = mx4_quantize_program(n, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x, packed, exps])
    return packed, exps


# ----------------------------------------------------------------------------- dequantise

@cached
def mx4_dequantize_program(ng: int, G: int = 128):
    """packed [16 ng] u8, exponents [ng] u8 -> out [32 ng] f32 (plan: module docstring)."""
    n_tiles = cdiv(ng, G)
    grid, per = partition(n_tiles)
    H = GROUP // 2
    b = ProgramBuilder(f"expert_mx4_dequant_{ng * GROUP}")
    P, E, OUT = b.param_ptr("packed", "u8"), b.param_ptr("exponents", "u8"), b.param_ptr("out", "f32")
    lut = b.broadcast(const_tile(b, _dequant_lut(), [1, 16], "f32"), [G, 16], out=b.tile([G, 16], "f32", name="lut"))
    shifts = const_tile(b, [0, 4] * H, [1, GROUP], "u8")
    pairs = b.tile([G, H, 2], "u8", name="pairs")
    nib = b.tile([G, GROUP], "u8", name="nib")
    val = b.tile([G, GROUP], "f32", name="val")
    scale = b.tile([G], "f32", name="scale")
    out = b.tile([G, GROUP], "f32", copies=2, name="o_out")
    first, last = pe_range(b, n_tiles, per)
    g_end = smin(b, s64(b, "mul", last, G), ng)

    def groups_left(t):
        g0 = s64(b, "mul", t, G)
        return g0, s64(b, "sub", g_end, g0)

    def load(t, regs):
        g0, hg = groups_left(t)
        pk, ex = regs or (None, None)
        pk = b.dma_load(P, s64(b, "mul", g0, H), [G * H], [1], hi=[s64(b, "mul", hg, H)], other=0, out=pk)
        ex = b.dma_load(E, g0, [G], [1], hi=[hg], other=127, out=ex)
        return pk, ex

    def body(regs, t):
        pk, ex = regs
        g0, hg = groups_left(t)
        # each byte to both of its positions, then (byte >> (0, 4)) & 15 = the two nibbles in order
        b.broadcast(b.reshape(pk, [G, H, 1]), [G, H, 2], out=pairs)
        b.binary("shru", b.reshape(pairs, [G, GROUP]), shifts, out=nib)
        b.binary("and", nib, 15, out=nib)
        lookup(b, lut, nib, val)
        pow2_from_biased(b, b.cast(ex, "i32"), G, out=scale)
        b.mul(val, b.reshape(scale, [G, 1]), out=out)
        b.dma_store(OUT, out, s64(b, "mul", g0, GROUP), [GROUP, 1], hi=[hg, GROUP])

    prefetched_loop(b, first, last, load, body)
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


def mx4_dequantize(packed, exponents):
    ng = exponents.numel()
    out = torch.empty(ng * GROUP, dtype=torch.float32)
    prog = mx4_dequantize_program(ng)
    launch(prog, prog.meta["grid"], [packed.contiguous(), exponents.contiguous(), out])
    return out
