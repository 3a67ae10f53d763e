"""The Ray engine: the same rows as the process pool, and a dead worker loses only its job."""
from __future__ import annotations

import os

import pytest
from tiny_workloads import make_workloads

from study.results import read_rows
from study.runner import run_suite
from study.suites import get_suite

ray = pytest.importorskip("ray")
QUICK = get_suite("quick")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module: run_suite reuses an initialised Ray and leaves it running."""
    if ray.is_initialized():
        yield
        return
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _key(rows):
    return sorted((r["workload"], r["impl"], r["shape"], r["dtype"], r["chip"], r["options"], r["cycles"])
                  for r in rows)


def test_ray_sweep_gives_the_pool_rows(tmp_path):
    ws = make_workloads((1024, 2048))
    pool = run_suite(QUICK, ws, tmp_path / "pool", workers=2, pass_workloads=True)
    rays = run_suite(QUICK, ws, tmp_path / "ray", workers=2, pass_workloads=True, engine="ray")
    assert pool.errors == [] and rays.errors == [] and rays.jobs == pool.jobs == 2
    assert rays.rows == pool.rows == 4
    assert _key(read_rows(rays.path)) == _key(read_rows(pool.path))
    assert ray.is_initialized()  # the fixture's Ray was reused, not shut down


def test_dead_ray_worker_is_reported_and_the_rerun_completes(tmp_path):
    ws = make_workloads((1024, 2048, 4096))
    w = ws["tiny_axpy"]
    good = w.impls["expert"]

    def dies_on_the_largest(x, y):
        if x.numel() == 4096:
            os._exit(3)  # the actor's process is killed mid-sweep
        return good(x, y)

    w.impls["expert"] = dies_on_the_largest
    s1 = run_suite(QUICK, ws, tmp_path, workers=1, pass_workloads=True, engine="ray")
    assert any("n4096: worker died" in e for e in s1.errors), s1.errors
    done = read_rows(s1.path)  # strict: a partial line would raise
    assert len(done) == 4 and {r["shape"] for r in done} == {"n1024", "n2048"}
    assert len({(r["impl"], r["shape"]) for r in done}) == len(done)
    w.impls["expert"] = good
    s2 = run_suite(QUICK, ws, tmp_path, workers=2, pass_workloads=True, engine="ray")
    assert s2.errors == [] and s2.skipped_done == len(done) and s2.jobs == 1 and s2.rows == 2
    rows = read_rows(s2.path)
    assert len(rows) == 6 and len({(r["impl"], r["shape"]) for r in rows}) == 6
    s3 = run_suite(QUICK, ws, tmp_path, workers=2, pass_workloads=True, engine="ray")
    assert s3.jobs == 0 and s3.rows == 0
