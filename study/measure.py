"""One measurement: a workload's implementation on one shape, dtype and chip.

Inputs are made from a fixed seed; the torch reference runs once; the implementation runs
once, cold: its Triton compiles are timed (compile_s) and its launches, recorded with
record_launches(), are the measurement (simulated cycles summed over its launches). With
cached_compile, it runs once more with only Triton's in-memory cache dropped
(compile_cached_s: the on-disk cache is then warm); `make bench-compile` reports that too.
Derived metrics (TFLOPS, GB/s, roofline fraction) come from the workload's declared FLOPs
and bytes and the chip's peaks, never from the kernel.
"""
from __future__ import annotations

import contextlib
import datetime
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import triton  # noqa: F401  - before backend.driver: Triton's backend discovery imports it (circular otherwise)

from backend.configs import load_chip
from backend.driver import keep_traces, record_launches, reprice, shared_llc
from study.registry import Shape, Workload
from study.roofline import chip_peaks, offchip_bytes, roofline_fraction
from study.tolerances import tolerance

SEED = 0


# ----------------------------------------------------------------------------- correctness

def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _tensors(out[k])]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


@dataclass
class Comparison:
    max_abs_err: float | None
    max_rel_err: float | None
    correct: bool
    why: str = ""


# elements compared at a time: float64 copies of a whole 10^8-element output cost seconds, and
# chunks that stay in the host's cache are about 1.6x faster than 1M-element ones (33M FP32
# elements on a 2-core host: 0.62 s at 1M, 0.38 s at 16K)
_CHUNK = 1 << 15


def compare(out: Any, ref: Any, dtype: str) -> Comparison:
    """docs/study.md tolerances (study/tolerances.py): |out - ref| <= tol + tol * |ref| elementwise (exact for ints).
    Compared in float64, a chunk of the flattened tensors at a time (same result as whole)."""
    got, want = _tensors(out), _tensors(ref)
    if len(got) != len(want) or not want:
        return Comparison(None, None, False, f"returned {len(got)} tensors, torch returned {len(want)}")
    tol = tolerance(dtype)
    max_abs = max_rel = 0.0
    ok = True
    tiny = torch.finfo(torch.float64).tiny
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return Comparison(None, None, False, f"shape {tuple(g.shape)}, torch gives {tuple(w.shape)}")
        g_flat, w_flat = g.detach().cpu().reshape(-1), w.detach().cpu().reshape(-1)
        for lo in range(0, g_flat.numel(), _CHUNK):
            g64 = g_flat[lo:lo + _CHUNK].to(torch.float64)
            w64 = w_flat[lo:lo + _CHUNK].to(torch.float64)
            ok &= torch.equal(g64.isnan(), w64.isnan())
            if g64.numel():
                # NaN where both are NaN or both the same infinity: exact matches (a NaN in one
                # only is the mismatch above); no masking copies, the hot path of a sweep
                diff = torch.nan_to_num(torch.sub(g64, w64).abs_(), nan=0.0)
                ref_abs = torch.nan_to_num(w64.abs(), nan=0.0)
                max_abs = max(max_abs, float(diff.max()))
                max_rel = max(max_rel, float(torch.div(diff, ref_abs.clamp_min(tiny)).max()))
                ok &= bool(torch.le(diff, ref_abs.mul_(tol).add_(tol)).all())
    return Comparison(max_abs, max_rel, ok, "" if ok else f"outside tolerance {tol:g}")


# ----------------------------------------------------------------------------- compile timing

@dataclass
class CompileLog:
    """Triton compiles seen in the block: the JIT functions and seconds spent compiling."""
    seconds: float = 0.0
    functions: list[Any] = field(default_factory=list)


@contextlib.contextmanager
def watch_compiles() -> Iterator[CompileLog]:
    from triton.runtime.jit import JITFunction
    log = CompileLog()
    original = JITFunction._do_compile

    def timed(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(self, *a, **k)
        finally:
            log.seconds += time.perf_counter() - t0
            if self not in log.functions:
                log.functions.append(self)

    JITFunction._do_compile = timed
    try:
        yield log
    finally:
        JITFunction._do_compile = original


_OWN_CODE = ("kernels", "baselines.expert")  # modules whose helpers count as the implementation's code


def _py_function(obj: Any) -> Any:
    """The Python function behind a @triton.jit kernel, an autotuner or a cached builder."""
    for _ in range(4):
        inner = getattr(obj, "fn", None)
        if inner is None or inner is obj:
            break
        obj = inner
    return inspect.unwrap(obj) if callable(obj) else obj


def source_lines(obj: Any) -> int | None:
    """Non-blank lines of an implementation's source (T2), counted the same way for a Triton
    kernel and an expert program: the function itself plus every helper it calls, transitively,
    that is defined in kernels/ or baselines/expert/ (@triton.jit helpers, shared builder
    helpers). The languages they are written in (triton.language, the ISA builder) do not count.
    A tuple counts each of its kernels (an implementation of several launches), shared helpers once."""
    roots = [_py_function(o) for o in (obj if isinstance(obj, tuple) else (obj,))]
    if not all(inspect.isfunction(r) for r in roots):
        return None
    seen: dict = {}
    todo = list(roots)
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        try:
            seen[f] = len([ln for ln in inspect.getsource(f).splitlines() if ln.strip()])
        except (TypeError, OSError):
            seen[f] = 0
        codes = [f.__code__]
        names: set = set()
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(x for x in c.co_consts if inspect.iscode(x))
        for n in sorted(names):
            g = _py_function(f.__globals__.get(n))
            if inspect.isfunction(g) and (g.__module__ or "").startswith(_OWN_CODE) and g not in seen:
                todo.append(g)
    return sum(seen.values())


def _clone(inputs: dict) -> dict:
    return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}


