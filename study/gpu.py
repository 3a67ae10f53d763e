"""Study F6: the plain Triton kernels on a real NVIDIA H200, and the simulator in its H200-like config.

Two modes, one module:

    # on the GPU machine, stock triton 3.6 (this project's backend NOT installed), repo root,
    # committed code (SHA = git rev-parse HEAD here; about 4 minutes, microbenchmarks 20 s):
    PYTHONPATH=. python3 -m study.gpu_microbench --out $OUT/gpu_microbench_h200.csv --git-sha SHA
    PYTHONPATH=. python3 -m study.gpu --out $OUT/gpu_h200.csv --budget-s 400 --git-sha SHA
    # here: the config from the microbenchmarks, then the simulator's rows (as make reproduce does)
    python -m study.gpu_config
    python -m study.gpu --simulate --out results/raw/sim_h200.csv --max-cost 64e6 --job-timeout-s 120
    # the H100, F6's held-out device: its config from its own microbenchmarks, then its rows
    python -m study.gpu_config --device h100
    python -m study.gpu --simulate --chip h100 --out results/raw/sim_h100.csv --max-cost 64e6 --job-timeout-s 120
    # either, without measuring anything:
    python -m study.gpu --dry-run

GPU mode: for every workload with a "triton" impl, its test and study shapes, each declared
dtype, the inputs are made on the CPU from the study's seed (the same inputs the simulator
sees) and moved to cuda. The reference is the workload's torch implementation (fp32
arithmetic; on cuda where it runs there, else on the CPU; TF32 off), compared with the
docs/study.md tolerances. Every implementation is timed one way, for every shape:
triton.testing.do_bench's median (L2 cleared before every call; BENCH_WARMUP_MS, BENCH_REP_MS):
  triton_gpu  the workload's own "triton" impl (the kernels/ host wrapper: allocation + launch)
  torch_gpu   the fastest correct of the workload's torch paths (torch_paths): the vendor op
              where one exists (cuBLAS for GEMMs, torch._int_mm for INT8, SDPA for attention),
              aten ops elsewhere (GPU_TORCH), the fp32 reference ops where there is none, and
              for the workloads in COMPILE also torch.compile of that path (inductor, default
              mode, warm); the row's notes name the path chosen and the other paths' times.
Each row's notes carry the SM / memory clocks (nvidia-smi) before and after its job. The git
sha must be a commit (--git-sha $(git rev-parse HEAD): the GPU machine has no .git); a dirty
tree is refused. Rows follow the raw schema (study/schema.py) and are appended through
study/results.py one (workload, shape, dtype) at a time, so a run stopped by its time budget
keeps what it measured. GPU mode lives in study/gpu_measure.py, the torch paths it times in
study/gpu_torch.py. roofline_frac is against the H200 datasheet peaks (study/roofline.py,
H200_DATASHEET): 989 TFLOP/s dense BF16/FP16 (also used for f32, as the project's roofline does:
a lower bound), 1979 TOP/s dense INT8, 4.8 TB/s HBM3e. The device's own ceilings are
study/gpu_microbench.py's.

Simulate mode runs the same kernels through measure.measure() on chip "h200" (test shapes,
then study shapes smallest first, each job in a process of its own from study/pool.py, with a
timeout) and writes rows with impl="triton", chip="h200", device="simulated", suite "sim_h200",
roofline against the same H200 peaks; a rerun skips jobs already written at this code. With
--chip h100 the same on the h100 config: chip="h100", suite "sim_h100", roofline against the
H100 datasheet (3.35 TB/s HBM3; the compute peaks equal the H200's). An autotuned kernel is
called once first, so that, as on the GPU, the steady state is timed.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import pkgutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import torch

from study.registry import Shape, Workload
from study.roofline import DATASHEETS, Peaks, datasheet_peaks, roofline_fraction
from study.tolerances import tolerance

# study/roofline.py: NVIDIA's figures, with their source, per GPU the simulate mode can price
PEAKS = {chip: datasheet_peaks(chip) for chip in DATASHEETS}
H200_PEAKS = PEAKS["h200"]
ROOFLINE_NOTES = {"h200": "roofline vs H200 datasheet: 989 TFLOP/s bf16 (f32 too), 1979 TOP/s int8, 4.8 TB/s HBM",
                  "h100": "roofline vs H100 datasheet: 989 TFLOP/s bf16 (f32 too), 1979 TOP/s int8, 3.35 TB/s HBM"}
ROOFLINE_NOTE = ROOFLINE_NOTES["h200"]
SIM_CHIPS = ("h200", "h100")
REPO = Path(__file__).resolve().parent.parent
SEED = 0


# ----------------------------------------------------------------------------- workloads

def load_workloads() -> dict[str, Workload]:
    """The study's workloads without baselines/expert (which needs the project's backend):
    import every study/workloads module, as registry.load_all does for that half."""
    import study.workloads as pkg
    from study.registry import WORKLOADS
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if m.name == "tensors":
            continue
        importlib.import_module(f"study.workloads.{m.name}")
    return {n: w for n, w in WORKLOADS.items() if "triton" in w.impls}


def half(workload: str) -> str:
    """The fixed split of F6's prediction check: 'calibration' (may be looked at while choosing
    the h200 config's model structure) or 'held-out' (reported separately), by crc32 of the
    workload's name; never by the results."""
    import zlib
    return "calibration" if zlib.crc32(workload.encode()) % 2 == 0 else "held-out"


