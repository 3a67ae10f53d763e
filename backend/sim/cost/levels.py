"""Memory levels of a launch: which level each DMA read comes from, and each PE's share.

`launch_levels(traces, m, resident, writeback)` reads a launch's executed events once and
returns the Levels its DMA rules price with (rules.py), the memory detail of LaunchTiming, and
the tensors the launch writes. The model is documented in the package docstring.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

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
    spill = detail["footprint_bytes"] > m.llc_bytes or writeback or m.always_writeback
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
    # lockstep groups (executor.ProgramTrace.group): one pass per group, per-lane addresses
    gtiles: dict[int, dict] = {}   # region -> (bytes, runs) -> address arrays
    gindexed: dict[int, int] = {}  # region -> bytes of gathers (each its own tile)
    groups_seen: set = set()
    for t in traces:
        g = getattr(t, "group", None)
        if g is not None:
            if id(g) not in groups_seen:
                groups_seen.add(id(g))
                unknown |= _group_reads(g, read, gtiles, gindexed, stored)
            continue
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
        u = sum(tiles[reg].values()) if reg not in gtiles and reg not in gindexed else \
            _group_unique(tiles.get(reg, {}), gtiles.get(reg, {}), gindexed.get(reg, 0))
        if reg in regions:
            u = min(u, regions[reg][1]) if u else regions[reg][1]
        unique[reg] = min(u, total)
    # the launch's footprint in the LLC: what it reads plus what it writes (once per tensor)
    footprint = sum(unique.values()) + sum(regions[r][1] for r in stored if r is not None and r in regions and r not in unique)
    fits = footprint <= m.llc_bytes
    # a re-read of a tile when the footprint spills the LLC (assumptions.llc_reuse): "capacity"
    # hits with probability llc_bytes / footprint whatever the launch's tile order; "ideal" always
    # hits (the bound for an order whose reuse distance fits the LLC)
    hit = 1.0 if fits or m.llc_reuse == "ideal" else m.llc_bytes / footprint
    if resident is True:
        # every input in SRAM (the `resident` regime): only while the footprint fits the LLC,
        # the same rule that keeps outputs on-chip; a larger launch reads cold
        res_idx = set(read) if fits else set()
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


def _group_reads(g: Any, read: dict, gtiles: dict, gindexed: dict, stored: set) -> bool:
    """read_fractions's bookkeeping for the lanes of one lockstep group at once (the same
    events, each lane with its own addresses where g.addrs has them); True when a store of
    unknown target is among them."""
    n = g.n
    unknown = False
    addrs = g.addrs
    for idx, (ins, c) in enumerate(g.events):
        if ins._tk < K_DMA_IN:
            continue
        if ins._tk == K_SCALAR_STORE or ins._tk == K_ATOMIC:
            unknown = True
        if ins._te == _DMA_OUT and c:
            stored.add(c.get("region"))
        if ins._tk == K_DMA_IN and c:
            reg = c.get("region")
            if reg is None:
                continue
            b = c["bytes"]
            read[reg] = read.get(reg, 0) + b * n
            if c.get("indexed"):
                gindexed[reg] = gindexed.get(reg, 0) + b * n
                continue
            a = addrs.get(idx)
            if isinstance(a, tuple):  # the first lane's address and each lane's offset from it
                a = a[1] + a[0]
            if a is None:  # the same address in every lane
                a = np.array([c.get("addr")], dtype=object if c.get("addr") is None else np.int64)
            gtiles.setdefault(reg, {}).setdefault((b, c["runs"]), []).append(a)
    return unknown


def _group_unique(tiles: dict, gt: dict, indexed: int) -> int:
    """Bytes of a region's distinct tiles (key: address, bytes, runs) over the programs run
    alone (`tiles`, as read_fractions keeps them) and lockstep groups (`gt`), plus gathers."""
    u = indexed
    extra: dict[tuple, list] = {}
    for key, b in tiles.items():
        if len(key) == 3 and (key[1], key[2]) in gt:
            extra.setdefault((key[1], key[2]), []).append(key[0])
        else:
            u += b
    for (b, runs), arrs in gt.items():
        parts = [x for x in arrs if x.dtype != object]
        more = extra.get((b, runs), [])
        nones = any(x.dtype == object for x in arrs) or None in more
        if more:
            parts.append(np.array([x for x in more if x is not None], dtype=np.int64))
        u += b * (len(np.unique(np.concatenate(parts))) if parts else 0) + (b if nones else 0)
    return u
