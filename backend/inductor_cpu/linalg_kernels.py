"""Dense factorisations and triangular solves of small matrices as Triton kernels: what the
`linalg_kernels` switch (linalg.py) lowers torch.linalg's LU, Cholesky and triangular-solve
families to.

One program factors (or solves) one matrix of the batch, held whole in a PE's local memory as
one [BM, BN] tile (at most LIMIT x LIMIT: 16 KB in FP32). Each elimination step is tile-wide
SIMD work: a row or column is taken out of the tile by a masked reduction (the reduction
engine), the pivot search is an argmax, row swaps and rank-1 updates are selects. The
algorithms are LAPACK's unblocked ones (getf2, potf2, trsm's substitution), in the same order
of operations per element, so results agree with LAPACK's to rounding:

- `lu_factor_kernel`: partial pivoting, the first largest |a_ik| (i >= k) as the pivot (LAPACK's
  i?amax picks the first of equal maxima, tl.argmax too); pivots 1-based as getrf's; `info` is the
  1-based index of the first zero pivot, whose column is then left unscaled (getf2); the
  permutation (row i of P^T A is row perm[i] of A) is kept along the way;
- `cholesky_kernel`: the lower factor L of A = L L^T, reading A's lower triangle only; `info` is
  the 1-based order of the first leading minor that is not positive (LAPACK stops there; the
  factor's later columns are then not meaningful, as LAPACK's are not);
- `trsm_kernel`: T X = B by substitution, T lower or upper, unit diagonal or not, reading only
  T's triangle; B's columns are split over programs (BR at a time).

The matrices are read through strides, so a transposed or conjugate-free adjoint operand is a
view, not a copy.
"""
from __future__ import annotations

import triton
import triton.language as tl

LIMIT = 64


