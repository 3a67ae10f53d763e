"""Shared pieces of the expert library: registration, program cache, launch, work partitioning,
index-driven DMA and the few elementwise formulas several families use.

Conventions every expert program follows:
  - persistent grid: at most one program per PE (64 on MTIA 2i); a program loops over its
    contiguous share of the work, so no `replace_us` is paid between programs;
  - every streamed tile is double-buffered (copies=2) so DMA of tile i+1 overlaps compute on i,
    and results are double-buffered so the store of tile i overlaps compute on tile i+1;
  - ragged edges use the DMA box bounds (lo/hi): masked-off elements are neither read nor written;
  - low-precision inputs are computed in FP32 on SIMD and rounded once on the way out.
"""
from __future__ import annotations

import functools
import math
import os
import sys
from typing import Any, Callable, Sequence

import torch

from backend.configs import DEFAULT_CHIP, load_chip
from backend.sim.builder import LocalMemoryOverflow, Reg
from backend.sim.builder import ProgramBuilder as _Builder

DT = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.int8: "i8",
      torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8"}


def current_chip() -> str:
    """The chip the driver is set to (backend.driver.set_chip), else $MTIA_CHIP / the default."""
    drv = sys.modules.get("backend.driver")
    return drv.DEVICE.chip if drv is not None else os.environ.get("MTIA_CHIP", DEFAULT_CHIP)


def n_pes(chip: str | None = None) -> int:
    c = load_chip(chip or current_chip())
    return int(c["pe_grid"]["rows"]) * int(c["pe_grid"]["cols"])


def local_bytes(chip: str | None = None) -> int:
    return int(load_chip(chip or current_chip())["local_memory"]["bytes"])


class ProgramBuilder(_Builder):
    """The ISA builder, sized to the local memory of the chip the driver is set to."""

    def __init__(self, name: str, local_mem_bytes: int | None = None, chip: str | None = None):
        super().__init__(name, local_mem_bytes if local_mem_bytes is not None else local_bytes(chip), chip)


def first_fit(build: Callable, candidates):
    """build(c) for the first candidate whose buffers fit the local memory (largest first)."""
    err = None
    for c in candidates:
        try:
            return build(c)
        except LocalMemoryOverflow as e:
            err = e
    raise err if err is not None else LocalMemoryOverflow("no candidate tile size")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pow2_at_least(n: int, lo: int = 1) -> int:
    return max(lo, 1 << max(0, math.ceil(math.log2(max(n, 1)))))


def cached(fn: Callable) -> Callable:
    """Programs are plain data: one per (chip, shape/dtype key). The chip is part of the key:
    tile sizes follow the chip's local memory and PE count."""
    at = functools.lru_cache(maxsize=None)(lambda chip, *a, **kw: fn(*a, **kw))

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return at(current_chip(), *a, **kw)
    wrapper.cache_clear = at.cache_clear
    wrapper.cache_info = at.cache_info
    return wrapper


# ----------------------------------------------------------------------------- launching

LAUNCH_MODE = {"mode": "functional"}  # study/expert_check.py switches dense programs to timing-only


def launch(prog, grid: int | Sequence[int], args: list[Any], data_independent: bool = True):
    """Run through backend.driver.launch (so record_launches() sees it like a Triton launch).
    With LAUNCH_MODE 'timing' a data-independent program is priced without computing tile data
    (same events, same cycles; outputs are garbage) - used only by the check script."""
    from backend import driver
    g = (grid, 1, 1) if isinstance(grid, int) else tuple(grid) + (1,) * (3 - len(grid))
    if LAUNCH_MODE["mode"] == "timing" and data_independent:
        return _launch_timing(prog, g, args)
    return driver.launch(prog, g, args)


def _launch_timing(prog, grid, args):
    import time

    from backend import driver
    from backend.sim.executor import execute
    t0 = time.perf_counter()
    chip = load_chip(driver.DEVICE.chip)
    traces = execute(prog, grid, args, mode="timing")
    t = driver.price(prog, traces, chip)  # the driver's memory regime, as for every launch
    rec = driver.KernelRecord(prog.name, grid, chip["name"], t.cycles, t.time_us, time.perf_counter() - t0, t)
    driver.DEVICE.clock_us += t.time_us
    for fn in list(driver.DEVICE.listeners):
        fn(rec)
    return rec


