"""Expert jagged-tensor kernels (jagged to padded dense, jagged sum, jagged softmax) and the DLRM
dot interaction.

Jagged ops: values [total, D] hold the rows of B segments back to back, offsets [B + 1] mark
where segment b starts and ends (FBGEMM layout). A segment's rows are contiguous, so its data
is a structured DMA box at a data-dependent offset (0.25 cycles of address generation per
row) rather than an index-driven gather (4 cycles per row); the box's row bound (hi=) is the
segment length, so rows past the end are neither read nor priced and hold the DMA `other`
value (the padding value, 0 for a sum, -inf for a softmax): no masks anywhere.

Work item = (segment b, column block c): DC columns of every row of the segment (DC x
itemsize >= one 32-byte burst, so column blocks cost nothing in DMA efficiency), streamed in
[LC, DC] row chunks through multi-buffered tiles, so the DMA of chunk i+1 overlaps the
compute / store of chunk i; per-item results are double-buffered for their store. In the
item loop the control core reads offsets[b] and offsets[b+1] (two scalar loads: a DMA would
queue behind the row chunks in flight).

Balance. Segment lengths are random (1..1024 rows): a fixed number of segments per PE leaves
the slowest PE ~1.5x over the mean. Each persistent program (one per PE) computes its own
item range on the chip: one DMA of the offsets, SIMD prices one item of every segment from
its length (rows in / out at the chip's per-PE shares - writes at the off-chip share when the
launch's footprint spills the LLC - or the compute of its chunks, whichever is longer, plus a
per-item constant), an RE scan turns the prices into cumulative segment ends, and RE
count / max / min reductions give the items whose middle lies below w/P and (w+1)/P of the
total. Every PE gets the same cost to within half an item.

  - padded dense: chunks holding data go DMA in -> DMA out of the same buffer (no compute),
    the chunks past the end are stored from one resident padding tile;
  - sum: RE sums each chunk along the rows (FP32; BF16 widened on SIMD), SIMD accumulates;
  - softmax (per column, over the segment's rows): online max / sum of exp in a first sweep
    (RE max, SIMD, SFU exp, RE sum), exp(x - (max + log sum)) written in a second sweep.

Dot interaction (x [B, F, D] -> [B, D + F(F-1)/2]): samples split evenly over the PEs,
blocks of S samples double-buffered. BF16: MLU transposes the block, the DPE computes Z =
X X^T for the S samples in one batched matmul (FP32 accumulate). FP32 (the DPE's FP32 rate
is 16 FLOP/cycle): SIMD multiplies each DC-column chunk against itself broadcast ([F,1,DC] x
[1,F,DC], 64 FLOP/cycle, exact FP32) and RE sums the products along D. Either way the MLU
gathers the strict lower triangle of Z in output order, with an index tile computed once on
the chip (row i = floor((1 + sqrt(1 + 8p)) / 2) of pair p), and two DMAs write the dense row
x[:, 0] and the pairs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from backend.configs import load_chip
from backend.sim.builder import Reg
from baselines.expert.common import ProgramBuilder, current_chip
from backend.program import ITEMSIZE
from backend.sim.cost import K_RE, K_SFU, K_SIMD, ChipModel, reduce_inputs, vector_inputs
from baselines.expert.common import DT, cached, cdiv, cmp, launch, n_pes, partition, pid64, s64, smin

NEG_INF = float("-inf")
_ITEM_CYCLES = 4 * 20       # quarter cycles per item beyond its rows (DMA descriptor setup)
_BIG = 1 << 50


# ----------------------------------------------------------------------------- partition

def _offset(b: ProgramBuilder, OFF: Reg, seg) -> Reg:
    """offsets[seg], read by the control core (a DMA would queue behind the row tiles)."""
    addr = s64(b, "add", OFF, s64(b, "mul", seg, ITEMSIZE[OFF.elem]))
    return b.scalar("add", b.scalar_load(addr, OFF.elem), 0, "i64")


def _i64(b: ProgramBuilder, x: Reg) -> Reg:
    return x if x.dtype == "i64" else b.cast(x, "i64")


def _re(b: ProgramBuilder, op: str, x: Reg, kind: str, out: Reg | None = None) -> Reg:
    """Reduction engine along axis 0: `re.reduce` into a scalar register, `re.scan` into a tile."""
    r = out or (b._new(kind, x.dtype) if op == "reduce" else b._new("scan", x.dtype, x.shape))
    b.emit(f"re.{op}", [r], {"srcs": [x]}, {"axis": 0, "kind": kind})
    return r


@dataclass(frozen=True)
class Rates:
    """Quarter cycles a PE spends per row of DC elements read (first read: off-chip share) and
    written (SRAM share, or the off-chip share when the launch spills the LLC)."""
    read: int
    write: int

    @staticmethod
    def of(dtype: str, DC: int, P: int, spill: bool) -> "Rates":
        cm = ChipModel(load_chip(current_chip()))
        row = DC * ITEMSIZE[dtype]
        # the timing model's SRAM share of P PEs; the off-chip share not capped by the local
        # memory's bandwidth (as this estimate was tuned; the two differ only where one PE's
        # share of the off-chip bandwidth would exceed its local memory's)
        off = cm.off_bpc / P
        sram = cm.shares(P)[0]
        return Rates(max(1, round(4 * row / off)), max(1, round(4 * row / (off if spill else sram))))


def _items_before(b: ProgramBuilder, ends: Reg, scratch: tuple, B: int, nC: int, cut) -> Reg:
    """How many items lie below `cut` (by their middle, so a program's share is off by half an
    item at most): all nC items of every segment whose cumulative cost ends at or before the
    cut, plus those of the segment b* the cut falls in whose middle is below it - from RE
    reductions over the segment ends (count, max of the ends below, min of the ends above)."""
    flag, below, work = scratch
    b.cast(cmp(b, "sle", ends, cut, out=flag), "i64", out=below)
    full = _re(b, "reduce", below, "sum")
    prev = _re(b, "reduce", b.mul(ends, below, out=work), "max")     # start of segment b*
    nxt = _re(b, "reduce", b.fma(below, _BIG, ends, out=work), "min")  # its end (huge: none left)
    per = s64(b, "sdiv", s64(b, "sub", nxt, prev), nC)
    # items of b* whose middle lies below the cut: ceil((2 (cut - prev) - per) / (2 per))
    num = s64(b, "sub", s64(b, "mul", s64(b, "sub", cut, prev), 2), per)
    part = s64(b, "sdiv", s64(b, "add", num, s64(b, "sub", s64(b, "mul", per, 2), 1)), s64(b, "mul", per, 2))
    part = b.scalar("smax", smin(b, part, nC), 0, "i64")
    live = smin(b, s64(b, "sub", B, full), 1)                        # 0 when every segment is below
    return s64(b, "add", s64(b, "mul", full, nC), s64(b, "mul", part, live))


def _balanced_items(b: ProgramBuilder, OFF: Reg, B: int, nC: int, P: int, seg_cost) -> tuple[Reg, Reg]:
    """[first, last) of this program's items (segment-major, nC column blocks per segment), cut
    at w/P and (w+1)/P of the total cost. seg_cost(b, lengths, tmp) prices one item of each
    segment on SIMD, in place (>= 1); an RE scan of nC x that gives where each segment's
    items end. Five [B] tiles in all (the partition runs once, before the item loop)."""
    lens = _i64(b, b.dma_load(OFF, 1, [B], [1]))
    lo = _i64(b, b.dma_load(OFF, 0, [B], [1]))
    b.sub(lens, lo, out=lens)
    cost = seg_cost(b, lens, lo)
    ends = _re(b, "scan", b.mul(cost, nC, out=cost), "sum", out=lo)
    total = _re(b, "reduce", ends, "max")
    w = pid64(b)
    cut_lo = s64(b, "sdiv", s64(b, "mul", total, w), P)
    cut_hi = s64(b, "sdiv", s64(b, "mul", total, s64(b, "add", w, 1)), P)
    scratch = (b.tile([B], "i1", name="flag"), b.tile([B], "i64", name="below"), cost)
    return _items_before(b, ends, scratch, B, nC, cut_lo), _items_before(b, ends, scratch, B, nC, cut_hi)


# ----------------------------------------------------------------------------- item loop

class _Item:
    """Scalars of one (segment, column block) item: segment id, first column, first row, rows."""

    def __init__(self, b: ProgramBuilder, OFF: Reg, it: Reg, nC: int, DC: int):
        self.seg = s64(b, "sdiv", it, nC)
        self.c0 = s64(b, "mul", s64(b, "srem", it, nC), DC)
        self.start = _offset(b, OFF, self.seg)
        self.rows = s64(b, "sub", _offset(b, OFF, s64(b, "add", self.seg, 1)), self.start)


def _jagged_program(name: str, B: int, D: int, dtype: str, off_dt: str, DC: int, LC: int,
                    cost: Callable, body):
    """The persistent item loop shared by the three jagged ops: body(b, VAL, OUT, DC) declares
    the tiles and returns step(item), which emits one item's DMA in, compute and DMA out;
    cost(DC, P) returns the partition's seg_cost(b, lengths) (see _balanced_items)."""
    DC = min(DC, D)
    nC = cdiv(D, DC)
    P = min(n_pes(), B * nC)
    b = ProgramBuilder(f"expert_{name}_{B}x{D}_{dtype}_{DC}x{LC}")
    VAL = b.param_ptr("values", dtype)
    OFF = b.param_ptr("offsets", off_dt)
    OUT = b.param_ptr("out", dtype)
    first, last = _balanced_items(b, OFF, B, nC, P, cost(DC, P))
    step = body(b, VAL, OUT, DC)
    with b.loop(first, last, 1, name="item") as it:
        step(_Item(b, OFF, it, nC, DC))
    prog = b.build()
    prog.meta.update(grid=P, col_block=DC, row_chunk=LC)
    return prog


