"""The MTIA intrinsic instruction set: semantics and cost inputs of every instruction.

The program format (Program, Block, Instr, dtypes) is backend/program.py, the contract with the
compiler; this module says what each instruction of it does. The functional simulator
executes a program through `SEMANTICS`; the timing model prices each executed instruction from
the `cost inputs` the semantics report (typed records built by backend/sim/cost/inputs.py; the
rules that price them are in backend/sim/cost/). A new instruction is one `@instruction` entry
here plus one lowering rule in the compiler.

Values: scalar registers hold Python numbers (ints wrap to their width); tile registers hold
torch tensors that live in the PE's local memory. Pointers are integer byte addresses.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Callable

import torch

from backend.program import ENGINE_OF_PREFIX, INT_BITS, SFU_FUNCTIONS, TORCH_DTYPE, Block, Instr, Operand
from backend.sim.cost.inputs import (LayoutInputs, VectorInputs, fma_inputs, layout_inputs, matmul_inputs,
                                     reduce_inputs, simd_matmul_inputs, tree_reduce_inputs, vector_inputs)

# ----------------------------------------------------------------------------- dtypes


def is_float(dtype: str) -> bool:
    return dtype.startswith(("f", "bf"))


_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def widen_fp8(t: torch.Tensor) -> torch.Tensor:
    """fp8 arithmetic runs in f32 and is rounded back by the caller (torch has few fp8 kernels;
    f32 holds every fp8 sum and product exactly, so the result is the correctly rounded one)."""
    return t.float() if t.dtype in _FP8 else t


def wrap_int(value: int, dtype: str) -> int:
    """Two's-complement wrap of a Python int to the width of `dtype` (i1 is 0/1)."""
    bits = INT_BITS[dtype]
    if bits == 1:
        return int(value) & 1
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def round_float(value: float, dtype: str) -> float:
    if dtype == "f32":
        try:
            return struct.unpack("f", struct.pack("f", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if dtype in ("f64",):
        return float(value)
    return float(torch.tensor(value, dtype=TORCH_DTYPE[dtype]).item())


def coerce_scalar(value: Any, dtype: str) -> Any:
    if dtype == "i1":
        return bool(value)
    if dtype in INT_BITS:
        return wrap_int(int(value), dtype)
    return round_float(float(value), dtype)


# ----------------------------------------------------------------------------- semantics registry

@dataclass(frozen=True)
class InstrDef:
    op: str
    run: Callable[["ExecState", Instr], dict | None]
    doc: str


SEMANTICS: dict[str, InstrDef] = {}


def instruction(op: str) -> Callable:
    """Register the semantics of `op`. The function executes the instruction on an
    ExecState and returns its cost inputs (a dict the timing model prices) or None."""
    def deco(fn: Callable) -> Callable:
        assert op.split(".", 1)[0] in ENGINE_OF_PREFIX, op
        SEMANTICS[op] = InstrDef(op, fn, (fn.__doc__ or "").strip())
        return fn
    return deco


BlockRunner = Callable[["ExecState", Block, list], list]


class ExecState:
    """Registers of one program instance plus handles to the machine it runs on. `run_block`
    is the executor's block runner (run_block(state, block, args) -> block results), which the
    instructions with combine regions (re.reduce, re.scan) call: semantics never import the
    executor."""

    def __init__(self, memory: Any, pid: tuple[int, int, int], nprog: tuple[int, int, int], kernel: str,
                 run_block: BlockRunner):
        self.r: dict[str, Any] = {}
        self.memory = memory
        self.pid = pid
        self.nprog = nprog
        self.kernel = kernel
        self.run_block = run_block
        self.events: list | None = None

    def v(self, operand: Operand) -> Any:
        if isinstance(operand, str):
            return self.r[operand]
        if isinstance(operand, list):
            return [self.v(o) for o in operand]
        return operand


# ---------------------------------------------------------------- elementwise function tables

def _int_div_trunc(a, b):
    return torch.div(a, b, rounding_mode="trunc")


def _as_unsigned(x: torch.Tensor) -> torch.Tensor:
    bits = x.element_size() * 8
    if bits >= 64:
        return x  # no u64 in torch: callers of 64-bit unsigned ops go through _on_u64 or the sign flip
    return x.to(torch.int64) & ((1 << bits) - 1)


def _unsigned_op(fn, order_only: bool = False):
    """fn on the unsigned reading of a and b. For 64-bit ints (no u64 in torch) an order-only fn
    (compare, min, max) is exact through the sign-bit flip, which maps u64 order onto i64 order."""
    def run(a, b):
        if order_only and a.element_size() == 8 and not a.dtype.is_floating_point:
            flip = torch.tensor(-(1 << 63), dtype=torch.int64)
            r = fn(a.to(torch.int64) ^ flip, torch.as_tensor(b).to(torch.int64) ^ flip)
            return r if r.dtype == torch.bool else (r ^ flip).to(a.dtype)
        return fn(_as_unsigned(a), _as_unsigned(b)).to(a.dtype)
    return run


def _fmin(a, b):
    return torch.minimum(a, b)


def _fmax(a, b):
    return torch.maximum(a, b)


def _shl(a, b):
    return torch.bitwise_left_shift(a, b)


def _shrs(a, b):
    return torch.bitwise_right_shift(a, b)


def _shru(a, b):
    if a.element_size() == 8:
        # logical shift of i64: arithmetic shift, then clear the copies of the sign bit
        b = torch.as_tensor(b).to(torch.int64)
        shifted = torch.bitwise_right_shift(a, b)
        keep = torch.bitwise_left_shift(torch.ones_like(shifted), (64 - b).clamp(max=63)) - 1
        return torch.where(b > 0, shifted & keep, shifted)
    return torch.bitwise_right_shift(_as_unsigned(a), _as_unsigned(b)).to(a.dtype)


def _srem(a, b):
    if a.dtype.is_floating_point:
        return torch.fmod(a, b)
    return torch.fmod(a, b)


def _umulhi(a, b):
    bits = a.element_size() * 8
    if bits >= 64:
        return _on_u64(_umulhi_u64, a, b)
    return ((_as_unsigned(a) * _as_unsigned(b)) >> bits).to(a.dtype)


def _on_u64(fn, *xs: Any) -> torch.Tensor:
    """fn on the unsigned 64-bit reading of i64 tensors, through numpy's uint64 (exact: torch
    has no u64 arithmetic). The result's bits come back as i64 (bools stay bools)."""
    import numpy as np
    arrs = [np.asarray(torch.as_tensor(x).to(torch.int64).numpy()).view(np.uint64) for x in xs]
    with np.errstate(all="ignore"):
        r = np.asarray(fn(*arrs))
    if r.dtype == np.bool_:
        return torch.from_numpy(r.copy())
    return torch.from_numpy(np.ascontiguousarray(r.astype(np.uint64)).view(np.int64))


def _umulhi_u64(a, b):
    """High 64 bits of the 128-bit product of two uint64 arrays, from 32-bit halves."""
    import numpy as np
    m, s = np.uint64(0xFFFFFFFF), np.uint64(32)
    al, ah, bl, bh = a & m, a >> s, b & m, b >> s
    lo_lo, hi_lo, lo_hi, hi_hi = al * bl, ah * bl, al * bh, ah * bh
    cross = (lo_lo >> s) + (hi_lo & m) + lo_hi  # < 2**64: no wrap
    return hi_hi + (hi_lo >> s) + (cross >> s)


def _udiv(a, b):
    if a.element_size() == 8 and not a.dtype.is_floating_point:
        return _on_u64(lambda x, y: x // y, a, b)
    return torch.div(_as_unsigned(a), _as_unsigned(b), rounding_mode="floor").to(a.dtype)


def _urem(a, b):
    if a.element_size() == 8 and not a.dtype.is_floating_point:
        return _on_u64(lambda x, y: x % y, a, b)
    return torch.remainder(_as_unsigned(a), _as_unsigned(b)).to(a.dtype)


BINARY: dict[str, Callable] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "sdiv": _int_div_trunc, "udiv": _udiv, "srem": _srem, "urem": _urem, "frem": torch.fmod,
    "fmin": _fmin, "fmax": _fmax, "fminnum": torch.fmin, "fmaxnum": torch.fmax,
    "smin": torch.minimum, "smax": torch.maximum,
    "umin": _unsigned_op(torch.minimum, True), "umax": _unsigned_op(torch.maximum, True),
    "and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor,
    "shl": _shl, "shrs": _shrs, "shru": _shru, "pow": torch.pow, "atan2": torch.atan2,
    "umulhi": _umulhi, "copysign": torch.copysign, "hypot": torch.hypot, "nextafter": torch.nextafter,
}


def _round_half_away(x):
    """C round() / MLIR math.round / libdevice round: halfway cases away from zero (torch.round
    rounds them to even: that is `rint`). x - trunc(x) is exact, so no addition rounds first."""
    if not x.is_floating_point():
        return x
    t = torch.trunc(x)
    return torch.where((x - t).abs() >= 0.5, t + torch.sign(x), t)


# Transcendentals go to the SFU (lookup tables); the rest are plain SIMD ALU work.
UNARY: dict[str, Callable] = {
    "neg": torch.neg, "abs": torch.abs, "not": torch.bitwise_not, "floor": torch.floor,
    "ceil": torch.ceil, "trunc": torch.trunc, "round": _round_half_away, "rint": torch.round,
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2, "log10": torch.log10,
    "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh, "erf": torch.erf,
    "sigmoid": torch.sigmoid, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "erfc": torch.erfc, "lgamma": torch.lgamma, "signbit": torch.signbit,
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "recip": torch.reciprocal,
    "erfinv": torch.erfinv, "erfcx": torch.special.erfcx, "i0": torch.special.i0, "i1": torch.special.i1,
    "j0": torch.special.bessel_j0, "j1": torch.special.bessel_j1, "y0": torch.special.bessel_y0,
    "y1": torch.special.bessel_y1, "ilogb": lambda x: (torch.frexp(x)[1] - 1).to(torch.int32),
    "popc": None, "clz": None,
}


def _popc(x: torch.Tensor) -> torch.Tensor:
    u = _as_unsigned(x)
    count = torch.zeros_like(u)
    for _ in range(x.element_size() * 8):
        count += u & 1
        u = u >> 1
    return count.to(torch.int32)


def _clz(x: torch.Tensor) -> torch.Tensor:
    bits = x.element_size() * 8
    u = _as_unsigned(x)
    n = torch.full_like(u, bits)
    for i in range(bits):
        n = torch.where((u >> i) & 1 == 1, torch.full_like(u, bits - 1 - i), n)
    return n.to(torch.int32)


UNARY["popc"] = _popc
UNARY["clz"] = _clz

CMP: dict[str, Callable] = {
    "eq": torch.eq, "ne": torch.ne, "slt": torch.lt, "sle": torch.le, "sgt": torch.gt, "sge": torch.ge,
    "ult": _unsigned_op(torch.lt, True), "ule": _unsigned_op(torch.le, True),
    "ugt": _unsigned_op(torch.gt, True), "uge": _unsigned_op(torch.ge, True),
    "oeq": torch.eq, "one": lambda a, b: (a != b) & ~torch.isnan(a) & ~torch.isnan(b),
    "olt": torch.lt, "ole": torch.le, "ogt": torch.gt, "oge": torch.ge,
    "ueq": lambda a, b: (a == b) | torch.isnan(a) | torch.isnan(b), "une": torch.ne,
    "ult_f": lambda a, b: ~(a >= b), "ule_f": lambda a, b: ~(a > b),
    "ugt_f": lambda a, b: ~(a <= b), "uge_f": lambda a, b: ~(a < b),
    "ord": lambda a, b: ~torch.isnan(a) & ~torch.isnan(b), "uno": lambda a, b: torch.isnan(a) | torch.isnan(b),
}
# ops whose unsigned results need the bool cast back (unsigned_op casts to input dtype)
_CMP_BOOL = {"ult", "ule", "ugt", "uge"}


def as_tensor(x: Any, dtype: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    return torch.tensor(x, dtype=TORCH_DTYPE[dtype])


def cast_tensor(x: torch.Tensor, kind: str, to: str, src_dtype: str) -> torch.Tensor:
    """Conversions with MLIR semantics (fptosi truncates toward zero, i1 extends, bitcast)."""
    tdt = TORCH_DTYPE[to]
    if kind == "bitcast":
        if x.dtype == tdt:
            return x
        return x.contiguous().view(tdt) if x.dim() > 0 else x.reshape(1).view(tdt).reshape(())
    if kind in ("extui", "uitofp"):
        if src_dtype == "i1":
            x = x.to(torch.int64)
        elif kind == "uitofp" and INT_BITS.get(src_dtype) == 64:
            # u64 -> float: numpy's correctly rounded u64 -> f64, then to the target (exact:
            # f64 carries more than 2p+2 bits of every narrower format, so no double rounding)
            import numpy as np
            f = x.to(torch.int64).numpy().view(np.uint64).astype(np.float64)
            return torch.from_numpy(np.ascontiguousarray(f)).to(tdt)
        else:
            x = _as_unsigned(x)
        return x.to(tdt)
    if kind == "extsi" and src_dtype == "i1":
        return torch.where(x.to(torch.bool), -1, 0).to(tdt)
    if kind == "trunci":
        if to == "i1":
            return (x & 1).to(torch.bool)
        bits = INT_BITS[to]
        u = x.to(torch.int64) & ((1 << bits) - 1)
        return torch.where(u >= (1 << (bits - 1)), u - (1 << bits), u).to(tdt)
    if kind == "fptoui" and to != "i1":
        # defined for 0 <= x < 2**bits: the integer's bits (the upper half of the range does not
        # fit the signed type the register holds)
        t = torch.trunc(x.to(torch.float64))
        if INT_BITS[to] == 64:
            import numpy as np
            u = np.nan_to_num(t.numpy(), nan=0.0, posinf=0.0, neginf=0.0)
            u = np.where((u >= 0) & (u < 2.0 ** 64), u, 0.0).astype(np.uint64).view(np.int64)
            return torch.from_numpy(np.ascontiguousarray(u))
        return cast_tensor(t.to(torch.int64), "trunci", to, "i64")
    if kind in ("fptosi", "fptoui"):
        return torch.trunc(x.to(torch.float64)).to(tdt) if to != "i1" else (x != 0)
    return x.to(tdt)


def scalar_cast(x: Any, kind: str, to: str, src_dtype: str) -> Any:
    if kind == "bitcast":
        t = cast_tensor(as_tensor(x, src_dtype), kind, to, src_dtype)
        return t.item()
    if kind in ("extui", "uitofp") and src_dtype in INT_BITS and src_dtype != "i1":
        x = int(x) & ((1 << INT_BITS[src_dtype]) - 1)
    if kind == "extsi" and src_dtype == "i1":
        x = -1 if x else 0
    if kind in ("fptosi", "fptoui"):
        x = int(math.trunc(x)) if math.isfinite(x) else 0
    return coerce_scalar(x, to)


# ----------------------------------------------------------------------------- instructions
# Each returns cost inputs: the figures the timing model needs to price the instruction.

def _numel(x: Any) -> int:
    return x.numel() if isinstance(x, torch.Tensor) else 1


def _elementwise_cost(out: Any, dtype: str) -> VectorInputs:
    return vector_inputs(_numel(out), dtype)


# --- scalar engine: program ids, constants, integer/pointer arithmetic on scalar registers

@instruction("scalar.pid")
def _pid(st: ExecState, ins: Instr):
    """dst = this program's id along attrs.axis."""
    st.r[ins.dst[0]] = st.pid[ins.attrs["axis"]]


@instruction("scalar.nprog")
def _nprog(st: ExecState, ins: Instr):
    """dst = the grid size along attrs.axis."""
    st.r[ins.dst[0]] = st.nprog[ins.attrs["axis"]]


@instruction("scalar.const")
def _sconst(st: ExecState, ins: Instr):
    st.r[ins.dst[0]] = ins.attrs["value"]


def _py_binary(fn: str, a: Any, b: Any, dtype: str) -> Any:
    if is_float(dtype) or fn in ("pow", "atan2", "hypot", "copysign"):
        return round_float(float(BINARY[fn](torch.tensor(a, dtype=torch.float64),
                                            torch.tensor(b, dtype=torch.float64)).item()), dtype) \
            if fn not in ("add", "sub", "mul", "div") else round_float(_FAST_FLOAT[fn](a, b), dtype)
    a, b = int(a), int(b)
    bits = INT_BITS[dtype]
    if fn in ("udiv", "urem", "umin", "umax", "shru", "umulhi"):
        mask = (1 << bits) - 1
        ua, ub = a & mask, b & mask
        r = {"udiv": lambda: ua // ub, "urem": lambda: ua % ub, "umin": lambda: min(ua, ub),
             "umax": lambda: max(ua, ub), "shru": lambda: ua >> ub, "umulhi": lambda: (ua * ub) >> bits}[fn]()
        return wrap_int(r, dtype)
    r = _FAST_INT[fn](a, b)
    return bool(r & 1) if dtype == "i1" else wrap_int(r, dtype)


def _div_trunc_int(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_FAST_INT = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "sdiv": _div_trunc_int, "srem": lambda a, b: a - _div_trunc_int(a, b) * b,
    "smin": min, "smax": max, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shrs": lambda a, b: a >> b,
}
_FAST_FLOAT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
               "div": lambda a, b: a / b if b != 0 else (math.copysign(math.inf, a) * math.copysign(1, b)
                                                         if a != 0 and not math.isnan(a) else math.nan)}


@instruction("scalar.binary")
def _sbinary(st: ExecState, ins: Instr):
    """dst = fn(a, b) on scalar registers, wrapped/rounded to attrs.dtype."""
    a, b = st.v(ins.args["a"]), st.v(ins.args["b"])
    fn, dtype = ins.attrs["fn"], ins.attrs["dtype"]
    if fn in ("sdiv", "srem", "udiv", "urem") and not is_float(dtype) and int(b) == 0:
        raise SimulationError(st.kernel, ins.loc, f"integer division by zero in scalar {fn}")
    if fn in ("fmin", "fmax", "fminnum", "fmaxnum"):
        t = BINARY[fn](torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)).item()
        st.r[ins.dst[0]] = round_float(t, dtype)
    else:
        st.r[ins.dst[0]] = _py_binary(fn, a, b, dtype)


@instruction("scalar.unary")
def _sunary(st: ExecState, ins: Instr):
    a = st.v(ins.args["a"])
    dtype = ins.attrs["dtype"]
    t = UNARY[ins.attrs["fn"]](widen_fp8(as_tensor(a, dtype)))
    st.r[ins.dst[0]] = coerce_scalar(t.item(), ins.attrs.get("out_dtype", dtype))


@instruction("scalar.cmp")
def _scmp(st: ExecState, ins: Instr):
    a, b = st.v(ins.args["a"]), st.v(ins.args["b"])
    pred, dtype = ins.attrs["pred"], ins.attrs["dtype"]
    if not is_float(dtype) and pred in ("eq", "ne", "slt", "sle", "sgt", "sge"):
        st.r[ins.dst[0]] = {"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b,
                            "sgt": a > b, "sge": a >= b}[pred]
        return
    r = CMP[pred](widen_fp8(as_tensor(a, dtype)), widen_fp8(as_tensor(b, dtype)))
    st.r[ins.dst[0]] = bool(r.item())


@instruction("scalar.select")
def _sselect(st: ExecState, ins: Instr):
    st.r[ins.dst[0]] = st.v(ins.args["a"]) if st.v(ins.args["cond"]) else st.v(ins.args["b"])


@instruction("scalar.cast")
def _scast(st: ExecState, ins: Instr):
    st.r[ins.dst[0]] = scalar_cast(st.v(ins.args["a"]), ins.attrs["kind"], ins.attrs["to"], ins.attrs["from"])


@instruction("scalar.fma")
def _sfma(st: ExecState, ins: Instr):
    a, b, c = (st.v(ins.args[k]) for k in "abc")
    st.r[ins.dst[0]] = round_float(math.fma(a, b, c) if hasattr(math, "fma") else a * b + c, ins.attrs["dtype"])


@instruction("scalar.addptr")
def _saddptr(st: ExecState, ins: Instr):
    """dst = base + offset * attrs.elsize: pointer arithmetic on a byte address."""
    st.r[ins.dst[0]] = int(st.v(ins.args["base"])) + int(st.v(ins.args["offset"])) * ins.attrs["elsize"]


# --- SIMD / SFU: elementwise tile work

@instruction("simd.splat")
def _splat(st: ExecState, ins: Instr):
    """dst = a tile of attrs.shape filled with the scalar register a."""
    dtype = ins.attrs["dtype"]
    st.r[ins.dst[0]] = torch.full(ins.attrs["shape"], st.v(ins.args["a"]), dtype=TORCH_DTYPE[dtype])
    return _elementwise_cost(st.r[ins.dst[0]], dtype)


@instruction("simd.iota")
def _iota(st: ExecState, ins: Instr):
    """dst = [start, start+1, ..., end) as an i32 tile."""
    st.r[ins.dst[0]] = torch.arange(ins.attrs["start"], ins.attrs["end"], dtype=torch.int32)
    return _elementwise_cost(st.r[ins.dst[0]], "i32")


@instruction("simd.const")
def _tconst(st: ExecState, ins: Instr):
    """dst = a dense constant tile (attrs.values flat list, or one splat value)."""
    dtype, shape = ins.attrs["dtype"], ins.attrs["shape"]
    vals = ins.attrs["values"]
    if len(vals) == 1:
        t = torch.full(shape, vals[0], dtype=TORCH_DTYPE[dtype])
    else:
        t = torch.tensor(vals, dtype=TORCH_DTYPE[dtype]).reshape(shape)
    st.r[ins.dst[0]] = t
    return _elementwise_cost(t, dtype)


def _tile_binary(st: ExecState, ins: Instr):
    fn, dtype = ins.attrs["fn"], ins.attrs["dtype"]
    a = as_tensor(st.v(ins.args["a"]), dtype)
    b = as_tensor(st.v(ins.args["b"]), dtype)
    if fn in ("sdiv", "srem", "udiv", "urem") and not is_float(dtype) and bool((b == 0).any()):
        raise SimulationError(st.kernel, ins.loc, f"integer division by zero in {fn}")
    out = BINARY[fn](widen_fp8(a), widen_fp8(b))
    tdt = TORCH_DTYPE[dtype]
    if out.dtype != tdt:
        out = out.to(tdt)
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, dtype)


