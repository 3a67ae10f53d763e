"""Functional simulator: runs every program of a grid on real tensor data.

Programs run one after another (pid x fastest, as Triton numbers them). Each executed
instruction reports its cost inputs; the list of (instruction, cost) per program is what the
timing model prices. Control flow (for / if / while) is run here, by the command processor.
`execute(..., mode="timing")` swaps the heavy tile instructions for TIMING_ONLY versions that
produce the same cost inputs (through the same constructors, backend/sim/cost/inputs.py)
without computing tile data (for simulator speed on big shapes), except where that data
reaches an address, a mask, a bound or a branch (values_needed).
In timing mode the programs of a grid run in lockstep where they can (lockstep.py): once for
all the programs that execute the same instructions with the same cost inputs.
The hot instructions of both modes run through per-instruction fast paths (fastpath.py), which
give the same values, cost inputs and errors as the generic code they stand in for; a program's
instructions are taken as fixed once it has run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from backend.program import ITEMSIZE, TORCH_DTYPE, Block, Instr, Program, registers_in
from backend.sim import lockstep
from backend.sim.cost.inputs import (DmaInputs, MatmulInputs, ReduceInputs, VectorInputs, fma_inputs,
                                     indexed_dma_inputs, matmul_inputs, reduce_inputs, scalar_access_inputs,
                                     vector_inputs)
from backend.sim.fastpath import specialise, without_gc
from backend.sim.isa import SEMANTICS, ExecState, SimulationError
from backend.sim.memory import GlobalMemory, placeholder

Event = tuple  # (instr, its cost inputs or None): one executed instruction


@dataclass
class ProgramTrace:
    pid: tuple[int, int, int]
    events: list[Event] = field(default_factory=list)
    # region index -> (tensor argument name, bytes): lets the timing model tell first reads of a
    # tensor (off-chip) from re-reads (on-chip SRAM). Shared by all traces of one launch.
    regions: dict[int, tuple[str, int]] = field(default_factory=dict)
    # timing mode's lockstep (lockstep.py): programs of one Group share `events` (same
    # instructions and cost inputs); their byte addresses differ, per lane in group.addrs
    group: Any = None
    lane: int = 0


# ----------------------------------------------------------------------------- timing-only mode
# Replacements for the heavy tile instructions: same cost inputs, no tile arithmetic. A
# destination keeps its previous tensor when the shape and dtype match (no allocation).

def _shape_of(x: Any) -> list[int]:
    return list(x.shape) if isinstance(x, torch.Tensor) else []


def _broadcast(shapes: list[list[int]]) -> list[int]:
    """NumPy broadcasting of shapes (torch.broadcast_shapes is slow in the hot loop)."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s, nd - len(s)):
            if d != 1:
                out[i] = d
    return out


