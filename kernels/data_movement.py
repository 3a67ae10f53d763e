"""Data-movement kernels: 2-D transpose, row gather (index_select), concat.

Transpose reads a BLOCK_M x BLOCK_N tile row-major and writes it transposed, so both the read
and the write are tile-contiguous; gather reads whole rows at data-dependent addresses; concat
copies each input into its column slice of the output (one launch per input, like torch.cat).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_om,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out [N, M] = x [M, N]^T."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(out_ptr + rn[:, None] * stride_om + rm[None, :], tl.trans(x), mask=(rn[:, None] < N) & (rm[None, :] < M))


@triton.jit
def index_select_kernel(x_ptr, index_ptr, out_ptr, n_index, D, stride_x, stride_o,
                        BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[i, :] = x[index[i], :]."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mmask = rm < n_index
    mask = mmask[:, None] & (rd[None, :] < D)
    rows = tl.load(index_ptr + rm, mask=mmask, other=0).to(tl.int64)
    x = tl.load(x_ptr + rows[:, None] * stride_x + rd[None, :], mask=mask)
    tl.store(out_ptr + rm[:, None] * stride_o + rd[None, :], x, mask=mask)


@triton.jit
def copy_2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[:M, :N] = x; `out_ptr` may point into a larger tensor (a slice of a concat)."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], x, mask=mask)


# ------------------------------------------------------------------------------ host wrappers


def transpose(x: torch.Tensor, BLOCK_M: int = 64, BLOCK_N: int = 64) -> torch.Tensor:
    x = x.contiguous()
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    transpose_kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](
        x, out, M, N, x.stride(0), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


def index_select(x: torch.Tensor, index: torch.Tensor, BLOCK_M: int = 32, BLOCK_D: int = 256) -> torch.Tensor:
    """x.index_select(0, index) for a 2-D x."""
    x = x.contiguous()
    D = x.shape[1]
    n = index.numel()
    out = torch.empty((n, D), dtype=x.dtype, device=x.device)
    BLOCK_D = min(BLOCK_D, triton.next_power_of_2(D))
    index_select_kernel[(triton.cdiv(n, BLOCK_M), triton.cdiv(D, BLOCK_D))](
        x, index, out, n, D, x.stride(0), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_D=BLOCK_D)
    return out


def concat(tensors: list[torch.Tensor], dim: int = 1, BLOCK_M: int = 32, BLOCK_N: int = 256) -> torch.Tensor:
    """torch.cat of 2-D tensors along dim 0 or 1."""
    tensors = [t.contiguous() for t in tensors]
    M = tensors[0].shape[0] if dim == 1 else sum(t.shape[0] for t in tensors)
    N = sum(t.shape[1] for t in tensors) if dim == 1 else tensors[0].shape[1]
    out = torch.empty((M, N), dtype=tensors[0].dtype, device=tensors[0].device)
    pos = 0
    for t in tensors:
        m, n = t.shape
        dst = out[:, pos:pos + n] if dim == 1 else out[pos:pos + m]
        bn = min(BLOCK_N, triton.next_power_of_2(n))
        copy_2d_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, bn))](
            t, dst, m, n, t.stride(0), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=bn)
        pos += n if dim == 1 else m
    return out
