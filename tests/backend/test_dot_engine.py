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


@triton.jit
def _flatten(x_ptr, b_ptr, out_ptr, bout_ptr, S: tl.constexpr, F: tl.constexpr):
    s = tl.arange(0, S)
    f = tl.arange(0, F)
    x = tl.load(x_ptr + s[:, None, None] * F * F + f[None, :, None] * F + f[None, None, :])
    flat = tl.reshape(x * 2.0, (S, F * F))  # a dense tile: the merge is a view
    p = tl.arange(0, F * F)
    tl.store(out_ptr + s[:, None] * F * F + p[None, :], flat)
    b = tl.broadcast_to(tl.load(b_ptr + f)[None, :], (S, F))  # a stride-0 view: the merge copies
    tl.store(bout_ptr + tl.arange(0, S * F), tl.reshape(b, (S * F,)))


def test_a_reshape_of_a_dense_tile_moves_no_data_and_of_a_broadcast_does():
    x, b = torch.randn(4, 8, 8), torch.randn(8)
    out, bout = torch.empty(4, 64), torch.empty(32)
    k = _flatten[(1,)](x, b, out, bout, S=4, F=8)
    torch.testing.assert_close(out, (2 * x).reshape(4, 64))
    torch.testing.assert_close(bout, b.repeat(4))
    reshapes = [ln for ln in k.asm["mtiasm"].splitlines() if "mlu.reshape" in ln and "expand" not in ln]
    merged = [ln for ln in reshapes if "[4, 64]" in ln or "[4,64]" in ln]
    flat_b = [ln for ln in reshapes if "[32]" in ln]
    assert merged and all("view" in ln and "true" in ln.lower() for ln in merged), reshapes
    assert flat_b and all("false" in ln.lower() or "view" not in ln for ln in flat_b), reshapes
