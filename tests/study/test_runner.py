from __future__ import annotations

import os

import pytest
from tiny_workloads import broken, make_workloads

from study.results import read_rows
from study.runner import run_suite
from study.suites import get_suite

QUICK = get_suite("quick")


def test_rows_carry_the_schema_and_derived_metrics(tmp_path):
    s = run_suite(QUICK, make_workloads(), tmp_path, workers=1, pass_workloads=True)
    rows = read_rows(s.path)
    assert s.errors == [] and len(rows) == 2 and {r["impl"] for r in rows} == {"triton", "expert"}
    r = next(r for r in rows if r["impl"] == "triton")
    assert r["correct"] and r["max_abs_err"] == 0.0 and r["cycles"] > 0 and r["launches"] == 1
    assert r["flops"] == 2 * 2048 and r["bytes"] == 3 * 2048 * 4
    assert r["gbps"] == r["bytes"] / (r["time_us"] * 1e-6) / 1e9
    assert r["compile_s"] > 0 and r["source_lines"] > 0


def test_interrupted_sweep_resumes_where_it_stopped(tmp_path):
    ws = make_workloads((1024, 2048, 4096))
    w = ws["tiny_axpy"]
    good = w.impls["expert"]

    def dies_on_the_largest(x, y):
        if x.numel() == 4096:
            os._exit(3)  # the worker process is killed mid-sweep
        return good(x, y)

    w.impls["expert"] = dies_on_the_largest
    s1 = run_suite(QUICK, ws, tmp_path, workers=1, pass_workloads=True)
    assert s1.errors, "a dead worker must be reported"
    done = read_rows(s1.path)
    assert 0 < len(done) < 6
    w.impls["expert"] = good
    s2 = run_suite(QUICK, ws, tmp_path, workers=2, pass_workloads=True)
    assert s2.errors == [] and s2.skipped_done == len(done)
    rows = read_rows(s2.path)
    assert len(rows) == 6 and len({(r["impl"], r["shape"]) for r in rows}) == 6
    s3 = run_suite(QUICK, ws, tmp_path, workers=2, pass_workloads=True)
    assert s3.jobs == 0 and s3.rows == 0


def test_simulated_cycles_are_deterministic(tmp_path):
    a = run_suite(QUICK, make_workloads(), tmp_path / "a", workers=1, pass_workloads=True)
    b = run_suite(QUICK, make_workloads(), tmp_path / "b", workers=1, pass_workloads=True)
    key = lambda rows: sorted((r["impl"], r["shape"], r["cycles"], r["time_us"]) for r in rows)
    assert key(read_rows(a.path)) == key(read_rows(b.path))


@pytest.mark.parametrize("workers", [1, 0], ids=["pool", "in-process"])
def test_ablation_options_reach_the_backend(tmp_path, workers):
    import dataclasses
    suite = dataclasses.replace(get_suite("ablation"), shape_tag="test", impls=("triton",),
                                options=("default", "no_structured_dma"), workloads=None, primary_only=False)
    s = run_suite(suite, make_workloads(), tmp_path, workers=workers, pass_workloads=True)
    cycles = {r["options"]: r["cycles"] for r in read_rows(s.path)}
    assert set(cycles) == {"default", "no_structured_dma"}
    # the scalar path prices differently; in one process, the second option set must not reuse
    # the kernels compiled under the first (Triton's in-memory cache is not keyed on options)
    assert cycles["no_structured_dma"] != cycles["default"]


def test_rows_carry_their_regime_and_regimes_resume(tmp_path):
    import dataclasses
    suite = dataclasses.replace(QUICK, impls=("triton",), regimes=("cold", "resident", "writeback"))
    s = run_suite(suite, make_workloads((1 << 16,)), tmp_path, workers=1, pass_workloads=True)
    rows = read_rows(s.path)
    cycles = {r["regime"]: r["cycles"] for r in rows}
    assert s.errors == [] and set(cycles) == {"cold", "resident", "writeback"} and all(r["correct"] for r in rows)
    assert cycles["resident"] < cycles["cold"] < cycles["writeback"]
    again = run_suite(suite, make_workloads((1 << 16,)), tmp_path, workers=1, pass_workloads=True)
    assert again.jobs == 0 and again.skipped_done == 3


