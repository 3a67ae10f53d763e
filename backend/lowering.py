"""Level 3: instruction selection, tile IR -> MTIA intrinsics.

One rule per tile-IR op, registered by name (`@rule("arith.addf")`). An op with no rule is
an unsupported construct and is reported with its name and the kernel's source line. Scalar
results go to the scalar engine; tiles go to SIMD, transcendentals to the SFU, reductions to
the reduction engine, shape changes to the memory layout unit, `tl.dot` to the DPE.
"""
from __future__ import annotations

from typing import Callable

from backend.program import ITEMSIZE, SFU_FUNCTIONS, Block, Instr, Program, registers_in
from backend.tile_ir import BINARY_FUNCTIONS as _BINARY
from backend.tile_ir import UNARY_FUNCTIONS as _UNARY
from backend.tile_ir import Function, Op, Region, UnsupportedError, Value

RULES: dict[str, Callable[["Emitter", Op], None]] = {}


def rule(*names: str) -> Callable:
    def deco(fn: Callable) -> Callable:
        for n in names:
            RULES[n] = fn
        return fn
    return deco


class CompileError(UnsupportedError):
    pass


# what a user of an op with no rule can do instead (named in the compile error)
UNSUPPORTED_HINTS = {
    "tt.dot_scaled": "tl.dot_scaled: the DPE has no microscaling (MX) mode for block-scaled operands; "
                     "dequantize them in the kernel (upcast, multiply by 2**(scale - 127) per 32-element "
                     "group along K) and use tl.dot",
}


class Emitter:
    def __init__(self, kernel: str, options: object, fn: Function | None = None):
        self.kernel = kernel
        self.options = options
        self.blocks: list[list[Instr]] = [[]]
        self.force_tile = False  # inside combine regions: scalar-typed ops run on whole tiles
        self.defs: dict[Value, Op] = {}
        self.fma: dict[int, tuple] = {}   # id(addf) -> (a, b, c): contracted a*b + c
        self.fused: set[int] = set()      # ids of mulf ops folded into an fma
        self.scalar_splats: set = set()   # splats whose users read the scalar (see scalar_splats)
        self.scan_totals: dict = {}       # id(scan) -> the sum reduction it also yields (and back)
        self.vector_scalars: set = set()  # scalars computed on SIMD/SFU (see vector_scalars)
        if fn is not None:
            self._analyse(fn)

    def _analyse(self, fn: Function) -> None:
        from backend.tile_ir import walk
        nuses: dict[Value, int] = {}
        for op in walk(fn.body):
            for r in op.results:
                self.defs[r] = op
            for v in op.operands:
                nuses[v] = nuses.get(v, 0) + 1
        self.scalar_splats = scalar_splats(fn)
        self.scan_totals = _scan_totals(fn)
        self.vector_scalars = vector_scalars(fn)
        if not getattr(self.options, "enable_fp_fusion", True):
            return
        # a*b + c -> fma(a, b, c) when the product has no other use (fp contraction, as GPU
        # backends do under enable_fp_fusion): one SIMD pass instead of two
        for op in walk(fn.body):
            if op.name != "arith.addf" or not op.result.type.is_tile:
                continue
            for i in (0, 1):
                m = self.defs.get(op.operands[i])
                if m is not None and m.name == "arith.mulf" and nuses.get(m.result) == 1 \
                        and id(m) not in self.fused:
                    self.fused.add(id(m))
                    self.fma[id(op)] = (m.operands[0], m.operands[1], op.operands[1 - i])
                    break

    def operand(self, v: Value):
        """A register, or the number itself when v is a splat constant tile: SIMD instructions
        take a scalar immediate, so no constant tile is built in local memory. A splat of a
        scalar register is read as that register (the SIMD engine broadcasts it)."""
        d = self.defs.get(v)
        if d is not None and d.name == "arith.constant" and v.type.is_tile and len(d.attrs.get("values", [])) == 1:
            return d.attrs["values"][0]
        if v in self.scalar_splats:
            return d.operands[0].name
        return v.name

    def emit(self, op: str, dst: list[str], args: dict, attrs: dict | None = None, loc: str = "",
             bodies: list[Block] | None = None) -> Instr:
        ins = Instr(op, dst, args, attrs or {}, loc, bodies or [])
        ins.waits = sorted(set(registers_in(list(args.values()))))
        self.blocks[-1].append(ins)
        return ins

    def error(self, op: Op, msg: str) -> CompileError:
        return CompileError(f"kernel '{self.kernel}' at {op.loc or '<unknown location>'}: {msg}")

    def lower_region(self, region: Region, terminators: tuple[str, ...]) -> Block:
        self.blocks.append([])
        results: list = []
        for op in region.ops:
            if op.name in terminators:
                results = [reg(v) for v in op.operands]
                continue
            self.lower_op(op)
        instrs = self.blocks.pop()
        return Block([reg(a) for a in region.args], instrs, results)

    def lower_op(self, op: Op) -> None:
        fn = RULES.get(op.name)
        if fn is None:
            hint = UNSUPPORTED_HINTS.get(op.name)
            raise self.error(op, f"operation '{op.name}' is not supported by the MTIA backend"
                             + (f" ({hint})" if hint else ""))
        fn(self, op)

    def tile(self, v: Value) -> bool:
        """Whether v's op runs on the vector engines: tiles, and the scalars computed from
        tile results (vector_scalars), which the control core would otherwise wait for."""
        return self.force_tile or v.type.is_tile or v in self.vector_scalars