def _autotuners(w: Workload, impl: str) -> list[Any]:
    from triton.runtime.autotuner import Autotuner
    src = w.source.get(impl)
    srcs = src if isinstance(src, (list, tuple)) else [src]
    return [s for s in srcs if isinstance(s, Autotuner)]


def config_label(config: Any) -> str:
    parts = [f"{k}={v}" for k, v in sorted(config.kwargs.items())]
    parts.append(f"num_stages={config.num_stages}")
    return ";".join(parts)


# ----------------------------------------------------------------------------- one measurement

def error_note(e: BaseException) -> str:
    """The first line of an exception, for a row's notes: at most 300 characters, with paths
    inside the repository relative to its root (a row reads the same on every machine)."""
    from study.provenance import REPO
    return f"{type(e).__name__}: {e}".replace(f"{REPO}/", "").splitlines()[0][:300]


def measure(w: Workload, impl: str, shape: Shape, dtype: str, chip: str, inputs: dict, ref: Any,
            base: dict[str, Any], autotune: bool = False, cached_compile: bool = False,
            variants: tuple[str, ...] = (), regimes: tuple[str, ...] = (),
            checked: Comparison | None = None) -> list[dict[str, Any]]:
    """Rows for one (workload, impl, shape, dtype, chip): the measurement, plus one row per
    autotuning config when `autotune` and the impl's source is a triton.autotune kernel, plus
    one row per chip of `variants` (configs differing from `chip` only in keys the timing model
    alone reads, backend.configs.pricing_only): the same launches' executed events priced on it,
    plus one row per memory regime of `regimes` (backend/regimes.py), priced the same way: a
    regime changes only the price of a launch, never its events. `checked`: the comparison with torch that
    stands for this shape's (runner.check_at_test_shapes, for a shape simulated in timing mode,
    whose outputs are not computed)."""
    fn: Callable = w.impls[impl]
    flops, nbytes = int(w.flops(shape.params, dtype)), int(w.bytes(shape.params, dtype))
    row: dict[str, Any] = dict(base, workload=w.name, family=w.family, impl=impl, shape=shape.label, dtype=dtype,
                               chip=chip, flops=flops, bytes=nbytes,
                               source_lines=source_lines(w.source[impl]) if impl in w.source else None)
    notes: list[str] = []
    tuners = _autotuners(w, impl) if autotune else []
    for t in tuners:
        t.cache.clear()  # tune inside this job, on this chip
    # a call that tunes launches every config (triton.autotune's benchmarking): those launches
    # are not the kernel's time, so the measurement is a second call with the chosen config
    all_tuners = _autotuners(w, impl)
    tuned_before = [len(t.cache) for t in all_tuners]
    try:
        # one call: its compiles are timed inside Triton's compile (compile_s), its launches
        # are the measurement; simulating a study shape twice would double the sweep
        repriced = bool(variants or regimes)
        with watch_compiles() as cold_log, record_launches() as recs, shared_llc(), \
                keep_traces() if repriced else contextlib.nullcontext():
            t0 = time.perf_counter()
            out = fn(**_clone(inputs))
            cold_wall = time.perf_counter() - t0
        warm_wall = sum(r.sim_wall_s for r in recs)
        if [len(t.cache) for t in all_tuners] != tuned_before:
            with record_launches() as recs, shared_llc(), keep_traces() if repriced else contextlib.nullcontext():
                out = fn(**_clone(inputs))
            notes.append("autotuning launches excluded: measured on a second call with the chosen config")
        cached_s = None
        if cached_compile and cold_log.functions:
            for jf in cold_log.functions:
                jf.device_caches.clear()
            with watch_compiles() as cached_log, record_launches(), shared_llc():
                fn(**_clone(inputs))
            cached_s = cached_log.seconds
    except NotImplementedError as e:
        from triton.runtime.errors import OutOfResources
        if not isinstance(e, OutOfResources):
            raise  # the impl does not cover this dtype or shape: no row, the runner counts it as skipped
        # a kernel whose tiles do not fit this chip's local memory is a result, not a gap
        msg = error_note(e)
        return [dict(row, correct=False, notes=f"error: {msg}", measured_at=_now())]
    except Exception as e:  # a failing implementation is a result (correct=False), not a crash
        msg = error_note(e)
        return [dict(row, correct=False, notes=f"error: {msg}", measured_at=_now())]
    cmp = compare(out, ref, dtype) if checked is None else checked
    if cmp.why:
        notes.append(cmp.why)
    cycles = sum(r.cycles for r in recs)
    time_us = sum(r.time_us for r in recs)
    if not recs:
        notes.append("no simulated launches (ran on the host)")
    chips = {r.chip for r in recs}
    if chips and chips != {chip}:
        notes.append(f"launches priced on {sorted(chips)}")
    row.update(cycles=cycles if recs else None, time_us=time_us if recs else None, launches=len(recs),
               max_abs_err=cmp.max_abs_err, max_rel_err=cmp.max_rel_err, correct=cmp.correct,
               compile_s=cold_log.seconds if cold_log.functions else max(0.0, cold_wall - warm_wall),
               compile_cached_s=cached_s, sim_wall_s=sum(r.sim_wall_s for r in recs), measured_at=_now())
    if not cold_log.functions:
        notes.append("compile_s = first-call overhead")
    out_bytes = sum(t.numel() * t.element_size() for t in _tensors(out))
    regime = row.get("regime") or "cold"
    row.update(derived(flops, nbytes, dtype, chip, time_us if recs else 0.0, out_bytes, regime))
    frac = row.get("roofline_frac")
    if frac is not None and frac > 1.0:
        notes.append("above roofline: check declared flops/bytes or the timing model")
    row["notes"] = "; ".join(notes)
    rows = [row]
    # the same executed events priced on each variant chip (in this regime) and in each other
    # regime (on this chip)
    # (None: the regime this run was priced in)
    repricings: list[tuple[str, str | None, str]] = [
        (v, None, f"priced from the {chip} run's executed events") for v in variants]
    repricings += [(chip, g, f"priced in the {g} regime from the {regime} run's executed events") for g in regimes]
    for c, g, why in repricings:
        t0 = time.perf_counter()
        timings = [reprice(r, c, g) for r in recs]
        t_us = sum(t.time_us for t in timings)
        rows.append(dict(row, chip=c, **({} if g is None else {"regime": g}),
                         cycles=sum(t.cycles for t in timings) if recs else None,
                         time_us=t_us if recs else None, sim_wall_s=time.perf_counter() - t0,
                         notes="; ".join(notes + [why]),
                         **derived(flops, nbytes, dtype, c, t_us if recs else 0.0, out_bytes, g or regime)))
    for r in recs:  # the traces are large: free them with the job, not with the records
        r.program = r.traces = None
    for t in tuners:
        timings = getattr(t, "configs_timings", None) or {}
        clock_ghz = float(load_chip(chip)["clock_ghz"])
        for config, ms in timings.items():
            ms = ms[0] if isinstance(ms, (list, tuple)) else ms
            t_us = float(ms) * 1e3
            rows.append(dict(row, config=config_label(config), cycles=round(t_us * clock_ghz * 1e3), time_us=t_us,
                             launches=None, compile_s=None, compile_cached_s=None, sim_wall_s=None,
                             notes="timed by triton.autotune; correctness checked for the chosen config",
                             **derived(flops, nbytes, dtype, chip, t_us, out_bytes, regime)))
    return rows


