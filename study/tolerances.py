"""Correctness tolerances: the one table every comparison against torch in the study reads.

An output is correct when `|out - ref| <= tol + tol * |ref|` elementwise (study/measure.py,
study/gpu.py), or, through `torch.testing.assert_close`, with `rtol = atol = tol`
(study/opinfo_op.py, study/model_coverage.py, study/timeline.py). The values are docs/study.md's.

A dtype may be named the study's way (`"f32"`, `"bf16"`), torch's way (`"float32"`,
`"torch.bfloat16"`, `"half"`) or by its `torch.dtype`. A lookup names its use: what a use does
differently from the table (a dtype the table does not list, a looser value) is written in
`USES`, with the reason, rather than in a table of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# rtol = atol, by the study's short dtype name (docs/study.md, "Tolerances")
TOLERANCE: dict[str, float] = {"f32": 1e-4, "bf16": 1e-2, "f16": 1e-2, "i8": 0.0, "i32": 0.0, "i64": 0.0,
                               "f8e4m3": 1e-1}

# torch's names (str(torch.float32) is "torch.float32": the prefix is dropped first)
ALIASES: dict[str, str] = {
    "float32": "f32", "float": "f32", "fp32": "f32",
    "bfloat16": "bf16",
    "float16": "f16", "half": "f16", "fp16": "f16",
    "int8": "i8", "int32": "i32", "int": "i32", "int64": "i64", "long": "i64",
    "float8_e4m3fn": "f8e4m3",
}


def short_name(dtype: Any) -> str:
    """The study's name of a dtype ("f32"); a name the table does not know comes back as
    torch spells it ("float64", "complex64")."""
    name = str(dtype).removeprefix("torch.")
    return ALIASES.get(name, name)


@dataclass(frozen=True)
class Use:
    """How one kind of comparison reads the table."""
    reason: str
    other: float = 0.0                       # a dtype outside `dtypes`
    dtypes: frozenset[str] = frozenset(TOLERANCE)  # the table's entries this use takes as they are
    looser: dict[str, float] = field(default_factory=dict)  # dtype -> a looser value than the table's


USES: dict[str, Use] = {
    "kernel": Use(
        reason="a workload's implementation against its torch reference (study/measure.py on the simulator, "
               "study/gpu.py on the H200): the table as it is; a dtype it does not list compares exactly"),
    "compiled": Use(
        dtypes=frozenset({"f32", "bf16", "f16"}), other=1e-4,
        reason="torch.compile of an OpInfo op (T4, study/opinfo_op.py) or a model (T3, study/model_coverage.py) "
               "against eager: op_db also runs dtypes the study does not declare (float64, complex, integers, "
               "bool); those get fp32's 1e-4, not exactness, as the OpInfo sweep always did (OpInfo's own "
               "toleranceOverride may loosen any of them further there)"),
    "smoke": Use(
        looser={"bf16": 2e-2},
        reason="a sanity check that a traced or timed bf16 GEMM computed its product (study/timeline.py; "
               "tools/microbench.py checks its GEMM with the same value): not a study measurement, kept at the "
               "2e-2 it has always used"),
}


def tolerance(dtype: Any, use: str = "kernel") -> float:
    """rtol = atol for `dtype` in comparisons of kind `use` (a key of USES)."""
    try:
        u = USES[use]
    except KeyError:
        raise ValueError(f"unknown tolerance use '{use}'; known: {', '.join(USES)}") from None
    name = short_name(dtype)
    if name in u.looser:
        return u.looser[name]
    return TOLERANCE[name] if name in u.dtypes else u.other
