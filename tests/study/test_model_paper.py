"""T3 at the paper shapes (study/model_paper.py), on reduced sizes of the same structure.

The paper-shape path is one call in timing mode with Inductor's autotuning left out; on the
"test" size it must give what T3's chip-aware measurement (study/model_coverage.py: a warm-up
call, then a measured call in the functional mode) gives, kernel for kernel.
"""
from __future__ import annotations

import csv

import pytest

import backend.driver as drv
from backend.inductor_cpu import options
from study import model_coverage, model_paper, models


def _t3_chip(name: str, size: str) -> model_coverage.Coverage:
    from study.inductor import configure, unconfigure
    model_coverage.configure()
    configure()
    options.activate(**options.DEFAULTS)
    try:
        return model_coverage.measure(name, size)
    finally:
        unconfigure()


@pytest.mark.parametrize("name", ["decoder", "moe"])
def test_paper_path_in_timing_mode_equals_t3_chip_rows(name):
    mode = drv.DEVICE.mode
    try:
        p = model_paper.measure(name, "test", check_size="test")
    finally:
        from study.inductor import unconfigure
        unconfigure()
    assert drv.DEVICE.mode == mode  # timing mode only inside the measurement
    assert p.mode == "timing" and "(equal)" in p.timing_check and "TIMING" in p.notes
    ref = _t3_chip(name, "test")
    assert ref.correct
    assert (p.n_triton_kernels, p.triton_kernels, p.fallback_ops) == (ref.n_triton_kernels, ref.triton_kernels,
                                                                      ref.fallback_ops)
    assert p.triton_time_us == ref.triton_time_us and p.e2e_us == ref.e2e_us
    assert p.triton_compiled_us + p.expert_us == pytest.approx(p.triton_time_us)
    assert 0 < p.triton_share <= 1


def test_paper_sizes_are_the_docs_shapes():
    assert "paper" not in models.SIZES  # T3's functional run (model_coverage) never picks it up
    with pytest.raises(ValueError):
        models.build("decoder", "huge")


def test_rows_replace_their_model_only(tmp_path):
    out = tmp_path / "paper.csv"
    a = model_paper.PaperCoverage("decoder", "paper", "mtia2i", "bfloat16", "s", inductor="chip", e2e_us=1.0)
    b = model_paper.PaperCoverage("moe", "paper", "mtia2i", "bfloat16", "s", inductor="chip", e2e_us=2.0)
    model_paper.write_rows([a, b], out)
    a.e2e_us = 3.0
    model_paper.write_rows([a], out)
    rows = list(csv.DictReader(out.open()))
    assert tuple(rows[0]) == model_paper.COLUMNS
    assert {r["model"]: r["e2e_us"] for r in rows} == {"decoder": "3", "moe": "2"}
    assert all(r["mode"] == "timing" for r in rows)


def test_a_pricing_only_chip_reuses_the_compiled_model():
    """The second chip of the paper rows (LLC re-reads all hits) changes only timing-model keys:
    its row calls the first run's compiled function again, and equals compiling for it."""
    from study.inductor import unconfigure
    assert model_paper.same_compile("mtia2i", model_paper.DEFAULT_CHIPS[1])
    assert not model_paper.same_compile("mtia2i", "mtia2i@pe_grid.rows=4")
    chip = "mtia2i@dma.latency_cycles=900"  # at the test size every footprint fits the LLC: a DMA latency moves time
    old_chip = drv.DEVICE.chip
    try:
        run = model_paper.measure("moe", "test", chip, check_size=None)  # compiled for the chip itself
        kept: list = []
        first = model_paper.measure("moe", "test", "mtia2i", check_size=None, keep=kept)
        again = model_paper.measure("moe", "test", chip, check="-", compiled=kept)
    finally:
        unconfigure()
        drv.set_chip(old_chip)
    assert again.chip == run.chip == chip and "called again" in again.notes and again.autotune_launches == 0
    for col in ("n_triton_kernels", "triton_kernels", "fallback_ops", "triton_time_us", "triton_gemm_us",
                "expert_us", "fallback_est_us", "e2e_us", "triton_share"):
        assert getattr(again, col) == getattr(run, col), col
    assert again.triton_time_us != first.triton_time_us
