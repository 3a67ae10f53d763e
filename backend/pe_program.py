"""Level 2: place one Triton program on one PE.

Every tile value gets a buffer in the PE's local memory (384 KB on MTIA 2i). Buffers are
assigned by a linear scan over live ranges (a value used inside a loop stays live for the
whole loop); DMA destinations inside loops get `num_stages` copies so the next iteration's
transfer overlaps this iteration's compute. A program that does not fit is a compile error
that names the kernel, the biggest tiles live at the peak and their source lines.
"""
from __future__ import annotations

from dataclasses import dataclass

from triton.runtime.errors import OutOfResources

from backend.program import Buffer
from backend.tile_ir import Function, Op, Region, UnsupportedError, Value

ALIGN = 64  # local-memory buffers start on 64-byte boundaries (DMA bursts)


class LocalMemoryOverflow(OutOfResources, UnsupportedError):
    """Too many tiles for one PE. An OutOfResources, like a GPU's shared-memory overflow, so
    triton.autotune skips a config that does not fit instead of failing."""

    def __init__(self, message: str, required: int = 0, limit: int = 0):
        OutOfResources.__init__(self, required, limit, "local memory")
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.required, self.limit))


@dataclass
class Interval:
    value: Value
    start: int
    end: int
    nbytes: int
    copies: int
    loc: str
    members: list = None  # values sharing this buffer (loop-carried and in-place results)


def _buffered_loads(fn: Function, stages: int) -> dict[Value, int]:
    """DMA loads inside loops whose destination gets `stages` copies."""
    out: dict[Value, int] = {}
    if stages <= 1:
        return out

    def visit(region: Region, in_loop: bool) -> None:
        for op in region.ops:
            if in_loop and op.name in ("mtia.dma_load", "mtia.gather", "tt.load") and op.results \
                    and op.result.type.is_tile:
                out[op.result] = stages
            if in_loop and op.name in ("mtia.dma_store", "mtia.scatter"):
                # the value a store reads: the next iteration computes into the other copy
                # while DMA_OUT drains this one
                name = op.attrs["_desc"].get("value")
                for v in op.operands:
                    if v.name == name and v.type.is_tile:
                        out[v] = stages
            for r in op.regions:
                visit(r, in_loop or op.name in ("scf.for", "scf.while"))
    visit(fn.body, False)
    return out


def _is_view(op: Op) -> bool:
    """Broadcasts and unit-dim reshapes alias their source: SIMD and DMA address tiles with
    strides, so a stride-0 view needs no buffer of its own."""
    if not op.operands or not op.operands[0].type.is_tile:
        return False
    if op.name in ("tt.broadcast", "tt.expand_dims"):
        return True
    if op.name == "tt.reshape":
        src, dst = op.operands[0].type.shape, op.result.type.shape
        return [s for s in src if s != 1] == [s for s in dst if s != 1]
    return False


def _immediates(fn: Function) -> set:
    """Splat constant tiles that every user takes as a SIMD immediate (see lowering.operand):
    they are never built, so they need no buffer."""
    from backend.lowering import IMMEDIATE_USERS
    users: dict[Value, list[Op]] = {}
    consts = []

    def visit(region: Region) -> None:
        for op in region.ops:
            if op.name == "arith.constant" and op.results[0].type.is_tile and len(op.attrs.get("values", [])) == 1:
                consts.append(op.results[0])
            for v in op.operands:
                users.setdefault(v, []).append(op)
            for r in op.regions:
                visit(r)
    visit(fn.body)
    from backend.lowering import scalar_splats
    def immediate_use(u: Op, c: Value) -> bool:
        # elementwise operands, and a dot's accumulator (not its inputs)
        return u.name in IMMEDIATE_USERS or u.name == "tt.dot" and c not in u.operands[:2]
    return {c for c in consts if users.get(c) and all(immediate_use(u, c) for u in users[c])} \
        | scalar_splats(fn)


