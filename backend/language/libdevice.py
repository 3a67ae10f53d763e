"""libdevice for MTIA: what `triton.language.extra.libdevice.<fn>` means on this backend.

Each function becomes a `tt.extern_elementwise` whose symbol is `mtia.<fn>`; the lowering maps
the symbol to an SFU lookup-table function or SIMD ALU work. Inductor-generated kernels call
these (tanh, erf, pow, isnan, ...). A function missing here is reported by name at compile time.
"""
from __future__ import annotations

from typing import Any, Callable

from triton.language import core

_F = ("fp32", "fp64")
_I = ("int32", "int64")

# name -> (number of args, argument dtype families, result: "same" | "int32" | "bool-as-int32" ...)
_FLOAT_UNARY = [
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma",
    "floor", "ceil", "trunc", "round", "rint", "nearbyint", "fabs", "cbrt", "rcp", "tgamma", "erfinv",
    "sigmoid", "fast_expf", "fast_logf", "fast_tanhf", "fast_dividef_unused",
    "erfcx", "cyl_bessel_i0", "cyl_bessel_i1", "j0", "j1", "y0", "y1",
]
_FLOAT_BINARY = ["pow", "atan2", "fmod", "fmin", "fmax", "hypot", "copysign", "remainder", "nextafter",
                 "fdim", "div_rn", "div_rz", "div_rd", "div_ru", "fast_powf"]
_FLOAT_TEST = ["isnan", "isinf", "isfinited", "finitef", "signbit"]
_INT_UNARY = ["popc", "clz", "abs_int"]

# symbol suffix -> (engine family, ISA function name)
EXTERN_FN: dict[str, tuple[str, str]] = {}


def _make(name: str, arity: int, table: dict) -> Callable:
    def fn(*args: Any, _semantic: Any = None) -> Any:
        return core.extern_elementwise("", "", list(args), table, is_pure=True, _semantic=_semantic)
    fn.__name__ = name
    fn.__qualname__ = name
    params = ", ".join(f"arg{i}" for i in range(arity))
    # core.extern inspects the signature; build one with named positional parameters
    ns: dict = {"_impl": fn}
    exec(f"def {name}({params}, _semantic=None):\n    return _impl({params}, _semantic=_semantic)\n", ns)
    return core.extern(ns[name])


def _table(arity: int, families: tuple, symbol: str, result: str | None = None) -> dict:
    t = {}
    for fam in families:
        key = tuple(core.dtype(fam) for _ in range(arity))
        t[key] = (symbol, core.dtype(result or fam))
    return t


_ISA_NAME = {"fabs": "abs", "rcp": "recip", "nearbyint": "rint", "fast_expf": "exp", "fast_logf": "log",
             "fast_tanhf": "tanh", "exp10": "exp10", "fast_powf": "pow", "remainder": "remainder",
             "isfinited": "isfinite", "finitef": "isfinite", "abs_int": "abs", "div_rn": "div",
             "div_rz": "div", "div_rd": "div", "div_ru": "div", "fmin": "fminnum", "fmax": "fmaxnum",
             "fmod": "frem", "cyl_bessel_i0": "i0", "cyl_bessel_i1": "i1"}

for _n in _FLOAT_UNARY:
    if _n == "fast_dividef_unused":
        continue
    globals()[_n] = _make(_n, 1, _table(1, _F, f"mtia.{_n}"))
    EXTERN_FN[f"mtia.{_n}"] = ("unary", _ISA_NAME.get(_n, _n))
for _n in _FLOAT_BINARY:
    globals()[_n] = _make(_n, 2, _table(2, _F, f"mtia.{_n}"))
    EXTERN_FN[f"mtia.{_n}"] = ("binary", _ISA_NAME.get(_n, _n))
for _n in _FLOAT_TEST:
    globals()[_n] = _make(_n, 1, _table(1, _F, f"mtia.{_n}", "int1"))
    EXTERN_FN[f"mtia.{_n}"] = ("test", _ISA_NAME.get(_n, _n))
ilogb = _make("ilogb", 1, _table(1, _F, "mtia.ilogb", "int32"))
EXTERN_FN["mtia.ilogb"] = ("unary", "ilogb")
for _n in ("popc", "clz"):
    globals()[_n] = _make(_n, 1, _table(1, _I, f"mtia.{_n}", "int32"))
    EXTERN_FN[f"mtia.{_n}"] = ("unary", _n)
