"""Timing model: prices the executed instructions of a launch in cycles of a chip config.

`price_launch(program, traces, chip) -> LaunchTiming` is what the driver calls. Every number
the model uses comes from the chip config (backend/configs/<chip>.toml); nothing here is
specific to one chip.

Per PE: a dataflow list scheduler over the dynamic instruction stream of each program.
  - The command processor walks the events in program order. A tile instruction costs it
    `issue_cycles` to dispatch into its engine's in-order queue (`queue_depth` entries: issue
    stalls while the instruction `queue_depth` earlier on that engine has not finished).
    Scalar and control ops (and the scalar fallback loads/stores) execute on the control core
    itself, so they block issue until their operands are ready: cheap but not free.
  - A tile instruction starts at max(issue time, engine free, RAW: the producers of every
    register it reads are done, WAR: a write to a tile register with a `copies`-deep buffer
    waits until the readers of the instance `copies` writes earlier are done). With copies=2 the
    DMA of tile i+1 overlaps the compute on tile i; with copies=1 it waits for it.
  - An instruction occupies its engine for the cycles its cost rule charges (below); the
    result becomes readable `latency_cycles` later (pipeline drain, NoC round trip) without
    holding the engine. A producer on the same in-order engine forwards (its drain is hidden).
  - Loop-carried registers: at iteration 0 a loop's body parameters take the ready time of the
    inits, later of the body results; a loop's (or if's) results alias the body results.
    Block parameters of `ctl.while` are not tracked (approximation: ready at once).

Engine costs (how long each instruction occupies its engine, what it moves, the memory level
each read comes from and each PE's share of it) are computed by the cost rules of
backend/sim/cost/, documented there; this module schedules.

Chip level:
  - Programs are handed out in linear program-id order (x fastest). `assumptions.dispatch =
    "dynamic"` (the default) gives each one to the PE that can start it first (ties: the lowest
    PE index), as a command processor handing out jobs would; "static" puts program i on PE
    i mod n_pe. Programs of equal length land the same way under both. A PE runs its
    programs back to back, `replace_us` between two; kernel time = launch_us + the slowest PE,
    and never less than the off-chip bytes / off-chip bandwidth. When the compiler marks a
    program `program_pipeline = d` (its buffers fit local memory d times), consecutive programs
    on a PE overlap: each resident program has its own issue context (the command processor
    interleaves their streams; `resident_issue_streams = false`: one stream), program j starts
    `replace_us` after program j-1 started and not before program j-d finished (whose buffers it reuses); the engines are shared, in
    program order, with their state carried from one program to the next.
  - Memory levels: a PE's share of the SRAM and off-chip bandwidth, which level a read comes
    from, when write-back is on the critical path: backend/sim/cost/ (levels.py). The kernel is
    never faster than its off-chip bytes at the whole off-chip bandwidth.
  - The switches of the config's [assumptions] section (dispatch, held_tiles,
    resident_issue_streams, program_overlap, llc_output_rule) turn the modelling choices below
    that no source publishes on or off; docs/study.md lists them.
  - A load the compiler marks `pe_resident` (the same tile in every program: weights, biases)
    is priced like any other load by default (`assumptions.held_tiles = "charged"`); with
    "held" it is transferred by a PE's first program only and later programs on that PE find
    it in local memory, unless the launch writes that tensor (a timing-only credit: nothing in
    the program keeps the tile, so it is an assumption the sensitivity suite varies).

Deterministic by construction: integer-free float arithmetic in program order, no wall clock,
no dependence on hash order. Per-instruction spans are only collected with `trace=True`.
"""
from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from backend.sim.cost import (ENGINE_INDEX, K_DMA_IN, K_LOOP, K_SCALAR, K_SCALAR_LOAD, TALLY,
                              ChipModel, Pricer, kind_of, launch_levels)
from backend.sim.cost.rules import ZERO_TALLY
from backend.sim.fastpath import without_gc
from backend.program import ENGINES, registers_in

_ZERO = (0.0, 0.0, -1)  # the ready entry of a register nothing wrote


@dataclass
class LaunchTiming:
    cycles: int
    time_us: float
    engine_busy: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    flops: int = 0
    detail: dict[str, Any] = field(default_factory=dict)
    flops_per_s: float = 0.0
    bytes_per_s: dict[str, float] = field(default_factory=dict)
    spans: list | None = None  # (pe, engine, start, end, name) when priced with trace=True
    chip: str = ""


# ----------------------------------------------------------------------------- program preparation

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


# ----------------------------------------------------------------------------- pricing

