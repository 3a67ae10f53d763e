"""Attention kernels: flash-attention forward (prefill, causal or not) and decode attention
(one query per head against a long KV cache, split over KV blocks, then combined).

Both use the online softmax in fp32 (running max, running sum, rescaled accumulator) in base 2:
scores are pre-multiplied by sm_scale * log2(e) so `tl.exp2` replaces `tl.exp`.
Tensors are [batch, heads, seq, head_dim] with any strides.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def flash_attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, S, sm_scale,
                          stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                          stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
                          CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # axis 0: (batch, head); axis 1: query block. Programs start in linear order (axis 0
    # fastest), so with CAUSAL the longest query blocks of every head start first and the
    # short ones fill in at the end
    bh = tl.program_id(0)
    if CAUSAL:
        start_m = (tl.num_programs(1) - 1 - tl.program_id(1)) * BLOCK_M
    else:
        start_m = tl.program_id(1) * BLOCK_M
    b = bh // H
    h = bh % H
    q_ptr += b * stride_qb + h * stride_qh
    k_ptr += b * stride_kb + h * stride_kh
    v_ptr += b * stride_vb + h * stride_vh
    o_ptr += b * stride_ob + h * stride_oh

    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_qs + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634

    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        end_n = tl.minimum(start_m + BLOCK_M, S)
    else:
        end_n = S
    for start_n in range(0, end_n, BLOCK_N):
        kv_rows = start_n + offs_n
        k = tl.load(k_ptr + kv_rows[:, None] * stride_ks + offs_d[None, :], mask=kv_rows[:, None] < S, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        keep = kv_rows[None, :] < S
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= kv_rows[None, :])
        qk = tl.where(keep, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_rows[:, None] * stride_vs + offs_d[None, :], mask=kv_rows[:, None] < S, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_os + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < S)


@triton.jit
def decode_attn_split_kernel(q_ptr, k_ptr, v_ptr, part_acc_ptr, part_ml_ptr, H, L, sm_scale,
                             stride_qb, stride_qh, stride_kb, stride_kh, stride_ks,
                             stride_vb, stride_vh, stride_vs, SPLIT_LEN,
                             HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    """Stage 1: program (b*H + h, split) attends the query to KV[split*SPLIT_LEN : +SPLIT_LEN] and
    writes its unnormalised accumulator [HEAD_DIM] and (max, sum) in base 2."""
    bh = tl.program_id(0)
    split = tl.program_id(1)
    num_splits = tl.num_programs(1)
    b = bh // H
    h = bh % H
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_d).to(tl.float32)
    q = q * (sm_scale * 1.4426950408889634)
    k_ptr += b * stride_kb + h * stride_kh
    v_ptr += b * stride_vb + h * stride_vh

    m_i = -float("inf")
    l_i = 0.0
    acc = tl.zeros((HEAD_DIM,), dtype=tl.float32)
    start = split * SPLIT_LEN
    end = tl.minimum(start + SPLIT_LEN, L)
    for start_n in range(start, end, BLOCK_N):
        rows = start_n + offs_n
        mask = rows < end
        k = tl.load(k_ptr + rows[:, None] * stride_ks + offs_d[None, :], mask=mask[:, None], other=0.0)
        s = tl.sum(k.to(tl.float32) * q[None, :], axis=1)
        s = tl.where(mask, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        p = tl.exp2(s - m_new)
        alpha = tl.exp2(m_i - m_new)
        v = tl.load(v_ptr + rows[:, None] * stride_vs + offs_d[None, :], mask=mask[:, None], other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
    part = bh * num_splits + split
    tl.store(part_acc_ptr + part * HEAD_DIM + offs_d, acc)
    tl.store(part_ml_ptr + part * 2, m_i)
    tl.store(part_ml_ptr + part * 2 + 1, l_i)


@triton.jit
def decode_attn_combine_kernel(part_acc_ptr, part_ml_ptr, o_ptr, H, stride_ob, stride_oh, NUM_SPLITS,
                               HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr):
    """Stage 2: rescale the splits' partial results to a common max and normalise."""
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    smask = offs_s < NUM_SPLITS
    base = bh * NUM_SPLITS
    m = tl.load(part_ml_ptr + (base + offs_s) * 2, mask=smask, other=-float("inf"))
    l = tl.load(part_ml_ptr + (base + offs_s) * 2 + 1, mask=smask, other=0.0)
    acc = tl.load(part_acc_ptr + (base + offs_s)[:, None] * HEAD_DIM + offs_d[None, :], mask=smask[:, None],
                  other=0.0)
    m_all = tl.max(m, axis=0)
    w = tl.where(smask, tl.exp2(m - m_all), 0.0)
    out = tl.sum(acc * w[:, None], axis=0) / tl.sum(l * w, axis=0)
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty))


# ------------------------------------------------------------------------------ host wrappers


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    sm_scale: float | None = None, BLOCK_M: int | None = None, BLOCK_N: int = 64) -> torch.Tensor:
    """q, k, v: [B, H, S, D] -> o [B, H, S, D]. BLOCK_M = 128 query rows per program: the fp32
    accumulator and score tiles fit one PE's 384 KB local memory up to head_dim 128."""
    B, H, S, D = q.shape
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    o = torch.empty_like(q)
    if BLOCK_M is None:
        BLOCK_M = 128
    BLOCK_M = min(BLOCK_M, max(16, triton.next_power_of_2(S)))
    BLOCK_N = min(BLOCK_N, max(16, triton.next_power_of_2(S)))
    grid = (B * H, triton.cdiv(S, BLOCK_M))
    flash_attn_fwd_kernel[grid](q, k, v, o, H, S, sm_scale,
                                q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                                v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                                CAUSAL=causal, HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return o


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float | None = None,
                     SPLIT_LEN: int = 1024, BLOCK_N: int = 128) -> torch.Tensor:
    """q: [B, H, D]; k, v: [B, H, L, D] -> o [B, H, D]. The KV length is split into chunks of
    SPLIT_LEN, one program each, so a single long sequence still fills the chip."""
    B, H, D = q.shape
    L = k.shape[2]
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    num_splits = triton.cdiv(L, SPLIT_LEN)
    part_acc = torch.empty((B * H * num_splits, D), dtype=torch.float32, device=q.device)
    part_ml = torch.empty((B * H * num_splits, 2), dtype=torch.float32, device=q.device)
    decode_attn_split_kernel[(B * H, num_splits)](
        q, k, v, part_acc, part_ml, H, L, sm_scale, q.stride(0), q.stride(1),
        k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2), SPLIT_LEN,
        HEAD_DIM=D, BLOCK_N=min(BLOCK_N, SPLIT_LEN))
    o = torch.empty((B, H, D), dtype=q.dtype, device=q.device)
    decode_attn_combine_kernel[(B * H,)](part_acc, part_ml, o, H, o.stride(0), o.stride(1), num_splits,
                                         HEAD_DIM=D, BLOCK_S=max(2, triton.next_power_of_2(num_splits)))
    return o
