"""Chrome-trace / Perfetto JSON of a priced launch: one process per PE, one track per engine.

`price_launch(..., trace=True)` collects the spans; `to_perfetto(timing)` turns them into the
Trace Event Format (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU),
which ui.perfetto.dev and chrome://tracing load. Timestamps are microseconds of simulated time.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backend.program import ENGINES
from backend.sim.timing import LaunchTiming

_TRACKS = ("PROGRAM",) + ENGINES


def to_perfetto(timing: LaunchTiming, clock_ghz: float | None = None) -> dict[str, Any]:
    """The launch as a Trace Event Format dict ({"traceEvents": [...], ...})."""
    if timing.spans is None:
        raise ValueError("no spans recorded: price the launch with price_launch(..., trace=True)")
    ghz = clock_ghz or (timing.cycles / (timing.time_us * 1e3) if timing.time_us else 1.0)
    to_us = 1.0 / (ghz * 1e3)
    events: list[dict[str, Any]] = []
    pes = sorted({s[0] for s in timing.spans})
    for pe in pes:
        events.append({"ph": "M", "name": "process_name", "pid": pe, "tid": 0, "args": {"name": f"PE {pe}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pe, "tid": 0, "args": {"sort_index": pe}})
        for tid, track in enumerate(_TRACKS):
            events.append({"ph": "M", "name": "thread_name", "pid": pe, "tid": tid, "args": {"name": track}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pe, "tid": tid,
                           "args": {"sort_index": tid}})
    tid_of = {t: i for i, t in enumerate(_TRACKS)}
    for pe, eng, start, end, name in timing.spans:
        events.append({"ph": "X", "name": name, "cat": eng, "pid": pe, "tid": tid_of[eng],
                       "ts": round(start * to_us, 6), "dur": round(max(end - start, 0.0) * to_us, 6),
                       "args": {"start_cycle": start, "cycles": end - start}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"chip": timing.chip, "cycles": timing.cycles, "time_us": timing.time_us}}


def write_perfetto(timing: LaunchTiming, path: str | Path, clock_ghz: float | None = None) -> Path:
    path = Path(path)
    path.write_text(json.dumps(to_perfetto(timing, clock_ghz)))
    return path
