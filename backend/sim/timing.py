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
  - Engine occupancy is `fixed_cycles + throughput time`; the result becomes readable
    `latency_cycles` later (pipeline drain, NoC round trip) without holding the engine.
  - Loop-carried registers: at iteration 0 a loop's body parameters take the ready time of the
    inits, later of the body results; a loop's (or if's) results alias the body results.
    Block parameters of `ctl.while` are not tracked (approximation: ready at once).

Engine costs (from the cost inputs of backend/sim/isa.py):
  - DPE: 2 * batch * m' * n' * k' / flops_per_cycle[in_dtype], m, n padded to tile_m / tile_n and
    k to tile_k_bytes of input (INT8 2x BF16 from the table; FP32 at the vector-core rate).
  - SIMD / SFU / RE: elements / elements_per_cycle (RE times the combine ops of a region).
  - MLU: bytes / bytes_per_cycle. A view (broadcast or unit-dim reshape, `view=True`) moves
    nothing and costs nothing: its readers read, and wait for, its source.
  - DMA: every contiguous run is padded to whole `burst_bytes` bursts (+ `misaligned_extra_bytes`
    when the start is not 32-byte aligned); the transfer takes max(bytes at each level it
    crosses / that level's share, runs * run_cycles (gather_run_cycles for index-driven DMA)).
  - Scalar fallback (scalar.load/store): `access_cycles` per element, blocking the control core.
  - Atomics: `atomic_cycles` per element on DMA_OUT.

Chip level:
  - Programs are handed out in linear program-id order (x fastest). `assumptions.dispatch =
    "dynamic"` (the default) gives each one to the PE that can start it first (ties: the lowest
    PE index), as a command processor handing out jobs would; "static" puts program i on PE
    i mod n_pe. Programs of equal length land the same way under both. A PE runs its
    programs back to back, `replace_us` between two; kernel time = launch_us + the slowest PE,
    and never less than the off-chip bytes / off-chip bandwidth. When the compiler marks a
    program `program_pipeline = d` (its buffers fit local memory d times), consecutive programs
    on a PE overlap: each resident program has its own issue context (the command processor
    interleaves their streams; `resident_issue_streams = false`: one stream), program j starts `replace_us` after program j-1 started and
    not before program j-d finished (whose buffers it reuses); the engines are shared, in
    program order, with their state carried from one program to the next.
  - Shared bandwidth: the on-chip SRAM and the off-chip level are shared by the PEs active at
    once; each of the n_active = min(n_pe, programs) PEs gets bandwidth / n_active (a static,
    deterministic share), capped by its local-memory bandwidth.
  - Which level a read comes from: the first read of each byte of a tensor comes from off-chip,
    re-reads hit the SRAM (LLC) while the launch's footprint fits `sram.llc_bytes`. Applied as a
    per-tensor fraction, spread evenly over all its reads: f = unique bytes / bytes read (unique
    bytes = the tensor size, or the distinct tiles read when the size is unknown); if the
    footprint (unique bytes read + the sizes of the tensors written) exceeds the LLC, re-reads
    hit with probability llc_bytes / footprint. Spreading
    (rather than charging the first reader) keeps the result independent of program order,
    as PEs in flight together share the misses. `resident=` names tensors already in SRAM
    (`True`, the `resident` memory regime: every input, while the footprint fits the LLC).
  - Writes go to the SRAM; their write-back to off-chip is counted in bytes (lpddr_write) but
    is off the critical path while the footprint fits the LLC (the next kernel reads the
    result on-chip), on it (at the off-chip share) otherwise. This is what lets a 2048^3 GEMM
    reach the >92% of peak ISCA'25 measured; study/roofline.py counts bytes the same way.
    `writeback=True` (the `writeback` memory regime) or `assumptions.llc_output_rule =
    "writeback"` puts the write-back on the critical path always.
  - The switches of the config's [assumptions] section (dispatch, held_tiles,
    resident_issue_streams, program_overlap, llc_output_rule) turn the modelling choices below
    that no source publishes on or off; docs/study.md lists them.
  - A load the compiler marks `pe_resident` (the same tile in every program: weights, biases)
    is priced like any other load by default (`assumptions.held_tiles = "charged"`); with
    "held" it is transferred by a PE's first program only and later programs on that PE find
    it in local memory, unless the launch writes that tensor (a timing-only credit: nothing in
    the program keeps the tile, so it is an assumption the sensitivity suite varies).
  - Index-driven DMA (gathers) gets no re-read credit: every gathered byte counts as a first
    read, since which rows repeat depends on the indices (embedding tables are mostly larger
    than the LLC anyway).

