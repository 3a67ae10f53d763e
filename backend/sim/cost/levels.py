"""Memory levels of a launch: which level each DMA read comes from, and each PE's share.

`launch_levels(traces, m, resident, writeback)` reads a launch's executed events once and
returns the Levels its DMA rules price with (rules.py), the memory detail of LaunchTiming, and
the tensors the launch writes. The model is documented in the package docstring.
"""
from __future__ import annotations

from typing import Iterable

from backend.sim.cost.inputs import ENGINE_INDEX, K_ATOMIC, K_DMA_IN, K_SCALAR_STORE
from backend.sim.cost.rules import ChipModel, Levels

_DMA_OUT = ENGINE_INDEX["DMA_OUT"]


def launch_levels(traces: list, m: ChipModel, resident: Iterable[str] | bool = (),
                  writeback: bool = False) -> tuple[Levels, dict, frozenset | None]:
    """The launch's Levels, its memory detail, and the tensors it writes (see read_fractions).
    The instructions carry the scheduler's kinds and engines (timing.prepare)."""
    frac, detail, written = read_fractions(traces, m, resident)
    # writes pay the off-chip share when the footprint spills the LLC, or when the regime (or
    # the config's llc_output_rule) sends every output back off-chip
    spill = detail["llc_hit_rate_on_reuse"] < 1.0 or writeback or m.always_writeback
    sram_share, off_share = m.shares(min(m.n_pe, len(traces)))
    return Levels(sram_share, off_share, frac, spill), detail, written


def read_fractions(traces: list, m: ChipModel, resident: Iterable[str] | bool) -> tuple[dict, dict, frozenset | None]:
    """Per region index: the fraction of its read bytes that come from off-chip; the memory
    detail; and the tensors the launch writes (None: a store that names no tensor, scalar path
    or atomic, could write any), so a program-invariant load from one of them is never reused."""
    read: dict[int, int] = {}
    tiles: dict[int, dict] = {}
    stored: set = set()
    unknown = False  # a store whose target is not known
    for t in traces:
        for ins, c in t.events:
            if ins._tk < K_DMA_IN:
                continue  # no memory traffic: scalar, control and tile compute instructions
            if ins._tk == K_SCALAR_STORE or ins._tk == K_ATOMIC:
                unknown = True
            if ins._te == _DMA_OUT and c:
                stored.add(c.get("region"))
            if ins._tk == K_DMA_IN and c:
                reg = c.get("region")
                if reg is None:
                    continue
                read[reg] = read.get(reg, 0) + c["bytes"]
                # gathers carry no address: each one is its own tile (no re-read credit)
                key = ("indexed", len(seen := tiles.setdefault(reg, {}))) if c.get("indexed") else \
                    (c.get("addr"), c["bytes"], c["runs"])
                seen = tiles.setdefault(reg, {})
                if key not in seen:
                    seen[key] = c["bytes"]
    regions: dict = {}
    for t in traces:
        regions = getattr(t, "regions", None) or regions
        if regions:
            break
    unique: dict[int, int] = {}
    for reg, total in read.items():
        u = sum(tiles[reg].values())
        if reg in regions:
            u = min(u, regions[reg][1]) if u else regions[reg][1]
        unique[reg] = min(u, total)
    # the launch's footprint in the LLC: what it reads plus what it writes (once per tensor)
    footprint = sum(unique.values()) + sum(regions[r][1] for r in stored if r is not None and r in regions and r not in unique)
    hit = 1.0 if footprint <= m.llc_bytes else m.llc_bytes / footprint
    if resident is True:
        # every input in SRAM (the `resident` regime): only while the footprint fits the LLC,
        # the same rule that keeps outputs on-chip; a larger launch reads cold
        res_idx = set(read) if hit == 1.0 else set()
    else:
        names = set(resident or ())
        res_idx = {i for i, (name, _) in regions.items() if name in names}
    frac = {}
    for reg, total in read.items():
        if reg in res_idx or total == 0:
            frac[reg] = 0.0
        else:
            f0 = unique[reg] / total
            frac[reg] = 1.0 - (1.0 - f0) * hit
    return frac, {"footprint_bytes": footprint, "llc_hit_rate_on_reuse": hit}, \
        (None if unknown else frozenset(stored))
