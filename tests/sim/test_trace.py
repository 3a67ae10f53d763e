"""Perfetto / Chrome trace export: well-formed JSON, one track per engine per PE, in-order engines."""
from __future__ import annotations

import json

import pytest
from golden_programs import cases
from sim_programs import price

from backend.sim.trace import to_perfetto, write_perfetto


def _timing():
    prog, grid, args = cases()["softmax_64x256"]
    return price(prog, grid, args, trace=True)


def test_perfetto_json_well_formed(tmp_path):
    t = _timing()
    doc = json.loads(json.dumps(to_perfetto(t)))
    evs = doc["traceEvents"]
    spans = [e for e in evs if e["ph"] == "X"]
    assert len(spans) == len(t.spans) > 0
    for e in spans:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["name"], str)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in spans:
        assert names[(e["pid"], e["tid"])] == e["cat"]   # each span sits on its engine's track
    assert {e["pid"] for e in spans} == {0, 1, 2, 3}      # 4 programs on 4 PEs
    assert max(e["ts"] + e["dur"] for e in spans) <= t.time_us + 1e-6
    p = write_perfetto(t, tmp_path / "trace.json")
    assert json.loads(p.read_text())["otherData"]["cycles"] == t.cycles


def test_engines_are_in_order_queues():
    t = _timing()
    by_track: dict = {}
    for pe, eng, s, e, _ in t.spans:
        if eng != "PROGRAM":
            by_track.setdefault((pe, eng), []).append((s, e))
    for spans in by_track.values():
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            assert s1 >= e0 - 1e-9   # never two instructions at once on one engine


def test_no_spans_without_trace_flag():
    prog, grid, args = cases()["elementwise_4"]
    t = price(prog, grid, args)
    assert t.spans is None
    with pytest.raises(ValueError, match="trace=True"):
        to_perfetto(t)
