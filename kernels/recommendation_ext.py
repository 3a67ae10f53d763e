"""MTIA-tuned recommendation kernels (the study's `triton_ext` implementations), written for
the PE grid with `mtia.pe_id()` / `mtia.num_pes()` (MTIA language extensions): one program
per PE, each planning its own share of the work.

- Jagged sum: segment lengths are data (1..max_len rows), so one program per segment leaves
  some PEs with much more work than others. Work items are (segment, column block) pairs;
  an item costs its rows plus ITEM_COST, and PE p takes exactly the cost range
  [p, p + 1) * total / P, cut between rows (one load of the offsets, a compare and a count
  per cut). An item cut over several PEs leaves a partial sum per PE, added by a second,
  small launch (jagged_sum_combine): every PE gets the same rows to within ITEM_COST, where
  giving each item whole to one PE leaves up to half an item of imbalance at each cut.
- Embedding bag (table-batched): each PE takes a contiguous range of bags holding an equal
  share of the lookups (two-level count over the offsets), walks it a few bags (an item) at a time and keeps
  three items in flight (see the kernel).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from backend.language import mtia


@triton.jit
def _cut(offsets_ptr, x, seg, smask, B, NCB: tl.constexpr, ITEM_COST: tl.constexpr):
    """Where cost position x falls: (item, its first row at or after x). Segment b's items
    start at cost NCB * (offsets[b] + b * ITEM_COST) (closed form: offsets are cumulative)
    and each costs its ITEM_COST, then one per row; x = total gives (last item, its length)."""
    s_all = tl.load(offsets_ptr + seg, mask=smask, other=0)
    b = tl.sum((smask & ((s_all + seg * ITEM_COST) * NCB <= x)).to(tl.int32)) - 1
    lo = tl.load(offsets_ptr + b)
    per = tl.load(offsets_ptr + b + 1) - lo + ITEM_COST
    into = x - (lo + b * ITEM_COST) * NCB
    c = tl.minimum(into // per, NCB - 1)
    return b * NCB + c, tl.maximum(into - c * per - ITEM_COST, 0)


@triton.jit
def _rows_sum(values_ptr, D, offs_d, r_lo, r_hi, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """FP32 column sums of values[r_lo:r_hi, offs_d], BLOCK_L rows at a time."""
    offs_l = tl.arange(0, BLOCK_L)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(r_lo, r_hi, BLOCK_L):
        rows = i + offs_l
        x = tl.load(values_ptr + rows[:, None] * D + offs_d[None, :],
                    mask=(rows[:, None] < r_hi) & (offs_d[None, :] < D), other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    return acc


@triton.jit
def jagged_sum_ext_kernel(values_ptr, offsets_ptr, out_ptr, part_ptr, head_ptr, B, D,
                          ITEM_COST: tl.constexpr, BLOCK_B: tl.constexpr, NCB: tl.constexpr,
                          BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """Work = items (segment, column block), segment-major, each costing ITEM_COST plus one
    per row; PE p takes the cost range [p, p + 1) * total / P exactly, cut between rows: its
    first item i0 from row r0, the whole items after it, and its last item i1 up to row r1.
    A whole item's sum goes to out; an item cut at its end (begun here) is a partial in
    part[0, p], with its id and last PE in head[p]; one cut at its start (an earlier PE began
    it) is a partial in part[1, p]. jagged_sum_combine adds them up."""
    pe = mtia.pe_id()
    n_pe = mtia.num_pes()
    seg = tl.arange(0, BLOCK_B)
    smask = seg < B
    total = (tl.load(offsets_ptr + B) + B * ITEM_COST) * NCB
    i0, r0 = _cut(offsets_ptr, total * pe // n_pe, seg, smask, B, NCB, ITEM_COST)
    i1, r1 = _cut(offsets_ptr, total * (pe + 1) // n_pe, seg, smask, B, NCB, ITEM_COST)
    # i0..r1 come from reductions: they live in vector registers, and the control core waits
    # for them where it reads them (bounds, addresses), so the item loop reads none of them
    # per item: the two cut items are summed before and after it
    n_items = B * NCB
    b0 = i0 // NCB
    lo0 = tl.load(offsets_ptr + b0)
    hi0 = tl.load(offsets_ptr + b0 + 1)
    # the next item's bounds are loaded one item ahead: the loop bounds are scalars the control
    # core waits for, and loaded in the item itself they would queue behind the previous
    # item's row transfers (a DMA latency of idle engine per item)
    nxt = tl.minimum(i0 + 1, n_items - 1) // NCB
    lo_n = tl.load(offsets_ptr + nxt)
    hi_n = tl.load(offsets_ptr + nxt + 1)
    e0 = tl.where(i0 == i1, lo0 + r1, hi0)
    cols = (i0 % NCB) * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = _rows_sum(values_ptr, D, cols, lo0 + r0, e0, BLOCK_L, BLOCK_D)
    # the destination is chosen by a scalar bound on the columns (a DMA box bound)
    tl.store(out_ptr + b0 * D + cols, acc.to(out_ptr.dtype.element_ty),
             mask=cols < tl.where((r0 == 0) & (e0 == hi0), D, 0))
    tl.store(part_ptr + pe * D + cols, acc, mask=cols < tl.where((r0 == 0) & (e0 > lo0) & (e0 < hi0), D, 0))
    tl.store(part_ptr + (n_pe + pe) * D + cols, acc, mask=cols < tl.where((r0 > 0) & (e0 > lo0 + r0), D, 0))
    for it in range(i0 + 1, i1):
        b = it // NCB
        offs_d = (it % NCB) * BLOCK_D + tl.arange(0, BLOCK_D)
        lo = lo_n
        hi = hi_n
        nxt = tl.minimum(it + 1, n_items - 1) // NCB
        lo_n = tl.load(offsets_ptr + nxt)
        hi_n = tl.load(offsets_ptr + nxt + 1)
        acc = _rows_sum(values_ptr, D, offs_d, lo, hi, BLOCK_L, BLOCK_D)
        tl.store(out_ptr + b * D + offs_d, acc.to(out_ptr.dtype.element_ty), mask=offs_d < D)
    b1 = tl.minimum(i1, n_items - 1) // NCB
    lo1 = tl.load(offsets_ptr + b1)
    hi1 = tl.load(offsets_ptr + b1 + 1)
    cols = (i1 % NCB) * BLOCK_D + tl.arange(0, BLOCK_D)
    # (an empty last item is whole wherever the cut falls in it: its zeros may be stored twice)
    last = (i1 > i0) & ((r1 > 0) | (hi1 == lo1))
    acc = _rows_sum(values_ptr, D, cols, lo1, tl.where(last, lo1 + r1, lo1), BLOCK_L, BLOCK_D)
    tl.store(out_ptr + b1 * D + cols, acc.to(out_ptr.dtype.element_ty),
             mask=cols < tl.where(last & (r1 == hi1 - lo1), D, 0))
    tl.store(part_ptr + pe * D + cols, acc, mask=cols < tl.where(last & (r1 < hi1 - lo1), D, 0))
    # the item begun here and left unfinished, and the PE holding its last row: the last q
    # with q * total // P <= that row's cost position
    starts = (r1 > 0) & (r1 < hi1 - lo1) & ((i1 > i0) | (r0 == 0))
    end = (lo1 + b1 * ITEM_COST) * NCB + (i1 % NCB + 1) * (hi1 - lo1 + ITEM_COST)
    tl.store(head_ptr + pe * 2, tl.where(starts, i1, -1))
    tl.store(head_ptr + pe * 2 + 1, tl.where(starts, (end * n_pe + total - 1) // total - 1, pe))


@triton.jit
def jagged_sum_combine(part_ptr, head_ptr, out_ptr, D, NCB: tl.constexpr, BLOCK_D: tl.constexpr):
    """Program p: the item PE p began and later PEs finished (head[p]), summed from its
    partials (part[0, p], then part[1, q] of every later PE q up to the item's last PE)."""
    p = tl.program_id(0)
    n_pe = tl.num_programs(0)
    item = tl.load(head_ptr + p * 2)
    last_pe = tl.load(head_ptr + p * 2 + 1)
    cols = (tl.maximum(item, 0) % NCB) * BLOCK_D + tl.arange(0, BLOCK_D)
    dmask = cols < D
    acc = tl.load(part_ptr + p * D + cols, mask=dmask & (item >= 0), other=0.0)
    for q in range(p + 1, last_pe + 1):
        acc += tl.load(part_ptr + (n_pe + q) * D + cols, mask=dmask, other=0.0)
    tl.store(out_ptr + (item // NCB) * D + cols, acc.to(out_ptr.dtype.element_ty), mask=dmask & (item >= 0))


def _num_pes() -> int:
    return triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]


def jagged_sum(values: torch.Tensor, offsets: torch.Tensor, BLOCK_L: int = 128, BLOCK_D: int | None = None) -> torch.Tensor:
    B = offsets.numel() - 1
    D = values.shape[1]
    out = torch.empty((B, D), dtype=values.dtype, device=values.device)
    if BLOCK_D is None:
        # rows of up to 64 elements whole (one DMA run per row: at D = 64, 32-wide column
        # blocks measured 0.3-0.5% slower cold); wider rows in 32-wide column blocks, which cut
        # the work finer (64-wide measured 0.3% slower at D = 128, BF16)
        BLOCK_D = 64 if D <= 64 else 32
    BLOCK_D = min(BLOCK_D, triton.next_power_of_2(D))
    ncb = triton.cdiv(D, BLOCK_D)
    if B == 0:
        return out
    # the cuts fall between rows: any number of PEs can share the rows (values.shape[0], known
    # without reading the offsets), one tile of rows each at least
    P = max(1, min(_num_pes(), triton.cdiv(values.shape[0] * ncb, BLOCK_L)))
    part = torch.empty((2, P, D), dtype=torch.float32, device=values.device)
    head = torch.empty((P, 2), dtype=torch.int32, device=values.device)
    jagged_sum_ext_kernel[(P,)](
        values, offsets, out, part, head, B, D, ITEM_COST=2, BLOCK_B=triton.next_power_of_2(B), NCB=ncb,
        BLOCK_L=BLOCK_L, BLOCK_D=BLOCK_D, num_stages=3)
    jagged_sum_combine[(P,)](part, head, out, D, NCB=ncb, BLOCK_D=BLOCK_D)
    return out



@triton.jit
def _cuts(offsets_ptr, pe, n_pe, nb, S: tl.constexpr, K: tl.constexpr):
    """The bags [g0, g1) of PE pe (bag g = t * B + b, over all tables): the bags whose middle
    (offsets[g] + offsets[g + 1]) / 2 lies in [pe, pe + 1) / n_pe of the lookups (balanced by
    rows gathered, not bags: a per-bag term in the cost measured slower; the empty bags at the
    end go to the last PE), counted in two levels, every S-th bag start and then the S bags of
    the window holding the cut. Both cuts side by side, every load issued before the vector
    work on loaded data: the vector engines run in order, so address work queued behind work
    that waits for a load would hold the next load back. Every PE gets the same lookups to
    within half a bag at each end."""
    k = tl.arange(0, K) * S
    ok = k <= nb
    total = tl.load(offsets_ptr + nb + tl.zeros((1,), tl.int32))
    v = tl.load(offsets_ptr + k, mask=ok, other=0)
    lo_t = (total * pe + n_pe - 1) // n_pe
    hi_t = (total * (pe + 1) + n_pe - 1) // n_pe
    base0 = tl.maximum(tl.sum(((v < lo_t) & ok).to(tl.int32)) - 1, 0) * S
    base1 = tl.maximum(tl.sum(((v < hi_t) & ok).to(tl.int32)) - 1, 0) * S
    g0 = base0 + tl.arange(0, S)
    g1 = base1 + tl.arange(0, S)
    w0 = tl.load(offsets_ptr + g0, mask=g0 < nb, other=0)
    w1 = tl.load(offsets_ptr + g1, mask=g1 < nb, other=0)
    e0 = tl.load(offsets_ptr + g0 + 1, mask=g0 < nb, other=0)
    e1 = tl.load(offsets_ptr + g1 + 1, mask=g1 < nb, other=0)
    # bag g goes to the PE whose share holds its middle: 2 * n_pe * mid < 2 * pe * total
    c0 = base0 + tl.sum((((w0 + e0) * n_pe < 2 * total * pe) & (g0 < nb)).to(tl.int32))
    c1 = base1 + tl.sum((((w1 + e1) * n_pe < 2 * total * (pe + 1)) & (g1 < nb)).to(tl.int32))
    # empty bags at the end start at the total: the last PE takes them
    return c0, tl.where(pe == n_pe - 1, nb, c1)


@triton.jit
def _chunk(g, B, NCH, BC: tl.constexpr):
    """The item (chunk of BC bags of one table, chunks numbered table-major) holding bag g."""
    t = g // B
    return t * NCH + (g - t * B) // BC


@triton.jit
def _item(j, j0, j1, g0, g1, n_items, B, NCH, BC: tl.constexpr):
    """Item j -> (table, first bag, bags), clipped to the PE's bags [g0, g1). Items outside
    [j0, j1) have no bags; their address is clamped to a real item so that nothing outside the
    tensors is named."""
    jc = tl.maximum(tl.minimum(j, n_items - 1), 0)
    t = jc // NCH
    c = jc - t * NCH
    first = t * B + c * BC
    lo = tl.maximum(first, g0)
    hi = tl.minimum(first + tl.minimum(B - c * BC, BC), g1)
    nv = tl.where((j >= j0) & (j < j1), tl.maximum(hi - lo, 0), 0)
    return t, tl.where(nv > 0, lo, first), nv


@triton.jit
def _bounds(offsets_ptr, lo, nv, bags):
    """Where the item's bags start and end in the indices: offsets[lo + b], offsets[lo + b + 1]
    as one DMA of a [BC, 2] tile."""
    two = tl.arange(0, 2)
    se = tl.load(offsets_ptr + lo + bags[:, None] + two[None, :], mask=(bags < nv)[:, None], other=0)
    return tl.split(se)


@triton.jit
def _fetch(indices_ptr, st, en, nv, length, lanes, FLAT: tl.constexpr):
    """An item's indices as loaded, and what _indices needs with them. FLAT > 0: all of them as
    one [FLAT] tile, and the index it starts at (a [1] tile): the bags of an item are
    consecutive, and so are their indices, so one contiguous DMA from the first bag's start to
    the last bag's end (one run, against a run per bag). FLAT = 0: the [BC, lanes] tile itself,
    bag b's run starts[b] + lanes masked at its length (one index-driven DMA, a run per bag),
    and its mask."""
    if FLAT > 0:
        first = tl.gather(st, tl.zeros((1,), tl.int32), 0)
        last = tl.gather(en, tl.maximum(nv - 1, 0) + tl.zeros((1,), tl.int32), 0)
        k = tl.arange(0, FLAT)
        flat = tl.load(indices_ptr + first[:, None] + k[None, :], mask=k[None, :] < (last - first)[:, None], other=0)
        return tl.reshape(flat, (FLAT,)), first
    else:
        m = lanes[None, :] < length[:, None]
        return tl.load(indices_ptr + st[:, None] + lanes[None, :], mask=m, other=0), m


@triton.jit
def _indices(fetched, aux, st, length, lanes, BC: tl.constexpr, L: tl.constexpr, FLAT: tl.constexpr):
    """The item's indices as a [BC, lanes] tile and its mask, from what _fetch gave: FLAT > 0,
    picked from the [FLAT] tile by the MLU (an iteration after its load, so that the MLU never
    waits for a DMA in flight); FLAT = 0, the loaded tile (lanes: those _fetch loaded)."""
    if FLAT > 0:
        m = lanes[None, :] < length[:, None]
        pos = tl.where(m, (st - aux)[:, None] + lanes[None, :], 0)
        return tl.reshape(tl.gather(fetched, tl.reshape(pos, (BC * L,)), 0), (BC, L)), m
    else:
        return fetched, aux


@triton.jit
def _row_offsets(idx, ro, m, D, BC: tl.constexpr, L: tl.constexpr, FLAT: tl.constexpr):
    """Element offsets of the looked-up rows (index + the table's first row) * D, and their
    mask; FLAT: as [BC * L] for the DPE's [BC * L, D] rows tile."""
    rowoff = (idx + ro[:, None]) * D
    if FLAT:
        return tl.reshape(rowoff, (BC * L,)), tl.reshape(m, (BC * L,))
    else:
        return rowoff, m


@triton.jit
def _rows(weights_ptr, rowoff, m, offs_d, dmask, FLAT: tl.constexpr, EVEN_D: tl.constexpr):
    """The looked-up rows, one index-driven DMA (a run of D per row; masked lanes are neither
    read nor priced): [BC, L, D] for the reduction engine, or [BC * L, D] (FLAT) for the DPE."""
    if FLAT:
        r = rowoff[:, None]
        mm = m[:, None]
        if EVEN_D:
            rows = tl.load(weights_ptr + r + offs_d[None, :], mask=mm, other=0.0)
        else:
            rows = tl.load(weights_ptr + r + offs_d[None, :], mask=mm & dmask[None, :], other=0.0)
    else:
        if EVEN_D:
            rows = tl.load(weights_ptr + rowoff[:, :, None] + offs_d[None, None, :], mask=m[:, :, None], other=0.0)
        else:
            rows = tl.load(weights_ptr + rowoff[:, :, None] + offs_d[None, None, :],
                           mask=m[:, :, None] & dmask[None, None, :], other=0.0)
    return rows


@triton.jit
def _pool(rows_a, rows_b, sel_a, sel_b, DOT: tl.constexpr, SPLIT: tl.constexpr, OUT16: tl.constexpr):
    """Per-bag sums: FP32 rows on the reduction engine; 16-bit rows on the DPE as block-diagonal
    0/1 [BM, BC * L] x rows (FP32 accumulation; OUT16: rounded once to the rows' dtype)."""
    if DOT:
        if SPLIT:
            acc = tl.dot(sel_b, rows_b, acc=tl.dot(sel_a, rows_a, out_dtype=tl.float32), out_dtype=tl.float32)
        elif OUT16:
            acc = tl.dot(sel_a, rows_a, out_dtype=rows_a.dtype)
        else:
            acc = tl.dot(sel_a, rows_a, out_dtype=tl.float32)
    else:
        acc = tl.sum(rows_a, axis=1)
    return acc


@triton.jit
def _finish(acc, length, out_ptr, t, lo, nv, B, D, stride_out, bags, brow, offs_d, dmask, MEAN: tl.constexpr,
            DOT: tl.constexpr):
    """Scale (mean), cast and store an item's pooled bags: out[lo - t B + b, t D : t D + D]."""
    if MEAN:
        inv = 1.0 / tl.maximum(length, 1).to(tl.float32)
        if DOT:  # [BC] -> the DPE's [BM] rows
            inv = tl.sum(tl.where(brow[:, None] == bags[None, :], inv[None, :], 0.0), axis=1)
        acc = acc * inv[:, None]
    tl.store(out_ptr + (lo - t * B + brow)[:, None] * stride_out + t * D + offs_d[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=(brow[:, None] < nv) & dmask[None, :])


@triton.jit
def embedding_bag_ext_kernel(weights_ptr, table_offsets_ptr, indices_ptr, offsets_ptr, out_ptr, B, T, D,
                             stride_out, MEAN: tl.constexpr, DOT: tl.constexpr, SPLIT: tl.constexpr,
                             S: tl.constexpr, K: tl.constexpr, BC: tl.constexpr,
                             BM: tl.constexpr, LA: tl.constexpr, LB: tl.constexpr, BLOCK_D: tl.constexpr,
                             BLOCK_T: tl.constexpr, EVEN_D: tl.constexpr, FLAT: tl.constexpr):
    """Table-batched embedding bag on the PE grid, a few bags (an item) at a time.

    An item is BC consecutive bags of one table (bag = t * B + b). PE p pools a contiguous
    range of bags holding 1/P of the lookups (two-level count over the offsets, _cuts);
    its first and last items are clipped to that range (cutting at items instead leaves the
    busiest PE ~5% over the mean: half an item of rows at each end).
    Per item: its offsets (one DMA), its indices (one index-driven DMA, a run per bag, lanes
    up to the longest bag LA + LB), the row offsets, its rows (one index-driven DMA), the
    pooling and the store. Each step needs the previous one's data and the DMA engine runs its
    transfers in order, so the steps of different items overlap, written out in the loop:
    iteration j gathers item j's rows, loads the offsets of j + 3 and the indices of j + 2,
    computes the row offsets of j + 1, scales and stores j - 1 (so no vector work that waits
    for a pooling sits before the next item's address work) and pools j. 16-bit rows pool on
    the DPE; a bag's lanes are padded to a power of two there, so lanes past LA go in a second
    tile of LB (40 lanes as 32 + 8, not 64). No scalar in the loop comes from a load: the
    control core never waits for data."""
    pe = mtia.pe_id()
    n_pe = mtia.num_pes()
    NCH = tl.cdiv(B, BC)
    n_items = T * NCH
    g0, g1 = _cuts(offsets_ptr, pe, n_pe, T * B, S, K)
    j0 = _chunk(g0, B, NCH, BC)
    j1 = tl.where(g1 > g0, _chunk(g1 - 1, B, NCH, BC) + 1, j0)
    # the table row offsets stay in local memory; an item's is picked by the MLU
    tables = tl.load(table_offsets_ptr + tl.arange(0, BLOCK_T), mask=tl.arange(0, BLOCK_T) < T, other=0)
    bags = tl.arange(0, BC)
    lanes_a = tl.arange(0, LA)
    lanes_b = LA + tl.arange(0, LB)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < D
    if DOT:
        # block-diagonal 0/1 selectors: row b of [BM, BC * L] picks bag b's lanes (the DPE
        # needs BM >= 16 rows; rows past BC stay zero)
        brow = tl.arange(0, BM)
        sel_a = ((tl.arange(0, BC * LA) // LA)[None, :] == brow[:, None]).to(weights_ptr.dtype.element_ty)
        sel_b = ((tl.arange(0, BC * LB) // LB)[None, :] == brow[:, None]).to(weights_ptr.dtype.element_ty)
    else:
        brow = bags
        sel_a = 0
        sel_b = 0
    # prologue: the offsets of items j0 .. j0 + 2, the indices of j0 and j0 + 1, the row
    # offsets of j0
    t0, lo0, nv0 = _item(j0, j0, j1, g0, g1, n_items, B, NCH, BC)
    t1, lo1, nv1 = _item(j0 + 1, j0, j1, g0, g1, n_items, B, NCH, BC)
    t2, lo2, nv2 = _item(j0 + 2, j0, j1, g0, g1, n_items, B, NCH, BC)
    st0, en0 = _bounds(offsets_ptr, lo0, nv0, bags)
    st1, en1 = _bounds(offsets_ptr, lo1, nv1, bags)
    st_nn, en_nn = _bounds(offsets_ptr, lo2, nv2, bags)
    len_c = en0 - st0
    # (SPLIT is only for 16-bit rows, which take FLAT > 0: the [FLAT] tile holds both lane sets)
    fa, aux_c = _fetch(indices_ptr, st0, en0, nv0, len_c, lanes_a, FLAT)
    idx_a, m_ca = _indices(fa, aux_c, st0, len_c, lanes_a, BC, LA, FLAT)
    ro = tl.gather(tables, tl.zeros((1,), tl.int32) + t0, 0)
    rowoff_ca, m_ca = _row_offsets(idx_a, ro, m_ca, D, BC, LA, DOT)
    if SPLIT:
        idx_b, m_cb = _indices(fa, aux_c, st0, len_c, lanes_b, BC, LB, FLAT)
        rowoff_cb, m_cb = _row_offsets(idx_b, ro, m_cb, D, BC, LB, DOT)
    else:  # (unused)
        rowoff_cb, m_cb = rowoff_ca, m_ca
    len_n = en1 - st1
    st_n = st1
    fa_n, aux_n = _fetch(indices_ptr, st1, en1, nv1, len_n, lanes_a, FLAT)
    ro_n = tl.gather(tables, tl.zeros((1,), tl.int32) + t1, 0)
    len_p = tl.zeros_like(len_c)  # a distinct value (Triton carries a value whose identity changes)
    if DOT and not SPLIT and not MEAN:
        acc_p = tl.zeros((BM, BLOCK_D), dtype=weights_ptr.dtype.element_ty)
    else:
        acc_p = tl.zeros((BM, BLOCK_D), dtype=tl.float32)
    for j in range(j0, j1):
        rows_a = _rows(weights_ptr, rowoff_ca, m_ca, offs_d, dmask, DOT, EVEN_D)
        if SPLIT:
            rows_b = _rows(weights_ptr, rowoff_cb, m_cb, offs_d, dmask, DOT, EVEN_D)
        else:
            rows_b = rows_a
        _, lo3, nv3 = _item(j + 3, j0, j1, g0, g1, n_items, B, NCH, BC)
        st3, en3 = _bounds(offsets_ptr, lo3, nv3, bags)
        t2, _, nv2 = _item(j + 2, j0, j1, g0, g1, n_items, B, NCH, BC)
        len_nn = en_nn - st_nn
        fa_nn, aux_nn = _fetch(indices_ptr, st_nn, en_nn, nv2, len_nn, lanes_a, FLAT)
        ro_nn = tl.gather(tables, tl.zeros((1,), tl.int32) + t2, 0)
        idx_na, m_na = _indices(fa_n, aux_n, st_n, len_n, lanes_a, BC, LA, FLAT)
        rowoff_na, m_fa = _row_offsets(idx_na, ro_n, m_na, D, BC, LA, DOT)
        if SPLIT:
            idx_nb, m_nb = _indices(fa_n, aux_n, st_n, len_n, lanes_b, BC, LB, FLAT)
            rowoff_nb, m_fb = _row_offsets(idx_nb, ro_n, m_nb, D, BC, LB, DOT)
        else:
            rowoff_nb, m_fb = rowoff_na, m_fa
        tp, lop, nvp = _item(j - 1, j0, j1, g0, g1, n_items, B, NCH, BC)
        _finish(acc_p, len_p, out_ptr, tp, lop, nvp, B, D, stride_out, bags, brow, offs_d, dmask, MEAN, DOT)
        acc_p = _pool(rows_a, rows_b, sel_a, sel_b, DOT, SPLIT, not MEAN)
        len_p = len_c
        len_c = len_n
        len_n = len_nn
        rowoff_ca = rowoff_na
        rowoff_cb = rowoff_nb
        m_ca = m_fa
        m_cb = m_fb
        fa_n = fa_nn
        aux_n = aux_nn
        st_n = st_nn
        ro_n = ro_nn
        st_nn = st3
        en_nn = en3
    tp, lop, nvp = _item(j1 - 1, j0, j1, g0, g1, n_items, B, NCH, BC)
    _finish(acc_p, len_p, out_ptr, tp, lop, nvp, B, D, stride_out, bags, brow, offs_d, dmask, MEAN, DOT)


def embedding_bag(weights: torch.Tensor, table_offsets: torch.Tensor, indices: torch.Tensor,
                  offsets: torch.Tensor, num_tables: int, mode: str = "sum") -> torch.Tensor:
    """Table-batched embedding bag -> [B, num_tables * D] (FBGEMM's pooled layout)."""
    weights = weights.contiguous()
    D = weights.shape[1]
    nb = offsets.numel() - 1
    B = nb // num_tables
    out = torch.empty((B, num_tables * D), dtype=weights.dtype, device=weights.device)
    if nb == 0:
        return out
    # the longest bag (a host-side argument, as TBE's max pooling factor)
    lmax = max(1, int((offsets[1:] - offsets[:-1]).max()))
    dot = weights.dtype != torch.float32
    BLOCK_D = triton.next_power_of_2(D)
    la = triton.next_power_of_2(lmax)
    lb = 0
    if dot and la != lmax:
        # the DPE's work grows with the padded lanes: 40 lanes as 32 + 8 rather than 64
        la //= 2
        lb = triton.next_power_of_2(lmax - la)
        if la + lb == 2 * la:
            la, lb = 2 * la, 0
    # bags per item: the rows tiles within a sixth (FP32: three in flight) or a third (16-bit,
    # two) of local memory, at most 8 (the DPE pads its 16 rows to 32 either way)
    budget = (64 if not dot else 128) * 1024
    bc = max(1, min(8, budget // ((la + lb) * BLOCK_D * weights.element_size())))
    bc = min(1 << (bc.bit_length() - 1), triton.next_power_of_2(B))
    if dot:
        bc = max(bc, 16 // min(la, lb or la))  # a selector needs >= 16 lanes for the DPE
    S = triton.next_power_of_2(max(8, int((nb + 1) ** 0.5)))
    K = triton.next_power_of_2(triton.cdiv(nb + 1, S))
    embedding_bag_ext_kernel[(min(_num_pes(), nb),)](
        weights, table_offsets, indices, offsets, out, B, num_tables, D, out.stride(0), MEAN=(mode == "mean"),
        DOT=dot, SPLIT=lb > 0, S=S, K=K, BC=bc, BM=max(16, bc) if dot else bc, LA=la, LB=max(lb, 1),
        BLOCK_D=BLOCK_D, BLOCK_T=triton.next_power_of_2(num_tables), EVEN_D=BLOCK_D == D,
        FLAT=triton.next_power_of_2(bc * lmax) if dot else 0,
        num_stages=2 if dot else 3)
    return out


@triton.jit
def dot_interaction_ext_kernel(x_ptr, out_ptr, B, F, D, stride_xb, stride_xf, stride_ob, S: tl.constexpr,
                               BF: tl.constexpr, BD: tl.constexpr, BP: tl.constexpr,
                               DC: tl.constexpr, EVEN_B: tl.constexpr):
    """DLRM dot interaction of S samples per block, launched `persistent=True`. Z = x x^T is one
    batched [S, BF, BF] GEMM; its lower triangle is packed in local memory by one gather
    (tl.gather with the pair table pair p -> (i_p, j_p), i_p > j_p, built once per PE), so each
    sample's pairs leave as one contiguous run (the plain kernel scatters them one element at a
    time: a DMA run, and its per-run cost, per pair). x comes in column chunks of DC, each
    chunk's GEMM accumulated into Z as it lands; the dense row (x[s, 0]) is loaded after them,
    so its transfer overlaps the last chunk's GEMM rather than delaying it."""
    s = tl.program_id(0) * S + tl.arange(0, S)
    f = tl.arange(0, BF)
    d = tl.arange(0, BD)
    p = tl.arange(0, BP)
    # EVEN_B (every block full): the masks do not depend on the block, so they are built once
    # per PE; a per-block mask tile is rewritten for every block, and its vector op waits for
    # the previous block's DMA that still reads it (the vector engine runs in order: the GEMM
    # queued behind it waits too)
    if EVEN_B:
        smask = tl.full((S,), 1, tl.int1)
    else:
        smask = s < B
    # the pair table: pair p is (i_p, j_p) with i_p = floor((1 + sqrt(1 + 8 p)) / 2) (exact: a
    # perfect square's root is exact, and no other value comes near an integer), j_p = p - i_p (i_p - 1) / 2
    i_p = ((tl.sqrt((8 * p + 1).to(tl.float32)) + 1.0) * 0.5).to(tl.int32)
    pidx = tl.minimum(i_p * BF + p - i_p * (i_p - 1) // 2, BF * BF - 1)  # (lanes past the pairs: any entry)
    z = tl.zeros((S, BF, BF), dtype=tl.float32)
    for c in tl.static_range(BD // DC):
        dc = c * DC + tl.arange(0, DC)
        x = tl.load(x_ptr + s[:, None, None] * stride_xb + f[None, :, None] * stride_xf + dc[None, None, :],
                    mask=smask[:, None, None] & (f[None, :, None] < F) & (dc[None, None, :] < D), other=0.0)
        z = tl.dot(x, tl.trans(x, (0, 2, 1)), acc=z, input_precision="ieee")
    dense = tl.load(x_ptr + s[:, None] * stride_xb + d[None, :], mask=smask[:, None] & (d[None, :] < D))
    pairs = tl.gather(tl.reshape(z, (S, BF * BF)), tl.broadcast_to(pidx[None, :], (S, BP)), 1)
    tl.store(out_ptr + s[:, None] * stride_ob + d[None, :], dense, mask=smask[:, None] & (d[None, :] < D))
    tl.store(out_ptr + s[:, None] * stride_ob + D + p[None, :], pairs.to(out_ptr.dtype.element_ty),
             mask=smask[:, None] & (p[None, :] < F * (F - 1) // 2))


def dot_interaction(x: torch.Tensor) -> torch.Tensor:
    """x: [B, F, D] -> [B, D + F*(F-1)/2]."""
    x = x.contiguous()
    B, F, D = x.shape
    out = torch.empty((B, D + F * (F - 1) // 2), dtype=x.dtype, device=x.device)
    BF, BD = max(16, triton.next_power_of_2(F)), max(16, triton.next_power_of_2(D))
    # x is loaded in column chunks of DC, each multiplied as it lands, so the work left after a
    # PE's last load is one chunk's GEMM (the launch's tail), not a whole block's. FP32: the GEMM
    # runs as vector FMA passes (~28 MACs a cycle), so chunks of a quarter of the row and 8 KB
    # tiles; 16-bit: the DPE is fast and per-chunk costs dominate, so halves and 16 KB.
    # Samples per block: within that tile, and enough blocks per PE to overlap one block's loads
    # with another's work: 8 for FP32, 2 for 16-bit.
    f32 = x.dtype == torch.float32
    DC = max(16, BD // (4 if f32 else 2))
    per_pe = 8 if f32 else 2
    S = max(1, min((8192 if f32 else 16384) // (BF * DC * x.element_size()), B // (per_pe * _num_pes())))
    S = 1 << (S.bit_length() - 1)
    dot_interaction_ext_kernel[(triton.cdiv(B, S),)](
        x, out, B, F, D, x.stride(0), x.stride(1), out.stride(0), S=S, BF=BF, BD=BD,
        BP=triton.next_power_of_2(max(1, F * (F - 1) // 2)), DC=DC, EVEN_B=B % S == 0, persistent=True)
    return out