@instruction("simd.binary")
def _simd_binary(st: ExecState, ins: Instr):
    """dst = fn(a, b) elementwise (broadcast shapes are equal by construction)."""
    return _tile_binary(st, ins)


@instruction("sfu.binary")
def _sfu_binary(st: ExecState, ins: Instr):
    """Binary transcendental (pow, atan2) through the SFU lookup tables."""
    return _tile_binary(st, ins)


def _tile_unary(st: ExecState, ins: Instr):
    dtype = ins.attrs["dtype"]
    a = as_tensor(st.v(ins.args["a"]), dtype)
    fn = ins.attrs["fn"]
    if a.dtype in (torch.float16, torch.bfloat16) and fn in SFU_FUNCTIONS or a.dtype in _FP8:
        out = UNARY[fn](a.float()).to(a.dtype)
    else:
        out = UNARY[fn](a)
    out_dtype = ins.attrs.get("out_dtype", dtype)
    if out.dtype != TORCH_DTYPE[out_dtype]:
        out = out.to(TORCH_DTYPE[out_dtype])
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, dtype)


@instruction("simd.unary")
def _simd_unary(st: ExecState, ins: Instr):
    return _tile_unary(st, ins)


@instruction("sfu.unary")
def _sfu_unary(st: ExecState, ins: Instr):
    """Transcendental through the SFU lookup tables (exp, log, tanh, erf, ...)."""
    return _tile_unary(st, ins)