def spills(*tensors: torch.Tensor) -> bool:
    """Host launch parameter: does the launch's footprint (inputs + outputs) exceed the LLC?"""
    return sum(t.numel() * t.element_size() for t in tensors) > ChipModel(load_chip(current_chip())).llc_bytes


def _load_rows(b: ProgramBuilder, VAL: Reg, item: _Item, r, rows, D: int, LC: int, DC: int, other, out,
               copies: int = 2) -> Reg:
    """Rows r .. r+LC of the item (a [LC, DC] box): rows at or past `rows` are `other`, not read."""
    off = s64(b, "add", s64(b, "mul", s64(b, "add", item.start, r), D), item.c0)
    return b.dma_load(VAL, off, [LC, DC], [D, 1], copies=copies,
                      hi=[s64(b, "sub", rows, r), s64(b, "sub", D, item.c0)], other=other, out=out)


def _f32(b: ProgramBuilder, x: Reg, out: Reg | None) -> Reg:
    return x if x.dtype == "f32" else b.cast(x, "f32", out=out)


# ----------------------------------------------------------------------------- jagged ops

@cached
def jagged_to_padded_dense_program(B: int, D: int, max_len: int, dtype: str, off_dt: str = "i64",
                                   padding_value: float = 0.0, spill: bool = False, DC: int = 0, LC: int = 1024):
    """out[b, l, :] = values[offsets[b] + l, :] for l < len_b (up to max_len), else padding.
    Per item: the row chunks holding data go DMA in -> DMA out of the same buffer (the box
    bound fills the rows past the end with the padding value; six buffers deep, so the DMA in
    runs ahead of the store of padding-heavy items); the chunks past them are stored from one
    resident padding tile. An item costs its rows in and max_len rows out."""
    LC = min(LC, max_len)
    DC = DC or 32 // ITEMSIZE[dtype]

    def body(b, VAL, OUT, DC):
        pad = b.splat(padding_value, [LC, DC], dtype)
        st = {"x": None}

        def step(item):
            rows = smin(b, item.rows, max_len)
            dst = s64(b, "add", s64(b, "mul", item.seg, max_len * D), item.c0)
            hc = s64(b, "sub", D, item.c0)
            with b.loop(0, rows, LC, name="r") as r:
                st["x"] = _load_rows(b, VAL, item, r, rows, D, LC, DC, padding_value, st["x"], copies=6)
                b.dma_store(OUT, st["x"], s64(b, "add", dst, s64(b, "mul", r, D)), [D, 1],
                            hi=[s64(b, "sub", max_len, r), hc])
            pad_from = s64(b, "mul", s64(b, "sdiv", s64(b, "add", rows, LC - 1), LC), LC)
            with b.loop(pad_from, max_len, LC, name="p") as r:
                b.dma_store(OUT, pad, s64(b, "add", dst, s64(b, "mul", r, D)), [D, 1],
                            hi=[s64(b, "sub", max_len, r), hc])
        return step

    return _jagged_program("jagged_to_padded_dense", B, D, dtype, off_dt, DC, LC,
                           lambda dc, P: _padded_cost(Rates.of(dtype, dc, P, spill), max_len), body)