def derived(flops: int, nbytes: int, dtype: str, chip: str, time_us: float, out_bytes: int = 0,
            regime: str = "cold") -> dict[str, Any]:
    """Throughput and roofline fraction, computed here for every row alike. GB/s counts every
    declared byte; the roofline counts the off-chip ones (outputs that fit stay in SRAM)."""
    if time_us <= 0:
        return {"tflops": None, "gbps": None, "roofline_frac": None}
    s = time_us * 1e-6
    off = offchip_bytes(nbytes, out_bytes, chip, regime)
    return {"tflops": flops / s / 1e12, "gbps": nbytes / s / 1e9,
            "roofline_frac": roofline_fraction(flops, off, dtype, s, chip_peaks(chip))}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def seeded_inputs(w: Workload, shape: Shape, dtype: str) -> dict:
    """The inputs every implementation of (w, shape, dtype) is measured on."""
    return w.make(shape, dtype, seed=SEED)


def reference(w: Workload, shape: Shape, dtype: str) -> tuple[dict, Any]:
    """Seeded inputs and the torch result, the numerical truth every impl is compared with."""
    inputs = seeded_inputs(w, shape, dtype)
    if "torch" not in w.impls:
        raise RuntimeError(f"workload '{w.name}' has no torch implementation to check against")
    return inputs, w.impls["torch"](**_clone(inputs))
