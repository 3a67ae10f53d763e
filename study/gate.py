"""The regression gate: fresh quick-suite cycles against results/expected.csv.

`--suite full` gates every study shape and dtype against results/expected_full.csv instead (the
rows `make reproduce` just measured are reused: the runner resumes by source fingerprint).

Simulated cycles are deterministic, so margins are tiny. The gate fails on a slowdown beyond
the margin, on a speed-up beyond it that expected.csv does not record (an unexplained win is
as suspicious as a loss), on a measurement missing from either side, and on any incorrect
result. On failure it prints the regenerated expected file, so an intended change is one
reviewed commit (`--update` writes it).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from study.results import RESULTS_DIR
from study.schema import DEFAULT_REGIME, row_regime

EXPECTED_COLUMNS = ("workload", "impl", "shape", "dtype", "chip", "cycles", "margin")
DEFAULT_MARGIN = 0.001  # 0.1%: room for nothing but deliberate changes
EXPECTED_PATH = RESULTS_DIR / "expected.csv"
GATED_SUITES = ("quick", "full")


def expected_path_for(suite: str) -> Path:
    """The reference file of a gated suite: expected.csv for quick, expected_<suite>.csv else."""
    if suite not in GATED_SUITES:
        raise ValueError(f"the gate covers the suites {', '.join(GATED_SUITES)}, not '{suite}'")
    return EXPECTED_PATH if suite == "quick" else RESULTS_DIR / f"expected_{suite}.csv"

Key = tuple[str, str, str, str, str]


@dataclass
class GateReport:
    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    incorrect: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)     # expected but not measured
    unrecorded: list[str] = field(default_factory=list)  # measured but not expected
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not (self.regressions or self.improvements or self.incorrect or self.missing or self.unrecorded)

    def lines(self) -> list[str]:
        out = []
        for title, items in (("REGRESSION", self.regressions), ("UNRECORDED IMPROVEMENT", self.improvements),
                             ("INCORRECT", self.incorrect), ("MISSING (expected, not measured)", self.missing),
                             ("UNRECORDED (measured, not expected)", self.unrecorded)):
            out += [f"{title}: {i}" for i in items]
        verdict = "PASS" if self.ok else "FAIL"
        out.append(f"gate {verdict}: {self.checked} measurements checked")
        return out


def _key(r: dict[str, Any]) -> Key:
    return (str(r["workload"]), str(r["impl"]), str(r["shape"]), str(r["dtype"]), str(r["chip"]))


def read_expected(path: Path = EXPECTED_PATH) -> dict[Key, tuple[int, float]]:
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != EXPECTED_COLUMNS:
            raise ValueError(f"{path}:1: header must be {','.join(EXPECTED_COLUMNS)}")
        out = {}
        for i, r in enumerate(reader, start=2):
            try:
                out[_key(r)] = (int(r["cycles"]), float(r["margin"]))
            except (TypeError, ValueError) as e:
                raise ValueError(f"{path}:{i}: {e}") from None
    return out


def measured_cycles(rows: list[dict[str, Any]], sha: str) -> dict[Key, dict[str, Any]]:
    """The current fingerprint's default-option rows, one per key (the last appended)."""
    out: dict[Key, dict[str, Any]] = {}
    for r in rows:
        if r["git_sha"] == sha and (r.get("options") or "default") == "default" and not r.get("config") \
                and row_regime(r) == DEFAULT_REGIME:
            out[_key(r)] = r
    return out


def compare(expected: dict[Key, tuple[int, float]], measured: dict[Key, dict[str, Any]]) -> GateReport:
    rep = GateReport()
    for k, r in sorted(measured.items()):
        name = "/".join(k)
        if not r["correct"]:
            rep.incorrect.append(f"{name}: {r.get('notes') or 'outside tolerance'}")
        if k not in expected:
            rep.unrecorded.append(f"{name}: {r['cycles']} cycles")
            continue
        rep.checked += 1
        want, margin = expected[k]
        got = r["cycles"]
        if got is None:
            rep.regressions.append(f"{name}: no cycles measured (expected {want})")
        elif got > want * (1 + margin):
            rep.regressions.append(f"{name}: {got} cycles, expected {want} (+{(got / want - 1) * 100:.2f}% > {margin * 100:g}%)")
        elif got < want * (1 - margin):
            rep.improvements.append(f"{name}: {got} cycles, expected {want} ({(got / want - 1) * 100:.2f}%); "
                                    "record it with `python -m study gate --update`")
    rep.missing = ["/".join(k) for k in sorted(set(expected) - set(measured))]
    return rep


def regenerate(expected: dict[Key, tuple[int, float]], measured: dict[Key, dict[str, Any]]) -> str:
    """The expected file for the measured tree; margins already reviewed are kept."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(EXPECTED_COLUMNS)
    for k in sorted(measured):
        r = measured[k]
        if r["cycles"] is None or not r["correct"]:
            continue  # an incorrect or unmeasured result is never a reference
        margin = expected.get(k, (0, DEFAULT_MARGIN))[1]
        w.writerow([*k, r["cycles"], repr(margin)])
    return buf.getvalue()


def run_gate(workloads: dict[str, Any], results: Path | None = None, expected_path: Path = EXPECTED_PATH,
             update: bool = False, workers: int | None = None, pass_workloads: bool = False,
             suite: str = "quick") -> tuple[GateReport, str]:
    """Run (or resume) a gated suite, then compare it with the expected file."""
    from study import provenance
    from study.results import read_rows
    from study.runner import run_suite
    from study.suites import get_suite
    expected_path_for(suite)  # a clear error for a suite the gate does not cover
    summary = run_suite(get_suite(suite), workloads, results, workers, pass_workloads=pass_workloads)
    measured = measured_cycles(read_rows(summary.path) if summary.path.exists() else [],
                               provenance.source_fingerprint())
    expected = read_expected(expected_path)
    report = compare(expected, measured)
    report.missing += [f"job failed: {e}" for e in summary.errors]
    text = regenerate(expected, measured)
    if update:
        expected_path.parent.mkdir(parents=True, exist_ok=True)
        expected_path.write_text(text)
    return report, text
