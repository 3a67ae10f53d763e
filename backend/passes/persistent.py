"""Persistent programs (launch option `persistent=True`): at most one program per PE, looping
over the grid's program ids.

A plain launch runs one program per grid point; each pays the PE's job replacement, its
prologue (address arithmetic, loads of tiles that are the same in every program: weights,
biases) and, when its buffers fit local memory only a few times, waits for the program it
replaces. A persistent launch runs P = min(PEs, programs) programs; program p runs the
kernel body for the program ids p, p + P, p + 2P, ... (linear order, x fastest, as Triton
numbers programs), so those costs are paid once per PE and the body's DMA overlaps the
previous id's compute through the loop's multi-buffered tiles.

The rewrite, on the tile IR after pointer analysis:

    prologue: ops that do not depend on the program id (and loads of tensors the kernel
              never writes), hoisted out of the loop: computed once per PE
    %pe = tt.get_program_id {axis = 0}        the PE's program (the launch grid is (P, 1, 1))
    %np = tt.get_num_programs {axis = 0}      P
    scf.for %id = %pe to gx * gy * gz step %np:
        tt.get_program_id {axis = k}  ->  the k-th coordinate of %id in (gx, gy, gz)
        ... the rest of the body ...

`tt.get_num_programs {axis = k}` becomes the k-th grid extent. The grid (gx, gy, gz) becomes
three hidden i32 parameters (PERSISTENT_PARAMS) that the driver appends at launch, when it
also replaces the grid by (P, 1, 1) (backend/driver.py).
"""
from __future__ import annotations

from backend.tile_ir import Function, Op, Region, Type, UnsupportedError, Value, reads, walk

# hidden kernel parameters holding the launch grid; the driver appends their values
PERSISTENT_PARAMS = ("mtia_grid_x", "mtia_grid_y", "mtia_grid_z")

_SIDE_EFFECTS = frozenset({"mtia.dma_store", "mtia.scatter", "tt.store", "tt.atomic_rmw", "tt.atomic_cas",
                           "tt.print", "tt.assert", "tt.return"})
_LOADS = frozenset({"mtia.dma_load", "mtia.gather", "tt.load"})
_PID_OPS = frozenset({"tt.get_program_id"})


def _written_bases(fn: Function) -> set[str] | None:
    """Base arguments the kernel stores to; None when a store's target is not a known base
    (scalar path or atomics), so no load may be hoisted past it."""
    out: set[str] = set()
    for op in walk(fn.body):
        if op.name in ("mtia.dma_store", "mtia.scatter"):
            out.add(op.attrs["_desc"]["base"])
        elif op.name in ("tt.store", "tt.atomic_rmw", "tt.atomic_cas"):
            return None
    return out


def _hoistable(op: Op, variant: set, written: set[str] | None) -> bool:
    """An op computes the same value for every program id of the PE: it reads nothing that
    depends on the program id and has no side effect (nested regions included)."""
    inner = [op] + [o for r in op.regions for o in walk(r)]
    for o in inner:
        if o.name in _SIDE_EFFECTS or o.name in _PID_OPS:
            return False
        if o.name in _LOADS:
            if o.name == "tt.load" or written is None:
                return False  # the address is not a known base: it may alias a store
            if o.attrs["_desc"]["base"] in written:
                return False
    return not any(v in variant for v in reads(op))


def _partition(ops: list[Op], written: set[str] | None) -> tuple[list[Op], list[Op]]:
    """(ops hoisted before the loop over program ids, ops left in it). Values that change from
    one program id to the next: the program id and everything computed from it, plus the
    results of every op left in the loop."""
    variant: set[Value] = set()
    prologue: list[Op] = []
    loop_ops: list[Op] = []
    for op in ops:
        if _hoistable(op, variant, written):
            prologue.append(op)
        else:
            loop_ops.append(op)
            variant.update(op.results)
            for r in op.regions:
                for inner in walk(r):
                    variant.update(inner.results)
    return prologue, loop_ops


def hoisted_loads(fn: Function) -> tuple[int, int, bool]:
    """What the persistent rewrite would hoist out of the loop over program ids: (bytes of the
    hoisted loads: tensors the kernel never writes, at addresses that do not depend on the
    program id, such as a norm's weight and bias; bytes of all the program's loads, each load
    counted once; whether a tensor is loaded by more than one of the loads left in the loop,
    a program that streams its data again, as a looped reduction's second pass)."""
    def loads(ops: list[Op]) -> list[Op]:
        return [o for o in walk(Region([], ops)) if o.name in ("mtia.dma_load", "mtia.gather") and o.results]
    prologue, loop_ops = _partition(fn.body.ops, _written_bases(fn))
    hoisted = sum(o.results[0].type.nbytes for o in loads(prologue))
    streamed = loads(loop_ops)
    streamed_bases = [o.attrs["_desc"]["base"] for o in streamed]
    total = hoisted + sum(o.results[0].type.nbytes for o in streamed)
    return hoisted, total, len(streamed_bases) != len(set(streamed_bases))


