"""`linalg_kernels`: torch.linalg's LU, Cholesky, QR and triangular-solve families, which Inductor
leaves to LAPACK on the host, as Triton kernels on the chip.

Inductor registers these ops as fallbacks (torch/_inductor/lowering.py: `make_fallback` for
linalg_lu_factor_ex, linalg_cholesky_ex, linalg_solve_triangular, _linalg_det ...). With the
switch on, an entry of Inductor's decomposition table rewrites each call on the cpu -> MTIA path
into the Triton kernels of linalg_kernels.py (in the graph as Inductor's functional
Triton-kernel nodes, which it emits as user-defined Triton kernels of the generated code,
launched on the chip like its own) and ops Inductor lowers itself (triangles, diagonals, products,
gathers and scatters of rows):

- `linalg_lu_factor_ex` (lu_factor, torch.lu), `linalg_lu` (P, L, U), `lu_unpack`: the LU
  kernel (partial pivoting, LAPACK's pivots), the triangles, P from the permutation;
- `linalg_lu_solve`, `_linalg_solve_ex` (solve), `linalg_inv_ex` (inv: B = I): the permuted
  right-hand side, then two triangular solves (L unit lower, U upper; for adjoint = True U^T then
  L^T, read as transposed views, and the rows scattered back by the permutation);
- `_linalg_det`, `_linalg_slogdet` (det, slogdet, logdet): the product (or the sum of logs) of
  U's diagonal, the sign from the pivots that moved a row;
- `linalg_cholesky_ex`, `cholesky`, `cholesky_solve`, `cholesky_inverse`: the Cholesky kernel
  (upper = True factors A^T's lower triangle, a view) and two triangular solves;
- `triangular_solve`, `linalg_solve_triangular`: one triangular solve (transpose / left = False
  as transposed views);
- `geqrf`, `linalg_qr` (qr), `linalg_householder_product`, `ormqr`: the Householder QR kernel
  (LAPACK's larfg conventions: beta = -sign(alpha) ||x||, tau = (beta - alpha) / beta, so Q and
  R have LAPACK's signs) and the kernel that applies the reflectors to the identity (org2r);
  ormqr multiplies by the Q so formed (a GEMM);
- `_linalg_svd` without U and V (svdvals, matrix_rank, cond, the nuclear norm) and
  `_linalg_eigh` without eigenvectors (eigvalsh, matrix_rank with hermitian = True): Jacobi
  kernels (one-sided on the columns of the matrix or of its transpose, whichever is taller;
  cyclic two-sided on the symmetric matrix), a fixed linalg_kernels.SWEEPS sweeps with no
  early exit, then a sort; only up to EIG_LIMIT = 16 rows and columns (the work grows as n^4
  per sweep in tile terms). Singular vectors and eigenvectors stay with LAPACK: their signs
  are LAPACK's choice, which a Jacobi kernel does not reproduce; `linalg_pinv` (pinv,
  pinverse), whose product the signs cancel out of, takes the same kernels with their vectors;
- `linalg_matrix_exp`: one kernel per matrix, scaling and squaring around a degree-18 Taylor
  series evaluated by Horner's rule with tl.dot (FP32; bf16 / fp16 inputs too);
- `_linalg_check_errors` (what torch.linalg.inv / cholesky / solve call to raise on a singular
  or not positive-definite input): a device assertion that `info` is 0, so those calls still
  fail, with the assertion's message rather than LinAlgError's.

Limits: FP32 only (the chip has no FP64; the OpInfo's bfloat16 is not supported by LAPACK
either), matrices of at most linalg_kernels.LIMIT rows and columns (one tile per program) and
no empty ones; anything else returns NotImplemented and stays with aten. The kernels are
LAPACK's unblocked algorithms, one matrix per program: a batch spreads over the PEs, a single
matrix runs on one PE, O(n) steps each of O(n^2) SIMD work (a 64 x 64 LU: 64 steps).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import triton

from backend.inductor_cpu import linalg_kernels as K
from backend.inductor_cpu.splice import launch

_ORIGINAL: dict[Any, Callable | None] = {}


# ----------------------------------------------------------------------------- kernels in the graph
# A decomposition runs while AOTAutograd traces the graph, below its functionalization: a kernel
# is put into the graph as Inductor's functional Triton-kernel node (the form a user's
# `wrap_triton` call takes once functionalized), whose outputs are fresh tensors. Inductor then
# emits it as a user-defined Triton kernel of the generated code. Each function takes a batch of
# matrices as one 3-D tensor (any strides); `splice.launch` adds the node.


def _strides(prefix: str, t: torch.Tensor) -> dict[str, int]:
    return {f"s_{prefix}b": t.stride(0), f"s_{prefix}m": t.stride(1), f"s_{prefix}n": t.stride(2)}


def _empty(shape: tuple, dtype: torch.dtype, like: torch.Tensor) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=like.device)


def lu_factor(a: torch.Tensor) -> list[torch.Tensor]:
    """(LU, pivots, perm, info) of each matrix of a (B, M, N) batch."""
    b, m, n = a.shape
    k = min(m, n)
    lu = _empty((b, m, n), a.dtype, a)
    outs = {"lu_ptr": lu, "piv_ptr": _empty((b, k), torch.int32, a), "perm_ptr": _empty((b, m), torch.int32, a),
            "info_ptr": _empty((b,), torch.int32, a)}
    return launch(K.lu_factor_kernel, (b, 1, 1), outs, a_ptr=a, M=m, N=n, K=k, **_strides("a", a),
                   **_strides("l", lu), BM=triton.next_power_of_2(m), BN=triton.next_power_of_2(n))


def pivots_to_perm(piv: torch.Tensor, m: int) -> torch.Tensor:
    b, k = piv.shape
    outs = {"perm_ptr": _empty((b, m), torch.int32, piv)}
    return launch(K.pivots_to_perm_kernel, (b, 1, 1), outs, piv_ptr=piv.contiguous(), M=m, K=k,
                   BM=triton.next_power_of_2(max(m, k)))[0]


def cholesky_lower(a: torch.Tensor) -> list[torch.Tensor]:
    """(L, info) of each matrix of a (B, N, N) batch, from its lower triangle."""
    b, n, _ = a.shape
    low = _empty((b, n, n), a.dtype, a)
    outs = {"l_ptr": low, "info_ptr": _empty((b,), torch.int32, a)}
    return launch(K.cholesky_kernel, (b, 1, 1), outs, a_ptr=a, N=n, **_strides("a", a), **_strides("l", low),
                   BN=triton.next_power_of_2(n))


def trsm(t: torch.Tensor, rhs: torch.Tensor, lower: bool, unit: bool) -> torch.Tensor:
    """X with T X = B for (B, N, N) triangles T and (B, N, R) right-hand sides."""
    b, n, r = rhs.shape
    x = _empty((b, n, r), rhs.dtype, rhs)
    br = min(triton.next_power_of_2(r), K.LIMIT)
    return launch(K.trsm_kernel, (b, triton.cdiv(r, br), 1), {"x_ptr": x}, t_ptr=t, b_ptr=rhs, N=n, R=r,
                   **_strides("t", t), **_strides("b", rhs), **_strides("x", x), LOWER=lower, UNIT=unit,
                   BN=triton.next_power_of_2(n), BR=br)[0]


def geqrf(a: torch.Tensor) -> list[torch.Tensor]:
    """(reflectors with R, tau) of each matrix of a (B, M, N) batch."""
    b, m, n = a.shape
    k = min(m, n)
    r = _empty((b, m, n), a.dtype, a)
    outs = {"r_ptr": r, "tau_ptr": _empty((b, k), a.dtype, a)}
    return launch(K.geqrf_kernel, (b, 1, 1), outs, a_ptr=a, M=m, N=n, K=k, **_strides("a", a), **_strides("r", r),
                   BM=triton.next_power_of_2(m), BN=triton.next_power_of_2(n))


def orgqr(a: torch.Tensor, tau: torch.Tensor, ncols: int) -> torch.Tensor:
    """The first `ncols` columns of Q = H_0 ... H_{k-1} from (B, M, >= k) reflectors and (B, k) tau."""
    b, m, _ = a.shape
    k = tau.shape[-1]
    q = _empty((b, m, ncols), a.dtype, a)
    return launch(K.orgqr_kernel, (b, 1, 1), {"q_ptr": q}, a_ptr=a, tau_ptr=tau.contiguous(), M=m, N=ncols, K=k,
                   **_strides("a", a), **_strides("q", q), BM=triton.next_power_of_2(m),
                   BN=triton.next_power_of_2(ncols), BK=triton.next_power_of_2(k))[0]


def svdvals(a: torch.Tensor, vectors: bool = False) -> list[torch.Tensor]:
    """[singular values (unsorted)] of each matrix of a (B, M, N) batch with N <= M; with
    `vectors` also A V (column j: s_j u_j) and V."""
    b, m, n = a.shape
    outs = {"s_ptr": _empty((b, n), a.dtype, a)}
    if vectors:
        outs.update(ar_ptr=_empty((b, m, n), a.dtype, a), v_ptr=_empty((b, n, n), a.dtype, a))
    else:
        outs.update(ar_ptr=_empty((1,), a.dtype, a), v_ptr=_empty((1,), a.dtype, a))
    got = launch(K.svdvals_kernel, (b, 1, 1), outs, a_ptr=a, M=m, N=n, **_strides("a", a), VECS=vectors,
                  BM=triton.next_power_of_2(m), BN=triton.next_power_of_2(n))
    return got if vectors else got[:1]


def eigvalsh(a: torch.Tensor, upper: bool, vectors: bool = False) -> list[torch.Tensor]:
    """[eigenvalues (unsorted)] of each symmetric matrix of a (B, N, N) batch, from one triangle;
    with `vectors` also the eigenvectors (columns)."""
    b, n, _ = a.shape
    outs = {"w_ptr": _empty((b, n), a.dtype, a),
            "v_ptr": _empty((b, n, n) if vectors else (1,), a.dtype, a)}
    got = launch(K.eigvalsh_kernel, (b, 1, 1), outs, a_ptr=a, N=n, **_strides("a", a), UPPER=upper, VECS=vectors,
                  BN=triton.next_power_of_2(n))
    return got if vectors else got[:1]


def matrix_exp(a: torch.Tensor) -> torch.Tensor:
    """exp of each matrix of a (B, N, N) batch, in FP32."""
    b, n, _ = a.shape
    outs = {"e_ptr": _empty((b, n, n), torch.float32, a)}
    return launch(K.matrix_exp_kernel, (b, 1, 1), outs, a_ptr=a, N=n, **_strides("a", a),
                   BN=max(16, triton.next_power_of_2(n)))[0]


# ----------------------------------------------------------------------------- helpers

def _takes(*mats: torch.Tensor) -> bool:
    """FP32 matrices (at least 2-D), none empty, none with a side over the kernels' limit."""
    return all(m.dtype == torch.float32 and m.dim() >= 2 and m.numel() > 0
               and max(m.shape[-2:]) <= K.LIMIT for m in mats)


