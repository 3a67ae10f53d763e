"""Write intrinsic programs by hand: the builder the microbenchmarks and the expert library use.

    b = ProgramBuilder("gemm")
    a, bm, c = b.param_ptr("a", "bf16"), b.param_ptr("b", "bf16"), b.param_ptr("c", "f32")
    acc = b.zeros([128, 128], "f32")
    with b.loop(0, K, 64) as k:
        ta = b.dma_load(a, offset=k, shape=[128, 64], strides=[K, 1], copies=2)
        tb = b.dma_load(bm, offset=b.mul(k, N), shape=[64, 128], strides=[N, 1], copies=2)
        b.matmul(ta, tb, acc)                 # accumulates into acc in place
    b.dma_store(c, acc, offset=0, strides=[N, 1])
    prog = b.build()

Registers are named automatically (`%name_N`) and are mutable: an instruction inside a loop
writes the same register every iteration, and `matmul(a, b, acc)` updates `acc` in place, so
loops need no carried values. Every tile register gets a buffer in local memory when it is
first written (bump allocation, 64-byte aligned; `copies=k` reserves k instances for
multi-buffered DMA); exceeding the PE's local memory is a `LocalMemoryOverflow` naming the
largest buffers.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from backend.program import ITEMSIZE, SFU_FUNCTIONS, Block, Buffer, Instr, Program

ALIGN = 64
Operand = Any  # a Reg, an int / float / bool constant


class LocalMemoryOverflow(ValueError):
    pass


class Reg(str):
    """A register name ("%x_3"); tiles also carry their shape and dtype."""
    shape: list[int] | None
    dtype: str

    def __new__(cls, name: str, dtype: str, shape: Sequence[int] | None = None) -> "Reg":
        r = super().__new__(cls, name)
        r.dtype = dtype
        r.shape = list(shape) if shape is not None else None
        return r

    @property
    def is_tile(self) -> bool:
        return self.shape is not None

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.shape or []:
            n *= d
        return n * ITEMSIZE[self.dtype]


def _is_tile(x: Operand) -> bool:
    return isinstance(x, Reg) and x.is_tile


def _dtype_of(*xs: Operand, default: str = "i64") -> str:
    for x in xs:
        if isinstance(x, Reg):
            return x.dtype
    for x in xs:
        if isinstance(x, float):
            return "f32"
    return default


class ProgramBuilder:
    def __init__(self, name: str, local_mem_bytes: int | None = None, chip: str | None = None):
        if local_mem_bytes is None:
            from backend.configs import load_chip
            local_mem_bytes = int(load_chip(chip)["local_memory"]["bytes"])
        self.name = name
        self.capacity = local_mem_bytes
        self.params: list[dict] = []
        self.buffers: dict[str, Buffer] = {}
        self._top = 0
        self._blocks: list[list[Instr]] = [[]]
        self._counts: dict[str, int] = {}

    # ------------------------------------------------------------------ registers and emission

    def _new(self, hint: str, dtype: str, shape: Sequence[int] | None = None) -> Reg:
        n = self._counts.get(hint, 0)
        self._counts[hint] = n + 1
        return Reg(f"%{hint}_{n}", dtype, shape)

    def emit(self, op: str, dst: Sequence[Reg], args: dict, attrs: dict | None = None,
             bodies: list[Block] | None = None, copies: int = 1) -> Instr:
        """Append one raw instruction (the named helpers below cover the usual ones)."""
        for d in dst:
            if _is_tile(d):
                self._alloc(d, copies)
        args = {k: _plain(v) for k, v in args.items()}
        ins = Instr(op, [str(d) for d in dst], args, attrs or {}, f"{self.name}:{op}", bodies or [])
        ins.waits = sorted({str(v) for v in _flat(args.values()) if isinstance(v, str) and v.startswith("%")})
        self._blocks[-1].append(ins)
        return ins

    def _alloc(self, r: Reg, copies: int) -> None:
        if str(r) in self.buffers:
            return
        size = -(-r.nbytes * copies // ALIGN) * ALIGN
        if self._top + size > self.capacity:
            big = sorted(self.buffers.items(), key=lambda kv: -kv[1].nbytes * kv[1].copies)[:4]
            desc = ", ".join(f"{k} {b.shape} {b.dtype} x{b.copies} ({b.nbytes * b.copies // 1024} KB)" for k, b in big)
            raise LocalMemoryOverflow(
                f"program '{self.name}': tile {r} {r.shape} {r.dtype} x{copies} ({size // 1024} KB) does not fit: "
                f"{self._top // 1024} KB of {self.capacity // 1024} KB local memory already used; largest: {desc}")
        self.buffers[str(r)] = Buffer(list(r.shape), r.dtype, self._top, r.nbytes, copies)
        self._top += size

    def tile(self, shape: Sequence[int], dtype: str, copies: int = 1, name: str = "t") -> Reg:
        """Declare a tile register and its buffer now (`copies` instances), to pass as `out=`."""
        r = self._new(name, dtype, shape)
        self._alloc(r, copies)
        return r

    @property
    def local_mem_used(self) -> int:
        return self._top

    # ------------------------------------------------------------------ parameters

    def _param(self, name: str, kind: str, dtype: str) -> Reg:
        r = Reg(f"%arg_{name}", "ptr" if kind == "ptr" else dtype)
        r.elem = dtype
        self.params.append({"name": name, "kind": kind, "dtype": dtype, "reg": str(r)})
        return r

    def param_ptr(self, name: str, dtype: str) -> Reg:
        """A tensor argument: a pointer to elements of `dtype`."""
        return self._param(name, "ptr", dtype)

    def param_int(self, name: str, dtype: str = "i32") -> Reg:
        return self._param(name, "int", dtype)

    def param_float(self, name: str, dtype: str = "f32") -> Reg:
        return self._param(name, "float", dtype)

    # ------------------------------------------------------------------ scalar engine

    def pid(self, axis: int = 0) -> Reg:
        r = self._new(f"pid{axis}", "i32")
        self.emit("scalar.pid", [r], {}, {"axis": axis})
        return r

    def nprog(self, axis: int = 0) -> Reg:
        r = self._new(f"nprog{axis}", "i32")
        self.emit("scalar.nprog", [r], {}, {"axis": axis})
        return r

    def const(self, value: int | float, dtype: str | None = None) -> Reg:
        dtype = dtype or ("f32" if isinstance(value, float) else "i64")
        r = self._new("c", dtype)
        self.emit("scalar.const", [r], {}, {"value": value})
        return r

    def scalar(self, fn: str, a: Operand, b: Operand, dtype: str | None = None) -> Reg:
        dtype = dtype or _dtype_of(a, b)
        r = self._new(fn, dtype)
        self.emit("scalar.binary", [r], {"a": a, "b": b}, {"fn": fn, "dtype": dtype})
        return r

    # ------------------------------------------------------------------ elementwise (scalar or tile)

    def binary(self, fn: str, a: Operand, b: Operand, dtype: str | None = None, out: Reg | None = None) -> Reg:
        """fn(a, b): on the scalar core for two scalars, else on SIMD (SFU for pow / atan2 ...)."""
        if not (_is_tile(a) or _is_tile(b)):
            return self.scalar(fn, a, b, dtype)
        t = a if _is_tile(a) else b
        dtype = dtype or t.dtype
        r = out or self._new(fn, dtype, t.shape)
        eng = "sfu" if fn in SFU_FUNCTIONS else "simd"
        self.emit(f"{eng}.binary", [r], {"a": a, "b": b}, {"fn": fn, "dtype": dtype})
        return r

    def add(self, a: Operand, b: Operand, out: Reg | None = None) -> Reg:
        return self.binary("add", a, b, out=out)

    def sub(self, a: Operand, b: Operand, out: Reg | None = None) -> Reg:
        return self.binary("sub", a, b, out=out)

    def mul(self, a: Operand, b: Operand, out: Reg | None = None) -> Reg:
        return self.binary("mul", a, b, out=out)

    def div(self, a: Operand, b: Operand, out: Reg | None = None) -> Reg:
        fp = (_is_tile(a) or _is_tile(b)) and "f" in _dtype_of(a, b)
        return self.binary("div" if fp or "f" in _dtype_of(a, b) else "sdiv", a, b, out=out)

    def maximum(self, a: Operand, b: Operand, out: Reg | None = None) -> Reg:
        return self.binary("fmax" if "f" in _dtype_of(a, b) else "smax", a, b, out=out)

    def minimum(self, a: Operand, b: Operand, out: Reg | None = None) -> Reg:
        return self.binary("fmin" if "f" in _dtype_of(a, b) else "smin", a, b, out=out)

    def unary(self, fn: str, a: Reg, out: Reg | None = None) -> Reg:
        """fn(a) on a tile: transcendentals (exp, log, tanh, ...) go to the SFU, the rest to SIMD."""
        r = out or self._new(fn, a.dtype, a.shape)
        eng = "sfu" if fn in SFU_FUNCTIONS else "simd"
        self.emit(f"{eng}.unary", [r], {"a": a}, {"fn": fn, "dtype": a.dtype})
        return r

    def exp(self, a: Reg, out: Reg | None = None) -> Reg:
        return self.unary("exp", a, out)

    def fma(self, a: Operand, b: Operand, c: Operand, out: Reg | None = None) -> Reg:
        """a * b + c on SIMD (two flops per element)."""
        t = next(x for x in (a, b, c) if _is_tile(x))
        r = out or self._new("fma", t.dtype, t.shape)
        self.emit("simd.fma", [r], {"a": a, "b": b, "c": c}, {"dtype": t.dtype})
        return r

    def cast(self, a: Reg, to: str, out: Reg | None = None) -> Reg:
        r = out or self._new("cast", to, a.shape)
        self.emit("simd.cast", [r], {"a": a}, {"kind": "convert", "from": a.dtype, "to": to})
        return r

    def splat(self, value: Operand, shape: Sequence[int], dtype: str, out: Reg | None = None) -> Reg:
        r = out or self._new("splat", dtype, shape)
        self.emit("simd.splat", [r], {"a": value}, {"shape": list(shape), "dtype": dtype})
        return r

    def zeros(self, shape: Sequence[int], dtype: str = "f32", out: Reg | None = None) -> Reg:
        return self.splat(0, shape, dtype, out)

    def iota(self, n: int, start: int = 0) -> Reg:
        r = self._new("iota", "i32", [n - start])
        self.emit("simd.iota", [r], {}, {"start": start, "end": n})
        return r

    def addptr(self, base: Reg, offsets: Reg, dtype: str | None = None) -> Reg:
        """A tile of byte addresses base + offsets * itemsize (for gathers' scalar fallback)."""
        dtype = dtype or getattr(base, "elem", "f32")
        r = self._new("ptrs", "i64", offsets.shape)
        self.emit("simd.addptr", [r], {"base": base, "offset": offsets}, {"elsize": ITEMSIZE[dtype]})
        return r

    # ------------------------------------------------------------------ dot product engine

    def matmul(self, a: Reg, b: Reg, acc: Reg | None = None, out: Reg | None = None,
               out_dtype: str | None = None) -> Reg:
        """out = a @ b + acc. With `acc` and no `out`, accumulates into acc in place."""
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(f"matmul: a {a.shape} and b {b.shape} do not chain")
        shape = a.shape[:-1] + [b.shape[-1]]
        out_dtype = out_dtype or (acc.dtype if acc is not None else ("i32" if a.dtype == "i8" else "f32"))
        if acc is None:
            acc = self.zeros(shape, out_dtype)
        r = out if out is not None else acc
        self.emit("dpe.matmul", [r], {"a": a, "b": b, "acc": acc}, {"in_dtype": a.dtype, "out_dtype": out_dtype})
        return r

    # ------------------------------------------------------------------ reduction engine, layout unit

    def reduce(self, x: Reg, axis: int, kind: str = "sum", out: Reg | None = None) -> Reg:
        shape = [d for i, d in enumerate(x.shape) if i != axis % len(x.shape)]
        r = out or self._new(f"r{kind}", x.dtype, shape)
        self.emit("re.reduce", [r], {"srcs": [x]}, {"axis": axis, "kind": kind})
        return r

    def broadcast(self, x: Reg, shape: Sequence[int], out: Reg | None = None) -> Reg:
        r = out or self._new("bcast", x.dtype, shape)
        self.emit("mlu.broadcast", [r], {"a": x}, {"shape": list(shape)})
        return r

    def reshape(self, x: Reg, shape: Sequence[int], view: bool = True) -> Reg:
        r = self._new("view" if view else "reshape", x.dtype, shape)
        self.emit("mlu.reshape", [r], {"a": x}, {"shape": list(shape), "view": view})
        return r

    def transpose(self, x: Reg, order: Sequence[int] | None = None, out: Reg | None = None) -> Reg:
        order = list(order) if order is not None else list(range(len(x.shape)))[::-1]
        r = out or self._new("perm", x.dtype, [x.shape[i] for i in order])
        self.emit("mlu.permute", [r], {"a": x}, {"order": order})
        return r

    # ------------------------------------------------------------------ DMA

    def dma_load(self, ptr: Reg, offset: Operand, shape: Sequence[int], strides: Sequence[Operand],
                 copies: int = 1, lo: Sequence[Operand] | None = None, hi: Sequence[Operand] | None = None,
                 mask: Reg | None = None, other: Operand = None, dtype: str | None = None,
                 out: Reg | None = None) -> Reg:
        """Structured DMA_IN of a box: dst[idx] = ptr[offset + sum(idx_d * strides_d)] (element units);
        lo/hi bound the box (outside: `other`). `copies=2` double-buffers the destination."""
        dtype = dtype or getattr(ptr, "elem", None) or "f32"
        r = out or self._new("ld", dtype, shape)
        self.emit("dma_in.load", [r], {"base": ptr, "offset": offset, "strides": list(strides),
                                       "lo": list(lo) if lo else None, "hi": list(hi) if hi else None,
                                       "mask": mask, "other": other},
                  {"shape": list(shape), "dtype": dtype}, copies=copies)
        return r

    def dma_store(self, ptr: Reg, value: Reg, offset: Operand, strides: Sequence[Operand],
                  lo: Sequence[Operand] | None = None, hi: Sequence[Operand] | None = None,
                  mask: Reg | None = None, dtype: str | None = None) -> Instr:
        dtype = dtype or getattr(ptr, "elem", None) or value.dtype
        return self.emit("dma_out.store", [], {"base": ptr, "offset": offset, "strides": list(strides),
                                               "lo": list(lo) if lo else None, "hi": list(hi) if hi else None,
                                               "value": value, "mask": mask},
                         {"shape": list(value.shape), "dtype": dtype})

    def gather(self, ptr: Reg, offsets: Reg, mask: Reg | None = None, other: Operand = None,
               run: int = 1, copies: int = 1, offset: Operand = 0, strides: list | None = None,
               shape: list | None = None) -> Reg:
        """Index-driven DMA_IN: dst[idx] = ptr[offset + sum(idx_d * strides[d]) + offsets[idx]]
        (offsets broadcast to `shape`); `run` contiguous elements per index."""
        dtype = getattr(ptr, "elem", "f32")
        shape = list(shape or offsets.shape)
        r = self._new("gather", dtype, shape)
        self.emit("dma_in.gather", [r], {"base": ptr, "offset": offset, "strides": strides or [0] * len(shape),
                                         "resid": [offsets], "mask": mask, "other": other},
                  {"dtype": dtype, "shape": shape, "views": [_view(offsets.shape, len(shape))], "run": run},
                  copies=copies)
        return r

    def scatter(self, ptr: Reg, offsets: Reg, value: Reg, mask: Reg | None = None, run: int = 1,
                offset: Operand = 0, strides: list | None = None) -> Instr:
        """Index-driven DMA_OUT, the inverse of gather."""
        dtype = getattr(ptr, "elem", "f32")
        shape = list(value.shape)
        return self.emit("dma_out.scatter", [], {"base": ptr, "offset": offset,
                                                 "strides": strides or [0] * len(shape), "resid": [offsets],
                                                 "mask": mask, "value": value},
                         {"dtype": dtype, "shape": shape, "views": [_view(offsets.shape, len(shape))], "run": run})

    def scalar_load(self, addrs: Reg, dtype: str, mask: Reg | None = None, other: Operand = None) -> Reg:
        """The slow path: one scalar access per element at a tile of byte addresses."""
        r = self._new("sld", dtype, addrs.shape)
        self.emit("scalar.load", [r], {"addr": addrs, "mask": mask, "other": other}, {"dtype": dtype})
        return r

    def scalar_store(self, addrs: Reg, value: Reg, dtype: str, mask: Reg | None = None) -> Instr:
        return self.emit("scalar.store", [], {"addr": addrs, "value": value, "mask": mask}, {"dtype": dtype})

    # ------------------------------------------------------------------ control flow

    @contextlib.contextmanager
    def loop(self, lb: Operand, ub: Operand, step: Operand = 1, name: str = "i") -> Iterator[Reg]:
        """`with b.loop(0, K, 64) as k:` a counted loop; the body is everything emitted inside."""
        iv = self._new(name, "i64")
        self._blocks.append([])
        try:
            yield iv
        finally:
            body = self._blocks.pop()
        self.emit("ctl.for", [], {"lb": lb, "ub": ub, "step": step, "inits": []}, {"stages": 1},
                  [Block([str(iv)], body, [])])

    # ------------------------------------------------------------------ result

    def build(self) -> Program:
        if len(self._blocks) != 1:
            raise ValueError(f"program '{self.name}': build() inside an open loop")
        return Program(self.name, list(self.params), Block([], list(self._blocks[0]), []), dict(self.buffers),
                       self._top, {"builder": True})


def _flat(xs: Any) -> Iterator[Any]:
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _plain(x: Any) -> Any:
    """Registers as plain str in instructions (the program is plain, serialisable data)."""
    if isinstance(x, Reg):
        return str(x)
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _view(shape, rank: int) -> list:
    """An offsets tile's shape right-aligned to the tile's rank (leading unit dims)."""
    shape = list(shape)
    return [1] * (rank - len(shape)) + shape
