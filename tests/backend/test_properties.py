"""Property-based tests: shapes, strides (transposed / sliced views), block sizes and masks are
drawn by hypothesis and every kernel is checked against torch. Block sizes are few powers of two
so the Triton cache keeps the number of distinct compiles small."""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corpus

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
dims = st.integers(1, 40)
blocks = st.sampled_from([8, 16, 32])


@st.composite
def matrices(draw, dtype=torch.float32):
    """A (M, N) tensor that is contiguous, transposed, sliced with a step, or offset into its storage."""
    m, n = draw(dims), draw(dims)
    layout = draw(st.sampled_from(["contiguous", "transposed", "step", "offset"]))
    seed = draw(st.integers(0, 2**16))
    g = corpus.gen(seed)
    if layout == "transposed":
        x = corpus.randn(g, n, m, dtype=dtype).t()
    elif layout == "step":
        s = draw(st.integers(2, 3))
        x = corpus.randn(g, m, n * s, dtype=dtype)[:, ::s]
    elif layout == "offset":
        x = corpus.randn(g, m + 2, n + 3, dtype=dtype)[1:m + 1, 2:n + 2]
    else:
        x = corpus.randn(g, m, n, dtype=dtype)
    assert x.shape == (m, n)
    return x


def _out_like(x: torch.Tensor, transposed: bool) -> torch.Tensor:
    m, n = x.shape
    return torch.zeros(n, m, dtype=x.dtype).t() if transposed else torch.zeros(m, n, dtype=x.dtype)


@SETTINGS
@given(x=matrices(), out_t=st.booleans(), bm=blocks, bn=blocks)
def test_elementwise_2d_strided(x, out_t, bm, bn):
    out = _out_like(x, out_t)
    m, n = x.shape
    corpus.strided_2d_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](
        x, out, m, n, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BM=bm, BN=bn)
    torch.testing.assert_close(out, x * 3 - 1, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(n=st.integers(0, 300), block=st.sampled_from([16, 64, 128]), dtype=st.sampled_from(
    [torch.float32, torch.float16, torch.bfloat16, torch.int32]))
def test_elementwise_1d(n, block, dtype):
    g = corpus.gen(n)
    x = (torch.randn(n, generator=g) * 100).to(dtype)
    y = (torch.randn(n, generator=g) * 100).to(dtype)
    out = torch.zeros(n, dtype=dtype)
    corpus.add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    tol = corpus.tolerance(dtype) if dtype.is_floating_point else 0
    torch.testing.assert_close(out, x + y, rtol=tol, atol=tol)


@SETTINGS
@given(x=matrices())
def test_row_reduction(x):
    m, n = x.shape
    out = torch.zeros(m)
    corpus.row_reduce_kernel[(m,)](x, out, m, n, x.stride(0), x.stride(1), KIND="sum",
                                   BN=triton.next_power_of_2(n))
    torch.testing.assert_close(out, x.sum(1), rtol=1e-4, atol=1e-4)


@SETTINGS
@given(x=matrices(), block=blocks)
def test_looped_row_sum(x, block):
    m, n = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    out = torch.zeros(m)
    corpus.loop_ptr_kernel[(m,)](x, out, n, x.stride(0), BLOCK=block)
    torch.testing.assert_close(out, x.sum(1), rtol=1e-4, atol=1e-4)


@triton.jit
def masked_copy_kernel(x_ptr, mask_ptr, out_ptr, n, fill, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < n
    keep = tl.load(mask_ptr + offs, mask=inb, other=0) != 0
    x = tl.load(x_ptr + offs, mask=inb & keep, other=fill)
    tl.store(out_ptr + offs, x, mask=inb)


@SETTINGS
@given(n=st.integers(1, 300), p=st.floats(0, 1), block=st.sampled_from([16, 64, 128]), step=st.integers(1, 3),
       seed=st.integers(0, 1000))
def test_masked_copy(n, p, block, step, seed):
    g = corpus.gen(seed)
    x = torch.randn(n * step, generator=g)[::step]
    keep = (torch.rand(n, generator=g) < p).to(torch.int8)
    out = torch.full((n,), 123.0)
    xc = x.contiguous()
    masked_copy_kernel[(triton.cdiv(n, block),)](xc, keep, out, n, -2.5, BLOCK=block)
    torch.testing.assert_close(out, torch.where(keep.bool(), xc, torch.tensor(-2.5)))


@SETTINGS
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), b_t=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float16]), seed=st.integers(0, 1000))
def test_small_dot(m, n, k, b_t, dtype, seed):
    g = corpus.gen(seed)
    a = corpus.randn(g, m, k, dtype=dtype)
    b = corpus.randn(g, n, k, dtype=dtype).t() if b_t else corpus.randn(g, k, n, dtype=dtype)
    c = torch.zeros(m, n)
    corpus.dot_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=16, BN=16, BK=16, PRECISION="ieee", ACC_TY=tl.float32)
    tol = 1e-3 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=tol, atol=tol)
