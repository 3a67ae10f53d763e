"""Timing model: prices the executed instructions of a launch in cycles of the chip config.

Placeholder until the machine model lands: every instruction costs one cycle on its engine and
programs are spread round-robin over the PE grid. The interface is the one the driver uses:
`price_launch(program, traces, chip) -> LaunchTiming`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LaunchTiming:
    cycles: int
    time_us: float
    engine_busy: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    flops: int = 0
    detail: dict[str, Any] = field(default_factory=dict)


def price_launch(program: Any, traces: list, chip: dict) -> LaunchTiming:
    n_pe = chip["pe_grid"]["rows"] * chip["pe_grid"]["cols"]
    per_pe = [0] * n_pe
    busy: dict[str, int] = {}
    for i, t in enumerate(traces):
        c = len(t.events)
        per_pe[i % n_pe] += c
        for ins, _ in t.events:
            busy[ins.engine] = busy.get(ins.engine, 0) + 1
    cycles = max(per_pe) if traces else 0
    return LaunchTiming(cycles, cycles / (chip["clock_ghz"] * 1e3), busy)
