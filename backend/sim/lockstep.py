"""Timing mode, programs in lockstep: the programs of a launch walked together, once.

In timing mode tile contents are not computed (executor.TIMING_ONLY), so what tells one program
of a grid from another is only what its program id reaches: scalar registers (addresses, box
bounds, loop bounds, branch conditions) and the few tile values that are still computed (masks).
`run_grouped` walks the program once for a set of programs ("lanes"), with every register in
one of three states:

- uniform: one value, valid for every lane, held in a representative ExecState (the first
  lane's) exactly as the per-program executor would hold it;
- varying: an integer scalar with one value per lane (a numpy int64 array), computed with the
  ISA's integer semantics (two's-complement wrap, division toward zero);
- unknown: a value that may differ between lanes and is not tracked (a tile computed from a
  varying scalar, anything read from memory, whose contents in timing mode depend on which
  programs ran before).

An instruction whose operands are uniform runs once, on the representative, with the
executor's own runner: every lane would compute the same value and report the same cost
inputs. Scalar integer instructions with varying operands are computed for all lanes at once.
A structured DMA with a varying address (or box bound) runs on the representative and has its
per-lane byte addresses computed: the lanes must agree on every other cost input (bytes,
elements, runs, run bytes, region, 32-byte alignment); the timing model reads the address
itself only to tell first reads from re-reads (backend/sim/cost/levels.py's read_fractions,
given the per-lane addresses). Tile instructions whose cost inputs are shapes (SIMD, SFU, RE, DPE, MLU) run once
whatever their operands hold; their results are uniform when they are timing mode's shared
placeholder tiles, else unknown. A loop bound or branch condition that differs between lanes,
or a DMA on which lanes disagree, splits the lanes into groups that agree, and each group is
walked again from the start. Anything else that an unknown or varying value reaches (a mask, a
scalar computed from a tile, an instruction not listed here) abandons lockstep for those
lanes: they run program by program, as before.

So every lane gets the events the per-program executor would give it (the same instructions,
the same cost inputs, its own addresses): the simulated cycles are the same by construction.
The lanes of a group share one event list (ProgramTrace.group), which also lets the timing
model price identical programs once (timing.price_launch). The same caveat as timing mode's
applies: programs whose addresses or control flow depend on tile data are outside it.
`MTIA_SIM_LOCKSTEP=0` turns lockstep off (every program executed on its own).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from backend.program import INT_BITS, ITEMSIZE, Block, Instr, Program
from backend.sim.isa import BlockRunner, ExecState
from backend.sim.memory import GlobalMemory, _descriptor_plan

MAX_WALKS = 64      # lockstep walks of one launch (each split adds walks); the rest run alone
MIN_LANES = 2       # a smaller group runs program by program


def enabled() -> bool:
    return os.environ.get("MTIA_SIM_LOCKSTEP", "1") != "0"


class _Abort(Exception):
    """An instruction these lanes cannot share exactly: run them program by program."""


class _Split(Exception):
    """The lanes disagree (a loop trip count, a branch, a DMA's cost inputs): `labels` gives
    each lane its group."""

    def __init__(self, labels: np.ndarray):
        super().__init__()
        self.labels = labels


@dataclass(eq=False)
class Group:
    """Programs that executed the same instructions with the same cost inputs."""
    lanes: np.ndarray                      # linear program indices (x fastest)
    pids: list[tuple[int, int, int]]
    events: list                           # shared: (instr, cost inputs of the first lane)
    # event index -> byte address per lane, or (first lane's address, each lane's offset from it)
    addrs: dict[int, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.pids)


# tile instructions whose cost inputs are their operands' and result's shapes; in timing mode
# those of PLACEHOLDER return the launch's shared zero tile (memory.placeholder)
_SHAPE_COST = frozenset({
    "dpe.matmul", "simd.binary", "sfu.binary", "simd.unary", "sfu.unary", "simd.fma", "simd.cast",
    "simd.splat", "simd.cmp", "simd.select", "simd.clamp", "simd.iota", "simd.const",
    "mlu.broadcast", "mlu.reshape", "mlu.permute", "mlu.join", "mlu.split", "mlu.cat", "re.reduce"})
# instructions whose result comes from memory (its contents depend on which programs ran first)
_MEM_READ = frozenset({"dma_in.load", "dma_in.gather", "scalar.load", "dma_out.atomic"})
_SPECIAL = _MEM_READ | {"scalar.pid", "ctl.print"}
_SCALAR_VEC = frozenset({"scalar.binary", "scalar.cmp", "scalar.select", "scalar.cast", "scalar.addptr"})


def _trunc_div(a: Any, b: Any) -> Any:
    q = np.floor_divide(a, b)
    return q + (((a - q * b) != 0) & ((np.less(a, 0)) != (np.less(b, 0))))


def _shift_ok(b: Any) -> bool:
    return bool(np.all((np.asarray(b) >= 0) & (np.asarray(b) < 64)))


_INT = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor, "smin": np.minimum, "smax": np.maximum, "sdiv": _trunc_div,
    "srem": lambda a, b: a - _trunc_div(a, b) * b, "shl": np.left_shift, "shrs": np.right_shift,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
        "sge": np.greater_equal}


def _wrap(x: Any, bits: int) -> Any:
    """Two's-complement wrap to `bits` (isa.wrap_int); numpy int64 arithmetic is already mod 2**64."""
    if bits >= 64:
        return x
    if bits == 1:
        return np.bitwise_and(x, 1)
    u = np.bitwise_and(x, (1 << bits) - 1)
    return np.where(u >= (1 << (bits - 1)), u - (1 << bits), u)


def _labels(*cols: np.ndarray) -> np.ndarray:
    """A group label per lane from the lanes' values in `cols`."""
    keys = np.stack([np.asarray(c, dtype=np.int64) for c in cols], axis=1)
    return np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)


