"""Elementwise chains of a small-range integer, computed once per possible value: a table and
a gather.

A tile of integers known to take at most MAX_TABLE values (a 4-bit code unpacked from bytes:
`(byte >> 4) & 15`) often feeds a long chain of elementwise ops that reads nothing else but
constants and scalars: TorchInductor's decode of an FP4 code to its float value is 16 SIMD ops
per element. Computed on the K values the integer can take (an iota of K elements) the chain
costs 16 short ops per program; each element then costs one gather from that K-entry table on
the memory layout unit (`tt.gather` along the last axis), instead of 16 full-width SIMD ops.

Value ranges come from what bounds an integer by construction: the element type of a load or
an extension from i8, `and` with a non-negative constant, shifts right by a constant, `rem` by a
positive constant, selects, adds and subtracts of bounded values, constants. A chain is taken
when it saves at least half of its full-width work (each table op costs K elements, each
gather and the index's offset a full tile) and has MIN_OPS ops or more; it may read only the
integer, values of the chain, constants and splatted scalars, and holds no integer division
(a table entry for a value that never occurs could divide by zero where the kernel does not).
The table entries are the chain's own ops on the same operand values, so each element gets the
bits it got before, except where the lowering would have fused a multiply of the chain's result
into an FMA outside it (the product is then rounded once more). Switch:
`MTIAOptions.tabulate`.
"""
from __future__ import annotations

from collections import defaultdict

from backend.tile_ir import (BINARY_FUNCTIONS, UNARY_FUNCTIONS, VIEW_OPS, Function, Op, Region, Type, Value, regions,
                             splat_constant, walk)

MAX_TABLE = 256   # table entries (a power of two): the values an i8 can take
MIN_OPS = 3       # ops a chain must have to be worth a table

_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}
_CASTS = frozenset({"arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi",
                    "arith.fptoui", "arith.extf", "arith.truncf", "arith.bitcast", "tt.fp_to_fp", "tt.bitcast"})
_DIVISIONS = frozenset({"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi",
                        "arith.floordivsi", "arith.ceildivui"})
_ELEMENTWISE = (frozenset(BINARY_FUNCTIONS) | frozenset(UNARY_FUNCTIONS) | _CASTS
                | {"arith.cmpi", "arith.cmpf", "arith.select", "math.fma", "tt.clampf", "tt.extern_elementwise"})
_VIEWS = frozenset(VIEW_OPS)
# the operands of memory ops that pointer and mask analysis reads (backend/passes/structure.py):
# pointers, offsets and masks, not the data stored
_ADDRESSING = {"tt.load": (0, 1), "tt.store": (0, 2), "tt.addptr": (0, 1), "tt.atomic_rmw": (0, 2),
               "tt.atomic_cas": (0,)}


def _address_slice(fn: Function, defs: dict) -> set[int]:
    """The values that reach an address, an offset or a mask of a memory op, through any ops."""
    todo = [op.operands[i] for op in walk(fn.body) for i in _ADDRESSING.get(op.name, ()) if i < len(op.operands)]
    seen: set[int] = set()
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        d = defs.get(id(v))
        if d is not None:
            todo.extend(d.operands)
    return seen


def run(fn: Function) -> int:
    """Tabulate every chain that pays, best first; returns how many were tabulated."""
    n = 0
    while True:
        best = _best_chain(fn)
        if best is None:
            return n
        _rewrite(fn, *best)
        n += 1


# ----------------------------------------------------------------------------- value ranges

def _const_int(v: Value, defs: dict) -> int | None:
    """The integer every element of `v` holds, when it is a constant (splatted or scalar)."""
    c = splat_constant(v, defs)
    return c if isinstance(c, int) and not isinstance(c, bool) else None