def reg(v: Value) -> str:
    return v.name


# ----------------------------------------------------------------------------- elementwise
# (the op -> ISA function tables _BINARY / _UNARY are the tile IR's: backend/tile_ir.py)

# ops whose splat-constant operands become immediates (Emitter.operand); the PE level gives
# such constants no buffer
IMMEDIATE_USERS = frozenset(_BINARY) | {"arith.cmpi", "arith.cmpf", "arith.select"}


def _splat_const(op: Op | None) -> bool:
    return op is not None and (op.name == "tt.splat" or op.name == "arith.constant"
                               and op.results[0].type.is_tile and len(op.attrs.get("values", [])) == 1)


def scalar_splats(fn: Function) -> set:
    """Splats of a scalar register whose every user is an elementwise op (IMMEDIATE_USERS) with
    another operand that stays a tile: those users read the scalar itself, so the splat is
    never built (no SIMD pass, no buffer)."""
    from backend.tile_ir import walk
    defs: dict[Value, Op] = {}
    users: dict[Value, list[Op]] = {}
    for op in walk(fn.body):
        for r in op.results:
            defs[r] = op
        for v in op.operands:
            users.setdefault(v, []).append(op)
    out = set()
    for v, d in defs.items():
        if d.name != "tt.splat" or not v.type.is_tile or v.type.is_ptr or d.operands[0].type.is_tile:
            continue
        us = users.get(v, [])
        if us and all(u.name in IMMEDIATE_USERS and u.results and u.results[0].type.is_tile
                      and any(o.type.is_tile and not _splat_const(defs.get(o)) for o in u.operands if o is not v)
                      for u in us):
            out.add(v)
    return out


@rule(*_BINARY)
def _binary(e: Emitter, op: Op) -> None:
    fn = _BINARY[op.name]
    out = op.result
    if id(op) in e.fused:
        return  # folded into the fma of its single user
    if id(op) in e.fma:
        a, b, c = e.fma[id(op)]
        e.emit("simd.fma", [reg(out)], {"a": e.operand(a), "b": e.operand(b), "c": e.operand(c)},
               {"dtype": out.type.elem}, op.loc)
        return
    if e.tile(out):
        engine = "sfu" if fn in SFU_FUNCTIONS else "simd"
        e.emit(f"{engine}.binary", [reg(out)], {"a": e.operand(op.operands[0]), "b": e.operand(op.operands[1])},
               {"fn": fn, "dtype": out.type.elem}, op.loc)
    else:
        e.emit("scalar.binary", [reg(out)], {"a": reg(op.operands[0]), "b": reg(op.operands[1])},
               {"fn": fn, "dtype": out.type.elem}, op.loc)


