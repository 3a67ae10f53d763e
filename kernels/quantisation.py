"""Quantisation kernels: row-wise symmetric INT8 quantise / dequantise, and MX4 (OCP MX FP4)
block quantise / dequantise.

INT8: scale = max|x| / 127 per row, q = round-half-away(x * 127 / max|x|).
MX4: per group of 32 values a shared power-of-two scale 2^(floor(log2 max|x|) - 2), stored as a
biased 8-bit exponent, and 4-bit E2M1 codes (sign, 2 exponent bits, 1 mantissa bit: magnitudes
0, .5, 1, 1.5, 2, 3, 4, 6), packed two per byte, low nibble first. The exponent is read from
the fp32 bit pattern, so it is exact and needs no log2.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

MX4_GROUP = 32


@triton.jit
def _round_half_away(y):
    return tl.where(y >= 0, tl.floor(y + 0.5), -tl.floor(-y + 0.5))


@triton.jit
def quantize_int8_rowwise_kernel(x_ptr, q_ptr, scale_ptr, N, stride_x, stride_q, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-12)
    # IEEE division, as torch's reference: a plain `/` is an approximate division on NVIDIA GPUs
    # (within 2 ulp), which moves codes at a rounding boundary by one
    inv = tl.math.div_rn(127.0, amax)
    q = tl.minimum(tl.maximum(_round_half_away(x * inv), -127.0), 127.0)
    tl.store(q_ptr + row * stride_q + cols, q.to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, amax / 127.0)


@triton.jit
def dequantize_int8_rowwise_kernel(q_ptr, scale_ptr, out_ptr, M, N, stride_q, stride_o,
                                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    q = tl.load(q_ptr + rm[:, None] * stride_q + rn[None, :], mask=mask, other=0)
    s = tl.load(scale_ptr + rm, mask=rm < M, other=0.0)
    y = q.to(tl.float32) * s[:, None]
    tl.store(out_ptr + rm[:, None] * stride_o + rn[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _e2m1_code(v):
    """fp32 value already divided by the shared scale -> 4-bit E2M1 code (int32)."""
    a = tl.abs(v)
    step = tl.where(a < 2.0, 0.5, tl.where(a < 4.0, 1.0, 2.0))
    a = tl.minimum(tl.floor(a / step + 0.5) * step, 6.0)
    mag = tl.where(a < 2.0, a * 2.0, tl.where(a < 4.0, a + 2.0, a * 0.5 + 4.0)).to(tl.int32)
    return mag | tl.where(v < 0, 8, 0)


@triton.jit
def mx4_quantize_kernel(x_ptr, packed_ptr, exp_ptr, n_groups, BLOCK_G: tl.constexpr):
    """BLOCK_G groups of 32 per program, loaded as one contiguous [BLOCK_G, 16, 2] tile (the
    last axis is the element pair of an output byte); byte = code_even | code_odd << 4."""
    g = tl.program_id(0) * BLOCK_G + tl.arange(0, BLOCK_G)
    j = tl.arange(0, 16)
    w = tl.arange(0, 2)
    gmask = g < n_groups
    offs = g[:, None, None] * 32 + j[None, :, None] * 2 + w[None, None, :]
    x = tl.load(x_ptr + offs, mask=gmask[:, None, None], other=0.0).to(tl.float32)
    amax = tl.max(tl.max(tl.abs(x), axis=2), axis=1)
    e = ((amax.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127
    shared = tl.minimum(tl.maximum(e - 2, -127), 127)
    # 1 / 2^shared as an fp32 bit pattern (exact); shared = -127 would be a denormal scale
    inv_scale = ((127 - tl.maximum(shared, -126)) << 23).to(tl.float32, bitcast=True)
    code = _e2m1_code(x * inv_scale[:, None, None])
    byte = tl.sum(code << (w * 4)[None, None, :], axis=2).to(tl.uint8)
    tl.store(packed_ptr + g[:, None] * 16 + j[None, :], byte, mask=gmask[:, None])
    tl.store(exp_ptr + g, (shared + 127).to(tl.uint8), mask=gmask)


@triton.jit
def _e2m1_value(code):
    e = (code >> 1) & 3
    m = (code & 1).to(tl.float32)
    # 2^(e-1) for e in 1..3 is 1, 2, 4
    mag = tl.where(e == 0, 0.5 * m, (1 << tl.maximum(e - 1, 0)).to(tl.float32) * (1.0 + 0.5 * m))
    return tl.where((code & 8) != 0, -mag, mag)


@triton.jit
def mx4_dequantize_kernel(packed_ptr, exp_ptr, out_ptr, n_groups, BLOCK_G: tl.constexpr):
    """The inverse: each byte's two nibbles become an element pair of a contiguous
    [BLOCK_G, 32] output tile; the 16 E2M1 values are a table looked up with tl.gather."""
    g = tl.program_id(0) * BLOCK_G + tl.arange(0, BLOCK_G)
    j = tl.arange(0, 16)
    w = tl.arange(0, 2)
    gmask = g < n_groups
    byte = tl.load(packed_ptr + g[:, None] * 16 + j[None, :], mask=gmask[:, None], other=0).to(tl.int32)
    shared = tl.load(exp_ptr + g, mask=gmask, other=127).to(tl.int32) - 127
    scale = ((tl.maximum(shared, -126) + 127) << 23).to(tl.float32, bitcast=True)
    code = tl.reshape((byte[:, :, None] >> (w * 4)[None, None, :]) & 0xF, (BLOCK_G, 32))
    table = tl.broadcast_to(_e2m1_value(tl.arange(0, 16))[None, :], (BLOCK_G, 16))
    val = tl.gather(table, code, axis=1) * scale[:, None]
    offs = g[:, None] * 32 + tl.arange(0, 32)[None, :]
    tl.store(out_ptr + offs, val.to(out_ptr.dtype.element_ty), mask=gmask[:, None])


# ------------------------------------------------------------------------------ host wrappers


def quantize_int8_rowwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.contiguous()
    M, N = x.shape
    q = torch.empty((M, N), dtype=torch.int8, device=x.device)
    scale = torch.empty((M,), dtype=torch.float32, device=x.device)
    quantize_int8_rowwise_kernel[(M,)](x, q, scale, N, x.stride(0), q.stride(0), BLOCK_N=triton.next_power_of_2(N))
    return q, scale


def dequantize_int8_rowwise(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32,
                            BLOCK_M: int = 16, BLOCK_N: int = 256) -> torch.Tensor:
    M, N = q.shape
    out = torch.empty((M, N), dtype=dtype, device=q.device)
    BLOCK_N = min(BLOCK_N, triton.next_power_of_2(N))
    dequantize_int8_rowwise_kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](
        q, scale, out, M, N, q.stride(0), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


def mx4_quantize(x: torch.Tensor, BLOCK_G: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.contiguous().reshape(-1)
    assert x.numel() % MX4_GROUP == 0, "MX4 needs a multiple of 32 elements"
    n_groups = x.numel() // MX4_GROUP
    packed = torch.empty((n_groups * 16,), dtype=torch.uint8, device=x.device)
    exps = torch.empty((n_groups,), dtype=torch.uint8, device=x.device)
    mx4_quantize_kernel[(triton.cdiv(n_groups, BLOCK_G),)](x, packed, exps, n_groups, BLOCK_G=BLOCK_G)
    return packed, exps


def mx4_dequantize(packed: torch.Tensor, exps: torch.Tensor, dtype: torch.dtype = torch.float32,
                   BLOCK_G: int = 128) -> torch.Tensor:
    n_groups = exps.numel()
    out = torch.empty((n_groups * MX4_GROUP,), dtype=dtype, device=packed.device)
    mx4_dequantize_kernel[(triton.cdiv(n_groups, BLOCK_G),)](packed, exps, out, n_groups, BLOCK_G=BLOCK_G)
    return out
