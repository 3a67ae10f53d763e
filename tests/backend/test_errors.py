"""Bad input: every error names the kernel and, where it has one, the source line, and says what
is wrong. Memory errors leave the other tensors untouched."""
from __future__ import annotations

import inspect
import os

import pytest
import torch
import triton
import triton.language as tl
from triton.compiler.errors import CompilationError

import corpus
from backend.sim.isa import DeviceAssertError, SimulationError
from backend.tile_ir import UnsupportedError

HERE = os.path.basename(__file__)


def line_of(fn, needle: str) -> int:
    """Line number in this file of the first source line of `fn` containing `needle`."""
    src, start = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    return start + next(i for i, s in enumerate(src) if needle in s)


# ----------------------------------------------------------------------------- unsupported ops

@triton.jit
def inline_asm_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("mov.u32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(o_ptr + tl.arange(0, BLOCK), y)


def test_unsupported_op_names_op_and_line():
    x = torch.arange(16, dtype=torch.int32)
    with pytest.raises(UnsupportedError) as ei:
        inline_asm_kernel[(1,)](x, x.clone(), BLOCK=16)
    msg = str(ei.value)
    assert "tt.elementwise_inline_asm" in msg and "not supported" in msg
    assert "inline_asm_kernel" in msg
    assert f"{HERE}:{line_of(inline_asm_kernel, 'inline_asm_elementwise')}:" in msg


@triton.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    c = tl.dot_scaled(a, sa, "e4m3", b, sb, "e4m3")
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], c)