def run(fn: Function, prefetch: bool = True) -> None:
    """Rewrite `fn` in place into its persistent form (see the module docstring); with
    `prefetch`, the loop's loads of the next program id are issued before this id's compute."""
    ops = fn.body.ops
    ret = ops[-1] if ops and ops[-1].name == "tt.return" else None
    if ret is not None and ret.operands:
        raise UnsupportedError(f"kernel '{fn.name}': persistent=True needs a kernel without results")
    body_ops = ops[:-1] if ret is not None else list(ops)
    for op in walk(Region([], body_ops)):
        if op.name == "tt.return":
            raise UnsupportedError(f"kernel '{fn.name}' at {op.loc}: persistent=True cannot run a kernel "
                                   "that returns early")
    for name in PERSISTENT_PARAMS:
        if name in fn.arg_names:
            raise UnsupportedError(f"kernel '{fn.name}': argument name '{name}' is reserved by persistent=True")

    written = _written_bases(fn)
    prologue, loop_ops = _partition(body_ops, written)

    i32 = Type("i32")
    grid = [Value(i32, f"%{n}") for n in PERSISTENT_PARAMS]
    fn.args.extend(grid)
    fn.arg_names.extend(PERSISTENT_PARAMS)
    loc = body_ops[0].loc if body_ops else ""

    def mk(name: str, operands: list[Value], attrs: dict | None = None, out: Value | None = None) -> Op:
        return Op(name, operands, [out if out is not None else Value(i32)], attrs or {}, [], loc)

    pe = mk("tt.get_program_id", [], {"axis": 0})
    npe = mk("tt.get_num_programs", [], {"axis": 0})
    gxy = mk("arith.muli", [grid[0], grid[1]])
    total = mk("arith.muli", [gxy.result, grid[2]])
    iv = Value(i32)
    prologue = _rewrite_ids(prologue, iv, grid, gxy.result)
    loop_ops = _rewrite_ids(loop_ops, iv, grid, gxy.result)
    loop = Op("scf.for", [pe.result, total.result, npe.result], [], {},
              [Region([iv], loop_ops + [Op("scf.yield", [], [], {}, [], loc)])], loc)
    fn.body.ops = prologue + [pe, npe, gxy, total, loop] + ([ret] if ret is not None else [])
    if prefetch:
        _prefetch(fn.body, loop, written)


def _rewrite_ids(ops: list[Op], iv: Value, grid: list[Value], gxy: Value) -> list[Op]:
    """Replace program-id and grid-size queries in `ops` (and their regions) by arithmetic on
    the loop's program id `iv` and the hidden grid parameters. The op computing the answer
    keeps the query's result value, so descriptors that name it stay valid."""
    i32 = Type("i32")
    out: list[Op] = []
    for o in ops:
        for r in o.regions:
            r.ops = _rewrite_ids(r.ops, iv, grid, gxy)
        if o.name == "tt.get_program_id":
            axis = o.attrs["axis"]
            if axis == 0:      # id % gx
                out.append(Op("arith.remsi", [iv, grid[0]], o.results, {}, [], o.loc))
            elif axis == 1:    # (id / gx) % gy
                q = Value(i32)
                out.append(Op("arith.divsi", [iv, grid[0]], [q], {}, [], o.loc))
                out.append(Op("arith.remsi", [q, grid[1]], o.results, {}, [], o.loc))
            else:              # id / (gx * gy)
                out.append(Op("arith.divsi", [iv, gxy], o.results, {}, [], o.loc))
        elif o.name == "tt.get_num_programs":
            zero = Value(i32)
            out.append(Op("arith.constant", [], [zero], {"value": 0}, [], o.loc))
            out.append(Op("arith.addi", [grid[o.attrs["axis"]], zero], o.results, {}, [], o.loc))
        else:
            out.append(o)
    return out


