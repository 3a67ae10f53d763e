"""Which engine a tt.dot runs on: BF16 on the DPE; FP32 on the vector unit's broadcast FMAs
when those cost less than the DPE's FP32 rate (lowering._fp32_dot_on_simd)."""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from backend.driver import record_launches


@triton.jit
def _gram(x_ptr, out_ptr, F: tl.constexpr, D: tl.constexpr):
    f = tl.arange(0, F)
    d = tl.arange(0, D)
    x = tl.load(x_ptr + f[:, None] * D + d[None, :])
    z = tl.dot(x, tl.trans(x))
    tl.store(out_ptr + f[:, None] * F + f[None, :], z.to(out_ptr.dtype.element_ty))


@pytest.mark.parametrize("dtype,engine", [(torch.float32, "simd.matmul"), (torch.bfloat16, "dpe.matmul")])
def test_dot_engine_follows_the_cheaper_unit(dtype, engine):
    torch.manual_seed(0)
    x = torch.randn(32, 128, dtype=dtype)
    out = torch.empty(32, 32)
    with record_launches() as recs:
        k = _gram[(1,)](x, out, F=32, D=128)
    torch.testing.assert_close(out, x.float() @ x.float().T, rtol=1e-4, atol=1e-3)
    asm = k.asm["mtiasm"]
    assert engine in asm and ({"simd.matmul", "dpe.matmul"} - {engine}).pop() not in asm
    busy = recs[0].timing.engine_busy
    assert (busy["SIMD"] > busy["DPE"]) == (engine == "simd.matmul"), busy
