"""MTIA-tuned jagged sum (the study's `triton_ext` implementation), written for the PE grid.

Segment lengths are data (1..max_len rows): one program per segment leaves some PEs with
much more work than others. With `mtia.pe_id()` / `mtia.num_pes()` (MTIA language
extensions) the kernel runs one program per PE, and each PE picks its own contiguous range
of segments so that every PE gets the same cost to within half a segment: a segment costs
its rows plus SEG_COST rows' worth of fixed work, and PE p takes the segments whose cost
midpoint lies in [p, p + 1) * total / P (one load of the offsets, a vector compare, two
sums). The segments are then summed as in the plain kernel.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from backend.language import mtia


@triton.jit
def jagged_sum_ext_kernel(values_ptr, offsets_ptr, out_ptr, B, D, ITEM_COST: tl.constexpr, BLOCK_B: tl.constexpr,
                          NCB: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """Work item i = (segment i // NCB, column block i % NCB); PE p sums the items whose
    cost midpoint lies in [p, p + 1) * total / P, items in order (segment-major)."""
    pe = mtia.pe_id()
    n_pe = mtia.num_pes()
    seg = tl.arange(0, BLOCK_B)
    cb = tl.arange(0, NCB)
    smask = seg < B
    start = tl.load(offsets_ptr + seg, mask=smask, other=0)
    length = tl.load(offsets_ptr + seg + 1, mask=smask, other=0) - start
    # cost before item (b, c): NCB rows per row of the earlier segments, c of b's, and
    # ITEM_COST per earlier item; twice the midpoint of item (b, c) is that plus its end
    item = seg[:, None] * NCB + cb[None, :]
    before = start[:, None] * NCB + cb[None, :] * length[:, None] + item * ITEM_COST
    mid2 = (2 * before + length[:, None] + ITEM_COST) * n_pe
    total = tl.load(offsets_ptr + B) * NCB + B * NCB * ITEM_COST
    valid = smask[:, None] & (cb[None, :] < NCB)
    first = tl.sum((valid & (mid2 < 2 * pe * total)).to(tl.int32))
    last = tl.sum((valid & (mid2 < 2 * (pe + 1) * total)).to(tl.int32))
    offs_l = tl.arange(0, BLOCK_L)
    for it in range(first, last):
        b = it // NCB
        offs_d = (it % NCB) * BLOCK_D + tl.arange(0, BLOCK_D)
        dmask = offs_d < D
        lo = tl.load(offsets_ptr + b)
        hi = tl.load(offsets_ptr + b + 1)
        acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
        for i in range(lo, hi, BLOCK_L):
            rows = i + offs_l
            x = tl.load(values_ptr + rows[:, None] * D + offs_d[None, :],
                        mask=(rows[:, None] < hi) & dmask[None, :], other=0.0)
            acc += tl.sum(x.to(tl.float32), axis=0)
        tl.store(out_ptr + b * D + offs_d, acc.to(out_ptr.dtype.element_ty), mask=dmask)


def _num_pes() -> int:
    return triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]


def jagged_sum(values: torch.Tensor, offsets: torch.Tensor, BLOCK_L: int = 128, BLOCK_D: int = 32) -> torch.Tensor:
    B = offsets.numel() - 1
    D = values.shape[1]
    out = torch.empty((B, D), dtype=values.dtype, device=values.device)
    BLOCK_D = min(BLOCK_D, triton.next_power_of_2(D))
    ncb = triton.cdiv(D, BLOCK_D)
    if B == 0:
        return out
    # column blocks of >= 32 bytes per row keep every DMA run a whole burst; NCB of them per
    # segment make the items small enough to balance (a half-item error per PE)
    jagged_sum_ext_kernel[(min(_num_pes(), B * ncb),)](
        values, offsets, out, B, D, ITEM_COST=16, BLOCK_B=triton.next_power_of_2(B), NCB=ncb,
        BLOCK_L=BLOCK_L, BLOCK_D=BLOCK_D, num_stages=3)
    return out