def _prefetch(parent: Region, loop: Op, written: set[str] | None) -> bool:
    """Issue the loads of the next program id at the top of the loop body, before this id's
    compute, carrying the loaded tiles in two-instance rings (the rotation of passes/rotate.py,
    applied to the loads of tensors the kernel never writes, so an early load reads the same
    bytes). Without it, the command processor reaches the next id's loads only after issuing
    this id's compute, which waits for this id's data: the DMA engine idles for a latency and
    the first compute step of every id."""
    from backend.passes.rotate import _clone, _rename  # the rotation's cloning rules (descriptors renamed)
    from backend.passes.structure import _fmt
    if written is None:
        return False
    body = loop.regions[0]
    iv = body.args[0]
    producer = {r: op for op in body.ops for r in op.results}
    stage_ids: set[int] = set()
    loads: list[Op] = []
    for op in body.ops:
        if op.name not in ("mtia.dma_load", "mtia.gather") or op.attrs["_desc"]["base"] in written:
            continue
        keep: set[int] = set()
        stack, ok = [op], True
        while stack and ok:
            o = stack.pop()
            if id(o) in keep:
                continue
            if o.regions or o.name in _SIDE_EFFECTS or o.name == "tt.load" or \
                    o.name in _LOADS and o.attrs["_desc"]["base"] in written:
                ok = False
            keep.add(id(o))
            stack.extend(producer[v] for v in reads(o) if v in producer)
        if ok:
            stage_ids |= keep
            loads.append(op)
    if not loads:
        return False
    stage = [o for o in body.ops if id(o) in stage_ids]
    lb, ub, step = loop.operands[:3]
    loc = loads[0].loc
    i1 = Type("i1")

    def guarded(cond: Value, at: Value, others: list[Value] | None) -> tuple[Op, list[Value]]:
        vmap = {iv: at}
        then_ops = _clone(stage, vmap)
        then_ops.append(Op("scf.yield", [vmap[ld.result] for ld in loads], [], {}, [], loc))
        if others is None:
            poisons = [Op("ub.poison", [], [Value(ld.result.type)], {}, [], loc) for ld in loads]
            else_ops = poisons + [Op("scf.yield", [p.result for p in poisons], [], {}, [], loc)]
        else:
            else_ops = [Op("scf.yield", list(others), [], {}, [], loc)]
        res = [Value(ld.result.type) for ld in loads]
        return Op("scf.if", [cond], res, {}, [Region([], then_ops), Region([], else_ops)], loc), res

    # before the loop: the first id's tiles (a PE runs at least one id: P <= programs)
    first = Op("arith.cmpi", [lb, ub], [Value(i1)], {"pred": "slt"}, [], loc)
    pro, firsts = guarded(first.result, lb, None)
    at = parent.ops.index(loop)
    parent.ops[at:at] = [first, pro]
    # in the body: the next id's tiles first, then this id's work on the carried ones
    cur = [Value(ld.result.type) for ld in loads]
    swap = {ld.result: c for ld, c in zip(loads, cur)}
    nxt_iv = Op("arith.addi", [iv, step], [Value(iv.type)], {}, [], loc)
    more = Op("arith.cmpi", [nxt_iv.result, ub], [Value(i1)], {"pred": "slt"}, [], loc)
    nxt, nexts = guarded(more.result, nxt_iv.result, cur)
    rest = [o for o in body.ops if o not in loads]
    names = {a.name: b.name for a, b in swap.items()}
    for op in rest:
        for o in [op] + [x for r in op.regions for x in walk(r)]:
            o.operands[:] = [swap.get(v, v) for v in o.operands]
            if "_desc" in o.attrs:  # a descriptor names its operands (a store of a loaded tile)
                o.attrs["_desc"] = _rename(o.attrs["_desc"], names)
                o.attrs["desc"] = _fmt(o.attrs["_desc"])
    body.ops = [nxt_iv, more, nxt] + rest
    y = body.ops[-1]
    assert y.name == "scf.yield", y.name
    y.operands.extend(nexts)
    body.args.extend(cur)
    loop.operands.extend(firsts)
    loop.results.extend(Value(ld.result.type) for ld in loads)
    loop.attrs["_ring"] = tuple(cur)
    loop.attrs["prefetch"] = len(loads)
    return True


# language extensions (backend/language/mtia.py) that ask which PE runs the program: a kernel
# calling them is a PE-grid kernel and is compiled persistent whatever its launch options say
PE_QUERIES = frozenset({"mtia.ext.pe_id", "mtia.ext.num_pes"})


def asks_for_pe(fn: Function) -> bool:
    return any(op.name == "tt.extern_elementwise" and op.attrs.get("symbol") in PE_QUERIES
               for op in walk(fn.body))
