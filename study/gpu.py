"""Study F6: the plain Triton kernels on a real NVIDIA H200, and the simulator in its H200-like config.

Two modes, one module:

    # on the GPU machine, stock triton 3.6 (this project's backend NOT installed), repo root,
    # committed code (SHA = git rev-parse HEAD here; about 4 minutes, microbenchmarks 20 s):
    PYTHONPATH=. python3 -m study.gpu_microbench --out $OUT/gpu_microbench_h200.csv --git-sha SHA
    PYTHONPATH=. python3 -m study.gpu --out $OUT/gpu_h200.csv --budget-s 400 --git-sha SHA
    # here: the config from the microbenchmarks, then the simulator's rows (as make reproduce does)
    python -m study.gpu_config
    python -m study.gpu --simulate --out results/raw/sim_h200.csv --max-cost 64e6 --job-timeout-s 120
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
tree is refused. Rows follow the raw schema (study/schema.py) and are appended one (workload,
shape, dtype) at a time, so a run stopped by its time budget keeps what it measured.
roofline_frac is against the H200 datasheet peaks (H200_PEAKS): 989 TFLOP/s dense BF16/FP16
(also used for f32, as the project's roofline does: a lower bound), 1979 TOP/s dense INT8,
4.8 TB/s HBM3e. The device's own ceilings are study/gpu_microbench.py's.

Simulate mode runs the same kernels through measure.measure() on chip "h200" (test shapes,
then study shapes smallest first, each job in a forked process with a timeout) and writes rows
with impl="triton", chip="h200", device="simulated", roofline against the same H200 peaks. An
autotuned kernel is called once first, so that, as on the GPU, the steady state is timed.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import pkgutil
import platform
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from study.registry import TOLERANCE, Shape, Workload

# H200 SXM datasheet peaks (NVIDIA H200 product brief; dense, no sparsity).
H200_PEAKS = {"bf16_flops": 989e12, "int8_ops": 1979e12, "hbm_bytes": 4.8e12}
INT_DTYPES = frozenset({"i8", "i32", "i64"})
BENCH_WARMUP_MS, BENCH_REP_MS = 25, 100  # do_bench's budgets (ms): hundreds of reps for short kernels
ROOFLINE_NOTE = "roofline vs H200 datasheet: 989 TFLOP/s bf16 (f32 too), 1979 TOP/s int8, 4.8 TB/s HBM"
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

def derived(flops: int, nbytes: int, dtype: str, time_us: float | None) -> dict[str, Any]:
    if not time_us or time_us <= 0:
        return {"tflops": None, "gbps": None, "roofline_frac": None}
    s = time_us * 1e-6
    peak = H200_PEAKS["int8_ops"] if dtype in INT_DTYPES else H200_PEAKS["bf16_flops"]
    bw = H200_PEAKS["hbm_bytes"]
    if flops > 0:
        bound = min(peak, flops / nbytes * bw) if nbytes > 0 else peak
        frac = (flops / s) / bound
    else:
        frac = (nbytes / s) / bw if nbytes > 0 else None
    return {"tflops": flops / s / 1e12, "gbps": nbytes / s / 1e9, "roofline_frac": frac}


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _tensors(out[k])]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


def compare(out: Any, ref: Any, dtype: str) -> tuple[float | None, float | None, bool, str]:
    """study.measure.compare's rule (|out - ref| <= tol + tol*|ref| elementwise, NaNs must
    match), evaluated in float64 on the reference's device."""
    got, want = _tensors(out), _tensors(ref)
    if len(got) != len(want) or not want:
        return None, None, False, f"returned {len(got)} tensors, torch returned {len(want)}"
    tol = TOLERANCE.get(dtype, 0.0)
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


# ----------------------------------------------------------------------------- torch on the GPU

def _segment_ids(offsets: torch.Tensor, total: int) -> torch.Tensor:
    lengths = offsets[1:] - offsets[:-1]
    return torch.repeat_interleave(torch.arange(lengths.numel(), device=offsets.device), lengths,
                                   output_size=total)


