"""The raw result schema (docs/study.md): one tidy row per measurement, the same for every suite.

Columns are docs/study.md's, in its order, followed by the few this harness needs and docs/study.md
allows adding (never overloading one): the workload's family (figures group by it), the
compile-option set a row ran under (ablation), the autotuning config it measures (F7), the
compile time with Triton's on-disk cache warm, the lines of the implementation's source (T2),
the number of simulated launches, when it was measured (to pick the latest of repeats), and
the memory regime it was priced in (backend/regimes.py; rows written before that column existed
were all priced `cold` and read so).
"""
from __future__ import annotations

import math
from typing import Any

STUDY_COLUMNS: tuple[str, ...] = (
    "run_id", "git_sha", "suite", "workload", "impl", "shape", "dtype", "chip", "cycles", "time_us",
    "flops", "bytes", "tflops", "gbps", "roofline_frac", "max_abs_err", "max_rel_err", "correct",
    "compile_s", "sim_wall_s", "device", "versions", "notes")
EXTRA_COLUMNS: tuple[str, ...] = ("family", "options", "config", "compile_cached_s", "source_lines", "launches",
                                  "measured_at", "regime")
COLUMNS: tuple[str, ...] = STUDY_COLUMNS + EXTRA_COLUMNS

# What identifies one measurement: a resumed sweep skips a job whose rows carry this key.
KEY_COLUMNS: tuple[str, ...] = ("git_sha", "workload", "impl", "shape", "dtype", "chip", "options", "config",
                                "regime")

INT_COLUMNS = frozenset({"cycles", "flops", "bytes", "source_lines", "launches"})
FLOAT_COLUMNS = frozenset({"time_us", "tflops", "gbps", "roofline_frac", "max_abs_err", "max_rel_err",
                           "compile_s", "sim_wall_s", "compile_cached_s"})
BOOL_COLUMNS = frozenset({"correct"})
REQUIRED_COLUMNS = frozenset({"run_id", "git_sha", "suite", "workload", "impl", "shape", "dtype", "chip",
                              "correct", "device"})
DEFAULT_OPTIONS = "default"
DEFAULT_REGIME = "cold"  # backend.regimes.DEFAULT_REGIME; what a row without the column was priced in


class SchemaError(ValueError):
    """A row that does not fit the schema; the message names the column and the value."""


def _parse_one(col: str, text: str) -> Any:
    if text == "":
        if col in REQUIRED_COLUMNS:
            raise SchemaError(f"column '{col}' is empty")
        return None
    if col in INT_COLUMNS:
        try:
            return int(text)
        except ValueError:
            raise SchemaError(f"column '{col}': '{text}' is not an integer") from None
    if col in FLOAT_COLUMNS:
        try:
            v = float(text)
        except ValueError:
            raise SchemaError(f"column '{col}': '{text}' is not a number") from None
        return v
    if col in BOOL_COLUMNS:
        if text not in ("True", "False"):
            raise SchemaError(f"column '{col}': '{text}' is not True/False")
        return text == "True"
    return text


def parse_row(header: list[str], fields: list[str]) -> dict[str, Any]:
    """Typed row from CSV fields; raises SchemaError on a wrong field count or a bad value."""
    if len(fields) != len(header):
        raise SchemaError(f"{len(fields)} fields, the header has {len(header)}")
    return {col: _parse_one(col, text) for col, text in zip(header, fields)}


def check_header(header: list[str]) -> None:
    """A raw file must hold every docs/study.md column; extra columns are allowed (older or GPU files
    may lack this harness's extras, which read as empty)."""
    missing = [c for c in STUDY_COLUMNS if c not in header]
    if missing:
        raise SchemaError(f"header lacks columns {missing}")
    dup = {c for c in header if header.count(c) > 1}
    if dup:
        raise SchemaError(f"header repeats columns {sorted(dup)}")


def format_value(col: str, v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(v)  # round-trips exactly: rerunning gives byte-identical files
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def validate_row(row: dict[str, Any]) -> dict[str, Any]:
    """The full row in column order; unknown keys or missing required values are errors."""
    unknown = set(row) - set(COLUMNS)
    if unknown:
        raise SchemaError(f"row has columns not in the schema: {sorted(unknown)}")
    out = {c: row.get(c) for c in COLUMNS}
    for c in REQUIRED_COLUMNS:
        if out[c] is None or out[c] == "":
            raise SchemaError(f"row lacks required column '{c}'")
    if out["options"] is None:
        out["options"] = DEFAULT_OPTIONS
    if out["config"] is None:
        out["config"] = ""
    if out["regime"] is None:
        out["regime"] = DEFAULT_REGIME
    # every value must survive the CSV round trip with its type
    for c in COLUMNS:
        _parse_one(c, format_value(c, out[c]))
    return out


def row_regime(row: dict[str, Any]) -> str:
    """A row's memory regime; rows from before the column existed were priced `cold`."""
    return row.get("regime") or DEFAULT_REGIME


def row_key(row: dict[str, Any]) -> tuple:
    return tuple(row_regime(row) if c == "regime" else "" if row.get(c) is None else str(row.get(c))
                 for c in KEY_COLUMNS)
