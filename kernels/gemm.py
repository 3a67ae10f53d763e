"""GEMM kernels: BF16 GEMM with fp32 accumulation (optionally with a fused bias + GELU
epilogue), INT8 GEMM with int32 accumulation, and batched GEMM.

The classic Triton tiling: a BLOCK_M x BLOCK_N output tile per program, a loop over K in
BLOCK_K steps with masked loads for ragged edges, `tl.dot` into an fp32 (int32) accumulator,
and grouped program ordering (GROUP_M output-tile rows share B tiles while they are hot).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _tile_indices(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    """C = act(A @ B + bias), fp32 accumulation; ACTIVATION is "" or "gelu_tanh"."""
    pid_m, pid_n = _tile_indices(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "gelu_tanh":
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * u)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def int8_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):
    """C (int32) = A (int8) @ B (int8), exact int32 accumulation."""
    pid_m, pid_n = _tile_indices(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
               stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
               stride_cb, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[b] = A[b] @ B[b]; grid axis 2 is the batch."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    batch = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + batch * stride_cb + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


# ------------------------------------------------------------------------------ host wrappers


def _launch_matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, activation: str,
                   BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, GROUP_M: int) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, bias if bias is not None else c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        HAS_BIAS=bias is not None, ACTIVATION=activation,
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return c


def matmul(a: torch.Tensor, b: torch.Tensor, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 64,
           GROUP_M: int = 8) -> torch.Tensor:
    return _launch_matmul(a, b, None, "", BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, BLOCK_M: int = 128,
                     BLOCK_N: int = 128, BLOCK_K: int = 64, GROUP_M: int = 8) -> torch.Tensor:
    """gelu_tanh(a @ b + bias), the epilogue fused into the GEMM."""
    return _launch_matmul(a, b, bias, "gelu_tanh", BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def int8_matmul(a: torch.Tensor, b: torch.Tensor, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 128,
                GROUP_M: int = 8) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=torch.int32, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    int8_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1),
                             BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return c


def bmm(a: torch.Tensor, b: torch.Tensor, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 64) -> torch.Tensor:
    B, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((B, M, N), dtype=a.dtype, device=a.device)
    BLOCK_M = min(BLOCK_M, max(16, triton.next_power_of_2(M)))
    BLOCK_N = min(BLOCK_N, max(16, triton.next_power_of_2(N)))
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), B)
    bmm_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                     BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c


# The same kernel under triton.autotune: the tile shape and pipeline depth are picked per
# problem size by timing each config on the backend that runs it (simulated cycles on the
# MTIA backend, measured time on a GPU). Configs that do not fit on-chip memory are skipped.
MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=st)
    for bm, bn, bk, st in ((64, 64, 64, 2), (64, 128, 64, 2), (128, 64, 64, 2), (128, 128, 32, 2),
                           (128, 128, 64, 2), (128, 128, 64, 3), (128, 256, 32, 3), (256, 128, 32, 3))
]
matmul_kernel_tuned = triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])(matmul_kernel)


def matmul_autotuned(a: torch.Tensor, b: torch.Tensor, kernel: triton.runtime.Autotuner = matmul_kernel_tuned
                     ) -> torch.Tensor:
    """a @ b through `kernel`: matmul_kernel under a triton.autotune whose configs set the tiles."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)

    def grid(meta: dict) -> tuple:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    kernel[grid](a, b, c, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), HAS_BIAS=False, ACTIVATION="")
    return c
