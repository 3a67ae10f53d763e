"""Every corpus kernel against its torch reference: structured-DMA path and the scalar path."""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import corpus


def _params(scalar_path: bool) -> list:
    return [pytest.param(c, id=c.name) for c in corpus.CASES]


def _run(case: corpus.Case, **options) -> None:
    args, outs, expected = corpus.run_case(case, **options)
    corpus.assert_matches(case, outs, expected)
    if case.check is not None:
        case.check(args, outs)


@pytest.mark.parametrize("case", _params(False))
def test_corpus(case: corpus.Case) -> None:
    _run(case)


@pytest.mark.parametrize("case", _params(True))
def test_corpus_scalar_path(case: corpus.Case) -> None:
    # pointer analysis off: every load/store takes the per-element address path
    _run(case, structured_dma=False, index_dma=False)


def test_corpus_size() -> None:
    assert len(corpus.CASES) >= 40
    assert len(corpus.DIFF_CASES) >= 15


def test_empty_grid_writes_nothing() -> None:
    x, y = torch.randn(64), torch.randn(64)
    out = torch.full((64,), 3.0)
    corpus.add_kernel[(0,)](x, y, out, 64, BLOCK=64)
    corpus.add_kernel[(0, 4, 1)](x, y, out, 64, BLOCK=64)
    assert bool((out == 3.0).all())


def test_repeat_launch_uses_cache() -> None:
    x, y, out = torch.randn(100), torch.randn(100), torch.zeros(100)
    k1 = corpus.add_kernel[(1,)](x, y, out, 100, BLOCK=128)
    k2 = corpus.add_kernel[(1,)](x, y, out, 100, BLOCK=128)
    assert k1 is k2
    torch.testing.assert_close(out, x + y)


@triton.jit
def _print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x=", x)
    tl.device_print("pid", tl.program_id(0))


def test_device_print(capsys) -> None:
    _print_kernel[(2,)](torch.arange(4, dtype=torch.int32), BLOCK=4)
    out = capsys.readouterr().out
    assert "pid (0, 0, 0) x=" in out and "[0, 1, 2, 3]" in out
    assert "pid (1, 0, 0)" in out
