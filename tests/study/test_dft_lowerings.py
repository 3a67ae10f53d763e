"""Switch `dft_lowerings` (backend/inductor_cpu/fft.py): torch.fft's transforms, and the complex64
data movement around them, compile to Triton kernels on the simulated chip (twiddle tables and
one matmul per transformed dimension), with no aten op left on the host but views, and match
eager (pocketfft)."""
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


@pytest.mark.parametrize("name,fn", [
    ("fft", lambda x: torch.fft.fft(x)),
    ("rfft ortho", lambda x: torch.fft.rfft(x, norm="ortho")),
    ("ifft forward", lambda x: torch.fft.ifft(x, norm="forward")),
    ("fft2 padded", lambda x: torch.fft.fft2(x, s=(9, 12))),
    ("rfftn", lambda x: torch.fft.rfftn(x, dim=(0, 2))),
    ("irfft odd", lambda x: torch.fft.irfft(torch.fft.rfft(x), n=7)),
    ("irfft2", lambda x: torch.fft.irfft2(x)),
    ("hfft (conjugated input)", lambda x: torch.fft.hfft(x)),
    ("ihfft2", lambda x: torch.fft.ihfft2(x)),
])
def test_transforms_run_on_chip_and_match_pocketfft(name: str, fn) -> None:
    torch.manual_seed(0)
    rep = _on_chip(fn, torch.randn(6, 5, 8))
    assert rep.kernels and rep.all_on_chip, rep.report()


def test_complex_inputs_and_builders() -> None:
    torch.manual_seed(0)
    z = torch.randn(4, 6, dtype=torch.complex64)
    rep = _on_chip(lambda a: (torch.fft.fftn(a), torch.fft.ifft(a.conj_physical(), dim=0)), z)
    assert rep.kernels and rep.all_on_chip, rep.report()
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    for fn in (torch.complex, torch.polar, lambda x, _: x.cfloat(), lambda x, _: x.chalf()):
        rep = _on_chip(fn, a, b)
        assert rep.kernels and rep.all_on_chip, rep.report()
    rep = _on_chip(lambda x: x.cfloat(), a.bfloat16())
    assert rep.kernels and rep.all_on_chip, rep.report()


def test_switch_off_and_long_transforms_stay_on_the_host() -> None:
    from backend.inductor_cpu.fft import DFT_LIMIT
    torch.manual_seed(0)
    rep = _on_chip(torch.fft.rfft, torch.randn(4, 16), dft_lowerings=False)
    assert not rep.all_on_chip
    rep = _on_chip(torch.fft.rfft, torch.randn(2, 2 * DFT_LIMIT), rtol=1e-3, atol=1e-3)
    assert not rep.all_on_chip
