"""MTIA-tuned BF16 GEMM (the study's `triton_ext` implementation): the plain kernel
(kernels/gemm.py) with its output tile chosen for the PE grid.

A 128 x 128 tile leaves most of the 64 PEs idle on a small GEMM (256^3 has 4 such tiles). The
tile here is the largest of 128, 64, 32 (square, BLOCK_K 64) that still gives every PE a
tile. (Launched `persistent=True` it gains nothing: a GEMM tile's K loop already hides its
DMA, and the per-program costs are small next to a tile's work.)
"""
from __future__ import annotations

import torch
import triton

from kernels.gemm import matmul_kernel


def _num_pes() -> int:
    return triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]


def pick_tile(M: int, N: int, n_pe: int) -> int:
    """The largest square output tile (128, 64 or 32) with at least one tile per PE."""
    for t in (128, 64):
        if triton.cdiv(M, t) * triton.cdiv(N, t) >= n_pe:
            return t
    return 32


def matmul(a: torch.Tensor, b: torch.Tensor, BLOCK_K: int = 64, GROUP_M: int = 8) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    n_pe = _num_pes()
    t = pick_tile(M, N, n_pe)
    tiles = triton.cdiv(M, t) * triton.cdiv(N, t)
    matmul_kernel[(tiles,)](a, b, c, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), HAS_BIAS=False, ACTIVATION="",
                            BLOCK_M=t, BLOCK_N=t, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return c
