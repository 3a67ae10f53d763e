"""Expert recommendation kernels: table-batched embedding bags (sum / mean, variable bag sizes)
with index-driven DMA. The jagged ops (to padded dense, sum, softmax) and the dot interaction
are in baselines/expert/recommendation_jagged.py.

Embedding bag (FBGEMM TBE style). ~97% of the bytes are looked-up rows, so the kernel is
bound by each PE's share of the off-chip bandwidth (a static 1/64th): every PE must get the
same bytes, and its DMA_IN engine must stream rows from its first cycle to its last.

  - Balance by lookups, not bags. Bag sizes are random: a fixed number of bags per PE leaves
    the slowest PE ~10% over the mean. Each persistent program (one per PE) finds its own
    contiguous bag range on the chip: the bags whose middle (offsets[g] + offsets[g+1]) / 2
    lies in [w/P, (w+1)/P) of the lookups, by a two-level count over the offsets (one strided
    DMA of every S-th offset pair + RE count -> the S-bag window holding the cut; one DMA of
    the window + RE count). Every PE gets the same rows to within half a bag at each end.
  - Work item = up to Bc consecutive bags of one table, clipped to the PE's range. Per item:
    offsets[lo], offsets[hi] as scalar DMAs and offsets[lo..hi] as one contiguous DMA; the
    item's indices as ONE contiguous DMA (box-bounded at offsets[hi] - offsets[lo]: nothing
    past the last index is read or priced) instead of an index-driven gather of 8-byte
    elements (4 cycles and a whole 32-byte burst each: 4x the index bytes). SIMD turns the
    indices into row offsets (+ the table's row offset, from a resident tile via the MLU), the
    MLU places them [Bc, Lmax] (bag b, lane l <- position starts[b] - offsets[lo] + l), and one
    index-driven DMA gathers every looked-up row (one run per row, masked lanes neither read
    nor priced). FP32 rows pool on the RE, 16-bit rows on the otherwise idle DPE (products
    with 0/1, FP32 accumulation: no widening pass).
  - Three-item software pipeline. The DMA_IN queue is in order and the index chain (offsets
    -> indices -> rows) holds two DMA latencies: issued item by item, the engine idles ~1k
    cycles before every row gather. So while item j's rows stream, the queue already holds
    item j+2's offsets and item j+1's indices, and item j+1's SIMD / MLU work is issued ahead
    of item j's pooling (in-order SIMD: it must not wait behind it). Two register sets
    alternate (the loop is unrolled by two); stages past the last item are skipped (ctl.if).
Lmax (the longest bag, rounded up) is a host-side argument, as TBE's max pooling factor.
"""
from __future__ import annotations

import torch

from backend.configs import load_chip
from baselines.expert.common import (DT, cached, cdiv, cmp, current_chip, gather, if_then, launch,
                                     local_bytes, n_pes, pid64, s64, scmp, smin)
from backend.sim.builder import ProgramBuilder, Reg
from backend.program import ITEMSIZE
from backend.sim.cost import K_DPE, ChipModel, matmul_inputs

_ROWS_SHARE = 4   # one of the two gathered-rows tiles: a quarter of local memory (96 KB on 2i)
_BIG = 1 << 60