def test_dot_scaled_is_a_compile_error_naming_op_kernel_and_line():
    m = n = 16
    k = 64
    a, b = torch.ones(m, k).to(torch.float8_e4m3fn), torch.ones(k, n).to(torch.float8_e4m3fn)
    sa, sb = torch.full((m, k // 32), 127, dtype=torch.uint8), torch.full((n, k // 32), 127, dtype=torch.uint8)
    out = torch.full((m, n), -1.0)
    with pytest.raises(UnsupportedError) as ei:
        dot_scaled_kernel[(1,)](a, sa, b, sb, out, M=m, N=n, K=k)
    msg = str(ei.value)
    assert "'tt.dot_scaled'" in msg and "tl.dot_scaled" in msg and "not supported" in msg
    assert "dot_scaled_kernel" in msg
    assert f"{HERE}:{line_of(dot_scaled_kernel, 'tl.dot_scaled(')}:" in msg
    assert "tl.dot" in msg.split("not supported", 1)[1]  # says what to use instead
    assert bool((out == -1.0).all())


@triton.jit(noinline=True)
def _noinline_helper(x):
    return x * 2


@triton.jit
def noinline_kernel(x_ptr, o_ptr):
    s = tl.load(x_ptr)
    tl.store(o_ptr, _noinline_helper(s))


def test_noinline_device_function_names_call_and_line():
    x = torch.ones(1)
    with pytest.raises(UnsupportedError) as ei:
        noinline_kernel[(1,)](x, x.clone())
    msg = str(ei.value)
    assert "tt.call" in msg and "_noinline_helper" in msg and "noinline" in msg
    assert "noinline_kernel" in msg
    assert f"{HERE}:{line_of(noinline_kernel, '_noinline_helper(s)')}:" in msg


@triton.jit
def static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def test_static_assert_fails_at_compile_time():
    static_assert_kernel[(1,)](torch.zeros(32), BLOCK=32)
    with pytest.raises(CompilationError, match="BLOCK must be a multiple of 16"):
        static_assert_kernel[(1,)](torch.zeros(8), BLOCK=8)


# ----------------------------------------------------------------------------- argument types

class _NotATensor:
    """Looks like a pointer argument to Triton's specialiser (data_ptr + dtype) but is no tensor."""
    dtype = torch.float32

    def data_ptr(self) -> int:
        return 4096


def test_python_float_for_pointer():
    y, out = torch.randn(8), torch.zeros(8)
    with pytest.raises(CompilationError, match="(?s)Unsupported ptr type.*tl.load"):
        corpus.add_kernel[(1,)](1.5, y, out, 8, BLOCK=8)


def test_non_tensor_pointer_object():
    y, out = torch.randn(8), torch.zeros(8)
    with pytest.raises(TypeError, match="kernel 'add_kernel': argument 'x_ptr' must be a tensor, got _NotATensor"):
        corpus.add_kernel[(1,)](_NotATensor(), y, out, 8, BLOCK=8)
    assert bool((out == 0).all())


def test_numpy_array_argument():
    y, out = torch.randn(8), torch.zeros(8)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        corpus.add_kernel[(1,)](y.numpy(), y, out, 8, BLOCK=8)


def test_tensor_on_other_device():
    y, out = torch.randn(8), torch.zeros(8)
    with pytest.raises(ValueError, match="kernel 'add_kernel': tensor argument on device meta"):
        corpus.add_kernel[(1,)](torch.empty(8, device="meta"), y, out, 8, BLOCK=8)


def test_unknown_launch_option():
    y, out = torch.randn(8), torch.zeros(8)
    with pytest.raises(KeyError, match="bogus_option"):
        corpus.add_kernel[(1,)](y, y, out, 8, BLOCK=8, bogus_option=3)


def test_bad_num_stages():
    y, out = torch.randn(8), torch.zeros(8)
    with pytest.raises(ValueError, match="num_stages must be >= 1"):
        corpus.add_kernel[(1,)](y, y, out, 8, BLOCK=8, num_stages=0)


# ----------------------------------------------------------------------------- local memory

@triton.jit
def big_tile_kernel(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(o_ptr + r, tl.sum(x, axis=1))


def test_tile_too_large_for_local_memory():
    with pytest.raises(UnsupportedError) as ei:
        big_tile_kernel[(1,)](torch.zeros(1024 * 1024), torch.zeros(1024), B=1024)
    msg = str(ei.value)
    assert "big_tile_kernel" in msg and "local memory" in msg
    assert "tile<1024x1024xf32>" in msg and f"{HERE}:{line_of(big_tile_kernel, 'x = tl.load')}" in msg


# ----------------------------------------------------------------------------- out of bounds

@triton.jit
def unmasked_copy_kernel(x_ptr, o_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + shift
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, x)


@pytest.mark.parametrize("structured", [True, False], ids=["dma", "scalar_path"])
def test_out_of_bounds_load(structured):
    x, guard, out = torch.randn(100), torch.randn(300), torch.zeros(128)
    g0 = guard.clone()
    with pytest.raises(SimulationError) as ei:
        unmasked_copy_kernel[(1,)](x, out, 0, BLOCK=128, structured_dma=structured)
    msg = str(ei.value)
    assert "unmasked_copy_kernel" in msg and "out-of-bounds" in msg and "'x_ptr'" in msg
    assert f"{HERE}:{line_of(unmasked_copy_kernel, 'x = tl.load')}:" in msg
    assert "[100, 101, 102" in msg
    assert bool((out == 0).all()) and torch.equal(guard, g0)


@pytest.mark.parametrize("structured", [True, False], ids=["dma", "scalar_path"])
def test_out_of_bounds_store_does_not_corrupt(structured):
    x, out = torch.randn(128), torch.zeros(100)
    neighbours = [torch.randn(64) for _ in range(4)]
    before = [t.clone() for t in neighbours]
    with pytest.raises(SimulationError) as ei:
        unmasked_copy_kernel[(1,)](x, out, 0, BLOCK=128, structured_dma=structured)
    msg = str(ei.value)
    assert "unmasked_copy_kernel" in msg and "'o_ptr'" in msg and "[100, 101, 102" in msg
    assert f"{HERE}:{line_of(unmasked_copy_kernel, 'tl.store')}:" in msg
    assert bool((out == 0).all()), "a failing store must not write part of its tile"
    assert all(torch.equal(a, b) for a, b in zip(neighbours, before))


@pytest.mark.parametrize("structured", [True, False], ids=["dma", "scalar_path"])
def test_negative_offset_load(structured):
    x, out = torch.randn(64), torch.zeros(64)
    with pytest.raises(SimulationError) as ei:
        unmasked_copy_kernel[(1,)](x, out, -3, BLOCK=64, structured_dma=structured)
    msg = str(ei.value)
    assert "unmasked_copy_kernel" in msg and "-3" in msg


@triton.jit
def int_div_kernel(a_ptr, b_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.store(o_ptr + r, tl.load(a_ptr + r) // tl.load(b_ptr + r))


def test_integer_division_by_zero():
    a = torch.arange(8, dtype=torch.int32)
    b = torch.ones(8, dtype=torch.int32)
    b[3] = 0
    with pytest.raises(SimulationError, match="int_div_kernel.*division by zero"):
        int_div_kernel[(1,)](a, b, torch.zeros(8, dtype=torch.int32), BLOCK=8)


# ----------------------------------------------------------------------------- device assertions

def test_device_assert_fails_with_debug():
    x = torch.randn(50).abs()
    x[37] = -1.0
    with pytest.raises(DeviceAssertError) as ei:
        corpus.device_assert_kernel[(2,)](x, torch.zeros(50), 50, BLOCK=32, debug=True)
    msg = str(ei.value)
    assert "device_assert_kernel" in msg and "x must be non-negative" in msg and "program (1, 0, 0)" in msg
    assert "corpus.py:" in msg


def test_device_assert_dropped_without_debug():
    x = torch.randn(50).abs()
    x[37] = -1.0
    out = torch.zeros(50)
    corpus.device_assert_kernel[(2,)](x, out, 50, BLOCK=32, debug=False)
    assert torch.isnan(out[37])


@triton.jit
def fp32_matmul_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_multi_buffering_reduced_when_the_tiles_just_overflow():
    # fp32 128x128 A and B tiles: 3 copies each (384 KB) + the accumulator overflow 384 KB;
    # 2 copies (256 KB + 64 KB) fit, so the kernel runs, buffered twice, and says so
    a, b = torch.randn(128, 512), torch.randn(512, 128)
    c = torch.zeros(128, 128)
    k = fp32_matmul_kernel[(1,)](a, b, c, 512, BM=128, BN=128, BK=128, num_stages=3)
    assert "DMA in loops buffered x2 (num_stages=3 does not fit local memory: reduced to 2)" in k.asm["pe"]
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-3)
    ok = fp32_matmul_kernel[(1,)](a, b, c, 512, BM=128, BN=128, BK=128, num_stages=2)
    assert "reduced" not in ok.asm["pe"]


def test_error_names_the_stages_tried_when_nothing_fits():
    with pytest.raises(UnsupportedError) as ei:
        big_tile_kernel[(1,)](torch.zeros(1024 * 1024), torch.zeros(1024), B=1024, num_stages=3)
    msg = str(ei.value)
    assert "big_tile_kernel" in msg and "tried num_stages 3 down to 1" in msg and "num_stages=1." not in msg


@triton.jit
def masked_gather_copy_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    src = (offs * 7) % 128  # masked-off lanes address past the end of x
    x = tl.load(x_ptr + src, mask=src < n, other=0.0)
    tl.store(o_ptr + offs, x)


def test_the_scalar_path_in_timing_mode_checks_addresses_and_counts_accesses_as_functional_mode():
    # timing mode does not read the scalar path's data; what it checks and charges does not change
    from backend.driver import record_launches, sim_mode
    x, out = torch.randn(100), torch.zeros(128)
    cycles = {}
    for mode in ("functional", "timing"):
        with sim_mode(mode), record_launches() as recs:
            masked_gather_copy_kernel[(1,)](x, out, 100, BLOCK=128, structured_dma=False, index_dma=False)
        cycles[mode] = (recs[0].cycles, recs[0].timing.bytes, recs[0].timing.engine_busy)
        if mode == "functional":
            src = (torch.arange(128) * 7) % 128
            assert torch.equal(out, torch.where(src < 100, x[src.clamp(max=99)], 0.0))
        with sim_mode(mode), pytest.raises(SimulationError) as ei:
            masked_gather_copy_kernel[(1,)](x, out, 128, BLOCK=128, structured_dma=False, index_dma=False)
        assert "out-of-bounds" in str(ei.value) and "'x_ptr'" in str(ei.value), mode
        assert f"{HERE}:{line_of(masked_gather_copy_kernel, 'x = tl.load')}:" in str(ei.value)
    assert cycles["functional"] == cycles["timing"]
