"""Study F6, GPU mode: the triton_gpu and torch_gpu rows on a real H200 (`python3 -m study.gpu`
on the GPU machine; see study/gpu.py for the commands and what the rows mean).

The jobs run here, in the one process that holds the CUDA context, one after another: the
device is measured one kernel at a time (no worker processes: a forked worker cannot use a CUDA
context its parent created, and concurrent jobs would time each other). Each (workload, shape,
dtype) appends its two rows through study/results.py as soon as it is measured, so a run stopped
by its time budget keeps what it measured; after a sticky CUDA error the process re-executes
itself with --resume and goes on after the rows already written.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable

import torch

from study.gpu import PEAKS, ROOFLINE_NOTES, SEED, _clone, _err, _now, _tensors, _to, compare, derived, jobs, load_workloads
from study.gpu_torch import REF_OVERRIDE, _int_mm_ok, torch_paths
from study.registry import Shape, Workload
from study.results import append_rows, read_rows, written_keys

BENCH_WARMUP_MS, BENCH_REP_MS = 25, 100  # do_bench's budgets (ms): hundreds of reps for short kernels


def versions_gpu() -> str:
    import triton
    return (f"python={platform.python_version()};torch={torch.__version__};triton={triton.__version__};"
            f"cuda={torch.version.cuda}")


def measure_ceilings() -> dict[str, float]:
    """The GPU's two ceilings, measured once: a large device-to-device copy and a large bf16 GEMM."""
    import triton.testing as tt
    out = {}
    x = torch.randn(1 << 28, device="cuda", dtype=torch.float32)  # 1 GiB
    y = torch.empty_like(x)
    ms = tt.do_bench(lambda: y.copy_(x), warmup=25, rep=200, return_mode="median")  # noqa: F821 (del x, y after)
    out["copy_gbps"] = 2 * x.numel() * 4 / (ms * 1e-3) / 1e9
    del x, y
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = tt.do_bench(lambda: a @ b, warmup=25, rep=200, return_mode="median")
    out["bf16_gemm_tflops"] = 2 * n ** 3 / (ms * 1e-3) / 1e12
    torch.cuda.synchronize()
    return out


def _bench(fn: Callable) -> float:
    """Median us of fn, L2 cleared before every call (triton.testing.do_bench): the one timing
    method of every row, test and study shapes alike."""
    import triton.testing as tt
    return tt.do_bench(fn, warmup=BENCH_WARMUP_MS, rep=BENCH_REP_MS, return_mode="median") * 1e3


def _cuda_alive() -> bool:
    try:
        torch.ones(1, device="cuda").add_(1).item()
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001
        return False