@instruction("simd.cmp")
def _simd_cmp(st: ExecState, ins: Instr):
    pred, dtype = ins.attrs["pred"], ins.attrs["dtype"]
    a = as_tensor(st.v(ins.args["a"]), dtype)
    b = as_tensor(st.v(ins.args["b"]), dtype)
    out = CMP[pred](widen_fp8(a), widen_fp8(b))
    if out.dtype != torch.bool:
        out = out.to(torch.bool)
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, dtype)


@instruction("simd.select")
def _simd_select(st: ExecState, ins: Instr):
    dtype = ins.attrs["dtype"]
    c = st.v(ins.args["cond"])
    a, b = st.v(ins.args["a"]), st.v(ins.args["b"])
    tdt = TORCH_DTYPE[dtype]
    a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=tdt)
    b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=tdt)
    c = c if isinstance(c, torch.Tensor) else torch.tensor(bool(c))
    out = torch.where(c, a, b)
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, dtype)


@instruction("simd.cast")
def _simd_cast(st: ExecState, ins: Instr):
    src = ins.attrs["from"]
    out = cast_tensor(as_tensor(st.v(ins.args["a"]), src), ins.attrs["kind"], ins.attrs["to"], src)
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, ins.attrs["to"])


@instruction("simd.fma")
def _simd_fma(st: ExecState, ins: Instr):
    dtype = ins.attrs["dtype"]
    a, b, c = (widen_fp8(as_tensor(st.v(ins.args[k]), dtype)) for k in "abc")
    out = torch.addcmul(c, a, b) if a.dtype == torch.float32 else (a.double() * b + c).to(a.dtype)
    if out.dtype != TORCH_DTYPE[dtype]:
        out = out.to(TORCH_DTYPE[dtype])
    st.r[ins.dst[0]] = out
    return fma_inputs(_numel(out), dtype)