def test_repriced_chips_get_their_rows_and_resume(tmp_path):
    import dataclasses
    chips = ["mtia2i", "mtia2i@dma.latency_cycles=400", "mtia2i@dma.fixed_cycles=32"]
    suite = dataclasses.replace(QUICK, impls=("triton",), chips=lambda: chips, reprice=True)
    s = run_suite(suite, make_workloads(), tmp_path, workers=1, pass_workloads=True)
    rows = read_rows(s.path)
    # the latency variant is priced from the base run; fixed_cycles (read by the expert GEMM's
    # tiling) runs as a job of its own
    assert s.errors == [] and s.jobs == 2 and sorted(r["chip"] for r in rows) == sorted(chips)
    cycles = {r["chip"]: r["cycles"] for r in rows}
    assert cycles[chips[1]] > cycles[chips[0]]
    again = run_suite(suite, make_workloads(), tmp_path, workers=1, pass_workloads=True)
    assert again.jobs == 0 and len(read_rows(s.path)) == 3


def test_priced_regimes_equal_running_in_each_regime(tmp_path):
    import dataclasses
    ran = dataclasses.replace(QUICK, impls=("triton",), regimes=("cold", "resident", "writeback"))
    priced = dataclasses.replace(QUICK, impls=("triton",), priced_regimes=("resident", "writeback"))
    a = run_suite(ran, make_workloads((1 << 16,)), tmp_path / "ran", workers=1, pass_workloads=True)
    b = run_suite(priced, make_workloads((1 << 16,)), tmp_path / "priced", workers=1, pass_workloads=True)
    cyc = lambda s: {r["regime"]: r["cycles"] for r in read_rows(s.path)}  # noqa: E731
    # one execution per job, three rows: the same cycles as a run in each regime
    assert b.errors == [] and b.jobs == 1 and cyc(b) == cyc(a) and len(cyc(b)) == 3
    assert "priced in the resident regime" in next(r["notes"] for r in read_rows(b.path) if r["regime"] == "resident")
    again = run_suite(priced, make_workloads((1 << 16,)), tmp_path / "priced", workers=1, pass_workloads=True)
    assert again.jobs == 0 and len(read_rows(b.path)) == 3


def test_inductor_option_sets_switch_inductor_not_the_backend(monkeypatch):
    from backend.inductor_cpu import options
    from study.compile_options import activate
    monkeypatch.delenv("MTIA_OPTIONS", raising=False)
    monkeypatch.delenv("MTIA_INDUCTOR", raising=False)
    try:
        activate("inductor_no_nd_tiling")
        assert os.environ["MTIA_INDUCTOR"] == "nd_tiling=0" and "MTIA_OPTIONS" not in os.environ
        assert not options.enabled("nd_tiling") and options.enabled("pointwise_blocks")
        activate("single_buffer")
        assert os.environ["MTIA_OPTIONS"] == "num_stages=1" and "MTIA_INDUCTOR" not in os.environ
        assert options.enabled("nd_tiling")
    finally:
        activate("default")


def _test_and_study_shapes():
    from study.registry import Shape
    ws = make_workloads()
    ws["tiny_axpy"].shapes = [Shape("n2048", {"n": 2048}, tags={"test"}),
                              Shape("n65536", {"n": 1 << 16}, tags={"study"})]
    return ws


