"""The order of the tile-level passes; each pass looks only at its own concern."""
from __future__ import annotations

import copy
from typing import Callable

from backend.tile_ir import Function, UnsupportedError


# `persistent_invariant`: programs become persistent when at least INVARIANT_SHARE of their
# loaded bytes, and at least INVARIANT_BYTES, are the same in every program (hoisted: loaded
# once per PE instead of once per program), and no program loads one of its tensors twice.
# Elsewhere the loop's prefetch does not make up for the program overlap that a persistent
# launch gives up: every Inductor kernel made persistent, 25 of the 83 inductor rows were over
# 1% slower (up to a third); a LayerNorm whose second pass reloads the row, 520,338 -> 542,427
# cycles; the 1/8-size decoder's RMSNorm (a 1 KB weight beside 1 KB rows), 12.8 -> 15.2 us.
# Where it applies: the study's LayerNorm (32 KB of weight and bias, share 1/2) resident 72,039
# -> 49,034 cycles, RMSNorm (16 KB, 1/3) 54,746 -> 39,764. Both thresholds are fitted to these
# few kernels, not derived: a rule of thumb, switchable.
INVARIANT_SHARE = 0.25
INVARIANT_BYTES = 8192


def run(fn: Function, options: object) -> dict:
    """Run the level-1 passes in place; returns the count of each kind of memory op."""
    from backend.passes import dce, idioms, persistent, rotate, schedule, structure, tabulate
    if getattr(options, "minmax_idiom", True):
        idioms.run(fn)
    if getattr(options, "cat_idiom", True):
        idioms.cat_selects(fn)
    if getattr(options, "round_idiom", True):
        idioms.round_half_away(fn)
    tabulated = tabulate.run(fn) if getattr(options, "tabulate", True) else 0
    report = structure.run(fn, options)
    if tabulated:
        report["tabulated_chains"] = tabulated
    asks = persistent.asks_for_pe(fn)
    if asks:
        report["pe_queries"] = True
    hinted = getattr(options, "persistent", False) or asks
    if not hinted and getattr(options, "persistent_invariant", False) and _invariant_pays(persistent.hoisted_loads(fn)):
        # a compiler choice, not the kernel's hint: kept only where it fits local memory
        restore = _snapshot(fn)
        try:
            persistent.run(fn, prefetch=getattr(options, "software_pipeline", True))
            kept = _fits(fn, options)
        except UnsupportedError:  # a kernel the rewrite cannot take (results, early return)
            kept = False
        if kept:
            report["persistent"] = "invariant loads"
        else:
            restore()
    elif hinted:
        prefetch = getattr(options, "software_pipeline", True)
        restore = _snapshot(fn)
        persistent.run(fn, prefetch=prefetch)
        if prefetch and not _fits(fn, options):
            # the prefetched tiles' second instances do not fit local memory: no prefetch
            restore()
            persistent.run(fn, prefetch=False)
        _check_persistent_fits(fn, options)
        report["persistent"] = True
    if getattr(options, "software_pipeline", True):
        from backend.configs import load_chip
        chip = load_chip(getattr(options, "arch", None))
        plain = copy.deepcopy(fn.body)
        rotated = rotate.run(fn)
        if rotated:
            dce.run(fn)
        schedule.run(fn, chip)
        if rotated and not _fits(fn, options):
            # the second score buffer (or the longer lifetimes of the new order) does not fit
            # this chip's local memory: keep the plain loops, reordered only if that still fits
            fn.body, rotated = copy.deepcopy(plain), 0
            schedule.run(fn, chip)
        if not _fits(fn, options):
            fn.body = plain
        if rotated:
            report["software_pipelined_loops"] = rotated
    return report


def _invariant_pays(loads: tuple[int, int, bool]) -> bool:
    hoisted, total, streams_twice = loads
    return not streams_twice and hoisted >= INVARIANT_BYTES and hoisted >= INVARIANT_SHARE * total


def _snapshot(fn: Function) -> Callable[[], None]:
    """A function that puts `fn`'s body and arguments back as they are now, once (the
    persistent rewrite adds hidden arguments)."""
    body = copy.deepcopy(fn.body, {id(a): a for a in fn.args})
    args, names = list(fn.args), list(fn.arg_names)

    def restore() -> None:
        fn.body, fn.args, fn.arg_names = body, list(args), list(names)
    return restore


def _fits(fn: Function, options: object) -> bool:
    from backend import pe_program
    from backend.configs import load_chip
    capacity = int(load_chip(getattr(options, "arch", None))["local_memory"]["bytes"])
    try:
        pe_program.allocate(fn, capacity, getattr(options, "num_stages", 2))
    except pe_program.LocalMemoryOverflow:
        return False
    return True


def _check_persistent_fits(fn: Function, options: object) -> None:
    """In the loop over program ids every load is multi-buffered (num_stages copies): a
    program that fits once may not fit then; say that the hint is why."""
    from backend import pe_program
    from backend.configs import load_chip
    capacity = int(load_chip(getattr(options, "arch", None))["local_memory"]["bytes"])
    stages = getattr(options, "num_stages", 2)
    try:
        pe_program.allocate(fn, capacity, stages)
    except pe_program.LocalMemoryOverflow as e:
        raise pe_program.LocalMemoryOverflow(
            f"persistent=True: the loop over program ids buffers its loads x{stages} (num_stages); {e}",
            e.required, e.limit) from None