@rule("arith.ceildivsi", "arith.floordivsi", "arith.ceildivui")
def _divround(e: Emitter, op: Op) -> None:
    # rare after canonicalisation; expressed through truncating division plus a correction
    a, b = reg(op.operands[0]), reg(op.operands[1])
    out = op.result
    dt = out.type.elem
    pre = "simd" if e.tile(out) else "scalar"
    q, r, z, adj = (f"{reg(out)}.{s}" for s in ("q", "r", "z", "adj"))
    e.emit(f"{pre}.binary", [q], {"a": a, "b": b}, {"fn": "sdiv", "dtype": dt}, op.loc)
    e.emit(f"{pre}.binary", [r], {"a": a, "b": b}, {"fn": "srem", "dtype": dt}, op.loc)
    e.emit(f"{pre}.cmp", [z], {"a": r, "b": 0}, {"pred": "ne", "dtype": dt}, op.loc)
    if op.name == "arith.floordivsi":
        # q - 1 when r != 0 and signs of r and b differ
        sx = f"{reg(out)}.sx"
        e.emit(f"{pre}.binary", [sx], {"a": r, "b": b}, {"fn": "xor", "dtype": dt}, op.loc)
        neg = f"{reg(out)}.neg"
        e.emit(f"{pre}.cmp", [neg], {"a": sx, "b": 0}, {"pred": "slt", "dtype": dt}, op.loc)
        both = f"{reg(out)}.both"
        e.emit(f"{pre}.binary", [both], {"a": z, "b": neg}, {"fn": "and", "dtype": "i1"}, op.loc)
        e.emit(f"{pre}.select", [adj], {"cond": both, "a": 1, "b": 0}, {"dtype": dt}, op.loc)
        e.emit(f"{pre}.binary", [reg(out)], {"a": q, "b": adj}, {"fn": "sub", "dtype": dt}, op.loc)
    else:
        e.emit(f"{pre}.select", [adj], {"cond": z, "a": 1, "b": 0}, {"dtype": dt}, op.loc)
        e.emit(f"{pre}.binary", [reg(out)], {"a": q, "b": adj}, {"fn": "add", "dtype": dt}, op.loc)


@rule(*_UNARY)
def _unary(e: Emitter, op: Op) -> None:
    fn = _UNARY[op.name]
    out = op.result
    attrs = {"fn": fn, "dtype": op.operands[0].type.elem}
    if out.type.elem != op.operands[0].type.elem:
        attrs["out_dtype"] = out.type.elem
    if e.tile(out):
        engine = "sfu" if fn in SFU_FUNCTIONS else "simd"
        e.emit(f"{engine}.unary", [reg(out)], {"a": reg(op.operands[0])}, attrs, op.loc)
    else:
        e.emit("scalar.unary", [reg(out)], {"a": reg(op.operands[0])}, attrs, op.loc)


@rule("math.fma")
def _fma(e: Emitter, op: Op) -> None:
    out = op.result
    pre = "simd" if e.tile(out) else "scalar"
    a, b, c = (reg(v) for v in op.operands)
    e.emit(f"{pre}.fma", [reg(out)], {"a": a, "b": b, "c": c}, {"dtype": out.type.elem}, op.loc)


@rule("tt.clampf")
def _clamp(e: Emitter, op: Op) -> None:
    x, lo, hi = (reg(v) for v in op.operands)
    e.emit("simd.clamp", [reg(op.result)], {"x": x, "lo": lo, "hi": hi},
           {"dtype": op.result.type.elem, "propagate_nan": op.attrs.get("propagate_nan", False)}, op.loc)


@rule("arith.cmpi", "arith.cmpf")
def _cmp(e: Emitter, op: Op) -> None:
    pred = op.attrs["pred"]
    if pred in ("false", "true"):
        raise e.error(op, f"comparison predicate '{pred}' is not supported")
    pre = "simd" if e.tile(op.result) else "scalar"
    e.emit(f"{pre}.cmp", [reg(op.result)], {"a": e.operand(op.operands[0]), "b": e.operand(op.operands[1])},
           {"pred": pred, "dtype": op.operands[0].type.elem}, op.loc)


@rule("arith.select")
def _select(e: Emitter, op: Op) -> None:
    c, a, b = (e.operand(v) for v in op.operands)
    pre = "simd" if e.tile(op.result) else "scalar"
    e.emit(f"{pre}.select", [reg(op.result)], {"cond": c, "a": a, "b": b},
           {"dtype": op.result.type.elem}, op.loc)


_CASTS = {
    "arith.extsi": "extsi", "arith.extui": "extui", "arith.trunci": "trunci", "arith.sitofp": "sitofp",
    "arith.uitofp": "uitofp", "arith.fptosi": "fptosi", "arith.fptoui": "fptoui", "arith.extf": "extf",
    "arith.truncf": "truncf", "arith.bitcast": "bitcast", "tt.fp_to_fp": "fpconv", "tt.bitcast": "bitcast",
    "arith.index_cast": "extsi", "arith.index_castui": "extui",
}