Programs that ran in lockstep (executor.ProgramTrace.group: the same events and cost inputs)
are scheduled once per PE state: a PE that starts one at the same time, after the same programs,
as a PE that already did, takes that schedule (the same arithmetic on the same inputs, so the
same bits; its engine busy terms are added again in order). Only the first reads of each tensor
need each lane's addresses, which the group keeps.

Deterministic by construction: integer-free float arithmetic in program order, no wall clock,
no dependence on hash order. Per-instruction spans are only collected with `trace=True`.
"""
from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from backend.sim.fastpath import without_gc
from backend.sim.isa import ITEMSIZE, registers_in

ENGINE_ORDER = ("CTRL", "SCALAR", "DMA_IN", "DMA_OUT", "DPE", "SIMD", "SFU", "RE", "MLU")
_EIDX = {e: i for i, e in enumerate(ENGINE_ORDER)}
_DMA_OUT = _EIDX["DMA_OUT"]

# instruction kinds (small ints: the hot loop dispatches on them)
_ZERO = (0.0, 0.0, -1)
K_SCALAR, K_LOOP, K_DPE, K_SIMD, K_SFU, K_RE, K_MLU, K_DMA_IN, K_DMA_OUT, K_ATOMIC, K_SCALAR_MEM = range(11)


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


# ----------------------------------------------------------------------------- chip parameters

class ChipModel:
    """The config turned into per-cycle figures the pricing loop reads."""

    def __init__(self, chip: dict):
        self.name = chip["name"]
        self.clock_ghz = float(chip["clock_ghz"])
        self.n_pe = int(chip["pe_grid"]["rows"]) * int(chip["pe_grid"]["cols"])
        ghz = self.clock_ghz
        self.local_bpc = chip["local_memory"]["bandwidth_gbps"] / ghz
        self.sram_bpc = chip["sram"]["bandwidth_gbps"] / ghz
        self.off_bpc = chip["offchip"]["bandwidth_gbps"] / ghz
        self.llc_bytes = int(chip["sram"].get("llc_bytes", chip["sram"]["bytes"]))
        self.launch_cycles = chip["launch"]["launch_us"] * 1e3 * ghz
        self.replace_cycles = chip["launch"]["replace_us"] * 1e3 * ghz
        # the config's [assumptions] (modelling choices no source publishes; docs/study.md)
        a = chip.get("assumptions", {})
        self.dispatch = a.get("dispatch", chip["launch"].get("dispatch", "dynamic"))
        self.held_tiles = a.get("held_tiles", "charged") == "held"
        self.issue_streams = bool(a.get("resident_issue_streams", True))
        self.program_overlap = bool(a.get("program_overlap", True))
        self.always_writeback = a.get("llc_output_rule", "fits") == "writeback"
        for key, val, ok in (("dispatch", self.dispatch, ("dynamic", "static")),
                             ("held_tiles", a.get("held_tiles", "charged"), ("held", "charged")),
                             ("llc_output_rule", a.get("llc_output_rule", "fits"), ("fits", "writeback"))):
            if val not in ok:
                raise ValueError(f"chip '{self.name}': assumptions.{key} must be one of {ok}, got {val!r}")
        cp = chip["command_processor"]
        self.issue = float(cp["issue_cycles"])
        self.scalar = float(cp["scalar_cycles"])
        self.loop = float(cp["loop_cycles"])
        self.depth = int(cp["queue_depth"])
        d = chip["dpe"]
        self.dpe_rate = {k: float(v) for k, v in d["flops_per_cycle"].items()}
        self.tile_m, self.tile_n, self.tile_kb = int(d["tile_m"]), int(d["tile_n"]), int(d["tile_k_bytes"])
        self.fixed = [0.0] * len(ENGINE_ORDER)
        self.latency = [0.0] * len(ENGINE_ORDER)
        for eng, sec in (("DPE", "dpe"), ("SIMD", "simd"), ("SFU", "sfu"), ("RE", "re"), ("MLU", "mlu"),
                         ("DMA_IN", "dma"), ("DMA_OUT", "dma")):
            self.fixed[_EIDX[eng]] = float(chip[sec]["fixed_cycles"])
            self.latency[_EIDX[eng]] = float(chip[sec]["latency_cycles"])
        self.simd_epc = float(chip["simd"]["elements_per_cycle"])
        self.sfu_epc = float(chip["sfu"]["elements_per_cycle"])
        self.re_epc = float(chip["re"]["elements_per_cycle"])
        self.mlu_bpc = float(chip["mlu"]["bytes_per_cycle"])
        dma = chip["dma"]
        self.burst = int(dma["burst_bytes"])
        self.misalign = int(dma["misaligned_extra_bytes"])
        self.run_cycles = float(dma["run_cycles"])
        self.gather_run_cycles = float(dma["gather_run_cycles"])
        self.atomic_cycles = float(dma["atomic_cycles"])
        self.scalar_access = float(chip["scalar_path"]["access_cycles"])

    def dpe_cycles(self, c: dict) -> float:
        dt = c["in_dtype"]
        rate = self.dpe_rate.get(dt) or self.dpe_rate["bf16"]
        kq = max(1, self.tile_kb // ITEMSIZE.get(dt, 2))
        tm, tn = self.tile_m, self.tile_n
        m, n, k = c["m"], c["n"], c["k"]
        padded = 2 * c["batch"] * (-(-m // tm) * tm) * (-(-n // tn) * tn) * (-(-k // kq) * kq)
        return padded / rate


# ----------------------------------------------------------------------------- program preparation

def _kind(op: str) -> int:
    if op == "ctl.for" or op == "ctl.while":
        return K_LOOP
    pre = op.split(".", 1)[0]
    if pre in ("ctl",):
        return K_SCALAR
    if op in ("scalar.load", "scalar.store"):
        return K_SCALAR_MEM
    if pre == "scalar":
        return K_SCALAR
    if op == "dma_out.atomic":
        return K_ATOMIC
    return {"dpe": K_DPE, "simd": K_SIMD, "sfu": K_SFU, "re": K_RE, "mlu": K_MLU,
            "dma_in": K_DMA_IN, "dma_out": K_DMA_OUT}[pre]


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
            ins._tk = _kind(ins.op)
            ins._te = _EIDX[ins.engine]
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


# ----------------------------------------------------------------------------- memory levels

def _read_fractions(traces: list, m: ChipModel, resident: Iterable[str] | bool) -> tuple[dict, dict, frozenset | None]:
    """Per region index: the fraction of its read bytes that come from off-chip; the memory
    detail; and the tensors the launch writes (None: a store that names no tensor, scalar path
    or atomic, could write any), so a program-invariant load from one of them is never reused."""
    read: dict[int, int] = {}
    tiles: dict[int, dict] = {}
    stored: set = set()
    unknown = False  # a store whose target is not known
    # lockstep groups (executor.ProgramTrace.group): one pass per group, per-lane addresses
    gtiles: dict[int, dict] = {}   # region -> (bytes, runs) -> address arrays
    gindexed: dict[int, int] = {}  # region -> bytes of gathers (each its own tile)
    groups_seen: set = set()
    for t in traces:
        g = getattr(t, "group", None)
        if g is not None:
            if id(g) not in groups_seen:
                groups_seen.add(id(g))
                unknown |= _group_reads(g, read, gtiles, gindexed, stored)
            continue
        for ins, c in t.events:
            if ins._tk < K_DMA_IN:
                continue  # no memory traffic: scalar, control and tile compute instructions
            if ins.op in ("scalar.store", "dma_out.atomic"):
                unknown = True
            if ins._te == _DMA_OUT and c:
                stored.add(c.get("region"))
            if ins._tk == K_DMA_IN and c:
                reg = c.get("region")
                if reg is None:
                    continue
                read[reg] = read.get(reg, 0) + c["bytes"]
                # gathers carry no address: each one is its own tile (no re-read credit)
                key = ("indexed", len(seen := tiles.setdefault(reg, {}))) if c.get("indexed") else \
                    (c.get("addr"), c["bytes"], c["runs"])
                seen = tiles.setdefault(reg, {})
                if key not in seen:
                    seen[key] = c["bytes"]
    regions: dict = {}
    for t in traces:
        regions = getattr(t, "regions", None) or regions
        if regions:
            break
    unique: dict[int, int] = {}
    for reg, total in read.items():
        u = sum(tiles[reg].values()) if reg not in gtiles and reg not in gindexed else \
            _group_unique(tiles.get(reg, {}), gtiles.get(reg, {}), gindexed.get(reg, 0))
        if reg in regions:
            u = min(u, regions[reg][1]) if u else regions[reg][1]
        unique[reg] = min(u, total)
    # the launch's footprint in the LLC: what it reads plus what it writes (once per tensor)
    footprint = sum(unique.values()) + sum(regions[r][1] for r in stored if r is not None and r in regions and r not in unique)
    hit = 1.0 if footprint <= m.llc_bytes else m.llc_bytes / footprint
    if resident is True:
        # every input in SRAM (the `resident` regime): only while the footprint fits the LLC,
        # the same rule that keeps outputs on-chip; a larger launch reads cold
        res_idx = set(read) if hit == 1.0 else set()
    else:
        names = set(resident or ())
        res_idx = {i for i, (name, _) in regions.items() if name in names}
    frac = {}
    for reg, total in read.items():
        if reg in res_idx or total == 0:
            frac[reg] = 0.0
        else:
            f0 = unique[reg] / total
            frac[reg] = 1.0 - (1.0 - f0) * hit
    return frac, {"footprint_bytes": footprint, "llc_hit_rate_on_reuse": hit}, \
        (None if unknown else frozenset(stored))


def _group_reads(g: Any, read: dict, gtiles: dict, gindexed: dict, stored: set) -> bool:
    """_read_fractions's bookkeeping for the lanes of one lockstep group at once (the same
    events, each lane with its own addresses where g.addrs has them); True when a store of
    unknown target is among them."""
    n = g.n
    unknown = False
    addrs = g.addrs
    for idx, (ins, c) in enumerate(g.events):
        if ins._tk < K_DMA_IN:
            continue
        if ins.op in ("scalar.store", "dma_out.atomic"):
            unknown = True
        if ins._te == _DMA_OUT and c:
            stored.add(c.get("region"))
        if ins._tk == K_DMA_IN and c:
            reg = c.get("region")
            if reg is None:
                continue
            b = c["bytes"]
            read[reg] = read.get(reg, 0) + b * n
            if c.get("indexed"):
                gindexed[reg] = gindexed.get(reg, 0) + b * n
                continue
            a = addrs.get(idx)
            if isinstance(a, tuple):  # the first lane's address and each lane's offset from it
                a = a[1] + a[0]
            if a is None:  # the same address in every lane
                a = np.array([c.get("addr")], dtype=object if c.get("addr") is None else np.int64)
            gtiles.setdefault(reg, {}).setdefault((b, c["runs"]), []).append(a)
    return unknown


def _group_unique(tiles: dict, gt: dict, indexed: int) -> int:
    """Bytes of a region's distinct tiles (key: address, bytes, runs) over the programs run
    alone (`tiles`, as _read_fractions keeps them) and lockstep groups (`gt`), plus gathers."""
    u = indexed
    extra: dict[tuple, list] = {}
    for key, b in tiles.items():
        if len(key) == 3 and (key[1], key[2]) in gt:
            extra.setdefault((key[1], key[2]), []).append(key[0])
        else:
            u += b
    for (b, runs), arrs in gt.items():
        parts = [x for x in arrs if x.dtype != object]
        more = extra.get((b, runs), [])
        nones = any(x.dtype == object for x in arrs) or None in more
        if more:
            parts.append(np.array([x for x in more if x is not None], dtype=np.int64))
        u += b * (len(np.unique(np.concatenate(parts))) if parts else 0) + (b if nones else 0)
    return u


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
    frac, mem_detail, written = _read_fractions(traces, m, resident)
    # writes pay the off-chip share when the footprint spills the LLC, or when the regime (or
    # the config's llc_output_rule) sends every output back off-chip
    spill = mem_detail["llc_hit_rate_on_reuse"] < 1.0 or writeback or m.always_writeback
    sram_share = min(m.sram_bpc / n_active, m.local_bpc)
    off_share = min(m.off_bpc / n_active, m.local_bpc)
    pe_time = [0.0] * m.n_pe
    pe_programs = [0] * m.n_pe
    busy = [0.0] * len(ENGINE_ORDER)
    acc = {"off_read": 0.0, "off_write": 0.0, "sram_read": 0.0, "sram_write": 0.0, "local": 0.0,
           "dpe_flops": 0, "vec_flops": 0, "scalar_accesses": 0}
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
    slots_of: list = [[[] for _ in ENGINE_ORDER] for _ in range(m.n_pe)] if depth > 1 else [None] * m.n_pe
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
    memo: dict | None = {} if spans is None and any(getattr(t, "group", None) is not None for t in traces) \
        else None
    history = [0] * m.n_pe  # per PE: an id of the programs it ran (0: none); equal ids, equal states
    states: dict = {}
    for i, t in enumerate(traces):
        pe = heapq.heappop(heap)[1] if dynamic else i % m.n_pe
        slots = slots_of[pe]
        start = _next_start(pe, pe_programs, pe_time, starts, ends, depth, slots is not None, m.replace_cycles,
                            issued if gate_issue else None)
        key = None
        if memo is not None:
            group = getattr(t, "group", None)
            key = (history[pe], group, start, pe_programs[pe] > 0) if group is not None else None
            hit = memo.get(key) if key is not None else None
            history[pe] = states.setdefault(key, len(states) + 1) if key is not None else -1 - i
            if hit is not None:
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
            end, issue_end = _schedule(t.events, start, m, frac, sram_share, off_share, spill, busy, acc, spans,
                                       pe, slots, pe_programs[pe] > 0, written, prior, mem_out)
        else:
            rec = [_Sum() for _ in ENGINE_ORDER]
            local = dict.fromkeys(acc, 0)
            end, issue_end = _schedule(t.events, start, m, frac, sram_share, off_share, spill, rec, local, spans,
                                       pe, slots, pe_programs[pe] > 0, written, prior, mem_out)
            seqs = [np.array(x.terms) if len(x.terms) > 16 else x.terms for x in rec]
            memo[key] = (end, issue_end, local, seqs, slots, mem_out)
            _replay(busy, acc, seqs, local)
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
    off_bytes = acc["off_read"] + (acc["off_write"] if spill else 0.0)
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
              "offchip_read_fraction": {str(k): v for k, v in sorted(frac.items())}, **mem_detail}
    return LaunchTiming(cycles, time_us, {e: int(round(b)) for e, b in zip(ENGINE_ORDER, busy)}, nbytes, flops,
                        detail, flops / secs if secs else 0.0,
                        {k: v / secs for k, v in nbytes.items()} if secs else {}, spans, m.name)


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


def _schedule(events: list, t0: float, m: ChipModel, frac: dict, sram_share: float, off_share: float,
              spill: bool, busy: list, acc: dict, spans: list | None, pe: int,
              slots: list | None = None, warm: bool = False, written: frozenset | None = None,
              prior: dict | None = None, mem_out: dict | None = None) -> tuple[float, float]:
    """List-schedule one program's events starting at t0; returns its finish time.
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
    nq = len(ENGINE_ORDER)
    free = [t0] * nq                 # in order within this program
    qfin = [[] for _ in range(nq)]   # each program has its own issue queues
    if slots is not None:
        for lst in slots:  # intervals that ended before this program starts can no longer matter
            while lst and lst[0][1] <= t0:
                lst.pop(0)
    depth = m.depth
    fixed, latency = m.fixed, m.latency
    issue, scal, loopc = m.issue, m.scalar, m.loop
    simd_epc, sfu_epc, re_epc, mlu_bpc = m.simd_epc, m.sfu_epc, m.re_epc, m.mlu_bpc
    burst, misalign, run_c, grun_c = m.burst, m.misalign, m.run_cycles, m.gather_run_cycles
    F = t0          # command processor (control core) time
    end = t0
    dpe_flops = vec_flops = 0
    off_r = off_w = sram_r = sram_w = local = 0.0
    scalar_acc = 0
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
        if k == K_SCALAR_MEM:
            t = F
            for r in ins._tr:
                x = rget(r)
                if x is not None and x[0] > t:
                    t = x[0]
            n = c["elements"] if c else 0
            dur = scal + n * m.scalar_access
            scalar_acc += n
            b = c["bytes"] if c else 0
            if ins.op == "scalar.load":
                sram_r += b
            else:
                sram_w += b
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
        lat = latency[e]
        held = False
        if k == K_DPE:
            dur = fixed[e] + m.dpe_cycles(c)
            dpe_flops += c["flops"]
        elif k == K_SIMD:
            n = c["elements"]
            dur = fixed[e] * c.get("passes", 1) + n / simd_epc
            vec_flops += n * c.get("flops_per_element", 1)
        elif k == K_SFU:
            n = c["elements"]
            dur = fixed[e] + n / sfu_epc
            vec_flops += n
        elif k == K_RE:
            dur = fixed[e] + c["elements"] * c.get("combine_ops", 1) / re_epc
        elif k == K_MLU:
            b = c["bytes"]
            if b:
                dur = fixed[e] + b / mlu_bpc
                local += 2 * b
            else:  # a view (broadcast, unit-dim reshape): strides change, no data moves;
                continue  # its readers read the source (prepare() aliases the view to it)
        elif k == K_DMA_IN and warm and ins._tres and m.held_tiles and written is not None \
                and c.get("region") not in written:
            # a program-invariant tile the PE already holds from its previous program
            # (assumptions.held_tiles = "held"; "charged" prices it as any other load)
            dur = fixed[e]
            held = True
        elif k == K_DMA_IN or k == K_DMA_OUT:
            b = c["bytes"]
            runs = c["runs"]
            if b and runs:
                rb = c["run_bytes"]
                eff = runs * (-(-rb // burst) * burst)
                if c.get("aligned32") is False:
                    eff += runs * misalign
                if eff < b:
                    eff = b
                rc = grun_c if c.get("indexed") else run_c
                if k == K_DMA_IN:
                    f = frac.get(c.get("region"), 1.0)
                    off = eff * f
                    t_x = max(off / off_share, eff / sram_share, runs * rc)
                    off_r += off * (b / eff)
                    sram_r += (eff - off) * (b / eff)
                else:
                    t_x = max(eff / sram_share, runs * rc)
                    if spill:
                        t_x = max(t_x, eff / off_share)
                    off_w += b
                    sram_w += b
                local += b
                dur = fixed[e] + t_x
            else:
                dur = fixed[e]
        else:  # K_ATOMIC
            n = c.get("atomics", c.get("elements", 0)) if c else 0
            dur = fixed[e] + n * m.atomic_cycles
            sram_w += c.get("bytes", 0) if c else 0
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
            spans.append((pe, ENGINE_ORDER[e], s, fin, ins.op))
    if F > end:
        end = F
    if mem_out is not None:
        for r, x in lastread.items():
            if x > mem_out[0].get(r, 0.0):
                mem_out[0][r] = x
    acc["off_read"] += off_r
    acc["off_write"] += off_w
    acc["sram_read"] += sram_r
    acc["sram_write"] += sram_w
    acc["local"] += local
    acc["dpe_flops"] += dpe_flops
    acc["vec_flops"] += vec_flops
    acc["scalar_accesses"] += scalar_acc
    return end, F
