"""Level 2: place one Triton program on one PE.

Every tile value gets a buffer in the PE's local memory (384 KB on MTIA 2i). Buffers are
assigned by a linear scan over live ranges (a value used inside a loop stays live for the
whole loop); DMA destinations inside loops get `num_stages` copies so the next iteration's
transfer overlaps this iteration's compute. A program that does not fit is a compile error
that names the kernel, the biggest tiles live at the peak and their source lines.
"""
from __future__ import annotations

from dataclasses import dataclass

from backend.sim.isa import Buffer
from backend.tile_ir import Function, Op, Region, UnsupportedError, Value

ALIGN = 64  # local-memory buffers start on 64-byte boundaries (DMA bursts)


class LocalMemoryOverflow(UnsupportedError):
    pass


@dataclass
class Interval:
    value: Value
    start: int
    end: int
    nbytes: int
    copies: int
    loc: str


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
            for r in op.regions:
                visit(r, in_loop or op.name in ("scf.for", "scf.while"))
    visit(fn.body, False)
    return out


def live_intervals(fn: Function, stages: int) -> list[Interval]:
    order: dict[int, int] = {}
    defs: dict[Value, tuple[int, str]] = {}
    last: dict[Value, int] = {}
    loop_span: list[tuple[int, int, set]] = []  # (start, end, values defined inside)
    counter = [0]

    def visit(region: Region, enclosing: list[int]) -> set:
        defined: set = set()
        for a in region.args:
            defs[a] = (counter[0], "")
            defined.add(a)
        for op in region.ops:
            idx = counter[0]
            counter[0] += 1
            order[id(op)] = idx
            for v in op.operands:
                last[v] = max(last.get(v, -1), idx)
            inner: set = set()
            start = counter[0]
            for r in op.regions:
                inner |= visit(r, enclosing + [idx])
            if op.name in ("scf.for", "scf.while"):
                loop_span.append((idx, counter[0], inner))
            defined |= inner
            for res in op.results:
                defs[res] = (idx, op.loc)
                defined.add(res)
            del start
        return defined

    visit(fn.body, [])
    # a value used inside a loop but defined outside stays live until the loop ends
    for (ls, le, inner) in loop_span:
        for v, (d, _) in list(defs.items()):
            if v in inner:
                if v in last and last[v] >= ls:
                    pass
                continue
            if d < ls and last.get(v, -1) >= ls and last.get(v, -1) < le:
                last[v] = le
    buffered = _buffered_loads(fn, stages)
    out = []
    for v, (d, loc) in defs.items():
        if not v.type.is_tile or v.type.elem == "blockptr":
            continue
        end = last.get(v, d)
        copies = buffered.get(v, 1)
        out.append(Interval(v, d, end, v.type.nbytes, copies, loc))
    return out


def allocate(fn: Function, capacity: int, stages: int) -> tuple[dict[str, Buffer], int]:
    """Linear-scan first-fit allocation; returns buffers and the peak bytes used."""
    intervals = sorted(live_intervals(fn, stages), key=lambda i: (i.start, -i.nbytes))
    active: list[tuple[int, int, Interval]] = []  # (offset, size, interval)
    buffers: dict[str, Buffer] = {}
    peak = 0
    for iv in intervals:
        active = [a for a in active if a[2].end >= iv.start]
        size = -(-iv.nbytes * iv.copies // ALIGN) * ALIGN
        offset = 0
        for a_off, a_size, _ in sorted(active, key=lambda a: a[0]):
            if offset + size <= a_off:
                break
            offset = max(offset, a_off + a_size)
        active.append((offset, size, iv))
        peak = max(peak, offset + size)
        if offset + size > capacity:
            raise _overflow(fn, capacity, active)
        buffers[iv.value.name] = Buffer(list(iv.value.type.shape), iv.value.type.elem, offset, iv.nbytes,
                                        iv.copies)
    return buffers, peak


def _overflow(fn: Function, capacity: int, active: list) -> LocalMemoryOverflow:
    live = sorted(active, key=lambda a: -a[1])[:4]
    total = sum(a[1] for a in active)
    desc = "; ".join(f"{a[2].value.type} ({a[1] // 1024} KB{' x' + str(a[2].copies) if a[2].copies > 1 else ''})"
                     f" from {a[2].loc or '?'}" for a in live)
    return LocalMemoryOverflow(
        f"kernel '{fn.name}': tiles live at once need {total // 1024} KB but one PE has "
        f"{capacity // 1024} KB of local memory; largest: {desc}. Use smaller block sizes or num_stages=1.")
