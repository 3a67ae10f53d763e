"""Switch `host_op_lowerings` (backend/inductor_cpu/host_ops.py): ops Inductor leaves to aten on
the host (histc, index_reduce prod / amin / amax, segment_reduce, cdist, pdist, addbmm,
scatter_reduce prod / mean / amax / amin, scatter multiply, GEMMs with an empty dimension, bilinear, convolutions) compile
to Triton kernels on the simulated chip, with no aten op left on the host, and match eager."""
from __future__ import annotations

import math

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def _on_chip(fn, *args: torch.Tensor, rtol: float = 1e-4, atol: float = 1e-4, **options) -> None:
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    compiled, rep = compile_for_mtia(fn, *args, **options)
    assert rep.kernels and rep.all_on_chip, rep.report()
    torch.testing.assert_close(compiled(*args), fn(*args), rtol=rtol, atol=atol, equal_nan=True)


def test_switch_off_leaves_the_op_on_the_host() -> None:
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    _, rep = compile_for_mtia(lambda a: torch.histc(a, bins=4, min=-1, max=1), torch.randn(16),
                              host_op_lowerings=False)
    assert not rep.all_on_chip


def test_histc_data_range_explicit_range_edges_and_bf16() -> None:
    torch.manual_seed(0)
    _on_chip(lambda a: torch.histc(a, bins=7), torch.randn(50))
    # elements on the range's ends and outside it, NaN (dropped), a point range (widened by 1)
    x = torch.tensor([-1.0, 1.0, 0.0, 0.5, -2.0, 3.0, math.nan, 0.2, 0.999, -0.6])
    _on_chip(lambda a: torch.histc(a, bins=10, min=-1, max=1), x)
    _on_chip(lambda a: torch.histc(a, bins=3), torch.full((5,), 2.0))
    _on_chip(lambda a: torch.histc(a, bins=10, min=-1, max=1), torch.randn(5, 6).bfloat16(), rtol=1e-2, atol=1e-2)


def test_histc_of_a_non_finite_data_range_raises() -> None:
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    x = torch.tensor([0.0, math.inf, 1.0])
    compiled, _ = compile_for_mtia(lambda a: torch.histc(a, bins=4), torch.randn(3))
    with pytest.raises(Exception, match="not finite"):
        compiled(x)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
def test_index_reduce_with_and_without_self(reduce: str) -> None:
    torch.manual_seed(0)
    src = torch.randn(3, 5, 2)
    src[0, 1, 0] = math.nan
    for include_self in (True, False):
        _on_chip(lambda s, i, v, inc=include_self: s.index_reduce(1, i, v, reduce, include_self=inc),
                 torch.randn(3, 6, 2), torch.tensor([0, 2, 2, 5, 0]), src)


def test_index_reduce_out_of_range_index_raises() -> None:
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    fn = lambda s, i, v: s.index_reduce(0, i, v, "amax")  # noqa: E731
    s, v = torch.randn(4), torch.randn(2)
    compiled, _ = compile_for_mtia(fn, s, torch.tensor([0, 3]), v)
    with pytest.raises(Exception, match="index out of range"):
        compiled(s, torch.tensor([0, 4]), v)


def test_segment_reduce_lengths_offsets_initial_and_empty_segments() -> None:
    torch.manual_seed(0)
    d = torch.randn(6, 3)
    for reduce in ("sum", "mean", "max", "min", "prod"):
        _on_chip(lambda d, n, r=reduce: torch.segment_reduce(d, r, lengths=n, axis=0), d, torch.tensor([2, 0, 3, 1]))
        _on_chip(lambda d, o, r=reduce: torch.segment_reduce(d, r, offsets=o, axis=0, initial=1.5), d,
                 torch.tensor([0, 2, 2, 5, 6]))
    # batched lengths along axis 1
    _on_chip(lambda d, n: torch.segment_reduce(d, "max", lengths=n, axis=1), torch.randn(2, 5, 3),
             torch.tensor([[2, 3], [0, 5]]))


def test_segment_reduce_with_lengths_not_covering_the_data_raises() -> None:
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    d = torch.randn(6)
    compiled, _ = compile_for_mtia(lambda d, n: torch.segment_reduce(d, "sum", lengths=n), d, torch.tensor([2, 4]))
    with pytest.raises(Exception, match="segment lengths"):
        compiled(d, torch.tensor([2, 3]))


