"""libdevice functions Inductor emits for special ops, checked against torch."""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

REFS = {"cyl_bessel_i0": torch.special.i0, "cyl_bessel_i1": torch.special.i1, "erfcx": torch.special.erfcx,
        "erfinv": torch.erfinv, "j0": torch.special.bessel_j0, "y1": torch.special.bessel_y1}


@triton.jit
def _special(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.5)
    if FN == "cyl_bessel_i0":
        y = libdevice.cyl_bessel_i0(x)
    elif FN == "cyl_bessel_i1":
        y = libdevice.cyl_bessel_i1(x)
    elif FN == "erfcx":
        y = libdevice.erfcx(x)
    elif FN == "erfinv":
        y = libdevice.erfinv(x)
    elif FN == "j0":
        y = libdevice.j0(x)
    else:
        y = libdevice.y1(x)
    tl.store(y_ptr + offs, y, mask=m)


@pytest.mark.parametrize("name", sorted(REFS))
def test_special_function_matches_torch(name):
    x = torch.linspace(0.05, 0.9, 100)
    y = torch.empty_like(x)
    _special[(1,)](x, y, 100, FN=name, BLOCK=128)
    torch.testing.assert_close(y, REFS[name](x), rtol=1e-4, atol=1e-5)


def test_ilogb_is_an_integer_exponent():
    @triton.jit
    def k(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, libdevice.ilogb(tl.load(x_ptr + offs)))
    x = torch.tensor([1.0, 2.0, 3.0, 0.25, 1000.0, -8.0, 0.5, 7.9])
    y = torch.empty(8, dtype=torch.int32)
    k[(1,)](x, y, BLOCK=8)
    assert y.tolist() == [0, 1, 1, -2, 9, 3, -1, 2]


def test_ldexp_scales_by_a_power_of_two_over_the_whole_exponent_range():
    # frexp's mantissa (Inductor's triton_helpers.frexp) is ldexp(x, -ilogb(x) - 1); a shift past
    # 127 must not overflow on the way when the result is finite
    @triton.jit
    def k(x_ptr, n_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, libdevice.ldexp(tl.load(x_ptr + offs), tl.load(n_ptr + offs)))
    x = torch.tensor([1.0, -3.0, 0.75, 1e-30, 3e38, 0.0, 5.5, 0.5])
    n = torch.tensor([3, -2, 0, 100, -140, 7, -1, 128], dtype=torch.int32)
    y = torch.empty(8)
    k[(1,)](x, n, y, BLOCK=8)
    # C's ldexp (torch.ldexp in f32 multiplies by 2^n and overflows at n = 128): exact in f64
    torch.testing.assert_close(y, torch.ldexp(x.double(), n.double()).float(), rtol=0, atol=0)


def test_frexp_through_inductor_matches_eager():
    from study.compile_mtia import compile_for_mtia
    x = torch.tensor([0.0, 1.0, -3.5, 1e-20, 6e30, 0.3, 1024.0, -0.001])
    fn = lambda x: torch.frexp(x)  # noqa: E731
    c, _ = compile_for_mtia(fn, x)
    (m, e), (want_m, want_e) = c(x), fn(x)
    assert torch.equal(m, want_m) and torch.equal(e, want_e), (m, e)


@triton.jit
def _rounding(x_ptr, r_ptr, e_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(r_ptr + offs, libdevice.round(x))
    tl.store(e_ptr + offs, libdevice.rint(x))


def test_round_takes_halfway_cases_away_from_zero_and_rint_to_even():
    """libdevice.round is C round(): 2.5 -> 3, -0.5 -> -1 (torch.round, like rint, gives 2 and
    -0); 0.49999997 stays 0 (x + 0.5 would round up to 1 first); huge, infinite and NaN values
    pass through."""
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -3.7, 2.0 ** 24 + 2, float("inf"), float("nan"),
                      -0.3, 7.0, 1e-30, -1e-30, 3.5, -4.5])
    r, e = torch.empty_like(x), torch.empty_like(x)
    _rounding[(1,)](x, r, e, N=16)
    d = x.double()
    want = torch.where((d - d.trunc()).abs() >= 0.5, d.trunc() + d.sign(), d.trunc()).float()
    torch.testing.assert_close(r, want, equal_nan=True)
    assert r[:5].tolist() == [1.0, 2.0, 3.0, -1.0, -3.0] and torch.signbit(r[10])
    torch.testing.assert_close(e, torch.round(x), equal_nan=True)