@rule(*_CASTS)
def _cast(e: Emitter, op: Op) -> None:
    src, out = op.operands[0], op.result
    kind = _CASTS[op.name]
    fr, to = src.type.elem, out.type.elem
    if fr in ("ptr",) and to in ("ptr",):
        e.emit("scalar.select" if not e.tile(out) else "simd.select", [reg(out)],
               {"cond": True, "a": reg(src), "b": reg(src)}, {"dtype": "ptr"}, op.loc)
        return
    if kind == "extsi" and ITEMSIZE.get(fr, 8) > ITEMSIZE.get(to, 8):
        kind = "trunci"
    pre = "simd" if e.tile(out) else "scalar"
    e.emit(f"{pre}.cast", [reg(out)], {"a": reg(src)}, {"kind": kind, "from": fr, "to": to}, op.loc)


@rule("tt.int_to_ptr", "tt.ptr_to_int")
def _ptrint(e: Emitter, op: Op) -> None:
    pre = "simd" if e.tile(op.result) else "scalar"
    kind = "extsi"
    fr = "ptr" if op.name == "tt.ptr_to_int" else op.operands[0].type.elem
    to = op.result.type.elem if op.name == "tt.ptr_to_int" else "ptr"
    e.emit(f"{pre}.cast", [reg(op.result)], {"a": reg(op.operands[0])}, {"kind": kind, "from": fr, "to": to},
           op.loc)


# ----------------------------------------------------------------------------- values

@rule("arith.constant")
def _const(e: Emitter, op: Op) -> None:
    out = op.result
    if out.type.is_tile:
        e.emit("simd.const", [reg(out)], {}, {"values": op.attrs["values"], "shape": list(out.type.shape),
                                              "dtype": out.type.elem}, op.loc)
    else:
        e.emit("scalar.const", [reg(out)], {}, {"value": op.attrs["value"], "dtype": out.type.elem}, op.loc)


@rule("ub.poison")
def _poison(e: Emitter, op: Op) -> None:
    out = op.result
    if out.type.is_tile:
        e.emit("simd.const", [reg(out)], {}, {"values": [0], "shape": list(out.type.shape),
                                              "dtype": out.type.elem}, op.loc)
    else:
        e.emit("scalar.const", [reg(out)], {}, {"value": 0, "dtype": out.type.elem}, op.loc)


@rule("tt.get_program_id")
def _pid(e: Emitter, op: Op) -> None:
    e.emit("scalar.pid", [reg(op.result)], {}, {"axis": op.attrs["axis"]}, op.loc)


@rule("tt.get_num_programs")
def _nprog(e: Emitter, op: Op) -> None:
    e.emit("scalar.nprog", [reg(op.result)], {}, {"axis": op.attrs["axis"]}, op.loc)


@rule("tt.make_range")
def _range(e: Emitter, op: Op) -> None:
    e.emit("simd.iota", [reg(op.result)], {}, {"start": op.attrs["start"], "end": op.attrs["end"]}, op.loc)


@rule("tt.splat")
def _splat(e: Emitter, op: Op) -> None:
    out = op.result
    if out in e.scalar_splats:
        return  # its users read the scalar register
    e.emit("simd.splat", [reg(out)], {"a": reg(op.operands[0])},
           {"shape": list(out.type.shape), "dtype": "ptr" if out.type.is_ptr else out.type.elem}, op.loc)


@rule("tt.addptr")
def _addptr(e: Emitter, op: Op) -> None:
    out = op.result
    elsize = ITEMSIZE[out.type.pointee.elem] if out.type.pointee.elem != "blockptr" else 8
    pre = "simd" if out.type.is_tile else "scalar"
    e.emit(f"{pre}.addptr", [reg(out)], {"base": reg(op.operands[0]), "offset": reg(op.operands[1])},
           {"elsize": elsize}, op.loc)


# ----------------------------------------------------------------------------- layout

@rule("tt.broadcast")
def _broadcast(e: Emitter, op: Op) -> None:
    # a stride-0 view: the engines that read it address the source with zero strides
    e.emit("mlu.broadcast", [reg(op.result)], {"a": reg(op.operands[0])},
           {"shape": list(op.result.type.shape), "view": op.operands[0].type.is_tile}, op.loc)


