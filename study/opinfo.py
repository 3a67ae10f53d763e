"""T4, operator coverage: PyTorch OpInfo ops through torch.compile (Inductor) and the MTIA backend.

For every OpInfo in `op_db` (inference only, no grad) and each requested dtype, the first few
sample inputs are run in eager mode (the reference) and through
`torch.compile(fn, backend="inductor", fullgraph=False, dynamic=False)` with
`torch._inductor.config.cpu_backend = "triton"`, so Inductor's Triton kernels compile through
backend/ and run on the functional simulator. Each (op, variant, dtype) gets one status:

  pass            correct, at least one Triton kernel ran on the simulated chip, and nothing
                  computed on the host (no aten fallback, no host extern kernel: see
                  study/opinfo_op.py `host_ops`; pure view fallbacks such as aten.permute
                  compute nothing and do not count)
  pass_partial    correct and Triton kernels ran, but part of the op stayed on the host
                  (e.g. fft.fft: aten._fft_r2c on the host beside a Triton copy); not coverage
  pass_no_triton  correct, but Inductor produced no Triton kernel (extern/aten fallback only)
  wrong           numbers differ beyond tolerance (torch.testing.assert_close, equal_nan)
  compile_error   Dynamo / Inductor / Triton / the backend failed to compile
  runtime_error   the compiled function failed when run (simulator errors included)
  timeout         the per-op time limit was hit
  skipped         not applicable: dtype unsupported, sample generation or eager fails,
                  random or nondeterministic output

`n_launches` counts every simulated launch while the samples compile and run, Inductor's
autotuning of a kernel's configs included: with Inductor's cache (per source fingerprint,
`--cache-dir`) warm it is about one per sample, cold it can be hundreds (795 for `add`). A
status reads only whether it is non-zero.

Every op runs in a process of its own forked by study/pool.py (the parent imports torch,
Inductor and the backend once and warms them up), at most `--workers` at a time, with a per-op
timeout; rows are appended one at a time through study/results.py, and a rerun skips (op,
variant, dtype) already in the output file at the same source fingerprint (rows measured with
other code are dropped and measured again). One op is study/opinfo_op.py, the classification of
its failures study/opinfo_errors.py.

    python -m study.opinfo [--ops a,b,c] [--limit N] [--out results/raw/opinfo_coverage.csv]
                           [--timeout S] [--dtypes float32,bfloat16] [--samples 3] [--workers 2]
    python -m study.opinfo --summary [--out ...]
"""
from __future__ import annotations

import argparse
import collections
import datetime as _dt
import os
import re
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Iterable

from study.opinfo_errors import _first_line, error_pattern
from study.opinfo_op import full_name, host_ops, op_key, run_op
from study.pool import TimedOut, WorkerDied, run_pool
from study.results import Table, append_table, read_table, write_table, written_keys

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "results" / "raw" / "opinfo_coverage.csv"

COLUMNS = ("run_id", "git_sha", "versions", "op", "variant", "dtype", "status", "n_samples", "n_kernels",
           "n_launches", "max_abs_err", "atol", "rtol", "error_type", "error_origin", "backend_op",
           "error_message", "error_where", "n_graphs", "fallback_ops", "no_triton_reason", "inductor_cpp", "judged_by",
           "wall_s",
           "measured_at")
# results/raw/opinfo_coverage.csv; one row per (op, variant, dtype), whatever the code (the
# notebook keeps the latest of repeats by measured_at)
TABLE = Table("opinfo_coverage", COLUMNS, key=("op", "variant", "dtype"))

STATUSES = ("pass", "pass_partial", "pass_no_triton", "wrong", "compile_error", "runtime_error", "timeout", "skipped")