@cached
def jagged_sum_program(B: int, D: int, dtype: str, off_dt: str = "i64", DC: int = 0, LC: int = 256):
    """out[b, :] = sum of the rows of segment b (FP32 accumulation; zero for an empty segment).
    Per item: row chunks (double-buffered) are widened, summed along the rows by RE and
    accumulated on SIMD (the first chunk, peeled, initialises the sum); one [DC] store."""
    DC = DC or 32 // ITEMSIZE[dtype]

    def body(b, VAL, OUT, DC):
        st = {"x": None}
        xf = b.tile([LC, DC], "f32", copies=2, name="xf") if dtype != "f32" else None
        part = b.tile([DC], "f32", copies=2, name="part")
        acc = b.tile([DC], "f32", copies=2, name="acc")
        res = b.tile([DC], dtype, copies=2, name="res") if dtype != "f32" else acc

        def chunk(item, r, out):
            st["x"] = _load_rows(b, VAL, item, r, item.rows, D, LC, DC, 0, st["x"], copies=3)
            return b.reduce(_f32(b, st["x"], xf), 0, "sum", out=out)

        def step(item):
            chunk(item, 0, acc)
            with b.loop(LC, item.rows, LC, name="r") as r:
                b.add(acc, chunk(item, r, part), out=acc)
            if dtype != "f32":
                b.cast(acc, dtype, out=res)
            b.dma_store(OUT, res, s64(b, "add", s64(b, "mul", item.seg, D), item.c0), [1],
                        hi=[s64(b, "sub", D, item.c0)])
        return step

    return _jagged_program("jagged_sum", B, D, dtype, off_dt, DC, LC,
                           lambda dc, P: _sum_cost(Rates.of(dtype, dc, P, False)), body)


