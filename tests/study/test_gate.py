from __future__ import annotations

import dataclasses

import backend.sim.timing as timing
from tiny_workloads import broken, make_workloads

from study.gate import read_expected, run_gate


def _gate(tmp_path, name, expected, **kw):
    return run_gate(make_workloads((2048, 8192)) if "ws" not in kw else kw.pop("ws"), tmp_path / name, expected,
                    workers=1, pass_workloads=True, **kw)


def _record_expected(tmp_path):
    expected = tmp_path / "expected.csv"
    rep, text = _gate(tmp_path, "base", expected, update=True)
    assert expected.read_text() == text and len(read_expected(expected)) == 4
    return expected


def test_gate_passes_on_an_unchanged_tree(tmp_path):
    expected = _record_expected(tmp_path)
    rep, text = _gate(tmp_path, "again", expected)
    assert rep.ok, rep.lines()
    assert rep.checked == 4 and text == expected.read_text()


def test_gate_fails_on_a_5_percent_slowdown_in_the_cost_model(tmp_path, monkeypatch):
    expected = _record_expected(tmp_path)
    original = timing.price_launch

    def slower(program, traces, chip, **kw):
        t = original(program, traces, chip, **kw)
        return dataclasses.replace(t, cycles=round(t.cycles * 1.05) + 1, time_us=t.time_us * 1.05)

    monkeypatch.setattr(timing, "price_launch", slower)
    rep, text = _gate(tmp_path, "slow", expected)
    assert not rep.ok and len(rep.regressions) == 4 and not rep.improvements
    assert text != expected.read_text()  # the regenerated file records the new numbers


def test_gate_fails_on_an_unrecorded_improvement_and_on_wrong_results(tmp_path, monkeypatch):
    expected = _record_expected(tmp_path)
    original = timing.price_launch
    monkeypatch.setattr(timing, "price_launch",
                        lambda p, tr, c, **kw: dataclasses.replace(original(p, tr, c), cycles=original(p, tr, c).cycles // 2))
    rep, _ = _gate(tmp_path, "fast", expected)
    assert not rep.ok and len(rep.improvements) == 4
    monkeypatch.setattr(timing, "price_launch", original)
    rep, text = _gate(tmp_path, "wrong", expected, ws=broken(make_workloads((2048, 8192))))
    assert not rep.ok and len(rep.incorrect) == 2
    assert "triton" not in {line.split(",")[1] for line in text.splitlines()[1:]}  # never a reference


def test_gate_covers_only_the_quick_and_full_suites():
    import pytest

    from study.gate import EXPECTED_PATH, expected_path_for
    assert expected_path_for("quick") == EXPECTED_PATH
    assert expected_path_for("full").name == "expected_full.csv"
    with pytest.raises(ValueError, match="not 'ablation'"):
        expected_path_for("ablation")
