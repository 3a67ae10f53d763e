"""study.measure.compare: tolerances of docs/study.md, the same verdict whatever the chunking."""
import math

import pytest
import torch

from study import measure
from study.measure import compare


@pytest.fixture(params=[3, 1 << 20], ids=["chunk3", "chunk1M"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(measure, "_CHUNK", request.param)
    return request.param


def test_within_tolerance_and_errors(chunk):
    ref = torch.tensor([1.0, -2.0, 4.0, 0.0, 8.0, 16.0, 32.0])
    out = ref.clone()
    out[5] += 16.0 * 1e-4  # rel 1e-4: on the fp32 boundary (tol + tol * |ref|)
    c = compare(out, ref, "f32")
    assert c.correct
    assert c.max_abs_err == pytest.approx(16.0 * 1e-4, rel=1e-3)
    assert c.max_rel_err == pytest.approx(1e-4, rel=1e-3)


def test_outside_tolerance_in_a_later_chunk(chunk):
    ref = torch.ones(10)
    out = ref.clone()
    out[9] = 1.01
    c = compare(out, ref, "f32")
    assert not c.correct and "outside tolerance" in c.why
    assert c.max_abs_err == pytest.approx(0.01, rel=1e-4)


def test_nan_and_inf_handling(chunk):
    ref = torch.tensor([float("nan"), 1.0, float("inf"), -float("inf"), 2.0])
    assert compare(ref.clone(), ref, "f32").correct  # NaN matches NaN, equal infinities match
    bad = ref.clone()
    bad[0] = 0.0  # NaN expected, a number given
    assert not compare(bad, ref, "f32").correct
    bad = ref.clone()
    bad[4] = float("nan")
    assert not compare(bad, ref, "f32").correct
    # an infinite reference is not a licence for any answer: a finite value or the opposite
    # infinity is wrong (the tolerance tol * |ref| is finite)
    for i, v in ((2, 1.0), (2, -float("inf")), (3, 3.0)):
        bad = ref.clone()
        bad[i] = v
        assert not compare(bad, ref, "f32").correct, (i, v)


def test_ints_are_exact_and_shapes_checked(chunk):
    ref = torch.arange(9, dtype=torch.int32)
    assert compare(ref.clone(), ref, "i32").correct
    off = ref.clone()
    off[8] += 1
    assert not compare(off, ref, "i32").correct
    c = compare(ref.reshape(3, 3), ref, "i32")
    assert not c.correct and "shape" in c.why
    assert compare([ref], [ref, ref], "i32").why.startswith("returned 1 tensors")


def test_relative_error_of_zero_reference_is_finite(chunk):
    c = compare(torch.tensor([1e-9]), torch.tensor([0.0]), "f32")
    assert c.correct and math.isfinite(c.max_abs_err) and c.max_rel_err > 1e9