def _rhs(b: torch.Tensor) -> bool:
    """A right-hand side: FP32, at least 2-D, rows within the limit; any number of columns
    (split over programs), none included."""
    return b.dtype == torch.float32 and b.dim() >= 2 and b.shape[-2] <= K.LIMIT


def _flat(a: torch.Tensor) -> torch.Tensor:
    return a.reshape(-1, a.shape[-2], a.shape[-1])


def _broadcast(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:])


def _solve_tri(t: torch.Tensor, rhs: torch.Tensor, lower: bool, unit: bool) -> torch.Tensor:
    """T X = B for a triangular T (only its triangle read), batches broadcast."""
    t, rhs = _broadcast(t, rhs)
    if rhs.numel() == 0:
        return torch.empty(rhs.shape, dtype=rhs.dtype, device=rhs.device)
    x = trsm(_flat(t), _flat(rhs), lower, unit)
    return x.reshape(rhs.shape)


def _failed(api: str) -> str:
    return f"{api}: the factorization could not be completed (info != 0)"


def _check(info: torch.Tensor, api: str) -> None:
    torch._assert_async((info == 0).all(), _failed(api))


def _factor(a: torch.Tensor):
    lu, piv, perm, info = lu_factor(_flat(a))
    batch = a.shape[:-2]
    return (lu.reshape(a.shape), piv.reshape(*batch, piv.shape[-1]), perm.reshape(*batch, perm.shape[-1]),
            info.reshape(batch))