@rule("tt.expand_dims")
def _expand(e: Emitter, op: Op) -> None:
    e.emit("mlu.reshape", [reg(op.result)], {"a": reg(op.operands[0])},
           {"shape": list(op.result.type.shape), "view": True}, op.loc)


def _from_broadcast(e: Emitter, v: object) -> bool:
    """True when tile `v` is (a reshape of) a broadcast or splat: a stride-0 view, not dense."""
    op = e.defs.get(v)
    for _ in range(32):
        if op is None or op.name not in ("tt.reshape", "tt.expand_dims", "tt.broadcast", "tt.splat"):
            return False
        if op.name in ("tt.broadcast", "tt.splat"):
            return True
        op = e.defs.get(op.operands[0])
    return True


@rule("tt.reshape")
def _reshape(e: Emitter, op: Op) -> None:
    # A tile in local memory is dense and row-major, and a reshape keeps the row-major element
    # order (with allow_reorder any order will do, this one included): no data moves, as with
    # the expert library's reshape. A stride-0 view (a broadcast) is not dense: merging or
    # splitting its dims materialises it; changing only unit dims never moves data.
    src, dst = op.operands[0].type.shape, op.result.type.shape
    view = [s for s in src if s != 1] == [s for s in dst if s != 1] or not _from_broadcast(e, op.operands[0])
    e.emit("mlu.reshape", [reg(op.result)], {"a": reg(op.operands[0])},
           {"shape": list(dst), "view": view}, op.loc)


@rule("tt.trans")
def _trans(e: Emitter, op: Op) -> None:
    e.emit("mlu.permute", [reg(op.result)], {"a": reg(op.operands[0])}, {"order": op.attrs["order"]}, op.loc)


@rule("tt.join")
def _join(e: Emitter, op: Op) -> None:
    e.emit("mlu.join", [reg(op.result)], {"a": reg(op.operands[0]), "b": reg(op.operands[1])}, {}, op.loc)


@rule("tt.split")
def _split(e: Emitter, op: Op) -> None:
    e.emit("mlu.split", [reg(r) for r in op.results], {"a": reg(op.operands[0])}, {}, op.loc)


@rule("tt.cat")
def _cat(e: Emitter, op: Op) -> None:
    e.emit("mlu.cat", [reg(op.result)], {"a": reg(op.operands[0]), "b": reg(op.operands[1])}, {}, op.loc)


@rule("tt.gather")
def _gather(e: Emitter, op: Op) -> None:
    e.emit("mlu.gather", [reg(op.result)], {"src": reg(op.operands[0]), "index": reg(op.operands[1])},
           {"axis": op.attrs["axis"]}, op.loc)


# ----------------------------------------------------------------------------- compute engines

@rule("tt.dot")
def _dot(e: Emitter, op: Op) -> None:
    a, b, c = op.operands
    # FP32 inputs: the vector unit's broadcast FMAs when they are faster than the DPE's FP32 rate
    engine = "simd" if _fp32_dot_on_simd(e, op) else "dpe"
    # a splat-constant accumulator (zeros) is an immediate: the engine starts from it, no tile
    e.emit(f"{engine}.matmul", [reg(op.result)], {"a": reg(a), "b": reg(b), "acc": e.operand(c)},
           {"in_dtype": a.type.elem, "out_dtype": op.result.type.elem,
            "input_precision": op.attrs.get("input_precision", 0)}, op.loc)


def _fp32_dot_on_simd(e: Emitter, op: Op) -> bool:
    """True when an FP32 x FP32 dot costs less as k SIMD passes over [m, n] than on the DPE
    (padded to its tiles, at its FP32 rate): the timing model's cost rules price both."""
    a, b = op.operands[0].type, op.operands[1].type
    if a.elem != "f32" or b.elem != "f32":
        return False
    from backend.configs import load_chip
    from backend.sim.cost import K_DPE, K_SIMD, ChipModel, matmul_inputs, simd_matmul_inputs
    cm = ChipModel(load_chip(getattr(e.options, "arch", None)))
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.numel // (m * k)
    return cm.cycles(K_SIMD, simd_matmul_inputs(batch, m, n, k)) < cm.cycles(K_DPE, matmul_inputs(batch, m, n, k, "f32"))


_BUILTIN_COMBINE = {
    "arith.addf": "sum", "arith.addi": "sum", "arith.maxnumf": "max", "arith.maximumf": "max",
    "arith.maxsi": "max", "arith.minnumf": "min", "arith.minimumf": "min", "arith.minsi": "min",
    "arith.xori": "xor",
}


