"""Instruction order within each straight-line region: earliest estimated start first.

A PE's engines each run their queue in program order, so the order the compiler emits decides
what can overlap. Source order is often poor: in the online softmax, `alpha = exp2(m_i - m_new)`
and the rescale `acc * alpha` come after the big `exp2(S - m_new)` in the source, so the SFU
computes P before alpha and the SIMD rescale of the accumulator waits for both, although it
needs only alpha. Ordering ops by the time they could start on an idle machine (a list
schedule without resource limits, costs from the timing model's cost rules) issues small
producers as soon as their inputs exist and lets the rescale run on SIMD while the SFU computes P.

Only data dependences and memory order constrain the new order: stores, atomics and other
effects keep their order among themselves and relative to every load; nested control flow
moves as one unit. Ties keep source order, so a region without slack is left as it was.
"""
from __future__ import annotations

from backend.sim.cost import K_MLU, K_RE, K_SFU, K_SIMD, ChipModel, layout_inputs, reduce_inputs, vector_inputs
from backend.passes.dce import EFFECTS as _EFFECTS, TERMINATORS as _TERMINATORS
from backend.program import SFU_FUNCTIONS
from backend.tile_ir import BINARY_FUNCTIONS as _BINARY
from backend.tile_ir import UNARY_FUNCTIONS as _UNARY
from backend.tile_ir import Function, Op, Region, reads, walk

_VIEWS = {"tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.splat", "arith.constant", "tt.make_range"}
_LOADS = {"tt.load", "mtia.dma_load", "mtia.gather"}


class _Costs:
    """Cycles an op would take alone on its engine (an estimate for ordering, not the timing),
    from the timing model's cost rules (backend/sim/cost): an engine's throughput term without
    its setup, a dot at the DPE's BF16 rate unpadded, a load at a PE's share of the off-chip
    bandwidth (the slow case, a first read: ordering work that waits for a load as if it were
    fast would block an in-order engine behind it)."""

    def __init__(self, chip: dict):
        self.cm = ChipModel(chip)
        self.dma_share = self.cm.shares(self.cm.n_pe)[1]

    def of(self, op: Op) -> float:
        if op.regions and op.name not in ("tt.reduce", "tt.scan"):
            return sum(self.of(o) for r in op.regions for o in r.ops)
        res = op.results[0].type if op.results else None
        if res is None or not res.is_tile or op.name in _VIEWS:
            return 1.0
        cm, n = self.cm, res.numel
        if op.name == "tt.dot":
            k = op.operands[0].type.shape[-1]
            return cm.dpe_time(2.0 * n * k, "bf16")
        if op.name in _LOADS:
            return res.nbytes / self.dma_share
        if op.name in ("tt.reduce", "tt.scan"):
            return cm.cycles(K_RE, reduce_inputs(op.operands[0].type.numel, 1), setup=False)
        if op.name in ("tt.trans", "tt.join", "tt.split", "tt.cat"):
            return cm.cycles(K_MLU, layout_inputs(res.nbytes), setup=False)
        # the engine the lowering picks for it (lowering._binary / _unary)
        kind = K_SFU if (_UNARY.get(op.name) or _BINARY.get(op.name)) in SFU_FUNCTIONS else K_SIMD
        return cm.cycles(kind, vector_inputs(n, res.elem), setup=False)


def run(fn: Function, chip: dict) -> int:
    """Reorder every loop body in place, and issue the function body's loads early; returns the
    number of regions whose order changed."""
    costs = _Costs(chip)
    changed = _hoist_loads(fn.body)
    regions = [op.regions[0] for op in walk(fn.body) if op.name == "scf.for"]
    for region in regions:
        changed += _order(region, costs)
    return changed


def _hoist_loads(region: Region) -> int:
    """Issue each load as early as its inputs allow, with the work that computes its address:
    between two effects (stores, atomics, a loop that loads), the ops each load reads
    (transitively) go first, then the load, load by load in source order, then the rest in
    source order. The command processor then queues the loads on DMA before independent work
    (a lookup table built in the prologue, scalar code that waits for a reduction), so DMA does
    not idle while the PE computes (a weight load after the row statistics of a LayerNorm, for
    instance). A conditional that only loads (a pipelined loop's first prefetch) counts as a
    load. Loads keep their order."""
    ops = list(region.ops)
    producer = {v: o for o in ops for v in o.results}
    out: list[Op] = []
    segment: list[Op] = []
    for op in ops:
        if _is_barrier(op):
            out += _loads_first(segment, producer)
            segment = []
            out.append(op)
        else:
            segment.append(op)
    out += _loads_first(segment, producer)
    moved = int(out != ops)
    region.ops = out
    return moved


def _is_load(op: Op) -> bool:
    if not op.regions:
        return op.name in _LOADS
    inner = [i for r in op.regions for i in walk(r)]
    return op.name == "scf.if" and any(i.name in _LOADS for i in inner) and not any(i.name in _EFFECTS for i in inner)


