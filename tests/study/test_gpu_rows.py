"""The committed H200 measurement (results/raw/gpu_h200.csv, study F6) and the simulator's h200
rows beside it: they parse with the project's strict reader and say what they measured on."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from study.results import read_rows

RAW = Path(__file__).resolve().parents[2] / "results" / "raw"
GPU = RAW / "gpu_h200.csv"
SIM = RAW / "sim_h200.csv"


@pytest.fixture(scope="module")
def gpu_rows() -> list[dict]:
    # committed raw result (F6 reads it; it cannot be regenerated without an H200)
    assert GPU.exists(), f"{GPU} is missing: measure it with python3 -m study.gpu on an H200"
    rows = read_rows(GPU)  # strict: a malformed or partial line raises
    assert rows, f"{GPU} has no rows"
    return rows


def test_gpu_rows_say_where_they_ran(gpu_rows):
    for r in gpu_rows:
        assert r["suite"] == "gpu"
        assert r["chip"] == "h200"
        assert r["impl"] in ("triton_gpu", "torch_gpu")
        assert r["device"] and "H200" in r["device"], r["device"]
        assert r["versions"] and "triton=" in r["versions"] and "torch=" in r["versions"]
        assert r["cycles"] is None and r["sim_wall_s"] is None  # measured, not simulated


def test_gpu_times_positive_and_metrics_consistent(gpu_rows):
    timed = [r for r in gpu_rows if r["time_us"] is not None]
    assert timed, "no timed rows"
    for r in timed:
        assert r["time_us"] > 0 and math.isfinite(r["time_us"])
        if r["bytes"]:
            assert r["gbps"] == pytest.approx(r["bytes"] / (r["time_us"] * 1e-6) / 1e9, rel=1e-9)
        if r["flops"]:
            assert r["tflops"] == pytest.approx(r["flops"] / (r["time_us"] * 1e-6) / 1e12, rel=1e-9)
    # a row without a time failed, and says why
    for r in gpu_rows:
        if r["time_us"] is None:
            assert not r["correct"] and "error" in (r["notes"] or "")


def test_gpu_rows_pair_up(gpu_rows):
    """Every (workload, shape, dtype) has one triton_gpu and one torch_gpu row."""
    by: dict[tuple, list[str]] = {}
    for r in gpu_rows:
        by.setdefault((r["workload"], r["shape"], r["dtype"]), []).append(r["impl"])
    for k, impls in by.items():
        assert sorted(impls) == ["torch_gpu", "triton_gpu"], (k, impls)


def test_sim_h200_rows():
    assert SIM.exists(), f"{SIM} is missing: python -m study.gpu --simulate"
    rows = read_rows(SIM)
    assert rows
    for r in rows:
        assert r["impl"] == "triton" and r["chip"] == "h200" and r["device"] == "simulated"
        if r["correct"]:
            assert r["time_us"] is not None and r["time_us"] > 0


def test_sim_h100_rows():
    """The h100 config's rows: F6's held-out device, simulated as the h200 rows are."""
    path = RAW / "sim_h100.csv"
    assert path.exists(), f"{path} is missing: python -m study.gpu --simulate --chip h100"
    rows = read_rows(path)
    assert rows
    for r in rows:
        assert r["impl"] == "triton" and r["chip"] == "h100" and r["device"] == "simulated" and r["suite"] == "sim_h100"
        if r["correct"]:
            assert r["time_us"] is not None and r["time_us"] > 0
            assert "H100 datasheet" in (r["notes"] or "")


def test_gpu_script_dry_run(capsys):
    """study/gpu.py imports without a GPU and lists its jobs."""
    from study import gpu
    assert gpu.main(["--dry-run", "--only", "add"]) == 0
    out = capsys.readouterr().out
    assert "would measure add" in out


def test_gpu_rows_one_method_clocks_and_committed_sha(gpu_rows):
    """One timing method for every shape, the GPU clocks beside it, and the true sha of committed code."""
    import re
    for r in gpu_rows:
        assert re.fullmatch(r"[0-9a-f]{40}", r["git_sha"]), r["git_sha"]  # a commit, never '+dirty'
        notes = r["notes"] or ""
        if r["time_us"] is not None:
            assert "timing: do_bench median, L2 cleared" in notes, notes
            assert "cudagraph" not in notes
        assert re.search(r"clocks before sm=\d+MHz mem=\d+MHz, after sm=\d+MHz", notes), notes
        if r["impl"] == "torch_gpu" and r["time_us"] is not None:
            assert "torch path: " in notes  # which torch path the row timed


def test_h200_config_is_derived_from_the_microbenchmarks():
    """backend/configs/h200.toml is what study.gpu_config derives from the committed microbench CSV."""
    from study import gpu_config
    assert gpu_config.main(["--check"]) == 0
    d = gpu_config.derive()
    assert d["n_sm"] == 132 and 1.0 < d["clock_ghz"] < 2.5
    assert 1000 < d["offchip_gbps"] < 6000 and d["sram_gbps"] > d["offchip_gbps"]


def test_h100_config_is_derived_from_its_own_microbenchmarks():
    """backend/configs/h100.toml is what study.gpu_config derives from the committed H100
    microbench CSV, and only from it: the two devices' derivations read different files."""
    from study import gpu_config
    dev = gpu_config.DEVICES["h100"]
    assert dev.csv == RAW / "gpu_microbench_h100.csv" and dev.out.name == "h100.toml"
    assert gpu_config.main(["--device", "h100", "--check"]) == 0
    assert gpu_config.main(["--device", "h200", "--check"]) == 0
    d = gpu_config.derive(dev.csv)
    assert d["n_sm"] == 132 and 1.0 < d["clock_ghz"] < 2.5
    assert 1000 < d["offchip_gbps"] < 3350 and d["sram_gbps"] > d["offchip_gbps"]  # under the datasheet's HBM3
    assert d != gpu_config.derive(gpu_config.DEVICES["h200"].csv)
    text = dev.out.read_text()
    assert 'name = "h100"' in text and 'label = "H100-like"' in text and "gpu_microbench_h200" not in text