@instruction("simd.clamp")
def _simd_clamp(st: ExecState, ins: Instr):
    dtype = ins.attrs["dtype"]
    x, lo, hi = (widen_fp8(as_tensor(st.v(ins.args[k]), dtype)) for k in ("x", "lo", "hi"))
    out = torch.minimum(torch.maximum(x, lo), hi)
    if ins.attrs.get("propagate_nan", False):
        out = torch.where(torch.isnan(x), x, out)
    if out.dtype != TORCH_DTYPE[dtype]:
        out = out.to(TORCH_DTYPE[dtype])
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, dtype)


@instruction("simd.addptr")
def _taddptr(st: ExecState, ins: Instr):
    """dst = base + offset * attrs.elsize on tiles of byte addresses (the unstructured path)."""
    base, off = st.v(ins.args["base"]), st.v(ins.args["offset"])
    base = base if isinstance(base, torch.Tensor) else torch.tensor(base, dtype=torch.int64)
    off = off if isinstance(off, torch.Tensor) else torch.tensor(off, dtype=torch.int64)
    out = base + off.to(torch.int64) * ins.attrs["elsize"]
    st.r[ins.dst[0]] = out
    return _elementwise_cost(out, "i64")


# --- memory layout unit: shape changes that move data inside local memory

def _layout_cost(out: torch.Tensor) -> LayoutInputs:
    return layout_inputs(out.numel() * out.element_size())