def test_cdist_every_norm_and_the_matrix_product_form() -> None:
    torch.manual_seed(0)
    for p in (0.0, 1.0, 2.0, 1.5, math.inf):
        _on_chip(lambda a, b, p=p: torch.cdist(a, b, p=p), torch.randn(2, 7, 4), torch.randn(2, 5, 4))
    # more than 25 rows: aten's |a|^2 + |b|^2 - 2ab form, taken the same way
    _on_chip(lambda a, b: torch.cdist(a, b), torch.randn(30, 4), torch.randn(5, 4))


def test_pdist_every_norm() -> None:
    torch.manual_seed(0)
    for p in (0.0, 1.0, 2.0, 3.0, math.inf):
        _on_chip(lambda a, p=p: torch.nn.functional.pdist(a, p=p), torch.randn(9, 3))
    _on_chip(lambda a: torch.nn.functional.pdist(a), torch.randn(2, 5))


def test_addbmm_scaled_and_with_beta_zero() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(3, 5, 4), torch.randn(3, 4, 10)
    _on_chip(lambda s, a, b: torch.addbmm(s, a, b, beta=0.6, alpha=0.2), torch.randn(5, 10), a, b)
    s = torch.full((5, 10), math.nan)  # beta = 0: self is not read
    _on_chip(lambda s, a, b: torch.addbmm(s, a, b, beta=0), s, a, b)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_every_reduction_on_the_chip(reduce: str, include_self: bool) -> None:
    torch.manual_seed(1)
    # dim 1 of a 2-D self, an index smaller than self and src in the other dim (self's rows past
    # it untouched), repeated targets and untouched positions
    self_, src = torch.randn(4, 6), torch.randn(5, 7)
    index = torch.tensor([[0, 0, 5, 2], [1, 1, 1, 1], [3, 5, 3, 0]])
    _on_chip(lambda s, i, x: s.scatter_reduce(1, i, x, reduce, include_self=include_self), self_, index, src)
    # dim 0, a 3-D case, and bf16
    s3, x3 = torch.randn(3, 4, 2), torch.randn(5, 4, 2)
    i3 = torch.randint(0, 3, (5, 3, 2))
    _on_chip(lambda s, i, x: s.scatter_reduce(0, i, x, reduce, include_self=include_self), s3, i3, x3)
    _on_chip(lambda s, i, x: s.scatter_reduce(0, i, x, reduce, include_self=include_self),
             s3.bfloat16(), i3, x3.bfloat16(), rtol=1e-2, atol=1e-2)


def test_scatter_multiply_and_an_empty_index_on_the_chip() -> None:
    torch.manual_seed(2)
    s, x = torch.randn(3, 5), torch.randn(3, 5)
    i = torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    _on_chip(lambda a, b, c: a.scatter(0, b, c, reduce="multiply"), s, i, x)
    _on_chip(lambda a, b: a.scatter(0, b, 2.5, reduce="multiply"), s, i)
    # an empty index leaves self as it is: one copy on the chip
    _on_chip(lambda a, b, c: a.scatter_reduce(0, b, c, "amax"), s, torch.zeros(0, 5, dtype=torch.int64), x)


def test_gemms_on_empty_operands_on_the_chip() -> None:
    # K = 0: the product is zeros (addmm: beta * self); M or N = 0: an empty result. Inductor's
    # GEMM templates leave these to aten's mm on the host
    a, b = torch.randn(5, 0), torch.randn(0, 10)
    _on_chip(lambda x, y: x @ y, a, b)
    _on_chip(lambda c, x, y: torch.addmm(c, x, y, beta=0.5), torch.randn(10), a, b)
    _on_chip(lambda x, y: torch.bmm(x, y), torch.randn(2, 3, 0), torch.randn(2, 0, 4))
    # M = 0: nothing to compute, and nothing left on the host
    from study.compile_mtia import compile_for_mtia
    for fn, args in [(lambda x, y: x @ y, (torch.randn(0, 5), torch.randn(5, 10))),
                     (lambda x, w, c: torch.nn.functional.linear(x, w, c), (torch.randn(0, 3), torch.randn(4, 3), torch.randn(4)))]:
        torch._dynamo.reset()
        compiled, rep = compile_for_mtia(fn, *args)
        assert rep.all_on_chip, rep.report()
        out = compiled(*args)
        assert out.shape == fn(*args).shape and out.numel() == 0