def _is_barrier(op: Op) -> bool:
    """An op loads may not move above: an effect, or a region that has one or loads (other than a
    conditional load)."""
    if op.name in _EFFECTS:
        return True
    inner = [i for r in op.regions for i in walk(r)]
    return any(i.name in _EFFECTS for i in inner) or (not _is_load(op) and any(i.name in _LOADS for i in inner))


def _loads_first(segment: list[Op], producer: dict) -> list[Op]:
    """`segment` (no barrier in it) reordered: each load after its address work, loads first."""
    index = {id(o): i for i, o in enumerate(segment)}
    placed: set[int] = set()
    out: list[Op] = []
    for load in (o for o in segment if _is_load(o)):
        need = _producers(load, producer, placed, lambda p: id(p) in index)
        out += sorted(need, key=lambda o: index[id(o)])
    return out + [o for o in segment if id(o) not in placed]


def _order(region: Region, costs: _Costs) -> int:
    ops = region.ops
    tail = [o for o in ops if o.name in _TERMINATORS]
    body = [o for o in ops if o.name not in _TERMINATORS]
    if len(body) < 3:
        return 0
    index = {id(o): i for i, o in enumerate(body)}
    producer = {v: o for o in body for v in o.results}
    start, _ = _estimate(body, producer, costs, {})
    # a GEMM's or a reduction's result of this iteration's loaded data, carried to the next
    # iteration, is not ready there before that iteration's loads are issued: work on it (a
    # pooled block scaled and stored one iteration later) is ordered after the loads. Ahead of
    # them it would wait for the long operation on its in-order engine, and with that
    # engine's queue full the command processor would stop issuing the loads behind it
    y = tail[-1] if tail and tail[-1].name == "scf.yield" else None
    carried = {}
    if y is not None and len(region.args) == len(y.operands) + 1:
        last_load = max((start[id(o)] for o in body if o.name in _LOADS and not o.regions), default=0.0)
        for arg, v in zip(region.args[1:], y.operands):
            p = producer.get(v)
            while p is not None and p.name in _VIEWS and p.operands:
                p = producer.get(p.operands[0])
            if p is not None and p.name in ("tt.dot", "tt.reduce", "tt.scan") and last_load > 0 \
                    and _after_load(p, producer):
                carried[arg] = last_load + 1.0  # (issued: one cycle)
    if carried:
        start, _ = _estimate(body, producer, costs, carried)
    new = sorted(body, key=lambda o: (start[id(o)], index[id(o)]))
    if new == body:
        return 0
    region.ops = new + tail
    return 1


def _after_load(op: Op, producer: dict) -> bool:
    """Whether `op` reads (through the body's ops) data loaded in this iteration."""
    return any(o is not op and o.name in _LOADS for o in _producers(op, producer, set()))


def _producers(op: Op, producer: dict, seen: set, keep=lambda p: True):
    """`op` and the ops it reads from, transitively (through `producer`, those `keep` accepts),
    each once: those whose ids are not in `seen` yet, adding them to it."""
    stack = [op]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        yield o
        stack += [p for p in (producer.get(v) for v in reads(o)) if p is not None and keep(p)]


def _estimate(body: list[Op], producer: dict, costs: _Costs, ready: dict) -> tuple[dict, dict]:
    """Earliest start and finish of each op on an idle machine (`ready`: when values defined
    outside the body are available; others at 0)."""
    finish: dict[int, float] = {}
    start: dict[int, float] = {}
    last_effect = None
    loads_since: list[Op] = []
    dma_free = 0.0
    for o in body:
        deps = [producer[v] for v in reads(o) if v in producer]
        has_effect = o.name in _EFFECTS or any(i.name in _EFFECTS for r in o.regions for i in walk(r))
        is_load = o.name in _LOADS or any(i.name in _LOADS for r in o.regions for i in walk(r))
        if has_effect:
            deps += loads_since + ([last_effect] if last_effect is not None else [])
            last_effect, loads_since = o, []
        elif is_load:
            if last_effect is not None:
                deps.append(last_effect)
            loads_since.append(o)
        s = max([finish[id(d)] for d in deps] + [ready[v] for v in reads(o) if v in ready], default=0.0)
        if is_load:
            # one DMA engine: loads run one after another, in source order. A nested loop
            # that loads starts after the loads written before it: a prefetch of the next
            # item's bounds is not ordered after the loop, to wait behind all its transfers
            s = max(s, dma_free)
            if not o.regions:
                dma_free = s + costs.of(o)
        start[id(o)] = s
        # a stride view of a value from outside the body (a carried or loop-invariant tile)
        # moves nothing: what reads it (a load's row offsets) can be issued first
        view_in = o.name in ("tt.expand_dims", "tt.broadcast") and not any(v in producer for v in o.operands)
        finish[id(o)] = s + (0.0 if view_in else costs.of(o))
    return start, finish
