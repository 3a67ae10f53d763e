"""Switch `linalg_kernels` (backend/inductor_cpu/linalg.py): torch.linalg's LU, Cholesky and
triangular-solve families compile to Triton kernels on the simulated chip (LAPACK's unblocked
algorithms, one matrix per program), with no aten op left on the host, and match LAPACK."""
from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def _on_chip(fn, *args: torch.Tensor, rtol: float = 1e-4, atol: float = 1e-4, **options):
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    compiled, rep = compile_for_mtia(fn, *args, **options)
    torch.testing.assert_close(compiled(*args), fn(*args), rtol=rtol, atol=atol)
    return rep


def _spd(*shape: int) -> torch.Tensor:
    a = torch.randn(*shape)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


def _tri(*shape: int, upper: bool) -> torch.Tensor:
    a = torch.randn(*shape) + 4 * torch.eye(shape[-1])
    return a.triu() if upper else a.tril()


CASES = [
    ("lu_factor (pivots exact)", lambda a, b: torch.linalg.lu_factor(a), ((2, 3, 6, 6), (1,))),
    ("lu, wide", lambda a, b: torch.linalg.lu(a), ((2, 4, 7), (1,))),
    ("lu, tall", lambda a, b: torch.linalg.lu(a), ((7, 4), (1,))),
    ("lu_unpack", lambda a, b: torch.lu_unpack(*torch.linalg.lu_factor(a)), ((3, 5, 5), (1,))),
    ("solve, batches broadcast", lambda a, b: torch.linalg.solve(a, b), ((2, 1, 5, 5), (3, 5, 4))),
    ("solve, vector", lambda a, b: torch.linalg.solve(a, b), ((3, 5, 5), (3, 5))),
    ("solve, left=False", lambda a, b: torch.linalg.solve(a, b, left=False), ((5, 5), (2, 3, 5))),
    ("lu_solve, adjoint", lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True),
     ((4, 4), (4, 3))),
    ("lu_solve, left=False", lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, left=False),
     ((4, 4), (2, 4))),
    ("inv", lambda a, b: torch.linalg.inv(a), ((2, 6, 6), (1,))),
    ("det and slogdet", lambda a, b: (torch.linalg.det(a), *torch.linalg.slogdet(a)), ((4, 5, 5), (1,))),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_lu_family_on_chip(name: str, fn, shapes) -> None:
    torch.manual_seed(0)
    rep = _on_chip(fn, *(torch.randn(s) for s in shapes))
    assert rep.kernels and rep.all_on_chip, rep.report()


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_family_on_chip(upper: bool) -> None:
    torch.manual_seed(0)
    a, b = _spd(2, 5, 5), torch.randn(2, 5, 3)
    for fn in (lambda x, y: torch.linalg.cholesky(x, upper=upper),
               lambda x, y: torch.cholesky_solve(y, torch.linalg.cholesky(x, upper=upper), upper=upper),
               lambda x, y: torch.cholesky_inverse(torch.linalg.cholesky(x[0], upper=upper), upper=upper)):
        rep = _on_chip(fn, a, b)
        assert rep.kernels and rep.all_on_chip, rep.report()


@pytest.mark.parametrize("upper", [False, True])
def test_triangular_solves_read_only_their_triangle(upper: bool) -> None:
    torch.manual_seed(0)
    t = _tri(3, 5, 5, upper=upper)
    t_full = t + (torch.randn(5, 5).tril(-1) if upper else torch.randn(5, 5).triu(1))  # the other triangle: ignored
    b = torch.randn(3, 5, 2)
    for fn in (lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper),
               lambda x, y: torch.linalg.solve_triangular(x, y.mT, upper=upper, left=False, unitriangular=True),
               lambda x, y: torch.triangular_solve(y, x, upper=upper, transpose=True)[0]):
        rep = _on_chip(fn, t_full, b)
        assert rep.kernels and rep.all_on_chip, rep.report()
        torch.testing.assert_close(fn(t_full, b), fn(t, b))