def _perm_of(piv: torch.Tensor, m: int) -> torch.Tensor:
    """The permutation of m rows that getrf's pivots describe (batched)."""
    return pivots_to_perm(piv.reshape(-1, piv.shape[-1]), m).reshape(*piv.shape[:-1], m)


def _plu(lu: torch.Tensor, perm: torch.Tensor):
    """(P, L, U) from the packed factors: P[perm[i], i] = 1, L unit lower (M x K), U upper (K x N)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    r = torch.arange(m, device=perm.device, dtype=perm.dtype)
    p = (r[:, None] == perm[..., None, :]).to(lu.dtype)
    low = torch.tril(lu[..., :, :k], -1) + torch.eye(m, k, dtype=lu.dtype, device=lu.device)
    return p, low, torch.triu(lu[..., :k, :])


def _permute_rows(x: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """Rows of x taken in perm's order: (P^T x)[i] = x[perm[i]]."""
    idx = perm.to(torch.int64)[..., :, None].expand(*perm.shape, x.shape[-1])
    return x.gather(-2, idx)


def _unpermute_rows(z: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """P z: row i of z goes to row perm[i]."""
    idx = perm.to(torch.int64)[..., :, None].expand(*perm.shape, z.shape[-1])
    return torch.zeros_like(z).scatter(-2, idx, z)


def _lu_solve(lu: torch.Tensor, perm: torch.Tensor, rhs: torch.Tensor, adjoint: bool) -> torch.Tensor:
    """A X = B (adjoint: A^T X = B) with P^T A = L U."""
    batch = torch.broadcast_shapes(lu.shape[:-2], rhs.shape[:-2])
    lu = lu.expand(*batch, *lu.shape[-2:])
    perm = perm.expand(*batch, perm.shape[-1])
    rhs = rhs.expand(*batch, *rhs.shape[-2:])
    if not adjoint:
        y = _solve_tri(lu, _permute_rows(rhs, perm), lower=True, unit=True)
        return _solve_tri(lu, y, lower=False, unit=False)
    y = _solve_tri(lu.mT, rhs, lower=True, unit=False)    # U^T y = B
    z = _solve_tri(lu.mT, y, lower=False, unit=True)      # L^T z = y
    return _unpermute_rows(z, perm)


def _square(a: torch.Tensor) -> bool:
    return a.shape[-1] == a.shape[-2]


# ----------------------------------------------------------------------------- LU family

def _lu_factor_ex(a, *, pivot=True, check_errors=False):
    if not pivot or not _takes(a):
        return NotImplemented
    lu, piv, _, info = _factor(a)
    if check_errors:
        _check(info, "torch.linalg.lu_factor_ex")
    return lu, piv, info


def _linalg_lu(a, *, pivot=True):
    if not pivot or not _takes(a):
        return NotImplemented
    lu, _, perm, _ = _factor(a)
    return _plu(lu, perm)


def _lu_unpack(lu, piv, unpack_data=True, unpack_pivots=True):
    if not (unpack_data and unpack_pivots and _takes(lu)) or piv.dtype != torch.int32:
        return NotImplemented
    return _plu(lu, _perm_of(piv, lu.shape[-2]))


def _linalg_lu_solve(lu, piv, rhs, *, left=True, adjoint=False):
    if not (_takes(lu) and _rhs(rhs if left else rhs.mT) and _square(lu)) or piv.dtype != torch.int32:
        return NotImplemented
    perm = _perm_of(piv, lu.shape[-1])
    if left:
        return _lu_solve(lu, perm, rhs, adjoint)
    # X A = B  <=>  A^T X^T = B^T
    return _lu_solve(lu, perm, rhs.mT, not adjoint).mT


def _solve_ex(a, rhs, *, left=True, check_errors=False):
    vector = rhs.dim() == 1 or (rhs.dim() == a.dim() - 1 and rhs.shape == a.shape[:-1])
    if vector and not left:
        return NotImplemented
    b = rhs.unsqueeze(-1) if vector else rhs
    if not (_takes(a) and _rhs(b if left else b.mT) and _square(a)):
        return NotImplemented
    lu, piv, perm, info = _factor(a)
    if check_errors:
        _check(info, "torch.linalg.solve_ex")
    x = _lu_solve(lu, perm, b, adjoint=False) if left else _lu_solve(lu, perm, b.mT, adjoint=True).mT
    return (x.squeeze(-1) if vector else x), lu, piv, info


def _inv_ex(a, *, check_errors=False):
    if not (_takes(a) and _square(a)):
        return NotImplemented
    lu, _, perm, info = _factor(a)
    if check_errors:
        _check(info, "torch.linalg.inv_ex")
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    return _lu_solve(lu, perm, eye, adjoint=False), info


def _det_parts(a):
    lu, piv, _, _ = _factor(a)
    diag = torch.diagonal(lu, dim1=-2, dim2=-1)
    steps = torch.arange(1, piv.shape[-1] + 1, dtype=piv.dtype, device=piv.device)
    swaps = (piv != steps).sum(-1)
    perm_sign = 1 - 2 * (swaps % 2).to(a.dtype)
    return lu, piv, diag, perm_sign


def _linalg_det(a):
    if not (_takes(a) and _square(a)):
        return NotImplemented
    lu, piv, diag, perm_sign = _det_parts(a)
    return perm_sign * diag.prod(-1), lu, piv


def _linalg_slogdet(a):
    if not (_takes(a) and _square(a)):
        return NotImplemented
    lu, piv, diag, perm_sign = _det_parts(a)
    sign = perm_sign * torch.sign(diag).prod(-1)
    return sign, diag.abs().log().sum(-1), lu, piv


# ----------------------------------------------------------------------------- Cholesky family

def _chol(a, upper: bool):
    """(factor, info): L with A = L L^T from A's lower triangle, or U = L'^T from its upper one."""
    src = a.mT if upper else a
    low, info = cholesky_lower(_flat(src))
    low = low.reshape(a.shape)
    return (low.mT if upper else low), info.reshape(a.shape[:-2])


def _cholesky_ex(a, *, upper=False, check_errors=False):
    if not (_takes(a) and _square(a)):
        return NotImplemented
    factor, info = _chol(a, upper)
    if check_errors:
        _check(info, "torch.linalg.cholesky_ex")
    return factor.contiguous(), info


def _cholesky(a, upper=False):
    if not (_takes(a) and _square(a)):
        return NotImplemented
    factor, info = _chol(a, upper)
    _check(info, "torch.cholesky")
    return factor.contiguous()


def _chol_solve(rhs, factor, upper: bool):
    if upper:   # A = U^T U
        return _solve_tri(factor, _solve_tri(factor.mT, rhs, lower=True, unit=False), lower=False, unit=False)
    return _solve_tri(factor.mT, _solve_tri(factor, rhs, lower=True, unit=False), lower=False, unit=False)


def _cholesky_solve(rhs, factor, upper=False):
    if not (_takes(factor) and _rhs(rhs) and _square(factor)):
        return NotImplemented
    return _chol_solve(rhs, factor, upper)


def _cholesky_inverse(factor, upper=False):
    if not (_takes(factor) and _square(factor)):
        return NotImplemented
    eye = torch.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device)
    return _chol_solve(eye, factor, upper)


