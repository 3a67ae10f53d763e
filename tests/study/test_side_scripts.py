"""The side scripts (T3 model coverage, F6 simulated H200 rows) write through study.results and
resume: a rerun at the same code adds no row; the same case at other code is a new row."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from study import model_coverage, provenance
from study.results import read_rows

REPO = Path(__file__).resolve().parents[2]


def _fake_case(case):
    chip, size, model, mode = case
    return model_coverage.Coverage(model, size, chip, "bfloat16", "tiny", inductor=mode, n_triton_kernels=3,
                                   triton_time_us=1.5, correct=True, max_abs_err=0.0)


def test_model_coverage_resumes_without_duplicating_rows(tmp_path, monkeypatch):
    out = tmp_path / "model_coverage.csv"
    monkeypatch.setattr(model_coverage, "_measure_case", _fake_case)
    monkeypatch.setattr(model_coverage, "configure", lambda: None)
    monkeypatch.setattr(provenance, "source_fingerprint", lambda: "sha1")
    args = ["--models", "decoder,dlrm", "--sizes", "test", "--out", str(out)]
    assert model_coverage.main(args) == 0
    assert model_coverage.main(args) == 0  # resumed: nothing to measure
    rows = list(csv.DictReader(out.open()))
    assert tuple(rows[0]) == model_coverage.COLUMNS
    assert sorted((r["model"], r["inductor"]) for r in rows) == [("decoder", "chip"), ("decoder", "plain"),
                                                                 ("dlrm", "chip"), ("dlrm", "plain")]
    assert {r["git_sha"] for r in rows} == {"sha1"} and rows[0]["triton_time_us"] == "1.5"
    monkeypatch.setattr(provenance, "source_fingerprint", lambda: "sha2")
    assert model_coverage.main(args + ["--inductor", "plain"]) == 0  # new code: new rows
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 6 and [r["git_sha"] for r in rows[4:]] == ["sha2", "sha2"]


def test_simulated_h200_rows_resume_without_duplicates(tmp_path):
    out = tmp_path / "sim_h200.csv"
    cmd = [sys.executable, "-m", "study.gpu", "--simulate", "--only", "add", "--tags", "test", "--workers", "2",
           "--out", str(out)]
    first = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    rows = read_rows(out)
    assert rows and all(r["chip"] == "h200" and r["device"] == "simulated" and r["correct"] for r in rows)
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "resuming" in again.stdout, again.stdout[-2000:]
    assert read_rows(out) == rows
