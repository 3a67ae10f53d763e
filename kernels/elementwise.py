"""Elementwise kernels: add, GELU (tanh approximation and erf), SiLU-and-mul (SwiGLU), bias + activation.

Plain Triton: 1-D blocks over flattened tensors, or 2-D (row, column-block) tiles where a row
structure matters (SwiGLU halves, per-column bias). Math runs in fp32 and is cast back to the
output dtype on store. Only core `tl.*` is used, so tanh is written through `tl.sigmoid`
(tanh(z) = 2 * sigmoid(2z) - 1) rather than libdevice, which differs between backends.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_tanh(x):
    # 0.5 x (1 + tanh(u)) == x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return x * tl.sigmoid(2.0 * u)


@triton.jit
def _gelu_erf(x):
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, APPROX_TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    if APPROX_TANH:
        y = _gelu_tanh(x)
    else:
        y = _gelu_erf(x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def silu_mul_kernel(x_ptr, out_ptr, H, stride_xm, stride_om, BLOCK: tl.constexpr):
    """out[m, :] = silu(x[m, :H]) * x[m, H:]  (x is [M, 2H], the fused gate/up projection)."""
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < H
    gate = tl.load(x_ptr + row * stride_xm + cols, mask=m).to(tl.float32)
    up = tl.load(x_ptr + row * stride_xm + H + cols, mask=m).to(tl.float32)
    y = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def bias_act_kernel(x_ptr, bias_ptr, out_ptr, M, N, stride_xm, stride_om,
                    ACTIVATION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out = act(x + bias[None, :]); ACTIVATION is "gelu_tanh", "gelu", "silu" or "relu"."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + rn, mask=rn < N).to(tl.float32)
    x = x + b[None, :]
    if ACTIVATION == "gelu_tanh":
        x = _gelu_tanh(x)
    elif ACTIVATION == "gelu":
        x = _gelu_erf(x)
    elif ACTIVATION == "silu":
        x = x * tl.sigmoid(x)
    elif ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], x.to(out_ptr.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------------------ host wrappers


def add(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 1024) -> torch.Tensor:
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    return out


def gelu(x: torch.Tensor, approximate: str = "none", BLOCK: int = 1024) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, APPROX_TANH=(approximate == "tanh"), BLOCK=BLOCK)
    return out


def silu_mul(x: torch.Tensor, BLOCK: int = 1024) -> torch.Tensor:
    """SwiGLU activation: x is [..., 2H] -> [..., H]."""
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, H = x2.shape[0], x2.shape[1] // 2
    out = torch.empty((M, H), dtype=x.dtype, device=x.device)
    BLOCK = min(BLOCK, triton.next_power_of_2(H))
    silu_mul_kernel[(M, triton.cdiv(H, BLOCK))](x2, out, H, x2.stride(0), out.stride(0), BLOCK=BLOCK)
    return out.reshape(*x.shape[:-1], H)


def bias_act(x: torch.Tensor, bias: torch.Tensor, activation: str = "gelu_tanh",
             BLOCK_M: int = 16, BLOCK_N: int = 256) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, N = x2.shape
    out = torch.empty_like(x2)
    BLOCK_N = min(BLOCK_N, triton.next_power_of_2(N))
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    bias_act_kernel[grid](x2, bias, out, M, N, x2.stride(0), out.stride(0),
                          ACTIVATION=activation, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out.reshape(x.shape)