class _Ranges:
    """Inclusive bounds of integer values, in the signed reading the simulator holds them in."""

    def __init__(self, defs: dict):
        self.defs = defs
        self.memo: dict[int, tuple[int, int] | None] = {}

    def of(self, v: Value) -> tuple[int, int] | None:
        if id(v) not in self.memo:
            self.memo[id(v)] = None  # cycles (none in SSA outside loops) read as unbounded
            self.memo[id(v)] = self._compute(v)
        return self.memo[id(v)]

    @staticmethod
    def _full(elem: str) -> tuple[int, int] | None:
        bits = _INT_BITS.get(elem)
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if bits else None

    def _fits(self, r: tuple[int, int] | None, elem: str) -> tuple[int, int] | None:
        full = self._full(elem)
        if r is None or full is None or r[0] < full[0] or r[1] > full[1]:
            return None
        return r

    def _compute(self, v: Value) -> tuple[int, int] | None:
        elem = v.type.elem
        if elem not in _INT_BITS:
            return None
        op = self.defs.get(id(v))
        if op is None:
            return self._full(elem) if _INT_BITS[elem] <= 8 else None
        name, ops = op.name, op.operands
        c = _const_int(v, self.defs)
        if c is not None:
            return (c, c)
        if name in _VIEWS or name == "tt.splat":
            return self.of(ops[0])
        if name == "arith.extui":
            r = self.of(ops[0])
            if r is not None and r[0] >= 0:
                return r
            bits = _INT_BITS.get(ops[0].type.elem)
            return (0, (1 << bits) - 1) if bits else None
        if name in ("arith.extsi", "arith.trunci"):
            r = self.of(ops[0]) or self._full(ops[0].type.elem)
            return self._fits(r, elem) or (self._full(elem) if _INT_BITS[elem] <= 8 else None)
        if name == "arith.andi":
            cs = [x for x in (_const_int(o, self.defs) for o in ops) if x is not None and x >= 0]
            rs = [self.of(o) for o in ops]
            his = cs + [r[1] for r in rs if r is not None and r[0] >= 0]
            return (0, min(his)) if his else self._default(elem)
        if name in ("arith.shrsi", "arith.shrui"):
            s, r = _const_int(ops[1], self.defs), self.of(ops[0])
            if s is not None and r is not None and 0 <= s < _INT_BITS[elem] and (name == "arith.shrsi" or r[0] >= 0):
                return (r[0] >> s, r[1] >> s)
            return self._default(elem)
        if name in ("arith.remsi", "arith.remui"):
            d, r = _const_int(ops[1], self.defs), self.of(ops[0])
            if d is not None and d > 0 and r is not None and r[0] >= 0:
                return (0, min(r[1], d - 1))
            if d is not None and d > 0 and name == "arith.remsi":
                return (-(d - 1), d - 1)
            return self._default(elem)
        if name == "arith.select":
            a, b = self.of(ops[1]), self.of(ops[2])
            return (min(a[0], b[0]), max(a[1], b[1])) if a is not None and b is not None else self._default(elem)
        if name in ("arith.addi", "arith.subi"):
            a, b = self.of(ops[0]), self.of(ops[1])
            if a is None or b is None:
                return self._default(elem)
            r = (a[0] + b[0], a[1] + b[1]) if name == "arith.addi" else (a[0] - b[1], a[1] - b[0])
            return self._fits(r, elem) or self._default(elem)
        if name in ("arith.minsi", "arith.maxsi"):
            a, b = self.of(ops[0]), self.of(ops[1])
            if a is None or b is None:
                return self._default(elem)
            f = min if name == "arith.minsi" else max
            return (f(a[0], b[0]), f(a[1], b[1]))
        return self._default(elem)

    def _default(self, elem: str) -> tuple[int, int] | None:
        """An integer nothing bounds: its type's range, when that is small enough to matter."""
        return self._full(elem) if _INT_BITS[elem] <= 8 else None


# ----------------------------------------------------------------------------- chains

def _uniform(v: Value, defs: dict) -> bool:
    """Every element holds the same value: a splatted constant or scalar, or a view of one."""
    op = defs.get(id(v))
    while op is not None and op.name in _VIEWS:
        op = defs.get(id(op.operands[0]))
    if op is None:
        return False
    if op.name == "tt.splat":
        return not op.operands[0].type.is_tile
    return op.name == "arith.constant" and len(op.attrs.get("values", [])) == 1


def _elementwise(op: Op, defs: dict) -> bool:
    if op.name not in _ELEMENTWISE or len(op.results) != 1 or op.regions:
        return False
    if op.name == "tt.extern_elementwise":
        return bool(op.attrs.get("pure")) and not str(op.attrs.get("symbol", "")).startswith("mtia.ext.")
    return not op.result.type.is_ptr and not any(o.type.is_ptr for o in op.operands)


def _chain(region: Region, start: int, root: Value, defs: dict) -> list[Op]:
    """The ops after `start` in `region` computed from `root` (and uniform values) alone."""
    shape = root.type.shape
    inside = {id(root)}
    out: list[Op] = []
    for op in region.ops[start + 1:]:
        if not _elementwise(op, defs) or op.result.type.shape != shape or op.name in _DIVISIONS:
            continue
        if not any(id(o) in inside for o in op.operands):
            continue
        if all(id(o) in inside or (o.type.shape == shape and _uniform(o, defs)) for o in op.operands):
            out.append(op)
            inside.add(id(op.result))
    return out


def _table_size(lo: int, hi: int) -> int:
    k = 1
    while k < hi - lo + 1:
        k *= 2
    return k