def _prepare(block: Block) -> None:
    for ins in block.instrs:
        ins._lk = 1 if ins.op in _SPECIAL else 0
        for b in ins.bodies:
            _prepare(b)


class _Walk:
    def __init__(self, program: Program, memory: GlobalMemory, grid: tuple[int, int, int], base: dict,
                 lanes: np.ndarray, run_block: BlockRunner):
        gx, gy, _ = grid
        self.lanes = lanes
        self.pid = (lanes % gx, (lanes // gx) % gy, lanes // (gx * gy))
        st = ExecState(memory, tuple(int(a[0]) for a in self.pid), grid, program.name, run_block)
        st.r.update(base)
        st.events = []
        self.st = st
        self.program = program
        self.V: dict[str, np.ndarray] = {}   # varying integer scalars
        self.T: set[str] = set()             # unknown per lane
        self.addrs: dict[int, Any] = {}
        self.ph = memory.placeholders
        # a varying array's offsets from its first lane, by the array's identity (arrays are
        # never changed in place; the entry holds the array, so its id is not reused): an
        # address that moves by a uniform amount keeps its pattern, and the DMA checks on it
        # (alignment) are made once per pattern
        self.deltas: dict[int, tuple] = {}
        self.pattern: dict[tuple, tuple] = {}

    def run(self) -> Group:
        self.block(self.program.body, [])
        pids = list(zip(*(a.tolist() for a in self.pid)))
        return Group(self.lanes, pids, self.st.events, self.addrs)

    # ------------------------------------------------------------------ register states

    def placeholder(self, v: Any) -> bool:
        return isinstance(v, torch.Tensor) and any(v is t for t in self.ph.values())

    def value(self, x: Any) -> tuple:
        if isinstance(x, str):
            return self.st.r[x], self.V.get(x), x in self.T
        return x, None, False

    def bind(self, reg: str, v: tuple) -> None:
        val, arr, unknown = v
        self.st.r[reg] = val
        if arr is not None:
            self.V[reg] = arr
        else:
            self.V.pop(reg, None)
        if unknown:
            self.T.add(reg)
        else:
            self.T.discard(reg)

    def set_varying(self, reg: str, arr: np.ndarray) -> None:
        arr = np.asarray(arr, dtype=np.int64)
        if arr[0] == arr.min() and arr[0] == arr.max():
            self.V.pop(reg, None)  # the same for every lane: uniform
        else:
            self.V[reg] = arr
        self.T.discard(reg)

    def delta(self, arr: np.ndarray) -> np.ndarray:
        hit = self.deltas.get(id(arr))
        if hit is None:
            hit = self.deltas[id(arr)] = (arr, arr - arr[0])
        return hit[1]

    def clamps(self, reg: Any, bound: int, low: bool) -> bool:
        """Whether a box bound register is the same for every lane once clamped to the tile
        (a lower bound to 0, an upper one to the extent `bound`): uniform, or varying beyond it."""
        arr = self.V.get(reg) if reg is not None else None
        if arr is None:
            return True
        hit = self.deltas.get(("range", id(arr)))
        if hit is None:
            hit = self.deltas[("range", id(arr))] = (arr, int(arr.min()), int(arr.max()))
        return hit[2] <= 0 if low else hit[1] >= bound

    def int_operand(self, x: Any) -> Any:
        """A scalar operand as an int64 array (varying) or a Python int (uniform)."""
        if isinstance(x, str):
            a = self.V.get(x)
            if a is not None:
                return a
            if x in self.T:
                raise _Abort
            x = self.st.r[x]
        if isinstance(x, (bool, int, np.integer)) and -(1 << 63) <= int(x) < (1 << 63):
            return int(x)
        raise _Abort

    # ------------------------------------------------------------------ the walk

    def block(self, block: Block, args: list) -> list:
        st = self.st
        r, V, T = st.r, self.V, self.T
        events = st.events
        for p, a in zip(block.params, args):
            self.bind(p, a)
        for ins in block.instrs:
            run = ins._run
            if run is not None:
                if ins._lk == 0:
                    if not (V or T):
                        events.append((ins, run(st, ins)))
                        continue
                    for x in ins._reads:
                        if x in V or x in T:
                            break
                    else:
                        # uniform operands: one execution stands for every lane
                        prev = [(d, r.get(d)) for d in ins.dst if d in T]
                        events.append((ins, run(st, ins)))
                        for d in ins.dst:
                            V.pop(d, None)
                        for d, pv in prev:
                            # a timing-mode stand-in that kept its register's tile keeps its state
                            if not (isinstance(pv, torch.Tensor) and r.get(d) is pv):
                                T.discard(d)
                        continue
                self.special(ins, run)
                continue
            op = ins.op
            if op == "ctl.for":
                self.for_(ins)
            elif op == "ctl.if":
                self.if_(ins)
            elif op == "ctl.while":
                self.while_(ins)
            else:
                raise _Abort
        return [self.value(x) for x in block.results]

    def special(self, ins: Instr, run: Callable) -> None:
        st, V, T = self.st, self.V, self.T
        r = st.r
        op = ins.op
        if op == "ctl.print":
            raise _Abort  # one line per program
        if op == "scalar.pid":
            st.events.append((ins, run(st, ins)))
            self.set_varying(ins.dst[0], self.pid[ins.attrs["axis"]])
            return
        dirty = [x for x in ins._reads if x in V or x in T]
        if not dirty:  # a memory read with uniform operands
            prev = [(d, r.get(d), d in T) for d in ins.dst]
            st.events.append((ins, run(st, ins)))
            self.settle(prev, reads_memory=op in _MEM_READ, operands_known=True)
            return
        if op in _SCALAR_VEC:
            self.scalar(ins, run)
            return
        if op in ("dma_in.load", "dma_out.store"):
            self.dma(ins, run)
            return
        if op in _SHAPE_COST and not (op == "re.reduce" and (ins.attrs.get("kind") is None
                                                             or len(ins.args["srcs"]) != 1)):
            # cost inputs are shapes, the same for every lane; the result is known only when
            # it is a placeholder (which ignores operand values)
            prev = [(d, r.get(d), d in T) for d in ins.dst]
            st.events.append((ins, run(st, ins)))
            self.settle(prev, reads_memory=False, operands_known=False)
            return
        raise _Abort(op)

    def settle(self, prev: list, reads_memory: bool, operands_known: bool) -> None:
        """Register states after an instruction ran once on the representative."""
        r, V, T = self.st.r, self.V, self.T
        for d, pv, was_unknown in prev:
            V.pop(d, None)
            v = r.get(d)
            if isinstance(pv, torch.Tensor) and v is pv:
                known = not was_unknown  # a stand-in kept the register's previous tile
            elif self.placeholder(v):
                known = True
            else:
                known = operands_known and not reads_memory
            if known:
                T.discard(d)
            else:
                T.add(d)  # whatever reads it other than a shape-cost tile op abandons lockstep

    # ------------------------------------------------------------------ scalar integer work

    def scalar(self, ins: Instr, run: Callable) -> None:
        st = self.st
        a, at, op = ins.args, ins.attrs, ins.op
        if op == "scalar.binary" and at["fn"] in ("add", "sub") and INT_BITS.get(at["dtype"]) == 64:
            # the hot case (an address moving in a loop): a varying value plus or minus a
            # uniform integer; at 64 bits numpy's wrap is the ISA's, the lanes' offsets stay
            x, y = a["a"], a["b"]
            src = self.V.get(x) if isinstance(x, str) else None
            c = st.r.get(y) if isinstance(y, str) else y
            if src is not None and type(c) is int and (not isinstance(y, str) or (y not in self.V and y not in self.T)) \
                    and -(1 << 63) <= c < (1 << 63):
                out = src + c if at["fn"] == "add" else src - c
                cost = run(st, ins)
                if st.r[ins.dst[0]] != int(out[0]):
                    raise _Abort
                d = ins.dst[0]
                self.V[d] = out
                self.T.discard(d)
                self.deltas[id(out)] = (out, self.delta(src))
                st.events.append((ins, cost))
                return
        if op == "scalar.binary":
            bits = INT_BITS.get(at["dtype"])
            fn = _INT.get(at["fn"])
            if bits is None or fn is None:
                raise _Abort
            x, y = self.int_operand(a["a"]), self.int_operand(a["b"])
            if at["fn"] in ("sdiv", "srem") and np.any(np.asarray(y) == 0):
                raise _Abort  # the lane's own execution reports the division by zero
            if at["fn"] in ("shl", "shrs") and not _shift_ok(y):
                raise _Abort
            with np.errstate(all="ignore"):
                out = _wrap(fn(np.asarray(x, dtype=np.int64), np.asarray(y, dtype=np.int64)), bits)
        elif op == "scalar.cmp":
            fn = _CMP.get(at["pred"])
            if fn is None or at["dtype"] not in INT_BITS:
                raise _Abort
            out = fn(np.asarray(self.int_operand(a["a"]), dtype=np.int64),
                     np.asarray(self.int_operand(a["b"]), dtype=np.int64))
        elif op == "scalar.select":
            c = np.asarray(self.int_operand(a["cond"])) != 0
            out = np.where(c, self.int_operand(a["a"]), self.int_operand(a["b"]))
        elif op == "scalar.addptr":
            out = np.asarray(self.int_operand(a["base"]), dtype=np.int64) + \
                np.asarray(self.int_operand(a["offset"]), dtype=np.int64) * int(at["elsize"])
        else:  # scalar.cast between integer types (isa.scalar_cast)
            kind, src, to = at["kind"], at["from"], at["to"]
            if src not in INT_BITS or to not in INT_BITS or kind not in ("extsi", "extui", "trunci", "index_cast"):
                raise _Abort
            x = np.asarray(self.int_operand(a["a"]), dtype=np.int64)
            if kind == "extui" and src != "i1" and INT_BITS[src] < 64:
                x = np.bitwise_and(x, (1 << INT_BITS[src]) - 1)
            if kind == "extsi" and src == "i1":
                x = np.where(x != 0, -1, 0)
            out = (x != 0) if to == "i1" else _wrap(x, INT_BITS[to])
        cost = run(st, ins)  # the representative's value, by the executor's own code
        out = np.broadcast_to(np.asarray(out, dtype=np.int64), (len(self.lanes),))
        rep = st.r[ins.dst[0]]
        if isinstance(rep, float) or int(rep) != int(out[0]):
            raise _Abort  # not the ISA's value: never guess
        self.set_varying(ins.dst[0], out)
        st.events.append((ins, cost))
        if ins.dst[0] in self.V and (op == "scalar.addptr" or (op == "scalar.binary" and at["fn"] in ("add", "sub")
                                                                and INT_BITS[at["dtype"]] == 64)):
            # x + c or x - c (c uniform): the same offsets between lanes, modulo 2**64
            x = a["base"] if op == "scalar.addptr" else a["a"]
            y = a["offset"] if op == "scalar.addptr" else a["b"]
            src = self.V.get(x) if isinstance(x, str) else None
            other = self.V.get(y) if isinstance(y, str) else None
            if src is not None and other is None:
                self.deltas[id(out)] = (out, self.delta(src))
            elif other is not None and src is None and op == "scalar.binary" and at["fn"] == "add":
                self.deltas[id(out)] = (out, self.delta(other))

    # ------------------------------------------------------------------ structured DMA

    def dma(self, ins: Instr, run: Callable) -> None:
        st, V = self.st, self.V
        plan = ins.__dict__.get("_dplan")
        if plan is None:
            plan = ins._dplan = _descriptor_plan(ins)
        dtype, shape, breg, bconst, oreg, oconst, stride_ops, bound_ops, _ = plan
        mask = ins.args.get("mask")
        if not shape or (mask is not None and not isinstance(mask, str)):
            raise _Abort
        for x in [breg, mask, *(s for s, _ in stride_ops)]:
            if x is not None and (x in V or x in self.T):
                raise _Abort  # a varying base, stride or mask: not needed so far
        prev = [(d, st.r.get(d), d in self.T) for d in ins.dst]
        cost = run(st, ins)
        if not isinstance(cost, dict) or "addr" not in cost or cost.get("indexed"):
            raise _Abort
        if mask is None and oreg in V and ins._how != "functional" and all(
                self.clamps(lreg, 0, True) and self.clamps(hreg, d, False) for d, lreg, _, hreg, _ in bound_ops):
            # only the offset varies: each lane's address is the first lane's plus the offset's
            # pattern (x element size, modulo 2**64 as the ISA's i64), the box and so the sizes
            # are the same; the lanes agree on alignment when the pattern moves by multiples of 32
            d = self.delta(V[oreg])
            key = (id(d), ITEMSIZE[dtype])
            pat = self.pattern.get(key)
            if pat is None:
                db = d * ITEMSIZE[dtype]
                pat = self.pattern[key] = (d, db, bool(np.all(db % 32 == 0)))
            if pat[2]:
                self.addrs[len(st.events)] = (cost["addr"], pat[1])
                st.events.append((ins, cost))
                self.settle(prev, reads_memory=ins.op in _MEM_READ, operands_known=False)
                return
        hit = st.memory._bases.get((int(st.r[breg]) if breg is not None else bconst, dtype))
        if hit is None:
            raise _Abort
        region, base_idx = hit
        strides = [int(st.r[x]) if x is not None else c for x, c in stride_ops]
        if any(s < 0 for s in strides):
            raise _Abort
        start = base_idx + (self.int_operand(oreg) if oreg is not None else oconst)
        subs = []
        box = []
        for (d, lreg, lconst, hreg, hconst), s in zip(bound_ops, strides):
            lo = lconst if lreg is None else np.maximum(self.int_operand(lreg), 0)
            hi = hconst if hreg is None else np.minimum(self.int_operand(hreg), d)
            hi = np.maximum(hi, lo)
            subs.append(hi - lo)
            box += [lo, hi]
            start = start + lo * s
        size = ITEMSIZE[dtype]
        lanes = (len(self.lanes),)
        idx0 = np.broadcast_to(np.asarray(start, dtype=np.int64), lanes)
        addr = region.start + idx0 * size
        aligned = addr % 32 == 0
        # unmasked, the cost inputs follow the box's extents; masked, which elements move
        # follows the box itself (its bounds against the mask)
        varying = [np.broadcast_to(np.asarray(s), lanes) for s in (subs if mask is None else box) if np.ndim(s)]
        if any(v.min() != v.max() for v in varying) or aligned.min() != aligned.max():
            raise _Split(_labels(*varying, aligned))
        if mask is None and cost["bytes"] and ins._how == "functional":
            # a load computed in full (its data reaches an address or mask) checks its box
            last = sum((int(np.asarray(d).flat[0]) - 1) * s for d, s in zip(subs, strides))
            n_el = st.memory.typed(region, dtype).numel()
            if idx0.min() < 0 or (idx0 + last).max() >= n_el:
                raise _Abort
        if mask is not None and cost["bytes"]:
            # the masked (generic) path checks the elements it moves against the tensor: every
            # lane's, at its own offset (the same elements relative to its start)
            m = st.r[mask]
            rel = st.memory._index_tile(shape, 0, strides)
            valid = st.memory._box_mask(shape, [(int(np.asarray(box[2 * i]).flat[0]),
                                                 int(np.asarray(box[2 * i + 1]).flat[0]))
                                                for i in range(len(shape))])
            m = (m if isinstance(m, torch.Tensor) else torch.tensor(bool(m))).expand(shape)
            valid = m if valid is None else (valid & m)
            sel = rel[valid]
            base0 = idx0 - sum(int(np.asarray(box[2 * i]).flat[0]) * s for i, s in enumerate(strides))
            if sel.numel():
                n_el = st.memory.typed(region, dtype).numel()
                if (base0 + int(sel.min())).min() < 0 or (base0 + int(sel.max())).max() >= n_el:
                    raise _Abort  # out of bounds in some lane: its own run reports it
        if int(addr[0]) != cost["addr"] or bool(aligned[0]) != cost["aligned32"]:
            raise _Abort
        if addr.min() != addr.max():
            self.addrs[len(st.events)] = np.array(addr)
        st.events.append((ins, cost))
        self.settle(prev, reads_memory=ins.op in _MEM_READ, operands_known=False)

    # ------------------------------------------------------------------ control flow

    def cond(self, x: Any) -> bool:
        if isinstance(x, str) and x in self.V:
            c = self.V[x] != 0
            if c.min() != c.max():
                raise _Split(c.astype(np.int64))
            return bool(c[0])
        if isinstance(x, str) and x in self.T:
            raise _Abort
        return bool(self.st.v(x))

    def for_(self, ins: Instr) -> None:
        lb, ub, step = (self.int_operand(ins.args[k]) for k in ("lb", "ub", "step"))
        if any(np.ndim(v) for v in (lb, ub, step)):
            lb_, ub_, st_ = (np.asarray(v, dtype=np.int64) for v in (lb, ub, step))
            if np.any(st_ == 0):
                raise _Abort
            with np.errstate(all="ignore"):
                up = np.maximum(0, -((lb_ - ub_) // np.where(st_ > 0, st_, 1)))
                down = np.maximum(0, -((ub_ - lb_) // np.where(st_ < 0, -st_, 1)))
            trips = np.broadcast_to(np.where(st_ > 0, up, down), (len(self.lanes),))
            if trips.min() != trips.max():
                raise _Split(trips)
            n = int(trips[0])
        else:
            if step == 0:
                raise _Abort
            n = max(0, -((lb - ub) // step)) if step > 0 else max(0, -((ub - lb) // -step))
        carried = [self.value(x) for x in ins.args["inits"]]
        body = ins.bodies[0]
        events = self.st.events
        lanes = len(self.lanes)
        for trip in range(n):
            events.append((ins, {"iteration": trip}))
            iv = lb + trip * step
            if np.ndim(iv):
                iv = np.broadcast_to(np.asarray(iv, dtype=np.int64), (lanes,))
                iv = (int(iv[0]), iv if iv.min() != iv.max() else None, False)
            else:
                iv = (int(iv), None, False)
            carried = self.block(body, [iv] + carried)
        for d, v in zip(ins.dst, carried):
            self.bind(d, v)

    def if_(self, ins: Instr) -> None:
        c = self.cond(ins.args["cond"])
        self.st.events.append((ins, None))
        outs = self.block(ins.bodies[0] if c else ins.bodies[1], [])
        for d, v in zip(ins.dst, outs):
            self.bind(d, v)

    def while_(self, ins: Instr) -> None:
        before, after = ins.bodies
        carried = [self.value(x) for x in ins.args["inits"]]
        guard = 0
        while True:
            res = self.block(before, carried)
            cond, fwd = res[0], res[1:]
            self.st.events.append((ins, {"iteration": guard}))
            if cond[2]:
                raise _Abort
            if cond[1] is not None:
                c = cond[1] != 0
                if c.min() != c.max():
                    raise _Split(c.astype(np.int64))
                go = bool(c[0])
            else:
                go = bool(cond[0])
            if not go:
                break
            carried = self.block(after, fwd)
            guard += 1
            if guard > 50_000_000:
                raise _Abort
        for d, v in zip(ins.dst, fwd):
            self.bind(d, v)


def run_grouped(program: Program, grid: tuple[int, int, int], memory: GlobalMemory, base: dict,
                run_one: Callable[[tuple[int, int, int]], Any], make_trace: Callable,
                run_block: BlockRunner) -> list | None:
    """The traces of every program of `grid` (in the executor's order), lanes that agree
    sharing one Group; None when lockstep cannot take the launch (the caller runs every
    program on its own). `run_one(pid)` runs one program alone and returns its trace;
    `make_trace(pid, group, lane)` makes a lane's trace; `run_block` is the executor's block
    runner (ExecState's, for the instructions with combine regions)."""
    gx, gy, gz = grid
    n = gx * gy * gz
    if n < MIN_LANES:
        return None
    if not getattr(program, "_lockstep_prepared", False):
        _prepare(program.body)
        program._lockstep_prepared = True
    work = [np.arange(n, dtype=np.int64)]
    groups: list[Group] = []
    alone: list[int] = []
    walks = 0
    while work:
        lanes = work.pop()
        if len(lanes) < MIN_LANES or walks >= MAX_WALKS:
            alone.extend(lanes.tolist())
            continue
        walks += 1
        try:
            groups.append(_Walk(program, memory, grid, base, lanes, run_block).run())
        except _Split as s:
            labels = s.labels
            work.extend(lanes[labels == k] for k in np.unique(labels)[::-1])
        except Exception:  # noqa: BLE001  (_Abort, or an error the lanes' own runs report)
            if os.environ.get("MTIA_SIM_LOCKSTEP") == "debug":
                raise
            if len(lanes) == n:
                return None
            alone.extend(lanes.tolist())
    traces: list = [None] * n
    for g in groups:
        for j, (lane, pid) in enumerate(zip(g.lanes.tolist(), g.pids)):
            traces[lane] = make_trace(pid, g, j)
    for lane in sorted(alone):
        traces[lane] = run_one((lane % gx, (lane // gx) % gy, lane // (gx * gy)))
    return traces