def test_a_timing_mode_suite_gives_the_functional_cycles_and_checks_numbers_at_test_shapes(tmp_path):
    import dataclasses

    from backend.driver import DEVICE
    base = dataclasses.replace(QUICK, shape_tag="study", impls=("triton",))
    ws = _test_and_study_shapes()
    modes: list[tuple[int, str]] = []
    w = ws["tiny_axpy"]
    plain = w.impls["triton"]

    def watched(x, y):
        modes.append((x.numel(), DEVICE.mode))
        return plain(x, y)

    w.impls["triton"] = watched
    func = read_rows(run_suite(base, ws, tmp_path / "f", workers=0, pass_workloads=True).path)
    timed = read_rows(run_suite(dataclasses.replace(base, sim_mode="timing"), ws, tmp_path / "t", workers=0,
                                pass_workloads=True).path)
    assert [r["shape"] for r in timed] == ["n65536"] and timed[0]["cycles"] == func[0]["cycles"]
    assert func[0]["correct"] and func[0]["max_abs_err"] == 0.0
    assert timed[0]["correct"] and timed[0]["max_abs_err"] is None
    assert "numbers checked in functional mode at test shapes n2048" in timed[0]["notes"]
    # the functional suite, then the timing suite's check at the test shape and its timed study shape
    assert modes == [(1 << 16, "functional"), (2048, "functional"), (1 << 16, "timing")]


def test_a_timing_mode_row_is_incorrect_when_its_test_shape_check_fails(tmp_path):
    import dataclasses
    suite = dataclasses.replace(QUICK, shape_tag="study", impls=("triton",), sim_mode="timing")
    rows = read_rows(run_suite(suite, broken(_test_and_study_shapes()), tmp_path, workers=0,
                               pass_workloads=True).path)
    assert len(rows) == 1 and not rows[0]["correct"]
    assert "at test shape n2048: outside tolerance" in rows[0]["notes"]


def test_an_error_row_names_repository_files_relative_to_the_root(tmp_path):
    from study.provenance import REPO
    ws = make_workloads()

    def fails(x, y):
        raise ValueError(f"tiles do not fit, from {REPO}/kernels/elementwise.py:12:3")

    ws["tiny_axpy"].impls["triton"] = fails
    rows = read_rows(run_suite(QUICK, ws, tmp_path, workers=0, pass_workloads=True).path)
    r = next(r for r in rows if r["impl"] == "triton")
    assert not r["correct"] and r["notes"] == "error: ValueError: tiles do not fit, from kernels/elementwise.py:12:3"


def test_a_sweep_records_each_jobs_wall_and_the_next_starts_the_longest_first(tmp_path):
    from study.results import raw_dir, read_table
    from study.runner import JOB_WALLS, _longest_first, _wall_key
    from study.suites import plan
    ws = make_workloads((1024, 2048, 4096))
    s = run_suite(QUICK, ws, tmp_path, workers=1, pass_workloads=True)
    walls = read_table(raw_dir(tmp_path) / "job_walls.csv", JOB_WALLS)
    assert s.errors == [] and len(walls) == s.jobs == 3
    assert {w["shape"] for w in walls} == {"n1024", "n2048", "n4096"} and all(float(w["wall_s"]) >= 0 for w in walls)
    jobs = plan(QUICK, ws)
    recorded = {_wall_key(jobs[0]): {"wall_s": "1.0"}, _wall_key(jobs[1]): {"wall_s": "5.0"}}
    # never timed first (any may be long), in plan order; then the timed ones, longest first
    assert _longest_first(jobs, recorded) == jobs[2:] + [jobs[1], jobs[0]]


def test_the_ablation_runs_a_workload_outside_its_cross_section_only_with_the_switches_it_names():
    from study.registry import load_all
    from study.suites import ABLATION_EXTRA, CROSS_SECTION, plan
    jobs = plan(get_suite("ablation"), load_all())
    extra = dict(ABLATION_EXTRA)
    for name, opts in extra.items():
        assert name not in CROSS_SECTION
        assert "default" in opts  # the rows its slowdowns are relative to
        assert sorted({j.options for j in jobs if j.workload == name}) == sorted(opts)
    # the cross-section runs every option set
    assert {j.options for j in jobs if j.workload == "softmax"} == set(get_suite("ablation").options)