def _t_matmul(st: ExecState, ins: Instr) -> MatmulInputs:
    a, b = st.v(ins.args["a"]), st.v(ins.args["b"])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    placeholder(st, ins.dst[0], list(a.shape[:-1]) + [n], ins.attrs["out_dtype"])
    return matmul_inputs(a.numel() // (m * k), m, n, k, ins.attrs["in_dtype"])


def _t_elementwise(st: ExecState, ins: Instr) -> VectorInputs:
    shapes = [_shape_of(st.v(v)) for k, v in ins.args.items() if isinstance(v, str)]
    shape = _broadcast(shapes)
    out_dtype = ins.attrs.get("out_dtype") or ins.attrs.get("to") or ins.attrs.get("dtype")
    if ins.op == "simd.cmp":
        out_dtype = "i1"
    out = placeholder(st, ins.dst[0], shape, out_dtype)
    inputs = fma_inputs if ins.op == "simd.fma" else vector_inputs
    return inputs(out.numel(), ins.attrs.get("to") or ins.attrs["dtype"])


def _t_splat(st: ExecState, ins: Instr) -> VectorInputs:
    out = placeholder(st, ins.dst[0], ins.attrs["shape"], ins.attrs["dtype"])
    return vector_inputs(out.numel(), ins.attrs["dtype"])


def _t_reduce(st: ExecState, ins: Instr) -> ReduceInputs:
    if ins.attrs.get("kind") is None or len(ins.args["srcs"]) != 1:
        return SEMANTICS[ins.op].run(st, ins)
    src = st.v(ins.args["srcs"][0])
    axis = ins.attrs["axis"] % src.dim()
    shape = [d for i, d in enumerate(src.shape) if i != axis]
    if shape:
        out = placeholder(st, ins.dst[0], shape, _dtype_name(src.dtype))
        n_out = out.numel()
    else:
        st.r[ins.dst[0]] = 0
        n_out = 1
    return reduce_inputs(src.numel(), n_out, 1)


_DTYPE_NAME = {v: k for k, v in reversed(list(TORCH_DTYPE.items()))}


def _dtype_name(t: torch.dtype) -> str:
    return _DTYPE_NAME[t]


def _t_dma_load(st: ExecState, ins: Instr) -> DmaInputs:
    if ins.args.get("mask") is not None:
        return SEMANTICS[ins.op].run(st, ins)
    mem = st.memory
    r, dtype, shape, base_idx, idx0, strides, box = mem._descriptor(st, ins)
    if not shape:
        return SEMANTICS[ins.op].run(st, ins)
    sub = []
    start = idx0
    n = 1
    for (lo, hi), s in zip(box, strides):
        if s < 0:
            return SEMANTICS[ins.op].run(st, ins)
        sub.append(hi - lo)
        start += lo * s
        n *= hi - lo
    placeholder(st, ins.dst[0], shape, dtype)
    return mem._dma_cost(r, dtype, n, strides, start, sub)


def _t_dma_store(st: ExecState, ins: Instr) -> DmaInputs:
    if ins.args.get("mask") is not None:
        return SEMANTICS[ins.op].run(st, ins)
    mem = st.memory
    r, dtype, shape, base_idx, idx0, strides, box = mem._descriptor(st, ins)
    sub = []
    start = idx0
    n = 1
    for (lo, hi), s in zip(box, strides):
        sub.append(hi - lo)
        start += lo * s
        n *= max(hi - lo, 0)
    return mem._dma_cost(r, dtype, n, strides, start, sub)


def _t_dma_gather(st: ExecState, ins: Instr) -> DmaInputs:
    """An index-driven gather without its data: the element indices are computed and checked
    against the tensor's bounds as the functional gather does (they come from the program's
    inputs), the destination gets the placeholder tile, and the cost inputs (the number of
    elements moved) are the functional gather's."""
    mem = st.memory
    r, dtype, base_idx, idx, m = mem._indexed(st, ins)
    if idx.dim() == 0:
        return SEMANTICS[ins.op].run(st, ins)
    sel = idx if m is None else idx[m]
    mem._check(sel, mem.typed(r, dtype).numel(), r, base_idx, st, ins)
    placeholder(st, ins.dst[0], list(idx.shape), dtype)
    return indexed_dma_inputs(sel.numel(), ITEMSIZE[dtype], ins.attrs.get("run", 1), r.index, m)


def _t_scalar_load(st: ExecState, ins: Instr) -> DmaInputs:
    """The scalar path's load of a pointer tile without its data: the addresses under the mask
    are resolved and checked as the functional load does (the same errors), the destination
    gets the placeholder tile, and the cost inputs count the same accesses."""
    addr = st.v(ins.args["addr"])
    if not isinstance(addr, torch.Tensor):
        return SEMANTICS[ins.op].run(st, ins)
    dtype = ins.attrs["dtype"]
    flat = addr.reshape(-1)
    mask = st.v(ins.args.get("mask"))
    if mask is not None:
        m = mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))
        flat = flat[m.expand(addr.shape).reshape(-1)]
    st.memory.check_addresses(flat, dtype, st, ins)
    placeholder(st, ins.dst[0], list(addr.shape), dtype)
    return scalar_access_inputs(flat.numel(), ITEMSIZE[dtype])


TIMING_ONLY = {
    "scalar.load": _t_scalar_load,
    "dpe.matmul": _t_matmul, "simd.binary": _t_elementwise, "sfu.binary": _t_elementwise,
    "simd.unary": _t_elementwise, "sfu.unary": _t_elementwise, "simd.fma": _t_elementwise,
    "simd.cast": _t_elementwise, "simd.splat": _t_splat, "re.reduce": _t_reduce,
    "dma_in.load": _t_dma_load, "dma_in.gather": _t_dma_gather, "dma_out.store": _t_dma_store,
}


# operands of memory instructions that are data, not where the data goes (or whether it moves)
_DATA_OPERANDS = ("value", "other")


