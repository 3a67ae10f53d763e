"""MTIA-tuned elementwise kernels (the study's `triton_ext` implementations).

The kernel is plain Triton; what makes it MTIA-specific is the launch: `persistent=True` (a
hint parsed by the MTIA backend) runs one program per PE that loops over the blocks, so the
per-program costs (job replacement on the PE, address setup) are paid once per PE and the
next block's DMA is issued before this block's add. Blocks are larger than the plain
kernel's (32 KB of FP32 per operand), so each DMA moves many bursts per descriptor.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from backend.language import libdevice as mtia_libdevice


@triton.jit
def add_ext_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


def add(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 8192) -> torch.Tensor:
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    add_ext_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, persistent=True)
    return out


# GELU, SiLU-and-mul and bias + GELU: the same launch (persistent, 8192-element blocks), and
# the formulas written for the vector unit: every multiply feeding an add contracts into one
# FMA pass, constants are folded, and the sigmoid is one SFU lookup (`sigmoid` of the MTIA
# libdevice, backend/language/libdevice.py; tl.sigmoid is exp, add and divide). A block costs
# at most the expert's passes (GELU erf: 3 SIMD + 1 SFU, tanh: 4 + 1, SiLU-mul: 2 + 1).


@triton.jit
def _gelu_erf(x):
    # 0.5 x (1 + erf(x / sqrt 2)) = x * fma(erf(x / sqrt 2), 0.5, 0.5)
    return x * (tl.erf(x * 0.7071067811865476) * 0.5 + 0.5)


@triton.jit
def _gelu_tanh(x):
    # 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)), -2u = x (k1 + k3 x^2)
    return x / (tl.exp(x * (x * x * -0.0713548162726009 + -1.5957691216057308)) + 1.0)


@triton.jit
def gelu_ext_kernel(x_ptr, out_ptr, n, APPROX_TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    if APPROX_TANH:
        y = _gelu_tanh(x)
    else:
        y = _gelu_erf(x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def gelu(x: torch.Tensor, approximate: str = "none", BLOCK: int = 8192) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    gelu_ext_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, APPROX_TANH=(approximate == "tanh"), BLOCK=BLOCK,
                                              persistent=True)
    return out


@triton.jit
def silu_mul_ext_kernel(x_ptr, out_ptr, M, H, stride_xm, stride_om, BM: tl.constexpr, BN: tl.constexpr):
    """out[m, :] = silu(x[m, :H]) * x[m, H:] on [BM, BN] blocks (x is [M, 2H])."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < H)
    gate = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask).to(tl.float32)
    up = tl.load(x_ptr + rm[:, None] * stride_xm + H + rn[None, :], mask=mask).to(tl.float32)
    # silu(g) = g * sigmoid(g): one SFU lookup (the MTIA libdevice's sigmoid)
    y = gate * mtia_libdevice.sigmoid(gate) * up
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def _block_2d(M: int, N: int, elems: int = 8192, max_bn: int = 2048) -> tuple[int, int]:
    """A [BM, BN] block of `elems` elements: rows of up to max_bn columns (a power of two)."""
    bn = min(max_bn, triton.next_power_of_2(N))
    return max(1, min(elems // bn, triton.next_power_of_2(M))), bn


def silu_mul(x: torch.Tensor) -> torch.Tensor:
    """SwiGLU activation: x is [..., 2H] -> [..., H]."""
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, H = x2.shape[0], x2.shape[1] // 2
    out = torch.empty((M, H), dtype=x.dtype, device=x.device)
    BM, BN = _block_2d(M, H)
    silu_mul_ext_kernel[(triton.cdiv(M, BM), triton.cdiv(H, BN))](
        x2, out, M, H, x2.stride(0), out.stride(0), BM=BM, BN=BN, persistent=True)
    return out.reshape(*x.shape[:-1], H)


@triton.jit
def bias_gelu_ext_kernel(x_ptr, bias_ptr, out_ptr, M, N, stride_xm, stride_om, BM: tl.constexpr, BN: tl.constexpr):
    """out = gelu_tanh(x + bias[None, :]) on [BM, BN] blocks, column-block fastest."""
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + rn, mask=rn < N).to(tl.float32)
    y = _gelu_tanh(x + b[None, :])
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, N = x2.shape
    out = torch.empty_like(x2)
    # narrow column blocks: the bias slice each block loads again is 1/BM of its bytes
    BM, BN = _block_2d(M, N, max_bn=512)
    bias_gelu_ext_kernel[(triton.cdiv(N, BN), triton.cdiv(M, BM))](
        x2, bias, out, M, N, x2.stride(0), out.stride(0), BM=BM, BN=BN, persistent=True)
    return out.reshape(x.shape)