def _best_chain(fn: Function) -> tuple | None:
    """(region, root, chain, outputs, lo, hi) of the chain saving the most full-width ops."""
    defs = {id(r): op for op in walk(fn.body) for r in op.results}
    users: dict[int, list[Op]] = defaultdict(list)
    for op in walk(fn.body):
        for o in op.operands:
            users[id(o)].append(op)
    ranges = _Ranges(defs)
    addressing = _address_slice(fn, defs)
    best, best_saving = None, 0.0
    for region in regions(fn.body):
        for i, op in enumerate(region.ops):
            if len(op.results) != 1 or op.name in _VIEWS:
                continue  # a view's source is the root
            root = op.result
            if not root.type.is_tile or root.type.elem not in _INT_BITS or _uniform(root, defs):
                continue
            r = ranges.of(root)
            if r is None or _table_size(*r) > MAX_TABLE:
                continue
            chain = _chain(region, i, root, defs)
            if len(chain) < MIN_OPS:
                continue
            members = {id(c) for c in chain}
            outputs = [c.result for c in chain if any(id(u) not in members for u in users[id(c.result)])]
            if any(id(o) in addressing for o in outputs):
                continue  # a gathered mask or offset would hide its form from pointer and mask analysis
            k, e = _table_size(*r), root.type.numel
            before = len(chain) * e
            # the index is root - lo, widened first when the root is narrower than i32
            index_ops = 0 if r[0] == 0 else (1 if _INT_BITS[root.type.elem] >= 32 else 2)
            after = len(chain) * k + len(outputs) * e + index_ops * e
            if 2 * after > before:
                continue
            if before - after > best_saving:
                best, best_saving = (region, root, chain, outputs, r[0], r[1]), before - after
    return best


# ----------------------------------------------------------------------------- rewrite

def _rewrite(fn: Function, region: Region, root: Value, chain: list[Op], outputs: list[Value], lo: int,
             hi: int) -> None:
    defs = {id(r): op for op in walk(fn.body) for r in op.results}
    k = _table_size(lo, hi)
    elem = root.type.elem
    loc = chain[0].loc
    new: list[Op] = []

    def emit(name: str, operands: list[Value], typ: Type, attrs: dict | None = None, at: str = "") -> Value:
        v = Value(typ)
        new.append(Op(name, operands, [v], dict(attrs or {}), [], at or loc))
        return v

    def const(value: int | float, typ: Type) -> Value:
        return emit("arith.constant", [], typ, {"values": [value]})

    def uniform(v: Value) -> Value:
        """`v` (uniform) as a K-element tile."""
        op = defs[id(v)]
        while op.name in _VIEWS:
            op = defs[id(op.operands[0])]
        typ = v.type.with_shape((k,))
        if op.name == "tt.splat":
            return emit("tt.splat", [op.operands[0]], typ)
        return const(op.attrs["values"][0], typ)

    # the values the table is indexed by: lo .. lo + K - 1, clamped to hi (an entry past hi is
    # never read; clamped, it is computed from a value the kernel can see), in i32 (or i64), then
    # narrowed to the root's type, which holds every value of lo .. hi
    wide = "i64" if elem == "i64" else "i32"
    keys = emit("tt.make_range", [], Type("i32", (k,)), {"start": 0, "end": k})
    if wide == "i64":
        keys = emit("arith.extsi", [keys], Type(wide, (k,)))
    if lo != 0:
        keys = emit("arith.addi", [keys, const(lo, Type(wide, (k,)))], Type(wide, (k,)))
    if lo + k - 1 > hi:
        keys = emit("arith.minsi", [keys, const(hi, Type(wide, (k,)))], Type(wide, (k,)))
    if elem != wide:
        keys = emit("arith.trunci", [keys], Type(elem, (k,)))
    first = region.ops.index(chain[0])
    region.ops[first:first] = new

    mapped: dict[int, Value] = {id(root): keys}
    index = root if lo == 0 else None  # root - lo: made once, before the first gather
    replace: dict[int, Value] = {}
    shape = root.type.shape
    for op in chain:
        new = []
        operands = [mapped[id(o)] if id(o) in mapped else uniform(o) for o in op.operands]
        res = op.result
        table = Value(res.type.with_shape((k,)))
        new.append(Op(op.name, operands, [table], dict(op.attrs), [], op.loc))
        mapped[id(res)] = table
        if any(res is o for o in outputs):
            if index is None:  # root - lo, in i32 at least (lo .. hi may not fit a narrower type)
                index = root
                if elem != wide:
                    index = emit("arith.extsi", [index], Type(wide, shape))
                index = emit("arith.subi", [index, const(lo, index.type)], index.type)
            src = table
            for axis in range(len(shape) - 1):
                src = emit("tt.expand_dims", [src], Type(res.type.elem, (1,) * (axis + 1) + (k,)), {"axis": 0})
            if len(shape) > 1:
                src = emit("tt.broadcast", [src], Type(res.type.elem, tuple(shape[:-1]) + (k,)))
            replace[id(res)] = emit("tt.gather", [src, index], res.type, {"axis": len(shape) - 1}, op.loc)
        pos = region.ops.index(op)
        region.ops[pos:pos + 1] = new
    for op in walk(fn.body):
        op.operands = [replace.get(id(o), o) for o in op.operands]