def jobs(workloads: dict[str, Workload], tags: tuple[str, ...] = ("test", "study")) -> list[tuple[Workload, Shape, str]]:
    """(workload, shape, dtype): every test shape first (cheap, and every kernel compiles
    there), then the study shapes from the smallest declared cost up, so a budget cut drops
    the largest."""
    out = []
    for tag in tags:
        batch = []
        for name in sorted(workloads):
            w = workloads[name]
            for s in w.shapes_tagged(tag):
                if tag != tags[0] and any(t in s.tags for t in tags[:tags.index(tag)]):
                    continue
                for dt in w.dtypes:
                    batch.append((w, s, dt))
        if tag != "test":
            batch.sort(key=lambda j: cost(*j))
        out.extend(batch)
    return out


def cost(w: Workload, s: Shape, dt: str) -> float:
    """A rough size for ordering: bytes moved plus flops at ~200 FLOP/B."""
    return float(w.bytes(s.params, dt)) + float(w.flops(s.params, dt)) / 200.0


# ----------------------------------------------------------------------------- metrics

def derived(flops: int, nbytes: int, dtype: str, time_us: float | None, peaks: Peaks = H200_PEAKS) -> dict[str, Any]:
    """TFLOP/s, GB/s and the roofline fraction against a GPU datasheet (study/roofline.py; the
    H200's unless told)."""
    if not time_us or time_us <= 0:
        return {"tflops": None, "gbps": None, "roofline_frac": None}
    s = time_us * 1e-6
    return {"tflops": flops / s / 1e12, "gbps": nbytes / s / 1e9,
            "roofline_frac": roofline_fraction(flops, nbytes, dtype, s, peaks)}


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _tensors(out[k])]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


def compare(out: Any, ref: Any, dtype: str) -> tuple[float | None, float | None, bool, str]:
    """study.measure.compare's rule (|out - ref| <= tol + tol*|ref| elementwise with
    study/tolerances.py's values, NaNs must match), evaluated in float64 on the reference's
    device (study.measure imports the project's backend, which the GPU machine does not have)."""
    got, want = _tensors(out), _tensors(ref)
    if len(got) != len(want) or not want:
        return None, None, False, f"returned {len(got)} tensors, torch returned {len(want)}"
    tol = tolerance(dtype)
    max_abs = max_rel = 0.0
    ok = True
    for g, w in zip(got, want):
        if tuple(g.shape) != tuple(w.shape):
            return None, None, False, f"shape {tuple(g.shape)}, torch gives {tuple(w.shape)}"
        if g.numel() == 0:
            continue
        w64 = w.detach().to(torch.float64)
        g64 = g.detach().to(w64.device).to(torch.float64)
        nan_mismatch = bool((g64.isnan() != w64.isnan()).any())
        both = ~(g64.isnan() & w64.isnan())
        diff = torch.nan_to_num((g64 - w64).abs()[both], nan=0.0)
        if diff.numel():
            wa = w64.abs()[both]
            rel = diff / wa.clamp_min(torch.finfo(torch.float64).tiny)
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float(rel.max()))
            ok &= bool((diff <= tol + tol * wa).all())
        ok &= not nan_mismatch
    return max_abs, max_rel, ok, "" if ok else f"outside tolerance {tol:g}"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".replace("\n", " ")[:300]


