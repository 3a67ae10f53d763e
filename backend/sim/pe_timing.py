"""One program on one PE: the list scheduler of the timing model (backend/sim/timing.py, whose
docstring documents the model) and the structural data it caches on the instructions.

`prepare(program)` caches, once per program, what the scheduler reads for every executed
event, as attributes of each Instr (not a side table: see backend/sim/cost/__init__.py):
  _tk, _te    the instruction's kind (its cost rule, backend/sim/cost) and engine index
  _tr, _tw    the registers it reads (views and loop/if results resolved to what they alias)
              and writes
  _trb, _tww, _tip   read / written / written-in-place registers that own a multi-instance
              buffer, with its instance count (write-after-read through buffer instances)
  _tconf      other registers whose local memory a write overwrites (the allocator's reuse)
  _tres       the load is program-invariant (`pe_resident`: held tiles)
  _tloop      a loop's induction variable, carried parameters, inits, results and ring-carried
              values (None for other instructions)
  _tctl       the registers the control core waits for before a loop trip or a branch (a
              loop's bounds and step, an if's condition)
and on the program `_tconflicts` (buffer overlaps) and `_timing_prepared`.

`schedule_program(events, ...)` walks one program's executed events: the command processor
issues in order, each instruction starts once its engine, operands and buffers allow, and
occupies its engine for what its cost rule charges (the launch's `Pricer`).
"""
from __future__ import annotations

import bisect
import math
from typing import Any, Iterable

from backend.program import ENGINES, registers_in
from backend.sim.cost import ENGINE_INDEX, K_DMA_IN, K_LOOP, K_SCALAR, K_SCALAR_LOAD, ChipModel, Pricer, kind_of

_ZERO = (0.0, 0.0, -1)  # the ready entry of a register nothing wrote


def _regs(operands: Iterable) -> list[str]:
    return registers_in(list(operands))


