"""NaN-propagating min/max written as compare-and-select, recognised as one min/max op.

TorchInductor's Triton helpers (`triton_helpers.maximum` / `minimum`, and through them `max2` /
`min2` reductions, `clamp`, `relu`) spell torch's NaN-propagating maximum as

    mask = a > b          # arith.cmpf ogt a, b      (minimum: olt)
    mask |= a != a        # arith.cmpf une a, a ; arith.ori
    r = tl.where(mask, a, b)

Lowered as written that is three SIMD passes and a select per element, and a reduction whose
combine region is that body is not one the reduction engine knows (it runs the region). The
result is IEEE 754-2019 maximum / minimum (`arith.maximumf` / `arith.minimumf`: a NaN in either
operand gives NaN), one SIMD instruction, and a `max` / `min` kind on the reduction engine. The
one difference is which zero a tie of +0 and -0 returns (the select gives `b`, maximum gives
+0), which no comparison with torch tells apart. Switch: `MTIAOptions.minmax_idiom`.
"""
from __future__ import annotations

from collections import Counter

from backend.tile_ir import Function, Op, Region, walk

_KIND = {"ogt": "arith.maximumf", "olt": "arith.minimumf"}


def run(fn: Function) -> int:
    """Rewrite every such select in place; returns how many were rewritten."""
    uses = Counter(id(v) for op in walk(fn.body) for v in op.operands)
    return _region(fn.body, uses)


def _region(region: Region, uses: Counter) -> int:
    n = 0
    defs = {id(r): op for op in region.ops for r in op.results}
    dead: set[int] = set()
    for i, op in enumerate(region.ops):
        for r in op.regions:
            n += _region(r, uses)
        if op.name != "arith.select" or len(op.operands) != 3:
            continue
        c, a, b = op.operands
        ori = defs.get(id(c))
        if ori is None or ori.name != "arith.ori" or len(ori.operands) != 2:
            continue
        parts = [defs.get(id(v)) for v in ori.operands]
        if any(p is None or p.name != "arith.cmpf" for p in parts):
            continue
        order = [p for p in parts if p.attrs.get("pred") in _KIND and p.operands == [a, b]]
        isnan = [p for p in parts if p.attrs.get("pred") == "une" and p.operands == [a, a]]
        if len(order) != 1 or len(isnan) != 1:
            continue
        region.ops[i] = Op(_KIND[order[0].attrs["pred"]], [a, b], op.results, {}, [], op.loc)
        n += 1
        # the compares and the or go with it unless something else reads them
        uses[id(c)] -= 1
        if uses[id(c)] == 0:
            dead.add(id(ori))
            for p, w in zip(parts, ori.operands):
                uses[id(w)] -= 1
                if uses[id(w)] == 0:
                    dead.add(id(p))
                    for x in p.operands:
                        uses[id(x)] -= 1
    if dead:
        region.ops[:] = [op for op in region.ops if id(op) not in dead]
    return n
