"""Aggressive dead-code elimination on the tile IR, loop-carried values included.

Roots are ops with effects (stores, atomics, asserts, prints). A loop's iter arg survives only
if its result is used after the loop or its value feeds something live inside; this is what
removes pointer tiles once pointer analysis has replaced them by scalar offsets.
"""
from __future__ import annotations

from backend.tile_ir import Function, Op, Region

EFFECTS = {"tt.store", "mtia.dma_store", "mtia.scatter", "tt.atomic_rmw", "tt.atomic_cas", "tt.assert",
           "tt.print", "tt.return", "tt.call"}
TERMINATORS = {"scf.yield", "scf.condition", "tt.reduce.return", "tt.scan.return", "tt.return"}


class _DCE:
    def __init__(self, fn: Function):
        self.fn = fn
        self.def_op: dict = {}
        self.arg_of: dict = {}       # block arg -> (op, region index, arg index)
        self.parent: dict[int, Op | None] = {}
        self.op_region: dict[int, Region] = {}
        self.live_ops: set[int] = set()
        self.live_vals: set = set()
        self.work: list = []
        self._index(fn.body, None)

    def _index(self, region: Region, parent: Op | None) -> None:
        for i, a in enumerate(region.args):
            if parent is not None:
                self.arg_of[a] = (parent, parent.regions.index(region), i)
        for op in region.ops:
            self.parent[id(op)] = parent
            self.op_region[id(op)] = region
            for r in op.results:
                self.def_op[r] = op
            for r in op.regions:
                self._index(r, op)

    def mark_op(self, op: Op) -> None:
        if id(op) in self.live_ops:
            return
        self.live_ops.add(id(op))
        n = op.name
        if n == "scf.for":
            for v in op.operands[:3]:
                self.mark_val(v)
        elif n == "scf.if":
            self.mark_val(op.operands[0])
        elif n == "scf.while" or op.name not in TERMINATORS and op.regions and not n.startswith("scf."):
            # while loops and ops with combine regions: keep everything they hold
            for v in op.operands:
                self.mark_val(v)
            for r in op.regions:
                for o in r.ops:
                    self.mark_op(o)
        else:
            for v in op.operands:
                self.mark_val(v)
        p = self.parent.get(id(op))
        if p is not None:
            self.mark_op(p)

    def _yield(self, region: Region) -> Op | None:
        return region.ops[-1] if region.ops and region.ops[-1].name in TERMINATORS else None

    def mark_val(self, v) -> None:
        if v in self.live_vals:
            return
        self.live_vals.add(v)
        op = self.def_op.get(v)
        if op is not None:
            j = op.results.index(v)
            if op.name == "scf.for":
                self.mark_op(op)
                self.mark_val(op.operands[3 + j])
                y = self._yield(op.regions[0])
                self._mark_yield(y, j)
            elif op.name == "scf.if":
                self.mark_op(op)
                for r in op.regions:
                    self._mark_yield(self._yield(r), j)
            else:
                self.mark_op(op)
            return
        if v in self.arg_of:
            owner, ri, i = self.arg_of[v]
            if owner.name == "scf.for" and ri == 0 and i > 0:
                self.mark_op(owner)
                self.mark_val(owner.operands[3 + i - 1])
                self._mark_yield(self._yield(owner.regions[0]), i - 1)
            else:
                self.mark_op(owner)

    def _mark_yield(self, y: Op | None, j: int) -> None:
        if y is None:
            return
        self.live_ops.add(id(y))
        if j < len(y.operands):
            self.mark_val(y.operands[j])

    def run(self) -> None:
        for op in list(_all_ops(self.fn.body)):
            if op.name in EFFECTS:
                self.mark_op(op)
        self._sweep(self.fn.body)

    def _sweep(self, region: Region) -> None:
        kept = []
        for op in region.ops:
            if op.name in TERMINATORS or id(op) in self.live_ops:
                kept.append(op)
                for r in op.regions:
                    self._sweep(r)
                if op.name == "scf.for":
                    self._prune_for(op)
                elif op.name == "scf.if":
                    self._prune_if(op)
        region.ops = kept

    def _prune_for(self, op: Op) -> None:
        body = op.regions[0]
        y = self._yield(body)
        keep = [j for j in range(len(op.results))
                if op.results[j] in self.live_vals or body.args[1 + j] in self.live_vals]
        op.operands[:] = op.operands[:3] + [op.operands[3 + j] for j in keep]
        body.args[:] = body.args[:1] + [body.args[1 + j] for j in keep]
        op.results[:] = [op.results[j] for j in keep]
        if y is not None:
            y.operands[:] = [y.operands[j] for j in keep]

    def _prune_if(self, op: Op) -> None:
        keep = [j for j in range(len(op.results)) if op.results[j] in self.live_vals]
        op.results[:] = [op.results[j] for j in keep]
        for r in op.regions:
            y = self._yield(r)
            if y is not None:
                y.operands[:] = [y.operands[j] for j in keep]


def _all_ops(region: Region):
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from _all_ops(r)


def run(fn: Function) -> None:
    _DCE(fn).run()