def prepare(program: Any) -> None:
    """Cache structural scheduling data on the instructions of `program` (idempotent)."""
    if getattr(program, "_timing_prepared", False):
        return
    alias: dict[str, tuple[str, ...]] = {}

    def collect(block) -> None:
        for ins in block.instrs:
            for b in ins.bodies:
                collect(b)
            if ins.op in ("mlu.reshape", "mlu.broadcast") and ins.attrs.get("view") \
                    and isinstance(ins.args.get("a"), str):
                alias[ins.dst[0]] = (ins.args["a"],)  # a view reads (and waits) as its source
            if ins.op == "ctl.for":
                res = [r if isinstance(r, str) else None for r in ins.bodies[0].results]
                for d, r in zip(ins.dst, res):
                    if r:
                        alias[d] = (r,)
            elif ins.op == "ctl.if":
                for i, d in enumerate(ins.dst):
                    alias[d] = tuple(b.results[i] for b in ins.bodies
                                     if i < len(b.results) and isinstance(b.results[i], str))
            elif ins.op == "ctl.while":
                res = ins.bodies[0].results[1:]
                for d, r in zip(ins.dst, res):
                    if isinstance(r, str):
                        alias[d] = (r,)

    collect(program.body)

    def resolve(r: str, depth: int = 0) -> tuple[str, ...]:
        if r not in alias or depth > 32:
            return (r,)
        out: list[str] = []
        for x in alias[r]:
            out.extend(resolve(x, depth + 1))
        return tuple(dict.fromkeys(out))

    copies = {r: b.copies for r, b in program.buffers.items()}
    conflicts = program._tconflicts = _address_conflicts(program.buffers)

    def walk(block) -> None:
        for ins in block.instrs:
            reads = ins._reads if hasattr(ins, "_reads") else tuple(dict.fromkeys(_regs(ins.args.values())))
            rr: list[str] = []
            for r in reads:
                rr.extend(resolve(r))
            ins._tk = kind_of(ins.op)
            ins._te = ENGINE_INDEX[ins.engine]
            ins._tr = tuple(dict.fromkeys(rr))
            ins._tw = tuple(ins.dst)
            ins._tres = bool(ins.attrs.get("pe_resident", False))
            ins._trb = tuple((r, copies[r]) for r in ins._tr if r in copies)
            # a read-modify-write of a register (in-place accumulate) stays in the same buffer instance
            ins._tww = tuple((r, copies[r]) for r in ins.dst if r in copies and r not in ins._tr)
            ins._tip = tuple((r, copies[r]) for r in ins.dst if r in copies and r in ins._tr)
            # other registers whose local memory this write overwrites (not read by this op)
            ins._tconf = tuple(dict.fromkeys(x for d in ins.dst for x in conflicts.get(d, ())
                                             if x[0] not in ins._tr and x[0] not in ins.dst))
            if ins.op == "ctl.for":
                body = ins.bodies[0]
                # a carried value is ready when what it aliases is (an if's result: its branches)
                inits = [resolve(x) if isinstance(x, str) else () for x in ins.args.get("inits", [])]
                res = [resolve(x) if isinstance(x, str) else () for x in body.results]
                # a carried value sharing a multi-instance buffer with the value yielded for the
                # next iteration (a software-pipelined ring): its reads hold the instance that
                # was current when the iteration began
                ring = []
                for prm, rr in zip(body.params[1:], res):
                    bp = program.buffers.get(prm)
                    if bp is not None and bp.copies > 1 and len(rr) >= 1:
                        key = rr[0]
                        by = program.buffers.get(key)
                        if by is not None and (by.offset, by.nbytes) == (bp.offset, bp.nbytes):
                            ring.append((prm, key))
                ins._tloop = (body.params[0] if body.params else None, tuple(body.params[1:]),
                              tuple(inits), tuple(res), tuple(ring))
            else:
                ins._tloop = None
            # the registers the control core must hold before it can enter a loop or branch:
            # a loop's bounds and step (its first induction value and its trip test), an if's
            # condition; a value an engine or a DMA produces is waited for like any other read
            ctl = [ins.args.get(k) for k in (("lb", "ub", "step") if ins.op == "ctl.for" else
                                              ("cond",) if ins.op == "ctl.if" else ())]
            ins._tctl = tuple(dict.fromkeys(x for r in ctl if isinstance(r, str) for x in resolve(r)))
            for b in ins.bodies:
                walk(b)

    walk(program.body)
    program._timing_prepared = True


def _address_conflicts(buffers: dict) -> dict[str, tuple[str, ...]]:
    """For each tile register, the other registers whose buffers overlap its bytes, and whether
    they share the very buffer (an in-place chain, instance for instance) or merely overlap
    (memory the allocator reused). A write waits for the readers of those (WAR through
    memory, not only through names)."""
    spans = sorted(((b.offset, b.offset + b.nbytes * max(1, b.copies), r) for r, b in buffers.items()
                    if b.nbytes), key=lambda x: (x[0], x[2]))
    out: dict[str, list[tuple[str, bool]]] = {}
    for i, (lo, hi, r) in enumerate(spans):
        b = buffers[r]
        for lo2, hi2, r2 in spans[i + 1:]:
            if lo2 >= hi:
                break
            b2 = buffers[r2]
            same = (b.offset, b.nbytes, b.copies) == (b2.offset, b2.nbytes, b2.copies)
            out.setdefault(r, []).append((r2, same))
            out.setdefault(r2, []).append((r, same))
    return {r: tuple(v) for r, v in out.items()}


def _fit(busy: list, s: float, dur: float) -> float:
    """Earliest start >= s of a `dur`-long slot between the engine's busy intervals (sorted,
    disjoint); records the slot. How resident programs interleave on a shared engine."""
    n = len(busy)
    # the first interval ending after s (a linear scan here was quadratic in the resident
    # programs' length). Sorted and disjoint: only the last one starting at or before s can
    # end after s, and every later one does; tuples compare in C, so bisect on (s, inf)
    i = bisect.bisect_right(busy, (s, math.inf))
    if i and busy[i - 1][1] > s:
        i -= 1
    while i < n and busy[i][0] < s + dur:
        if busy[i][1] > s:
            s = busy[i][1]
        i += 1
    busy.insert(i, (s, s + dur))
    return s


