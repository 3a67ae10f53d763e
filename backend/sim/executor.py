"""Functional simulator: runs every program of a grid on real tensor data.

Programs run one after another (pid x fastest, as Triton numbers them). Each executed
instruction reports its cost inputs; the list of (instruction, cost) per program is what the
timing model prices. Control flow (for / if / while) is run here, by the command processor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from backend.sim.isa import SEMANTICS, Block, ExecState, Instr, Program, SimulationError, registers_in
from backend.sim.memory import GlobalMemory

Event = tuple  # (instr, cost dict or None, trip) -- one executed instruction


@dataclass
class ProgramTrace:
    pid: tuple[int, int, int]
    events: list[Event] = field(default_factory=list)
    # region index -> (tensor argument name, bytes): lets the timing model tell first reads of a
    # tensor (off-chip) from re-reads (on-chip SRAM). Shared by all traces of one launch.
    regions: dict[int, tuple[str, int]] = field(default_factory=dict)


def _prepare(block: Block) -> None:
    """Cache per-instruction dispatch data on the objects (the hot loop reads them)."""
    for ins in block.instrs:
        if not hasattr(ins, "_run"):
            ins._run = SEMANTICS[ins.op].run if not ins.op.startswith("ctl.") or ins.op in (
                "ctl.assert", "ctl.print") else None
            ins._reads = tuple(dict.fromkeys(registers_in(list(ins.args.values()))))
        for b in ins.bodies:
            _prepare(b)


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


def execute(program: Program, grid: tuple[int, int, int], args: list[Any],
            record: bool = True) -> list[ProgramTrace]:
    """Run all programs of `grid`; returns one trace per program (empty events if not record)."""
    _prepare(program.body)
    tensors = [(p["name"], a) for p, a in zip(program.params, args) if isinstance(a, torch.Tensor)]
    memory = GlobalMemory(tensors)
    regions = {r.index: (r.name, r.nbytes) for r in memory.regions}
    base = bind_params(program, args)
    traces: list[ProgramTrace] = []
    gx, gy, gz = grid
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                st = ExecState(memory, (x, y, z), grid, program.name)
                st.r.update(base)
                st.events = [] if record else None
                run_block(st, program.body, [])
                traces.append(ProgramTrace((x, y, z), st.events or [], regions))
    return traces
