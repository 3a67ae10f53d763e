"""Recommendation (DLRM-style) kernels: table-batched embedding bags, jagged tensors, dot
feature interaction.

Jagged tensors follow FBGEMM: `values` [total, D] holds the rows of every segment back to back
and `offsets` [B + 1] (int64 or int32) marks where segment b starts and ends. The table-batched
embedding bag (TBE) stores all tables in one weight tensor [sum(rows_t), D] with a row offset per
table, and its bags are laid out table-major: offsets[t * B + b] .. offsets[t * B + b + 1].
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_bag_kernel(weights_ptr, table_offsets_ptr, indices_ptr, offsets_ptr, out_ptr, B, D,
                         stride_out, MEAN: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[b, t*D:(t+1)*D] = pool(weights[table_offsets[t] + indices[offsets[t*B+b]:offsets[t*B+b+1]]])."""
    b = tl.program_id(0)
    t = tl.program_id(1)
    bag = t * B + b
    start = tl.load(offsets_ptr + bag)
    end = tl.load(offsets_ptr + bag + 1)
    row0 = tl.load(table_offsets_ptr + t)
    offs_l = tl.arange(0, BLOCK_L)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < D
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(start, end, BLOCK_L):
        lmask = i + offs_l < end
        idx = tl.load(indices_ptr + i + offs_l, mask=lmask, other=0).to(tl.int64) + row0
        rows = tl.load(weights_ptr + idx[:, None] * D + offs_d[None, :], mask=lmask[:, None] & dmask[None, :],
                       other=0.0)
        acc += tl.sum(rows.to(tl.float32), axis=0)
    if MEAN:
        acc = acc / tl.maximum(end - start, 1).to(tl.float32)
    tl.store(out_ptr + b * stride_out + t * D + offs_d, acc.to(out_ptr.dtype.element_ty), mask=dmask)


