"""Expert data movement: transpose (DMA in, MLU transpose, DMA out), concat (DMA in -> DMA out
of the same buffer, no compute), index_select (index-driven row gather, one run per row)."""
from __future__ import annotations

import torch

from backend.sim.builder import ProgramBuilder
from baselines.expert.common import DT, attach, cached, cdiv, gather, launch, partition, pid64, s64, smin


@cached
def transpose_program(m: int, n: int, dtype: str, T: int = 128):
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
def index_select_program(rows: int, dim: int, n: int, dtype: str):
    isz = 2 if dtype in ("bf16", "f16") else 4
    R = max(1, min(n, (64 * 1024) // (dim * isz)))
    nb = cdiv(n, R)
    grid, per = partition(nb)
    b = ProgramBuilder(f"expert_index_select_{rows}x{dim}_{n}_{dtype}")
    X, I, Y = b.param_ptr("x", dtype), b.param_ptr("index", "i64"), b.param_ptr("y", dtype)
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), nb)
    idx = rows_t = None
    roff = b.tile([R, 1], "i64", copies=2, name="roff")
    with b.loop(first, last, 1, name="blk") as t:
        r0 = s64(b, "mul", t, R)
        hr = s64(b, "sub", n, r0)
        idx = b.dma_load(I, r0, [R, 1], [1, 0], copies=2, hi=[hr, 1], out=idx)
        b.mul(idx, dim, out=roff)
        rows_t = gather(b, X, [R, dim], [(roff, [R, 1])], [0, 1], run=dim, copies=2, out=rows_t)
        b.dma_store(Y, rows_t, s64(b, "mul", r0, dim), [dim, 1], hi=[hr, dim])
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
    # padded lanes of the last block gather row 0 (index tile `other` = 0) and are not stored
    launch(prog, prog.meta["grid"], [x.contiguous(), index.to(torch.int64).contiguous(), y], data_independent=False)
    return y


attach("transpose", transpose_program, transpose)
attach("concat", concat_program, concat)
attach("index_select", index_select_program, index_select)