def _to(v: Any, device: str) -> Any:
    if isinstance(v, torch.Tensor):
        return v.to(device)
    if isinstance(v, list):
        return [_to(t, device) for t in v]
    if isinstance(v, tuple):
        return tuple(_to(t, device) for t in v)
    return v


def _clone(inputs: dict) -> dict:
    return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}


# ----------------------------------------------------------------------------- simulate mode

def run_simulate(args: argparse.Namespace) -> int:
    """Same kernels, same inputs, on the simulator's --chip config (h200 or h100): each job in a
    process of its own (study/pool.py, forked from this warmed-up process), killed after
    --job-timeout-s; rows appended through study/results.py as jobs finish. A rerun skips jobs
    whose rows are there at this code."""
    import triton  # noqa: F401 - before backend.driver (see study/measure.py)
    chip = args.chip
    os.environ["MTIA_CHIP"] = chip
    from backend.driver import set_chip
    set_chip(chip)
    from study import provenance
    from study.pool import NotStarted, TimedOut, run_pool
    from study.results import append_rows, written_keys
    workloads = load_workloads()
    todo = jobs(workloads, tuple(args.tags.split(",")))
    if args.only:
        only = set(args.only.split(","))
        todo = [j for j in todo if j[0].name in only]
    # study shapes: only those whose declared cost is small enough to simulate in seconds
    todo = [j for j in todo if ("test" in j[1].tags and args.min_cost <= 0) or args.min_cost < cost(*j) <= args.max_cost]
    if args.dry_run:
        for w, s, dt in todo:
            print(f"would simulate {w.name:28s} {s.label:40s} {dt:5s} cost={cost(w, s, dt):.3g}")
        print(f"{len(todo)} jobs")
        return 0
    out = Path(args.out)
    base = {"run_id": uuid.uuid4().hex[:12], "git_sha": provenance.source_fingerprint(), "suite": f"sim_{chip}",
            "device": "simulated", "versions": provenance.versions(), "options": "default", "config": ""}
    written = written_keys(out, key=("git_sha", "workload", "shape", "dtype"))
    n_all = len(todo)
    todo = [(w, s, dt) for w, s, dt in todo if (base["git_sha"], w.name, s.label, dt) not in written]
    if len(todo) < n_all:
        print(f"resuming: {n_all - len(todo)} jobs already in {out} at {base['git_sha']}", flush=True)
    from study.runner import _warm_compiler
    _warm_compiler()
    t0 = time.perf_counter()
    done = 0
    skipped: list[str] = []
    tasks = [(w.name, s.name, dt) for w, s, dt in todo]
    labels = {(w.name, s.name, dt): f"{w.name} {s.label} {dt}" for w, s, dt in todo}
    for d in run_pool(lambda t: _sim_rows(*t, base, chip), tasks, args.workers, timeout=args.job_timeout_s,
                      budget_s=args.budget_s, fresh=True, poll_s=0.05):
        label = labels[d.task]
        if isinstance(d.error, NotStarted):
            skipped.append(label.replace(" ", "/"))
            continue
        if isinstance(d.error, TimedOut):
            skipped.append(f"{label.replace(' ', '/')} (over {args.job_timeout_s:.0f}s)")
            print(f"[{time.perf_counter() - t0:6.1f}s] {label} timed out", flush=True)
            continue
        done += 1
        if d.error is None and d.value:
            append_rows(out, d.value)
        why = "" if d.error is None else f", {type(d.error).__name__}: {d.error}"
        print(f"[{time.perf_counter() - t0:6.1f}s] {label} ({d.wall_s:.1f}s{why})", flush=True)
    print(f"{done} jobs simulated in {time.perf_counter() - t0:.0f}s -> {out}; not simulated: {len(skipped)}")
    for s in skipped:
        print("  skipped", s)
    return 0