# ----------------------------------------------------------------------------- builder helpers

def pid64(b: ProgramBuilder, axis: int = 0) -> Reg:
    """The program id as an i64 scalar (pid is i32: offsets derived from it would wrap)."""
    return b.scalar("add", b.pid(axis), 0, "i64")


def s64(b: ProgramBuilder, fn: str, x, y) -> Reg:
    return b.scalar(fn, x, y, "i64")


def smin(b: ProgramBuilder, x, y) -> Reg:
    return b.scalar("smin", x, y, "i64")


class if_then:
    """`with if_then(b, cond) as br:` the instructions emitted inside run only when the scalar
    `cond` holds; `with br.otherwise():` after it (still inside) gives the else branch.
    ctl.if without results (registers are global names: values written inside stay visible)."""

    def __init__(self, b: ProgramBuilder, cond: Reg):
        self.b, self.cond, self.els = b, cond, []

    def __enter__(self):
        self.b._blocks.append([])
        return self

    def otherwise(self):
        outer = self

        class _Else:
            def __enter__(self):
                outer.b._blocks.append([])

            def __exit__(self, *exc):
                outer.els = outer.b._blocks.pop()
                return False
        return _Else()

    def __exit__(self, *exc):
        from backend.program import Block
        body = self.b._blocks.pop()
        if exc[0] is None:
            self.b.emit("ctl.if", [], {"cond": self.cond}, {}, [Block([], body, []), Block([], self.els, [])])
        return False


def pipelined_segments(b: ProgramBuilder, segs: Sequence[tuple]) -> None:
    """Software-pipelined streaming over consecutive segments of tiles.

    segs: (first, last, load, body[, burst]) per segment, run in order; body(regs, t) for every
    t in [first, last) of each. The loads of the next tile (of the same or the next segment) are
    issued before the body of the current one: the command processor issues in order and stalls
    once an engine queue holds 8 entries, so a body of more than 8 SIMD ops would otherwise hold
    back the next DMA until the current tile has arrived (the DMA engine idles for the DMA
    latency plus most of the body, every tile). A segment's loop is unrolled by two, two
    register sets alternate (load(t, regs) issues tile t's loads into `regs`, None: new
    registers, and returns them); every load and body beyond a segment's end is skipped (ctl.if),
    so odd counts compute no phantom tile.
    burst = n (last segment only, last - first <= n): its loads all go out at once, each into
    its own register set, before the previous segment's last body. Meant for a stream of big
    tiles that ends in a few small ones (few DMA descriptors, a short tail: the work left after
    the last byte arrives): one tile of lookahead would not cover a big tile's body with small
    tiles' transfers."""
    nseg = len(segs)
    assert all(len(sg) < 5 or sg[4] is None or k == nseg - 1 for k, sg in enumerate(segs)), \
        "only the last segment may be a burst"
    regs: list[list] = [[None] * max(2, (sg[4] if len(sg) > 4 and sg[4] else 0)) for sg in segs]

    def burst(k):
        return segs[k][4] if len(segs[k]) > 4 else None

    def first_load(k):
        f, l, ld = segs[k][:3]
        if burst(k):
            for i in range(burst(k)):
                ti = s64(b, "add", f, i)
                with if_then(b, scmp(b, "slt", ti, l)):
                    regs[k][i] = ld(ti, regs[k][i])
        else:
            regs[k][0] = ld(f, regs[k][0])

    def lookahead(k):
        # the first load(s) of the next non-empty segment after k (nothing if none)
        if k + 1 >= nseg:
            return
        f, l = segs[k + 1][:2]
        with if_then(b, scmp(b, "slt", f, l)) as br:
            first_load(k + 1)
            with br.otherwise():
                lookahead(k + 1)

    lookahead(-1)  # the very first load: of the first non-empty segment
    for k, sg in enumerate(segs):
        f, l, ld, bd = sg[:4]
        if burst(k):
            for i in range(burst(k)):
                ti = s64(b, "add", f, i)
                with if_then(b, scmp(b, "slt", ti, l)):
                    bd(regs[k][i], ti)
            continue
        def issue_next(t_next, slot, k=k, l=l, ld=ld):
            """Load tile t_next into register set `slot`, or past the segment's end the
            next segment's first tile."""
            with if_then(b, scmp(b, "slt", t_next, l)) as br:
                regs[k][slot] = ld(t_next, regs[k][slot])
                with br.otherwise():
                    lookahead(k)

        with b.loop(f, l, 2, name="pair") as t:
            t1 = s64(b, "add", t, 1)
            issue_next(t1, 1)
            bd(regs[k][0], t)
            with if_then(b, scmp(b, "slt", t1, l)):
                issue_next(s64(b, "add", t, 2), 0)
                bd(regs[k][1], t1)


