"""Per-instruction fast paths for the executor's hot loop.

`specialise(ins)` returns a runner for one instruction whose operands and attributes are
fixed, or None when the generic semantics in backend/sim/isa.py must run. A runner computes
exactly what the generic semantics compute (same values, same cost inputs, same errors, by
falling back to the generic code for every unusual case); it only hoists the work that does
not change from one execution to the next (attribute look-ups, dtype widths, which operands
are registers) out of the loop. A 4096^3 GEMM runs its scalar address arithmetic about half a
million times, so this per-execution overhead is most of the simulator's host time.

`gc_paused` wraps a whole launch: a launch allocates hundreds of thousands of long-lived
event tuples and cost dicts, which Python's cyclic garbage collector would otherwise traverse
again and again while they accumulate (a quarter of a softmax launch's host time). The
simulator creates no reference cycles per event, so nothing is lost by collecting afterwards.
"""
from __future__ import annotations

import contextlib
import functools
import gc
from typing import Any, Callable, Iterator, TypeVar

from backend.sim.isa import INT_BITS, SEMANTICS, ExecState, Instr, _div_trunc_int

Runner = Callable[[ExecState, Instr], Any]
F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (restored to its previous state afterwards)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def without_gc(fn: F) -> F:
    """`fn` runs under gc_paused."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _operand(x: Any) -> tuple[str | None, Any]:
    """(register name, None) for a register operand, (None, value) for an immediate."""
    if isinstance(x, str):
        return x, None
    return None, x


def _int_binary(ins: Instr) -> Runner | None:
    fn, dtype = ins.attrs["fn"], ins.attrs["dtype"]
    bits = INT_BITS.get(dtype)
    if bits is None or bits == 1 or fn not in _INT_FNS:
        return None
    ra, ca = _operand(ins.args["a"])
    rb, cb = _operand(ins.args["b"])
    if (ra is None and not isinstance(ca, (int, float))) or (rb is None and not isinstance(cb, (int, float))):
        return None
    ca = int(ca) if ra is None else None
    cb = int(cb) if rb is None else None
    op = _INT_FNS[fn]
    mask, sign, full = (1 << bits) - 1, 1 << (bits - 1), 1 << bits
    dst = ins.dst[0]
    generic = SEMANTICS[ins.op].run
    divides = fn in ("sdiv", "srem")

    def run(st: ExecState, ins: Instr) -> None:
        r = st.r
        a = int(r[ra]) if ra is not None else ca
        b = int(r[rb]) if rb is not None else cb
        if divides and b == 0:
            return generic(st, ins)  # raises the kernel's division-by-zero error
        v = op(a, b) & mask  # wrap_int: two's complement at the register's width
        r[dst] = v - full if v & sign else v
        return None
    return run


_INT_FNS: dict[str, Callable[[int, int], int]] = {
    "add": int.__add__, "sub": int.__sub__, "mul": int.__mul__, "and": int.__and__, "or": int.__or__,
    "xor": int.__xor__, "smin": min, "smax": max, "sdiv": _div_trunc_int,
    "srem": lambda a, b: a - _div_trunc_int(a, b) * b,
}


def _const(ins: Instr) -> Runner:
    dst, value = ins.dst[0], ins.attrs["value"]

    def run(st: ExecState, ins: Instr) -> None:
        st.r[dst] = value
    return run


def _pid(ins: Instr) -> Runner:
    dst, axis = ins.dst[0], ins.attrs["axis"]

    def run(st: ExecState, ins: Instr) -> None:
        st.r[dst] = st.pid[axis]
    return run


_SPECIALISE: dict[str, Callable[[Instr], Runner | None]] = {
    "scalar.binary": _int_binary, "scalar.const": _const, "scalar.pid": _pid,
}


def specialise(ins: Instr) -> Runner | None:
    """A runner for `ins` equivalent to SEMANTICS[ins.op].run, or None (use the generic one)."""
    make = _SPECIALISE.get(ins.op)
    return make(ins) if make is not None else None