def live_intervals(fn: Function, stages: int, whole_loop: bool = True) -> list[Interval]:
    defs: dict[Value, tuple[int, str]] = {}
    last: dict[Value, int] = {}
    alias: dict[Value, Value] = {}
    loops: list[tuple[int, int, set]] = []  # (first op, end, values defined inside)
    inplace: list[tuple] = []                # candidate buffer sharing, checked below
    rings: set = set()                       # carried values that get a two-instance ring
    counter = 0

    def root(v: Value) -> Value:
        while v in alias:
            v = alias[v]
        return v

    def visit(region: Region) -> set:
        nonlocal counter
        defined: set = set(region.args)
        for a in region.args:
            defs[a] = (counter, "")
        for op in region.ops:
            idx = counter
            counter += 1
            for v in op.operands:
                r = root(v)
                last[r] = max(last.get(r, -1), idx)
            inner: set = set()
            for r in op.regions:
                inner |= visit(r)
            if op.name in ("scf.for", "scf.while"):
                loops.append((idx, counter, inner))
            defined |= inner
            for res in op.results:
                defs[res] = (idx, op.loc)
                defined.add(res)
            if _is_view(op):
                alias[op.result] = op.operands[0]
            if op.name == "tt.dot":
                inplace.append(("dot", op.result, op.operands[2], idx))
            elif op.name.startswith(("arith.", "math.")) and len(op.results) == 1 and op.result.type.is_tile:
                inplace.append(("elementwise", op.result, list(op.operands), idx))
            elif op.name == "scf.for":
                body = op.regions[0]
                y = body.ops[-1] if body.ops and body.ops[-1].name == "scf.yield" else None
                ring = op.attrs.get("_ring", ())
                for j, res in enumerate(op.results):
                    arg = body.args[1 + j]
                    inplace.append(("ring" if arg in ring else "for", arg, y.operands[j] if y else None, res,
                                    op.operands[3 + j], idx))
                    if arg in ring:
                        rings.add(arg)
            elif op.name == "scf.if":
                # a branch's result lives where the branch computed it when it dies there
                for r in op.regions:
                    y = r.ops[-1] if r.ops and r.ops[-1].name == "scf.yield" else None
                    for j, res in enumerate(op.results):
                        if y is not None and j < len(y.operands):
                            inplace.append(("if", res, y.operands[j], counter))
        return defined

    visit(fn.body)
    # a value used inside a loop but defined outside stays live until the loop ends (inner
    # loops are listed before the loops that contain them); before buffer sharing, so no
    # in-loop result takes the memory of a value the next iteration reads again
    for start, end, inner in loops:
        for v, (d, _) in defs.items():
            if v not in inner and d < start and start < last.get(v, -1) < end:
                last[v] = end
    classes = _share_buffers(inplace, defs, last, root)
    buffered = {classes(v): n for v, n in _buffered_loads(fn, stages).items()}
    for v in rings:  # iteration j reads instance j mod 2 while the next one is being written
        buffered[classes(v)] = max(buffered.get(classes(v), 1), 2)
    immediates = _immediates(fn)
    groups: dict = {}
    for v, (d, loc) in defs.items():
        if v.type.is_tile and v.type.elem != "blockptr" and v not in alias and v not in immediates:
            groups.setdefault(classes(v), []).append(v)
    out = []
    for rep_v, members in groups.items():
        start = min(defs[m][0] for m in members)
        end = max(last.get(m, defs[m][0]) for m in members)
        loc = next((defs[m][1] for m in members if defs[m][1]), "")
        copies = buffered.get(rep_v, 1)  # keyed by buffer class
        if copies > 1 and whole_loop:
            # the next instance is written while this iteration's other values are live
            # (that is what the copies are for): such a buffer is shared with nothing else
            # in the innermost loop that holds it
            for lo, hi, inner in loops:
                if lo < start <= hi:
                    start, end = min(start, lo), max(end, hi)
                    break
        out.append(Interval(rep_v, start, end, max(m.type.nbytes for m in members), copies, loc, members))
    return out


def _share_buffers(cands: list, defs: dict, last: dict, root) -> "callable":
    """Union values that can live in one buffer: a dot's result with its accumulator when
    nothing reads the accumulator afterwards (the DPE accumulates in place), an elementwise
    result with an operand that dies there, and a loop's carried value across init,
    iteration argument, yielded value and result."""
    parent: dict = {}

    def find(v):
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    def union(a, b):
        if a is None or b is None or not a.type.is_tile or not b.type.is_tile:
            return
        ra, rb = find(root(a)), find(root(b))
        if ra is not rb and ra.type.nbytes == rb.type.nbytes:
            parent[rb] = ra

    for c in cands:
        if c[0] == "dot":
            _, res, acc, idx = c
            if last.get(root(acc), -1) <= idx:
                union(res, acc)
        elif c[0] == "elementwise":
            # the SIMD engine writes a result over an operand that dies at this op
            _, res, operands, idx = c
            for v in operands:
                if v.type.is_tile and last.get(root(v), -1) <= idx and v.type.nbytes == res.type.nbytes:
                    union(v, res)
                    break
        elif c[0] == "if":
            _, res, yielded, end = c
            if yielded.type.is_tile and last.get(root(yielded), -1) <= end:
                union(res, yielded)
        elif c[0] == "ring":
            # the carried value and the one yielded for the next iteration are live together:
            # one buffer with two instances (see passes/rotate.py)
            _, arg, yielded, res, init, idx = c
            for v in (yielded, res, init):
                union(arg, v)
        else:
            _, arg, yielded, res, init, idx = c
            if yielded is not None and yielded is not arg and last.get(arg, -1) <= defs[root(yielded)][0]:
                union(arg, yielded)
                union(res, yielded)
            if last.get(root(init), -1) <= idx:
                union(arg, init)
    return lambda v: find(root(v))


