"""MTIA-tuned BF16 GEMM (the study's `triton_ext` implementation): the plain kernel
(kernels/gemm.py) under `triton.autotune` over output tiles chosen for the PE grid.

The plain launch's 128 x 128 tile is wrong at both ends of the study's shapes. On a small
GEMM it leaves most of the 64 PEs idle (256^3 has 4 such tiles); on a large one a PE reads
more operand bytes per multiply-add than a 128 x 256 tile does (0.91x the expert at 4096^3).
The configs below span both ends, all with a 64-deep K step (128-byte BF16 runs of A, which
the LPDDR moves at full burst); the autotuner times each on the chip (one simulated launch per
config: simulated time is exact) and keeps the fastest for each (M, N, K). (Launched
`persistent=True` the kernel gains nothing: a GEMM tile's K loop already hides its DMA, and
the per-program costs are small next to a tile's work.)
"""
from __future__ import annotations

import torch
import triton

from kernels.gemm import matmul_kernel

TILES = ((32, 32), (32, 64), (64, 64), (128, 128), (128, 256), (256, 128))
matmul_kernel_mtia = triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8}) for bm, bn in TILES],
    key=["M", "N", "K"])(matmul_kernel)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)

    def grid(meta: dict) -> tuple:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel_mtia[grid](a, b, c, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), HAS_BIAS=False, ACTIVATION="")
    return c
