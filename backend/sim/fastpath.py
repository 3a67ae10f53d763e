"""Per-instruction fast paths for the executor's hot loop.

`specialise(ins, mode, generic)` returns a runner for one instruction whose operands and attributes are
fixed, or None when the generic semantics in backend/sim/isa.py must run. A runner computes
exactly what the generic semantics compute (same values, same cost inputs, same errors, by
falling back to the generic code for every unusual case); it only hoists the work that does
not change from one execution to the next (attribute look-ups, dtype widths, which operands
are registers) out of the loop. A 4096^3 GEMM runs its scalar address arithmetic about half a
million times, so this per-execution overhead is most of the simulator's host time. (A little
over 400 lines: one maker per hot instruction, each read next to its generic counterpart;
splitting them would only scatter that correspondence.)

`gc_paused` wraps a whole launch: a launch allocates hundreds of thousands of long-lived
event tuples and cost dicts, which Python's cyclic garbage collector would otherwise traverse
again and again while they accumulate (a quarter of a softmax launch's host time). The
simulator creates no reference cycles per event, so nothing is lost by collecting afterwards.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import math
from typing import Any, Callable, Iterator, TypeVar

import torch

from backend.program import INT_BITS, ITEMSIZE, SFU_FUNCTIONS, TORCH_DTYPE, Instr
from backend.sim.cost.inputs import (DmaInputs, MatmulInputs, dma_extent, dma_inputs, fma_inputs, matmul_inputs,
                                     reduce_inputs, vector_inputs)
from backend.sim.isa import _FP8, BINARY, CMP, UNARY, ExecState, _div_trunc_int, _reduce_builtin, widen_fp8
from backend.sim.memory import _descriptor_plan, _non_overlapping

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


def _int_binary(ins: Instr, generic: Runner) -> Runner | None:
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


def _const(ins: Instr, generic: Runner) -> Runner:
    dst, value = ins.dst[0], ins.attrs["value"]

    def run(st: ExecState, ins: Instr) -> None:
        st.r[dst] = value
    return run


def _pid(ins: Instr, generic: Runner) -> Runner:
    dst, axis = ins.dst[0], ins.attrs["axis"]

    def run(st: ExecState, ins: Instr) -> None:
        st.r[dst] = st.pid[axis]
    return run


# ----------------------------------------------------------------------------- tile work

_FLOATS = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


def _scalar_tile(x: float, tdt: torch.dtype) -> torch.Tensor:
    """isa.as_tensor of a Python float: torch.scalar_tensor gives the same bits as torch.tensor
    for every float dtype (checked over edge and random values) at a third of the cost; where it
    refuses a value (out of the format's range) torch.tensor decides, as before."""
    try:
        return torch.scalar_tensor(x, dtype=tdt)
    except (RuntimeError, OverflowError):
        return torch.tensor(x, dtype=tdt)


def _tile_binary(ins: Instr, generic: Runner) -> Runner | None:
    """simd.binary / sfu.binary (isa._tile_binary)."""
    fn, dtype = ins.attrs["fn"], ins.attrs["dtype"]
    if fn in ("sdiv", "srem", "udiv", "urem"):
        return None  # the division-by-zero check: the generic code
    return _two_operands(ins, BINARY[fn], dtype, TORCH_DTYPE[dtype])


def _tile_cmp(ins: Instr, generic: Runner) -> Runner | None:
    """simd.cmp (isa._simd_cmp): a bool tile."""
    return _two_operands(ins, CMP[ins.attrs["pred"]], ins.attrs["dtype"], torch.bool)


def _two_operands(ins: Instr, op: Callable, dtype: str, out_tdt: torch.dtype) -> Runner | None:
    """op(a, b) on operands that are registers (tiles or scalars, as isa.as_tensor makes them
    tiles of `dtype`) or immediates (converted once: no instruction writes into its operands),
    fp8 widened; the result converted to `out_tdt`; elementwise cost inputs."""
    tdt, dst = TORCH_DTYPE[dtype], ins.dst[0]
    floats = tdt in _FLOATS
    operands = []
    for x in (ins.args["a"], ins.args["b"]):
        if isinstance(x, str):
            operands.append((x, None))
        elif isinstance(x, (bool, int, float)):
            try:
                operands.append((None, torch.tensor(x, dtype=tdt)))
            except Exception:  # noqa: BLE001  (the generic code raises it when it runs)
                return None
        else:
            return None
    (ra, ca), (rb, cb) = operands

    def tile(x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x
        if floats and type(x) is float:
            return _scalar_tile(x, tdt)
        return torch.tensor(x, dtype=tdt)  # isa.as_tensor

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        a = tile(r[ra]) if ra is not None else ca
        b = tile(r[rb]) if rb is not None else cb
        out = op(widen_fp8(a), widen_fp8(b))
        if out.dtype != out_tdt:
            out = out.to(out_tdt)
        r[dst] = out
        return vector_inputs(out.numel(), dtype)
    return run


def _tile_unary(ins: Instr, generic: Runner) -> Runner | None:
    """simd.unary / sfu.unary on a register holding a tile (isa._tile_unary)."""
    fn, dtype = ins.attrs["fn"], ins.attrs["dtype"]
    ra = ins.args["a"]
    if not isinstance(ra, str) or UNARY.get(fn) is None:
        return None
    op, dst = UNARY[fn], ins.dst[0]
    odt = TORCH_DTYPE.get(ins.attrs.get("out_dtype", dtype))
    if odt is None:
        return None
    widen = (torch.float16, torch.bfloat16, *_FP8) if fn in SFU_FUNCTIONS else _FP8

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        a = r[ra]
        if not isinstance(a, torch.Tensor):
            return generic(st, ins)
        out = op(a.float()).to(a.dtype) if a.dtype in widen else op(a)
        if out.dtype != odt:
            out = out.to(odt)
        r[dst] = out
        return vector_inputs(out.numel(), dtype)
    return run


def _cast(ins: Instr, generic: Runner) -> Runner | None:
    """simd.cast of a tile between float formats (isa.cast_tensor's plain conversion)."""
    kind, to = ins.attrs["kind"], ins.attrs["to"]
    ra = ins.args["a"]
    if kind not in ("extf", "truncf") or not isinstance(ra, str):
        return None
    tdt, dst = TORCH_DTYPE[to], ins.dst[0]

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        x = r[ra]
        if not isinstance(x, torch.Tensor):
            return generic(st, ins)
        out = x.to(tdt)
        r[dst] = out
        return vector_inputs(out.numel(), to)
    return run


def _reduce(ins: Instr, generic: Runner) -> Runner | None:
    """re.reduce of one tile with a builtin combine (sum / max / min / xor)."""
    kind, axis = ins.attrs.get("kind"), ins.attrs["axis"]
    srcs = ins.args["srcs"]
    if kind is None or len(srcs) != 1 or not isinstance(srcs[0], str) or len(ins.dst) != 1:
        return None
    src, dst = srcs[0], ins.dst[0]
    combine = len(ins.bodies[0].instrs) if ins.bodies else 1

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        x = r[src]
        if not isinstance(x, torch.Tensor):
            return generic(st, ins)
        o = _reduce_builtin(x, kind, axis)
        r[dst] = o if o.dim() > 0 else o.item()
        return reduce_inputs(x.numel(), o.numel(), combine)
    return run


def _t_elementwise(ins: Instr, generic: Runner) -> Runner | None:
    """Timing mode's elementwise stand-in (executor._t_elementwise) when every tile operand has
    the same shape (broadcasting operands take the generic one)."""
    from backend.sim.memory import placeholder as _placeholder
    attrs = ins.attrs
    regs = tuple(v for v in ins.args.values() if isinstance(v, str))
    out_dtype = "i1" if ins.op == "simd.cmp" else (attrs.get("out_dtype") or attrs.get("to") or attrs.get("dtype"))
    cost_dtype = attrs.get("to") or attrs.get("dtype")
    if not regs or cost_dtype is None or out_dtype is None:
        return None
    inputs = fma_inputs if ins.op == "simd.fma" else vector_inputs
    dst = ins.dst[0]

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        shape = None
        for reg in regs:
            x = r[reg]
            if isinstance(x, torch.Tensor):
                if shape is None:
                    shape = x.shape
                elif x.shape != shape:
                    return generic(st, ins)
        if not shape:
            return generic(st, ins)
        out = _placeholder(st, dst, list(shape), out_dtype)
        return inputs(out.numel(), cost_dtype)
    return run


def _t_matmul(ins: Instr, generic: Runner) -> Runner | None:
    """Timing mode's dpe.matmul stand-in (executor._t_matmul) on two tile registers."""
    from backend.sim.memory import placeholder as _placeholder
    ra, rb = ins.args["a"], ins.args["b"]
    if not isinstance(ra, str) or not isinstance(rb, str):
        return None
    in_dtype, out_dtype, dst = ins.attrs["in_dtype"], ins.attrs["out_dtype"], ins.dst[0]
    odt = TORCH_DTYPE[out_dtype]
    costs: dict[tuple, MatmulInputs] = {}  # (a's shape, n) -> cost inputs, copied per event

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        a, b = r[ra], r[rb]
        sa = a.shape
        n = b.shape[-1]
        out_shape = (*sa[:-1], n)
        cur = r.get(dst)
        if not (isinstance(cur, torch.Tensor) and cur.dtype == odt and cur.shape == out_shape):
            _placeholder(st, dst, list(out_shape), out_dtype)
        c = costs.get((sa, n))
        if c is None:
            m, k = sa[-2], sa[-1]
            c = costs[(sa, n)] = matmul_inputs(a.numel() // (m * k), m, n, k, in_dtype)
        return dict(c)
    return run


def _matmul(ins: Instr, generic: Runner) -> Runner | None:
    """dpe.matmul on float tiles with a tile accumulator of the product's shape (isa._matmul):
    the accumulator is added into the fresh product in place, which rounds exactly as the
    out-of-place sum does and saves a tile allocation per step."""
    ra, rb, rc = ins.args["a"], ins.args["b"], ins.args["acc"]
    if not (isinstance(ra, str) and isinstance(rb, str) and isinstance(rc, str)):
        return None
    in_dtype, out_dtype, dst = ins.attrs["in_dtype"], ins.attrs["out_dtype"], ins.dst[0]
    tdt = TORCH_DTYPE[out_dtype]
    floats = (torch.float16, torch.bfloat16, torch.float32)

    def run(st: ExecState, ins: Instr) -> dict:
        r = st.r
        a, b, acc = r[ra], r[rb], r[rc]
        if not (isinstance(acc, torch.Tensor) and a.dtype in floats and b.dtype in floats):
            return generic(st, ins)
        prod = torch.matmul(a.to(torch.float32), b.to(torch.float32))
        if acc.shape != prod.shape:
            return generic(st, ins)
        out = prod.add_(acc.to(torch.float32)).to(tdt)
        r[dst] = out
        sa = a.shape
        m, k, n = sa[-2], sa[-1], b.shape[-1]
        return matmul_inputs(a.numel() // (m * k), m, n, k, in_dtype)
    return run


# ----------------------------------------------------------------------------- structured DMA

def _dma(ins: Instr, store: bool, timing: bool, generic: Runner) -> Runner | None:
    """Structured DMA without a mask tile: the descriptor, the box and the cost inputs in one
    pass (GlobalMemory._descriptor, then the generic semantics' box arithmetic). Anything
    unusual (a base address not seen yet, a negative stride, a partial box in functional mode,
    an access that may leave the tensor) runs the generic code, which also reports the errors."""
    if ins.args.get("mask") is not None:
        return None
    dtype, shape, breg, bconst, oreg, oconst, stride_ops, bound_ops, const_box = _descriptor_plan(ins)
    if not shape or math.prod(shape) == 0:
        return None
    ins._dplan = (dtype, shape, breg, bconst, oreg, oconst, stride_ops, bound_ops, const_box)
    tdt = TORCH_DTYPE[dtype]
    tshape = torch.Size(shape)
    dst = None if store else ins.dst[0]
    vreg = ins.args.get("value") if store else None
    if store and not isinstance(vreg, str):
        return None
    all_regs = all(x is not None for x, _ in stride_ops)
    bounds = [(lo, hi) for lo, hi in const_box] if const_box is not None else None
    size = ITEMSIZE[dtype]
    # the size part of the cost inputs (bytes, elements, runs, run bytes) depends only on the
    # box's extents and the strides: computed once per distinct pair, the address part per call
    sizes: dict[tuple, tuple[int, int, int, int]] = {}
    held: list = [object()]  # the placeholder tile a timing-mode load left in its register (none yet)
    from backend.sim.memory import placeholder as _placeholder

    def cost(reg: Any, n: int, strides: list[int], start: int, sub: list[int]) -> DmaInputs:
        key = (*sub, *strides)
        c = sizes.get(key)
        if c is None:
            c = sizes[key] = dma_extent(size, n, strides, sub)
        return dma_inputs(c, reg.index, reg.start + start * size)

    def run(st: ExecState, ins: Instr) -> dict:
        r_ = st.r
        mem = st.memory
        hit = mem._bases.get((int(r_[breg]) if breg is not None else bconst, dtype))
        if hit is None:
            return generic(st, ins)  # finds (and caches) the region, or reports the bad address
        reg, base_idx = hit
        start = base_idx + (int(r_[oreg]) if oreg is not None else oconst)
        strides = [int(r_[x]) for x, _ in stride_ops] if all_regs else \
            [int(r_[x]) if x is not None else c for x, c in stride_ops]
        sub = []
        n = 1
        if bounds is not None:
            for (lo, hi), s in zip(bounds, strides):
                if s < 0:
                    return generic(st, ins)
                sub.append(hi - lo)
                start += lo * s
                n *= hi - lo
        else:
            for (d, lreg, lconst, hreg, hconst), s in zip(bound_ops, strides):
                if s < 0:
                    return generic(st, ins)
                if lreg is None:
                    lo = lconst
                else:
                    lo = int(r_[lreg])
                    if lo < 0:
                        lo = 0
                if hreg is None:
                    hi = hconst
                else:
                    hi = int(r_[hreg])
                    if hi > d:
                        hi = d
                if hi < lo:
                    hi = lo
                sub.append(hi - lo)
                start += lo * s
                n *= hi - lo
        if timing:
            if not store:
                cur = r_.get(dst)
                # the tile this load left in the register last time still fits (tensors never
                # change dtype or shape), else the generic check and the launch's shared tile
                if cur is not held[0]:
                    held[0] = _placeholder(st, dst, shape, dtype)
            return cost(reg, n, strides, start, sub)
        if n != tshape.numel() or start < 0:
            return generic(st, ins)
        typed = mem._typed.get((reg.index, dtype))
        if typed is None:
            return generic(st, ins)
        last = start
        for d, s in zip(sub, strides):
            last += (d - 1) * s
        if last >= typed.numel():
            return generic(st, ins)
        block = typed.as_strided(sub, strides, start)
        if store:
            value = r_[vreg]
            # the generic store copies through a strided view only for positive strides that
            # do not overlap (else it scatters element by element)
            if not isinstance(value, torch.Tensor) or value.dtype != tdt or value.shape != tshape \
                    or 0 in strides or not _non_overlapping(sub, strides):
                return generic(st, ins)
            block.copy_(value)
        else:
            r_[dst] = block.clone()
        return cost(reg, n, strides, start, sub)
    return run


Maker = Callable[[Instr, Runner], "Runner | None"]
_BOTH: dict[str, Maker] = {"scalar.binary": _int_binary, "scalar.const": _const, "scalar.pid": _pid}
_FUNCTIONAL: dict[str, Maker] = {
    "simd.binary": _tile_binary, "sfu.binary": _tile_binary, "simd.unary": _tile_unary, "sfu.unary": _tile_unary,
    "simd.cmp": _tile_cmp,
    "simd.cast": _cast, "re.reduce": _reduce, "dpe.matmul": _matmul,
}
_TIMING: dict[str, Maker] = {
    **{op: _t_elementwise for op in ("simd.binary", "sfu.binary", "simd.unary", "sfu.unary", "simd.fma", "simd.cast")},
    "dpe.matmul": _t_matmul,
}


def specialise(ins: Instr, mode: str, generic: Runner) -> Runner | None:
    """A runner for `ins` equivalent to `generic` (its semantics in `mode`: the ISA's, or the
    timing-only stand-in), or None when there is none."""
    try:
        if ins.op in ("dma_in.load", "dma_out.store"):
            return _dma(ins, ins.op == "dma_out.store", mode == "timing", generic)
        make = _BOTH.get(ins.op) or (_TIMING if mode == "timing" else _FUNCTIONAL).get(ins.op)
        return make(ins, generic) if make is not None else None
    except Exception:  # noqa: BLE001
        # a malformed instruction (or an immediate the ISA rejects): the generic code reports
        # it if and when it runs
        return None