# ----------------------------------------------------------------------------- triangular solves

def _triangular_solve(rhs, a, upper=True, transpose=False, unitriangular=False):
    if not (_takes(a) and _rhs(rhs) and _square(a)):
        return NotImplemented
    t = a.mT if transpose else a
    lower = upper if transpose else not upper
    return _solve_tri(t, rhs, lower=lower, unit=unitriangular), a.clone()


def _solve_triangular(a, rhs, *, upper, left=True, unitriangular=False):
    if not (_takes(a) and _square(a) and _rhs(rhs if left else rhs.mT)):
        return NotImplemented
    if left:
        return _solve_tri(a, rhs, lower=not upper, unit=unitriangular)
    return _solve_tri(a.mT, rhs.mT, lower=upper, unit=unitriangular).mT


# ----------------------------------------------------------------------------- QR family

def _geqrf(a):
    if not _takes(a):
        return NotImplemented
    r, tau = geqrf(_flat(a))
    return r.reshape(a.shape), tau.reshape(*a.shape[:-2], tau.shape[-1])


def _q(refl, tau, ncols: int):
    batch = torch.broadcast_shapes(refl.shape[:-2], tau.shape[:-1])
    refl = refl.expand(*batch, *refl.shape[-2:])
    tau = tau.expand(*batch, tau.shape[-1])
    q = orgqr(_flat(refl), tau.reshape(-1, tau.shape[-1]), ncols)
    return q.reshape(*batch, refl.shape[-2], ncols)


