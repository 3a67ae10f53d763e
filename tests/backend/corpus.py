"""A corpus of small Triton kernels with inputs, grids and torch references.

Each `Case` names a @triton.jit kernel, an input maker (seeded: the same seed gives the same
inputs in every process, which the differential tests against Triton's interpreter rely on),
the grid, constexpr/launch keyword arguments and a torch reference that returns the expected
value of every output argument. The module imports under TRITON_INTERPRET=1 as well.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# ============================================================================ kernels


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


@triton.jit
def load_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out has grid*BLOCK elements: masked-off lanes must hold `other`
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-7.0)
    tl.store(out_ptr + offs, x)


@triton.jit
def pid_2d_kernel(out_ptr):
    px = tl.program_id(0)
    py = tl.program_id(1)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    tl.store(out_ptr + py * nx + px, px + 10 * py + 100 * nx + 1000 * ny)


@triton.jit
def pid_3d_kernel(out_ptr):
    px, py, pz = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny, nz = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    base = ((pz * ny + py) * nx + px) * 4
    tl.store(out_ptr + base + 0, px)
    tl.store(out_ptr + base + 1, py)
    tl.store(out_ptr + base + 2, pz)
    tl.store(out_ptr + base + 3, nx * 100 + ny * 10 + nz)


@triton.jit
def grid_stride_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # persistent style: each program walks blocks pid, pid + num_programs, ...
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    for b in range(pid, tl.cdiv(n, BLOCK), nprog):
        offs = b * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)


@triton.jit
def outer_add_kernel(x_ptr, y_ptr, out_ptr, M, N, stride_om, stride_on,
                     BM: tl.constexpr, BN: tl.constexpr):
    # expand_dims + broadcast: out[i, j] = x[i] + 2 * y[j]
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rm, mask=rm < M, other=0.0)
    y = tl.load(y_ptr + rn, mask=rn < N, other=0.0)
    xb = tl.expand_dims(x, 1)
    yb = y[None, :]
    v = tl.broadcast_to(xb, (BM, BN)) + 2.0 * yb
    m = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, v, mask=m)


@triton.jit
def splat_full_kernel(out_ptr, val, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    z = tl.zeros((BLOCK,), dtype=tl.float32)
    f = tl.full((BLOCK,), 3, dtype=tl.int32)
    tl.store(out_ptr + offs, z + val + f.to(tl.float32), mask=offs < n)


@triton.jit
def strided_2d_kernel(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BM: tl.constexpr, BN: tl.constexpr):
    # out = x * 3 - 1 for arbitrary (transposed / sliced) strides
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=m)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, x * 3.0 - 1.0, mask=m)


@triton.jit
def reshape_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R * C))
    x2 = tl.reshape(x, (R, C))
    tl.store(out_ptr + tl.arange(0, R), tl.sum(x2, axis=1))


@triton.jit
def trans_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    xt = tl.trans(x)
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], xt)


@triton.jit
def permute_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ia * B * C + ib * C + ic)
    y = tl.permute(x, (2, 0, 1))  # shape (C, A, B)
    oc = tl.arange(0, C)[:, None, None]
    oa = tl.arange(0, A)[None, :, None]
    ob = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + oc * A * B + oa * B + ob, y)


@triton.jit
def join_split_kernel(a_ptr, b_ptr, inter_ptr, sum_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    j = tl.join(a, b)  # (N, 2)
    tl.store(inter_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    lo, hi = tl.split(j * 2.0)
    tl.store(sum_ptr + r, lo - hi)


@triton.jit
def int_arith_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1)
    b = tl.load(b_ptr + offs, mask=m, other=1)
    base = out_ptr + offs * 8
    tl.store(base + 0, a + b * 3, mask=m)
    tl.store(base + 1, a - b, mask=m)
    tl.store(base + 2, a // b, mask=m)
    tl.store(base + 3, a % b, mask=m)
    tl.store(base + 4, (a & 0xFF) | (b << 2), mask=m)
    tl.store(base + 5, a ^ b, mask=m)
    tl.store(base + 6, a >> 3, mask=m)
    tl.store(base + 7, tl.minimum(a, b) * tl.maximum(a, b) % 1000, mask=m)


@triton.jit
def float_arith_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1.0)
    b = tl.load(b_ptr + offs, mask=m, other=1.0)
    base = out_ptr + offs * 6
    tl.store(base + 0, a * b - a, mask=m)
    tl.store(base + 1, a / b, mask=m)
    tl.store(base + 2, tl.where(a > b, a, -b), mask=m)
    tl.store(base + 3, tl.minimum(a, b) + tl.maximum(a, 0.5), mask=m)
    tl.store(base + 4, tl.fma(a, b, 1.5), mask=m)
    tl.store(base + 5, tl.clamp(a, -0.5, 0.5), mask=m)


@triton.jit
def compare_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    bits = (a < b).to(tl.int32) + 2 * (a <= b).to(tl.int32) + 4 * (a == b).to(tl.int32) \
        + 8 * (a != b).to(tl.int32) + 16 * (a > b).to(tl.int32) + 32 * (a >= b).to(tl.int32)
    tl.store(out_ptr + offs, bits, mask=m)


@triton.jit
def half_arith_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # fp16 / bf16 elementwise in the storage dtype
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(out_ptr + offs, a * b + a, mask=m)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "ceil":
        y = tl.ceil(x)
    elif FN == "ld_tanh":
        y = libdevice.tanh(x)
    elif FN == "ld_erf":
        y = libdevice.erf(x)
    elif FN == "ld_pow":
        y = libdevice.pow(x, 1.5)
    elif FN == "ld_exp":
        y = libdevice.exp(x)
    elif FN == "ld_log1p":
        y = libdevice.log1p(x)
    elif FN == "ld_isnan":
        y = tl.where(libdevice.isnan(x), 1.0, 0.0)
    elif FN == "ld_isinf":
        y = libdevice.isinf(x).to(tl.float32)
    elif FN == "ld_floor":
        y = libdevice.floor(x)
    elif FN == "ld_rsqrt":
        y = libdevice.rsqrt(x)
    else:
        tl.static_assert(False, "unknown FN")
        y = x
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def int_unary_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.abs(x) + tl.where(x < 0, -1, 1) * 7, mask=m)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               PRECISION: tl.constexpr, ACC_TY: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=ACC_TY)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(b_ptrs, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC_TY)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def dot_out_dtype_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.dot(a, b, out_dtype=tl.float16)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@triton.jit
def row_reduce_kernel(x_ptr, out_ptr, M, N, sxm, sxn, KIND: tl.constexpr, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    m = cols < N
    ptrs = x_ptr + row * sxm + cols * sxn
    if KIND == "sum":
        x = tl.load(ptrs, mask=m, other=0.0)
        r = tl.sum(x, axis=0)
    elif KIND == "max":
        x = tl.load(ptrs, mask=m, other=-float("inf"))
        r = tl.max(x, axis=0)
    elif KIND == "min":
        x = tl.load(ptrs, mask=m, other=float("inf"))
        r = tl.min(x, axis=0)
    elif KIND == "argmax":
        x = tl.load(ptrs, mask=m, other=-float("inf"))
        r = tl.argmax(x, axis=0).to(tl.float32)
    elif KIND == "argmin":
        x = tl.load(ptrs, mask=m, other=float("inf"))
        r = tl.argmin(x, axis=0).to(tl.float32)
    else:
        x = tl.load(ptrs, mask=m, other=0.0)
        r = tl.reduce(x, 0, _max_abs)
    tl.store(out_ptr + row, r)


@triton.jit
def _max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@triton.jit
def col_sum_int_kernel(x_ptr, out_ptr, M, N, sxm, sxn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=m, other=0)
    tl.store(out_ptr + rn, tl.sum(x, axis=0), mask=rn < N)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx, so, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    m = cols < N
    x = tl.load(x_ptr + row * sx + cols, mask=m, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * so + cols, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, N, REVERSE: tl.constexpr, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0)
    tl.store(out_ptr + row * N + cols, tl.cumsum(x, axis=0, reverse=REVERSE), mask=m)


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def _recurrence_combine(a1, b1, a2, b2):
    # composition of h -> a1*h + b1 then h -> a2*h + b2
    return a1 * a2, b1 * a2 + b2


@triton.jit
def scan_custom_kernel(a_ptr, b_ptr, cummax_ptr, h_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    tl.store(cummax_ptr + r, tl.associative_scan(b, 0, _max_combine))
    _, h = tl.associative_scan((a, b), 0, _recurrence_combine)
    tl.store(h_ptr + r, h)


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(hist_ptr + x, 1, mask=m)


@triton.jit
def counter_kernel(counter_ptr, ticket_ptr):
    t = tl.atomic_add(counter_ptr, 1)
    tl.store(ticket_ptr + tl.program_id(0), t)


@triton.jit
def atomic_minmax_kernel(x_ptr, max_ptr, min_ptr, fsum_ptr, n, BLOCK: tl.constexpr, SLOTS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    slot = offs % SLOTS
    tl.atomic_max(max_ptr + slot, x, mask=m)
    tl.atomic_min(min_ptr + slot, x, mask=m)
    tl.atomic_add(fsum_ptr + slot, x.to(tl.float32), mask=m)


@triton.jit
def atomic_xchg_kernel(slot_ptr, old_ptr):
    pid = tl.program_id(0)
    old = tl.atomic_xchg(slot_ptr, pid + 1)
    tl.store(old_ptr + pid, old)


@triton.jit
def atomic_cas_kernel(flag_ptr, won_ptr, mem_ptr, cmp_ptr, val_ptr, old_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    # first-come claim: exactly one program sees 0 (no spinning)
    prev = tl.atomic_cas(flag_ptr, 0, pid + 1)
    tl.store(won_ptr + pid, (prev == 0).to(tl.int32))
    # element-wise cas, program 0 only
    if pid == 0:
        r = tl.arange(0, N)
        old = tl.atomic_cas(mem_ptr + r, tl.load(cmp_ptr + r), tl.load(val_ptr + r))
        tl.store(old_ptr + r, old)


@triton.jit
def loop_ptr_kernel(x_ptr, out_ptr, N, sx, BLOCK: tl.constexpr):
    # loop-carried pointers: ptrs += BLOCK
    row = tl.program_id(0)
    ptrs = x_ptr + row * sx + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        m = start + tl.arange(0, BLOCK) < N
        acc += tl.load(ptrs, mask=m, other=0.0)
        ptrs += BLOCK
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def while_kernel(x_ptr, out_ptr):
    # dynamic trip count: number of halvings until v <= 1
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    c = 0
    while v > 1:
        v = v // 2
        c += 1
    tl.store(out_ptr + pid, c)


@triton.jit
def if_kernel(x_ptr, flag_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    f = tl.load(flag_ptr + pid)
    if f > 0:
        y = x * 2.0
    else:
        y = x - 100.0
    if pid % 2 == 1:
        y = y + 0.5
    tl.store(out_ptr + offs, y)


@triton.jit
def _inner_helper(x, s):
    return x * s + 1.0


@triton.jit
def _outer_helper(x, y):
    return _inner_helper(x, 2.0) - y, tl.maximum(x, y)


@triton.jit
def device_fn_kernel(x_ptr, y_ptr, out_ptr, out2_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    a, b = _outer_helper(x, y)
    tl.store(out_ptr + offs, a, mask=m)
    tl.store(out2_ptr + offs, b, mask=m)


@triton.jit
def act_bias_kernel(x_ptr, bias_ptr, out_ptr, n, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
                    BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if HAS_BIAS:
        x += tl.load(bias_ptr + offs, mask=m)
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    elif ACT == "gelu":
        x = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, x, mask=m)


@triton.jit
def device_assert_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")
    tl.store(out_ptr + offs, tl.sqrt(x), mask=m)


@triton.jit
def block_ptr_copy_kernel(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(x_ptr, (M, N), (sxm, sxn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (M, N), (som, son), (pm * BM, pn * BN), (BM, BN), (1, 0))
    x = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    tl.store(dst, x + 1.0, boundary_check=(0, 1))


@triton.jit
def block_ptr_rowsum_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    bp = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for _ in range(0, tl.cdiv(N, BN)):
        acc += tl.sum(tl.load(bp, boundary_check=(0, 1), padding_option="zero"), axis=1)
        bp = tl.advance(bp, (0, BN))
    rm = pm * BM + tl.arange(0, BM)
    tl.store(out_ptr + rm, acc, mask=rm < M)


@triton.jit
def tensor_desc_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    x = src.load([pm * BM, pn * BN])
    dst.store([pm * BM, pn * BN], x * 2.0)


@triton.jit
def int64_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * 1000003 + (x >> 7) - (1 << 40), mask=m)


@triton.jit
def int8_wrap_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(out_ptr + offs, a + b, mask=m)  # wraps in int8


@triton.jit
def scalar_arg_kernel(out_ptr, a, b, f, n, BLOCK: tl.constexpr):
    # scalar (non-tensor) runtime arguments of each kind
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = offs.to(tl.float32) * f + (a * b).to(tl.float32)
    tl.store(out_ptr + offs, v, mask=offs < n)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, eps, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(m, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / N
    y = d * tl.rsqrt(var + eps) * tl.load(w_ptr + cols, mask=m) + tl.load(b_ptr + cols, mask=m)
    tl.store(out_ptr + row * N + cols, y, mask=m)


@triton.jit
def gather_index_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # data-dependent offsets: out[i] = x[idx[i]]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + i, mask=m), mask=m)


# ============================================================================ cases

Tensor = torch.Tensor


@dataclass
class Case:
    name: str
    kernel: Any
    make: Callable[[torch.Generator], dict]   # ordered kernel arguments (tensors and scalars)
    grid: Any                                  # tuple, or callable(args) -> tuple
    ref: Callable[[dict], dict]                # expected value of each output argument
    kwargs: dict = field(default_factory=dict)  # constexprs and launch options
    atol: float | None = None                  # None: from the output dtype
    check: Callable[[dict, dict], None] | None = None  # custom check(args, outputs)
    interp: bool = False                       # in the differential test against the interpreter

    def grid_of(self, args: dict) -> tuple:
        return self.grid(args) if callable(self.grid) else self.grid


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(g, *shape, dtype=torch.float32) -> Tensor:
    return torch.randn(*shape, generator=g).to(dtype)


def randint(g, lo, hi, *shape, dtype=torch.int32) -> Tensor:
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def tolerance(dtype: torch.dtype) -> float:
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return 0.13
    return 1e-4


def run_case(case: Case, seed: int = 0, **options: Any) -> tuple[dict, dict, dict]:
    """Build inputs, compute the reference on copies, launch. Returns (args, outputs, expected).
    `options` are extra launch options (e.g. structured_dma=False for the scalar path)."""
    args = case.make(gen(seed))
    copies = {k: v.clone() if isinstance(v, Tensor) else v for k, v in args.items()}
    expected = case.ref(copies)
    case.kernel[case.grid_of(args)](**args, **case.kwargs, **options)
    outs = {k: args[k] for k in (expected or {})}
    return args, outs, expected


def assert_matches(case: Case, outs: dict, expected: dict, atol: float | None = None) -> None:
    for k, exp in expected.items():
        got = outs[k]
        assert got.shape == exp.shape, f"{case.name}.{k}: shape {tuple(got.shape)} != {tuple(exp.shape)}"
        if exp.dtype.is_floating_point:
            tol = atol if atol is not None else (case.atol if case.atol is not None else tolerance(exp.dtype))
            torch.testing.assert_close(got.float(), exp.float(), rtol=tol, atol=tol, equal_nan=True,
                                       msg=lambda m, k=k: f"{case.name}.{k}: {m}")
        else:
            assert got.dtype == exp.dtype, f"{case.name}.{k}: dtype {got.dtype} != {exp.dtype}"
            if not torch.equal(got, exp):
                bad = (got != exp).nonzero()[:5].tolist()
                raise AssertionError(f"{case.name}.{k}: mismatch at {bad}: got "
                                     f"{[got[tuple(i)].item() for i in bad]} expected "
                                     f"{[exp[tuple(i)].item() for i in bad]}")


CASES: list[Case] = []


def case(name: str, kernel: Any, make: Callable, grid: Any, ref: Callable, **kw: Any) -> Case:
    c = Case(name, kernel, make, grid, ref, **kw)
    assert name not in {x.name for x in CASES}, name
    CASES.append(c)
    return c


def by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- elementwise and grids

def _add_inputs(n, dtype=torch.float32):
    def make(g):
        return dict(x_ptr=randn(g, n, dtype=dtype), y_ptr=randn(g, n, dtype=dtype),
                    out_ptr=torch.full((n,), 5.0, dtype=dtype), n=n)
    return make


_add_ref = lambda a: {"out_ptr": a["x_ptr"] + a["y_ptr"]}  # noqa: E731
case("add_1000", add_kernel, _add_inputs(1000), (cdiv(1000, 128),), _add_ref, kwargs=dict(BLOCK=128), interp=True)
case("add_size1", add_kernel, _add_inputs(1), (1,), _add_ref, kwargs=dict(BLOCK=16), interp=True)
case("add_empty_grid", add_kernel, _add_inputs(64), (0,), lambda a: {"out_ptr": a["out_ptr"]},
     kwargs=dict(BLOCK=64))
case("add_n0", add_kernel, _add_inputs(0), (1,), lambda a: {"out_ptr": a["out_ptr"]}, kwargs=dict(BLOCK=32))
case("add_fp16", add_kernel, _add_inputs(300, torch.float16), (cdiv(300, 64),), _add_ref, kwargs=dict(BLOCK=64))
case("add_bf16", add_kernel, _add_inputs(300, torch.bfloat16), (cdiv(300, 64),), _add_ref, kwargs=dict(BLOCK=64))
case("add_int32", add_kernel,
     lambda g: dict(x_ptr=randint(g, -1000, 1000, 257), y_ptr=randint(g, -1000, 1000, 257),
                    out_ptr=torch.zeros(257, dtype=torch.int32), n=257),
     (3,), _add_ref, kwargs=dict(BLOCK=128))


def _other_ref(a):
    n = a["n"]
    out = torch.full_like(a["out_ptr"], -7.0)
    out[:n] = a["x_ptr"][:n]
    return {"out_ptr": out}


case("load_other", load_other_kernel,
     lambda g: dict(x_ptr=randn(g, 100), out_ptr=torch.zeros(128), n=100), (4,), _other_ref,
     kwargs=dict(BLOCK=32), interp=True)


def _pid2_ref(a):
    ny, nx = a["out_ptr"].shape
    px = torch.arange(nx)[None, :]
    py = torch.arange(ny)[:, None]
    return {"out_ptr": (px + 10 * py + 100 * nx + 1000 * ny).to(torch.int32)}


case("pid_2d", pid_2d_kernel, lambda g: dict(out_ptr=torch.zeros(4, 3, dtype=torch.int32)), (3, 4), _pid2_ref,
     interp=True)


def _pid3_ref(a):
    nz, ny, nx = 4, 3, 2
    out = torch.zeros(nz, ny, nx, 4, dtype=torch.int32)
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                out[z, y, x] = torch.tensor([x, y, z, nx * 100 + ny * 10 + nz])
    return {"out_ptr": out}


case("pid_3d", pid_3d_kernel, lambda g: dict(out_ptr=torch.zeros(4, 3, 2, 4, dtype=torch.int32)), (2, 3, 4),
     _pid3_ref, interp=True)
case("grid_stride", grid_stride_kernel, lambda g: dict(x_ptr=randn(g, 1000), out_ptr=torch.zeros(1000), n=1000),
     (3,), lambda a: {"out_ptr": a["x_ptr"] * 2 + 1}, kwargs=dict(BLOCK=64), interp=True)


def _outer_make(g):
    M, N = 19, 37
    out = torch.zeros(N, M).t()  # non-contiguous output
    return dict(x_ptr=randn(g, M), y_ptr=randn(g, N), out_ptr=out, M=M, N=N,
                stride_om=out.stride(0), stride_on=out.stride(1))


case("outer_broadcast", outer_add_kernel, _outer_make, (cdiv(19, 16), cdiv(37, 16)),
     lambda a: {"out_ptr": a["x_ptr"][:, None] + 2 * a["y_ptr"][None, :]}, kwargs=dict(BM=16, BN=16), interp=True)
case("splat_full", splat_full_kernel, lambda g: dict(out_ptr=torch.zeros(70), val=1.25, n=70), (3,),
     lambda a: {"out_ptr": torch.full((70,), 4.25)}, kwargs=dict(BLOCK=32))


def _strided_make(kind):
    def make(g):
        if kind == "transposed":
            x = randn(g, 45, 30).t()        # (30, 45), strides (1, 30)
        elif kind == "sliced":
            x = randn(g, 30, 90)[:, ::2]    # (30, 45), strides (90, 2)
        else:
            x = randn(g, 30, 45)
        out = torch.zeros(x.shape[1], x.shape[0]).t() if kind == "transposed" else torch.zeros(x.shape)
        return dict(x_ptr=x, out_ptr=out, M=x.shape[0], N=x.shape[1], sxm=x.stride(0), sxn=x.stride(1),
                    som=out.stride(0), son=out.stride(1))
    return make


for _k in ("contiguous", "transposed", "sliced"):
    case(f"strided_{_k}", strided_2d_kernel, _strided_make(_k), (2, 3), lambda a: {"out_ptr": a["x_ptr"] * 3 - 1},
         kwargs=dict(BM=16, BN=16), interp=_k != "contiguous")

case("reshape", reshape_kernel, lambda g: dict(x_ptr=randn(g, 64), out_ptr=torch.zeros(8)), (1,),
     lambda a: {"out_ptr": a["x_ptr"].reshape(8, 8).sum(1)}, kwargs=dict(R=8, C=8), interp=True)
case("trans", trans_kernel, lambda g: dict(x_ptr=randn(g, 8, 16), out_ptr=torch.zeros(16, 8)), (1,),
     lambda a: {"out_ptr": a["x_ptr"].t().contiguous()}, kwargs=dict(M=8, N=16), interp=True)
case("permute_3d", permute_kernel, lambda g: dict(x_ptr=randn(g, 2, 4, 8), out_ptr=torch.zeros(8, 2, 4)), (1,),
     lambda a: {"out_ptr": a["x_ptr"].permute(2, 0, 1).contiguous()}, kwargs=dict(A=2, B=4, C=8), interp=True)
case("join_split", join_split_kernel,
     lambda g: dict(a_ptr=randn(g, 16), b_ptr=randn(g, 16), inter_ptr=torch.zeros(32), sum_ptr=torch.zeros(16)),
     (1,), lambda a: {"inter_ptr": torch.stack([a["a_ptr"], a["b_ptr"]], -1).reshape(-1),
                      "sum_ptr": 2 * (a["a_ptr"] - a["b_ptr"])}, kwargs=dict(N=16), interp=True)

# ---------------------------------------------------------------- arithmetic, comparisons, casts


def _int_arith_make(g):
    n = 200
    a = randint(g, -5000, 5000, n)
    b = randint(g, 1, 50, n) * torch.where(randint(g, 0, 2, n) == 1, 1, -1).to(torch.int32)
    return dict(a_ptr=a, b_ptr=b, out_ptr=torch.zeros(n, 8, dtype=torch.int32), n=n)


def _int_arith_ref(x):
    a, b = x["a_ptr"], x["b_ptr"]
    cols = [a + b * 3, a - b, torch.div(a, b, rounding_mode="trunc"), torch.fmod(a, b),
            (a & 0xFF) | (b << 2), a ^ b, a >> 3, torch.fmod(torch.minimum(a, b) * torch.maximum(a, b), 1000)]
    return {"out_ptr": torch.stack(cols, 1).to(torch.int32)}


case("int_arith", int_arith_kernel, _int_arith_make, (cdiv(200, 64),), _int_arith_ref, kwargs=dict(BLOCK=64),
     interp=True)


def _float_arith_ref(x):
    a, b = x["a_ptr"], x["b_ptr"]
    cols = [a * b - a, a / b, torch.where(a > b, a, -b), torch.minimum(a, b) + torch.maximum(a, torch.tensor(0.5)),
            a * b + 1.5, a.clamp(-0.5, 0.5)]
    return {"out_ptr": torch.stack(cols, 1)}


case("float_arith", float_arith_kernel,
     lambda g: dict(a_ptr=randn(g, 150), b_ptr=randn(g, 150) + 3.0, out_ptr=torch.zeros(150, 6), n=150),
     (3,), _float_arith_ref, kwargs=dict(BLOCK=64), interp=True)


def _cmp_make(g):
    a = randint(g, -3, 3, 100).float()
    b = randint(g, -3, 3, 100).float()
    return dict(a_ptr=a, b_ptr=b, out_ptr=torch.zeros(100, dtype=torch.int32), n=100)


def _cmp_ref(x):
    a, b = x["a_ptr"], x["b_ptr"]
    bits = (a < b).int() + 2 * (a <= b).int() + 4 * (a == b).int() + 8 * (a != b).int() + 16 * (a > b).int() \
        + 32 * (a >= b).int()
    return {"out_ptr": bits.to(torch.int32)}


case("compare", compare_kernel, _cmp_make, (2,), _cmp_ref, kwargs=dict(BLOCK=64))
for _dt, _nm in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    case(f"half_arith_{_nm}", half_arith_kernel,
         (lambda dt: lambda g: dict(a_ptr=randn(g, 77, dtype=dt), b_ptr=randn(g, 77, dtype=dt),
                                    out_ptr=torch.zeros(77, dtype=dt), n=77))(_dt),
         (2,), lambda a: {"out_ptr": (a["a_ptr"].float() * a["b_ptr"].float() + a["a_ptr"].float()).to(
             a["a_ptr"].dtype)},
         kwargs=dict(BLOCK=64))

_F8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _cast_case(src, dst, lo=-100.0, hi=100.0, interp=False):
    def make(g):
        n = 133
        if src.is_floating_point:
            x = (torch.rand(n, generator=g) * (hi - lo) + lo).to(src)
        else:
            x = torch.randint(int(lo), int(hi), (n,), generator=g).to(src)
        return dict(x_ptr=x, out_ptr=torch.zeros(n, dtype=dst), n=n)

    def ref(a):
        x = a["x_ptr"]
        if src.is_floating_point and not dst.is_floating_point:
            return {"out_ptr": torch.trunc(x.double()).to(dst)}
        return {"out_ptr": x.to(dst)}
    name = f"cast_{str(src).split('.')[1]}_to_{str(dst).split('.')[1]}"
    case(name, cast_kernel, make, (cdiv(133, 64),), ref, kwargs=dict(BLOCK=64), interp=interp)


_cast_case(torch.float32, torch.float16, interp=True)
_cast_case(torch.float32, torch.bfloat16, interp=True)
_cast_case(torch.float16, torch.float32)
_cast_case(torch.bfloat16, torch.float32)
_cast_case(torch.bfloat16, torch.float16, -10, 10)
_cast_case(torch.float32, torch.int32, interp=True)
_cast_case(torch.float32, torch.int8)
_cast_case(torch.float32, torch.int64, -1e6, 1e6)
_cast_case(torch.int32, torch.float32, -100000, 100000)
_cast_case(torch.int8, torch.int32, -128, 127)
_cast_case(torch.int32, torch.int8, -1000, 1000, interp=True)   # wraps
_cast_case(torch.int64, torch.int32, -(1 << 40), 1 << 40)       # wraps
_cast_case(torch.int32, torch.int64, -(1 << 31), (1 << 31) - 1)
_cast_case(torch.int8, torch.float16, -128, 127)
_cast_case(torch.float32, torch.float8_e4m3fn, -400, 400)
_cast_case(torch.float32, torch.float8_e5m2, -1000, 1000)
_cast_case(torch.float8_e4m3fn, torch.float32, -400, 400)
_cast_case(torch.float8_e5m2, torch.float16, -1000, 1000)

# ---------------------------------------------------------------- math

_UNARY_REF = {
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2, "sqrt": torch.sqrt,
    "sqrt_rn": torch.sqrt, "rsqrt": torch.rsqrt, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf,
    "sigmoid": torch.sigmoid, "abs": torch.abs, "floor": torch.floor, "ceil": torch.ceil,
    "ld_tanh": torch.tanh, "ld_erf": torch.erf, "ld_pow": lambda x: torch.pow(x, 1.5), "ld_exp": torch.exp,
    "ld_log1p": torch.log1p, "ld_isnan": lambda x: torch.isnan(x).float(),
    "ld_isinf": lambda x: torch.isinf(x).float(), "ld_floor": torch.floor, "ld_rsqrt": torch.rsqrt,
}
_POSITIVE = {"log", "log2", "sqrt", "sqrt_rn", "rsqrt", "ld_pow", "ld_log1p", "ld_rsqrt"}
# libdevice calls do not run under the interpreter (it sees no libdevice implementation for CPU)
_DIFF_MATH = {"exp", "log", "sqrt", "sin", "sigmoid", "floor", "exp2", "rsqrt"}


def _unary_make(fn):
    def make(g):
        n = 201
        x = randn(g, n) * 3
        if fn in _POSITIVE:
            x = x.abs() + 0.05
        if fn in ("ld_isnan", "ld_isinf"):
            x[::7] = float("nan")
            x[3::11] = float("inf")
            x[5::13] = -float("inf")
        return dict(x_ptr=x, out_ptr=torch.zeros(n), n=n)
    return make


for _fn, _rf in _UNARY_REF.items():
    case(f"math_{_fn}", unary_kernel, _unary_make(_fn), (cdiv(201, 128),),
         (lambda rf: lambda a: {"out_ptr": rf(a["x_ptr"])})(_rf), kwargs=dict(FN=_fn, BLOCK=128),
         interp=_fn in _DIFF_MATH)

case("math_int_abs", int_unary_kernel,
     lambda g: dict(x_ptr=randint(g, -100, 100, 90), out_ptr=torch.zeros(90, dtype=torch.int32), n=90), (1,),
     lambda a: {"out_ptr": (a["x_ptr"].abs() + torch.where(a["x_ptr"] < 0, -1, 1) * 7).to(torch.int32)},
     kwargs=dict(BLOCK=128))

# ---------------------------------------------------------------- dot


def _dot_case(name, dt, M, N, K, precision="ieee", acc=tl.float32, out_dt=torch.float32, b_trans=False,
              atol=None, interp=False, blocks=(16, 16, 16)):
    def make(g):
        if dt == torch.int8:
            a = randint(g, -8, 8, M, K, dtype=torch.int8)
            b = randint(g, -8, 8, N, K, dtype=torch.int8)
        else:
            a = randn(g, M, K, dtype=dt)
            b = randn(g, N, K, dtype=dt)
        b = b.t() if b_trans else b.t().contiguous()   # (K, N)
        c = torch.zeros(M, N, dtype=out_dt)
        return dict(a_ptr=a, b_ptr=b, c_ptr=c, M=M, N=N, K=K, sam=a.stride(0), sak=a.stride(1),
                    sbk=b.stride(0), sbn=b.stride(1), scm=c.stride(0), scn=c.stride(1))

    def ref(x):
        if dt == torch.int8:
            return {"c_ptr": (x["a_ptr"].long() @ x["b_ptr"].long()).to(out_dt)}
        return {"c_ptr": (x["a_ptr"].float() @ x["b_ptr"].float()).to(out_dt)}
    BM, BN, BK = blocks
    case(name, dot_kernel, make, (cdiv(M, BM), cdiv(N, BN)), ref,
         kwargs=dict(BM=BM, BN=BN, BK=BK, PRECISION=precision, ACC_TY=acc), atol=atol, interp=interp)


_dot_case("dot_f32_ieee", torch.float32, 32, 32, 64, interp=True, atol=1e-3)
_dot_case("dot_f32_tf32", torch.float32, 16, 16, 32, precision="tf32", atol=5e-2)
_dot_case("dot_f32_ragged_btrans", torch.float32, 20, 24, 40, b_trans=True, atol=1e-3, interp=True)
_dot_case("dot_f16", torch.float16, 32, 16, 32, out_dt=torch.float16, atol=2e-2)
_dot_case("dot_bf16", torch.bfloat16, 16, 32, 32, out_dt=torch.float32, atol=5e-2)
_dot_case("dot_i8", torch.int8, 32, 32, 48, precision="ieee", acc=tl.int32, out_dt=torch.int32)
case("dot_out_f16", dot_out_dtype_kernel,
     lambda g: dict(a_ptr=randn(g, 16, 16, dtype=torch.float16), b_ptr=randn(g, 16, 16, dtype=torch.float16),
                    c_ptr=torch.zeros(16, 16, dtype=torch.float16)), (1,),
     lambda a: {"c_ptr": (a["a_ptr"].float() @ a["b_ptr"].float()).half()}, kwargs=dict(M=16, N=16, K=16),
     atol=2e-2)

# ---------------------------------------------------------------- reductions and scans


def _rowred_make(transposed):
    def make(g):
        M, N = 13, 50
        x = randn(g, N, M).t() if transposed else randn(g, M, N)
        return dict(x_ptr=x, out_ptr=torch.zeros(M), M=M, N=N, sxm=x.stride(0), sxn=x.stride(1))
    return make


_RED_REF = {"sum": lambda x: x.sum(1), "max": lambda x: x.amax(1), "min": lambda x: x.amin(1),
            "argmax": lambda x: x.argmax(1).float(), "argmin": lambda x: x.argmin(1).float(),
            "maxabs": lambda x: x.abs().amax(1)}
for _kind, _rf in _RED_REF.items():
    case(f"reduce_{_kind}", row_reduce_kernel, _rowred_make(_kind == "sum"), (13,),
         (lambda rf: lambda a: {"out_ptr": rf(a["x_ptr"])})(_rf), kwargs=dict(KIND=_kind, BN=64),
         interp=_kind in ("sum", "argmax", "maxabs"))


def _colsum_make(g):
    x = randint(g, -1000, 1000, 40, 23).t()   # (23, 40) transposed
    return dict(x_ptr=x, out_ptr=torch.zeros(40, dtype=torch.int32), M=23, N=40, sxm=x.stride(0), sxn=x.stride(1))


case("reduce_col_int", col_sum_int_kernel, _colsum_make, (cdiv(40, 16),),
     lambda a: {"out_ptr": a["x_ptr"].sum(0).to(torch.int32)}, kwargs=dict(BM=32, BN=16))


def _softmax_make(g):
    x = randn(g, 7, 100)[:, :75]    # sliced rows
    out = torch.zeros(7, 75)
    return dict(x_ptr=x, out_ptr=out, N=75, sx=x.stride(0), so=out.stride(0))


case("softmax", softmax_kernel, _softmax_make, (7,), lambda a: {"out_ptr": torch.softmax(a["x_ptr"], 1)},
     kwargs=dict(BN=128), interp=True)


def _ln_make(g):
    return dict(x_ptr=randn(g, 5, 60), w_ptr=randn(g, 60), b_ptr=randn(g, 60), out_ptr=torch.zeros(5, 60), N=60,
                eps=1e-5)


case("layernorm", layernorm_kernel, _ln_make, (5,),
     lambda a: {"out_ptr": torch.nn.functional.layer_norm(a["x_ptr"], (60,), a["w_ptr"], a["b_ptr"], 1e-5)},
     kwargs=dict(BN=64), atol=1e-3)
for _rev in (False, True):
    case(f"cumsum{'_reverse' if _rev else ''}", cumsum_kernel,
         lambda g: dict(x_ptr=randn(g, 4, 45), out_ptr=torch.zeros(4, 45), N=45), (4,),
         (lambda rev: lambda a: {"out_ptr": a["x_ptr"].flip(1).cumsum(1).flip(1) if rev else a["x_ptr"].cumsum(1)})(
             _rev), kwargs=dict(REVERSE=_rev, BN=64), atol=1e-4, interp=not _rev)


def _scan_ref(x):
    a, b = x["a_ptr"], x["b_ptr"]
    h = torch.zeros_like(b)
    prev = torch.tensor(0.0)
    for i in range(len(b)):
        prev = a[i] * prev + b[i] if i else b[i]
        h[i] = prev
    return {"cummax_ptr": torch.cummax(b, 0).values, "h_ptr": h}


case("scan_custom", scan_custom_kernel,
     lambda g: dict(a_ptr=torch.rand(32, generator=g) * 0.5 + 0.5, b_ptr=randn(g, 32), cummax_ptr=torch.zeros(32),
                    h_ptr=torch.zeros(32)), (1,), _scan_ref, kwargs=dict(N=32), interp=True)

# ---------------------------------------------------------------- atomics


def _hist_make(g):
    return dict(x_ptr=randint(g, 0, 16, 1000), hist_ptr=torch.zeros(16, dtype=torch.int32), n=1000)


case("atomic_histogram", histogram_kernel, _hist_make, (cdiv(1000, 128),),
     lambda a: {"hist_ptr": torch.bincount(a["x_ptr"].long(), minlength=16).to(torch.int32)},
     kwargs=dict(BLOCK=128), interp=True)


def _counter_check(args, outs):
    assert int(args["counter_ptr"][0]) == 37
    assert sorted(args["ticket_ptr"].tolist()) == list(range(37))


case("atomic_counter", counter_kernel,
     lambda g: dict(counter_ptr=torch.zeros(1, dtype=torch.int32), ticket_ptr=torch.full((37,), -1, dtype=torch.int32)),
     (37,), lambda a: {}, check=_counter_check)


def _minmax_make(g):
    n = 300
    return dict(x_ptr=randint(g, -10000, 10000, n), max_ptr=torch.full((8,), -(1 << 30), dtype=torch.int32),
                min_ptr=torch.full((8,), 1 << 30, dtype=torch.int32), fsum_ptr=torch.zeros(8), n=n)


def _minmax_ref(a):
    x = a["x_ptr"]
    slot = torch.arange(len(x)) % 8
    mx = torch.stack([x[slot == s].max() for s in range(8)]).to(torch.int32)
    mn = torch.stack([x[slot == s].min() for s in range(8)]).to(torch.int32)
    fs = torch.stack([x[slot == s].double().sum() for s in range(8)]).float()
    return {"max_ptr": mx, "min_ptr": mn, "fsum_ptr": fs}


case("atomic_minmax", atomic_minmax_kernel, _minmax_make, (cdiv(300, 64),), _minmax_ref,
     kwargs=dict(BLOCK=64, SLOTS=8), atol=1e-4, interp=True)


def _xchg_check(args, outs):
    final = int(args["slot_ptr"][0])
    olds = args["old_ptr"].tolist()
    assert 1 <= final <= 20
    assert sorted(olds + [final]) == sorted([-5] + list(range(1, 21)))


case("atomic_xchg", atomic_xchg_kernel,
     lambda g: dict(slot_ptr=torch.full((1,), -5, dtype=torch.int32), old_ptr=torch.zeros(20, dtype=torch.int32)),
     (20,), lambda a: {}, check=_xchg_check)


def _cas_make(g):
    mem = randint(g, 0, 4, 16)
    return dict(flag_ptr=torch.zeros(1, dtype=torch.int32), won_ptr=torch.full((12,), -1, dtype=torch.int32),
                mem_ptr=mem, cmp_ptr=randint(g, 0, 4, 16), val_ptr=randint(g, 10, 20, 16),
                old_ptr=torch.zeros(16, dtype=torch.int32))


def _cas_ref(a):
    mem, cmp, val = a["mem_ptr"], a["cmp_ptr"], a["val_ptr"]
    return {"mem_ptr": torch.where(mem == cmp, val, mem), "old_ptr": mem.clone()}


def _cas_check(args, outs):
    won = args["won_ptr"].tolist()
    assert sum(won) == 1 and set(won) <= {0, 1}, won
    assert int(args["flag_ptr"][0]) == won.index(1) + 1


case("atomic_cas", atomic_cas_kernel, _cas_make, (12,), _cas_ref, kwargs=dict(N=16), check=_cas_check)

# ---------------------------------------------------------------- control flow, functions, constexprs


def _loop_make(g):
    x = randn(g, 6, 300)[:, 10:260]   # sliced: rows of 250 with stride 300
    return dict(x_ptr=x, out_ptr=torch.zeros(6), N=250, sx=x.stride(0))


case("loop_ptr_increment", loop_ptr_kernel, _loop_make, (6,), lambda a: {"out_ptr": a["x_ptr"].sum(1)},
     kwargs=dict(BLOCK=32), atol=1e-3, interp=True)


def _while_ref(a):
    out = []
    for v in a["x_ptr"].tolist():
        c = 0
        while v > 1:
            v //= 2
            c += 1
        out.append(c)
    return {"out_ptr": torch.tensor(out, dtype=torch.int32)}


case("while_loop", while_kernel,
     lambda g: dict(x_ptr=torch.tensor([0, 1, 2, 3, 1000, 1 << 20, 7, 64], dtype=torch.int32),
                    out_ptr=torch.zeros(8, dtype=torch.int32)), (8,), _while_ref, interp=True)


def _if_ref(a):
    x = a["x_ptr"].reshape(6, 16).clone()
    f = a["flag_ptr"]
    y = torch.where(f[:, None] > 0, x * 2, x - 100)
    y[1::2] += 0.5
    return {"out_ptr": y.reshape(-1)}


case("if_scalar", if_kernel,
     lambda g: dict(x_ptr=randn(g, 96), flag_ptr=torch.tensor([1, 0, -1, 5, 0, 2], dtype=torch.int32),
                    out_ptr=torch.zeros(96)), (6,), _if_ref, kwargs=dict(BLOCK=16), interp=True)


def _devfn_make(g):
    return dict(x_ptr=randn(g, 100), y_ptr=randn(g, 100), out_ptr=torch.zeros(100), out2_ptr=torch.zeros(100), n=100)


case("device_function", device_fn_kernel, _devfn_make, (2,),
     lambda a: {"out_ptr": a["x_ptr"] * 2 + 1 - a["y_ptr"], "out2_ptr": torch.maximum(a["x_ptr"], a["y_ptr"])},
     kwargs=dict(BLOCK=64), interp=True)


def _act_make(has_bias):
    def make(g):
        return dict(x_ptr=randn(g, 90), bias_ptr=randn(g, 90) if has_bias else None, out_ptr=torch.zeros(90), n=90)
    return make


def _act_ref(act, has_bias):
    def ref(a):
        x = a["x_ptr"] + (a["bias_ptr"] if has_bias else 0)
        x = torch.relu(x) if act == "relu" else (torch.nn.functional.gelu(x) if act == "gelu" else x)
        return {"out_ptr": x}
    return ref


for _act, _hb in (("relu", True), ("gelu", False), ("none", True)):
    case(f"constexpr_{_act}_{'bias' if _hb else 'nobias'}", act_bias_kernel, _act_make(_hb), (cdiv(90, 32),),
         _act_ref(_act, _hb), kwargs=dict(ACT=_act, HAS_BIAS=_hb, BLOCK=32), interp=_act == "relu")

case("device_assert_passes", device_assert_kernel,
     lambda g: dict(x_ptr=randn(g, 50).abs(), out_ptr=torch.zeros(50), n=50), (2,),
     lambda a: {"out_ptr": a["x_ptr"].sqrt()}, kwargs=dict(BLOCK=32, debug=True))

# ---------------------------------------------------------------- block pointers, tensor descriptors


def _bp_make(g):
    x = randn(g, 40, 50)[:, 5:42]    # (40, 37) sliced view
    out = torch.zeros(40, 37)
    return dict(x_ptr=x, out_ptr=out, M=40, N=37, sxm=x.stride(0), sxn=x.stride(1), som=out.stride(0),
                son=out.stride(1))


case("block_ptr_copy", block_ptr_copy_kernel, _bp_make, (cdiv(40, 16), cdiv(37, 16)),
     lambda a: {"out_ptr": a["x_ptr"] + 1}, kwargs=dict(BM=16, BN=16), interp=True)
case("block_ptr_advance", block_ptr_rowsum_kernel,
     lambda g: dict(x_ptr=randn(g, 20, 70), out_ptr=torch.zeros(20), M=20, N=70), (cdiv(20, 8),),
     lambda a: {"out_ptr": a["x_ptr"].sum(1)}, kwargs=dict(BM=8, BN=32), atol=1e-4, interp=True)
case("tensor_descriptor", tensor_desc_kernel,
     lambda g: dict(x_ptr=randn(g, 32, 48), out_ptr=torch.zeros(32, 48), M=32, N=48), (2, 3),
     lambda a: {"out_ptr": a["x_ptr"] * 2}, kwargs=dict(BM=16, BN=16))

# ---------------------------------------------------------------- integers of every width, scalars, gathers

case("int64_arith", int64_kernel,
     lambda g: dict(x_ptr=torch.randint(-(1 << 40), 1 << 40, (100,), generator=g), out_ptr=torch.zeros(100,
                    dtype=torch.int64), n=100), (2,),
     lambda a: {"out_ptr": a["x_ptr"] * 1000003 + (a["x_ptr"] >> 7) - (1 << 40)}, kwargs=dict(BLOCK=64), interp=True)
case("int8_wrap", int8_wrap_kernel,
     lambda g: dict(a_ptr=randint(g, -128, 128, 70, dtype=torch.int8), b_ptr=randint(g, -128, 128, 70,
                    dtype=torch.int8), out_ptr=torch.zeros(70, dtype=torch.int8), n=70), (2,),
     lambda a: {"out_ptr": a["a_ptr"] + a["b_ptr"]}, kwargs=dict(BLOCK=64), interp=True)
case("scalar_args", scalar_arg_kernel, lambda g: dict(out_ptr=torch.zeros(50), a=7, b=-3, f=0.5, n=50), (2,),
     lambda a: {"out_ptr": torch.arange(50).float() * 0.5 - 21.0}, kwargs=dict(BLOCK=32), interp=True)
case("gather_indexed", gather_index_kernel,
     lambda g: dict(x_ptr=randn(g, 64), idx_ptr=randint(g, 0, 64, 100), out_ptr=torch.zeros(100), n=100), (2,),
     lambda a: {"out_ptr": a["x_ptr"][a["idx_ptr"].long()]}, kwargs=dict(BLOCK=64), interp=True)


# ============================================================================ second batch: rarer paths


@triton.jit
def unsigned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    u = tl.load(x_ptr + offs, mask=m).to(tl.uint32, bitcast=True)
    base = out_ptr + offs * 5
    tl.store(base + 0, (u >> 28).to(tl.int32, bitcast=True), mask=m)
    tl.store(base + 1, (u // 7).to(tl.int32, bitcast=True), mask=m)
    tl.store(base + 2, (u % 1000).to(tl.int32, bitcast=True), mask=m)
    tl.store(base + 3, (u < 5).to(tl.int32), mask=m)
    tl.store(base + 4, tl.umulhi(u, 0x9E3779B9).to(tl.int32, bitcast=True), mask=m)


@triton.jit
def uitofp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    u = tl.load(x_ptr + offs, mask=m).to(tl.uint32, bitcast=True)
    tl.store(out_ptr + offs, u.to(tl.float32), mask=m)


@triton.jit
def bool_kernel(a_ptr, b_ptr, out_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0)
    b = tl.load(b_ptr + offs, mask=m, other=0)
    r = (a != 0) ^ (b > 0.5)
    tl.store(out_ptr + offs, r, mask=m)
    tl.atomic_add(cnt_ptr, tl.sum(r.to(tl.int32), axis=0))


@triton.jit
def scalar_math_kernel(x_ptr, out_ptr):
    s = tl.load(x_ptr)
    i = tl.load(x_ptr + 1).to(tl.int32)
    tl.store(out_ptr + 0, tl.exp(s))
    tl.store(out_ptr + 1, s / 3.0)
    tl.store(out_ptr + 2, tl.sqrt(tl.abs(s)))
    tl.store(out_ptr + 3, (i // 4).to(tl.float32))
    tl.store(out_ptr + 4, (i % 4).to(tl.float32))
    tl.store(out_ptr + 5, tl.maximum(s, 0.25))
    tl.store(out_ptr + 6, libdevice.tanh(s))
    tl.store(out_ptr + 7, tl.where(s > 0, s, -s * 2.0))
    tl.store(out_ptr + 8, (-i >> 1).to(tl.float32))
    tl.store(out_ptr + 9, tl.floor(s * 3.0))


@triton.jit
def half_math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.exp(x.to(tl.float32)).to(x.dtype) + tl.abs(x) * 0.5
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def float_mod_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1.0)
    b = tl.load(b_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs * 3 + 0, a % b, mask=m)
    tl.store(out_ptr + offs * 3 + 1, tl.floor(a / b), mask=m)
    tl.store(out_ptr + offs * 3 + 2, tl.cdiv(tl.abs(a).to(tl.int32) + 1, 3).to(tl.float32), mask=m)


@triton.jit
def reduce_2d_all_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + 0, tl.sum(x))
    tl.store(out_ptr + 1, tl.max(x))
    tl.store(out_ptr + 2, tl.sum(tl.sum(x, axis=1) * 2.0, axis=0))
    tl.store(out_ptr + 3, tl.min(tl.max(x, axis=0), axis=0))


@triton.jit
def argmax_ties_kernel(x_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    v, i = tl.max(x, axis=0, return_indices=True)
    tl.store(out_ptr + row * 3 + 0, v)
    tl.store(out_ptr + row * 3 + 1, i)
    tl.store(out_ptr + row * 3 + 2, tl.argmin(x, axis=0))


@triton.jit
def half_reduce_kernel(x_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    tl.store(out_ptr + row * 2, tl.sum(x, axis=0).to(tl.float32))
    tl.store(out_ptr + row * 2 + 1, tl.max(x, axis=0).to(tl.float32))


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    ib = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + ib * M * K + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + ib * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    cp = c_ptr + ib * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    c = tl.load(cp)
    tl.store(cp, tl.dot(a, b, c))


@triton.jit
def histogram_op_kernel(x_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))


@triton.jit
def gather_op_kernel(x_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r)
    idx = tl.load(idx_ptr + r)
    tl.store(out_ptr + r, tl.gather(x, idx, axis=1))


@triton.jit
def cat_interleave_kernel(a_ptr, b_ptr, cat_ptr, il_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    s = tl.sum(tl.cat(a, b, can_reorder=True), axis=0)
    tl.store(cat_ptr, s)
    tl.store(il_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))


@triton.jit
def flip_sort_kernel(x_ptr, flip_ptr, sort_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(flip_ptr + r, tl.flip(x, 0))
    tl.store(sort_ptr + r, tl.sort(x, 0))


@triton.jit
def cumprod_kernel(x_ptr, out_ptr, rev_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(out_ptr + r, tl.cumprod(x, 0))
    tl.store(rev_ptr + r, tl.associative_scan(x, 0, _max_combine, reverse=True))


@triton.jit
def rand_kernel(out_ptr, iout_ptr, seed, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offs, tl.rand(seed, offs))
    tl.store(iout_ptr + offs, tl.randint(seed, offs))


@triton.jit
def nested_loop_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, BC: tl.constexpr):
    # nested loops, a static_range, and a tensor-valued scf.if
    total = tl.zeros((BC,), dtype=tl.float32)
    for i in range(R):
        for j in tl.static_range(0, C, BC):
            v = tl.load(x_ptr + i * C + j + tl.arange(0, BC))
            if i % 2 == 0:
                w = v
            else:
                w = -v
            total += w
    tl.store(out_ptr + tl.arange(0, BC), total)


@triton.jit
def while_tensor_kernel(x_ptr, out_ptr, N: tl.constexpr):
    # loop-carried tile in scf.while: halve until every element is below 1
    x = tl.load(x_ptr + tl.arange(0, N))
    it = 0
    while tl.max(x, axis=0) >= 1.0:
        x = x * 0.5
        it += 1
    tl.store(out_ptr + tl.arange(0, N), x + it)


@triton.jit
def constants_kernel(out_ptr, iout_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    big = tl.full((N,), 1 << 40, dtype=tl.int64)
    tl.store(iout_ptr + r, big + r)
    x = tl.where(r % 3 == 0, float("nan"), tl.where(r % 3 == 1, float("inf"), -float("inf")))
    tl.store(out_ptr + r, x)
    h = tl.full((N,), 0.333, dtype=tl.float16) * 2.0
    tl.store(out_ptr + N + r, h.to(tl.float32))
    bf = tl.full((N,), -1.5, dtype=tl.bfloat16)
    tl.store(out_ptr + 2 * N + r, bf.to(tl.float32))


@triton.jit
def fp64_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, (x * 1.0000001).to(tl.float32), mask=m)


def _unsigned_ref(a):
    u = a["x_ptr"].long() & 0xFFFFFFFF
    cols = [u >> 28, u // 7, u % 1000, (u < 5).long(), (u * 0x9E3779B9) >> 32]
    out = torch.stack(cols, 1) & 0xFFFFFFFF
    return {"out_ptr": torch.where(out >= 1 << 31, out - (1 << 32), out).to(torch.int32)}


case("unsigned_ops", unsigned_kernel,
     lambda g: dict(x_ptr=torch.randint(-(1 << 31), (1 << 31) - 1, (100,), generator=g).to(torch.int32),
                    out_ptr=torch.zeros(100, 5, dtype=torch.int32), n=100), (2,), _unsigned_ref, kwargs=dict(BLOCK=64),
     interp=True)
case("uitofp", uitofp_kernel,
     lambda g: dict(x_ptr=torch.randint(-(1 << 31), (1 << 31) - 1, (100,), generator=g).to(torch.int32),
                    out_ptr=torch.zeros(100), n=100), (2,),
     lambda a: {"out_ptr": (a["x_ptr"].long() & 0xFFFFFFFF).float()}, kwargs=dict(BLOCK=64))
case("bool_io", bool_kernel,
     lambda g: dict(a_ptr=torch.rand(90, generator=g) > 0.5, b_ptr=torch.rand(90, generator=g),
                    out_ptr=torch.zeros(90, dtype=torch.bool), cnt_ptr=torch.zeros(1, dtype=torch.int32), n=90), (2,),
     lambda a: {"out_ptr": a["a_ptr"] ^ (a["b_ptr"] > 0.5),
                "cnt_ptr": (a["a_ptr"] ^ (a["b_ptr"] > 0.5)).sum().reshape(1).to(torch.int32)},
     kwargs=dict(BLOCK=64), interp=True)


def _scalar_math_ref(a):
    s, i = a["x_ptr"][0], int(a["x_ptr"][1])
    q = int(i / 4)
    vals = [torch.exp(s), s / 3, s.abs().sqrt(), q, i - q * 4, max(s, torch.tensor(0.25)), torch.tanh(s),
            s if s > 0 else -s * 2, (-i) >> 1, torch.floor(s * 3)]
    return {"out_ptr": torch.tensor([float(v) for v in vals])}


case("scalar_math", scalar_math_kernel, lambda g: dict(x_ptr=torch.tensor([-0.7, -13.0]), out_ptr=torch.zeros(10)),
     (1,), _scalar_math_ref)
case("scalar_math_pos", scalar_math_kernel, lambda g: dict(x_ptr=torch.tensor([1.3, 13.0]), out_ptr=torch.zeros(10)),
     (1,), _scalar_math_ref)
for _dt, _nm in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    case(f"half_math_{_nm}", half_math_kernel,
         (lambda dt: lambda g: dict(x_ptr=randn(g, 70, dtype=dt), out_ptr=torch.zeros(70, dtype=dt), n=70))(_dt),
         (2,), lambda a: {"out_ptr": (torch.exp(a["x_ptr"].float()).to(a["x_ptr"].dtype) + a["x_ptr"].abs() * 0.5)},
         kwargs=dict(BLOCK=64), atol=2e-2)


def _fmod_ref(x):
    a, b = x["a_ptr"], x["b_ptr"]
    c = torch.div(a.abs().to(torch.int32) + 1 + 2, 3, rounding_mode="floor").float()
    return {"out_ptr": torch.stack([torch.fmod(a, b), torch.floor(a / b), c], 1)}  # frem: C fmod


case("float_mod_floordiv", float_mod_kernel,
     lambda g: dict(a_ptr=randn(g, 80) * 10, b_ptr=randn(g, 80) * 3, out_ptr=torch.zeros(80, 3), n=80), (2,),
     _fmod_ref, kwargs=dict(BLOCK=64), atol=1e-3, interp=True)
case("reduce_2d_all", reduce_2d_all_kernel, lambda g: dict(x_ptr=randn(g, 8, 16), out_ptr=torch.zeros(4)), (1,),
     lambda a: {"out_ptr": torch.stack([a["x_ptr"].sum(), a["x_ptr"].max(), a["x_ptr"].sum() * 2,
                                        a["x_ptr"].amax(0).min()])}, kwargs=dict(M=8, N=16), atol=1e-4, interp=True)


def _ties_ref(a):
    x = a["x_ptr"].reshape(6, 32)
    out = torch.zeros(6, 3, dtype=torch.int32)
    for r in range(6):
        row = x[r].tolist()
        out[r, 0] = max(row)
        out[r, 1] = row.index(max(row))
        out[r, 2] = row.index(min(row))
    return {"out_ptr": out.reshape(-1)}


case("argmax_ties", argmax_ties_kernel,
     lambda g: dict(x_ptr=randint(g, 0, 4, 6 * 32), out_ptr=torch.zeros(18, dtype=torch.int32)), (6,), _ties_ref,
     kwargs=dict(N=32), interp=True)
case("half_reduce", half_reduce_kernel,
     lambda g: dict(x_ptr=randn(g, 3, 64, dtype=torch.float16), out_ptr=torch.zeros(6)), (3,),
     lambda a: {"out_ptr": torch.stack([a["x_ptr"].float().sum(1), a["x_ptr"].float().amax(1)], 1).reshape(-1)},
     kwargs=dict(N=64), atol=2e-2)
case("dot_batched_acc", batched_dot_kernel,
     lambda g: dict(a_ptr=randn(g, 2, 16, 16), b_ptr=randn(g, 2, 16, 16), c_ptr=randn(g, 2, 16, 16)), (1,),
     lambda a: {"c_ptr": torch.bmm(a["a_ptr"], a["b_ptr"]) + a["c_ptr"]}, kwargs=dict(B=2, M=16, N=16, K=16),
     atol=1e-3, interp=True)
case("histogram_op", histogram_op_kernel,
     lambda g: dict(x_ptr=randint(g, 0, 16, 128), out_ptr=torch.zeros(16, dtype=torch.int32)), (1,),
     lambda a: {"out_ptr": torch.bincount(a["x_ptr"].long(), minlength=16).to(torch.int32)},
     kwargs=dict(N=128, BINS=16), interp=True)
case("gather_op", gather_op_kernel,
     lambda g: dict(x_ptr=randn(g, 4, 16), idx_ptr=randint(g, 0, 16, 4, 16), out_ptr=torch.zeros(4, 16)), (1,),
     lambda a: {"out_ptr": torch.gather(a["x_ptr"], 1, a["idx_ptr"].long())}, kwargs=dict(M=4, N=16), interp=True)
case("cat_interleave", cat_interleave_kernel,
     lambda g: dict(a_ptr=randn(g, 16), b_ptr=randn(g, 16), cat_ptr=torch.zeros(1), il_ptr=torch.zeros(32)), (1,),
     lambda a: {"cat_ptr": (a["a_ptr"].sum() + a["b_ptr"].sum()).reshape(1),
                "il_ptr": torch.stack([a["a_ptr"], a["b_ptr"]], 1).reshape(-1)}, kwargs=dict(N=16), interp=True)
case("flip_sort", flip_sort_kernel,
     lambda g: dict(x_ptr=randn(g, 32), flip_ptr=torch.zeros(32), sort_ptr=torch.zeros(32)), (1,),
     lambda a: {"flip_ptr": a["x_ptr"].flip(0), "sort_ptr": a["x_ptr"].sort().values}, kwargs=dict(N=32), interp=True)
case("cumprod_revscan", cumprod_kernel,
     lambda g: dict(x_ptr=torch.rand(16, generator=g) + 0.5, out_ptr=torch.zeros(16), rev_ptr=torch.zeros(16)), (1,),
     lambda a: {"out_ptr": a["x_ptr"].cumprod(0), "rev_ptr": a["x_ptr"].flip(0).cummax(0).values.flip(0)},
     kwargs=dict(N=16), atol=1e-4, interp=True)


def _rand_check(args, outs):
    r = args["out_ptr"]
    assert bool(((r >= 0) & (r < 1)).all()) and 0.3 < float(r.mean()) < 0.7
    assert len(set(args["iout_ptr"].tolist())) > 120


case("philox_rand", rand_kernel,
     lambda g: dict(out_ptr=torch.zeros(128), iout_ptr=torch.zeros(128, dtype=torch.int32), seed=1234), (2,),
     lambda a: {}, kwargs=dict(N=64), check=_rand_check, interp=True)


def _nested_ref(a):
    x = a["x_ptr"].reshape(3, 4, 16)
    sign = torch.tensor([1.0, -1.0, 1.0])[:, None, None]
    return {"out_ptr": (x * sign).sum((0, 1))}


case("nested_loops", nested_loop_kernel, lambda g: dict(x_ptr=randn(g, 3 * 64), out_ptr=torch.zeros(16)), (1,),
     _nested_ref, kwargs=dict(R=3, C=64, BC=16), atol=1e-4, interp=True)


def _while_t_ref(a):
    x = a["x_ptr"].clone()
    it = 0
    while float(x.max()) >= 1.0:
        x = x * 0.5
        it += 1
    return {"out_ptr": x + it}


case("while_tensor", while_tensor_kernel, lambda g: dict(x_ptr=randn(g, 16).abs() * 20, out_ptr=torch.zeros(16)),
     (1,), _while_t_ref, kwargs=dict(N=16), interp=True)


def _const_ref(a):
    r = torch.arange(16)
    x = torch.where(r % 3 == 0, float("nan"), torch.where(r % 3 == 1, float("inf"), -float("inf")))
    h = (torch.full((16,), 0.333, dtype=torch.float16) * 2).float()
    return {"iout_ptr": (1 << 40) + r, "out_ptr": torch.cat([x, h, torch.full((16,), -1.5)])}


case("constants", constants_kernel,
     lambda g: dict(out_ptr=torch.zeros(48), iout_ptr=torch.zeros(16, dtype=torch.int64)), (1,), _const_ref,
     kwargs=dict(N=16))  # the interpreter has no bf16 constants
case("fp64_to_fp32", fp64_kernel,
     lambda g: dict(x_ptr=randn(g, 50).double(), out_ptr=torch.zeros(50), n=50), (1,),
     lambda a: {"out_ptr": (a["x_ptr"] * 1.0000001).float()}, kwargs=dict(BLOCK=64))



@triton.jit
def inductor_pointwise_kernel(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # the shape of an Inductor pointwise kernel: flat index split by // and %, eviction hints
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex % 24
    x1 = xindex // 24
    tmp0 = tl.load(in_ptr0 + (x0 + 24 * x1), xmask, eviction_policy="evict_last")
    tmp1 = tl.load(in_ptr1 + x0, xmask, eviction_policy="evict_last")
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0, tl.int32)
    tmp4 = tl.maximum(tmp3.to(tl.float32), tmp2)
    tmp5 = libdevice.tanh(tmp4) * 0.5 + tl.where(tmp2 != tmp2, 0.0, 1.0)
    tl.store(out_ptr0 + (x1 + 10 * x0), tmp5, xmask)   # transposed store


@triton.jit
def inductor_reduction_kernel(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    # looped reduction with r0_ blocks, as Inductor emits for long rows
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp0 = tl.load(in_ptr0 + (r0_index + r0_numel * xindex), r0_mask & xmask, eviction_policy="evict_first",
                       other=float("-inf"))
        _tmp2 = tl.where(r0_mask & xmask, tl.maximum(_tmp2, tmp0), _tmp2)
    tmp2 = tl.max(_tmp2, 1)[:, None]
    tl.store(out_ptr0 + xindex, tmp2, xmask)


case("inductor_pointwise", inductor_pointwise_kernel,
     lambda g: dict(in_ptr0=randn(g, 240), in_ptr1=randn(g, 24), out_ptr0=torch.zeros(240), xnumel=240), (4,),
     lambda a: {"out_ptr0": (torch.tanh(torch.relu(a["in_ptr0"].reshape(10, 24) + a["in_ptr1"])) * 0.5 + 1.0)
                .t().reshape(-1)}, kwargs=dict(XBLOCK=64))
case("inductor_reduction", inductor_reduction_kernel,
     lambda g: dict(in_ptr0=randn(g, 9, 100), out_ptr0=torch.zeros(9), xnumel=9, r0_numel=100), (3,),
     lambda a: {"out_ptr0": a["in_ptr0"].amax(1)}, kwargs=dict(XBLOCK=4, R0_BLOCK=32), interp=True)

@triton.jit
def unsigned64_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    u = tl.load(x_ptr + r).to(tl.uint64, bitcast=True)
    v = tl.load(y_ptr + r).to(tl.uint64, bitcast=True)
    tl.store(out_ptr + r * 3 + 0, (u >> 60).to(tl.int64, bitcast=True))
    tl.store(out_ptr + r * 3 + 1, (u < v).to(tl.int64))
    tl.store(out_ptr + r * 3 + 2, tl.maximum(u, v).to(tl.int64, bitcast=True))


def _u64_ref(a):
    x, y = a["x_ptr"], a["y_ptr"]
    ux = [v & ((1 << 64) - 1) for v in x.tolist()]
    uy = [v & ((1 << 64) - 1) for v in y.tolist()]
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    rows = [[p >> 60, int(p < q), signed(max(p, q))] for p, q in zip(ux, uy)]
    return {"out_ptr": torch.tensor(rows, dtype=torch.int64).reshape(-1)}


case("unsigned_64", unsigned64_kernel,
     lambda g: dict(x_ptr=torch.randint(-(1 << 62), 1 << 62, (16,), generator=g) * 2,
                    y_ptr=torch.randint(-(1 << 62), 1 << 62, (16,), generator=g) * 2,
                    out_ptr=torch.zeros(48, dtype=torch.int64)), (1,), _u64_ref, kwargs=dict(N=16), interp=True)

# block_ptr_copy / block_ptr_advance / tensor_descriptor pin the mask analysis of `idx >= 0`
# lower bounds (block pointers reach the backend as pointer tiles with two-sided masks).

DIFF_CASES = [c.name for c in CASES if c.interp]
