"""T2 line counts: an implementation's own helpers count, the language it is written in does not."""
from __future__ import annotations

import inspect

import triton  # noqa: F401

import kernels.quantisation as KQ
from study.measure import source_lines


def _lines(f) -> int:
    return len([ln for ln in inspect.getsource(f).splitlines() if ln.strip()])


def test_jit_helpers_count_with_the_kernel():
    kernel = _lines(KQ.mx4_quantize_kernel.fn)
    helper = _lines(KQ._e2m1_code.fn)
    assert source_lines(KQ.mx4_quantize_kernel) == kernel + helper


def test_expert_shared_builder_helpers_count():
    from baselines.expert import normalisation, streaming
    own = _lines(normalisation.norm_program.__wrapped__)
    assert source_lines(normalisation.norm_program) >= own + _lines(streaming.stream2d)


def test_an_implementation_of_several_kernels_counts_each_and_shared_helpers_once():
    import kernels.recommendation_ext as KX
    main, combine = KX.jagged_sum_ext_kernel, KX.jagged_sum_combine
    both = source_lines((main, combine))
    assert both == source_lines(main) + _lines(combine.fn)
    assert source_lines((main, main)) == source_lines(main)
