"""MTIA-tuned recommendation kernels (the study's `triton_ext` implementations), written for
the PE grid with `mtia.pe_id()` / `mtia.num_pes()` (MTIA language extensions): one program
per PE, each planning its own share of the work.

- Jagged sum: segment lengths are data (1..max_len rows), so one program per segment leaves
  some PEs with much more work than others. Work items are (segment, column block) pairs;
  an item costs its rows plus ITEM_COST, and PE p takes the items whose cost midpoint lies
  in [p, p + 1) * total / P (one load of the offsets, vector compares, two sums): every PE
  gets the same cost to within half an item.
- Embedding bag (table-batched): each PE takes a contiguous range of bags of equal cost
  (binary search over the offsets) and keeps three bags in flight (see the kernel).
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



@triton.jit
def _first_bag(offsets_ptr, nb, target, BAG_COST: tl.constexpr):
    """The first bag b with offsets[b] + BAG_COST * b >= target (binary search: the cost of
    the bags before b is their indices plus BAG_COST each)."""
    lo = 0
    hi = nb
    while lo < hi:
        mid = (lo + hi) // 2
        if tl.load(offsets_ptr + mid) + BAG_COST * mid < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


@triton.jit
def embedding_bag_ext_kernel(weights_ptr, table_offsets_ptr, indices_ptr, offsets_ptr, out_ptr, B, T, D,
                             stride_out, MEAN: tl.constexpr, BAG_COST: tl.constexpr, BLOCK_T: tl.constexpr,
                             BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr):
    """Table-batched embedding bag on the PE grid, three bags in flight per PE.

    PE p pools a contiguous range of bags (bag = t * B + b) holding 1/P of the total cost (a
    bag costs its indices plus BAG_COST), found by binary search over the offsets. The chain
    of a bag is offsets -> indices -> rows, each a DMA whose address needs the previous one's
    data, and a PE's DMA engine runs its transfers in order; so while bag k is summed, the rows
    of bag k + 1, the indices of bag k + 2 and the end offset of bag k + 3 are in flight (a
    bag starts where the previous one ends: one offset per bag). The table row offsets stay
    in local memory; a bag's is picked on the vector engines. Bags past the PE's last one are
    empty (never stored). Bags longer than BLOCK_L finish in a loop over their other indices."""
    pe = mtia.pe_id()
    n_pe = mtia.num_pes()
    nb = B * T
    total = tl.load(offsets_ptr + nb) + BAG_COST * nb
    first = _first_bag(offsets_ptr, nb, (total * pe + n_pe - 1) // n_pe, BAG_COST)
    end_bag = _first_bag(offsets_ptr, nb, (total * (pe + 1) + n_pe - 1) // n_pe, BAG_COST)
    last = tl.minimum(tl.maximum(end_bag - 1, first), nb - 1)
    tables = tl.arange(0, BLOCK_T)
    row_offsets = tl.load(table_offsets_ptr + tables, mask=tables < T, other=0)
    offs_l = tl.arange(0, BLOCK_L)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < D
    # prologue: the offsets of bags k, k + 1, k + 2; the indices of k, k + 1; the rows of k
    k0 = tl.minimum(first, nb - 1)
    s0 = tl.load(offsets_ptr + k0)
    e0 = tl.load(offsets_ptr + k0 + 1)
    e1 = tl.load(offsets_ptr + tl.minimum(first + 1, last) + 1)
    e2 = tl.load(offsets_ptr + tl.minimum(first + 2, last) + 1)
    s1 = e0
    s2 = e1
    r0 = tl.sum(tl.where(tables == k0 // B, row_offsets, 0))
    r1 = tl.sum(tl.where(tables == tl.minimum(first + 1, last) // B, row_offsets, 0))
    r2 = tl.sum(tl.where(tables == tl.minimum(first + 2, last) // B, row_offsets, 0))
    # a bag's row starts (index * D) and row mask are computed one step before its gather, so
    # the gather waits for no vector work of the step that issues it
    m0 = offs_l < e0 - s0
    m1 = offs_l < e1 - s1
    row0s = (tl.load(indices_ptr + s0 + offs_l, mask=m0, other=0).to(tl.int64) + r0) * D
    row1s = (tl.load(indices_ptr + s1 + offs_l, mask=m1, other=0).to(tl.int64) + r1) * D
    if EVEN_D:
        rows0 = tl.load(weights_ptr + row0s[:, None] + offs_d[None, :], mask=m0[:, None], other=0.0)
    else:
        rows0 = tl.load(weights_ptr + row0s[:, None] + offs_d[None, :], mask=m0[:, None] & dmask[None, :],
                        other=0.0)
    for bag in range(first, end_bag):
        k3 = tl.minimum(bag + 3, last)
        e3 = tl.load(offsets_ptr + k3 + 1)
        r3 = tl.sum(tl.where(tables == k3 // B, row_offsets, 0))
        m2 = offs_l < e2 - s2
        row2s = (tl.load(indices_ptr + s2 + offs_l, mask=m2, other=0).to(tl.int64) + r2) * D
        if EVEN_D:
            rows1 = tl.load(weights_ptr + row1s[:, None] + offs_d[None, :], mask=m1[:, None], other=0.0)
        else:
            rows1 = tl.load(weights_ptr + row1s[:, None] + offs_d[None, :], mask=m1[:, None] & dmask[None, :],
                            other=0.0)
        acc = tl.sum(rows0.to(tl.float32), axis=0)
        for i in range(s0 + BLOCK_L, e0, BLOCK_L):
            lmask = i + offs_l < e0
            idx = tl.load(indices_ptr + i + offs_l, mask=lmask, other=0).to(tl.int64) + r0
            rows = tl.load(weights_ptr + idx[:, None] * D + offs_d[None, :],
                           mask=lmask[:, None] & dmask[None, :], other=0.0)
            acc += tl.sum(rows.to(tl.float32), axis=0)
        if MEAN:
            acc = acc / tl.maximum(e0 - s0, 1).to(tl.float32)
        t = bag // B
        tl.store(out_ptr + (bag - t * B) * stride_out + t * D + offs_d, acc.to(out_ptr.dtype.element_ty),
                 mask=dmask)
        rows0 = rows1
        row1s = row2s
        m1 = m2
        s0, e0, r0 = s1, e1, r1
        s1, e1, r1 = s2, e2, r2
        s2, e2, r2 = e2, e3, r3


def embedding_bag(weights: torch.Tensor, table_offsets: torch.Tensor, indices: torch.Tensor,
                  offsets: torch.Tensor, num_tables: int, mode: str = "sum", BLOCK_L: int = 64) -> torch.Tensor:
    """Table-batched embedding bag -> [B, num_tables * D] (FBGEMM's pooled layout)."""
    weights = weights.contiguous()
    D = weights.shape[1]
    B = (offsets.numel() - 1) // num_tables
    out = torch.empty((B, num_tables * D), dtype=weights.dtype, device=weights.device)
    if B * num_tables == 0:
        return out
    embedding_bag_ext_kernel[(min(_num_pes(), B * num_tables),)](
        weights, table_offsets, indices, offsets, out, B, num_tables, D, out.stride(0), MEAN=(mode == "mean"),
        BAG_COST=2, BLOCK_T=triton.next_power_of_2(num_tables), BLOCK_L=BLOCK_L, BLOCK_D=triton.next_power_of_2(D),
        EVEN_D=triton.next_power_of_2(D) == D)
    return out
