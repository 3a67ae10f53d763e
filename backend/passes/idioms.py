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

The cat / stack selects: see cat_selects below.
"""
from __future__ import annotations

from collections import Counter

from backend.tile_ir import VIEW_OPS, Function, Op, Region, Value, regions, splat_constant, walk

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


# ----------------------------------------------------------------------------- cat / stack
#
# TorchInductor writes `torch.cat` / `torch.stack` of two inputs along the last axis as
#
#     a = tl.where(left, f(tl.load(p, left & rows, other=0)), 0)
#     b = tl.where(right, g(tl.load(q, right & rows, other=0)), 0)    # right = not left
#     out = tl.where(left, a, b)
#
# The outer select already picks `a` only where `left` holds (and `b` only where it does not):
# the inner selects are redundant, `out = where(left, f(...), g(...))`. When both inputs read
# the same pointers (a stack of two functions of one tensor: MX4's two nibbles of a byte),
# the two masked loads are one load under `rows`, each masked as before with a select. Exact
# rewrites; switch: `MTIAOptions.cat_idiom`.

_NEGATED = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sle": "sgt", "sgt": "sle",
            "ult": "uge", "uge": "ult", "ule": "ugt", "ugt": "ule"}
_MEMORY_EFFECTS = ("tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.call")


def _complements(a, b, defs: dict) -> bool:
    """`a` is `not b` elementwise: integer compares of the same operands with negated
    predicates, or the same views of two such compares."""
    if a.type.shape != b.type.shape:
        return False
    da, db = defs.get(id(a)), defs.get(id(b))
    while da is not None and db is not None and da.name == db.name and da.name in VIEW_OPS \
            and da.attrs == db.attrs:
        a, b = da.operands[0], db.operands[0]
        if a.type.shape != b.type.shape:
            return False
        da, db = defs.get(id(a)), defs.get(id(b))
    return (da is not None and db is not None and da.name == db.name == "arith.cmpi"
            and len(da.operands) == len(db.operands) == 2
            and all(x is y for x, y in zip(da.operands, db.operands))
            and _NEGATED.get(da.attrs.get("pred")) == db.attrs.get("pred"))


def cat_selects(fn: Function) -> int:
    """Drop the selects and the load that Inductor's cat / stack spelling repeats; returns the
    number of rewrites."""
    defs = {id(r): op for op in walk(fn.body) for r in op.results}
    n = sum(_merge_loads(region, defs) for region in regions(fn.body))
    if n:  # the merged loads' values are now selects
        defs = {id(r): op for op in walk(fn.body) for r in op.results}
    for region in regions(fn.body):
        for op in region.ops:
            if op.name != "arith.select" or len(op.operands) != 3:
                continue
            c, x, y = op.operands
            dx, dy = defs.get(id(x)), defs.get(id(y))
            if dx is not None and dx.name == "arith.select" and dx.result.type == x.type:
                if dx.operands[0] is c:            # where(c, where(c, u, v), y) = where(c, u, y)
                    x = dx.operands[1]
                elif _complements(dx.operands[0], c, defs):   # where(c, where(!c, u, v), y) = where(c, v, y)
                    x = dx.operands[2]
            if dy is not None and dy.name == "arith.select" and dy.result.type == y.type:
                if dy.operands[0] is c:            # where(c, x, where(c, u, v)) = where(c, x, v)
                    y = dy.operands[2]
                elif _complements(dy.operands[0], c, defs):   # where(c, x, where(!c, u, v)) = where(c, x, u)
                    y = dy.operands[1]
            if x is not op.operands[1] or y is not op.operands[2]:
                op.operands = [c, x, y]
                n += 1
    return n


def _rows_of(mask, other_mask, defs: dict):
    """The common factor `rows` when `mask` = `a & rows` and `other_mask` = `!a & rows`."""
    dm, do = defs.get(id(mask)), defs.get(id(other_mask))
    if dm is None or do is None or dm.name != "arith.andi" or do.name != "arith.andi":
        return None
    for i in (0, 1):
        for j in (0, 1):
            if dm.operands[1 - i] is do.operands[1 - j] and _complements(dm.operands[i], do.operands[j], defs):
                return dm.operands[1 - i]
    return None


def _merge_loads(region: Region, defs: dict) -> int:
    """Two loads of the same pointers under complementary halves of one mask: one load under
    the mask, each original value a select of it."""
    n = 0
    i = 0
    while i < len(region.ops):
        a = region.ops[i]
        if a.name != "tt.load" or len(a.operands) != 3 or a.attrs.get("volatile"):
            i += 1
            continue
        for j in range(i + 1, len(region.ops)):
            b = region.ops[j]
            if b.name in _MEMORY_EFFECTS or any(o.name in _MEMORY_EFFECTS for r in b.regions for o in walk(r)):
                break  # a store in between may change what the second load reads
            if b.name != "tt.load" or len(b.operands) != 3 or b.attrs != a.attrs \
                    or b.operands[0] is not a.operands[0] or b.operands[2] is not a.operands[2]:
                continue
            rows = _rows_of(a.operands[1], b.operands[1], defs)
            if rows is None:
                continue
            ptr, other = a.operands[0], a.operands[2]
            whole = Op("tt.load", [ptr, rows, other], [Value(a.result.type)], dict(a.attrs), [], a.loc)
            first = Op("arith.select", [a.operands[1], whole.result, other], [a.result], {}, [], a.loc)
            second = Op("arith.select", [b.operands[1], whole.result, other], [b.result], {}, [], b.loc)
            region.ops[j] = second
            region.ops[i:i + 1] = [whole, first]
            n += 1
            break
        i += 1
    return n


# ----------------------------------------------------------------------------- round half away
#
# torch has no round-half-away-from-zero; code that needs one (the INT8 quantise reference)
# writes `where(y >= 0, floor(y + 0.5), ceil(y - 0.5))`: five SIMD passes and a select. For
# y >= 0, y + 0.5 >= 0.5 and floor is trunc; for y < 0, y - 0.5 < 0 and ceil is trunc; so it
# is `trunc(y + copysign(0.5, y))`, with the same additions (y - 0.5 is y + -0.5) rounded the
# same way: three passes. The one difference is y = -0.0, which gives -0.0 instead of +0.0
# (equal as numbers, and the same code once converted to an integer). A NaN gives NaN both ways.
# Switch: `MTIAOptions.round_idiom`.

_FLOOR = ("math.floor", "mtia.floor")
_CEIL = ("math.ceil", "mtia.ceil")


def _unary_kind(op: Op | None, names: tuple[str, str]) -> bool:
    if op is None or len(op.operands) != 1:
        return False
    return op.name == names[0] or (op.name == "tt.extern_elementwise" and op.attrs.get("symbol") == names[1])


def _const_float(v, defs: dict) -> float | None:
    c = splat_constant(v, defs)
    return float(c) if isinstance(c, (int, float)) else None


def round_half_away(fn: Function) -> int:
    """Rewrite every such select in place; returns how many were rewritten."""
    n = 0
    # the rewrite adds ops but changes no value's definition that a later match reads
    defs = {id(r): op for op in walk(fn.body) for r in op.results}
    for region in regions(fn.body):
        out = []
        for op in region.ops:
            y = _half_away_operand(op, defs)
            if y is None:
                out.append(op)
                continue
            t = op.result.type
            half = Value(t)
            signed = Value(t)
            shifted = Value(t)
            out += [Op("arith.constant", [], [half], {"values": [0.5]}, [], op.loc),
                    Op("math.copysign", [half, y], [signed], {}, [], op.loc),
                    Op("arith.addf", [y, signed], [shifted], {}, [], op.loc),
                    Op("math.trunc", [shifted], [op.result], {}, [], op.loc)]
            n += 1
        region.ops[:] = out
    return n


def _half_away_operand(op: Op, defs: dict):
    """`y` when `op` is where(y >= 0, floor(y + 0.5), ceil(y - 0.5)) on float tiles, else None."""
    if op.name != "arith.select" or len(op.operands) != 3 or not op.result.type.is_tile:
        return None
    c, a, b = (defs.get(id(v)) for v in op.operands)
    if c is None or c.name != "arith.cmpf" or c.attrs.get("pred") != "oge" or _const_float(c.operands[1], defs) != 0.0:
        return None
    y = c.operands[0]
    if not (_unary_kind(a, _FLOOR) and _unary_kind(b, _CEIL)):
        return None
    up, down = defs.get(id(a.operands[0])), defs.get(id(b.operands[0]))
    if up is None or down is None or up.name != "arith.addf" or up.operands[0] is not y \
            or _const_float(up.operands[1], defs) != 0.5:
        return None
    if down.name == "arith.subf" and down.operands[0] is y and _const_float(down.operands[1], defs) == 0.5:
        return y
    if down.name == "arith.addf" and down.operands[0] is y and _const_float(down.operands[1], defs) == -0.5:
        return y
    return None
