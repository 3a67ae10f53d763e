"""Expert data movement: transpose (DMA in, MLU transpose, DMA out), concat (DMA in -> DMA out
of the same buffer, no compute), index_select (index-driven row gather, one run per row)."""
from __future__ import annotations

import torch

from baselines.expert.common import ProgramBuilder
from backend.program import ITEMSIZE
from baselines.expert.common import (DT, cached, cdiv, cmp, first_fit, gather, launch, n_pes, partition,
                                      pid64, pipelined_segments, s64, smin)


@cached
def transpose_program(m: int, n: int, dtype: str, T: int = 0):
    """T x T tiles (T = 128, smaller where the chip's local memory does not hold four)."""
    return first_fit(lambda t: _transpose(m, n, dtype, t), [T] if T else [128, 64, 32])


def _transpose(m: int, n: int, dtype: str, T: int):
    tm, tn = cdiv(m, T), cdiv(n, T)
    grid, per = partition(tm * tn)
    b = ProgramBuilder(f"expert_transpose_{m}x{n}_{dtype}")
    X, Y = b.param_ptr("x", dtype), b.param_ptr("y", dtype)
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), tm * tn)
    xt = None
    yt = b.tile([T, T], dtype, copies=2, name="yt")
    with b.loop(first, last, 1, name="tile") as t:
        r0 = s64(b, "mul", s64(b, "sdiv", t, tn), T)
        c0 = s64(b, "mul", s64(b, "srem", t, tn), T)
        hr, hc = s64(b, "sub", m, r0), s64(b, "sub", n, c0)
        xt = b.dma_load(X, s64(b, "add", s64(b, "mul", r0, n), c0), [T, T], [n, 1], copies=2, hi=[hr, hc], out=xt)
        b.transpose(xt, out=yt)
        b.dma_store(Y, yt, s64(b, "add", s64(b, "mul", c0, m), r0), [m, 1], hi=[hc, hr])
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


@cached
def concat_program(m: int, widths: tuple, dtype: str, elems: int = 16384):
    return first_fit(lambda e: _concat(m, widths, dtype, e), [elems >> k for k in range(5)])


def _concat(m: int, widths: tuple, dtype: str, elems: int):
    total = sum(widths)
    BR = max(1, min(m, elems // max(widths)))
    nb = cdiv(m, BR)
    grid, per = partition(nb)
    b = ProgramBuilder(f"expert_concat_{m}x{'_'.join(map(str, widths))}_{dtype}")
    ins = [b.param_ptr(f"x{i}", dtype) for i in range(len(widths))]
    Y = b.param_ptr("y", dtype)
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), nb)
    tiles = [None] * len(widths)
    with b.loop(first, last, 1, name="blk") as t:
        r0 = s64(b, "mul", t, BR)
        hr = s64(b, "sub", m, r0)
        col = 0
        for i, (p, wd) in enumerate(zip(ins, widths)):
            tiles[i] = b.dma_load(p, s64(b, "mul", r0, wd), [BR, wd], [wd, 1], copies=2, hi=[hr, wd], out=tiles[i])
            b.dma_store(Y, tiles[i], s64(b, "add", s64(b, "mul", r0, total), col), [total, 1], hi=[hr, wd])
            col += wd
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


@cached
def index_select_program(rows: int, dim: int, n: int, dtype: str, main_bytes: int = 64 * 1024,
                         tail_bytes: int = 8 * 1024):
    """y[i, :] = x[index[i], :]: each PE gathers a contiguous share of the output rows, one
    index-driven DMA per block of R rows (one run per row).

    Software-pipelined (common.pipelined_segments): per block, the "load" is the block's index
    chunk (one contiguous 1-D DMA: a [R, 1] box would be R burst-padded runs, 4x the bytes for
    i64) and its row offsets (SIMD index * dim), the "body" the gather and the store. The next
    block's index chunk is issued before the current gather, so the in-order DMA_IN queue never
    holds a gather whose offsets are still in flight (the DMA latency plus the index transfer
    were idle time per block). The gathers are `main_bytes` each (few descriptors); the last
    block of a PE is split into `tail_bytes` gathers whose index chunks all go out before the
    last big gather, so little is left after the PE's last byte arrives (the latency and one
    small store). Lanes past the end are masked: neither read nor written.
    Where the chip's local memory does not hold two main gathers, they are halved until it does."""
    return first_fit(lambda mb: _index_select(rows, dim, n, dtype, mb, min(tail_bytes, mb)),
                     [main_bytes >> k for k in range(5)])


