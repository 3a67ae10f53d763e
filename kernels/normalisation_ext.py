"""MTIA-tuned LayerNorm (the study's `triton_ext` implementation).

Launched with `persistent=True` (an MTIA backend hint): one program per PE loops over its
rows, so the weight and bias rows are loaded once per PE (the compiler hoists loads that do
not depend on the program id out of the loop) and the next row's DMA is issued before this
row's statistics. When the row length is the block length (EVEN_N) the masked centring
`where(mask, x - mean, 0)` is left out: one SIMD pass fewer per row.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_ext_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, stride_x, stride_o, eps,
                         BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    if EVEN_N:
        xc = x - mean
    else:
        xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(out_ptr + row * stride_o + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty_like(x2)
    M, N = x2.shape
    BLOCK_N = triton.next_power_of_2(N)
    layernorm_ext_kernel[(M,)](x2, weight, bias, out, N, x2.stride(0), out.stride(0), eps,
                               BLOCK_N=BLOCK_N, EVEN_N=BLOCK_N == N, persistent=True)
    return out.reshape(x.shape)