def run_gpu(args: argparse.Namespace) -> int:
    # the budget counts from the first process's start, also after a re-exec (see below)
    t_origin = float(os.environ.setdefault("STUDY_GPU_T0", repr(time.time())))
    t_start = time.perf_counter() - (time.time() - t_origin)
    out = Path(args.out)
    workloads = load_workloads()
    todo = jobs(workloads, tuple(args.tags.split(",")))
    if args.only:
        only = set(args.only.split(","))
        todo = [j for j in todo if j[0].name in only]
    if args.dry_run:
        for w, s, dt in todo:
            print(f"would measure {w.name:28s} {s.label:40s} {dt:5s} tags={','.join(sorted(s.tags))} "
                  f"torch_gpu={' | '.join(lab for lab, _ in torch_paths(w))}")
        print(f"{len(todo)} (workload, shape, dtype) jobs, {2 * len(todo)} rows")
        return 0
    sha = args.git_sha or _git_sha()
    if "dirty" in sha or sha == "nogit":
        print(f"refusing to measure uncommitted code (git sha {sha!r}): commit, then pass "
              "--git-sha $(git rev-parse HEAD)", file=sys.stderr)
        return 2
    done_before = written_keys(out, key=("workload", "shape", "dtype")) if args.resume else set()
    todo = [j for j in todo if (j[0].name, j[1].label, j[2]) not in done_before]
    if not torch.cuda.is_available():
        print("no CUDA device: use --dry-run here, or run on the GPU machine", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 references stay fp32
    torch.backends.cudnn.allow_tf32 = False
    import torch._dynamo as dynamo
    dynamo.config.cache_size_limit = 4096  # one static-shape graph per (workload, shape, dtype)
    if hasattr(dynamo.config, "recompile_limit"):
        dynamo.config.recompile_limit = 4096
    dev_name = torch.cuda.get_device_name()
    vers = versions_gpu()
    if not args.resume:
        ceilings = measure_ceilings()
        print(f"device {dev_name}; {vers}; measured ceilings: {json.dumps(ceilings)}", flush=True)
        (out.parent / "gpu_ceilings.json").write_text(json.dumps(dict(ceilings, device=dev_name, versions=vers)) + "\n")
    run_id = os.environ.setdefault("STUDY_GPU_RUN_ID", uuid.uuid4().hex[:12])
    base = {"run_id": run_id, "git_sha": sha, "suite": "gpu",
            "chip": "h100" if "H100" in dev_name else "h200", "cycles": None, "sim_wall_s": None, "device": dev_name, "versions": vers,
            "options": "default", "config": ""}
    n_rows = n_ok = 0
    stopped = None
    for i, (w, s, dt) in enumerate(todo):
        el = time.perf_counter() - t_start
        if el > args.budget_s:
            stopped = f"time budget {args.budget_s:.0f}s reached after {i} of {len(todo)} jobs"
            break
        try:
            rows = measure_one_gpu(w, s, dt, base)
        except Exception as e:  # noqa: BLE001 - never lose the rest of the run
            rows = [dict(base, workload=w.name, family=w.family, impl=impl, shape=s.label, dtype=dt,
                         correct=False, notes=f"error: {_err(e)}", measured_at=_now())
                    for impl in ("triton_gpu", "torch_gpu")]
        try:
            append_rows(out, rows)
        except Exception as e:  # noqa: BLE001 - a row the schema refuses: keep the rest
            print(f"  !! rows for {w.name}/{s.label}/{dt} not written: {_err(e)}", flush=True)
            continue
        n_rows += len(rows)
        n_ok += sum(1 for r in rows if r["correct"])
        if any(not r["correct"] for r in rows) and not _cuda_alive():
            # a sticky CUDA error (illegal address, ...) poisons this process: start afresh,
            # skipping every job already written (this one included)
            print(f"  !! CUDA context lost after {w.name}/{s.label}/{dt}; re-executing to go on", flush=True)
            sys.stdout.flush()
            argv = [sys.executable, "-m", "study.gpu", *[a for a in sys.argv[1:] if a != "--resume"], "--resume"]
            os.execv(sys.executable, argv)
        msg = "  ".join(f"{r['impl']}={r['time_us']:.2f}us" if r.get("time_us") else f"{r['impl']}=-" for r in rows)
        bad = [r["notes"] for r in rows if not r["correct"]]
        print(f"[{el:6.1f}s {i + 1}/{len(todo)}] {w.name} {s.label} {dt}: {msg}"
              + (f"  FAIL: {bad[0][:160]}" if bad else ""), flush=True)
        torch.cuda.empty_cache()
    print(f"{n_rows} rows ({n_ok} correct) in {time.perf_counter() - t_start:.0f}s -> {out}"
          + (f"; stopped: {stopped}" if stopped else ""), flush=True)
    _summary(out)
    return 0


def gpu_clocks() -> str:
    """SM and memory clocks now (nvidia-smi), as 'sm=..MHz mem=..MHz'; '' when unavailable."""
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
        sm, mem = (v.strip() for v in out.split(","))
        return f"sm={sm}MHz mem={mem}MHz"
    except Exception:  # noqa: BLE001 - no nvidia-smi
        return ""


def _time_fn(fn: Callable, inputs: dict, ref: Any, dt: str) -> dict:
    """First call (compile + run), check against the reference, then the timed median."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(**_clone(inputs))
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    a, r, ok, why = compare(out, ref, dt)
    del out
    t_us = _bench(lambda fn=fn, x=inputs: fn(**x))
    return {"time_us": t_us, "max_abs_err": a, "max_rel_err": r, "correct": ok, "compile_s": first_s, "why": why}


def measure_one_gpu(w: Workload, s: Shape, dt: str, base: dict) -> list[dict]:
    """The triton_gpu and torch_gpu rows of one (workload, shape, dtype); never raises.
    torch_gpu is the fastest correct of the workload's torch paths (torch_paths)."""
    flops, nbytes = int(w.flops(s.params, dt)), int(w.bytes(s.params, dt))
    common = dict(base, workload=w.name, family=w.family, shape=s.label, dtype=dt, flops=flops, bytes=nbytes)
    clk0 = gpu_clocks()
    try:
        cpu_inputs = w.make(s, dt, seed=SEED)
        inputs = {k: _to(v, "cuda") for k, v in cpu_inputs.items()}
        ref, ref_where = _reference(w, cpu_inputs, inputs)
    except Exception as e:  # noqa: BLE001
        why = f"error in inputs or torch reference: {_err(e)}"
        return [dict(common, impl=impl, correct=False, notes=why, measured_at=_now())
                for impl in ("triton_gpu", "torch_gpu")]
    cands = {"triton_gpu": [("kernels/ host wrapper, stock Triton", w.impls["triton"])], "torch_gpu": torch_paths(w)}
    rows = []
    for impl, paths in cands.items():
        row = dict(common, impl=impl)
        notes: list[str] = []
        results = []
        for label, fn in paths:
            try:
                results.append((label, _time_fn(fn, inputs, ref, dt)))
            except Exception as e:  # noqa: BLE001 - a failing kernel or path is a result
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001 - a sticky error; run_gpu notices and re-executes
                    pass
                results.append((label, {"error": _err(e)}))
                if os.environ.get("STUDY_GPU_TRACE"):
                    traceback.print_exc()
        good = [(lab, r) for lab, r in results if r.get("correct")]
        timed = [(lab, r) for lab, r in results if r.get("time_us")]
        pick = min(good or timed, key=lambda x: x[1]["time_us"]) if (good or timed) else None
        if pick is None:
            row.update(correct=False)
            notes.append("error: " + "; ".join(f"{lab}: {r['error']}" for lab, r in results))
        else:
            lab, r = pick
            row.update(time_us=r["time_us"], max_abs_err=r["max_abs_err"], max_rel_err=r["max_rel_err"],
                       correct=r["correct"], compile_s=r["compile_s"], **derived(flops, nbytes, dt, r["time_us"], PEAKS[row["chip"]]))
            notes.append(("torch path: " if impl == "torch_gpu" else "") + lab)
            if r["why"]:
                notes.append(r["why"])
            if impl == "torch_gpu":
                others = [f"{ll}: " + (f"{rr['time_us']:.3f}us{'' if rr.get('correct') else ' (incorrect)'}"
                                       if rr.get("time_us") else rr.get("error", "")[:80])
                          for ll, rr in results if ll != lab]
                if others:
                    notes.append("also timed: " + ", ".join(others))
                if not r["correct"]:
                    notes.append("torch_gpu computes in the input dtype; the reference in fp32")
            if impl == "torch_gpu" and w.name == "int8_matmul" and not _int_mm_ok(inputs["a"], inputs["b"]):
                notes.append("torch._int_mm refuses this shape: fp32 matmul path")
            notes.append("compile_s = first call (compile + run)")
        notes.append(f"timing: do_bench median, L2 cleared, warmup {BENCH_WARMUP_MS} ms, rep {BENCH_REP_MS} ms")
        notes.append(f"reference on {ref_where}; shape_tags={'+'.join(sorted(s.tags))}")
        row["notes"] = "; ".join(notes + ([ROOFLINE_NOTES[row["chip"]]] if row.get("roofline_frac") is not None else []))
        row["measured_at"] = _now()
        rows.append(row)
    clk1 = gpu_clocks()
    for row in rows:
        row["notes"] += f"; clocks before {clk0 or '?'}, after {clk1 or '?'}"
    return rows


def _reference(w: Workload, cpu_inputs: dict, inputs: dict) -> tuple[Any, str]:
    """The fp32 torch reference: on cuda when the reference runs there (TF32 off), else the CPU."""
    fn = REF_OVERRIDE.get(w.name, w.impls["torch"])
    try:
        ref = fn(**_clone(inputs))
        torch.cuda.synchronize()
        devs = {t.device.type for t in _tensors(ref)}
        if devs == {"cuda"}:
            return ref, "cuda (fp32/fp64)"
    except Exception:  # noqa: BLE001 - a reference written for the CPU
        pass
    return w.impls["torch"](**_clone(cpu_inputs)), "cpu"


def _git_sha() -> str:
    try:
        from study.provenance import source_fingerprint
        return source_fingerprint()
    except Exception:  # noqa: BLE001 - no .git on the GPU machine
        return os.environ.get("STUDY_GIT_SHA", "nogit")


def _summary(path: Path) -> None:
    """A short table last (the device call returns the end of the output)."""
    if not path.exists():
        return
    rows = read_rows(path)
    by: dict[tuple, dict] = {}
    for r in rows:
        by.setdefault((r["workload"], r["shape"], r["dtype"]), {})[r["impl"]] = r
    sp = []
    fails = []
    for k, d in by.items():
        t, g = d.get("triton_gpu"), d.get("torch_gpu")
        if t and not t["correct"]:
            fails.append(f"{'/'.join(k)}: {(t.get('notes') or '')[:120]}")
        if t and g and t["correct"] and t.get("time_us") and g.get("time_us"):
            sp.append(g["time_us"] / t["time_us"])
    gm = math.exp(sum(math.log(v) for v in sp) / len(sp)) if sp else float("nan")
    n_t = sum(1 for d in by.values() if "triton_gpu" in d)
    n_ok = sum(1 for d in by.values() if d.get("triton_gpu", {}).get("correct"))
    print(f"SUMMARY triton_gpu correct {n_ok}/{n_t}; geomean speedup triton over torch {gm:.3f} over {len(sp)}")
    for f in fails[:40]:
        print("  FAIL", f)

