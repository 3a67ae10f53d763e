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
from backend.language import mtia


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


def _num_pes() -> int:
    return triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]


@triton.jit
def _bias_gelu_load(x_ptr, r, r_hi, rn, N, stride_xm, EVEN_N: tl.constexpr):
    if EVEN_N:
        mask = r[:, None] < r_hi
    else:
        mask = (r[:, None] < r_hi) & (rn[None, :] < N)
    return tl.load(x_ptr + r[:, None] * stride_xm + rn[None, :], mask=mask).to(tl.float32)


@triton.jit
def _bias_gelu_store(out_ptr, x, b, r, r_hi, rn, N, stride_om, EVEN_N: tl.constexpr):
    if EVEN_N:
        mask = r[:, None] < r_hi
    else:
        mask = (r[:, None] < r_hi) & (rn[None, :] < N)
    y = _gelu_tanh(x + b[None, :])
    tl.store(out_ptr + r[:, None] * stride_om + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def bias_gelu_ext_kernel(x_ptr, bias_ptr, out_ptr, M, N, stride_xm, stride_om, G, ROWS,
                         BM: tl.constexpr, BN: tl.constexpr, BMT: tl.constexpr, EVEN_N: tl.constexpr):
    """out = gelu_tanh(x + bias[None, :]) on the PE grid: the PEs form groups of G per BN-wide
    column block, PE p streams the contiguous rows [j * ROWS, (j + 1) * ROWS) of block p // G
    (j = p % G). The bias slice is loaded once per PE. The rows go as [BM, BN] tiles but the
    last BM, which go as [BMT, BN] tiles whose loads are all issued before the last big tile's
    body: the work left once the PE's last byte is in (one small tile's SIMD / SFU passes and
    its store) is short, and the control core, held by the big body's passes in the SIMD
    queue, would otherwise issue the small loads only after them (DMA_IN idle meanwhile)."""
    pe = mtia.pe_id()
    rn = (pe // G) * BN + tl.arange(0, BN)
    r0 = (pe % G) * ROWS
    r_end = tl.minimum(r0 + ROWS, M)
    b = tl.load(bias_ptr + rn, mask=rn < N).to(tl.float32)
    n_main = tl.maximum(tl.cdiv(r_end - r0, BM) - 1, 0)
    rows = tl.arange(0, BM)
    # the row carried through the loop keeps the loads below after it (they would otherwise be
    # scheduled ahead of the loop, their scalars being known at the start)
    r_t = r0
    for t in range(0, n_main - 1):
        r = r_t + rows
        x = _bias_gelu_load(x_ptr, r, r_end, rn, N, stride_xm, EVEN_N)
        _bias_gelu_store(out_ptr, x, b, r, r_end, rn, N, stride_om, EVEN_N)
        r_t += BM
    # the last big tile (none when the PE's rows fit the small tiles: then r_last_hi = r0)
    r_last = r_t + rows
    r_last_hi = tl.minimum(r_t + BM, r0 + n_main * BM)
    x_last = _bias_gelu_load(x_ptr, r_last, r_last_hi, rn, N, stride_xm, EVEN_N)
    rows_t = r_last_hi + tl.arange(0, BMT)
    xs = ()
    for k in tl.static_range(BM // BMT):
        xs = xs + (_bias_gelu_load(x_ptr, rows_t + k * BMT, r_end, rn, N, stride_xm, EVEN_N),)
    _bias_gelu_store(out_ptr, x_last, b, r_last, r_last_hi, rn, N, stride_om, EVEN_N)
    for k in tl.static_range(BM // BMT):
        _bias_gelu_store(out_ptr, xs[k], b, rows_t + k * BMT, r_end, rn, N, stride_om, EVEN_N)


@triton.jit
def bias_gelu_block_ext_kernel(x_ptr, bias_ptr, out_ptr, M, N, stride_xm, stride_om, BM: tl.constexpr,
                               BN: tl.constexpr):
    """out = gelu_tanh(x + bias[None, :]) on [BM, BN] blocks, column-block fastest (launched
    persistent). FP32 only: its tiles are read in place by the body, and the launch hint's
    two-instance ring keeps the next block's DMA from waiting for this block's body."""
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + rn, mask=rn < N).to(tl.float32)
    y = _gelu_tanh(x + b[None, :])
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu(x: torch.Tensor, bias: torch.Tensor, elems: int = 8192, tail: int = 1024) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, N = x2.shape
    out = torch.empty_like(x2)
    if x2.element_size() == 4:
        # FP32: the persistent block kernel (the PE-grid loop below reuses the tile's buffer,
        # so in the SRAM-resident regime its next DMA waits for the body: 5% slower there)
        BM, BN = _block_2d(M, N, max_bn=512)
        bias_gelu_block_ext_kernel[(triton.cdiv(N, BN), triton.cdiv(M, BM))](
            x2, bias, out, M, N, x2.stride(0), out.stride(0), BM=BM, BN=BN, persistent=True)
        return out.reshape(x.shape)
    P = _num_pes()
    # Column blocks of >= 256 elements (1 KB FP32 rows: the per-row DMA cost stays small), as
    # many as fit the PEs, so each PE's bias slice (loaded once) is narrow; the PEs of a block
    # split its rows evenly.
    ncb = 1
    while ncb * 2 <= P and triton.cdiv(N, ncb * 2) >= 256:
        ncb *= 2
    BN = triton.next_power_of_2(triton.cdiv(N, ncb))
    ncb = triton.cdiv(N, BN)
    G = max(1, P // ncb)
    rows = triton.cdiv(M, G)
    G = triton.cdiv(M, rows)

    def pow2_rows(e):
        r = max(1, min(rows, e // BN))
        return 1 << (r.bit_length() - 1)
    BM, BMT = pow2_rows(elems), pow2_rows(tail)
    bias_gelu_ext_kernel[(ncb * G,)](x2, bias, out, M, N, x2.stride(0), out.stride(0), G, rows,
                                     BM=BM, BN=BN, BMT=BMT, EVEN_N=N % BN == 0)
    return out.reshape(x.shape)