def _householder_product(refl, tau):
    if not _takes(refl) or tau.dtype != torch.float32 or tau.shape[-1] > refl.shape[-1] or tau.shape[-1] == 0:
        return NotImplemented
    return _q(refl, tau, refl.shape[-1])


def _linalg_qr(a, mode="reduced"):
    if not _takes(a) or mode not in ("reduced", "complete", "r"):
        return NotImplemented
    m, n = a.shape[-2:]
    k = min(m, n)
    r, tau = _geqrf(a)
    if mode == "r":
        return torch.empty(0, dtype=a.dtype, device=a.device), torch.triu(r[..., :k, :])
    if mode == "complete":
        return _q(r, tau, m), torch.triu(r)
    return _q(r, tau, k), torch.triu(r[..., :k, :])


def _ormqr(refl, tau, other, left=True, transpose=False):
    if not (_takes(refl) and _rhs(other)) or tau.dtype != torch.float32 or tau.shape[-1] == 0:
        return NotImplemented
    q = _q(refl, tau, refl.shape[-2])
    q = q.mT if transpose else q
    return q @ other if left else other @ q


# ----------------------------------------------------------------------------- values only: Jacobi

def _small(a) -> bool:
    return _takes(a) and max(a.shape[-2:]) <= K.EIG_LIMIT