# Inference-relevant ops first (the sweep may be cut short): docs/study.md's workloads and their parts.
PRIORITY_OPS = [
    "add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
    "pow", "maximum", "minimum", "clamp", "where", "reciprocal", "erf", "floor", "round",
    "sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "argmax", "argmin", "logsumexp", "norm",
    "softmax", "log_softmax", "nn.functional.softmax", "nn.functional.log_softmax",
    "nn.functional.layer_norm", "nn.functional.rms_norm", "nn.functional.group_norm", "nn.functional.batch_norm",
    "nn.functional.normalize",
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.leaky_relu",
    "nn.functional.elu", "nn.functional.hardswish", "nn.functional.hardsigmoid", "nn.functional.softplus",
    "nn.functional.mish", "nn.functional.glu", "nn.functional.relu6", "nn.functional.tanhshrink",
    "nn.functional.linear", "matmul", "mm", "bmm", "addmm", "baddbmm",
    "nn.functional.embedding", "nn.functional.embedding_bag", "index_select", "gather", "take_along_dim",
    "index_add", "scatter", "scatter_add", "index_put", "masked_fill", "masked_select", "take",
    "cat", "stack", "hstack", "vstack", "transpose", "permute", "view", "reshape", "flatten", "squeeze",
    "unsqueeze", "expand", "narrow", "select", "split", "chunk", "t", "contiguous", "clone", "flip", "roll",
    "repeat", "tril", "triu", "cumsum", "cumprod", "topk", "sort",
    "nn.functional.scaled_dot_product_attention", "nn.functional.pad",
]


# ----------------------------------------------------------------------------- set-up

