"""Row-wise normalisation kernels (forward): softmax, LayerNorm, RMSNorm.

One program per row, the whole row in one block (BLOCK_N = next power of two of N), which is
how inference-sized rows (N up to 16K) are normalised on a GPU: one read, statistics in
registers, one write. Statistics accumulate in fp32 whatever the input dtype.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, stride_x, stride_o, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride_o + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_fwd_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, stride_x, stride_o, eps,
                         BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(out_ptr + row * stride_o + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, w_ptr, out_ptr, N, stride_x, stride_o, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    tl.store(out_ptr + row * stride_o + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------------------ host wrappers


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1]).contiguous()


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension."""
    x2 = _rows(x)
    out = torch.empty_like(x2)
    M, N = x2.shape
    softmax_kernel[(M,)](x2, out, N, x2.stride(0), out.stride(0), BLOCK_N=triton.next_power_of_2(N))
    return out.reshape(x.shape)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    x2 = _rows(x)
    out = torch.empty_like(x2)
    M, N = x2.shape
    layernorm_fwd_kernel[(M,)](x2, weight, bias, out, N, x2.stride(0), out.stride(0), eps,
                               BLOCK_N=triton.next_power_of_2(N))
    return out.reshape(x.shape)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x2 = _rows(x)
    out = torch.empty_like(x2)
    M, N = x2.shape
    rmsnorm_fwd_kernel[(M,)](x2, weight, out, N, x2.stride(0), out.stride(0), eps,
                             BLOCK_N=triton.next_power_of_2(N))
    return out.reshape(x.shape)