def _linalg_svd(a, full_matrices=True, compute_uv=True, driver=None):
    if compute_uv or driver is not None or not _small(a):
        return NotImplemented
    tall = a if a.shape[-2] >= a.shape[-1] else a.mT
    sv = svdvals(_flat(tall))[0].reshape(*a.shape[:-2], tall.shape[-1])
    none = torch.empty(0, dtype=a.dtype, device=a.device)
    return none, torch.sort(sv, dim=-1, descending=True).values, none


def _linalg_eigh(a, UPLO="L", compute_v=True):  # noqa: N803 - aten's argument name
    if compute_v or not (_small(a) and _square(a)):
        return NotImplemented
    w = eigvalsh(_flat(a), UPLO == "U")[0].reshape(a.shape[:-1])
    return torch.sort(w, dim=-1).values, torch.empty(0, dtype=a.dtype, device=a.device)


def _pinv(a, atol=None, rtol=None, hermitian=False):
    """linalg.pinv through the Jacobi kernels: A+ = V diag(1 / s_j) U^T over the s_j above
    max(atol, rtol * max s) (aten's cut-off and defaults: rtol eps * max(m, n) unless atol is
    given and positive). The vectors' signs cancel in the product, so it is LAPACK's result to
    rounding. hermitian: V diag(1 / w_j) V^T over |w_j| above the cut-off, from the cyclic
    Jacobi kernel's eigenvectors."""
    if not _small(a) or any(isinstance(t, torch.Tensor) and t.dtype not in (torch.float32, torch.float64)
                            for t in (atol, rtol)):
        return NotImplemented
    m, n = a.shape[-2:]
    if hermitian and m != n:
        return NotImplemented
    batch = a.shape[:-2]

    def tol_of(v):
        if v is None:
            return None
        return v.to(a.dtype) if isinstance(v, torch.Tensor) else torch.tensor(float(v), dtype=a.dtype)
    atol_t, rtol_t = tol_of(atol), tol_of(rtol)
    if rtol_t is None:
        default = torch.finfo(a.dtype).eps * max(m, n)
        rtol_t = torch.full((), default, dtype=a.dtype) if atol_t is None else \
            torch.where(atol_t > 0, torch.zeros((), dtype=a.dtype), torch.full((), default, dtype=a.dtype))
    if atol_t is None:
        atol_t = torch.zeros((), dtype=a.dtype)
    if hermitian:
        w, v = eigvalsh(_flat(a), False, vectors=True)
        w, v = w.reshape(*batch, n), v.reshape(*batch, n, n)
        cut = torch.maximum(atol_t[..., None], rtol_t[..., None] * w.abs().amax(-1, keepdim=True))
        inv = torch.where(w.abs() > cut, 1.0 / w, torch.zeros_like(w))
        return (v * inv[..., None, :]) @ v.mT
    tall = a if m >= n else a.mT
    s, ar, v = svdvals(_flat(tall), vectors=True)
    k = tall.shape[-1]
    s, ar, v = s.reshape(*batch, k), ar.reshape(*batch, tall.shape[-2], k), v.reshape(*batch, k, k)
    cut = torch.maximum(atol_t[..., None], rtol_t[..., None] * s.amax(-1, keepdim=True))
    inv2 = torch.where(s > cut, 1.0 / (s * s), torch.zeros_like(s))
    out = (v * inv2[..., None, :]) @ ar.mT          # V diag(1 / s^2) (A V)^T = V diag(1 / s) U^T
    return out if m >= n else out.mT