def configure(cache_dir: str | None = None) -> None:
    """Environment and Inductor settings; call before the first torch.compile (and before fork)."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # compile in-process: no pool, fork-safe
    if cache_dir:
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(cache_dir, "triton"))
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache_dir, "inductor"))
    import torch
    import torch._inductor.config as ic
    if not cache_dir:
        # no folder of this setting's own: Inductor's graph cache does not key on the switches
        # (the decompositions and lowerings they install), so a graph cached under another
        # setting would be reused
        ic.fx_graph_cache = False
    torch.set_num_threads(1)
    ic.cpu_backend = "triton"
    ic.compile_threads = 1
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 64
    # two switches of the study's Inductor path that T4 takes (backend/inductor_cpu/options.py;
    # Inductor's other choices stay its own): the chip's GEMM templates (`triton_gemm_templates`,
    # off in the study's Inductor path by default, on here; MTIA_INDUCTOR="triton_gemm_templates=0" leaves GEMMs to aten as before), so mm / bmm / addmm
    # compile to Triton (the expert GEMM is not registered here: no GEMM runs as an extern), and
    # Triton code for the special functions Inductor leaves to aten (`special_functions`,
    # backend/inductor_cpu/special.py)
    from backend.inductor_cpu import gemm_templates, options
    nd_tiling = ic.triton.prefer_nd_tiling
    if options.parse_env().get("triton_gemm_templates", True):  # on here unless MTIA_INDUCTOR says 0
        options.activate(triton_gemm_templates=True)
    ic.triton.prefer_nd_tiling = nd_tiling  # that switch's config only, not the other switches'
    if options.enabled("triton_gemm_templates"):
        gemm_templates.install()
    from backend.inductor_cpu import fft, host_ops, linalg, segments, sort, special
    special.install()
    sort.install()  # `sort_kernels`: Inductor's Triton sort where the sorted dimension fits a PE
    host_ops.install()  # `host_op_lowerings`: ops Inductor leaves to aten, rewritten into Triton code
    fft.install()  # `dft_lowerings`: the FFT ops as DFT matmuls
    linalg.install()  # `linalg_kernels`: LU / Cholesky / triangular solves as Triton kernels
    segments.install()  # `segment_reductions`: scatters over jagged segment ids as segment reductions
    _unwrap_set_seed()
    import warnings
    warnings.filterwarnings("ignore")


def _unwrap_set_seed() -> None:
    """OpInfo calls some ops (scaled_dot_product_attention, multi_head_attention_forward, the
    random ones) through `wrapper_set_seed`, which pins the seed to 42 inside a
    `freeze_rng_state` block that Dynamo does not trace: the whole call then ran eagerly (no
    graph). T4 seeds the generator itself before every eager and compiled run (and calls an op
    whose output depends on the seed random, `_is_random`), so the wrapper is replaced by a
    plain call."""
    from torch.testing._internal import common_methods_invocations as cmi

    def call(op, *args, **kwargs):
        return op(*args, **kwargs)
    cmi.wrapper_set_seed = call


def warm_up() -> None:
    """One compile in the parent so every worker starts with Dynamo, Inductor, Triton and the
    backend imported (saves seconds per op)."""
    import torch
    from backend.driver import record_launches
    x = torch.randn(4, 4)
    with record_launches() as recs:
        torch.compile(lambda a: (a.sin() + 1).sum(-1), backend="inductor", fullgraph=False, dynamic=False)(x)
    if not recs:
        raise RuntimeError("warm-up: Inductor produced no Triton launch; is cpu_backend='triton' reaching backend/?")
    torch._dynamo.reset()


def load_op_db() -> list:
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def prioritised(ops: list) -> list:
    """Curated inference ops first, then pointwise / reduction / nn.functional, then the rest;
    op_db order within a tier."""
    from torch.testing._internal.opinfo.core import BinaryUfuncInfo, ReductionOpInfo, UnaryUfuncInfo
    rank = {n: i for i, n in enumerate(PRIORITY_OPS)}

    def tier(i_op):
        i, op = i_op
        if op.name in rank:
            return (0, rank[op.name], i)
        if isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo, ReductionOpInfo)):
            return (1, 0, i)
        if op.name.startswith("nn.functional.") or "index" in op.name or "scatter" in op.name:
            return (2, 0, i)
        if op.name.startswith(("linalg.", "fft.", "special.", "sparse.", "_")):
            return (4, 0, i)
        return (3, 0, i)
    return [op for _, op in sorted(enumerate(ops), key=tier)]


# ----------------------------------------------------------------------------- the sweep

def _dtype_name(dt) -> str:
    return str(dt).replace("torch.", "")


def _run_one(op, dtype, n_samples: int, log_path: str | None) -> dict:
    """A pool task (a process of its own): the op's result as a dict; what it printed goes to
    its log; any failure of the harness itself is a runtime_error row, never a lost row."""
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    try:
        return asdict(run_op(op, dtype, n_samples))
    except BaseException as e:  # noqa: BLE001 - report whatever happened
        traceback.print_exc()
        return {"status": "runtime_error", "error_type": type(e).__name__, "error_origin": "harness",
                "error_message": _first_line(str(e))}


def _harness_failure(error: BaseException) -> dict:
    """The row of an op whose worker timed out or died before reporting (study/pool.py)."""
    if isinstance(error, TimedOut):
        return {"status": "timeout", "error_type": "Timeout", "error_origin": "harness", "error_message": str(error)}
    if isinstance(error, WorkerDied):
        return {"status": "runtime_error", "error_type": "WorkerCrash", "error_origin": "harness",
                "error_message": str(error)}
    return {"status": "runtime_error", "error_type": type(error).__name__, "error_origin": "harness",
            "error_message": _first_line(str(error))}


def _current_keys(out: Path, sha: str) -> set[tuple]:
    """The (op, variant, dtype) keys `out` holds at source fingerprint `sha`. Rows measured with
    other code are dropped from the file first (rewritten atomically), so a resumed sweep never
    mixes two versions of the backend in one table."""
    if not Path(out).exists():
        return set()
    rows = read_table(out, TABLE)
    current = [r for r in rows if r["git_sha"] == sha]
    if len(current) < len(rows):
        print(f"[opinfo] {len(rows) - len(current)} rows of {out} were measured with other code: dropped, "
              "measured again", file=sys.stderr)
        write_table(out, TABLE, current)
    return written_keys(out, TABLE)


def sweep(ops: list, dtypes: list, out: Path, timeout: float, n_samples: int, workers: int,
          log_dir: Path | None, run_meta: dict) -> list[dict]:
    """Every (op, dtype) not yet in `out` at this source fingerprint, each in a process of its own from study/pool.py (at
    most `workers` at a time, killed after `timeout` s); rows appended through study/results.py
    as they finish. Returns the rows written."""
    done = _current_keys(out, run_meta.get("git_sha", ""))
    jobs = [(op, dt) for op in ops for dt in dtypes if (*op_key(op), _dtype_name(dt)) not in done]
    n_prev = len(ops) * len(dtypes) - len(jobs)
    if n_prev:
        print(f"[opinfo] resuming: {n_prev} (op, dtype) already in {out}", file=sys.stderr)
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)

    def task(i: int) -> dict:
        op, dt = jobs[i]
        log = str(log_dir / f"{full_name(*op_key(op))}.{_dtype_name(dt)}.log") if log_dir is not None else None
        return _run_one(op, dt, n_samples, log)

    rows: list[dict] = []
    counts: collections.Counter = collections.Counter()
    t_start = time.time()
    for d in run_pool(task, range(len(jobs)), workers, timeout=timeout, fresh=True, poll_s=0.5):
        op, dt = jobs[d.task]
        payload = d.value if d.error is None else _harness_failure(d.error)
        name, variant = op_key(op)
        row = {c: "" for c in TABLE.columns}
        row.update({k: v for k, v in payload.items() if k in TABLE.columns})
        row.update(run_meta)
        row.update(op=name, variant=variant, dtype=_dtype_name(dt), wall_s=round(d.wall_s, 3),
                   measured_at=_dt.datetime.now().isoformat(timespec="seconds"))
        append_table(out, TABLE, [row])
        rows.append(row)
        counts[row["status"]] += 1
        n = sum(counts.values())
        el = time.time() - t_start
        eta = el / n * (len(jobs) - n)
        summary = " ".join(f"{s}={counts[s]}" for s in STATUSES if counts[s])
        extra = f" {row['backend_op'] or row['error_type']}" if not row["status"].startswith("pass") else ""
        print(f"[opinfo] {n}/{len(jobs)} {full_name(name, variant)} {row['dtype']}: {row['status']}{extra} "
              f"({row['wall_s']}s) | {summary} | {el/60:.1f} min, eta {eta/60:.1f} min", file=sys.stderr, flush=True)
    return rows


# ----------------------------------------------------------------------------- summary

def summarize(path: Path, file=sys.stdout, top: int = 25, dtype: str | None = None) -> dict:
    rows = [r for r in read_table(path, TABLE) if dtype is None or r["dtype"] == dtype]
    dtypes = sorted({r["dtype"] for r in rows})
    if dtype is None and len(dtypes) > 1:
        return {d: summarize(path, file, top, d) for d in dtypes}
    c = collections.Counter(r["status"] for r in rows)
    total = len(rows)
    applicable = total - c["skipped"]
    attempted = sum(c[s] for s in STATUSES if s != "skipped")
    cov = c["pass"] / applicable if applicable else 0.0
    n_correct = c["pass"] + c["pass_partial"] + c["pass_no_triton"]
    correct = n_correct / applicable if applicable else 0.0
    p = lambda s: print(s, file=file)  # noqa: E731
    p(f"OpInfo coverage ({path}{', ' + dtype if dtype else ''}): {total} (op, variant, dtype) rows")
    p("  " + ", ".join(f"{s}={c[s]}" for s in STATUSES))
    p(f"  coverage = pass / (total - skipped) = {c['pass']}/{applicable} = {cov:.1%}")
    lenient = c["pass"] + c["pass_partial"]
    p(f"  (pass + pass_partial) / (total - skipped) = {lenient}/{applicable} = "
      f"{(lenient / applicable if applicable else 0):.1%}  (Triton ran, host work allowed: not coverage)")
    p(f"  correct (pass + pass_partial + pass_no_triton) / (total - skipped) = {n_correct}/{applicable} = "
      f"{correct:.1%}")
    fails = [r for r in rows if r["status"] in ("wrong", "compile_error", "runtime_error", "timeout")]
    triton_fails = [r for r in fails if r.get("inductor_cpp") == "pass" or r["status"] == "timeout"]
    # every row whose Triton kernels ran correctly, host work or not: this measures the backend
    tp = lenient + len(triton_fails)
    p(f"  Triton-path success = (pass + pass_partial) / (those + failures that Inductor's C++ backend does not "
      f"share) = {lenient}/{tp} = {(lenient / tp if tp else 0):.1%}")
    part = collections.Counter(h for r in rows if r["status"] == "pass_partial"
                               for h in host_ops([f for f in r["fallback_ops"].split(";") if f]))
    if part:
        p("  pass_partial host ops: " + ", ".join(f"{k}={v}" for k, v in part.most_common()))
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for r in fails:
        key = error_pattern(r) if r["status"] != "wrong" else "[wrong] numbers differ"
        if r["status"] == "timeout":
            key = "[timeout]"
        groups[key].append(full_name(r["op"], r["variant"]))
    p(f"  top failure causes ({len(fails)} failing rows):")
    for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:top]:
        p(f"    {len(names):4d}  {key}  e.g. {', '.join(names[:5])}")
    nt = collections.Counter(r.get("no_triton_reason") or "?" for r in rows if r["status"] == "pass_no_triton")
    p("  pass_no_triton because: " + ", ".join(f"{k}={v}" for k, v in nt.most_common())
      + "  (no_graph: Dynamo compiled no graph, new data returned; no_compute: views/metadata only, or no graph and "
      "every output an input or a view of one; fallback: extern/aten call)")
    ctl = collections.Counter(r.get("inductor_cpp") or "-" for r in fails)
    p("  the same failing samples through Inductor's C++ backend: " + ", ".join(f"{k}={v}" for k, v in ctl.most_common())
      + "  (pass = the failure is the Triton/MTIA path's)")
    bops = collections.Counter(r["backend_op"] for r in fails if r["backend_op"])
    if bops:
        cls = collections.Counter()
        for k, v in bops.items():
            cls[k.split(".")[0] if k.startswith("libdevice.") else k] += v
        p("  backend failure classes: " + ", ".join(f"{k}={v}" for k, v in cls.most_common()))
        p("  backend-reported ops: " + ", ".join(f"{k}={v}" for k, v in bops.most_common()))
    origins = collections.Counter(r["error_origin"] for r in fails)
    p("  failures by origin: " + ", ".join(f"{k or '-'}={v}" for k, v in origins.most_common()))
    skip = collections.Counter(re.sub(r":.*", "", r["error_message"]) for r in rows if r["status"] == "skipped")
    p("  skipped because: " + "; ".join(f"{k or '-'}={v}" for k, v in skip.most_common(8)))
    return {"counts": dict(c), "coverage": cov, "pass_of_attempted": c["pass"] / attempted if attempted else 0.0}


# ----------------------------------------------------------------------------- CLI

def select_ops(op_db: list, names: str | None, limit: int | None, prioritise: bool = True) -> list:
    ops = list(op_db)
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        ops = [op for op in ops if op.name in wanted or full_name(*op_key(op)) in wanted]
        missing = set(wanted) - {op.name for op in ops} - {full_name(*op_key(op)) for op in ops}
        if missing:
            print(f"[opinfo] not in op_db: {', '.join(sorted(missing))}", file=sys.stderr)
    elif prioritise:
        ops = prioritised(ops)
    if limit:
        ops = ops[:limit]
    return ops


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.opinfo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated OpInfo names (name or name.variant)")
    ap.add_argument("--limit", type=int, help="run at most N ops (after prioritising)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--timeout", type=float, default=60.0, help="per-op wall-clock limit (s)")
    ap.add_argument("--dtypes", default="float32", help="comma-separated: float32,bfloat16")
    ap.add_argument("--bf16", action="store_true", help="also run bfloat16")
    ap.add_argument("--samples", type=int, default=3, help="sample inputs per op")
    ap.add_argument("--workers", type=int, default=2, help="concurrent forked workers (<= 2 on a shared box)")
    ap.add_argument("--log-dir", type=Path, default=Path("/tmp/opinfo_logs"), help="per-op worker logs")
    ap.add_argument("--cache-dir", default=None, help="Triton/Inductor cache (default: per source fingerprint)")
    ap.add_argument("--summary", action="store_true", help="only print the summary of --out")
    a = ap.parse_args(list(argv) if argv is not None else None)
    if a.summary:
        summarize(a.out)
        return 0

    from study.provenance import source_fingerprint, versions
    sha = source_fingerprint()
    # Inductor's graph cache does not key on the switches (MTIA_INDUCTOR): one folder per setting
    env = os.environ.get("MTIA_INDUCTOR", "").replace(",", "_").replace("=", "-") or "default"
    configure(a.cache_dir or f"/tmp/opinfo_cache/{sha}/{env}")
    import torch
    dtypes = [getattr(torch, d.strip()) for d in a.dtypes.split(",") if d.strip()]
    if a.bf16 and torch.bfloat16 not in dtypes:
        dtypes.append(torch.bfloat16)
    t0 = time.time()
    warm_up()
    op_db = load_op_db()
    ops = select_ops(op_db, a.ops, a.limit)
    run_meta = {"run_id": f"opinfo-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}", "git_sha": sha,
                "versions": versions()}
    print(f"[opinfo] {len(ops)} ops x {len(dtypes)} dtypes, {a.workers} workers, timeout {a.timeout:g}s, "
          f"git {sha}; set-up {time.time() - t0:.1f}s", file=sys.stderr)
    sweep(ops, dtypes, a.out, a.timeout, a.samples, a.workers, a.log_dir, run_meta)
    print(f"[opinfo] sweep wall time {(time.time() - t0) / 60:.1f} min", file=sys.stderr)
    summarize(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