def _embedding_bag(mode: str) -> Callable:
    def fn(weights, table_offsets, indices, offsets, num_tables):
        # FBGEMM's TBE is not in stock torch: one F.embedding_bag over every table's bags at
        # once (indices shifted into the stacked weights on the device; no host sync, no loop)
        n_bags = offsets.numel() - 1
        B = n_bags // num_tables
        lengths = offsets[1:] - offsets[:-1]
        table = torch.arange(num_tables, device=indices.device).repeat_interleave(B)
        shift = torch.repeat_interleave(table_offsets.to(indices.device)[table], lengths,
                                        output_size=indices.numel())
        out = F.embedding_bag(indices.long() + shift, weights, offsets[:-1].long(), mode=mode)
        return out.view(num_tables, B, -1).transpose(0, 1).reshape(B, -1)
    return fn


def _jagged_to_padded_dense(values, offsets, max_len):
    return torch.ops.aten._jagged_to_padded_dense_forward(values, [offsets], [max_len], 0.0)


def _jagged_sum(values, offsets):
    # fp32 accumulation, as the kernel does (a bf16 segment sum loses whole digits)
    return torch.segment_reduce(values.float(), "sum", offsets=offsets, axis=0, unsafe=True).to(values.dtype)


def _jagged_softmax(values, offsets):
    # softmax over each sequence's rows, per column: segment max, exp, segment sum
    seg = _segment_ids(offsets, values.shape[0])
    v = values.float()
    mx = torch.segment_reduce(v, "max", offsets=offsets, axis=0, unsafe=True)
    e = torch.exp(v - mx[seg])
    s = torch.segment_reduce(e, "sum", offsets=offsets, axis=0, unsafe=True)
    return (e / s[seg]).to(values.dtype)


_TRIL: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def _dot_interaction(x):
    B, Fn, D = x.shape
    key = (Fn, x.device)
    if key not in _TRIL:
        _TRIL[key] = tuple(torch.tril_indices(Fn, Fn, offset=-1, device=x.device))
    i, j = _TRIL[key]
    z = torch.bmm(x, x.transpose(1, 2))
    return torch.cat([x[:, 0, :], z[:, i, j]], dim=1)


def _int_mm_ok(a, b) -> bool:
    # torch._int_mm (cuBLASLt INT8) needs m > 16 and k, n multiples of 8
    return a.shape[0] > 16 and a.shape[1] % 8 == 0 and b.shape[1] % 8 == 0


def _int8_matmul(a, b):
    if _int_mm_ok(a, b):
        return torch._int_mm(a, b)  # cuBLASLt INT8 GEMM, int32 out
    return (a.float() @ b.float()).to(torch.int32)  # exact here: |sum| < 2**24 for these small K


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def _jagged_offsets(lengths):
    out = torch.zeros(lengths.numel() + 1, dtype=lengths.dtype, device=lengths.device)
    out[1:] = torch.cumsum(lengths, dim=0)
    return out


GPU_TORCH: dict[str, Callable] = {
    "add": lambda x, y: x + y,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_erf": lambda x: F.gelu(x),
    "silu_mul": lambda x: (lambda g, u: F.silu(g) * u)(*x.chunk(2, dim=-1)),
    "bias_gelu": lambda x, bias: F.gelu(x + bias, approximate="tanh"),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "layernorm": lambda x, weight, bias: F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5),
    "rmsnorm": lambda x, weight: F.rms_norm(x, (x.shape[-1],), weight, 1e-6),
    "matmul": lambda a, b: a @ b,
    "matmul_bias_gelu": lambda a, b, bias: F.gelu(torch.addmm(bias, a, b), approximate="tanh"),
    "int8_matmul": _int8_matmul,
    "bmm": lambda a, b: torch.bmm(a, b),
    "flash_attention": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    "flash_attention_causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "decode_attention": lambda q, k, v: F.scaled_dot_product_attention(q[:, :, None, :], k, v)[:, :, 0, :],
    "embedding_bag_sum": _embedding_bag("sum"),
    "embedding_bag_mean": _embedding_bag("mean"),
    "jagged_to_padded_dense": _jagged_to_padded_dense,
    "jagged_sum": _jagged_sum,
    "jagged_softmax": _jagged_softmax,
    "dot_interaction": _dot_interaction,
    "transpose": lambda x: x.t().contiguous(),
    "index_select": lambda x, index: x.index_select(0, index),
    "concat": lambda tensors: torch.cat(tensors, dim=1),
    "jagged_offsets": _jagged_offsets,
    "rope": _rope,
    "matmul_autotuned": lambda a, b: a @ b,
    # quantisation: the references are plain fp32 torch ops that run on cuda as they are; their
    # torch.compile'd version (COMPILE) is the strong path
}