@instruction("mlu.broadcast")
def _broadcast(st: ExecState, ins: Instr):
    a = st.v(ins.args["a"])
    out = a.expand(ins.attrs["shape"]) if isinstance(a, torch.Tensor) else torch.tensor(a).expand(ins.attrs["shape"])
    st.r[ins.dst[0]] = out
    return layout_inputs(0) if ins.attrs.get("view") else _layout_cost(out)


@instruction("mlu.reshape")
def _reshape(st: ExecState, ins: Instr):
    """Also expand_dims: no data moves when only unit dims change (cost 0 bytes)."""
    a = st.v(ins.args["a"])
    out = a.reshape(ins.attrs["shape"])
    st.r[ins.dst[0]] = out
    return layout_inputs(0 if ins.attrs.get("view", False) else out.numel() * out.element_size())


@instruction("mlu.permute")
def _permute(st: ExecState, ins: Instr):
    a = st.v(ins.args["a"])
    out = a.permute(ins.attrs["order"])
    st.r[ins.dst[0]] = out
    return _layout_cost(out)


@instruction("mlu.join")
def _join(st: ExecState, ins: Instr):
    out = torch.stack([st.v(ins.args["a"]), st.v(ins.args["b"])], dim=-1)
    st.r[ins.dst[0]] = out
    return _layout_cost(out)