def values_needed(body: Block) -> frozenset[str]:
    """Registers whose values reach an address, a mask, a loop bound, a branch or an assertion
    of the program: timing mode computes them (and everything they are computed from) as the
    functional mode does, so its events are the functional mode's. The rest, tile data that
    only reaches other tile data or stores, is what timing mode skips."""
    deps: dict[str, set[str]] = {}
    seeds: set[str] = set()

    def dep(dst: Any, srcs: Any) -> None:
        if isinstance(dst, str):
            deps.setdefault(dst, set()).update(x for x in srcs if isinstance(x, str))

    def inner(block: Block) -> set[str]:
        out: set[str] = set()
        for ins in block.instrs:
            out.update(registers_in(list(ins.args.values())))
            for b in ins.bodies:
                out |= inner(b)
                out.update(x for x in b.results if isinstance(x, str))
        return out

    def walk(block: Block) -> None:
        for ins in block.instrs:
            op, a = ins.op, ins.args
            reads = registers_in(list(a.values()))
            if op.startswith(("dma_in.", "dma_out.")) or op in ("scalar.load", "scalar.store"):
                seeds.update(registers_in([v for k, v in a.items() if k not in _DATA_OPERANDS]))
            elif op in ("ctl.if", "ctl.assert") or op.startswith("scalar."):
                seeds.update(reads)  # scalar registers: addresses, bounds and conditions
            if op == "ctl.for":
                body = ins.bodies[0]
                seeds.update(registers_in([a[k] for k in ("lb", "ub", "step")]))
                if body.params:
                    dep(body.params[0], registers_in([a["lb"], a["step"]]))
                for i, p in enumerate(body.params[1:]):
                    dep(p, [a["inits"][i], body.results[i]])
                for i, d in enumerate(ins.dst):
                    dep(d, [body.results[i]])
            elif op == "ctl.while":
                before, after = ins.bodies
                if before.results and isinstance(before.results[0], str):
                    seeds.add(before.results[0])
                for i, p in enumerate(before.params):
                    dep(p, [a["inits"][i], after.results[i] if i < len(after.results) else None])
                for i, p in enumerate(after.params):
                    dep(p, [before.results[1 + i]])
                for i, d in enumerate(ins.dst):
                    dep(d, [before.results[1 + i]])
            elif op == "ctl.if":
                for i, d in enumerate(ins.dst):
                    dep(d, [b.results[i] for b in ins.bodies if i < len(b.results)])
            elif ins.bodies:  # a combine region (reduce, scan): everything it touches
                for d in ins.dst:
                    dep(d, reads + [x for b in ins.bodies for x in inner(b)])
            else:
                for d in ins.dst:
                    dep(d, reads)
            for b in ins.bodies:
                walk(b)

    walk(body)
    needed = set()
    todo = list(seeds)
    while todo:
        r = todo.pop()
        if r not in needed:
            needed.add(r)
            todo.extend(deps.get(r, ()))
    return frozenset(needed)


_INT_DATA = ("i1", "i8", "i16", "i32", "i64", "u8")


def writes_integers(program: Program) -> bool:
    """Whether a store of the program writes integer data (indices, offsets, counts: what
    later launches may address memory with). The driver runs such launches functionally in
    timing mode, so that their outputs are real."""
    got = getattr(program, "_writes_integers", None)
    if got is None:
        def walk(block: Block) -> bool:
            return any((ins.op.startswith("dma_out.") or ins.op == "scalar.store")
                       and ins.attrs.get("dtype") in _INT_DATA or any(walk(b) for b in ins.bodies)
                       for ins in block.instrs)
        got = program._writes_integers = walk(program.body)
    return got


def _prepare(block: Block, mode: str = "functional", needed: frozenset = frozenset()) -> None:
    """Cache per-instruction dispatch data on the objects (the hot loop reads them). In timing
    mode an instruction of TIMING_ONLY runs its functional semantics when its result is
    `needed` (values_needed)."""
    for ins in block.instrs:
        if getattr(ins, "_mode", None) != mode:
            run = SEMANTICS[ins.op].run if not ins.op.startswith("ctl.") or ins.op in (
                "ctl.assert", "ctl.print") else None
            how = mode
            if mode == "timing" and ins.op in TIMING_ONLY:
                if any(d in needed for d in ins.dst):
                    how = "functional"
                else:
                    run = TIMING_ONLY[ins.op]
            if run is not None:
                run = specialise(ins, how, run) or run
            ins._run = run
            ins._mode = mode
            ins._how = how if run is not None else mode  # "functional": computes its result
            ins._reads = tuple(dict.fromkeys(registers_in(list(ins.args.values()))))
        for b in ins.bodies:
            _prepare(b, mode, needed)