def schedule_program(events: list, t0: float, m: ChipModel, pricer: Pricer, busy: list, acc: dict, spans: list | None,
              pe: int, slots: list | None = None, warm: bool = False, written: frozenset | None = None,
              prior: dict | None = None, mem_out: dict | None = None) -> tuple[float, float]:
    """List-schedule one program's events starting at t0; returns its finish time.
    `pricer`: the launch's cost rules (each event's engine cycles; its tally goes to `acc`).
    `slots` (per engine, the busy intervals of the PE's resident programs) lets this program's
    instructions, in order among themselves, fill the gaps the others leave (updated in place).
    `warm`: the PE ran a program before (its program-invariant tiles are resident).
    `prior`: (per register, when the previous program on this PE last touched its memory, a
    write waits for it; per register, when it last wrote it); `mem_out` receives the same two
    maps for this program.
    Returns (finish time, time the control core issued the last instruction).
    """
    ready: dict[str, tuple] = {}  # reg -> (readable at, producer finish, producer engine)
    rget = ready.get
    war: dict[str, list] = {}          # reg -> [instance count, ring of read-finish per instance]
    pinst: dict[str, tuple] = {}       # ring-carried reg -> (register it aliases, instance it reads)
    lastread: dict[str, float] = {}    # reg -> finish of its latest reader (buffer reuse, _tconf)
    nq = len(ENGINES)
    free = [t0] * nq                 # in order within this program
    qfin = [[] for _ in range(nq)]   # each program has its own issue queues
    if slots is not None:
        for lst in slots:  # intervals that ended before this program starts can no longer matter
            while lst and lst[0][1] <= t0:
                lst.pop(0)
    depth = m.depth
    latency = m.latency
    issue = m.issue
    rules = pricer.rules
    pricer.start()
    scal = rules[K_SCALAR](None)   # the control core's ops cost the same every time
    loopc = rules[K_LOOP](None)
    # a program-invariant tile this PE already holds (assumptions.held_tiles = "held"; "charged"
    # prices it as any other load)
    hold = warm and m.held_tiles and written is not None
    F = t0          # command processor (control core) time
    end = t0
    for ins, c in events:
        k = ins._tk
        if k == K_SCALAR:
            t = F
            for r in ins._tr:
                x = rget(r)
                if x is not None and x[0] > t:
                    t = x[0]
            F = t + scal
            busy[ins._te] += scal
            if ins._tw:
                v = (F, F, -1)
                for d in ins._tw:
                    ready[d] = v
            continue
        if k == K_LOOP:
            for r in ins._tctl:
                x = rget(r)
                if x is not None and x[0] > F:
                    F = x[0]
            F += loopc
            busy[0] += loopc
            lp = ins._tloop
            if lp is not None:
                iv, params, inits, results, ring = lp
                if iv:
                    ready[iv] = (F, F, -1)
                src = inits if (c and c.get("iteration", 0) == 0) else results
                for p, s in zip(params, src):
                    if len(s) == 1:
                        ready[p] = rget(s[0], _ZERO)
                    else:
                        ready[p] = max((rget(x, _ZERO) for x in s), default=_ZERO)
                for p, key in ring:
                    st = war.get(key)
                    pinst[p] = (key, st[0] if st is not None else 0)
            continue
        if k >= K_SCALAR_LOAD:  # the scalar path: blocks the control core
            t = F
            for r in ins._tr:
                x = rget(r)
                if x is not None and x[0] > t:
                    t = x[0]
            dur = rules[k](c)
            F = t + dur
            busy[1] += dur
            for d in ins._tw:
                ready[d] = (F, F, -1)
            if spans is not None:
                spans.append((pe, "SCALAR", t, F, ins.op))
            if F > end:
                end = F
            continue
        e = ins._te
        # ---- engine cost
        if hold and k == K_DMA_IN and ins._tres and c.get("region") not in written:
            dur = pricer.held_load
            held = True
        else:
            dur = rules[k](c)
            if dur is None:  # a view (broadcast, unit-dim reshape): no data moves; its readers
                continue     # read the source (prepare() aliases the view to it)
            held = False
        lat = latency[e]
        # ---- issue (in-order command processor, bounded engine queues)
        q = qfin[e]
        t_issue = F
        if len(q) >= depth:
            x = q[-depth]
            if x > t_issue:
                t_issue = x
        F = t_issue + issue
        # ---- start: engine free, RAW, WAR
        s = free[e]
        if t_issue > s:
            s = t_issue
        for r in ins._tr:
            x = rget(r)
            if x is not None:
                # a producer on the same in-order engine forwards: its drain latency is hidden
                x = x[1] if x[2] == e else x[0]
                if x > s:
                    s = x
        for r, cp in ins._tww:
            st = war.get(r)
            if st is not None:
                # the slot this write reuses held the instance `cp` writes back: wait for its readers
                x = st[1][(st[0] + 1) % cp]
                if x > s:
                    s = x
        for r, cp in ins._tip:
            st = war.get(r)
            if st is not None:
                # in place: wait for the other readers of the current instance
                x = st[1][st[0] % cp]
                if x > s:
                    s = x
        if prior is not None:
            for d in ins._tw:
                # a held tile: ready once the previous program's load of it is; else the
                # memory is free once the previous program's last access to it is done
                x = prior[1 if held else 0].get(d)
                if x is not None and x > s:
                    s = x
        for x, same in ins._tconf:
            # memory the allocator reused: the previous occupant's readers must be done
            if same:
                # a value sharing this buffer (in-place chain): its readers of the instance
                # this write replaces (both advance one instance per write)
                st = war.get(x)
                if st is None:
                    continue
                sd = war.get(ins._tw[0])
                t = st[1][((sd[0] if sd is not None else 0) + 1) % len(st[1])]
            else:
                t = lastread.get(x)
            if t is not None and t > s:
                s = t
        if slots is not None:
            s = _fit(slots[e], s, dur)
        fin = s + dur
        free[e] = fin
        q.append(fin)
        if len(q) > 4 * depth:
            del q[:-depth]
        busy[e] += dur
        for r, cp in ins._trb:
            t = lastread.get(r)
            if t is None or fin > t:
                lastread[r] = fin
            if pinst and r in pinst:
                r, inst = pinst[r]
                st = war.get(r)
                if st is None:
                    st = war[r] = [0, [0.0] * cp]
                i = inst % cp
            else:
                st = war.get(r)
                if st is None:
                    st = war[r] = [0, [0.0] * cp]
                i = st[0] % cp
            slot = st[1]
            if fin > slot[i]:
                slot[i] = fin
        for r, cp in ins._tww:
            st = war.get(r)
            if st is None:
                st = war[r] = [0, [0.0] * cp]
            st[0] += 1
            st[1][st[0] % cp] = 0.0
        rd = fin + lat
        if ins._tw:
            v = (rd, fin, e)
            for d in ins._tw:
                ready[d] = v
            if mem_out is not None:
                for d in ins._tw:
                    if fin > mem_out[0].get(d, 0.0):
                        mem_out[0][d] = fin
                    mem_out[1][d] = fin
        if rd > end:
            end = rd
        if spans is not None:
            spans.append((pe, ENGINES[e], s, fin, ins.op))
    if F > end:
        end = F
    if mem_out is not None:
        for r, x in lastread.items():
            if x > mem_out[0].get(r, 0.0):
                mem_out[0][r] = x
    pricer.flush(acc)
    return end, F