def _index_select(rows: int, dim: int, n: int, dtype: str, main_bytes: int, tail_bytes: int):
    isz = ITEMSIZE[dtype]
    P = n_pes()
    per = cdiv(n, min(P, n))
    grid = cdiv(n, per)

    def rows_for(nbytes):
        r = max(1, min(per, nbytes // (dim * isz)))
        return 1 << (r.bit_length() - 1)
    R = rows_for(main_bytes)
    Rs = min(R, rows_for(tail_bytes))
    b = ProgramBuilder(f"expert_index_select_{rows}x{dim}_{n}_{dtype}")
    X, I, Y = b.param_ptr("x", dtype), b.param_ptr("index", "i64"), b.param_ptr("y", dtype)
    r_first = s64(b, "mul", pid64(b), per)
    r_end = smin(b, s64(b, "add", r_first, per), n)
    n_main = s64(b, "smax", s64(b, "sub", s64(b, "sdiv", s64(b, "add", s64(b, "sub", r_end, r_first), R - 1), R), 1), 0)
    r_tail = s64(b, "add", r_first, s64(b, "mul", n_main, R))
    n_tail = s64(b, "sdiv", s64(b, "add", s64(b, "sub", r_end, r_tail), Rs - 1), Rs)

    def segment(Rb, base, count, burst):
        lane = b.tile([Rb, 1], "i64", name="lane")
        b.emit("simd.const", [lane], {}, {"dtype": "i64", "shape": [Rb, 1], "values": list(range(Rb))})
        got = b.tile([Rb, dim], dtype, copies=2, name="rows")

        def rows_of(t):
            r0 = s64(b, "add", base, s64(b, "mul", t, Rb))
            return r0, s64(b, "sub", r_end, r0)

        def load(t, regs):
            r0, hr = rows_of(t)
            idx, roff, live = regs or (None, None, None)
            idx = b.dma_load(I, r0, [Rb], [1], hi=[hr], other=0, out=idx)
            roff = b.mul(idx, dim, out=roff)
            live = cmp(b, "slt", lane, hr, out=live)
            return idx, roff, live

        def body(regs, t):
            r0, hr = rows_of(t)
            _, roff, live = regs
            gather(b, X, [Rb, dim], [(roff, [Rb, 1])], [0, 1], mask=live, other=0, run=dim, copies=2, out=got)
            b.dma_store(Y, got, s64(b, "mul", r0, dim), [dim, 1], hi=[hr, dim])
        return (0, count, load, body, burst)

    pipelined_segments(b, [segment(R, r_first, n_main, None),
                           segment(Rs, r_tail, n_tail, R // Rs)])
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


def transpose(x):
    m, n = x.shape
    y = torch.empty((n, m), dtype=x.dtype)
    prog = transpose_program(m, n, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x.contiguous(), y])
    return y


def concat(tensors):
    m = tensors[0].shape[0]
    widths = tuple(t.shape[1] for t in tensors)
    y = torch.empty((m, sum(widths)), dtype=tensors[0].dtype)
    prog = concat_program(m, widths, DT[tensors[0].dtype])
    launch(prog, prog.meta["grid"], [t.contiguous() for t in tensors] + [y])
    return y


def index_select(x, index):
    rows, dim = x.shape
    n = index.numel()
    y = torch.empty((n, dim), dtype=x.dtype)
    prog = index_select_program(rows, dim, n, DT[x.dtype])
    launch(prog, prog.meta["grid"], [x.contiguous(), index.to(torch.int64).contiguous(), y], data_independent=False)
    return y