def test_singular_and_indefinite_inputs_fail_on_the_chip() -> None:
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    inv, rep = compile_for_mtia(torch.linalg.inv, torch.randn(4, 4))
    assert rep.all_on_chip, rep.report()
    with pytest.raises(Exception, match="linalg.inv.*info != 0"):
        inv(torch.zeros(4, 4))
    torch._dynamo.reset()
    chol, _ = compile_for_mtia(torch.linalg.cholesky, _spd(4, 4))
    with pytest.raises(Exception, match="cholesky.*info != 0"):
        chol(-torch.eye(4))
    # the _ex forms report it in info instead
    torch._dynamo.reset()
    info = _on_chip(lambda x: torch.linalg.cholesky_ex(x).info, -torch.eye(4))
    assert info.all_on_chip


def test_switch_off_and_large_matrices_stay_on_the_host() -> None:
    from backend.inductor_cpu.linalg_kernels import LIMIT
    torch.manual_seed(0)
    rep = _on_chip(torch.linalg.inv, _spd(4, 4), linalg_kernels=False)
    assert not rep.all_on_chip
    rep = _on_chip(torch.linalg.det, _spd(LIMIT + 1, LIMIT + 1) / LIMIT, rtol=1e-3, atol=1e-3)
    assert not rep.all_on_chip


@pytest.mark.parametrize("shape", [(2, 6, 4), (5, 5), (3, 4, 6)])
def test_qr_family_on_chip_with_lapack_signs(shape) -> None:
    torch.manual_seed(0)
    a = torch.randn(*shape)
    c = torch.randn(*shape[:-2], shape[-2], 3)
    for fn in (lambda x, y: torch.geqrf(x),
               lambda x, y: torch.linalg.qr(x),
               lambda x, y: torch.linalg.qr(x, mode="complete"),
               lambda x, y: torch.linalg.qr(x, mode="r")[1],
               lambda x, y: torch.linalg.householder_product(*torch.geqrf(x[..., :min(x.shape[-2:])])),
               lambda x, y: torch.ormqr(*torch.geqrf(x), y, transpose=True)):
        rep = _on_chip(fn, a, c)
        assert rep.kernels and rep.all_on_chip, rep.report()


def test_singular_values_eigenvalues_and_pinv_on_chip() -> None:
    # svdvals / eigvalsh reach the graph asking for vectors nothing reads (splice.py rewrites
    # them); pinv's product is sign-free, so the Jacobi kernels' vectors serve it
    torch.manual_seed(0)
    a, sym = torch.randn(2, 6, 4), _spd(3, 5, 5) - 5 * torch.eye(5)
    for fn, x in ((torch.linalg.svdvals, a), (torch.linalg.svdvals, a.mT), (torch.linalg.matrix_rank, a),
                  (lambda t: torch.linalg.matrix_norm(t, "nuc"), a), (torch.linalg.cond, a[:, :4]),
                  (torch.linalg.eigvalsh, sym), (lambda t: torch.linalg.eigvalsh(t, UPLO="U"), sym),
                  (torch.linalg.pinv, a), (torch.linalg.pinv, a.mT),
                  (lambda t: torch.linalg.pinv(t, hermitian=True), sym),
                  (lambda t: torch.linalg.pinv(t, atol=0.5), a)):
        rep = _on_chip(fn, x, rtol=1e-3, atol=1e-4)
        assert rep.kernels and rep.all_on_chip, rep.report()


def test_vectors_stay_with_lapack() -> None:
    # their signs are LAPACK's choice: svd and eigh with vectors are not rewritten
    torch.manual_seed(0)
    rep = _on_chip(lambda t: torch.linalg.svd(t).U.abs(), torch.randn(4, 4))
    assert not rep.all_on_chip


def test_matrix_exp_on_chip_near_fp64() -> None:
    from study.compile_mtia import compile_for_mtia
    torch.manual_seed(0)
    for a, tol in ((torch.randn(3, 5, 5), 1e-5), (8 * torch.randn(2, 4, 4), 1e-4), (torch.randn(6, 6).bfloat16(), 1e-2)):
        torch._dynamo.reset()
        compiled, rep = compile_for_mtia(torch.linalg.matrix_exp, a)
        assert rep.kernels and rep.all_on_chip, rep.report()
        exact = torch.linalg.matrix_exp(a.double())
        err = float(((compiled(a).double() - exact).abs() / exact.abs().clamp(min=1)).max())
        assert err <= tol, err