# Workloads whose eager torch path is a chain of ops (or the fp32 reference): torch.compile'd
# (inductor, mode "default", static shapes, warm) is timed beside eager, and the faster correct
# one is the torch_gpu row (its notes say which, with both times).
COMPILE = frozenset({"quantize_int8_rowwise", "dequantize_int8_rowwise", "mx4_quantize", "mx4_dequantize",
                     "jagged_sum", "jagged_softmax", "rope", "silu_mul", "bias_gelu", "dot_interaction",
                     "matmul_bias_gelu"})


def torch_paths(w: Workload) -> list[tuple[str, Callable]]:
    """The torch candidates of a workload, (label, fn): eager first, then torch.compile'd."""
    if w.name in GPU_TORCH:
        eager = ("eager " + TORCH_PATH_NAMES.get(w.name, "aten ops, input dtype"), GPU_TORCH[w.name])
    else:
        eager = ("eager fp32 reference ops", w.impls["torch"])
    out = [eager]
    if w.name in COMPILE:
        out.append(("torch.compile(default) of the eager path", torch.compile(eager[1], dynamic=False)))
    return out


TORCH_PATH_NAMES = {
    "matmul": "cuBLAS (torch.matmul)", "matmul_autotuned": "cuBLAS (torch.matmul)", "bmm": "cuBLAS (torch.bmm)",
    "matmul_bias_gelu": "cuBLAS addmm + gelu", "int8_matmul": "cuBLASLt INT8 (torch._int_mm)",
    "flash_attention": "SDPA", "flash_attention_causal": "SDPA", "decode_attention": "SDPA",
    "embedding_bag_sum": "F.embedding_bag over all tables, no host sync",
    "embedding_bag_mean": "F.embedding_bag over all tables, no host sync",
    "jagged_to_padded_dense": "aten _jagged_to_padded_dense_forward", "jagged_sum": "segment_reduce",
    "jagged_softmax": "segment_reduce chain", "dot_interaction": "bmm + gather",
}


def _int8_ref(a, b):
    # exact: |products| summed stay far below 2**53
    return (a.to(torch.float64) @ b.to(torch.float64)).to(torch.int32)


REF_OVERRIDE: dict[str, Callable] = {"int8_matmul": _int8_ref}


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


# ----------------------------------------------------------------------------- GPU mode

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


def _done_jobs(out: Path) -> set[tuple[str, str, str]]:
    from study.results import read_rows
    if not out.exists():
        return set()
    return {(r["workload"], r["shape"], r["dtype"]) for r in read_rows(out)}


def run_gpu(args: argparse.Namespace) -> int:
    from study.results import append_rows
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
    done_before = _done_jobs(out) if args.resume else set()
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
            "chip": "h200", "cycles": None, "sim_wall_s": None, "device": dev_name, "versions": vers,
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
                       correct=r["correct"], compile_s=r["compile_s"], **derived(flops, nbytes, dt, r["time_us"]))
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
        row["notes"] = "; ".join(notes + ([ROOFLINE_NOTE] if row.get("roofline_frac") is not None else []))
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
    from study.results import read_rows
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


# ----------------------------------------------------------------------------- simulate mode