@without_gc
def price_launch(program: Any, traces: list, chip: dict, trace: bool = False,
                 resident: Iterable[str] | bool = (), writeback: bool = False) -> LaunchTiming:
    """Price one launch. `trace=True` also collects per-instruction spans (see trace.py);
    `resident` names tensor arguments already in on-chip SRAM (True: all of them);
    `writeback`: outputs go back off-chip on the critical path even when the footprint fits
    the LLC (the memory regime's output half, backend/regimes.py)."""
    m = ChipModel(chip)
    prepare(program)
    n_prog = len(traces)
    if n_prog == 0:
        cyc = m.launch_cycles
        return LaunchTiming(int(math.ceil(cyc)), cyc / (m.clock_ghz * 1e3), chip=m.name)
    n_active = min(m.n_pe, n_prog)
    levels, mem_detail, written = launch_levels(traces, m, resident, writeback)
    pricer = Pricer(m, levels)
    pe_time = [0.0] * m.n_pe
    pe_programs = [0] * m.n_pe
    busy = [0.0] * len(ENGINES)
    acc = dict(zip(TALLY, ZERO_TALLY))
    spans: list | None = [] if trace else None
    # programs the compiler pipelines (their buffers fit the PE `depth` times over) overlap on
    # a PE: the next one is issued once the control core has issued the previous one, and
    # waits only for the program `depth` earlier, whose buffers it reuses
    meta = getattr(program, "meta", {}) or {}
    depth = int(meta.get("program_pipeline", 1))
    # buffers that fit only once: with `program_overlap` the next program still starts once
    # the control core has issued this one, in the same memory; the command processor's
    # dependency checks make each of its writes wait for this program's last access to that
    # memory (two programs in flight at most)
    shared = depth == 1 and bool(meta.get("program_overlap")) and m.program_overlap
    if shared:
        depth = 2
        conflicts = program._tconflicts
        overlapping = [(r, tuple(x for x, _ in conflicts.get(r, ()))) for r in program.buffers]
    # per PE and engine, the busy intervals of the resident programs (None: no pipelining)
    slots_of: list = [[[] for _ in ENGINES] for _ in range(m.n_pe)] if depth > 1 else [None] * m.n_pe
    ends: list[list[float]] = [[] for _ in range(m.n_pe)]
    issued = [0.0] * m.n_pe        # when the control core issued a PE's latest program
    # without per-program issue contexts a pipelined program's stream starts after the previous
    # program's last instruction is issued (one in-order command processor stream)
    gate_issue = shared or not m.issue_streams
    memory: list = [None] * m.n_pe  # shared: (last access, last write) per reg of the PE's latest program
    starts = [0.0] * m.n_pe
    dynamic = m.dispatch == "dynamic"
    heap = [(0.0, pe) for pe in range(m.n_pe)]  # (earliest start of a next program, PE)
    for i, t in enumerate(traces):
        pe = heapq.heappop(heap)[1] if dynamic else i % m.n_pe
        slots = slots_of[pe]
        start = _next_start(pe, pe_programs, pe_time, starts, ends, depth, slots is not None, m.replace_cycles,
                            issued if gate_issue else None)
        prior = mem_out = None
        if shared:
            mem_out = ({}, {})
            if memory[pe]:
                last, last_w = memory[pe]
                # a register's memory is free once every value overlapping it was last accessed
                # (the first of equal maxima wins, as max() picks it)
                free_at = {}
                for r, others in overlapping:
                    v = last.get(r, 0.0)
                    for x in others:
                        w = last.get(x, 0.0)
                        if w > v:
                            v = w
                    free_at[r] = v
                prior = (free_at, last_w)
        end, issue_end = _schedule(t.events, start, m, pricer, busy, acc, spans, pe,
                                   slots, pe_programs[pe] > 0, written, prior, mem_out)
        if spans is not None:
            spans.append((pe, "PROGRAM", start, end, f"program {tuple(t.pid)}"))
        pe_time[pe] = max(pe_time[pe], end)
        ends[pe].append(end)
        starts[pe] = start
        issued[pe] = issue_end
        memory[pe] = mem_out
        pe_programs[pe] += 1
        if dynamic:
            heapq.heappush(heap, (_next_start(pe, pe_programs, pe_time, starts, ends, depth, slots is not None,
                                              m.replace_cycles, issued if gate_issue else None), pe))
    slowest = max(pe_time)
    off_bytes = acc["off_read"] + (acc["off_write"] if levels.spill else 0.0)
    off_bound = off_bytes / m.off_bpc
    cycles_f = m.launch_cycles + max(slowest, off_bound)
    cycles = int(math.ceil(cycles_f - 1e-9))
    time_us = cycles / (m.clock_ghz * 1e3)
    secs = time_us * 1e-6
    flops = int(acc["dpe_flops"] + acc["vec_flops"])
    nbytes = {"lpddr": int(round(acc["off_read"] + acc["off_write"])),
              "lpddr_read": int(round(acc["off_read"])), "lpddr_write": int(round(acc["off_write"])),
              "sram": int(round(acc["sram_read"] + acc["sram_write"])),
              "sram_read": int(round(acc["sram_read"])), "sram_write": int(round(acc["sram_write"])),
              "local": int(round(acc["local"]))}
    detail = {"n_programs": n_prog, "n_active_pes": n_active, "pe_cycles_max": slowest,
              "offchip_bound_cycles": off_bound, "launch_cycles": m.launch_cycles,
              "dpe_flops": int(acc["dpe_flops"]), "vector_flops": int(acc["vec_flops"]),
              "scalar_accesses": int(acc["scalar_accesses"]),
              "events": sum(len(t.events) for t in traces),
              "offchip_read_fraction": {str(k): v for k, v in sorted(levels.frac.items())}, **mem_detail}
    return LaunchTiming(cycles, time_us, {e: int(round(b)) for e, b in zip(ENGINES, busy)}, nbytes, flops,
                        detail, flops / secs if secs else 0.0,
                        {k: v / secs for k, v in nbytes.items()} if secs else {}, spans, m.name)


def _next_start(pe: int, n_done: list, pe_time: list, starts: list, ends: list, depth: int, resident: bool,
                replace: float, issued: list | None = None) -> float:
    """When PE `pe` can start its next program (`issued`: programs sharing one memory start
    after the previous one's last instruction is issued)."""
    if not n_done[pe]:
        return 0.0
    if resident:
        # each resident program has its own issue context; engines are shared in order
        start = starts[pe] + replace
        if issued is not None:
            start = max(start, issued[pe] + replace)
        if len(ends[pe]) >= depth:
            start = max(start, ends[pe][-depth])
        return start
    return pe_time[pe] + replace


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


def _schedule(events: list, t0: float, m: ChipModel, pricer: Pricer, busy: list, acc: dict, spans: list | None,
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