def _pinv_rcond(a, rcond=1e-15, hermitian=False):
    return _pinv(a, None, rcond, hermitian)


def _svdvals_rule(node: torch.fx.Node):
    """Under torch.compile, linalg.svdvals and eigvalsh reach the graph as _linalg_svd /
    _linalg_eigh asking for the vectors too (their fake inputs count as tensor subclasses, for
    which aten computes the vectors in case a gradient needs them), so the decompositions above
    never see compute_uv / compute_v False. A call whose vectors nothing reads is replaced by
    the values-only form (splice.py)."""
    from backend.inductor_cpu.splice import val
    a = val(node.args[0])
    if not isinstance(a, torch.Tensor) or a.device.type != "cpu" or not _small(a) or node.kwargs.get("driver"):
        return None
    return (lambda x: _linalg_svd(x, False, False)[1]), [node.args[0]]


def _eigvalsh_rule(node: torch.fx.Node):
    from backend.inductor_cpu.splice import val
    a = val(node.args[0])
    if not isinstance(a, torch.Tensor) or a.device.type != "cpu" or not (_small(a) and _square(a)):
        return None
    uplo = node.args[1] if len(node.args) > 1 else node.kwargs.get("UPLO", "L")
    return (lambda x: _linalg_eigh(x, uplo, False)[0]), [node.args[0]]


def _matrix_exp(a):
    """linalg.matrix_exp: Taylor's series of degree 18 of A / 2^s (s the least with
    ||A / 2^s||_1 <= 3.01, chosen in the kernel per matrix) by Horner's rule on the DPE, then s
    squarings; FP32 inside, bf16 / fp16 results rounded once. aten chooses among degrees 1 to 18
    by the norm (fewer products for small matrices); the result agrees to FP32 rounding."""
    if a.dtype not in (torch.float32, torch.bfloat16, torch.float16) or a.dim() < 2 or a.numel() == 0 \
            or not _square(a) or a.shape[-1] > K.LIMIT:
        return NotImplemented
    return matrix_exp(_flat(a)).reshape(a.shape).to(a.dtype)