def run_simulate(args: argparse.Namespace) -> int:
    """Same kernels, same inputs, on the simulator's h200 config; one forked process per job."""
    import multiprocessing

    import triton  # noqa: F401 - before backend.driver (see study/measure.py)
    os.environ["MTIA_CHIP"] = "h200"
    from backend.driver import set_chip
    set_chip("h200")
    from study import provenance
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
    base = {"run_id": uuid.uuid4().hex[:12], "git_sha": provenance.source_fingerprint(), "suite": "sim_h200",
            "device": "simulated", "versions": provenance.versions(), "options": "default", "config": ""}
    from study.runner import _warm_compiler
    _warm_compiler()
    ctx = multiprocessing.get_context("fork")
    t0 = time.perf_counter()
    running: list[tuple[Any, tuple, float]] = []
    pending = list(todo)
    done = 0
    skipped: list[str] = []
    while pending or running:
        while pending and len(running) < args.workers and time.perf_counter() - t0 < args.budget_s:
            j = pending.pop(0)
            p = ctx.Process(target=_sim_job, args=(j[0].name, j[1].name, j[2], base, str(out)))
            p.start()
            running.append((p, j, time.perf_counter()))
        if pending and time.perf_counter() - t0 >= args.budget_s:
            skipped += [f"{w.name}/{s.label}/{dt}" for w, s, dt in pending]
            pending = []
        for p, j, ts in list(running):
            if not p.is_alive():
                p.join()
                running.remove((p, j, ts))
                done += 1
                print(f"[{time.perf_counter() - t0:6.1f}s] {j[0].name} {j[1].label} {j[2]} "
                      f"({time.perf_counter() - ts:.1f}s, exit {p.exitcode})", flush=True)
            elif time.perf_counter() - ts > args.job_timeout_s:
                p.terminate()
                p.join()
                running.remove((p, j, ts))
                skipped.append(f"{j[0].name}/{j[1].label}/{j[2]} (over {args.job_timeout_s:.0f}s)")
                print(f"[{time.perf_counter() - t0:6.1f}s] {j[0].name} {j[1].label} {j[2]} timed out", flush=True)
        time.sleep(0.05)
    print(f"{done} jobs simulated in {time.perf_counter() - t0:.0f}s -> {out}; not simulated: {len(skipped)}")
    for s in skipped:
        print("  skipped", s)
    return 0


def _autotuned(w: Workload) -> bool:
    import triton
    return isinstance(w.source.get("triton"), triton.runtime.Autotuner)


def _sim_job(workload: str, shape: str, dtype: str, base: dict, out: str) -> None:
    import torch as _t
    _t.set_num_threads(1)
    from study.measure import measure, reference
    from study.registry import WORKLOADS
    from study.results import append_rows
    w = WORKLOADS[workload]
    s = next(x for x in w.shapes if x.name == shape)
    try:
        inputs, ref = reference(w, s, dtype)
        if _autotuned(w):
            # as on the GPU, where do_bench times the steady state: triton.autotune has already
            # benchmarked its configs and cached its choice for this shape
            w.impls["triton"](**_clone(inputs))
        rows = measure(w, "triton", s, dtype, "h200", inputs, ref, dict(base))
    except NotImplementedError:
        return
    except Exception as e:  # noqa: BLE001
        rows = [dict(base, workload=w.name, family=w.family, impl="triton", shape=s.label, dtype=dtype, chip="h200",
                     correct=False, notes=f"error: {_err(e)}", measured_at=_now())]
    for r in rows:
        # the project's chip_peaks has no H200 peaks (it scales MTIA 2i's); use the datasheet's
        r.update(derived(int(r.get("flops") or 0), int(r.get("bytes") or 0), dtype, r.get("time_us")))
        if r.get("roofline_frac") is not None:
            r["notes"] = "; ".join(x for x in (r.get("notes"), ROOFLINE_NOTE) if x)
    append_rows(Path(out), rows)


# ----------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="raw CSV to append to (default: results/raw/gpu_h200.csv, "
                                                "or sim_h200.csv with --simulate)")
    ap.add_argument("--dry-run", action="store_true", help="list what would be measured; touch nothing")
    ap.add_argument("--simulate", action="store_true", help="run on the simulator's h200 config instead of a GPU")
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
    if args.out is None:
        args.out = str(REPO / "results" / "raw" / ("sim_h200.csv" if args.simulate else "gpu_h200.csv"))
    return run_simulate(args) if args.simulate else run_gpu(args)


if __name__ == "__main__":
    sys.exit(main())
