"""MTIA-tuned BF16 GEMM (the study's `triton_ext` implementation): tiles chosen for the PE grid
by `triton.autotune`, and the first K step peeled so that it starts the accumulator.

The plain launch's 128 x 128 tile is wrong at both ends of the study's shapes. On a small
GEMM it leaves most of the 64 PEs idle (256^3 has 4 such tiles); on a large one a PE reads
more operand bytes per multiply-add than a 128 x 256 tile does (0.91x the expert at 4096^3).
The configs below span both ends, all with a 64-deep K step (128-byte BF16 runs of A, which
the LPDDR moves at full burst); the autotuner times each on the chip (one simulated launch per
config: simulated time is exact) and keeps the fastest for each (M, N, K). (Launched
`persistent=True` the kernel gains nothing: a GEMM tile's K loop already hides its DMA, and
the per-program costs are small next to a tile's work; 32- and 128-deep K steps measured
slower at 2048^3.)

`acc = tl.zeros(...)` before the K loop is a SIMD pass over the whole fp32 tile (128 KB for
128 x 256) before the first DPE step can accumulate into it; with two tiles per PE at 2048^3
that is the 0.7% by which the plain form trailed the expert cold. Here the first step's
`tl.dot(a, b)` writes the accumulator (the expert's method: its first step multiplies into a
broadcast zero) and the loop runs the other steps.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.gemm import _tile_indices, matmul_autotuned


@triton.jit
def _k_step(a_ptrs, b_ptrs, rm, rn, rk, M, N, k_left):
    a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
    b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
    return a, b


@triton.jit
def matmul_peeled_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr):
    """C = A @ B, fp32 accumulation, the first K step peeled (no bias or activation: the
    study's GEMM; kernels/gemm.py's matmul_kernel has them)."""
    tl.static_assert(not HAS_BIAS and ACTIVATION == "", "matmul_peeled_kernel: no epilogue")
    pid_m, pid_n = _tile_indices(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    a, b = _k_step(a_ptrs, b_ptrs, rm, rn, rk, M, N, K)
    acc = tl.dot(a, b, out_dtype=tl.float32)
    a_ptrs += BLOCK_K * stride_ak
    b_ptrs += BLOCK_K * stride_bk
    for k in range(1, tl.cdiv(K, BLOCK_K)):
        a, b = _k_step(a_ptrs, b_ptrs, rm, rn, rk, M, N, K - k * BLOCK_K)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


TILES = ((32, 32), (32, 64), (64, 64), (128, 128), (128, 256), (256, 128))
matmul_kernel_mtia = triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8}) for bm, bn in TILES],
    key=["M", "N", "K"])(matmul_peeled_kernel)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return matmul_autotuned(a, b, matmul_kernel_mtia)
