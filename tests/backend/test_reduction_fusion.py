"""An integer sum of a tensor that is also cumsum'ed takes the scan's last element
(lowering._scan_totals): one reduction-engine pass instead of two. Floats keep both passes
(a different summation order would change the rounding)."""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _scan_and_total(x_ptr, y_ptr, t_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(y_ptr + tl.arange(0, N), tl.cumsum(x, axis=0))
    tl.store(t_ptr, tl.sum(x, axis=0))


@pytest.mark.parametrize("dtype,fused", [(torch.int32, True), (torch.int64, True), (torch.float32, False)])
def test_cumsum_yields_the_total(dtype, fused):
    x = (torch.randint(-50, 50, (256,)) if not dtype.is_floating_point else torch.randn(256)).to(dtype)
    y, t = torch.empty_like(x), torch.empty(1, dtype=dtype)
    k = _scan_and_total[(1,)](x, y, t, N=256)
    torch.testing.assert_close(y, torch.cumsum(x, 0).to(dtype), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(t[0], x.sum().to(dtype), rtol=1e-5, atol=1e-4)
    asm = k.asm["mtiasm"]
    assert ("re.reduce" not in asm) == fused
    assert ("total=True" in asm) == fused