@cached
def jagged_softmax_program(B: int, D: int, dtype: str, off_dt: str = "i64", spill: bool = False,
                           DC: int = 32, LC: int = 64):
    """out[rows of b, :] = softmax over the rows of segment b, per column (jagged layout).
    Per item, two sweeps over [LC, DC] row chunks. Sweep 1: the column max m and sum s of
    exp(x - m), online (RE max, SIMD subtract, SFU exp, RE sum; the first chunk, peeled,
    initialises them, later chunks rescale s by exp(m_old - m_new)). Then c = m + log s, and
    sweep 2 writes exp(x - c) with the same row bound (no divide pass), rounded once. Sweep 2
    re-reads rows this PE has just read (on-chip SRAM). All per-item state is double-buffered,
    so item i+1's first sweep overlaps item i's second. An item costs its rows in and out, or
    the compute of its chunks when that is longer (short segments)."""
    low = dtype != "f32"

    def body(b, VAL, OUT, DC):
        st = {"x": None}
        xf = b.tile([LC, DC], "f32", copies=2, name="xf") if low else None
        t = b.tile([LC, DC], "f32", copies=2, name="t")
        res = b.tile([LC, DC], dtype, copies=2, name="res") if low else t
        m, mn, s, alpha, c, pm, ps = (b.tile([DC], "f32", copies=2, name=n)
                                      for n in ("m", "mnew", "s", "alpha", "c", "pmax", "psum"))

        def load(item, r):
            st["x"] = _load_rows(b, VAL, item, r, item.rows, D, LC, DC, NEG_INF, st["x"], copies=4)
            return _f32(b, st["x"], xf)

        def step(item):
            x = load(item, 0)
            b.reduce(x, 0, "max", out=m)
            b.exp(b.sub(x, m, out=t), out=t)
            b.reduce(t, 0, "sum", out=s)
            with b.loop(LC, item.rows, LC, name="r") as r:
                x = load(item, r)
                b.maximum(m, b.reduce(x, 0, "max", out=pm), out=mn)
                b.exp(b.sub(m, mn, out=alpha), out=alpha)
                b.maximum(m, mn, out=m)
                b.exp(b.sub(x, mn, out=t), out=t)
                b.fma(s, alpha, b.reduce(t, 0, "sum", out=ps), out=s)
            b.add(m, b.unary("log", s, out=c), out=c)
            with b.loop(0, item.rows, LC, name="r") as r:
                x = load(item, r)
                b.exp(b.sub(x, c, out=t), out=t)
                if low:
                    b.cast(t, dtype, out=res)
                b.dma_store(OUT, res, s64(b, "add", s64(b, "mul", s64(b, "add", item.start, r), D), item.c0),
                            [D, 1], hi=[s64(b, "sub", item.rows, r), s64(b, "sub", D, item.c0)])
        return step

    return _jagged_program("jagged_softmax", B, D, dtype, off_dt, DC, LC,
                           lambda dc, P: _softmax_cost(Rates.of(dtype, dc, P, spill), dtype, dc, LC), body)


