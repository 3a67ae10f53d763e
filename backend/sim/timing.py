"""Timing model: prices the executed instructions of a launch in cycles of a chip config.

`price_launch(program, traces, chip) -> LaunchTiming` is what the driver calls. Every number
the model uses comes from the chip config (backend/configs/<chip>.toml); nothing here is
specific to one chip.

Per PE: a dataflow list scheduler over the dynamic instruction stream of each program
(backend/sim/pe_timing.py; this module hands programs to PEs and sums up the launch).
  - The command processor walks the events in program order. A tile instruction costs it
    `issue_cycles` to dispatch into its engine's in-order queue (`queue_depth` entries: issue
    stalls while the instruction `queue_depth` earlier on that engine has not finished).
    Scalar and control ops (and the scalar fallback loads/stores) execute on the control core
    itself, so they block issue until their operands are ready: cheap but not free. A loop
    trip or a branch waits the same way for its bounds or condition (a trip count loaded by
    DMA or summed on the reduction engine holds the loop's first trip back until it is known).
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
    `replace_us` after program j-1 started and not before program j-d finished (whose buffers
    it reuses); the engines are shared, in program order, with their state carried from one
    program to the next.
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

Programs that ran in lockstep (executor.ProgramTrace.group: the same events and cost inputs),
and programs executed one by one whose signatures are equal (the same instructions with the
same cost inputs, DMA byte addresses aside, which no cost rule reads: the functional mode's
programs of a regular grid), are scheduled once per PE state (`MTIA_SIM_PRICE_MEMO=0`: never): a PE that starts one at the same time, after the same programs,
as a PE that already did, takes that schedule (the same arithmetic on the same inputs, so the
same bits; its engine busy terms are added again in order). Only the first reads of each tensor
need each lane's addresses, which the group keeps (backend/sim/cost/levels.py).

Deterministic by construction: integer-free float arithmetic in program order, no wall clock,
no dependence on hash order. Per-instruction spans are only collected with `trace=True`.
"""
from __future__ import annotations

import heapq
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from backend.program import ENGINES
from backend.sim.cost import TALLY, ZERO_TALLY, ChipModel, Pricer, launch_levels
from backend.sim.fastpath import without_gc
from backend.sim.pe_timing import prepare, schedule_program


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


# ----------------------------------------------------------------------------- pricing

@without_gc
def price_launch(program: Any, traces: list, chip: dict, trace: bool = False,
                 resident: Iterable[str] | bool = (), writeback: bool = False,
                 signatures: list | None = None, carried: Iterable[str] = ()) -> LaunchTiming:
    """Price one launch. `trace=True` also collects per-instruction spans (see trace.py);
    `resident` names tensor arguments already in on-chip SRAM (True: all of them);
    `writeback`: outputs go back off-chip on the critical path even when the footprint fits
    the LLC (the memory regime's output half, backend/regimes.py). `signatures`: what
    `program_signatures(traces)` gives, when the caller prices the same traces again (on
    another chip or in another regime: they do not depend on either). `carried`: tensor
    arguments an earlier launch of the same call touched (backend.driver.shared_llc), in the SRAM
    when the chip's assumptions.llc_across_launches keeps them."""
    m = ChipModel(chip)
    if carried and resident is not True and m.llc_across_launches:
        resident = set(resident or ()) | set(carried)
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
    # programs of one lockstep group (executor.ProgramTrace.group) have the same events and cost
    # inputs; on PEs in the same state (the same start, the same programs before it: `history`)
    # they schedule the same, so the first one's schedule stands for the rest (bit for bit: the
    # same arithmetic on the same inputs, the engine busy sums replayed in the same order)
    # programs executed one by one (functional mode, or lanes lockstep gave up on) get the same
    # treatment from their signature: equal signatures, equal events and cost inputs but for
    # the DMA byte addresses, which no cost rule reads (levels.py already counted them)
    memo: dict | None = {} if spans is None and memo_enabled() else None
    sig_of = (signatures if signatures is not None else _signatures(traces)) if memo is not None else None
    history = [0] * m.n_pe  # per PE: an id of the programs it ran (0: none); equal ids, equal states
    states: dict = {}
    # a launch whose PEs rarely meet the same state (programs of many lengths under dynamic
    # dispatch) stops recording schedules once they are seldom reused: recording costs time
    recorded = reused = 0
    for i, t in enumerate(traces):
        pe = heapq.heappop(heap)[1] if dynamic else i % m.n_pe
        slots = slots_of[pe]
        start = _next_start(pe, pe_programs, pe_time, starts, ends, depth, slots is not None, m.replace_cycles,
                            issued if gate_issue else None)
        key = None
        if memo is not None:
            group = getattr(t, "group", None)
            if group is None:
                group = sig_of[i]
            key = (history[pe], group, start, pe_programs[pe] > 0) if group is not None else None
            hit = memo.get(key) if key is not None else None
            history[pe] = states.setdefault(key, len(states) + 1) if key is not None else -1 - i
            if hit is not None:
                reused += 1
                end, issue_end, local, seqs, slots_of[pe], memory[pe] = hit
                _replay(busy, acc, seqs, local)
                pe_time[pe] = max(pe_time[pe], end)
                ends[pe].append(end)
                starts[pe] = start
                issued[pe] = issue_end
                pe_programs[pe] += 1
                if dynamic:
                    heapq.heappush(heap, (_next_start(pe, pe_programs, pe_time, starts, ends, depth,
                                                      slots is not None, m.replace_cycles,
                                                      issued if gate_issue else None), pe))
                continue
            if slots is not None:  # never change a list a memo entry holds
                slots = slots_of[pe] = [list(x) for x in slots]
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
        if key is None:
            end, issue_end = schedule_program(t.events, start, m, pricer, busy, acc, spans, pe,
                                              slots, pe_programs[pe] > 0, written, prior, mem_out)
        else:
            rec = [_Sum() for _ in ENGINES]
            local = dict(zip(TALLY, ZERO_TALLY))
            end, issue_end = schedule_program(t.events, start, m, pricer, rec, local, spans, pe,
                                              slots, pe_programs[pe] > 0, written, prior, mem_out)
            seqs = [np.array(x.terms) if len(x.terms) > 16 else x.terms for x in rec]
            memo[key] = (end, issue_end, local, seqs, slots, mem_out)
            _replay(busy, acc, seqs, local)
            recorded += 1
            if recorded >= MEMO_TRIAL and reused * 4 < recorded:
                memo = None
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