@triton.jit
def jagged_to_padded_dense_kernel(values_ptr, offsets_ptr, out_ptr, max_len, D, padding_value,
                                  BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[b, l, :] = values[offsets[b] + l, :] for l < len_b, else padding_value; out is [B, max_len, D]."""
    b = tl.program_id(0)
    offs_l = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    start = tl.load(offsets_ptr + b)
    length = tl.load(offsets_ptr + b + 1) - start
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d[None, :] < D
    x = tl.load(values_ptr + (start + offs_l)[:, None] * D + offs_d[None, :],
                mask=(offs_l[:, None] < length) & dmask, other=padding_value)
    tl.store(out_ptr + (b * max_len + offs_l)[:, None] * D + offs_d[None, :], x,
             mask=(offs_l[:, None] < max_len) & dmask)


@triton.jit
def jagged_sum_kernel(values_ptr, offsets_ptr, out_ptr, D, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[b, :] = sum of values[offsets[b]:offsets[b+1], :] (zero for an empty segment)."""
    b = tl.program_id(0)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_l = tl.arange(0, BLOCK_L)
    dmask = offs_d < D
    start = tl.load(offsets_ptr + b)
    end = tl.load(offsets_ptr + b + 1)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(start, end, BLOCK_L):
        rows = i + offs_l
        x = tl.load(values_ptr + rows[:, None] * D + offs_d[None, :], mask=(rows[:, None] < end) & dmask[None, :],
                    other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + b * D + offs_d, acc.to(out_ptr.dtype.element_ty), mask=dmask)


@triton.jit
def jagged_softmax_kernel(values_ptr, offsets_ptr, out_ptr, D, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """Softmax over each segment's rows, per column: out has the jagged layout of values.
    Two passes over the segment: an online max/sum, then the normalised write."""
    b = tl.program_id(0)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_l = tl.arange(0, BLOCK_L)
    dmask = offs_d < D
    start = tl.load(offsets_ptr + b)
    end = tl.load(offsets_ptr + b + 1)
    m = tl.full((BLOCK_D,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(start, end, BLOCK_L):
        rows = i + offs_l
        x = tl.load(values_ptr + rows[:, None] * D + offs_d[None, :], mask=(rows[:, None] < end) & dmask[None, :],
                    other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[None, :]), axis=0)
        m = m_new
    for i in range(start, end, BLOCK_L):
        rows = i + offs_l
        mask = (rows[:, None] < end) & dmask[None, :]
        x = tl.load(values_ptr + rows[:, None] * D + offs_d[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m[None, :]) / s[None, :]
        tl.store(out_ptr + rows[:, None] * D + offs_d[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def dot_interaction_kernel(x_ptr, out_ptr, F, D, stride_xb, stride_xf, stride_ob,
                           BLOCK_F: tl.constexpr, BLOCK_D: tl.constexpr):
    """DLRM dot interaction for one sample: x[b] is [F, D] (row 0 the bottom-MLP output, rows 1..
    the pooled embeddings); out[b] = concat(x[b, 0, :], Z[i, j] for i > j) with Z = x x^T, the
    pairs in row-major lower-triangle order (i, j) = (1, 0), (2, 0), (2, 1), ..."""
    b = tl.program_id(0)
    offs_f = tl.arange(0, BLOCK_F)
    offs_d = tl.arange(0, BLOCK_D)
    x = tl.load(x_ptr + b * stride_xb + offs_f[:, None] * stride_xf + offs_d[None, :],
                mask=(offs_f[:, None] < F) & (offs_d[None, :] < D), other=0.0)
    z = tl.dot(x, tl.trans(x), input_precision="ieee")
    dense = tl.load(x_ptr + b * stride_xb + offs_d, mask=offs_d < D)
    tl.store(out_ptr + b * stride_ob + offs_d, dense, mask=offs_d < D)
    i = offs_f[:, None]
    j = offs_f[None, :]
    pair = i * (i - 1) // 2 + j
    tl.store(out_ptr + b * stride_ob + D + pair, z.to(out_ptr.dtype.element_ty), mask=(j < i) & (i < F))


# ------------------------------------------------------------------------------ host wrappers


def embedding_bag(weights: torch.Tensor, table_offsets: torch.Tensor, indices: torch.Tensor,
                  offsets: torch.Tensor, num_tables: int, mode: str = "sum", BLOCK_L: int = 32) -> torch.Tensor:
    """Table-batched embedding bag -> [B, num_tables * D] (FBGEMM's pooled layout)."""
    weights = weights.contiguous()
    D = weights.shape[1]
    B = (offsets.numel() - 1) // num_tables
    out = torch.empty((B, num_tables * D), dtype=weights.dtype, device=weights.device)
    embedding_bag_kernel[(B, num_tables)](weights, table_offsets, indices, offsets, out, B, D, out.stride(0),
                                          MEAN=(mode == "mean"), BLOCK_L=BLOCK_L,
                                          BLOCK_D=triton.next_power_of_2(D))
    return out


def jagged_to_padded_dense(values: torch.Tensor, offsets: torch.Tensor, max_len: int,
                           padding_value: float = 0.0, BLOCK_L: int = 64) -> torch.Tensor:
    B = offsets.numel() - 1
    D = values.shape[1]
    out = torch.empty((B, max_len, D), dtype=values.dtype, device=values.device)
    BLOCK_L = min(BLOCK_L, triton.next_power_of_2(max_len))
    jagged_to_padded_dense_kernel[(B, triton.cdiv(max_len, BLOCK_L))](
        values, offsets, out, max_len, D, padding_value, BLOCK_L=BLOCK_L, BLOCK_D=triton.next_power_of_2(D))
    return out


def jagged_sum(values: torch.Tensor, offsets: torch.Tensor, BLOCK_L: int = 128, BLOCK_D: int = 128) -> torch.Tensor:
    B = offsets.numel() - 1
    D = values.shape[1]
    out = torch.empty((B, D), dtype=values.dtype, device=values.device)
    BLOCK_D = min(BLOCK_D, triton.next_power_of_2(D))
    # three row blocks in flight: the loop body is one reduction, too short to hide a DMA
    jagged_sum_kernel[(B, triton.cdiv(D, BLOCK_D))](values, offsets, out, D, BLOCK_L=BLOCK_L, BLOCK_D=BLOCK_D,
                                                    num_stages=3)
    return out


def jagged_softmax(values: torch.Tensor, offsets: torch.Tensor, BLOCK_L: int = 64,
                   BLOCK_D: int = 128) -> torch.Tensor:
    B = offsets.numel() - 1
    D = values.shape[1]
    out = torch.empty_like(values)
    BLOCK_D = min(BLOCK_D, triton.next_power_of_2(D))
    jagged_softmax_kernel[(B, triton.cdiv(D, BLOCK_D))](values, offsets, out, D, BLOCK_L=BLOCK_L, BLOCK_D=BLOCK_D)
    return out


def dot_interaction(x: torch.Tensor) -> torch.Tensor:
    """x: [B, F, D] -> [B, D + F*(F-1)/2]."""
    x = x.contiguous()
    B, F, D = x.shape
    out = torch.empty((B, D + F * (F - 1) // 2), dtype=x.dtype, device=x.device)
    dot_interaction_kernel[(B,)](x, out, F, D, x.stride(0), x.stride(1), out.stride(0),
                                 BLOCK_F=max(16, triton.next_power_of_2(F)), BLOCK_D=max(16, triton.next_power_of_2(D)))
    return out
