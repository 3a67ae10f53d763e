"""Expert recommendation kernels: table-batched embedding bags (sum / mean, variable bag sizes)
with index-driven DMA. The jagged ops (to padded dense, sum, softmax) and the dot interaction
are in baselines/expert/jagged.py.

Embedding bag (FBGEMM TBE style, one work item = Bc consecutive bags of one table):
  offsets[bag], offsets[bag+1] for the Bc bags are two small DMAs; on SIMD they become the
  positions starts + l and the mask l < length ([Bc, Lmax]); one index-driven DMA gathers the
  indices, SIMD turns them into row offsets (+ table offset, x dim), and a second index-driven
  DMA gathers every looked-up row ([Bc, Lmax, D], one contiguous run per row, masked lanes are
  neither read nor priced). The reduction engine pools along the bag axis. The row gather is
  double-buffered, so the pooled rows of item i reduce while item i+1's rows arrive.
Lmax (the longest bag, rounded up) is a host-side argument, as TBE's max pooling factor.
"""
from __future__ import annotations

import torch

from baselines.expert.common import DT, cmp, attach, cached, cdiv, gather, launch, partition, pid64, s64, smin
from backend.sim.builder import ProgramBuilder

_ROWS_BYTES = 48 * 1024  # one buffer instance of gathered rows


def _bag_shape(lmax: int, D: int, isz: int) -> int:
    bc = max(1, _ROWS_BYTES // (lmax * D * isz))
    return 1 << (bc.bit_length() - 1)


@cached
def embedding_bag_program(T: int, B: int, D: int, lmax: int, dtype: str, mode: str):
    isz = 2 if dtype == "f16" else 4
    Bc = min(_bag_shape(lmax, D, isz), 1 << (max(B, 1).bit_length() - 1))
    nb = cdiv(B, Bc)
    grid, per = partition(T * nb)
    b = ProgramBuilder(f"expert_tbe_{mode}_{T}x{B}x{D}_L{lmax}_{dtype}")
    Wt = b.param_ptr("weights", dtype)
    TO = b.param_ptr("table_offsets", "i64")
    IDX = b.param_ptr("indices", "i64")
    OFF = b.param_ptr("offsets", "i64")
    OUT = b.param_ptr("out", dtype)
    lane = b.reshape(b.cast(b.iota(lmax), "i64"), [1, lmax])
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), T * nb)
    pos = b.tile([Bc, lmax], "i64", name="pos")
    msk = b.tile([Bc, lmax], "i1", name="mask")
    roff = b.tile([Bc, lmax], "i64", copies=2, name="roff")
    acc = b.tile([Bc, D], "f32", name="acc")
    res = b.tile([Bc, D], dtype, copies=2, name="res")
    rows_f = b.tile([Bc, lmax, D], "f32", name="rows_f") if dtype != "f32" else None
    starts = ends = idx = rows = tbl = None
    with b.loop(first, last, 1, name="item") as it:
        t = s64(b, "sdiv", it, nb)
        b0 = s64(b, "mul", s64(b, "srem", it, nb), Bc)
        bag = s64(b, "add", s64(b, "mul", t, B), b0)
        nvalid = s64(b, "sub", B, b0)
        starts = b.dma_load(OFF, bag, [Bc, 1], [1, 0], copies=2, hi=[nvalid, 1], out=starts)
        ends = b.dma_load(OFF, s64(b, "add", bag, 1), [Bc, 1], [1, 0], copies=2, hi=[nvalid, 1], out=ends)
        tbl = b.dma_load(TO, t, [1, 1], [0, 0], copies=2, out=tbl)
        lens = b.sub(ends, starts)
        b.add(starts, lane, out=pos)
        cmp(b, "slt", lane, lens, out=msk)
        idx = gather(b, IDX, [Bc, lmax], [(pos, [Bc, lmax])], [0, 0], mask=msk, other=0, copies=2, out=idx)
        b.add(idx, tbl, out=roff)
        b.mul(roff, D, out=roff)
        m3 = b.reshape(msk, [Bc, lmax, 1])
        rows = gather(b, Wt, [Bc, lmax, D], [(roff, [Bc, lmax, 1])], [0, 0, 1], mask=m3, other=0,
                      run=D, copies=2, out=rows)
        src = rows if dtype == "f32" else b.cast(rows, "f32", out=rows_f)
        b.reduce(src, 1, "sum", out=acc)
        if mode == "mean":
            lf = b.cast(lens, "f32")
            inv = b.unary("recip", b.maximum(lf, 1.0))
            b.mul(acc, inv, out=acc)
        out_v = acc if dtype == "f32" else b.cast(acc, dtype, out=res)
        b.dma_store(OUT, out_v, s64(b, "add", s64(b, "mul", b0, T * D), s64(b, "mul", t, D)), [T * D, 1],
                    hi=[nvalid, D])
    prog = b.build()
    prog.meta["grid"] = grid
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


attach("embedding_bag_sum", embedding_bag_program,
       lambda weights, table_offsets, indices, offsets, num_tables:
       embedding_bag(weights, table_offsets, indices, offsets, num_tables, "sum"))
attach("embedding_bag_mean", embedding_bag_program,
       lambda weights, table_offsets, indices, offsets, num_tables:
       embedding_bag(weights, table_offsets, indices, offsets, num_tables, "mean"))