@instruction("mlu.split")
def _split(st: ExecState, ins: Instr):
    a = st.v(ins.args["a"])
    st.r[ins.dst[0]] = a[..., 0]
    st.r[ins.dst[1]] = a[..., 1]
    return _layout_cost(a)


@instruction("mlu.cat")
def _cat(st: ExecState, ins: Instr):
    out = torch.cat([st.v(ins.args["a"]), st.v(ins.args["b"])], dim=0)
    st.r[ins.dst[0]] = out
    return _layout_cost(out)


@instruction("mlu.gather")
def _mlu_gather(st: ExecState, ins: Instr):
    """tl.gather: dst[i] = src[index[i]] along attrs.axis within local memory."""
    src, idx = st.v(ins.args["src"]), st.v(ins.args["index"])
    out = torch.gather(src, ins.attrs["axis"], idx.to(torch.int64))
    st.r[ins.dst[0]] = out
    return _layout_cost(out)


# --- dot-product engine

# the largest |x| of an integer operand dtype whose products float64 sums exactly (below)
_INT_MAGNITUDE = {torch.int8: 2 ** 7, torch.uint8: 2 ** 8 - 1, torch.int16: 2 ** 15}


def _int_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Exact integer a @ b as int64. Through float64 (BLAS) when every partial sum is an integer
    below 2**53 (k * max|a| * max|b|: INT8 for any k below 2**39): an int64 matmul has no BLAS
    path and does not vectorise without AVX-512 (a 4096^3 INT8 GEMM simulated 12x slower on an
    AVX2 host). Wider operands take the int64 product."""
    ma, mb = _INT_MAGNITUDE.get(a.dtype), _INT_MAGNITUDE.get(b.dtype)
    if ma is not None and mb is not None and a.shape[-1] * ma * mb < 2 ** 53:
        return torch.matmul(a.to(torch.float64), b.to(torch.float64)).to(torch.int64)
    return torch.matmul(a.to(torch.int64), b.to(torch.int64))


@instruction("dpe.matmul")
def _matmul(st: ExecState, ins: Instr):
    """dst = a @ b + acc. FP16/BF16/FP8 inputs accumulate in FP32, INT8 in INT32 (exact)."""
    a, b, acc = st.v(ins.args["a"]), st.v(ins.args["b"]), st.v(ins.args["acc"])
    out_dtype = ins.attrs["out_dtype"]
    if not isinstance(acc, torch.Tensor):  # an immediate accumulator (0.0: a fresh product)
        acc = torch.tensor(acc)
    if a.dtype in (torch.int8, torch.uint8, torch.int16, torch.int32):
        out = (_int_matmul(a, b) + acc.to(torch.int64)).to(TORCH_DTYPE[out_dtype])
    else:
        work = torch.float64 if a.dtype == torch.float64 else torch.float32
        prod = torch.matmul(a.to(work), b.to(work))
        out = (prod + acc.to(work)).to(TORCH_DTYPE[out_dtype])
    st.r[ins.dst[0]] = out
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    return matmul_inputs(a.numel() // (m * k), m, n, k, ins.attrs["in_dtype"])


@instruction("simd.matmul")
def _simd_matmul(st: ExecState, ins: Instr):
    """dst = a @ b + acc in FP32 on the vector unit: one broadcast FMA pass over the [m, n]
    result per k (a's column times b's row). For FP32 inputs this beats the DPE, whose FP32
    rate is a fraction of its BF16 one; the compiler picks it when it is cheaper."""
    a, b, acc = st.v(ins.args["a"]), st.v(ins.args["b"]), st.v(ins.args["acc"])
    if not isinstance(acc, torch.Tensor):
        acc = torch.tensor(acc)
    out = (torch.matmul(a.to(torch.float32), b.to(torch.float32)) + acc.to(torch.float32)).to(
        TORCH_DTYPE[ins.attrs["out_dtype"]])
    st.r[ins.dst[0]] = out
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    return simd_matmul_inputs(a.numel() // (m * k), m, n, k)


# --- reduction engine

def _reduce_builtin(x: torch.Tensor, kind: str, axis: int) -> torch.Tensor:
    if x.dtype in _FP8:
        return _reduce_builtin(x.float(), kind, axis).to(x.dtype)
    if kind == "sum":
        acc_dt = x.dtype if x.dtype.is_floating_point or x.dtype == torch.int64 else torch.int64
        # a sum of booleans is a count (i32, as Triton promotes it)
        return x.sum(dim=axis, dtype=acc_dt if x.dtype != torch.bool else torch.int64).to(
            x.dtype if x.dtype != torch.bool else torch.int32)
    if kind == "max":
        return x.amax(dim=axis)
    if kind == "min":
        return x.amin(dim=axis)
    if kind == "xor":
        out = x.select(axis, 0).clone()
        for i in range(1, x.shape[axis]):
            out ^= x.select(axis, i)
        return out
    raise KeyError(kind)


class RegionRunner:
    """Runs a combine region (a Block of elementwise instructions) on whole tiles."""

    def __init__(self, st: ExecState, block: Block):
        self.st, self.block = st, block

    def __call__(self, lhs: list, rhs: list) -> list:
        return self.st.run_block(self.st, self.block, list(lhs) + list(rhs))


def tree_reduce(values: list[torch.Tensor], axis: int, combine: Callable) -> list[torch.Tensor]:
    """Pairwise tree reduction along `axis`, the order the reduction engine combines in."""
    vals = [v.movedim(axis, -1) for v in values]
    while vals[0].shape[-1] > 1:
        n = vals[0].shape[-1]
        half = n // 2
        lhs = [v[..., :half] for v in vals]
        rhs = [v[..., half:2 * half] for v in vals]
        out = combine(lhs, rhs)
        if n % 2:
            out = [torch.cat([o, v[..., 2 * half:]], dim=-1) for o, v in zip(out, vals)]
        vals = out
    return [v[..., 0] for v in vals]


@instruction("re.reduce")
def _re_reduce(st: ExecState, ins: Instr):
    """dst[i] = reduce(srcs[i]) along attrs.axis: builtin kind (sum/max/min) or a combine region."""
    srcs = [st.v(s) for s in ins.args["srcs"]]
    axis = ins.attrs["axis"]
    kind = ins.attrs.get("kind")
    if kind is not None:
        outs = [_reduce_builtin(srcs[0], kind, axis)]
    else:
        outs = tree_reduce(srcs, axis, RegionRunner(st, ins.bodies[0]))
    for d, o in zip(ins.dst, outs):
        st.r[d] = o if o.dim() > 0 else o.item()
    return reduce_inputs(sum(s.numel() for s in srcs), _numel(outs[0]), len(ins.bodies[0].instrs) if ins.bodies else 1)


def hillis_steele_scan(values: list[torch.Tensor], axis: int, reverse: bool, combine: Callable) -> list:
    vals = [v.movedim(axis, -1) for v in values]
    if reverse:
        vals = [v.flip(-1) for v in vals]
    n = vals[0].shape[-1]
    step = 1
    while step < n:
        lhs = [v[..., :-step] for v in vals]
        rhs = [v[..., step:] for v in vals]
        comb = combine(lhs, rhs)
        vals = [torch.cat([v[..., :step], c.to(v.dtype)], dim=-1) for v, c in zip(vals, comb)]
        step *= 2
    if reverse:
        vals = [v.flip(-1) for v in vals]
    return [v.movedim(-1, axis) for v in vals]


@instruction("simd.reduce")
def _simd_reduce(st: ExecState, ins: Instr):
    """A reduction done without the reduction engine: a pairwise tree of SIMD passes
    (what the compiler emits with use_reduction_engine=False)."""
    cost = _re_reduce(st, ins)
    n = max(1, st.v(ins.args["srcs"][0]).shape[ins.attrs["axis"]]) if isinstance(
        st.v(ins.args["srcs"][0]), torch.Tensor) else 1
    passes = max(1, (n - 1).bit_length())
    return tree_reduce_inputs(cost["elements"], passes, cost.get("combine_ops", 1))


@instruction("re.scan")
def _re_scan(st: ExecState, ins: Instr):
    """Inclusive scan along attrs.axis: builtin cumsum / cumprod or a combine region. With
    attrs.total the last dst also receives the final element (the sum), from the same pass."""
    srcs = [st.v(s) for s in ins.args["srcs"]]
    axis, reverse = ins.attrs["axis"], ins.attrs.get("reverse", False)
    kind = ins.attrs.get("kind")
    if kind == "sum":
        x = srcs[0].flip(axis) if reverse else srcs[0]
        acc = x.dtype if x.dtype.is_floating_point else torch.int64
        out = torch.cumsum(widen_fp8(x), dim=axis, dtype=torch.float32 if x.dtype in _FP8 else acc).to(x.dtype)
        outs = [out.flip(axis) if reverse else out]
    else:
        outs = hillis_steele_scan(srcs, axis, reverse, RegionRunner(st, ins.bodies[0]))
    for d, o in zip(ins.dst, outs):
        st.r[d] = o
    if ins.attrs.get("total"):  # a last dst: the scan's final element along axis (the total)
        st.r[ins.dst[-1]] = outs[0].select(axis, 0 if reverse else -1)
    return reduce_inputs(sum(s.numel() for s in srcs), _numel(outs[0]), len(ins.bodies[0].instrs) if ins.bodies else 1)


@instruction("re.histogram")
def _histogram(st: ExecState, ins: Instr):
    x = st.v(ins.args["a"]).to(torch.int64)
    bins = ins.attrs["bins"]
    m = st.v(ins.args["mask"]) if ins.args.get("mask") is not None else None
    if m is not None:
        x = x[m.to(torch.bool)]
    x = x[(x >= 0) & (x < bins)]
    out = torch.bincount(x, minlength=bins).to(TORCH_DTYPE[ins.attrs["dtype"]])
    st.r[ins.dst[0]] = out
    return reduce_inputs(x.numel(), bins)


# --- DMA: structured descriptors, index-driven gathers, and the scalar fallback path

@instruction("dma_in.load")
def _dma_load(st: ExecState, ins: Instr):
    """Structured DMA from global memory: dst[idx] = mem[base + offset + sum(idx_d * stride_d)]
    for idx inside the box lo_d <= idx_d < hi_d (and the mask tile, if any); `other` elsewhere."""
    return st.memory.dma_read(st, ins)


@instruction("dma_in.gather")
def _dma_gather(st: ExecState, ins: Instr):
    """Index-driven DMA: dst[idx] = mem[base + offsets[idx]] under the mask; the element
    offsets are a tile computed on the PE (pointer analysis could not structure them)."""
    return st.memory.gather(st, ins)


@instruction("scalar.load")
def _scalar_load(st: ExecState, ins: Instr):
    """Scalar fallback path: one access per element at the byte addresses of a pointer tile."""
    return st.memory.load_addresses(st, ins)


@instruction("dma_out.store")
def _dma_store(st: ExecState, ins: Instr):
    """Structured DMA to global memory (inverse of dma_in.load)."""
    return st.memory.dma_write(st, ins)


@instruction("dma_out.scatter")
def _dma_scatter(st: ExecState, ins: Instr):
    return st.memory.scatter(st, ins)


@instruction("scalar.store")
def _scalar_store(st: ExecState, ins: Instr):
    return st.memory.store_addresses(st, ins)


@instruction("dma_out.atomic")
def _atomic(st: ExecState, ins: Instr):
    """Atomic read-modify-write (add, fadd, max, min, umax, umin, and, or, xor, xchg) or
    compare-and-swap at byte addresses; returns the old values. Programs of a grid run one
    after another in the simulator, so every atomic is indivisible."""
    return st.memory.atomic(st, ins)


# --- control: run by the command processor

@instruction("ctl.for")
def _for(st: ExecState, ins: Instr):
    raise AssertionError("control flow is executed by the executor")


@instruction("ctl.if")
def _if(st: ExecState, ins: Instr):
    raise AssertionError("control flow is executed by the executor")


@instruction("ctl.while")
def _while(st: ExecState, ins: Instr):
    raise AssertionError("control flow is executed by the executor")


@instruction("ctl.assert")
def _assert(st: ExecState, ins: Instr):
    """tl.device_assert: fail with the kernel's message where the condition is false."""
    cond = st.v(ins.args["cond"])
    ok = bool(cond.all()) if isinstance(cond, torch.Tensor) else bool(cond)
    if not ok:
        raise DeviceAssertError(st.kernel, ins.loc,
                                f"device assertion failed: {ins.attrs.get('message', '')} (program {st.pid})")


@instruction("ctl.print")
def _print(st: ExecState, ins: Instr):
    """tl.device_print: prints with the program id, as GPU backends do."""
    vals = [st.v(a) for a in ins.args["values"]]
    prefix = ins.attrs.get("prefix", "")
    body = " ".join(str(v.tolist() if isinstance(v, torch.Tensor) else v) for v in vals)
    print(f"pid ({st.pid[0]}, {st.pid[1]}, {st.pid[2]}){prefix}{body}", flush=True)


# ----------------------------------------------------------------------------- errors

class SimulationError(RuntimeError):
    """An error of the simulated kernel: names the kernel, the source line and what is wrong."""

    def __init__(self, kernel: str, loc: str, message: str):
        self.kernel, self.loc = kernel, loc
        super().__init__(f"kernel '{kernel}' at {loc or '<unknown location>'}: {message}")


class DeviceAssertError(SimulationError):
    pass