MEMO_TRIAL = 512  # schedules recorded before the memo checks that it is reused (1 in 4 at least)


def memo_enabled() -> bool:
    """`MTIA_SIM_PRICE_MEMO=0` schedules every program of a launch (the reference the memo is
    tested against)."""
    return os.environ.get("MTIA_SIM_PRICE_MEMO", "1") != "0"


def _signatures(traces: list) -> list:
    """Per trace: None for a lockstep lane (its group stands for it), else a key shared by the
    traces whose events are the same instructions with the same cost inputs, DMA byte addresses
    aside; None for a program no other shares this way, or one with a cost input that is not a
    dict of hashable values (scheduled on its own)."""
    ids: dict = {}
    out: list = []
    for t in traces:
        if getattr(t, "group", None) is not None:
            out.append(None)
            continue
        sig: list | None = []
        add = sig.append
        for ins, c in t.events:
            add(id(ins))  # the program's instructions live as long as the launch
            if c is None:
                continue
            if type(c) is not dict:
                sig = None
                break
            if "addr" in c:
                c = c.copy()
                del c["addr"]
            add(tuple(c.items()))
        try:
            out.append(None if sig is None else ids.setdefault(tuple(sig), len(ids)))
        except TypeError:
            out.append(None)
    # a signature no other program shares is scheduled directly (recording its schedule for
    # reuse would only cost time and memory)
    count = [0] * len(ids)
    for k in out:
        if k is not None:
            count[k] += 1
    return [("sig", k) if k is not None and count[k] > 1 else None for k in out]


def program_signatures(traces: list) -> list | None:
    """The per-trace keys price_launch shares schedules by (None when it schedules every
    program: MTIA_SIM_PRICE_MEMO=0), for a caller that prices the same traces several times."""
    return _signatures(traces) if memo_enabled() else None


class _Sum:
    """Stands for a float in `busy` while a memoised program is scheduled: `+=` records the
    term, so the sum can be replayed, in order, onto any total."""
    __slots__ = ("terms",)

    def __init__(self) -> None:
        self.terms: list[float] = []

    def __iadd__(self, x: float) -> "_Sum":
        self.terms.append(x)
        return self


def _replay(busy: list, acc: dict, seqs: list, local: dict) -> None:
    """Add a memoised program's engine busy terms (one at a time, in order: the sums round as
    if the program had been scheduled here) and its accumulated totals."""
    for e, terms in enumerate(seqs):
        if len(terms) == 0:
            continue
        if isinstance(terms, list):
            b = busy[e]
            for x in terms:
                b += x
            busy[e] = b
        else:  # np.cumsum adds left to right, one term at a time (no pairwise summation)
            busy[e] = float(np.cumsum(np.concatenate(([busy[e]], terms)))[-1])
    for k, v in local.items():
        acc[k] += v


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
