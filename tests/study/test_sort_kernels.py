"""Switch `sort_kernels` (backend/inductor_cpu/sort.py): sort, argsort, kthvalue, topk, mode and
median compile to Inductor's Triton sort kernel on the simulated chip where the sorted
dimension fits a PE, sorts up to four times longer as runs merged on the chip, match eager, and
larger sorts stay with aten."""
from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

from study.opinfo_op import _picks  # indices pick exactly the values, NaN at NaN

pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def _compiled(fn, *args: torch.Tensor, **options):
    from study.compile_mtia import compile_for_mtia
    torch._dynamo.reset()
    return compile_for_mtia(fn, *args, **options)


def _on_chip(fn, x: torch.Tensor) -> None:
    compiled, rep = _compiled(fn, x)
    assert rep.kernels and rep.all_on_chip, rep.report()
    got, want = compiled(x), fn(x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert torch.equal(g, w)


def test_sorts_and_selections_run_on_the_chip() -> None:
    torch.manual_seed(0)
    x = torch.randn(6, 700)  # distinct values: the order of ties is eager's own business
    _on_chip(lambda a: torch.sort(a, dim=-1, descending=True), x)
    _on_chip(lambda a: torch.argsort(a, dim=0), x)
    _on_chip(lambda a: torch.kthvalue(a, 3, dim=0), x)
    _on_chip(lambda a: torch.median(a, dim=-1), x)
    _on_chip(lambda a: torch.median(a), x[:, :300])


def test_stable_sort_keeps_ties_in_input_order() -> None:
    x = torch.randint(0, 3, (40, 5)).float()
    _on_chip(lambda a: torch.sort(a, stable=True, dim=0, descending=True), x)


def test_what_stays_with_aten() -> None:
    from backend.inductor_cpu.sort import MERGE_LIMIT
    _, rep = _compiled(lambda a: torch.sort(a, dim=-1), torch.randn(2, MERGE_LIMIT + 1))
    assert not rep.all_on_chip
    _, rep = _compiled(lambda a: torch.sort(a, dim=-1), torch.randn(4, 100), sort_kernels=False)
    assert rep.all_on_chip  # Inductor's own sort: up to 512 elements
    _, rep = _compiled(lambda a: torch.kthvalue(a, 3, dim=-1), torch.randn(4, 100), sort_kernels=False)
    assert not rep.all_on_chip
    _, rep = _compiled(lambda a: torch.topk(a, 3, dim=-1), torch.randn(4, 100), sort_kernels=False)
    assert not rep.all_on_chip


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_topk_and_mode_run_on_the_chip(dtype) -> None:
    """Values equal eager's, NaN included (topk takes NaN as the largest); where values tie the
    indices are the stable sort's, which eager leaves unspecified: they are checked to pick the
    same values, and equal eager's where the data has no ties."""
    torch.manual_seed(0)
    nan = float("nan")
    x = torch.randn(5, 300).to(dtype)
    x[1, 7] = nan
    x[2, :40] = 0.5  # ties across the k-th place
    for k, dim, largest in ((5, -1, True), (3, 1, False), (2, 0, True), (300, -1, True)):
        f = lambda a, k=k, dim=dim, largest=largest: torch.topk(a, k, dim=dim, largest=largest)  # noqa: E731
        compiled, rep = _compiled(f, x)
        assert rep.kernels and rep.all_on_chip, rep.report()
        got, want = compiled(x), f(x)
        torch.testing.assert_close(got.values, want.values, equal_nan=True, rtol=0, atol=0)
        assert _picks(x, dim, got.indices, got.values)
    distinct = (torch.randperm(256) - 128).reshape(4, 64).to(dtype)  # exact in bf16 too
    _on_chip(lambda a: torch.topk(a, 4, dim=-1), distinct)
    m = torch.randint(0, 5, (6, 33)).to(dtype)  # many ties: the mode is the smallest most frequent value
    for dim, keepdim in ((-1, False), (0, True)):
        f = lambda a, dim=dim, keepdim=keepdim: torch.mode(a, dim, keepdim)  # noqa: E731
        compiled, rep = _compiled(f, m)
        assert rep.kernels and rep.all_on_chip, rep.report()
        got, want = compiled(m), f(m)
        assert torch.equal(got.values, want.values)
        g = got.indices if keepdim else got.indices.unsqueeze(dim)
        v = got.values if keepdim else got.values.unsqueeze(dim)
        assert _picks(m, dim, g, v)


def test_median_and_nanmedian_with_nans_ties_and_keepdim() -> None:
    # median: a row with a NaN has median NaN at the first NaN's position (eager); nanmedian:
    # the lower median of the row's numbers; an all-NaN row's nanmedian is NaN, at an index
    # that is eager's selection algorithm's own (0 for 3 elements, 2 for 4, 5 for 7): not compared
    nan = float("nan")
    x = torch.tensor([[nan, nan, nan, nan], [1.0, nan, 2.0, 0.5], [3.0, 3.0, 1.0, 3.0],
                      [2.0, nan, nan, 7.0], [4.0, 2.0, 2.0, 9.0]])
    for fn, dim, nan_median in ((torch.median, 1, False), (torch.nanmedian, 1, True),
                                (torch.median, 0, False), (torch.nanmedian, 0, True)):
        f = lambda a, fn=fn, dim=dim: fn(a, dim, keepdim=dim == 0)  # noqa: E731
        compiled, rep = _compiled(f, x)
        assert rep.kernels and rep.all_on_chip, rep.report()
        got, want = compiled(x), f(x)
        torch.testing.assert_close(got.values, want.values, equal_nan=True)
        compared = ~torch.isnan(x).all(dim, keepdim=dim == 0) if nan_median else torch.ones_like(want.indices, dtype=torch.bool)
        assert compared.sum() >= 4 and torch.equal(got.indices[compared], want.indices[compared]), (got, want)
    for fn in (torch.median, torch.nanmedian):  # a scalar, with a dim
        for a in (torch.tensor(1.5), torch.tensor(nan)):
            f = lambda t, fn=fn: fn(t, 0, keepdim=True)  # noqa: E731
            compiled, rep = _compiled(f, a)
            assert rep.all_on_chip, rep.report()
            got, want = compiled(a), f(a)
            torch.testing.assert_close(got.values, want.values, equal_nan=True)
            assert torch.equal(got.indices, want.indices)
    for fn in (torch.median, torch.nanmedian):
        for a in (x, x[2:], torch.tensor([nan, nan])):
            compiled, rep = _compiled(fn, a)
            assert rep.all_on_chip, rep.report()
            torch.testing.assert_close(compiled(a), fn(a), equal_nan=True)


@pytest.mark.parametrize("descending", [False, True])
def test_long_sorts_as_runs_merged_on_the_chip(descending: bool) -> None:
    import math
    torch.manual_seed(0)
    x = torch.randn(2, 9000)          # three runs of up to 4096, padded to four, two merge levels
    x[:, ::50] = math.inf
    x[:, ::77] = -math.inf
    x[:, ::91] = math.nan
    x[:, ::13] = 0.5                  # ties: a stable sort keeps them in input order
    compiled, rep = _compiled(lambda a: torch.sort(a, dim=-1, descending=descending, stable=True), x)
    assert rep.kernels and rep.all_on_chip, rep.report()
    (v, i), (rv, ri) = compiled(x), torch.sort(x, dim=-1, descending=descending, stable=True)
    assert torch.equal(v.nan_to_num(7.0), rv.nan_to_num(7.0)) and torch.equal(i, ri)
    y = torch.randint(-2**40, 2**40, (8200,))
    _on_chip(lambda a: torch.argsort(a, descending=descending, stable=True), y)
