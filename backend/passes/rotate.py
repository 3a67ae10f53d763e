"""Software pipelining of loop bodies whose first GEMM does not depend on the loop's state.

In a flash-attention KV loop the body is  S = Q K_j^T  (DMA, MLU transpose, DPE), then the
online softmax of S (RE, SIMD, SFU), then  O += P V_j  (DPE). Each engine runs its queue in
program order, so the DPE idles while the softmax of block j runs, and SIMD idles while
the DPE computes. Rotating the loop issues the next block's QK^T before this block's softmax:

    S_0 = stage0(lb)                          if lb < ub
    for iv in range(lb, ub, step)  carrying (state..., S_cur):
        S_next = stage0(iv + step)            if iv + step < ub   (else: S_cur, never read)
        state  = rest(state, S_cur)
        yield state..., S_next

stage0 is the backward slice of the GEMM inside the body: address arithmetic, the loads it
reads and the dot itself. It is chosen only when it is free of the loop's carried values and
the body has no stores (so a load issued one iteration early reads the same bytes). The
guard makes the rotated loop perform exactly the loads and GEMMs of the original one.

S_cur and S_next are both live while the softmax of block j runs, so the allocator gives the
carried value a two-instance ring (iteration j reads instance j mod 2 and writes the other):
modulo variable expansion. The loop records which carried values form rings in `_ring`.
"""
from __future__ import annotations

from backend.passes.dce import EFFECTS as _EFFECTS  # ops that forbid issuing a load early
from backend.tile_ir import Function, Op, Region, Type, Value, reads, regions, walk

_PURE_WITH_REGIONS = {"tt.reduce", "tt.scan"}


def run(fn: Function) -> int:
    """Rotate every eligible loop in place; returns how many were rotated."""
    loops = [(region, op) for region in regions(fn.body) for op in region.ops if op.name == "scf.for"]
    return sum(1 for region, op in loops if _rotate(region, op))


def _stage0(body: Region) -> list[Op] | None:
    """The backward slice of the first GEMM that is free of carried values, or None."""
    carried = set(body.args[1:])
    if any(o.name in _EFFECTS or o.name.startswith("scf.") and o.name != "scf.yield" for o in walk(body)):
        return None  # stores could alias the early loads; nested control flow is left alone
    tainted = set(carried)
    producer: dict[Value, Op] = {}
    for op in body.ops:
        if reads(op) & tainted:
            tainted.update(op.results)
        for r in op.results:
            producer[r] = op
    for op in body.ops:
        if op.name != "tt.dot" or op.result in tainted:
            continue
        # it must feed the carried state (otherwise there is nothing to overlap it with)
        if not any(op.result in reads(u) for u in body.ops if u is not op):
            continue
        keep: set[int] = set()
        stack = [op]
        while stack:
            o = stack.pop()
            if id(o) in keep:
                continue
            if o.regions and o.name not in _PURE_WITH_REGIONS:
                return None
            keep.add(id(o))
            stack.extend(producer[v] for v in reads(o) if v in producer)
        return [o for o in body.ops if id(o) in keep]
    return None


def _clone(ops: list[Op], vmap: dict) -> list[Op]:
    out = []
    for op in ops:
        regions = []
        for r in op.regions:
            args = [Value(a.type) for a in r.args]
            vmap.update(zip(r.args, args))
            regions.append(Region(args, _clone(r.ops, vmap)))
        res = [Value(v.type) for v in op.results]
        vmap.update(zip(op.results, res))
        names = {a.name: b.name for a, b in vmap.items()}
        attrs = {k: _rename(v, names) for k, v in op.attrs.items()}
        if "_desc" in attrs:  # DMA descriptors name their operands; keep the printed form in step
            from backend.passes.structure import _fmt
            attrs["desc"] = _fmt(attrs["_desc"])
        out.append(Op(op.name, [vmap.get(v, v) for v in op.operands], res, attrs, regions, op.loc))
    return out


def _rename(x, names: dict):
    """A copy of an attribute with the value names it refers to (DMA descriptors) renamed."""
    if isinstance(x, str):
        return names.get(x, x)
    if isinstance(x, list):
        return [_rename(v, names) for v in x]
    if isinstance(x, tuple):
        return tuple(_rename(v, names) for v in x)
    if isinstance(x, dict):
        return {k: _rename(v, names) for k, v in x.items()}
    return x


def _scalar(name: str, operands: list[Value], ty: Type, loc: str, **attrs) -> Op:
    return Op(name, operands, [Value(ty)], attrs, [], loc)


def _guarded(cond: Value, stage: list[Op], iv_from: Value, iv_to: Value, dot: Op, other: Value | None,
             loc: str) -> tuple[list[Op], Value]:
    """scf.if cond { stage0 at iv_to } else { other (or an undefined tile) }."""
    vmap = {iv_from: iv_to}
    then_ops = _clone(stage, vmap)
    then_ops.append(Op("scf.yield", [vmap[dot.result]], [], {}, [], loc))
    if other is None:
        poison = Op("ub.poison", [], [Value(dot.result.type)], {}, [], loc)
        else_ops = [poison, Op("scf.yield", [poison.result], [], {}, [], loc)]
    else:
        else_ops = [Op("scf.yield", [other], [], {}, [], loc)]
    res = Value(dot.result.type)
    return [Op("scf.if", [cond], [res], {}, [Region([], then_ops), Region([], else_ops)], loc)], res


def _rotate(parent: Region, loop: Op) -> bool:
    body = loop.regions[0]
    stage = _stage0(body)
    if not stage:
        return False
    dot = stage[-1]
    lb, ub, step = loop.operands[:3]
    iv = body.args[0]
    loc = dot.loc
    i1 = Type("i1")
    # prologue: S_0 = stage0(lb) when the loop runs at all
    first = _scalar("arith.cmpi", [lb, ub], i1, loc, pred="slt")
    pro_ops, s0 = _guarded(first.result, stage, iv, lb, dot, None, loc)
    at = parent.ops.index(loop)
    parent.ops[at:at] = [first, *pro_ops]
    # the body: S_next for iv + step first, then the rest reading S_cur
    s_cur = Value(dot.result.type)
    nxt_iv = _scalar("arith.addi", [iv, step], iv.type, loc)
    more = _scalar("arith.cmpi", [nxt_iv.result, ub], i1, loc, pred="slt")
    nxt_ops, s_next = _guarded(more.result, stage, iv, nxt_iv.result, dot, s_cur, loc)
    for op in body.ops:
        op.operands[:] = [s_cur if v is dot.result else v for v in op.operands]
        for r in op.regions:
            for inner in walk(r):
                inner.operands[:] = [s_cur if v is dot.result else v for v in inner.operands]
    body.ops[0:0] = [nxt_iv, more, *nxt_ops]
    y = body.ops[-1]
    assert y.name == "scf.yield", y.name
    y.operands.append(s_next)
    body.args.append(s_cur)
    loop.operands.append(s0)
    loop.results.append(Value(dot.result.type))
    loop.attrs["_ring"] = loop.attrs.get("_ring", ()) + (s_cur,)
    loop.attrs["software_pipelined"] = loop.attrs.get("software_pipelined", 0) + 1
    return True
