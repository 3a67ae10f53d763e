"""Switch `segment_reductions` (backend/inductor_cpu/segments.py): index_add, accumulating
index_put and scatter_reduce over a jagged segment id (searchsorted of sorted boundaries over
arange(n)) run as the segment-reduction Triton kernel on the simulated chip, match eager, and
keep eager's errors; other indices are left as they were."""
from __future__ import annotations

import math

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def _compiled(fn, *args, **options):
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    return compile_for_mtia(fn, *args, **options)


def _segment_kernels(rep) -> int:
    return sum("segment_reduce" in k.name for k in rep.kernels)


def _check(fn, *args, rtol=1e-5, atol=1e-5):
    compiled, rep = _compiled(fn, *args)
    assert rep.all_on_chip and _segment_kernels(rep) >= 1, rep.report()
    got, want = compiled(*args), fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return rep


def _seg(offsets, n, right=True):
    return torch.searchsorted(offsets[1:], torch.arange(n), right=right)


# offsets with empty segments and long ones; rows x segments past host_ops' SCATTER_DENSE_LIMIT
# (64K) and sources past INDEX_ADD_16_LIMIT, where host_ops.py's decompositions, which run
# first (while AOTAutograd traces), take the smaller calls in their own forms
OFFSETS = torch.tensor([0, 3, 3, 3, 4000, 4001, 12000])


def test_jagged_pooling_as_segment_reductions():
    """The T3 jagged block's pattern: segment max, exp, segment sum (FP32, index_put with
    accumulation after Inductor's decomposition), weighted bf16 segment sums (index_add)."""
    torch.manual_seed(0)
    n, b = int(OFFSETS[-1]), len(OFFSETS) - 1

    def pool(v, off, s):
        seg = _seg(off, v.shape[0])
        smax = s.new_full((b,), float("-inf")).scatter_reduce(0, seg, s, "amax", include_self=True)
        p = torch.exp(s - smax[seg])
        denom = s.new_zeros(b).index_add(0, seg, p)
        a = (p / denom[seg].clamp(min=1e-30)).to(v.dtype).unsqueeze(1)
        return v.new_zeros(b, v.shape[1]).index_add(0, seg, a * v), denom, smax
    v, s = torch.randn(n, 24).bfloat16(), torch.randn(n)
    rep = _check(pool, v, OFFSETS, s, rtol=1e-2, atol=1e-2)
    assert _segment_kernels(rep) == 3, rep.report()


@pytest.mark.parametrize("reduce", ["sum", "amax", "amin", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_over_segments(reduce, include_self):
    torch.manual_seed(0)
    n = int(OFFSETS[-1])
    s = torch.randn(n)
    s[50] = math.nan          # a NaN in the last segment: max / min propagate it, as aten does
    self = torch.randn(len(OFFSETS) - 1)
    _check(lambda x, off, src: x.scatter_reduce(0, _seg(off, n), src, reduce, include_self=include_self),
           self, OFFSETS, s)


def test_index_add_alpha_right_false_and_fp32_rows():
    torch.manual_seed(0)
    ends = torch.tensor([4, 4, 9, 29])          # right=False: segment b is (ends[b-1], ends[b]]
    x = torch.randn(30, 5)
    _check(lambda s, e, v: s.index_add(0, torch.searchsorted(e, torch.arange(30)), v, alpha=0.5),
           torch.randn(4, 5), ends, x)


def test_eager_errors_stay_errors():
    """A row past the last boundary names a segment self does not have (aten: index out of
    range); unsorted boundaries break searchsorted's contract: both fail on the device."""
    def f(x, off, v):
        return x.index_add(0, _seg(off, v.shape[0]), v)
    compiled, rep = _compiled(f, torch.zeros(3), torch.tensor([0, 2, 4, 6]), torch.ones(6))
    assert _segment_kernels(rep) == 1
    with pytest.raises(Exception, match="segment boundaries"):
        compiled(torch.zeros(3), torch.tensor([0, 2, 4, 5]), torch.ones(6))
    with pytest.raises(Exception, match="segment boundaries"):
        compiled(torch.zeros(3), torch.tensor([0, 4, 2, 6]), torch.ones(6))


def test_other_indices_and_the_switch_off_are_left_alone():
    idx = torch.tensor([2, 0, 1, 2, 0])
    _, rep = _compiled(lambda x, i, v: x.index_add(0, i, v), torch.zeros(3), idx, torch.ones(5))
    assert _segment_kernels(rep) == 0
    _, rep = _compiled(lambda x, off, v: x.index_add(0, _seg(off, 6), v), torch.zeros(3),
                       torch.tensor([0, 2, 4, 6]), torch.ones(6), segment_reductions=False)
    assert _segment_kernels(rep) == 0
