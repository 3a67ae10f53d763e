"""Round half away from zero as torch code writes it, `where(y >= 0, floor(y + 0.5), ceil(y - 0.5))`,
read as `trunc(y + copysign(0.5, y))` (backend/passes/idioms.py, option `round_idiom`): the
tile IR, the values (halfway cases, the float just below one half, NaN, infinities, -0.0), and
the SIMD work saved."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from backend.driver import record_launches


@triton.jit
def _round_away(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(x_ptr + offs, mask=m, other=0.0)
    r = tl.where(y >= 0, tl.floor(y + 0.5), tl.ceil(y - 0.5))
    tl.store(y_ptr + offs, r, mask=m)


def _launch(x, **kw):
    out = torch.empty_like(x)
    with record_launches() as recs:
        k = _round_away[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024, **kw)
    return k, recs[0], out


def test_round_half_away_is_one_trunc_of_a_signed_half_and_keeps_every_value():
    g = torch.Generator().manual_seed(0)
    special = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 0.0, -0.0,
                            float("nan"), float("inf"), float("-inf"), 8388607.5, -8388607.5, 1e30, -1e-30])
    x = torch.cat([special, torch.randn(3000, generator=g) * 100])
    k, rec, out = _launch(x)
    k0, rec0, plain = _launch(x, round_idiom=False)
    tile, tile0 = k.asm["tile"], k0.asm["tile"]
    assert "math.trunc" in tile and "math.copysign" in tile and "floor" not in tile and "ceil" not in tile
    assert "floor" in tile0 and "ceil" in tile0
    ref = torch.where(x >= 0, torch.floor(x + 0.5), torch.ceil(x - 0.5))
    torch.testing.assert_close(out, ref, equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(plain, ref, equal_nan=True, rtol=0, atol=0)
    # 0.49999997 + 0.5 rounds to 1.0 first: both forms give 1, as the reference does
    assert out[6] == 1.0 and out[7] == -1.0
    # the one difference: -0.0 gives -0.0 (the select gave +0.0)
    assert torch.signbit(out[9]) and not torch.signbit(plain[9])
    assert rec.timing.engine_busy["SIMD"] < rec0.timing.engine_busy["SIMD"]
