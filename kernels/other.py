"""Other kernels: cumsum for jagged offsets (lengths -> offsets) and rotary position embedding.

cumsum: a single program walks the lengths in BLOCK chunks (three in flight: num_stages=3 hides the
DMA latency), `tl.cumsum` within a chunk plus a
running carry between chunks (offsets tensors are small: one entry per bag or sequence).
RoPE: rotate-half form (Llama / GPT-NeoX); one program per token and a block of heads.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def jagged_offsets_kernel(lengths_ptr, offsets_ptr, n, BLOCK: tl.constexpr):
    """offsets[0] = 0, offsets[i + 1] = lengths[0] + ... + lengths[i]."""
    carry = tl.zeros((1,), dtype=offsets_ptr.dtype.element_ty)
    tl.store(offsets_ptr + tl.arange(0, 1), carry)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(lengths_ptr + offs, mask=mask, other=0).to(offsets_ptr.dtype.element_ty)
        tl.store(offsets_ptr + 1 + offs, tl.cumsum(x, axis=0) + carry, mask=mask)
        carry += tl.sum(x, axis=0)


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, S, H, stride_xt, stride_xh, stride_ot, stride_oh,
                HALF: tl.constexpr, BLOCK_H: tl.constexpr):
    """x, out: [B * S, H, 2 * HALF] (token-major); cos, sin: [S, HALF]."""
    tok = tl.program_id(0)
    pos = tok % S
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    rd = tl.arange(0, HALF)
    mask = rh[:, None] < H
    c = tl.load(cos_ptr + pos * HALF + rd).to(tl.float32)[None, :]
    s = tl.load(sin_ptr + pos * HALF + rd).to(tl.float32)[None, :]
    x_ptrs = x_ptr + tok * stride_xt + rh[:, None] * stride_xh + rd[None, :]
    x1 = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptrs + HALF, mask=mask, other=0.0).to(tl.float32)
    o_ptrs = out_ptr + tok * stride_ot + rh[:, None] * stride_oh + rd[None, :]
    tl.store(o_ptrs, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(o_ptrs + HALF, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------------------ host wrappers


def jagged_offsets(lengths: torch.Tensor, BLOCK: int = 4096) -> torch.Tensor:
    n = lengths.numel()
    offsets = torch.empty((n + 1,), dtype=lengths.dtype, device=lengths.device)
    jagged_offsets_kernel[(1,)](lengths, offsets, n, BLOCK=BLOCK, num_stages=3)
    return offsets


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, BLOCK_H: int = 32) -> torch.Tensor:
    """x: [B, S, H, D], cos/sin: [S, D/2] -> rotated x, same shape and dtype."""
    B, S, H, D = x.shape
    x3 = x.contiguous().reshape(B * S, H, D)
    out = torch.empty_like(x3)
    BLOCK_H = min(BLOCK_H, triton.next_power_of_2(H))
    rope_kernel[(B * S, triton.cdiv(H, BLOCK_H))](x3, cos.contiguous(), sin.contiguous(), out, S, H,
                                                  x3.stride(0), x3.stride(1), out.stride(0), out.stride(1),
                                                  HALF=D // 2, BLOCK_H=BLOCK_H)
    return out.reshape(B, S, H, D)