def scmp(b: ProgramBuilder, pred: str, x, y) -> Reg:
    """Scalar integer compare on the control core (i1)."""
    r = b._new("cmp", "i1")
    b.emit("scalar.cmp", [r], {"a": x, "b": y}, {"pred": pred, "dtype": "i64"})
    return r


def partition(n_items: int, workers: int | None = None) -> tuple[int, int]:
    """Contiguous split of n_items over the PEs: (grid, items per program)."""
    workers = workers or n_pes()
    per = cdiv(n_items, min(workers, max(n_items, 1)))
    return cdiv(n_items, per), per


def gather(b: ProgramBuilder, ptr: Reg, shape: Sequence[int], resid: Sequence[tuple[Reg, Sequence[int]]],
           strides: Sequence[Any], offset: Any = 0, mask: Reg | None = None, other: Any = None,
           run: int = 1, copies: int = 1, out: Reg | None = None, dtype: str | None = None) -> Reg:
    """Index-driven DMA_IN (dma_in.gather in the format backend/sim/memory.py reads):
    dst[idx] = ptr[offset + sum(idx_d * strides_d) + sum(resid_i viewed as views_i)] under `mask`.
    `run` = contiguous elements per index (one gathered row), priced per run.
    (ProgramBuilder.gather emits args memory.py does not read - see the report.)"""
    dtype = dtype or getattr(ptr, "elem", "f32")
    r = out or b._new("gather", dtype, shape)
    b.emit("dma_in.gather", [r], {"base": ptr, "offset": offset, "strides": list(strides),
                                  "resid": [x for x, _ in resid], "mask": mask, "other": other},
           {"dtype": dtype, "shape": list(shape), "views": [list(v) for _, v in resid], "run": run},
           copies=copies)
    return r


def cmp(b: ProgramBuilder, pred: str, x, y, out: Reg | None = None) -> Reg:
    """Elementwise compare on SIMD (the builder has no helper for simd.cmp)."""
    t = x if isinstance(x, Reg) and x.is_tile else y
    r = out or b._new("cmp", "i1", t.shape)
    b.emit("simd.cmp", [r], {"a": x, "b": y}, {"pred": pred, "dtype": t.dtype})
    return r


def to_f32(b: ProgramBuilder, x: Reg, out: Reg | None = None) -> Reg:
    return x if x.dtype == "f32" else b.cast(x, "f32", out=out)


# ----------------------------------------------------------------------------- formulas (f32 tiles)

GELU_C = math.sqrt(2.0 / math.pi)


def gelu_tanh(b: ProgramBuilder, x: Reg, tmp: list[Reg], out: Reg) -> Reg:
    """0.5 x (1 + tanh(c (x + 0.044715 x^3))): 4 SIMD passes + 1 SFU pass."""
    t0, t1 = tmp
    b.mul(x, x, out=t0)
    b.fma(t0, 0.044715 * GELU_C, GELU_C, out=t0)
    b.mul(t0, x, out=t0)
    b.unary("tanh", t0, out=t1)
    b.fma(t1, 0.5, 0.5, out=t1)
    return b.mul(x, t1, out=out)


def gelu_erf(b: ProgramBuilder, x: Reg, tmp: list[Reg], out: Reg) -> Reg:
    t0, t1 = tmp
    b.mul(x, 1.0 / math.sqrt(2.0), out=t0)
    b.unary("erf", t0, out=t1)
    b.fma(t1, 0.5, 0.5, out=t1)
    return b.mul(x, t1, out=out)


def silu(b: ProgramBuilder, x: Reg, tmp: list[Reg], out: Reg) -> Reg:
    b.unary("sigmoid", x, out=tmp[0])
    return b.mul(x, tmp[0], out=out)


ACTS = {"gelu_tanh": gelu_tanh, "gelu": gelu_erf, "none": gelu_erf, "silu": silu}
