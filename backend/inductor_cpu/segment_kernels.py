"""Triton kernel of the `segment_reductions` switch (segments.py): one reduction per segment of
consecutive rows, segment b being rows [lo[b], hi[b]) of a (rows, D) source."""
from __future__ import annotations

import triton
import triton.language as tl

# the reduction a launch computes (constexpr REDUCE)
SUM, MAX, MIN = 0, 1, 2


@triton.jit
def segment_reduce_kernel(src_ptr, lo_ptr, hi_ptr, out_ptr, D, s_r, s_d, REDUCE: tl.constexpr,
                          BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[b, d] = reduction over rows lo[b] <= r < hi[b] of src[r, d], in FP32; an empty
    segment gives the identity (0, -inf, +inf). Max and min propagate NaN, as aten's do.
    Grid: (segments, cdiv(D, BLOCK_D)); the rows of a segment are read BLOCK_R at a time."""
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < D
    lo = tl.load(lo_ptr + b)
    hi = tl.load(hi_ptr + b)
    if REDUCE == 0:
        ident = 0.0
    elif REDUCE == 1:
        ident = -float("inf")
    else:
        ident = float("inf")
    acc = tl.full((BLOCK_D,), ident, dtype=tl.float32)
    nan = tl.zeros((BLOCK_D,), dtype=tl.int32)
    for r0 in range(lo, hi, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < hi) & cmask[None, :]
        x = tl.load(src_ptr + rows[:, None] * s_r + cols[None, :] * s_d, mask=mask, other=ident).to(tl.float32)
        if REDUCE == 0:
            acc += tl.sum(x, axis=0)
        elif REDUCE == 1:
            acc = tl.maximum(acc, tl.max(x, axis=0))
            nan = tl.maximum(nan, tl.max((x != x).to(tl.int32), axis=0))
        else:
            acc = tl.minimum(acc, tl.min(x, axis=0))
            nan = tl.maximum(nan, tl.max((x != x).to(tl.int32), axis=0))
    if REDUCE != 0:
        acc = tl.where(nan > 0, float("nan"), acc)
    tl.store(out_ptr + b * D + cols, acc, mask=cmask)