def _builtin_kind(region: Region) -> str | None:
    """sum/max/min when the combine region is one associative op of its two arguments."""
    ops = [o for o in region.ops]
    if len(ops) != 2 or len(region.args) != 2:
        return None
    body, ret = ops
    if ret.operands != [body.results[0]] if body.results else True:
        return None
    if set(body.operands) != set(region.args):
        return None
    return _BUILTIN_COMBINE.get(body.name)


def _combine_block(e: Emitter, region: Region, terminator: str) -> Block:
    saved = e.force_tile
    e.force_tile = True
    try:
        return e.lower_region(region, (terminator,))
    finally:
        e.force_tile = saved


def vector_scalars(fn: Function) -> set:
    """Scalars derived from a reduction's result (a running max or sum carried through a loop,
    its exp, ...). Computed on the control core they would stall instruction issue until the
    reduction engine is done, holding back the next iteration's DMA; as one-element SIMD/SFU
    work the control core runs ahead. A control-core consumer (an address, a loop bound) still
    waits for them, at that point only."""
    from backend.tile_ir import walk
    elementwise = set(_BINARY) | set(_UNARY) | set(_CASTS) | {"arith.cmpi", "arith.cmpf", "arith.select"}
    out: set = set()

    def scalar(v: Value) -> bool:
        return not v.type.is_tile and not v.type.is_ptr and v.type.elem not in ("blockptr", "tensordesc")
    changed = True
    while changed:
        changed = False
        for op in walk(fn.body):
            new: list = []
            if op.name == "tt.reduce":
                new = [r for r in op.results if scalar(r)]
            elif op.name in elementwise and any(v in out for v in op.operands):
                new = [r for r in op.results if scalar(r)]
            elif op.name == "scf.for":
                body = op.regions[0]
                y = body.ops[-1] if body.ops and body.ops[-1].name == "scf.yield" else None
                for j, res in enumerate(op.results):
                    if op.operands[3 + j] in out or (y is not None and y.operands[j] in out):
                        new += [x for x in (res, body.args[1 + j]) if scalar(x)]
            elif op.name == "scf.if":
                for j, res in enumerate(op.results):
                    if any(r.ops and r.ops[-1].name == "scf.yield" and j < len(r.ops[-1].operands)
                           and r.ops[-1].operands[j] in out for r in op.regions):
                        new += [res] if scalar(res) else []
            for r in new:
                if r not in out:
                    out.add(r)
                    changed = True
    return out


def _scan_totals(fn: Function) -> dict:
    """Integer sum reductions of a tensor that is also cumsum'ed along the same axis, later in
    the same region: the total is the scan's last element, so the reduction engine passes over
    the data once. {id(scan): reduce result, id(reduce): scan} (integers only: exact in any
    order; a float total would change rounding)."""
    out: dict = {}
    from backend.tile_ir import regions
    for region in regions(fn.body):
        scans = {}
        for op in region.ops:
            if op.name == "tt.scan" and len(op.operands) == 1 and not op.attrs.get("reverse", False) \
                    and _builtin_kind(op.regions[0]) == "sum" and op.operands[0].type.elem.startswith(("i", "u")):
                scans[(op.operands[0], op.attrs["axis"])] = op
            elif op.name == "tt.reduce" and len(op.operands) == 1 and _builtin_kind(op.regions[0]) == "sum":
                s = scans.get((op.operands[0], op.attrs["axis"]))
                if s is not None and id(s) not in out:
                    out[id(s)] = op.results[0]
                    out[id(op)] = s
    return out


@rule("tt.reduce")
def _reduce(e: Emitter, op: Op) -> None:
    if id(op) in e.scan_totals:
        return  # the cumsum of the same tensor yields this total (_scan_totals)
    region = op.regions[0]
    kind = _builtin_kind(region) if len(op.operands) == 1 else None
    attrs = {"axis": op.attrs["axis"]}
    bodies = []
    if kind:
        attrs["kind"] = kind
    else:
        bodies = [_combine_block(e, region, "tt.reduce.return")]
    # without the reduction engine a reduction is a tree of SIMD passes
    name = "re.reduce" if getattr(e.options, "use_reduction_engine", True) else "simd.reduce"
    e.emit(name, [reg(r) for r in op.results], {"srcs": [reg(v) for v in op.operands]}, attrs, op.loc, bodies)