def allocate(fn: Function, capacity: int, stages: int, max_resident: int = 4) -> tuple[dict[str, Buffer], int]:
    """Linear-scan allocation; returns buffers and the peak bytes used.

    First a compact first-fit pass gives the smallest peak P and so the number of programs
    that can be resident on a PE, d = capacity // P. Then the buffers are placed again within
    capacity // d bytes (d programs still fit), each at the place whose previous occupants
    died longest ago: engines run asynchronously, so a write into memory just freed by a
    value another engine still reads would have to wait for that reader (the timing model
    prices this). Fresh memory first, then the least recently freed."""
    intervals = sorted(live_intervals(fn, stages), key=lambda i: (i.start, -i.nbytes))
    try:
        _, peak = _place(fn, intervals, capacity, capacity, spread=False)
    except LocalMemoryOverflow:
        # multi-buffered tiles reuse memory of their loop's other values (the timing model
        # then charges the waits that reuse causes)
        intervals = sorted(live_intervals(fn, stages, whole_loop=False), key=lambda i: (i.start, -i.nbytes))
        _, peak = _place(fn, intervals, capacity, capacity, spread=False)
    resident = max(1, min(max_resident, capacity // max(peak, 1)))
    return _place(fn, intervals, capacity, max(peak, capacity // resident), spread=True)


def allocate_fitting(fn: Function, capacity: int, stages: int) -> tuple[dict[str, Buffer], int, int]:
    """`allocate` at `stages`, else at the deepest buffering below it that fits local memory:
    a kernel whose multi-buffered loop tiles just overflow still runs, with less DMA/compute
    overlap (the PE listing says so). Returns (buffers, peak, stages used); raises only when
    even single buffering does not fit."""
    for s in range(max(1, stages), 0, -1):
        try:
            buffers, peak = allocate(fn, capacity, s)
            return buffers, peak, s
        except LocalMemoryOverflow as e:
            if s == 1:
                if stages <= 1:
                    raise
                raise LocalMemoryOverflow(f"{e.message.replace(' or num_stages=1', '')} (tried num_stages "
                                          f"{stages} down to 1)", e.required, e.limit) from None
    raise AssertionError("unreachable")


def _place(fn: Function, intervals: list, capacity: int, limit: int, spread: bool) -> tuple[dict[str, Buffer], int]:
    active: list[tuple[int, int, Interval]] = []  # (offset, size, interval)
    expired: list[tuple[int, int, int]] = []      # (offset, size, end) of dead intervals
    buffers: dict[str, Buffer] = {}
    peak = 0
    for iv in intervals:
        still = []
        for a in active:
            (still.append(a) if a[2].end >= iv.start else expired.append((a[0], a[1], a[2].end)))
        active = still
        size = -(-iv.nbytes * iv.copies // ALIGN) * ALIGN
        offset = _first_fit(active, size)
        if spread:
            best = None
            for off in sorted({0} | {a[0] + a[1] for a in active} | {e[0] + e[1] for e in expired}):
                if off + size > limit or any(a[0] < off + size and off < a[0] + a[1] for a in active):
                    continue
                age = max((e[2] for e in expired if e[0] < off + size and off < e[0] + e[1]), default=-1)
                if best is None or (age, off) < best:
                    best = (age, off)
            if best is not None:
                offset = best[1]
        active.append((offset, size, iv))
        peak = max(peak, offset + size)
        if offset + size > capacity:
            raise _overflow(fn, capacity, active)
        buf = Buffer(list(iv.value.type.shape), iv.value.type.elem, offset, iv.nbytes, iv.copies)
        for m in iv.members or [iv.value]:
            buffers[m.name] = buf
    return buffers, peak


def _first_fit(active: list, size: int) -> int:
    offset = 0
    for a_off, a_size, _ in sorted(active, key=lambda a: a[0]):
        if offset + size <= a_off:
            break
        offset = max(offset, a_off + a_size)
    return offset


def _overflow(fn: Function, capacity: int, active: list) -> LocalMemoryOverflow:
    live = sorted(active, key=lambda a: -a[1])[:4]
    total = sum(a[1] for a in active)
    desc = "; ".join(f"{a[2].value.type} ({a[1] // 1024} KB{' x' + str(a[2].copies) if a[2].copies > 1 else ''})"
                     f" from {a[2].loc or '?'}" for a in live)
    return LocalMemoryOverflow(
        f"kernel '{fn.name}': tiles live at once need {total // 1024} KB but one PE has "
        f"{capacity // 1024} KB of local memory; largest: {desc}. Use smaller block sizes or num_stages=1.",
        total, capacity)