def test_derivation_names_a_missing_row(tmp_path):
    from study import gpu_config
    src = gpu_config.DEVICES["h100"].csv.read_text().splitlines(keepends=True)
    cut = tmp_path / "mb.csv"
    cut.write_text("".join(line for line in src if not line.startswith("hbm_copy,")))
    with pytest.raises(gpu_config.MissingRow, match="hbm_copy/2GiB"):
        gpu_config.derive(cut)
    assert gpu_config.main(["--device", "h100", "--csv", str(cut), "--out", str(tmp_path / "x.toml")]) == 1
    assert not (tmp_path / "x.toml").exists()


def test_prediction_split_is_fixed_and_balanced():
    from study import gpu
    names = sorted(gpu.load_workloads())
    halves = [gpu.half(n) for n in names]
    assert set(halves) == {"calibration", "held-out"}
    assert abs(halves.count("calibration") - halves.count("held-out")) <= 4
    assert gpu.half("matmul") == gpu.half("matmul")  # crc32: the same in every process


def test_reproduce_simulates_both_gpu_configs_the_same_way(tmp_path, monkeypatch):
    """make reproduce's F6 step: sim_h200 then sim_h100, one command but for --chip, each file
    replaced only when its run succeeded."""
    import subprocess

    from study import reproduce
    assert reproduce.SIM_GPU_CHIPS == ("h200", "h100")
    (tmp_path / "raw").mkdir()
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        Path(cmd[cmd.index("--out") + 1]).write_text("rows\n")
        return subprocess.CompletedProcess(cmd, 0, stdout="140 jobs simulated\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    for chip in reproduce.SIM_GPU_CHIPS:
        assert reproduce.simulate_gpu(tmp_path, chip, workers=2)
        assert (tmp_path / "raw" / f"sim_{chip}.csv").read_text() == "rows\n"
    strip = [[a for a in c if not a.endswith((".csv.new", "h200", "h100"))] for c in calls]
    assert strip[0] == strip[1] and [c[c.index("--chip") + 1] for c in calls] == ["h200", "h100"]