# per-segment item costs for the partition (quarter cycles, SIMD on the [B] lengths tile)

def _padded_cost(rt: Rates, max_len: int):
    """Rows in, max_len rows out: the larger of the two (DMA in and out are separate engines)."""
    def cost(b, lens, tmp):
        b.mul(b.minimum(lens, max_len, out=lens), rt.read, out=lens)
        return b.add(b.maximum(lens, rt.write * max_len, out=lens), _ITEM_CYCLES, out=lens)
    return cost


def _sum_cost(rt: Rates):
    return lambda b, lens, tmp: b.fma(lens, rt.read, _ITEM_CYCLES, out=lens)


def _softmax_cost(rt: Rates, dtype: str, DC: int, LC: int):
    """Rows in and out, or per row chunk the compute chain (~5 BF16 / 2 FP32 SIMD passes, 2 SFU
    exp and 2 RE passes, plus latencies) when that is longer (short segments)."""
    cm = ChipModel(load_chip(current_chip()))
    e = LC * DC
    chunk = cm.cycles(K_SIMD, vector_inputs((5 if dtype != "f32" else 2) * e, "f32"), setup=False) + \
        cm.cycles(K_SFU, vector_inputs(2 * e, "f32"), setup=False) + \
        cm.cycles(K_RE, reduce_inputs(2 * e, 2 * LC), setup=False) + 200
    row = max(rt.read, rt.write)

    def cost(b, lens, tmp):
        b.mul(lens, row, out=tmp)
        b.mul(b.div(b.add(lens, LC - 1, out=lens), LC, out=lens), round(4 * chunk), out=lens)
        return b.add(b.maximum(lens, tmp, out=lens), _ITEM_CYCLES, out=lens)
    return cost


def _launch_jagged(prog, values, offsets, out):
    launch(prog, prog.meta["grid"], [values.contiguous(), offsets.contiguous(), out], data_independent=False)
    return out


def jagged_to_padded_dense(values, offsets, max_len, padding_value=0.0):
    B, D = offsets.numel() - 1, values.shape[1]
    out = torch.empty((B, int(max_len), D), dtype=values.dtype)
    if B == 0 or max_len <= 0 or D == 0:
        return out
    prog = jagged_to_padded_dense_program(B, D, int(max_len), DT[values.dtype], DT[offsets.dtype],
                                          float(padding_value), spills(values, offsets, out))
    return _launch_jagged(prog, values, offsets, out)


def jagged_sum(values, offsets):
    B, D = offsets.numel() - 1, values.shape[1]
    out = torch.empty((B, D), dtype=values.dtype)
    if B == 0 or D == 0:
        return out
    return _launch_jagged(jagged_sum_program(B, D, DT[values.dtype], DT[offsets.dtype]), values, offsets, out)


def jagged_softmax(values, offsets):
    B, D = offsets.numel() - 1, values.shape[1]
    out = torch.empty_like(values)
    if B == 0 or values.numel() == 0:
        return out
    prog = jagged_softmax_program(B, D, DT[values.dtype], DT[offsets.dtype], spills(values, offsets, out))
    return _launch_jagged(prog, values, offsets, out)


# ----------------------------------------------------------------------------- dot interaction

