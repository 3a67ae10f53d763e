"""study/tolerances.py: one table, looked up by any dtype name, with each use's departures."""
from __future__ import annotations

import pytest
import torch

from study.tolerances import TOLERANCE, USES, short_name, tolerance


@pytest.mark.parametrize("names,tol", [
    (("f32", "float32", "torch.float32", torch.float32, "float"), 1e-4),
    (("bf16", "bfloat16", torch.bfloat16), 1e-2),
    (("f16", "float16", "half", torch.float16), 1e-2),
    (("i8", "int8", torch.int8), 0.0),
    (("i32", "int32", torch.int32), 0.0),
    (("i64", "int64", "long", torch.int64), 0.0),
    (("f8e4m3", "float8_e4m3fn", torch.float8_e4m3fn), 1e-1),
])
def test_every_name_of_a_dtype_reads_the_same_entry(names, tol):
    assert {short_name(n) for n in names} == {names[0]}
    assert [tolerance(n) for n in names] == [tol] * len(names)
    assert TOLERANCE[names[0]] == tol


def test_kernel_use_is_the_table_and_exact_elsewhere():
    assert all(tolerance(d, "kernel") == v for d, v in TOLERANCE.items())
    assert tolerance(torch.float64) == 0.0 and short_name(torch.float64) == "float64"


def test_compiled_use_keeps_the_opinfo_and_model_values():
    # what study/opinfo.py (STUDY_TOL, default 1e-4) and study/model_coverage.py (TOL, default
    # 1e-4) used before the table was shared
    before = {"float32": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}
    for d in (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.complex64, torch.int32,
              torch.int64, torch.bool, torch.int8, torch.uint8):
        assert tolerance(d, "compiled") == before.get(str(d).removeprefix("torch."), 1e-4), d


def test_smoke_use_is_looser_for_bf16_only():
    assert tolerance("bf16", "smoke") == 2e-2
    assert tolerance("f32", "smoke") == TOLERANCE["f32"]


def test_every_use_says_why_and_unknown_uses_are_refused():
    assert all(u.reason for u in USES.values())
    with pytest.raises(ValueError, match="unknown tolerance use"):
        tolerance("f32", "gpu")
