"""The order of the tile-level passes; each pass looks only at its own concern."""
from __future__ import annotations

import copy

from backend.tile_ir import Function


# `persistent_invariant`: programs become persistent when at least this share of their loaded
# bytes is the same in every program (hoisted: loaded once per PE instead of once per program).
# Below it, the loop's prefetch does not make up for the program overlap that a persistent
# launch gives up (measured on the inductor rows: LayerNorm 50%, RMSNorm 33% gain; pointwise
# kernels with no invariant load lose up to 25% resident).
INVARIANT_SHARE = 0.25


def run(fn: Function, options: object) -> dict:
    """Run the level-1 passes in place; returns the count of each kind of memory op."""
    from backend.passes import dce, idioms, persistent, rotate, schedule, structure
    if getattr(options, "minmax_idiom", True):
        idioms.run(fn)
    report = structure.run(fn, options)
    asks = persistent.asks_for_pe(fn)
    if asks:
        report["pe_queries"] = True
    if not (getattr(options, "persistent", False) or asks) and getattr(options, "persistent_invariant", False) \
            and persistent.hoisted_load_share(fn) >= INVARIANT_SHARE:
        # a compiler choice, not the kernel's hint: kept only where it fits local memory
        keep = {id(a): a for a in fn.args}
        before, args, names = copy.deepcopy(fn.body, keep), list(fn.args), list(fn.arg_names)
        persistent.run(fn, prefetch=getattr(options, "software_pipeline", True))
        if not _fits(fn, options):
            fn.body, fn.args, fn.arg_names = before, args, names
        else:
            report["persistent"] = "invariant loads"
    elif getattr(options, "persistent", False) or asks:
        prefetch = getattr(options, "software_pipeline", True)
        keep = {id(a): a for a in fn.args}
        before, args, names = copy.deepcopy(fn.body, keep), list(fn.args), list(fn.arg_names)
        persistent.run(fn, prefetch=prefetch)
        if prefetch and not _fits(fn, options):
            # the prefetched tiles' second instances do not fit local memory: no prefetch
            fn.body, fn.args, fn.arg_names = before, args, names
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