def run_block(st: ExecState, block: Block, args: list[Any]) -> list[Any]:
    r = st.r
    for p, a in zip(block.params, args):
        r[p] = a
    events = st.events
    for ins in block.instrs:
        run = ins._run
        if run is not None:
            cost = run(st, ins)
            if events is not None:
                events.append((ins, cost))
            continue
        op = ins.op
        if op == "ctl.for":
            _run_for(st, ins)
        elif op == "ctl.if":
            cond = st.v(ins.args["cond"])
            if events is not None:
                events.append((ins, None))
            body = ins.bodies[0] if cond else ins.bodies[1]
            outs = run_block(st, body, [])
            for d, o in zip(ins.dst, outs):
                r[d] = o
        elif op == "ctl.while":
            _run_while(st, ins)
        else:
            raise SimulationError(st.kernel, ins.loc, f"unknown instruction {op}")
    return [st.v(x) for x in block.results]


def _run_for(st: ExecState, ins: Instr) -> None:
    lb, ub, step = (int(st.v(ins.args[k])) for k in ("lb", "ub", "step"))
    carried = [st.v(x) for x in ins.args["inits"]]
    body = ins.bodies[0]
    if step == 0:
        raise SimulationError(st.kernel, ins.loc, "loop step is zero")
    i = lb
    trips = 0
    events = st.events
    while (i < ub) if step > 0 else (i > ub):
        if events is not None:
            events.append((ins, {"iteration": trips}))
        carried = run_block(st, body, [i] + carried)
        i += step
        trips += 1
    for d, v in zip(ins.dst, carried):
        st.r[d] = v


def _run_while(st: ExecState, ins: Instr) -> None:
    before, after = ins.bodies
    carried = [st.v(x) for x in ins.args["inits"]]
    guard = 0
    while True:
        res = run_block(st, before, carried)
        cond, fwd = res[0], res[1:]
        if st.events is not None:
            st.events.append((ins, {"iteration": guard}))
        if not bool(cond):
            break
        carried = run_block(st, after, fwd)
        guard += 1
        if guard > 50_000_000:
            raise SimulationError(st.kernel, ins.loc, "while loop ran more than 5e7 iterations")
    for d, v in zip(ins.dst, fwd):
        st.r[d] = v


def bind_params(program: Program, args: list[Any]) -> dict[str, Any]:
    regs: dict[str, Any] = {}
    for p, a in zip(program.params, args):
        if p["kind"] == "ptr":
            regs[p["reg"]] = a.data_ptr() if isinstance(a, torch.Tensor) else int(a)
        elif p["kind"] == "int":
            regs[p["reg"]] = int(a)
        else:
            regs[p["reg"]] = float(a)
    return regs


@without_gc
def execute(program: Program, grid: tuple[int, int, int], args: list[Any],
            record: bool = True, mode: str = "functional") -> list[ProgramTrace]:
    """Run all programs of `grid`; returns one trace per program (empty events if not record).

    mode="timing" skips the tile data computation of the heavy tile instructions (see
    TIMING_ONLY above) whose results cannot reach an address, a mask, a loop bound, a branch or
    an assertion (values_needed: those are computed as in the functional mode, loads included):
    scalars, control flow, DMA descriptors and cost inputs are exact, the other tile contents
    are not, so outputs are garbage. It gives the same events, hence the same cycles, as the
    functional mode, as long as what the program reads from memory to address it is real (its
    inputs, not the garbage outputs of an earlier launch in timing mode: the driver runs
    launches that write integers functionally for that reason)."""
    if mode not in ("functional", "timing"):
        raise ValueError(f"unknown execution mode '{mode}'")
    needed = frozenset()
    if mode == "timing":
        needed = getattr(program, "_values_needed", None)
        if needed is None:
            needed = program._values_needed = values_needed(program.body)
    _prepare(program.body, mode, needed)
    tensors = [(p["name"], a) for p, a in zip(program.params, args) if isinstance(a, torch.Tensor)]
    memory = GlobalMemory(tensors)
    regions = {r.index: (r.name, r.nbytes) for r in memory.regions}
    base = bind_params(program, args)

    def run_one(pid: tuple[int, int, int]) -> ProgramTrace:
        st = ExecState(memory, pid, grid, program.name, run_block)
        st.r.update(base)
        st.events = [] if record else None
        run_block(st, program.body, [])
        return ProgramTrace(pid, st.events or [], regions)

    if mode == "timing" and record and lockstep.enabled():
        # programs that differ only in what their program id reaches run together, once
        traces = lockstep.run_grouped(program, grid, memory, base, run_one,
                                      lambda pid, g, lane: ProgramTrace(pid, g.events, regions, g, lane),
                                      run_block)
        if traces is not None:
            return traces
    gx, gy, gz = grid
    return [run_one((x, y, z)) for z in range(gz) for y in range(gy) for x in range(gx)]
