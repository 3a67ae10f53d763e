"""Scaled dot-product attention of Inductor graphs on the simulated chip.

Inductor's attention pattern (and an explicit F.scaled_dot_product_attention) on CPU tensors
becomes `aten._scaled_dot_product_flash_attention_for_cpu`, a host fallback. The post-grad pass
of extern.py rewrites it to `mtia_sim.sdpa`, which launches `flash_attn_mask_kernel`: the flash
attention of kernels/attention.py (online softmax in base 2, fp32 accumulator) with an optional
additive mask, read as a tile per (query block, key block) with the mask's broadcast strides,
since models pass their causal or padding masks as tensors.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def flash_attn_mask_kernel(q_ptr, k_ptr, v_ptr, m_ptr, o_ptr, H, SQ, SK, sm_scale,
                           stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                           stride_vb, stride_vh, stride_vs, stride_mb, stride_mh, stride_mq, stride_mk,
                           stride_ob, stride_oh, stride_os,
                           HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    bh = tl.program_id(0)
    # programs start in linear order (axis 0 fastest): causal, the longest query blocks of every
    # head go first and the short ones fill in at the end (as kernels/attention.py schedules them)
    if CAUSAL:
        start_m = (tl.num_programs(1) - 1 - tl.program_id(1)) * BLOCK_M
    else:
        start_m = tl.program_id(1) * BLOCK_M
    b = bh // H
    h = bh % H
    q_ptr += b * stride_qb + h * stride_qh
    k_ptr += b * stride_kb + h * stride_kh
    v_ptr += b * stride_vb + h * stride_vh
    m_ptr += b * stride_mb + h * stride_mh
    o_ptr += b * stride_ob + h * stride_oh

    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_qs + offs_d[None, :], mask=offs_m[:, None] < SQ, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634

    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        end_n = tl.minimum(start_m + BLOCK_M, SK)
    else:
        end_n = SK
    for start_n in range(0, end_n, BLOCK_N):
        kv_rows = start_n + offs_n
        k = tl.load(k_ptr + kv_rows[:, None] * stride_ks + offs_d[None, :], mask=kv_rows[:, None] < SK, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        keep = kv_rows[None, :] < SK
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= kv_rows[None, :])
        if HAS_MASK:
            add = tl.load(m_ptr + offs_m[:, None] * stride_mq + kv_rows[None, :] * stride_mk,
                          mask=(offs_m[:, None] < SQ) & keep, other=0.0).to(tl.float32)
            qk = qk + add * 1.4426950408889634
        qk = tl.where(keep, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_rows[:, None] * stride_vs + offs_d[None, :], mask=kv_rows[:, None] < SK, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_os + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < SQ)


@triton.jit
def head_copy_kernel(x_ptr, y_ptr, H, S, sx0, sx1, sx2, sx3, D: tl.constexpr, BLOCK_S: tl.constexpr):
    """y = x made contiguous, x [B, H, S, D] of any strides: a block of rows per program."""
    bh = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    d = tl.arange(0, D)
    m = rows[:, None] < S
    x = tl.load(x_ptr + (bh // H) * sx0 + (bh % H) * sx1 + rows[:, None] * sx2 + d[None, :] * sx3, mask=m)
    tl.store(y_ptr + (bh * S + rows[:, None]) * D + d[None, :], x, mask=m)


def _unit_last_stride(t: torch.Tensor) -> torch.Tensor:
    """`t` if its head dim has unit stride (what the attention kernel walks), else a contiguous
    copy made on the chip (a priced launch, never a host copy)."""
    if t.stride(-1) == 1:
        return t
    B, H, S, D = t.shape
    y = torch.empty((B, H, S, D), dtype=t.dtype)
    BLOCK_S = min(64, triton.next_power_of_2(S))
    head_copy_kernel[(B * H, triton.cdiv(S, BLOCK_S))](t, y, H, S, *t.stride(), D=D, BLOCK_S=BLOCK_S)
    return y


def supported(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Shapes the kernel takes: [B, H, S, D] with one power-of-two head dim up to 128."""
    d = q.shape[-1]
    return (q.dim() == 4 and k.dim() == 4 and v.dim() == 4 and v.shape[-1] == d == k.shape[-1]
            and d & (d - 1) == 0 and 16 <= d <= 128 and q.dtype == k.dtype == v.dtype
            and q.dtype in (torch.bfloat16, torch.float16, torch.float32))


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
         scale: float | None = None, is_causal: bool = False) -> torch.Tensor:
    """softmax(q k^T * scale + mask) v for q [B, H, Sq, D], k and v [B, H, Sk, D]."""
    B, H, SQ, D = q.shape
    SK = k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    q, k, v = (_unit_last_stride(t) for t in (q, k, v))
    o = torch.empty_like(q)
    # 128 query rows per program fit a PE's local memory with fp32 scores (kernels/attention.py)
    BLOCK_M = min(128, max(16, triton.next_power_of_2(SQ)))
    BLOCK_N = min(64, max(16, triton.next_power_of_2(SK)))
    if attn_mask is not None:
        m = attn_mask.expand(B, H, SQ, SK)  # broadcast dims get stride 0: no copy
        ms = m.stride()
    else:
        m, ms = q, (0, 0, 0, 0)
    grid = (B * H, triton.cdiv(SQ, BLOCK_M))
    flash_attn_mask_kernel[grid](q, k, v, m, o, H, SQ, SK, scale,
                                 q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                                 v.stride(0), v.stride(1), v.stride(2), *ms, o.stride(0), o.stride(1), o.stride(2),
                                 HAS_MASK=attn_mask is not None, CAUSAL=is_causal, HEAD_DIM=D,
                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return o
