"""Expert kernels of the `other` family: cumsum (lengths -> jagged offsets) and rotary position
embedding (RoPE, rotate-half).

jagged_offsets: offsets = [0, l0, l0 + l1, ...]. A blocked scan on ONE program: tile i of T
lengths gets an inclusive scan on the reduction engine (re.scan); SIMD adds the running carry
(a [1] tile) in place and the layout unit picks the tile total (its last element: the padding
beyond n reads as 0), which a one-element SIMD add folds into the carry for tile i + 1. Input
and scanned tiles are triple-buffered: the consumer (RE, 32 elements/cycle) is about as fast as
the DMA, so a second buffer alone would expose the 200-cycle DMA latency every other tile.
The scan of tile i + 1 does not wait for the carry of tile i, so RE (scan), SIMD (carry add) and
DMA overlap; the loop-carried chain is two tiny instructions per tile. Why one PE: the programs
of a grid cannot exchange the carries (no inter-PE synchronisation), and the model gives one
active PE the whole off-chip bandwidth (the share is bandwidth / active PEs), so one program
streams the lengths as fast as 64 would; the alternative (a second launch that adds per-PE
carries) reads the lengths twice. The per-element work is one RE and one SIMD pass (32/cycle).

rope: x [B, S, H, D] -> out, out[..., :D/2] = x1 cos - x2 sin, out[..., D/2:] = x2 cos + x1 sin,
cos / sin [S, D/2]. A work item is a box [Bt, BS, Ht, D/2] of both halves (two DMAs of
D/2-element runs); cos / sin come as [1, BS, 1, D/2] tiles, broadcast over batches and heads
on SIMD, so each position's table row is read once per batch block. Items are spread over the
PEs (one program each), the loads of item i + 1 are issued before the compute of item i (two
register sets), results are double-buffered; the arithmetic is the reference's FP32 sequence.
DMA-bound: ~1.7 cycles of off-chip transfer per FP32 element and PE against 3 SIMD passes/32.
"""
from __future__ import annotations

import torch

from baselines.expert.common import ProgramBuilder
from baselines.expert.common import DT, cached, cdiv, launch, partition, pow2_at_least, s64, smin
from baselines.expert.quantisation_mx4 import const_tile, pe_range, prefetched_loop

# ----------------------------------------------------------------------------- cumsum

def scan(b: ProgramBuilder, x, out):
    """Inclusive prefix sum of a 1-D tile on the reduction engine."""
    b.emit("re.scan", [out], {"srcs": [x]}, {"axis": 0, "kind": "sum"})
    return out


