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

from kernels.gemm import matmul_autotuned, matmul_kernel

TILES = ((32, 32), (32, 64), (64, 64), (128, 128), (128, 256), (256, 128))
matmul_kernel_mtia = triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8}) for bm, bn in TILES],
    key=["M", "N", "K"])(matmul_kernel)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return matmul_autotuned(a, b, matmul_kernel_mtia)