@rule("tt.scan")
def _scan(e: Emitter, op: Op) -> None:
    region = op.regions[0]
    kind = _builtin_kind(region) if len(op.operands) == 1 else None
    attrs = {"axis": op.attrs["axis"], "reverse": op.attrs.get("reverse", False)}
    bodies = []
    if kind == "sum":
        attrs["kind"] = "sum"
    else:
        bodies = [_combine_block(e, region, "tt.scan.return")]
    dst = [reg(r) for r in op.results]
    if id(op) in e.scan_totals:
        dst.append(reg(e.scan_totals[id(op)]))
        attrs["total"] = True
    e.emit("re.scan", dst, {"srcs": [reg(v) for v in op.operands]}, attrs, op.loc, bodies)


@rule("tt.histogram")
def _histogram(e: Emitter, op: Op) -> None:
    args = {"a": reg(op.operands[0]), "mask": reg(op.operands[1]) if len(op.operands) > 1 else None}
    e.emit("re.histogram", [reg(op.result)], args,
           {"bins": op.result.type.shape[0], "dtype": op.result.type.elem}, op.loc)


# ----------------------------------------------------------------------------- memory (unstructured)

def _opt(op: Op, i: int) -> str | None:
    return reg(op.operands[i]) if len(op.operands) > i else None


@rule("tt.load")
def _load(e: Emitter, op: Op) -> None:
    ptr = op.operands[0]
    if ptr.type.elem == "blockptr":
        raise e.error(op, "internal: block-pointer load was not structured by pointer analysis")
    e.emit("scalar.load", [reg(op.result)], {"addr": reg(ptr), "mask": _opt(op, 1), "other": _opt(op, 2)},
           {"dtype": op.result.type.elem}, op.loc)


@rule("tt.store")
def _store(e: Emitter, op: Op) -> None:
    ptr = op.operands[0]
    if ptr.type.elem == "blockptr":
        raise e.error(op, "internal: block-pointer store was not structured by pointer analysis")
    e.emit("scalar.store", [], {"addr": reg(ptr), "value": reg(op.operands[1]), "mask": _opt(op, 2)},
           {"dtype": op.operands[1].type.elem}, op.loc)


_RMW = {"add": "add", "fadd": "fadd", "max": "max", "min": "min", "umax": "umax", "umin": "umin",
        "and": "and", "or": "or", "xor": "xor", "exch": "exch"}


@rule("tt.atomic_rmw")
def _atomic_rmw(e: Emitter, op: Op) -> None:
    kind = op.attrs["kind"]
    if kind not in _RMW:
        raise e.error(op, f"atomic '{kind}' is not supported")
    e.emit("dma_out.atomic", [reg(op.result)] if op.results else [],
           {"addr": reg(op.operands[0]), "value": reg(op.operands[1]), "mask": _opt(op, 2)},
           {"kind": _RMW[kind], "dtype": op.operands[1].type.elem}, op.loc)


@rule("tt.atomic_cas")
def _atomic_cas(e: Emitter, op: Op) -> None:
    e.emit("dma_out.atomic", [reg(op.result)],
           {"addr": reg(op.operands[0]), "cmp": reg(op.operands[1]), "value": reg(op.operands[2]), "mask": None},
           {"kind": "cas", "dtype": op.operands[2].type.elem}, op.loc)


# structured DMA ops produced by the pointer/mask analysis (backend/passes/structure.py)

def _desc_args(op: Op) -> dict:
    d = op.attrs["_desc"]
    return {"base": d["base"], "offset": d["offset"], "strides": d["strides"], "lo": d["lo"], "hi": d["hi"]}


@rule("mtia.dma_load")
def _dma_load(e: Emitter, op: Op) -> None:
    args = _desc_args(op)
    args["other"] = op.attrs["_desc"].get("other")
    args["mask"] = op.attrs["_desc"].get("mask")
    attrs = {"shape": list(op.result.type.shape or []), "dtype": op.result.type.elem}
    if op.attrs.get("pe_resident"):
        attrs["pe_resident"] = True
    e.emit("dma_in.load", [reg(op.result)], args, attrs, op.loc)


@rule("mtia.dma_store")
def _dma_store(e: Emitter, op: Op) -> None:
    args = _desc_args(op)
    args["value"] = op.attrs["_desc"]["value"]
    args["mask"] = op.attrs["_desc"].get("mask")
    e.emit("dma_out.store", [], args, {"shape": op.attrs["shape"], "dtype": op.attrs["dtype"]}, op.loc)


