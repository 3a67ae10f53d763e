"""Level 1: the tile IR, a block-level mirror of TTIR that the backend's passes rewrite.

Values are SSA; types are scalars, tiles (tensors) or pointers; ops keep TTIR's names until a
pass replaces them (memory ops become `mtia.*` DMA ops). Every op carries its source location,
so errors name the kernel's line. `print_function` gives the stage's text form.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from backend.program import ITEMSIZE

_MLIR_DTYPE = {
    "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "f16": "f16", "bf16": "bf16",
    "f32": "f32", "f64": "f64", "f8E4M3FN": "f8e4m3", "f8E5M2": "f8e5m2", "index": "i64",
}


# The elementwise ops of the tile IR and the ISA function each computes (the `fn` attribute of
# the unary / binary instruction it lowers to; backend/program.py's SFU_FUNCTIONS says which run
# on the SFU). Level 3 selects instructions from them (backend/lowering.py); the level-1
# scheduler (backend/passes/schedule.py) reads them to estimate which engine an op will use.
BINARY_FUNCTIONS = {
    "arith.addi": "add", "arith.addf": "add", "arith.subi": "sub", "arith.subf": "sub",
    "arith.muli": "mul", "arith.mulf": "mul", "arith.divf": "div", "arith.divsi": "sdiv",
    "arith.divui": "udiv", "arith.remsi": "srem", "arith.remui": "urem", "arith.remf": "frem",
    "arith.andi": "and", "arith.ori": "or", "arith.xori": "xor", "arith.shli": "shl",
    "arith.shrsi": "shrs", "arith.shrui": "shru", "arith.minsi": "smin", "arith.maxsi": "smax",
    "arith.minui": "umin", "arith.maxui": "umax", "arith.minimumf": "fmin", "arith.maximumf": "fmax",
    "arith.minnumf": "fminnum", "arith.maxnumf": "fmaxnum", "math.powf": "pow", "math.atan2": "atan2",
    "math.copysign": "copysign", "tt.mulhiui": "umulhi", "tt.precise_divf": "div",
}
UNARY_FUNCTIONS = {
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
    "math.log1p": "log1p", "math.expm1": "expm1", "math.sqrt": "sqrt", "math.rsqrt": "rsqrt",
    "tt.precise_sqrt": "sqrt", "math.sin": "sin", "math.cos": "cos", "math.tan": "tan",
    "math.tanh": "tanh", "math.erf": "erf", "math.erfc": "erfc", "math.absf": "abs", "math.absi": "abs",
    "math.floor": "floor", "math.ceil": "ceil", "math.trunc": "trunc", "math.round": "round",
    "math.roundeven": "rint", "arith.negf": "neg", "math.asin": "asin", "math.acos": "acos",
    "math.atan": "atan", "math.sinh": "sinh", "math.cosh": "cosh", "math.asinh": "asinh",
    "math.acosh": "acosh", "math.atanh": "atanh", "math.ctpop": "popc", "math.ctlz": "clz",
}


@dataclass(frozen=True)
class Type:
    """shape None: a scalar. elem: an ISA dtype, 'ptr' (pointee set) or 'blockptr' (pointee: tile)."""
    elem: str
    shape: tuple[int, ...] | None = None
    pointee: "Type | None" = None

    @property
    def is_tile(self) -> bool:
        return self.shape is not None

    @property
    def is_ptr(self) -> bool:
        return self.elem == "ptr"

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape or ():
            n *= s
        return n

    def scalar(self) -> "Type":
        return Type(self.elem, None, self.pointee)

    def with_shape(self, shape: tuple[int, ...] | None) -> "Type":
        return Type(self.elem, tuple(shape) if shape is not None else None, self.pointee)

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE["ptr" if self.elem in ("ptr", "blockptr") else self.elem]

    def __str__(self) -> str:
        e = f"ptr<{self.pointee}>" if self.elem in ("ptr", "blockptr") else self.elem
        if self.elem == "blockptr":
            e = f"blockptr<{self.pointee}>"
        if self.shape is None:
            return e
        return f"tile<{'x'.join(map(str, self.shape))}x{e}>" if self.shape else f"tile<{e}>"


def parse_type(s: str) -> Type:
    s = s.strip()
    if s.startswith("tensor<"):
        inner = s[len("tensor<"):-1]
        dims = []
        while True:
            m = re.match(r"(\d+)x", inner)
            if not m:
                break
            dims.append(int(m.group(1)))
            inner = inner[m.end():]
        return parse_type(inner).with_shape(tuple(dims))
    if s.startswith("!tt.ptr<"):
        inner = s[len("!tt.ptr<"):-1]
        inner = re.sub(r",\s*\d+$", "", inner)  # address space
        pointee = parse_type(inner)
        if pointee.is_tile:
            return Type("blockptr", None, pointee)
        return Type("ptr", None, pointee)
    if s.startswith("!tt.tensordesc<"):
        return Type("tensordesc", None, parse_type(s[len("!tt.tensordesc<"):-1]))
    if s in _MLIR_DTYPE:
        return Type(_MLIR_DTYPE[s])
    raise UnsupportedError(f"type {s} is not supported by the MTIA backend")


class UnsupportedError(NotImplementedError):
    """A construct the backend cannot compile; the message names the op and source line."""


_ids = itertools.count()


@dataclass(eq=False)
class Value:
    type: Type
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"%v{next(_ids)}"

    def __repr__(self) -> str:
        return self.name


@dataclass(eq=False)
class Region:
    args: list[Value]
    ops: list["Op"]


@dataclass(eq=False)
class Op:
    name: str
    operands: list[Value]
    results: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    loc: str = ""

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.name
        return self.results[0]


@dataclass(eq=False)
class Function:
    name: str
    args: list[Value]
    arg_names: list[str]
    body: Region


def walk(region: Region) -> Iterator[Op]:
    """Pre-order over every op of a region and its nested regions."""
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


def _fmt_attr(v: Any) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, float):
        return repr(v)
    return str(v)


def print_region(region: Region, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    for op in region.ops:
        res = ", ".join(r.name for r in op.results)
        lhs = f"{res} = " if res else ""
        opnds = ", ".join(o.name for o in op.operands)
        attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
        attr_s = (" {" + ", ".join(f"{k} = {_fmt_attr(v)}" for k, v in attrs.items()) + "}") if attrs else ""
        types = ", ".join(str(r.type) for r in op.results)
        tys = f" : {types}" if types else ""
        loc = f"  // {op.loc}" if op.loc else ""
        out.append(f"{pad}{lhs}{op.name} {opnds}{attr_s}{tys}{loc}".rstrip())
        for i, r in enumerate(op.regions):
            args = ", ".join(f"{a.name}: {a.type}" for a in r.args)
            out.append(f"{pad}  ^region{i}({args}):")
            print_region(r, indent + 2, out)


def print_function(fn: Function) -> str:
    out = [f"tile.func @{fn.name}(" + ", ".join(f"{a.name}: {a.type}" for a in fn.args) + ") {"]
    print_region(fn.body, 1, out)
    out.append("}")
    return "\n".join(out) + "\n"


# ops that change a tile's shape, not its elements' values
VIEW_OPS = ("tt.broadcast", "tt.expand_dims", "tt.reshape")


def splat_constant(v: Value, defs: dict) -> Any:
    """The value every element of `v` holds when it is one constant (a scalar constant, or a
    splat constant tile, seen through splats and views), else None. `defs`: id(value) -> its op."""
    op = defs.get(id(v))
    while op is not None and (op.name in VIEW_OPS or op.name == "tt.splat"):
        op = defs.get(id(op.operands[0]))
    if op is None or op.name != "arith.constant":
        return None
    vals = op.attrs.get("values", [op.attrs.get("value")])
    return vals[0] if len(vals) == 1 else None


def regions(region: Region) -> Iterator[Region]:
    """A region and every region nested in it, outermost first."""
    yield region
    for op in region.ops:
        for r in op.regions:
            yield from regions(r)


def reads(op: Op) -> set:
    """The values an op reads, those read inside its regions included."""
    used = set(op.operands)
    for r in op.regions:
        for inner in walk(r):
            used.update(inner.operands)
    return used