@triton.jit
def _tile(ptr, b, s_b, s_m, s_n, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Matrix b of a strided batch as one [BM, BN] tile (zeros outside M x N), with its row and
    column ranges."""
    ri = tl.arange(0, BM)
    ci = tl.arange(0, BN)
    a = tl.load(ptr + b * s_b + ri[:, None] * s_m + ci[None, :] * s_n, mask=(ri[:, None] < M) & (ci[None, :] < N),
                other=0.0)
    return a, ri, ci


@triton.jit
def lu_factor_kernel(a_ptr, lu_ptr, piv_ptr, perm_ptr, info_ptr, M, N, K,
                     s_ab, s_am, s_an, s_lb, s_lm, s_ln,
                     BM: tl.constexpr, BN: tl.constexpr):
    b = tl.program_id(0)
    a, ri, ci = _tile(a_ptr, b, s_ab, s_am, s_an, M, N, BM, BN)
    rows = ri[:, None]
    cols = ci[None, :]
    inside = (rows < M) & (cols < N)
    piv = tl.zeros([BM], dtype=tl.int32)
    perm = ri
    info = tl.sum(tl.zeros([BM], dtype=tl.int32), axis=0)
    for k in range(0, K):
        col = tl.sum(tl.where(cols == k, a, 0.0), axis=1)
        p = tl.argmax(tl.where((ri >= k) & (ri < M), tl.abs(col), -1.0), axis=0)
        row_k = tl.sum(tl.where(rows == k, a, 0.0), axis=0)
        row_p = tl.sum(tl.where(rows == p, a, 0.0), axis=0)
        a = tl.where(rows == k, row_p[None, :], tl.where(rows == p, row_k[None, :], a))
        perm_k = tl.sum(tl.where(ri == k, perm, 0), axis=0)
        perm_p = tl.sum(tl.where(ri == p, perm, 0), axis=0)
        perm = tl.where(ri == k, perm_p, tl.where(ri == p, perm_k, perm))
        piv = tl.where(ri == k, p + 1, piv)
        pivot = tl.sum(tl.where(ci == k, row_p, 0.0), axis=0)
        info = tl.where((pivot == 0.0) & (info == 0), k + 1, info)
        col = tl.sum(tl.where(cols == k, a, 0.0), axis=1)
        low = tl.where(ri > k, tl.where(pivot != 0.0, col / pivot, col), 0.0)
        a = tl.where((rows > k) & (cols == k), low[:, None], a)
        a = a - tl.where((rows > k) & (cols > k), low[:, None] * row_p[None, :], 0.0)
    tl.store(lu_ptr + b * s_lb + rows * s_lm + cols * s_ln, a, mask=inside)
    tl.store(piv_ptr + b * K + ri, piv, mask=ri < K)
    tl.store(perm_ptr + b * M + ri, perm, mask=ri < M)
    tl.store(info_ptr + b, info)


@triton.jit
def cholesky_kernel(a_ptr, l_ptr, info_ptr, N, s_ab, s_am, s_an, s_lb, s_lm, s_ln, BN: tl.constexpr):
    b = tl.program_id(0)
    ri = tl.arange(0, BN)
    rows = ri[:, None]
    cols = ri[None, :]
    lower = (rows < N) & (cols <= rows)
    a = tl.load(a_ptr + b * s_ab + rows * s_am + cols * s_an, mask=lower, other=0.0)
    info = tl.sum(tl.zeros([BN], dtype=tl.int32), axis=0)
    for k in range(0, N):
        col = tl.sum(tl.where(cols == k, a, 0.0), axis=1)
        d = tl.sum(tl.where(ri == k, col, 0.0), axis=0)
        info = tl.where((~(d > 0.0)) & (info == 0), k + 1, info)
        s = tl.sqrt(d)
        low = tl.where(ri > k, col / s, tl.where(ri == k, s, 0.0))
        a = tl.where(cols == k, low[:, None], a)
        a = a - tl.where((rows > k) & (cols > k), low[:, None] * low[None, :], 0.0)
    a = tl.where(cols <= rows, a, 0.0)
    tl.store(l_ptr + b * s_lb + rows * s_lm + cols * s_ln, a, mask=(rows < N) & (cols < N))
    tl.store(info_ptr + b, info)


@triton.jit
def trsm_kernel(t_ptr, b_ptr, x_ptr, N, R, s_tb, s_tm, s_tn, s_bb, s_bm, s_bn, s_xb, s_xm, s_xn,
                LOWER: tl.constexpr, UNIT: tl.constexpr, BN: tl.constexpr, BR: tl.constexpr):
    bid = tl.program_id(0)
    r0 = tl.program_id(1) * BR
    ni = tl.arange(0, BN)
    rj = r0 + tl.arange(0, BR)
    rows = ni[:, None]
    cols = ni[None, :]
    rhs = rj[None, :]
    t = tl.load(t_ptr + bid * s_tb + rows * s_tm + cols * s_tn, mask=(rows < N) & (cols < N), other=0.0)
    rhs_in = (rows < N) & (rhs < R)
    bm = tl.load(b_ptr + bid * s_bb + rows * s_bm + rhs * s_bn, mask=rhs_in, other=0.0)
    x = tl.zeros([BN, BR], dtype=tl.float32)
    for i in range(0, N):
        if LOWER:
            k = i
        else:
            k = N - 1 - i
        t_row = tl.sum(tl.where(rows == k, t, 0.0), axis=0)
        if LOWER:
            known = ni < k
        else:
            known = (ni > k) & (ni < N)
        acc = tl.sum(tl.where(known[:, None], t_row[:, None] * x, 0.0), axis=0)
        rest = tl.sum(tl.where(rows == k, bm, 0.0), axis=0) - acc
        if UNIT:
            xk = rest
        else:
            xk = rest / tl.sum(tl.where(ni == k, t_row, 0.0), axis=0)
        x = tl.where(rows == k, xk[None, :], x)
    tl.store(x_ptr + bid * s_xb + rows * s_xm + rhs * s_xn, x, mask=rhs_in)


@triton.jit
def pivots_to_perm_kernel(piv_ptr, perm_ptr, M, K, BM: tl.constexpr):
    """getrf's pivots (row k swapped with row piv[k] - 1, in order) as the permutation perm:
    row i of P^T A is row perm[i] of A."""
    b = tl.program_id(0)
    ri = tl.arange(0, BM)
    piv = tl.load(piv_ptr + b * K + ri, mask=ri < K, other=1) - 1
    perm = ri
    for k in range(0, K):
        p = tl.sum(tl.where(ri == k, piv, 0), axis=0)
        perm_k = tl.sum(tl.where(ri == k, perm, 0), axis=0)
        perm_p = tl.sum(tl.where(ri == p, perm, 0), axis=0)
        perm = tl.where(ri == k, perm_p, tl.where(ri == p, perm_k, perm))
    tl.store(perm_ptr + b * M + ri, perm, mask=ri < M)


@triton.jit
def geqrf_kernel(a_ptr, r_ptr, tau_ptr, M, N, K, s_ab, s_am, s_an, s_rb, s_rm, s_rn,
                 BM: tl.constexpr, BN: tl.constexpr):
    """Householder QR (LAPACK geqr2 / larfg): R on and above the diagonal, each reflector's v
    (v[k] = 1 implied) below it, tau[k]; H_k = I - tau_k v v^T, beta = -sign(alpha) ||x||."""
    b = tl.program_id(0)
    a, ri, ci = _tile(a_ptr, b, s_ab, s_am, s_an, M, N, BM, BN)
    rows = ri[:, None]
    cols = ci[None, :]
    inside = (rows < M) & (cols < N)
    tau = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, K):
        col = tl.sum(tl.where(cols == k, a, 0.0), axis=1)
        alpha = tl.sum(tl.where(ri == k, col, 0.0), axis=0)
        x = tl.where((ri > k) & (ri < M), col, 0.0)
        xnorm2 = tl.sum(x * x, axis=0)
        norm = tl.sqrt(alpha * alpha + xnorm2)
        beta = tl.where(alpha >= 0.0, -norm, norm)
        keep = xnorm2 == 0.0
        tau_k = tl.where(keep, 0.0, (beta - alpha) / beta)
        v = tl.where(ri == k, 1.0, tl.where(keep, 0.0, x / (alpha - beta)))
        w = tl.sum(v[:, None] * a, axis=0)
        a = a - tl.where(cols > k, tau_k * v[:, None] * w[None, :], 0.0)
        a = tl.where((cols == k) & (rows == k), tl.where(keep, alpha, beta), a)
        a = tl.where((cols == k) & (rows > k), v[:, None], a)
        tau = tl.where(ri == k, tau_k, tau)
    tl.store(r_ptr + b * s_rb + rows * s_rm + cols * s_rn, a, mask=inside)
    tl.store(tau_ptr + b * K + ri, tau, mask=ri < K)


@triton.jit
def orgqr_kernel(a_ptr, tau_ptr, q_ptr, M, N, K, s_ab, s_am, s_an, s_qb, s_qm, s_qn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Q = H_0 H_1 ... H_{K-1} I[:, :N] (LAPACK org2r) from the reflectors below a's diagonal
    (its first K columns) and tau; the reflectors are applied last to first."""
    b = tl.program_id(0)
    ri = tl.arange(0, BM)
    ci = tl.arange(0, BN)
    ki = tl.arange(0, BK)
    rows = ri[:, None]
    cols = ci[None, :]
    refl = tl.load(a_ptr + b * s_ab + rows * s_am + ki[None, :] * s_an, mask=(rows < M) & (ki[None, :] < K), other=0.0)
    taus = tl.load(tau_ptr + b * K + ki, mask=ki < K, other=0.0)
    q = tl.where((rows == cols) & (rows < M) & (cols < N), 1.0, 0.0)
    for i in range(0, K):
        k = K - 1 - i
        col = tl.sum(tl.where(ki[None, :] == k, refl, 0.0), axis=1)
        v = tl.where(ri == k, 1.0, tl.where(ri > k, col, 0.0))
        tau_k = tl.sum(tl.where(ki == k, taus, 0.0), axis=0)
        w = tl.sum(v[:, None] * q, axis=0)
        q = q - tau_k * v[:, None] * w[None, :]
    tl.store(q_ptr + b * s_qb + rows * s_qm + cols * s_qn, q, mask=(rows < M) & (cols < N))


# sweeps of the Jacobi kernels: each sweep visits every pair once; for the sizes they take
# (EIG_LIMIT) the off-diagonal mass falls quadratically and is below FP32 rounding long before
SWEEPS = tl.constexpr(10)
EIG_LIMIT = 16


@triton.jit
def svdvals_kernel(a_ptr, s_ptr, ar_ptr, v_ptr, M, N, s_ab, s_am, s_an, VECS: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr):
    """Singular values by one-sided Jacobi (Hestenes): plane rotations of column pairs until the
    columns are orthogonal; the values are the column norms (unsorted). Takes the matrix with
    N <= M (a wide matrix's transpose, as a view). VECS: also the rotated matrix A V (column j
    is s_j u_j) and the rotations' product V, both row-major (B, M, N) and (B, N, N)."""
    b = tl.program_id(0)
    a, ri, ci = _tile(a_ptr, b, s_ab, s_am, s_an, M, N, BM, BN)
    rows = ri[:, None]
    cols = ci[None, :]
    vi = ci[:, None]
    v = tl.where((vi == cols) & (vi < N), 1.0, 0.0)
    for step in range(0, SWEEPS * N * N):
        p = (step // N) % N
        q = step % N
        col_p = tl.sum(tl.where(cols == p, a, 0.0), axis=1)
        col_q = tl.sum(tl.where(cols == q, a, 0.0), axis=1)
        alpha = tl.sum(col_p * col_p, axis=0)
        beta = tl.sum(col_q * col_q, axis=0)
        gamma = tl.sum(col_p * col_q, axis=0)
        turn = (q > p) & (gamma != 0.0)
        zeta = (beta - alpha) / (2.0 * tl.where(turn, gamma, 1.0))
        t = tl.where(zeta >= 0.0, 1.0, -1.0) / (tl.abs(zeta) + tl.sqrt(1.0 + zeta * zeta))
        c = tl.where(turn, 1.0 / tl.sqrt(1.0 + t * t), 1.0)
        s = tl.where(turn, c * t, 0.0)
        new_p = c * col_p - s * col_q
        new_q = s * col_p + c * col_q
        a = tl.where(cols == p, new_p[:, None], tl.where(cols == q, new_q[:, None], a))
        if VECS:
            v_p = tl.sum(tl.where(cols == p, v, 0.0), axis=1)
            v_q = tl.sum(tl.where(cols == q, v, 0.0), axis=1)
            v = tl.where(cols == p, (c * v_p - s * v_q)[:, None], tl.where(cols == q, (s * v_p + c * v_q)[:, None], v))
    sv = tl.sqrt(tl.sum(a * a, axis=0))
    tl.store(s_ptr + b * N + ci, sv, mask=ci < N)
    if VECS:
        tl.store(ar_ptr + b * M * N + rows * N + cols, a, mask=(rows < M) & (cols < N))
        tl.store(v_ptr + b * N * N + vi * N + cols, v, mask=(vi < N) & (cols < N))


@triton.jit
def eigvalsh_kernel(a_ptr, w_ptr, v_ptr, N, s_ab, s_am, s_an, UPPER: tl.constexpr, VECS: tl.constexpr,
                    BN: tl.constexpr):
    """Eigenvalues of a symmetric matrix (from its lower triangle, or its upper one) by cyclic
    Jacobi: rotations J^T A J that zero a_pq, pair after pair; the values are the diagonal
    (unsorted). VECS: also the rotations' product V (eigenvectors in its columns, row-major
    (B, N, N))."""
    b = tl.program_id(0)
    ri = tl.arange(0, BN)
    rows = ri[:, None]
    cols = ri[None, :]
    inside = (rows < N) & (cols < N)
    if UPPER:
        tri = tl.load(a_ptr + b * s_ab + rows * s_am + cols * s_an, mask=inside & (cols >= rows), other=0.0)
        a = tri + tl.trans(tl.where(cols > rows, tri, 0.0))
    else:
        tri = tl.load(a_ptr + b * s_ab + rows * s_am + cols * s_an, mask=inside & (cols <= rows), other=0.0)
        a = tri + tl.trans(tl.where(cols < rows, tri, 0.0))
    v = tl.where((rows == cols) & (rows < N), 1.0, 0.0)
    for step in range(0, SWEEPS * N * N):
        p = (step // N) % N
        q = step % N
        row_p = tl.sum(tl.where(rows == p, a, 0.0), axis=0)
        row_q = tl.sum(tl.where(rows == q, a, 0.0), axis=0)
        app = tl.sum(tl.where(ri == p, row_p, 0.0), axis=0)
        aqq = tl.sum(tl.where(ri == q, row_q, 0.0), axis=0)
        apq = tl.sum(tl.where(ri == q, row_p, 0.0), axis=0)
        turn = (q > p) & (apq != 0.0)
        theta = (aqq - app) / (2.0 * tl.where(turn, apq, 1.0))
        t = tl.where(theta >= 0.0, 1.0, -1.0) / (tl.abs(theta) + tl.sqrt(1.0 + theta * theta))
        c = tl.where(turn, 1.0 / tl.sqrt(1.0 + t * t), 1.0)
        s = tl.where(turn, c * t, 0.0)
        # rows p, q of J^T A, then columns p, q of (J^T A) J
        a = tl.where(rows == p, (c * row_p - s * row_q)[None, :],
                     tl.where(rows == q, (s * row_p + c * row_q)[None, :], a))
        col_p = tl.sum(tl.where(cols == p, a, 0.0), axis=1)
        col_q = tl.sum(tl.where(cols == q, a, 0.0), axis=1)
        a = tl.where(cols == p, (c * col_p - s * col_q)[:, None],
                     tl.where(cols == q, (s * col_p + c * col_q)[:, None], a))
        if VECS:
            v_p = tl.sum(tl.where(cols == p, v, 0.0), axis=1)
            v_q = tl.sum(tl.where(cols == q, v, 0.0), axis=1)
            v = tl.where(cols == p, (c * v_p - s * v_q)[:, None], tl.where(cols == q, (s * v_p + c * v_q)[:, None], v))
    w = tl.sum(tl.where(rows == cols, a, 0.0), axis=0)
    tl.store(w_ptr + b * N + ri, w, mask=ri < N)
    if VECS:
        tl.store(v_ptr + b * N * N + rows * N + cols, v, mask=inside)


# matrix_exp: Taylor's series of degree 18 after scaling by 2^-s, s the smallest with
# ||A||_1 / 2^s <= THETA (truncation below 1e-8 relative there), then s squarings
THETA = tl.constexpr(3.01)
TAYLOR = tl.constexpr(18)


@triton.jit
def matrix_exp_kernel(a_ptr, e_ptr, N, s_ab, s_am, s_an, BN: tl.constexpr):
    b = tl.program_id(0)
    ri = tl.arange(0, BN)
    rows = ri[:, None]
    cols = ri[None, :]
    inside = (rows < N) & (cols < N)
    a = tl.load(a_ptr + b * s_ab + rows * s_am + cols * s_an, mask=inside, other=0.0).to(tl.float32)
    norm = tl.max(tl.sum(tl.abs(a), axis=0), axis=0)
    s = tl.maximum(tl.ceil(tl.log2(norm / THETA)), 0.0)
    a = a * tl.exp2(-s)
    eye = tl.where((rows == cols) & inside, 1.0, 0.0)
    x = eye + a / TAYLOR
    for i in range(1, TAYLOR):
        k = TAYLOR - i
        x = eye + tl.dot(a, x, input_precision="ieee") / k
    steps = s.to(tl.int32)
    for _ in range(0, steps):
        x = tl.dot(x, x, input_precision="ieee")
    tl.store(e_ptr + b * N * N + rows * N + cols, x, mask=inside)