def _autotuned(w: Workload) -> bool:
    import triton
    return isinstance(w.source.get("triton"), triton.runtime.Autotuner)


def _sim_rows(workload: str, shape: str, dtype: str, base: dict, chip: str = "h200") -> list[dict]:
    """A pool task: the `chip` rows of one (workload, shape, dtype); none when the kernel does not
    implement the case."""
    import torch as _t
    _t.set_num_threads(1)
    from study.measure import measure, reference
    from study.registry import WORKLOADS
    w = WORKLOADS[workload]
    s = next(x for x in w.shapes if x.name == shape)
    try:
        inputs, ref = reference(w, s, dtype)
        if _autotuned(w):
            # as on the GPU, where do_bench times the steady state: triton.autotune has already
            # benchmarked its configs and cached its choice for this shape
            w.impls["triton"](**_clone(inputs))
        rows = measure(w, "triton", s, dtype, chip, inputs, ref, dict(base))
    except NotImplementedError:
        return []
    except Exception as e:  # noqa: BLE001
        rows = [dict(base, workload=w.name, family=w.family, impl="triton", shape=s.label, dtype=dtype, chip=chip,
                     correct=False, notes=f"error: {_err(e)}", measured_at=_now())]
    for r in rows:
        # the roofline of the measured rows (the GPU's datasheet), not measure()'s: the same figures
        # chip_peaks(chip) reads from the config, but without measure()'s off-chip byte rule
        r.update(derived(int(r.get("flops") or 0), int(r.get("bytes") or 0), dtype, r.get("time_us"), PEAKS[chip]))
        if r.get("roofline_frac") is not None:
            r["notes"] = "; ".join(x for x in (r.get("notes"), ROOFLINE_NOTES[chip]) if x)
    return rows


# ----------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="raw CSV to append to (default: results/raw/gpu_h200.csv, "
                                                "or sim_<chip>.csv with --simulate)")
    ap.add_argument("--dry-run", action="store_true", help="list what would be measured; touch nothing")
    ap.add_argument("--simulate", action="store_true", help="run on the simulator's --chip config instead of a GPU")
    ap.add_argument("--chip", choices=SIM_CHIPS, default=None,
                    help="simulate: which GPU config (default h200); GPU mode records the device it runs on")
    ap.add_argument("--budget-s", type=float, default=480.0, help="stop starting new jobs after this many seconds")
    ap.add_argument("--tags", default="test,study", help="shape tags, in order")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--resume", action="store_true", help="GPU: skip (workload, shape, dtype) already in --out")
    ap.add_argument("--git-sha", default="", help="source fingerprint to record (the GPU machine has no .git)")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)), help="simulate: parallel jobs")
    ap.add_argument("--job-timeout-s", type=float, default=45.0, help="simulate: give up a job after this")
    ap.add_argument("--max-cost", type=float, default=64e6,
                    help="simulate: largest study shape (bytes + flops/200) to simulate")
    ap.add_argument("--min-cost", type=float, default=0.0,
                    help="simulate: only shapes above this cost (to extend an earlier run; test shapes then skipped)")
    args = ap.parse_args(argv)
    if args.chip is not None and not args.simulate:
        ap.error("--chip is for --simulate: GPU mode records the chip of the device it runs on")
    args.chip = args.chip or "h200"
    if args.out is None:
        args.out = str(REPO / "results" / "raw" / (f"sim_{args.chip}.csv" if args.simulate else "gpu_h200.csv"))
    if args.simulate:
        return run_simulate(args)
    from study.gpu_measure import run_gpu
    return run_gpu(args)


if __name__ == "__main__":
    sys.exit(main())