def test_bilinear_on_the_chip() -> None:
    torch.manual_seed(3)
    w, bias = torch.randn(4, 3, 6), torch.randn(4)
    _on_chip(lambda x, y: torch.nn.functional.bilinear(x, y, w, bias), torch.randn(5, 3), torch.randn(5, 6))
    _on_chip(lambda x, y: torch.nn.functional.bilinear(x, y, w), torch.randn(2, 5, 3), torch.randn(2, 5, 6))
    _on_chip(lambda x, y: torch.nn.functional.bilinear(x, y, w.bfloat16()), torch.randn(5, 3).bfloat16(),
             torch.randn(5, 6).bfloat16(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_convolutions_as_patches_and_a_gemm_on_the_chip(dims: int) -> None:
    # stride, padding, dilation, groups, no bias, padding="same", an unbatched input and bf16
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[dims]
    torch.manual_seed(4)
    x = torch.randn(2, 4, *([7] * dims))
    w = torch.randn(6, 2, *([3] * dims))
    b = torch.randn(6)
    _on_chip(lambda a, k, c: conv(a, k, c, stride=2, padding=1, dilation=1, groups=2), x, w, b)
    _on_chip(lambda a, k: conv(a, k, None, stride=1, padding=2, dilation=2, groups=2), x, w)
    _on_chip(lambda a, k: conv(a, k, padding="same", groups=2), x, w)
    _on_chip(lambda a, k, c: conv(a, k, c, groups=2), x[0], w, b)
    _on_chip(lambda a, k, c: conv(a, k, c, stride=2, groups=2), x.bfloat16(), w.bfloat16(), b.bfloat16(),
             rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_transposed_convolutions_as_direct_ones_on_the_chip(dims: int) -> None:
    # stride (zeros inserted), padding beyond the kernel's reach (cropped), output_padding,
    # dilation, groups (in / out channels swapped per group)
    conv = {1: torch.nn.functional.conv_transpose1d, 2: torch.nn.functional.conv_transpose2d,
            3: torch.nn.functional.conv_transpose3d}[dims]
    torch.manual_seed(5)
    x = torch.randn(2, 4, *([5] * dims))
    w = torch.randn(4, 3, *([3] * dims))
    b = torch.randn(6)
    _on_chip(lambda a, k, c: conv(a, k, c, stride=2, padding=1, output_padding=1, groups=2), x, w, b)
    _on_chip(lambda a, k: conv(a, k, None, stride=3, padding=3, dilation=1), x, w)
    _on_chip(lambda a, k: conv(a, k, None, stride=1, padding=0, dilation=2, groups=2), x, w)


def test_var_mean_over_no_elements_is_nan() -> None:
    _on_chip(lambda a, b: (torch.var_mean(a, dim=1), torch.std_mean(b, dim=0), a.sum()), torch.randn(3, 0),
             torch.randn(0, 4))


def test_bf16_index_add_in_fp32_and_large_ones_on_the_host() -> None:
    from backend.inductor_cpu.host_ops import INDEX_ADD_16_LIMIT
    torch.manual_seed(0)
    idx = torch.tensor([0, 2, 2, 5, 0])
    src = torch.randn(5, 3).bfloat16()
    # FP32 accumulation rounded once: checked against the FP32 sum of the same bf16 numbers
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    fn = lambda s, i, v: s.index_add(0, i, v, alpha=2)  # noqa: E731
    compiled, rep = compile_for_mtia(fn, torch.zeros(6, 3).bfloat16(), idx, src)
    assert rep.kernels and rep.all_on_chip, rep.report()
    want = torch.zeros(6, 3).index_add(0, idx, src.float(), alpha=2).bfloat16()
    torch.testing.assert_close(compiled(torch.zeros(6, 3).bfloat16(), idx, src), want, rtol=0, atol=0)
    n = INDEX_ADD_16_LIMIT + 1
    torch._dynamo.reset()
    _, rep = compile_for_mtia(lambda s, i, v: s.index_add(0, i, v), torch.zeros(4).bfloat16(),
                              torch.zeros(n, dtype=torch.long), torch.ones(n).bfloat16())
    assert not rep.all_on_chip


def test_adaptive_avg_pool3d_as_two_2d_pools() -> None:
    torch.manual_seed(0)
    pool = torch.nn.functional.adaptive_avg_pool3d
    _on_chip(lambda a: pool(a, (3, 2, 4)), torch.randn(2, 3, 7, 5, 9))   # uneven, overlapping windows
    _on_chip(lambda a: pool(a, (1, 5, 1)), torch.randn(3, 4, 5, 6))      # unbatched


@pytest.mark.parametrize("ceil_mode,count_include_pad,divisor", [(False, True, None), (True, False, None),
                                                                  (True, True, 2)])
def test_avg_pool2d_with_large_windows(ceil_mode: bool, count_include_pad: bool, divisor) -> None:
    torch.manual_seed(0)
    fn = lambda a: torch.nn.functional.avg_pool2d(a, (6, 5), (3, 2), (2, 1), ceil_mode,  # noqa: E731
                                                  count_include_pad, divisor)
    _on_chip(fn, torch.randn(2, 3, 11, 9))


@pytest.mark.parametrize("mode,kw", [("sum", {"per_sample_weights": True}), ("mean", {"padding_idx": 2}),
                                     ("max", {}), ("sum", {"include_last_offset": True, "padding_idx": 0})])
def test_embedding_bags_the_kernel_does_not_take(mode: str, kw: dict) -> None:
    # an empty bag (offsets 3, 3), indices that hit the padding row, per-sample weights
    torch.manual_seed(0)
    w = torch.randn(10, 4)
    idx = torch.tensor([1, 2, 0, 2, 9, 5, 2])
    offs = torch.tensor([0, 3, 3, 5]) if not kw.get("include_last_offset") else torch.tensor([0, 3, 3, 5, 7])
    psw = torch.randn(7) if kw.pop("per_sample_weights", False) else None
    def fn(a, i, o):
        p = None if psw is None else psw.to(a.dtype)
        return torch.nn.functional.embedding_bag(i, a, o, mode=mode, per_sample_weights=p, **kw)
    _on_chip(fn, w, idx, offs)
    _on_chip(fn, w.bfloat16(), idx, offs, rtol=2e-2, atol=2e-2)


def test_boolean_mask_assignment_of_broadcast_values() -> None:
    torch.manual_seed(0)
    mask = torch.tensor([True, False, True, True])

    def put(a, m, v, acc=False):
        return torch.index_put(a, (m,), v, accumulate=acc)
    _on_chip(put, torch.randn(4, 3), mask, torch.randn(3))                  # a row for each selected row
    _on_chip(lambda a, m, v: put(a, m, v, True), torch.randn(4, 3), mask, torch.randn(1, 3))
    _on_chip(put, torch.randn(4, 3), mask.unsqueeze(1).expand(4, 3).contiguous(), torch.tensor(2.0))
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    _, rep = compile_for_mtia(put, torch.randn(4, 3), mask, torch.randn(3, 3))  # one row per selected row
    assert not rep.all_on_chip


@pytest.mark.parametrize("mode,padding", [("bilinear", "zeros"), ("nearest", "border"), ("bilinear", "reflection")])
def test_grid_sample_3d_on_the_chip(mode: str, padding: str) -> None:
    torch.manual_seed(0)
    x, grid = torch.randn(2, 3, 4, 5, 6), torch.rand(2, 3, 4, 2, 3) * 2.6 - 1.3   # some taps outside
    for align in (False, True):
        _on_chip(lambda a, g, al=align: torch.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding,
                                                                        align_corners=al), x, grid)


def test_antialiased_bilinear_resize_on_the_chip() -> None:
    """Down- and upsampling per dimension, a dimension of unchanged size (aten skips it, scale
    or not), given scales and align_corners."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 10, 20)
    cases = [((3, 3), False, None, None), ((17, 7), False, None, None), ((8, 20), False, 1.7, 0.9),
             ((5, 5), True, 1.7, 0.9), ((1, 1), False, None, None)]
    for size, align, sh, sw in cases:
        _on_chip(lambda a, size=size, align=align, sh=sh, sw=sw:
                 torch.ops.aten._upsample_bilinear2d_aa(a, size, align, sh, sw), x, rtol=1e-5, atol=1e-5)
    _on_chip(lambda a: torch.nn.functional.interpolate(a, size=(4, 9), mode="bilinear", antialias=True), x)


def test_nonzero_static_on_the_chip() -> None:
    x = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0], [0.0, 0.0, 3.0]])
    for size, fill in ((2, -1), (4, -1), (9, 7)):        # truncated, exact, padded with fill_value
        _on_chip(lambda a, size=size, fill=fill: torch.nonzero_static(a, size=size, fill_value=fill), x)
    _on_chip(lambda a: torch.nonzero_static(a, size=5), torch.tensor([True, False, True]))
    _on_chip(lambda a: torch.nonzero_static(a, size=3), torch.randint(0, 2, (2, 3, 4)))