@cached
def jagged_offsets_program(n: int, dtype: str, tile_bytes: int = 48 * 1024):
    """Tiles of up to 48 KB (x3 input buffers, x3 scanned: 288 KB), at least ~16 of them when n
    is small, so the pipeline fill (first DMA) and drain (last add + store) stay short."""
    isz = 8 if dtype == "i64" else 4
    T = min(tile_bytes // isz, pow2_at_least(cdiv(n, 16), 64))
    n_tiles = cdiv(n, T)
    b = ProgramBuilder(f"expert_jagged_offsets_{n}_{dtype}")
    L, O = b.param_ptr("lengths", dtype), b.param_ptr("offsets", dtype)
    carry = b.zeros([1], dtype, out=b.tile([1], dtype, name="carry"))
    b.dma_store(O, carry, 0, [1])                                   # offsets[0] = 0
    last_idx = const_tile(b, [T - 1], [1], "i32")
    total = b.tile([1], dtype, name="total")
    incl = b.tile([T], dtype, copies=3, name="incl")            # scanned, then offset in place
    x = None
    with b.loop(0, n_tiles, 1, name="tile") as t:
        s0 = s64(b, "mul", t, T)
        left = s64(b, "sub", n, s0)
        x = b.dma_load(L, s0, [T], [1], copies=3, hi=[left], other=0, out=x)
        scan(b, x, incl)
        b.emit("mlu.gather", [total], {"src": incl, "index": last_idx}, {"axis": 0})
        b.add(incl, carry, out=incl)
        b.add(carry, total, out=carry)
        b.dma_store(O, incl, s64(b, "add", s0, 1), [1], hi=[left])
    prog = b.build()
    prog.meta["grid"] = 1
    return prog


def jagged_offsets(lengths):
    lengths = lengths.contiguous()
    n = lengths.numel()
    out = torch.empty(n + 1, dtype=lengths.dtype)
    prog = jagged_offsets_program(n, DT[lengths.dtype])
    launch(prog, prog.meta["grid"], [lengths, out])
    return out


# ----------------------------------------------------------------------------- RoPE

def rope_tile(B: int, S: int, H: int, half: int, elems: int = 8192) -> tuple[int, int, int]:
    """(Bt, BS, Ht): about `elems` elements per half-tile, heads first, then batches, then positions."""
    Ht = min(H, max(1, elems // half))
    rest = max(1, elems // (Ht * half))
    Bt = min(B, rest)
    BS = min(S, max(1, rest // Bt))
    return Bt, BS, Ht


@cached
def rope_program(B: int, S: int, H: int, D: int, dtype: str):
    """Items [Bt, BS, Ht, D/2] (~32 KB per FP32 half), position-block major; per item: 4 loads
    (x1, x2, cos, sin), 6 SIMD ops (10 with the BF16 casts), 2 stores."""
    half = D // 2
    Bt, BS, Ht = rope_tile(B, S, H, half)
    nb, ns, nh = cdiv(B, Bt), cdiv(S, BS), cdiv(H, Ht)
    n_items = ns * nb * nh                     # position-block major: a PE reuses its table rows
    grid, per = partition(n_items)
    b = ProgramBuilder(f"expert_rope_{B}x{S}x{H}x{D}_{dtype}")
    X, C, SN, OUT = (b.param_ptr("x", dtype), b.param_ptr("cos", "f32"), b.param_ptr("sin", "f32"),
                     b.param_ptr("out", dtype))
    shape, tshape = [Bt, BS, Ht, half], [1, BS, 1, half]
    xstr, tstr = [S * H * D, H * D, D, 1], [0, half, 0, 1]
    first, last = pe_range(b, n_items, per)
    f32 = dtype == "f32"
    xf = [b.tile(shape, "f32", name="xf") for _ in range(2)] if not f32 else None
    t_, u_ = (b.tile(shape, "f32", name=k) for k in "tu")
    o1, o2 = (b.tile(shape, dtype, copies=2, name=f"o_{k}") for k in ("lo", "hi"))

    def where(t):
        """Element offset of item t in x / out, its table offset and box bounds (empty past `last`)."""
        sb = s64(b, "sdiv", t, nb * nh)
        bb = s64(b, "sdiv", s64(b, "srem", t, nb * nh), nh)
        hb = s64(b, "srem", t, nh)
        s0, b0, h0 = s64(b, "mul", sb, BS), s64(b, "mul", bb, Bt), s64(b, "mul", hb, Ht)
        live = s64(b, "sub", last, t)                            # > 0 for this program's items
        n_pos = smin(b, s64(b, "sub", S, s0), s64(b, "mul", live, BS))
        off = s64(b, "add", s64(b, "add", s64(b, "mul", b0, S * H * D), s64(b, "mul", s0, H * D)),
                  s64(b, "mul", h0, D))
        hi = [s64(b, "sub", B, b0), n_pos, s64(b, "sub", H, h0), half]
        return off, s64(b, "mul", s0, half), hi, [1, n_pos, 1, half]

    def load(t, regs):
        x1, x2, c, s = regs or (None,) * 4
        off, toff, hi, thi = where(t)
        x1 = b.dma_load(X, off, shape, xstr, hi=hi, other=0.0, out=x1)
        x2 = b.dma_load(X, s64(b, "add", off, half), shape, xstr, hi=hi, other=0.0, out=x2)
        c = b.dma_load(C, toff, tshape, tstr, hi=thi, other=0.0, out=c)
        s = b.dma_load(SN, toff, tshape, tstr, hi=thi, other=0.0, out=s)
        return x1, x2, c, s

    def body(regs, t):
        x1, x2, c, s = regs
        off, _, hi, _ = where(t)
        if not f32:
            x1, x2 = b.cast(x1, "f32", out=xf[0]), b.cast(x2, "f32", out=xf[1])
        lo_res, hi_res = (o1, o2) if f32 else (t_, t_)
        b.sub(b.mul(x1, c, out=t_), b.mul(x2, s, out=u_), out=lo_res)        # x1 cos - x2 sin
        if not f32:
            b.cast(t_, dtype, out=o1)
        b.add(b.mul(x2, c, out=t_), b.mul(x1, s, out=u_), out=hi_res)        # x2 cos + x1 sin
        if not f32:
            b.cast(t_, dtype, out=o2)
        b.dma_store(OUT, o1, off, xstr, hi=hi)
        b.dma_store(OUT, o2, s64(b, "add", off, half), xstr, hi=hi)

    prefetched_loop(b, first, last, load, body)
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


def rope(x, cos, sin):
    B, S, H, D = x.shape
    out = torch.empty_like(x)
    prog = rope_program(B, S, H, D, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x.contiguous(), cos.float().contiguous(), sin.float().contiguous(), out])
    return out
