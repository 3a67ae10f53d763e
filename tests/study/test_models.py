"""T3 model coverage (study/model_coverage.py) on the tiny sizes of two models."""
from __future__ import annotations

import csv

import pytest
import torch

from study import model_coverage, models

model_coverage.configure()


def _plain(name: str) -> model_coverage.Coverage:
    """T3's plain row: Inductor's own choices, none of the chip-aware switches (set here, as
    T3 sets them per case: an earlier test of this process may have changed them)."""
    return model_coverage._measure_case(("mtia2i", "test", name, "plain"))


@pytest.mark.parametrize("name", ["decoder", "dlrm"])
def test_tiny_model_compiles_correct_and_runs_triton(name):
    c = _plain(name)
    assert c.correct, (c.max_abs_err, c)
    assert c.n_triton_kernels > 0 and c.triton_time_us > 0
    assert c.n_fallback_ops > 0  # GEMMs stay extern on Inductor's CPU path
    for share in (c.nongemm_share_triton, c.ops_share_triton):
        assert share is not None and 0.0 <= share <= 1.0
    assert c.e2e_us == pytest.approx(c.triton_time_us + c.fallback_est_us)
    assert c.fallback_est_us == pytest.approx(c.fallback_gemm_est_us + c.fallback_nongemm_est_us)


def test_dlrm_falls_back_on_embedding_bag_and_gemms():
    c = _plain("dlrm")
    ops = dict(kv.split("x") for kv in c.fallback_ops.split(";"))
    assert "_embedding_bag" in ops and "addmm" in ops and "bmm" in ops


def test_roofline_estimate_of_a_gemm():
    from study.roofline import engine_peaks
    peaks = engine_peaks("mtia2i")
    assert peaks.gemm_flops("bf16") == pytest.approx(177e12, rel=0.01)
    assert peaks.dram_bytes == pytest.approx(204.8e9)
    a, b = torch.randn(512, 512, dtype=torch.bfloat16), torch.randn(512, 512, dtype=torch.bfloat16)
    op = model_coverage.describe_host_op(torch.ops.aten.mm.default, (a, b), {}, a @ b)
    assert op.kind == "gemm" and op.flops == 2 * 512 ** 3
    gemm_us, other_us = op.est_us(peaks)
    assert other_us == 0 and gemm_us == pytest.approx(max(op.flops / 177e12, 3 * 512 * 512 * 2 / 204.8e9) * 1e6,
                                                      rel=0.01)


def test_host_ops_inside_simulated_launches_are_not_counted(tmp_path):
    covs = [model_coverage.measure("moe", "test")]
    # the simulator computes with torch: none of its ops (e.g. its loads) may appear as fallbacks
    assert covs[0].n_fallback_ops < 10, covs[0].fallback_ops
    out = tmp_path / "mc.csv"
    model_coverage.write_rows(covs, out)
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 1 and tuple(rows[0]) == model_coverage.COLUMNS
    assert "| moe | test |" in model_coverage.markdown_table(covs)


def test_sizes_keep_the_structure():
    for name in models.MODELS:
        t, s = models.build(name, "test"), models.build(name, "study")
        assert [type(m).__name__ for m in t.module.modules()] == [type(m).__name__ for m in s.module.modules()]


def test_cli_measures_plain_and_chip_aware_inductor(tmp_path):
    import csv
    out = tmp_path / "mc.csv"
    assert model_coverage.main(["--models", "decoder", "--sizes", "test", "--out", str(out)]) == 0
    rows = {r["inductor"]: r for r in csv.DictReader(out.open())}
    assert set(rows) == {"plain", "chip"}
    # plain Inductor leaves the GEMMs and SDPA on the host; chip-aware runs every op on the chip
    assert int(rows["plain"]["n_fallback_ops"]) > 0 and float(rows["plain"]["fallback_est_us"]) > 0
    assert int(rows["chip"]["n_fallback_ops"]) == 0 and float(rows["chip"]["fallback_est_us"]) == 0
    assert rows["chip"]["correct"] == "True"


def test_topk_ties_are_broken_as_on_the_chip_only_where_eager_differs():
    """stable_ties: eager topk with the first of equal values taken first (the chip's rule);
    the rows where eager's own choice differs are counted, so T3 uses that reference only for a
    routing tie, never to excuse a wrong kernel."""
    x = torch.tensor([[0.1, 0.5, 0.5, 0.2], [0.9, 0.1, 0.3, 0.2]])
    with model_coverage.stable_ties() as ties:
        v, i = torch.topk(x, 1, dim=-1)
        v2, i2 = x.topk(2, largest=False)
    assert torch.equal(i, torch.tensor([[1], [0]])) and torch.equal(v, torch.tensor([[0.5], [0.9]]))
    assert torch.equal(i2, torch.tensor([[0, 3], [1, 3]]))
    eager = torch.topk(x, 1, dim=-1).indices[0, 0].item()
    assert ties.rows == 4 and ties.rows_differ == (eager != 1)
    # a row where eager CPU's selection takes the last tied 2.0 (index 7), the chip the first two
    y = torch.tensor([[1.0, 0.0, 2.0, 2.0, 0.0, 0.0, 1.0, 2.0]])
    with model_coverage.stable_ties() as ties:
        i = torch.topk(y, 2).indices
    assert torch.equal(i, torch.tensor([[2, 3]]))
    assert ties.rows == 1 and ties.rows_differ == int(set(torch.topk(y, 2).indices[0].tolist()) != {2, 3})