def _indexed_args(op: Op) -> tuple[dict, dict]:
    d = op.attrs["_desc"]
    args = {"base": d["base"], "offset": d["offset"], "strides": d["strides"], "resid": d["resid"],
            "mask": d.get("mask")}
    return args, {"views": d["views"], "run": op.attrs.get("run", 1)}


@rule("mtia.gather")
def _dma_gather(e: Emitter, op: Op) -> None:
    args, attrs = _indexed_args(op)
    args["other"] = op.attrs["_desc"].get("other")
    attrs.update(dtype=op.result.type.elem, shape=list(op.result.type.shape))
    e.emit("dma_in.gather", [reg(op.result)], args, attrs, op.loc)


@rule("mtia.scatter")
def _dma_scatter(e: Emitter, op: Op) -> None:
    args, attrs = _indexed_args(op)
    args["value"] = op.attrs["_desc"]["value"]
    attrs.update(dtype=op.attrs["dtype"], shape=op.attrs["shape"])
    e.emit("dma_out.scatter", [], args, attrs, op.loc)


# ----------------------------------------------------------------------------- control flow

@rule("scf.for")
def _for(e: Emitter, op: Op) -> None:
    lb, ub, step, *inits = op.operands
    body = e.lower_region(op.regions[0], ("scf.yield",))
    e.emit("ctl.for", [reg(r) for r in op.results],
           {"lb": reg(lb), "ub": reg(ub), "step": reg(step), "inits": [reg(v) for v in inits]},
           {}, op.loc, [body])


@rule("scf.if")
def _if(e: Emitter, op: Op) -> None:
    then = e.lower_region(op.regions[0], ("scf.yield",))
    els = e.lower_region(op.regions[1], ("scf.yield",)) if len(op.regions) > 1 else Block([], [], [])
    e.emit("ctl.if", [reg(r) for r in op.results], {"cond": reg(op.operands[0])}, {}, op.loc, [then, els])


@rule("scf.while")
def _while(e: Emitter, op: Op) -> None:
    before = e.lower_region(op.regions[0], ("scf.condition",))
    after = e.lower_region(op.regions[1], ("scf.yield",))
    e.emit("ctl.while", [reg(r) for r in op.results], {"inits": [reg(v) for v in op.operands]}, {}, op.loc,
           [before, after])


@rule("tt.assert")
def _assert(e: Emitter, op: Op) -> None:
    e.emit("ctl.assert", [], {"cond": reg(op.operands[0])}, {"message": op.attrs.get("message", "")}, op.loc)


@rule("tt.print")
def _print(e: Emitter, op: Op) -> None:
    e.emit("ctl.print", [], {"values": [reg(v) for v in op.operands]}, {"prefix": op.attrs.get("prefix", "")},
           op.loc)


@rule("tt.return")
def _return(e: Emitter, op: Op) -> None:
    pass


@rule("tt.extern_elementwise")
def _extern(e: Emitter, op: Op) -> None:
    if op.attrs.get("symbol", "").startswith("mtia.ext."):
        from backend.language.mtia import lower_extension  # MTIA language extensions
        lower_extension(e, op)
        return
    from backend.language.libdevice import lower_extern
    lower_extern(e, op)


# ----------------------------------------------------------------------------- driver

def select(fn: Function, options: object, buffers: dict, local_mem_bytes: int, params: list[dict],
           meta: dict) -> Program:
    e = Emitter(fn.name, options, fn)
    body = e.lower_region(fn.body, ("tt.return",))
    _drop_dead_constants(body)
    return Program(fn.name, params, body, buffers, local_mem_bytes, meta)


def _drop_dead_constants(body: Block) -> None:
    """Constants whose every use became an immediate are not built at all."""
    read: set[str] = set()

    def collect(b: Block) -> None:
        read.update(registers_in(b.results))
        for ins in b.instrs:
            read.update(registers_in(list(ins.args.values())))
            for x in ins.bodies:
                collect(x)

    def prune(b: Block) -> None:
        b.instrs = [i for i in b.instrs if not (i.op in ("simd.const", "scalar.const") and i.dst[0] not in read)]
        for ins in b.instrs:
            for x in ins.bodies:
                prune(x)

    collect(body)
    prune(body)

