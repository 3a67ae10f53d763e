"""Switch `special_functions` (backend/inductor_cpu/special.py): special functions Inductor leaves
to aten on a Triton device compile to Triton kernels on the simulated chip and match eager,
edge cases included."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)


REPO = Path(__file__).resolve().parents[2]
INF, NAN = math.inf, math.nan


pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def _on_chip(fn, *args: torch.Tensor, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """`fn` compiled by Inductor runs as Triton kernels only (no aten op on the host) and
    matches eager."""
    from study.compile_mtia import compile_for_mtia
    compiled, rep = compile_for_mtia(fn, *args)
    assert rep.kernels and rep.all_on_chip, rep.report()
    torch.testing.assert_close(compiled(*args), fn(*args), rtol=rtol, atol=atol, equal_nan=True)


X = torch.tensor([-8.5, -3.0, -2.25, -1.0, -0.5, -0.0, 0.0, 1e-30, 0.3, 0.5, 1.0, 2.0, 2.5, 7.75, 10.0, 60.0,
                  1e3, INF, -INF, NAN])


def test_polynomials_take_a_degree_per_element_with_eagers_edge_cases() -> None:
    # degrees: negative, fractional (truncated), nan / inf (read as negative), 0, 1, above the
    # closed-form switch (T: 6, U/V/W: 8) and large; x at and beyond the interval's ends
    n = torch.tensor([-1.0, 0.0, 1.0, 2.0, 3.5, 5.0, 7.0, 9.0, 12.0, 40.0, NAN, INF, -INF, 130.0, 4.0, 6.0,
                      2.0, 3.0, 8.0, 10.0])
    x = X / 8
    for fn in (torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
               torch.special.shifted_chebyshev_polynomial_w, torch.special.legendre_polynomial_p,
               torch.special.hermite_polynomial_h, torch.special.laguerre_polynomial_l):
        torch._dynamo.reset()
        _on_chip(fn, x, n)
    # |x| == 1 exactly, with a broadcast degree
    torch._dynamo.reset()
    _on_chip(torch.special.chebyshev_polynomial_v, torch.tensor([-1.0, 1.0, 0.25]), torch.tensor(5.0))


def test_digamma_polygamma_and_zeta_match_eager_at_poles_and_infinities() -> None:
    for fn in (torch.digamma, lambda x: torch.polygamma(1, x), lambda x: torch.polygamma(3, x)):
        torch._dynamo.reset()
        _on_chip(fn, X)
    torch._dynamo.reset()
    _on_chip(torch.special.zeta, torch.tensor([0.5, 1.0, 2.0, 3.0, 4.5, 2.0, 3.0, INF, 61.0]),
             torch.tensor([1.0, 1.0, -2.0, -2.5, -2.5, 0.25, 1e3, 2.0, 60.0]))
    torch._dynamo.reset()
    x = torch.randn(64, dtype=torch.bfloat16) * 4  # computed in fp32, rounded once (as eager)
    _on_chip(lambda x: torch.polygamma(2, x), x, rtol=1e-2, atol=1e-2)


def test_incomplete_gamma_edges_and_large_parameters() -> None:
    a = torch.tensor([0.0, 0.0, -1.0, 2.0, 2.0, INF, INF, 1.0, 0.5, 3.0, 30.0, 1e3, 1e4, 0.01, NAN])
    x = torch.tensor([1.0, 0.0, 1.0, -1.0, 0.0, 1.0, INF, INF, 0.25, 9.0, 28.0, 1030.0, 9.9e3, 2.0, 1.0])
    for fn in (torch.igamma, torch.igammac):
        torch._dynamo.reset()
        _on_chip(fn, a, x)


def test_bessel_airy_and_ndtri_match_eager() -> None:
    for fn in (torch.special.i0e, torch.special.i1e, torch.special.modified_bessel_k0,
               torch.special.scaled_modified_bessel_k1, torch.special.spherical_bessel_j0, torch.special.airy_ai):
        torch._dynamo.reset()
        _on_chip(fn, X)
    torch._dynamo.reset()
    p = torch.tensor([0.0, 1.0, 0.5, 1e-7, 1 - 1e-7, 1e-20, -0.1, 1.1, NAN, 0.02, 0.98, 0.1, 0.9, 0.3])
    _on_chip(torch.special.ndtri, p)


def test_a_special_function_fuses_with_its_neighbours() -> None:
    from study.compile_mtia import compile_for_mtia
    x = torch.rand(256) * 5 + 0.1
    fn = lambda x: torch.digamma(x * 2) + torch.special.i0e(x)  # noqa: E731
    compiled, rep = compile_for_mtia(fn, x)
    assert rep.all_on_chip and len(rep.kernels) == 1, rep.report()
    assert {"aten.digamma", "aten.special_i0e", "aten.mul", "aten.add"} <= set(rep.kernels[0].aten_ops)
    torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-4)


def test_switch_off_leaves_the_aten_fallback_on_the_host() -> None:
    from study.compile_mtia import compile_for_mtia
    x, n = torch.rand(64) * 4, torch.full((64,), 5.0)
    for fn, args, host_op in ((torch.digamma, (x,), "digamma"),
                              (torch.special.chebyshev_polynomial_t, (x, n), "special_chebyshev_polynomial_t")):
        torch._dynamo.reset()
        _, rep = compile_for_mtia(fn, *args)
        assert rep.kernels and rep.all_on_chip, rep.report()
        torch._dynamo.reset()
        compiled, rep = compile_for_mtia(fn, *args, special_functions=False)
        assert not rep.kernels and [h.name for h in rep.host_ops] == [host_op], rep.report()
        torch.testing.assert_close(compiled(*args), fn(*args))


def test_the_generated_kernel_imports_special_math_itself_in_a_fresh_process() -> None:
    # the kernel's source names the module (Inductor's helper functions), so a process that only
    # loads the generated code (its async compile, its caches) reaches the functions
    code = (
        "import torch, triton\n"
        "from torch._inductor.utils import run_and_get_code\n"
        "from study.inductor import configure\n"
        "configure()\n"
        "x = torch.linspace(-0.9, 0.9, 33); n = torch.arange(33.0) % 11\n"
        "out, codes = run_and_get_code(torch.compile(torch.special.chebyshev_polynomial_t), x, n)\n"
        "torch.testing.assert_close(out, torch.special.chebyshev_polynomial_t(x, n), rtol=1e-4, atol=1e-4)\n"
        "assert any('from backend.inductor_cpu import special_math as mtia_special' in c for c in codes)\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