_LOWERING_ORIGINAL: dict[Any, Callable] = {}


def _check_errors_lowering(original: Callable) -> Callable:
    """aten._linalg_check_errors (a host check that raises LinAlgError where `info` is not 0)
    as a device assertion per element of `info`. It is an Inductor lowering, not a
    decomposition: AOTAutograd keeps the op (it returns nothing) without consulting the table."""
    import torch._inductor.config as ic
    from torch._inductor import lowering as L

    from backend.inductor_cpu import options

    def lowering(info: Any, api_name: str, *, is_matrix: bool) -> Any:
        if not (options.enabled("linalg_kernels") and ic.cpu_backend == "triton"
                and getattr(info.get_device(), "type", None) == "cpu"):
            return original(info, api_name, is_matrix=is_matrix)
        ok = L.lowerings[torch.ops.aten.eq.Scalar](info, 0)
        L._assert_async(ok, _failed(api_name))
        return None
    lowering.mtia_original = original  # type: ignore[attr-defined]
    return lowering


def _decomps() -> dict[Any, Callable]:
    aten = torch.ops.aten
    return {
        aten.linalg_lu_factor_ex.default: _lu_factor_ex, aten.linalg_lu.default: _linalg_lu,
        aten.lu_unpack.default: _lu_unpack, aten.linalg_lu_solve.default: _linalg_lu_solve,
        aten._linalg_solve_ex.default: _solve_ex, aten.linalg_inv_ex.default: _inv_ex,
        aten._linalg_det.default: _linalg_det, aten._linalg_slogdet.default: _linalg_slogdet,
        aten.linalg_cholesky_ex.default: _cholesky_ex, aten.cholesky.default: _cholesky,
        aten.cholesky_solve.default: _cholesky_solve, aten.cholesky_inverse.default: _cholesky_inverse,
        aten.triangular_solve.default: _triangular_solve, aten.linalg_solve_triangular.default: _solve_triangular,
        aten.geqrf.default: _geqrf, aten.linalg_householder_product.default: _householder_product,
        aten.linalg_qr.default: _linalg_qr, aten.ormqr.default: _ormqr,
        aten._linalg_svd.default: _linalg_svd, aten._linalg_eigh.default: _linalg_eigh,
        aten.linalg_pinv.atol_rtol_tensor: _pinv, aten.linalg_pinv.atol_rtol_float: _pinv,
        aten.linalg_pinv.default: _pinv_rcond, aten.linalg_pinv.rcond_tensor: _pinv_rcond,
        aten.linalg_matrix_exp.default: _matrix_exp,
    }


def install() -> None:
    """Add the decompositions to Inductor's table and wrap the check's lowering (idempotent)."""
    from torch._inductor import lowering as L

    from backend.inductor_cpu import host_ops
    host_ops.install_decompositions(_decomps(), _ORIGINAL, "linalg_kernels")
    op = torch.ops.aten._linalg_check_errors.default
    current = L.lowerings.get(op)
    if current is not None and not hasattr(current, "mtia_original"):
        _LOWERING_ORIGINAL[op] = current
        L.lowerings[op] = _check_errors_lowering(current)
    from backend.inductor_cpu import splice
    aten = torch.ops.aten
    splice.register(splice.Rule(aten._linalg_svd.default, 1, "linalg_kernels", _svdvals_rule))
    splice.register(splice.Rule(aten._linalg_eigh.default, 0, "linalg_kernels", _eigvalsh_rule))


def uninstall() -> None:
    from torch._inductor import lowering as L

    from backend.inductor_cpu import host_ops
    host_ops.uninstall_decompositions(_ORIGINAL)
    for op, original in _LOWERING_ORIGINAL.items():
        L.lowerings[op] = original
    _LOWERING_ORIGINAL.clear()
    from backend.inductor_cpu import splice
    splice.unregister("linalg_kernels")