def _tri_index(b: ProgramBuilder, F: int, S: int) -> Reg:
    """[S, F(F-1)/2] i64: flat index i * F + j of pair p = i(i-1)/2 + j (j < i), row-major
    lower triangle; i = floor((1 + sqrt(1 + 8p)) / 2), exact in FP32 for these sizes."""
    npairs = F * (F - 1) // 2
    p = b.cast(b.iota(npairs), "f32")
    i = b.unary("floor", b.fma(b.unary("sqrt", b.fma(p, 8.0, 1.0)), 0.5, 0.5))
    tri = b.mul(b.fma(i, i, b.mul(i, -1.0)), 0.5)             # i (i - 1) / 2
    flat = b.fma(i, float(F), b.sub(p, tri))                   # i * F + j
    idx = b.reshape(b.cast(flat, "i64"), [1, npairs])
    return b.broadcast(idx, [S, npairs])


def _lower_triangle(b: ProgramBuilder, z: Reg, idx: Reg, out: Reg) -> Reg:
    """MLU gather of Z [S, F, F] (viewed [S, F*F]) at the pair indices -> [S, pairs]."""
    S, F = z.shape[0], z.shape[1]
    b.emit("mlu.gather", [out], {"src": b.reshape(z, [S, F * F]), "index": idx}, {"axis": 1}, copies=2)
    return out


@cached
def dot_interaction_program(B: int, F: int, D: int, dtype: str, S: int = 0, DC: int = 32):
    """out[s] = concat(x[s, 0, :], (x[s] x[s]^T)[i, j] for j < i)."""
    npairs = F * (F - 1) // 2
    OS = D + npairs
    grid, per = partition(B)
    f32 = dtype == "f32"
    S = S or (1 if f32 else max(1, min(4, per // 8)))
    DC = min(DC, D)
    nD = cdiv(D, DC)
    nblk = cdiv(per, S)
    b = ProgramBuilder(f"expert_dot_interaction_{B}x{F}x{D}_{dtype}_S{S}")
    X = b.param_ptr("x", dtype)
    OUT = b.param_ptr("out", dtype)
    idx = _tri_index(b, F, S)
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), B)
    z = b.tile([S, F, F], "f32", copies=2, name="z")
    zl = b.tile([S, npairs], "f32", copies=2 if f32 else 1, name="zl")
    res = b.tile([S, npairs], dtype, copies=2, name="res") if not f32 else zl
    if f32:
        prod = b.tile([S, F, F, DC], "f32", copies=2, name="prod")
        part = b.tile([S, F, F], "f32", copies=2, name="part")
        xs = [None] * nD
    else:
        zero = b.zeros([1, 1], "f32")
        xt = b.tile([S, D, F], dtype, copies=2, name="xt")
        xb = None
    with b.loop(0, nblk, 1, name="blk") as j:
        s0 = s64(b, "add", first, s64(b, "mul", j, S))
        live = s64(b, "sub", last, s0)                      # samples of this block (<= 0: none)
        if f32:
            for c in range(nD):
                wc = min(DC, D - c * DC)
                xs[c] = b.dma_load(X, s64(b, "add", s64(b, "mul", s0, F * D), c * DC), [S, F, DC], [F * D, D, 1],
                                   copies=2, hi=[live, F, wc], out=xs[c])
                b.mul(b.reshape(xs[c], [S, F, 1, DC]), b.reshape(xs[c], [S, 1, F, DC]), out=prod)
                b.reduce(prod, 3, "sum", out=z if c == 0 else part)
                if c:
                    b.add(z, part, out=z)
                b.dma_store(OUT, xs[c], s64(b, "add", s64(b, "mul", s0, OS), c * DC), [OS, 1, 1],
                            hi=[live, 1, wc])
        else:
            xb = b.dma_load(X, s64(b, "mul", s0, F * D), [S, F, D], [F * D, D, 1], copies=2, hi=[live, F, D], out=xb)
            b.transpose(xb, [0, 2, 1], out=xt)
            b.matmul(xb, xt, zero, out=z)
            b.dma_store(OUT, xb, s64(b, "mul", s0, OS), [OS, 1, 1], hi=[live, 1, D])
        _lower_triangle(b, z, idx, zl)
        if not f32:
            b.cast(zl, dtype, out=res)
        b.dma_store(OUT, res, s64(b, "add", s64(b, "mul", s0, OS), D), [OS, 1], hi=[live, npairs])
    prog = b.build()
    prog.meta.update(grid=grid, block=S)
    return prog


def dot_interaction(x):
    B, F, D = x.shape
    out = torch.empty((B, D + F * (F - 1) // 2), dtype=x.dtype)
    prog = dot_interaction_program(B, F, D, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x.contiguous(), out])
    return out