def _bag_shape(lmax: int, D: int, isz: int) -> int:
    """Bags per item: as many as fill a rows tile (a power of two). Bigger items spread the
    per-item DMAs over more rows; the pooling of the last item (after its rows arrive) grows
    with the tile."""
    bc = max(1, local_bytes() // _ROWS_SHARE // (lmax * D * isz))
    return 1 << (bc.bit_length() - 1)


def _sload(b: ProgramBuilder, ptr: Reg, offset, out: Reg | None = None) -> Reg:
    """ptr[offset] into a scalar register by DMA (as Triton's scalar tl.load): it waits in the
    DMA queue, not on the control core."""
    r = out or b._new("s", ptr.elem)
    b.emit("dma_in.load", [r], {"base": ptr, "offset": offset, "strides": [], "lo": None, "hi": None,
                                "mask": None, "other": None}, {"shape": [], "dtype": ptr.elem})
    return r


def _count(b: ProgramBuilder, flags: Reg) -> Reg:
    """RE count of a boolean tile into a scalar register."""
    r = b._new("cnt", "i32")
    b.emit("re.reduce", [r], {"srcs": [flags]}, {"axis": 0, "kind": "sum"})
    return r


def _dpe_cycles(batch: int, m: int, k: int, n: int, dtype: str) -> float:
    """DPE cycles of a batched [m, k] x [k, n] product (padded to the DPE's tiles), without the
    instruction's setup: the timing model's DPE rule."""
    return ChipModel(load_chip(current_chip())).cycles(K_DPE, matmul_inputs(batch, m, n, k, dtype), setup=False)


def _smax(b: ProgramBuilder, x, y) -> Reg:
    return b.scalar("smax", x, y, "i64")


def _view(b: ProgramBuilder, x: Reg, shape: list[int]) -> Reg:
    """A free view of x: reshape or broadcast, no data moved. Emitted where it is read (it
    snapshots x), into one register per (x, shape), so repeated views take no new memory."""
    memo = b.__dict__.setdefault("_views", {})
    key = (str(x), tuple(shape))
    bcast = len(shape) == len(x.shape) and shape != x.shape and all(d in (1, n) for d, n in zip(x.shape, shape))
    r = memo.get(key)
    if r is None:
        r = memo[key] = b._new("bview" if bcast else "view", x.dtype, shape)
    if bcast:
        b.emit("mlu.broadcast", [r], {"a": x}, {"shape": list(shape), "view": True})
    else:
        b.emit("mlu.reshape", [r], {"a": x}, {"shape": list(shape), "view": True})
    return r


def _bag_split(b: ProgramBuilder, OFF: Reg, TB: int, P: int, w: Reg, then=None) -> tuple[Reg, Reg]:
    """[g0, g1): the bags of program w, those whose middle lies in [w/P, (w+1)/P) of the
    lookups (the last program takes every bag up to TB). Two-level count over the offsets.
    then(): more loads to issue behind the first level's (off its critical path)."""
    S = 1 << max(3, (max(TB, 1).bit_length() + 1) // 2)  # ~2 sqrt(TB): both levels cost alike
    K = cdiv(TB, S)
    off0 = _sload(b, OFF, 0)
    offn = _sload(b, OFF, TB)
    samp = b.dma_load(OFF, 0, [K, 2], [S, 1])           # offsets[kS], offsets[kS + 1]
    mid = b.reduce(samp, 1, "sum")                       # 2 x the middle of bag kS
    extra = then() if then else None
    n2 = s64(b, "mul", s64(b, "sub", offn, off0), 2)
    # both cuts side by side: the control core blocks only once per level on the counts
    cuts = []
    for q in (w, s64(b, "add", w, 1)):
        # 2 x the cut, rounded up (an integer middle lies below x iff below ceil(x)); + 1 for
        # the last program, whose cut lies past every middle (trailing empty bags included)
        cut = s64(b, "add", s64(b, "sdiv", s64(b, "add", s64(b, "mul", q, n2), P - 1), P), s64(b, "mul", off0, 2))
        cuts.append(s64(b, "add", cut, s64(b, "sdiv", q, P)))
    c1 = [_count(b, cmp(b, "slt", mid, cut)) for cut in cuts]  # samples below: the cut is in window c1 - 1
    bases = [s64(b, "mul", _smax(b, s64(b, "sub", c, 1), 0), S) for c in c1]
    # window offsets[base .. base + S] (past TB: huge); bag base + i has middle W[i] + W[i + 1]
    wins = [b.dma_load(OFF, base, [S + 1], [1], hi=[s64(b, "add", smin(b, s64(b, "sub", TB, base), S), 1)],
                       other=_BIG) for base in bases]
    at = b.cast(b.iota(S), "i64")
    at1 = b.add(at, 1)
    c2 = []
    for win, cut in zip(wins, cuts):
        w0, w1 = b.tile([S], "i64", name="w0"), b.tile([S], "i64", name="w1")
        b.emit("mlu.gather", [w0], {"src": win, "index": at}, {"axis": 0})
        b.emit("mlu.gather", [w1], {"src": win, "index": at1}, {"axis": 0})
        c2.append(_count(b, cmp(b, "slt", b.add(w0, w1), cut)))
    out = [s64(b, "add", base, c) for base, c in zip(bases, c2)]
    return out[0], out[1], extra


@cached
def embedding_bag_program(T: int, B: int, D: int, lmax: int, dtype: str, mode: str):
    isz = ITEMSIZE[dtype]
    Bc = min(_bag_shape(lmax, D, isz), 1 << (max(B, 1).bit_length() - 1))
    NC = Bc * lmax
    nb = cdiv(B, Bc)
    TB = T * B
    P = max(1, min(n_pes(), TB))
    b = ProgramBuilder(f"expert_tbe_{mode}_{T}x{B}x{D}_L{lmax}_{dtype}", chip=current_chip())
    Wt = b.param_ptr("weights", dtype)
    TO = b.param_ptr("table_offsets", "i64")
    IDX = b.param_ptr("indices", "i64")
    OFF = b.param_ptr("offsets", "i64")
    OUT = b.param_ptr("out", dtype)
    w = pid64(b)
    # table row offsets: one resident tile
    g0, g1, tables = _bag_split(b, OFF, TB, P, w, then=lambda: _view(b, b.dma_load(TO, 0, [T], [1]), [1, T]))

    def item_of(g):
        return s64(b, "add", s64(b, "mul", s64(b, "sdiv", g, B), nb), s64(b, "sdiv", s64(b, "srem", g, B), Bc))

    j0 = item_of(g0)
    jl = s64(b, "add", item_of(_smax(b, s64(b, "sub", g1, 1), 0)), 1)
    j1 = b._new("j1", "i64")
    b.emit("scalar.select", [j1], {"cond": scmp(b, "slt", g0, g1), "a": jl, "b": j0}, {"dtype": "i64"})

    lane = b.reshape(b.cast(b.iota(lmax), "i64"), [1, lmax])
    first = b.cast(b.iota(Bc), "i64")                   # offsets tile positions of the starts
    second = b.add(first, 1)                            # ... and of the ends
    # FP32 rows pool on the RE; 16-bit rows on the DPE with FP32 accumulation (no widening pass,
    # no FP32 copy of the rows): per bag (batched ones [1, Lmax] x rows [Lmax, D]) or all bags at
    # once (block-diagonal 0/1 [Bc, Bc Lmax] x rows [Bc Lmax, D]), whichever pads less
    dpe = dtype != "f32"
    batched = dpe and _dpe_cycles(Bc, 1, lmax, D, dtype) <= _dpe_cycles(1, Bc, NC, D, dtype)
    rshape = [Bc, lmax, D] if batched or not dpe else [NC, D]
    sets = []
    for k in range(2):
        sets.append({
            "s0": b._new(f"s0_{k}", "i64"), "s1": b._new(f"s1_{k}", "i64"),
            "offs": b.tile([Bc + 1], "i64", name=f"offs{k}"), "t": b._new(f"t_{k}", "i64"),
            "idx": b.tile([NC], "i64", name=f"idx{k}"), "roff1": b.tile([NC], "i64", name=f"roff1_{k}"),
            "pos": b.tile([Bc, lmax], "i64", name=f"pos{k}"), "m2": b.tile([Bc, lmax], "i1", name=f"mask{k}"),
            "roff2": b.tile([NC], "i64", name=f"roff2_{k}"),
            "rows": b.tile(rshape, dtype, name=f"rows{k}"),
            "inv": b.tile([Bc, 1], "f32", name=f"inv{k}") if mode == "mean" else None})
    pshape = [Bc, 1, D] if batched else [Bc, D]
    acc = b.tile(pshape, "f32", copies=2, name="acc")
    res = b.tile(pshape, dtype, copies=2, name="res") if dtype != "f32" else None
    if batched:
        ones = b.splat(1.0, [Bc, 1, lmax], dtype)
    elif dpe:
        bag_of = b.binary("sdiv", _view(b, b.iota(NC), [1, NC]), lmax)
        ones = b.cast(cmp(b, "eq", bag_of, _view(b, b.iota(Bc), [Bc, 1])), dtype)
    scratch = {k: b.tile(shape, dt, name=k) for k, shape, dt in
               (("starts", [Bc], "i64"), ("ends", [Bc], "i64"), ("tsel", [1], "i64"), ("tbl", [1, 1], "i64"))}

    def item(j):
        """(table, first bag of the table, first bag, bags) of item j clipped to [g0, g1)."""
        t = s64(b, "sdiv", j, nb)
        tb = s64(b, "mul", t, B)
        ilo = s64(b, "add", tb, s64(b, "mul", s64(b, "srem", j, nb), Bc))
        lo = _smax(b, ilo, g0)
        hi = smin(b, smin(b, s64(b, "add", ilo, Bc), s64(b, "add", tb, B)), g1)
        return t, tb, lo, hi, s64(b, "sub", hi, lo)

    def stage_offsets(j, S):
        t, _, lo, hi, nv = item(j)
        _sload(b, OFF, lo, out=S["s0"])
        _sload(b, OFF, hi, out=S["s1"])
        # offsets[lo .. hi]; bags past the item's end start / end at offsets[lo]: empty
        b.dma_load(OFF, lo, [Bc + 1], [1], hi=[s64(b, "add", nv, 1)], other=S["s0"], out=S["offs"])
        b.emit("scalar.binary", [S["t"]], {"a": t, "b": 0}, {"fn": "add", "dtype": "i64"})

    def stage_indices(j, S):
        b.dma_load(IDX, S["s0"], [NC], [1], hi=[s64(b, "sub", S["s1"], S["s0"])], other=0, out=S["idx"])

    def stage_row_offsets(j, S):
        starts, ends, tsel, tbl = (scratch[k] for k in ("starts", "ends", "tsel", "tbl"))
        b.splat(S["t"], [1], "i64", out=tsel)
        b.emit("mlu.gather", [tbl], {"src": tables, "index": _view(b, tsel, [1, 1])}, {"axis": 1})
        b.emit("mlu.gather", [starts], {"src": S["offs"], "index": first}, {"axis": 0})
        b.emit("mlu.gather", [ends], {"src": S["offs"], "index": second}, {"axis": 0})
        b.add(S["idx"], _view(b, tbl, [1]), out=S["roff1"])
        b.mul(S["roff1"], D, out=S["roff1"])
        st2, en2 = _view(b, starts, [Bc, 1]), _view(b, ends, [Bc, 1])
        b.add(st2, lane, out=S["pos"])
        cmp(b, "slt", S["pos"], en2, out=S["m2"])
        b.sub(S["pos"], S["s0"], out=S["pos"])            # position in the item's index run
        b.emit("mlu.gather", [S["roff2"]], {"src": S["roff1"], "index": _view(b, S["pos"], [NC])}, {"axis": 0})
        if mode == "mean":
            lf = b.cast(b.sub(en2, st2), "f32")
            b.unary("recip", b.maximum(lf, 1.0), out=S["inv"])

    def stage_rows(j, S):
        v = rshape[:-1] + [1]
        gather(b, Wt, rshape, [(S["roff2"], v)], [0] * (len(v) - 1) + [1], mask=_view(b, S["m2"], v),
               other=0, run=D, out=S["rows"])

    def stage_pool(j, S):
        t, tb, lo, _, nv = item(j)
        if dpe:
            b.emit("dpe.matmul", [acc], {"a": ones, "b": S["rows"], "acc": 0.0}, {"in_dtype": dtype, "out_dtype": "f32"})
        else:
            b.reduce(S["rows"], 1, "sum", out=acc)
        if mode == "mean":
            b.mul(acc, _view(b, S["inv"], [Bc, 1, 1]) if batched else S["inv"], out=acc)
        out_v = acc if dtype == "f32" else b.cast(acc, dtype, out=res)
        if batched:
            out_v = _view(b, out_v, [Bc, D])
        b.dma_store(OUT, out_v, s64(b, "add", s64(b, "mul", s64(b, "sub", lo, tb), T * D), s64(b, "mul", t, D)),
                    [T * D, 1], hi=[nv, D])

    def guarded(cond_j, fn, j, S):
        with if_then(b, scmp(b, "slt", cond_j, j1)):
            fn(j, S)

    A, Bs = sets
    # prologue: offsets of items j0, j0 + 1; indices and row offsets of j0
    j0p1 = s64(b, "add", j0, 1)
    with if_then(b, scmp(b, "slt", j0, j1)):
        stage_offsets(j0, A)
        guarded(j0p1, stage_offsets, j0p1, Bs)
        stage_indices(j0, A)
        stage_row_offsets(j0, A)

    def half(j, S, S_next):
        j1_ = s64(b, "add", j, 1)
        j2_ = s64(b, "add", j, 2)
        guarded(j2_, stage_offsets, j2_, S)
        guarded(j1_, stage_indices, j1_, S_next)
        stage_rows(j, S)
        guarded(j1_, stage_row_offsets, j1_, S_next)
        stage_pool(j, S)

    with b.loop(j0, j1, 2, name="pair") as j:
        half(j, A, Bs)
        jn = s64(b, "add", j, 1)
        with if_then(b, scmp(b, "slt", jn, j1)):
            half(jn, Bs, A)
    prog = b.build()
    prog.meta["grid"] = P
    return prog


def embedding_bag(weights, table_offsets, indices, offsets, num_tables, mode):
    T = int(num_tables)
    B = (offsets.numel() - 1) // T
    D = weights.shape[1]
    lengths = offsets[1:] - offsets[:-1]
    lmax = max(8, cdiv(int(lengths.max()) if lengths.numel() else 1, 8) * 8)
    prog = embedding_bag_program(T, B, D, lmax, DT[weights.dtype], mode)
    out = torch.empty((B, T * D), dtype=weights.dtype)
    launch(prog, prog.meta["grid"], [weights.contiguous(), table_offsets.to(torch.int64).contiguous(),
                                     indices.to(torch.int64).contiguous(), offsets.to(torch.int64).contiguous(), out],
           data_independent=False)
    return out