abs = _make("abs", 1, {**_table(1, _F, "mtia.fabs"), **_table(1, _I + ("int8", "int16"), "mtia.abs_int")})
EXTERN_FN["mtia.fabs"] = ("unary", "abs")
EXTERN_FN["mtia.abs_int"] = ("unary", "abs")
# ldexp(x, n) = x * 2^n, n an int32 (Inductor's frexp computes its mantissa with it)
ldexp = _make("ldexp", 2, {(core.dtype(f), core.dtype("int32")): ("mtia.ldexp", core.dtype(f)) for f in _F})
EXTERN_FN["mtia.ldexp"] = ("binary", "ldexp")
fma = _make("fma", 3, _table(3, _F, "mtia.fma"))
EXTERN_FN["mtia.fma"] = ("fma", "fma")
isinfinite = None  # not a libdevice function; keep the namespace honest
del isinfinite


def lower_extern(e: Any, op: Any) -> None:
    """Lowering rule for tt.extern_elementwise produced by this module."""
    from backend.program import SFU_FUNCTIONS
    symbol = op.attrs.get("symbol", "")
    if symbol not in EXTERN_FN:
        raise e.error(op, f"extern function '{symbol}' is not available on MTIA")
    family, fn = EXTERN_FN[symbol]
    out = op.result
    dt = op.operands[0].type.elem
    regs = [v.name for v in op.operands]
    tile = e.tile(out)
    if family == "fma":
        e.emit("simd.fma" if tile else "scalar.fma", [out.name], dict(zip("abc", regs)), {"dtype": dt}, op.loc)
        return
    if fn in ("exp10", "remainder", "cbrt", "tgamma", "fdim", "ldexp"):
        _lower_composite(e, op, fn, regs, dt, tile)
        return
    if family in ("unary", "test"):
        engine = ("sfu" if fn in SFU_FUNCTIONS else "simd") if tile else "scalar"
        attrs = {"fn": fn, "dtype": dt}
        if out.type.elem != dt:
            attrs["out_dtype"] = out.type.elem
        e.emit(f"{engine}.unary", [out.name], {"a": regs[0]}, attrs, op.loc)
    else:
        engine = ("sfu" if fn in SFU_FUNCTIONS else "simd") if tile else "scalar"
        e.emit(f"{engine}.binary", [out.name], {"a": regs[0], "b": regs[1]}, {"fn": fn, "dtype": dt}, op.loc)


def _lower_composite(e: Any, op: Any, fn: str, regs: list, dt: str, tile: bool) -> None:
    pre_s = "sfu" if tile else "scalar"
    pre_v = "simd" if tile else "scalar"
    out = op.result.name
    if fn == "exp10":
        t = out + ".t"
        e.emit(f"{pre_v}.binary", [t], {"a": regs[0], "b": 3.321928094887362}, {"fn": "mul", "dtype": dt}, op.loc)
        e.emit(f"{pre_s}.unary", [out], {"a": t}, {"fn": "exp2", "dtype": dt}, op.loc)
    elif fn == "cbrt":
        a, s = out + ".a", out + ".s"
        e.emit(f"{pre_v}.unary", [a], {"a": regs[0]}, {"fn": "abs", "dtype": dt}, op.loc)
        e.emit(f"{pre_s}.binary", [s], {"a": a, "b": 1.0 / 3.0}, {"fn": "pow", "dtype": dt}, op.loc)
        e.emit(f"{pre_v}.binary", [out], {"a": s, "b": regs[0]}, {"fn": "copysign", "dtype": dt}, op.loc)
    elif fn == "ldexp":
        # x * 2^h * 2^(n - h), h = floor(n / 2): each factor a normal power of two for any n
        # whose result is finite (x * 2^n in one step would overflow 2^n past 2^127)
        nf, h, r, ph, pr, t = (out + s for s in (".n", ".h", ".r", ".ph", ".pr", ".t"))
        e.emit(f"{pre_v}.cast", [nf], {"a": regs[1]}, {"kind": "sitofp", "from": op.operands[1].type.elem, "to": dt},
               op.loc)
        e.emit(f"{pre_v}.binary", [h], {"a": nf, "b": 0.5}, {"fn": "mul", "dtype": dt}, op.loc)
        e.emit(f"{pre_v}.unary", [h], {"a": h}, {"fn": "floor", "dtype": dt}, op.loc)
        e.emit(f"{pre_v}.binary", [r], {"a": nf, "b": h}, {"fn": "sub", "dtype": dt}, op.loc)
        e.emit(f"{pre_s}.unary", [ph], {"a": h}, {"fn": "exp2", "dtype": dt}, op.loc)
        e.emit(f"{pre_s}.unary", [pr], {"a": r}, {"fn": "exp2", "dtype": dt}, op.loc)
        e.emit(f"{pre_v}.binary", [t], {"a": regs[0], "b": ph}, {"fn": "mul", "dtype": dt}, op.loc)
        e.emit(f"{pre_v}.binary", [out], {"a": t, "b": pr}, {"fn": "mul", "dtype": dt}, op.loc)
    else:
        raise e.error(op, f"libdevice.{fn} is not available on MTIA")
