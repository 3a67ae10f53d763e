"""Sweeps: run a suite's jobs in worker processes and append rows to results/raw/<suite>.csv.

Workers are forked per (chip, compile-option set) group and configured before their first
compile, so Triton's per-process kernel caches never mix chips or option sets. Each worker
takes whole (workload, shape) jobs; only the parent writes, one atomic append per job. A
sweep resumes: (impl, dtype) pairs whose rows already carry the current source fingerprint
and the same key are skipped.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from study import provenance
from study.measure import measure, reference
from study.registry import Workload
from study.results import append_rows, raw_dir, read_rows, repair_partial_tail
from study.schema import DEFAULT_OPTIONS, row_key
from study.suites import Job, Suite, plan


@dataclass
class SweepSummary:
    suite: str
    path: Path
    jobs: int = 0
    skipped_done: int = 0     # (impl, dtype) pairs already in the file
    not_implemented: int = 0  # pairs whose impl raised NotImplementedError
    rows: int = 0
    incorrect: int = 0
    wall_s: float = 0.0
    errors: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- worker side

_WORKLOADS: dict[str, Workload] = {}


def _init_worker(chip: str, options: str, workloads: dict[str, Workload] | None) -> None:
    import torch

    from backend.driver import set_chip
    from study.compile_options import activate
    torch.set_num_threads(1)  # the parallelism is across processes
    # a private on-disk cache: the first compile in this worker is a true cold compile
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="study-triton-cache-")
    os.environ["MTIA_CHIP"] = chip
    set_chip(chip)
    activate(options)  # for the life of this process
    _warm_compiler()
    if workloads is not None:
        _WORKLOADS.update(workloads)
    else:
        from study.registry import load_all
        _WORKLOADS.update(load_all())


def _warm_compiler() -> None:
    """Compile and run one trivial kernel, so the one-time cost of a fresh process (MLIR
    context, backend imports) is not billed as the compile time of the first real kernel."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _warm(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK).to(tl.float32))

    _warm[(1,)](torch.empty(16), BLOCK=16)


def run_job(job: Job, base: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """Rows of one job and the number of (impl, dtype) pairs its impls do not implement."""
    w = _WORKLOADS[job.workload]
    shape = next(s for s in w.shapes if s.name == job.shape)
    rows: list[dict[str, Any]] = []
    skipped = 0
    refs: dict[str, Any] = {}
    for impl, dtype in job.pairs:
        b = dict(base, options=job.options)
        try:
            if dtype not in refs:
                refs[dtype] = reference(w, shape, dtype)
            inputs, ref = refs[dtype]
        except NotImplementedError:
            skipped += 1
            continue
        except Exception as e:
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            rows.append(dict(b, workload=w.name, family=w.family, impl=impl, shape=shape.label, dtype=dtype,
                             chip=job.chip, correct=False, notes=f"error in inputs or torch reference: {msg}"))
            continue
        try:
            rows.extend(measure(w, impl, shape, dtype, job.chip, inputs, ref, b,
                                autotune=job.autotune, cached_compile=job.cached_compile))
        except NotImplementedError:
            skipped += 1
    return rows, skipped


# ----------------------------------------------------------------------------- parent side

def _done_keys(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    return {row_key(r) for r in read_rows(path)}


def _pending(jobs: list[Job], done: set[tuple], workloads: dict[str, Workload], sha: str) -> tuple[list[Job], int]:
    out, skipped = [], 0
    for j in jobs:
        w = workloads[j.workload]
        label = next(s.label for s in w.shapes if s.name == j.shape)
        todo = tuple(p for p in j.pairs
                     if (sha, j.workload, p[0], label, p[1], j.chip, j.options or DEFAULT_OPTIONS, "") not in done)
        skipped += len(j.pairs) - len(todo)
        if todo:
            out.append(replace(j, pairs=todo))
    return out, skipped


class _Progress:
    """One status line on stderr, rewritten in place on a terminal, one line per job otherwise."""

    def __init__(self, suite: str, total: int):
        self.suite, self.total, self.done, self.t0 = suite, total, 0, time.perf_counter()
        self.tty = sys.stderr.isatty()

    def step(self, what: str) -> None:
        self.done += 1
        el = time.perf_counter() - self.t0
        eta = el / self.done * (self.total - self.done)
        line = f"[{self.suite}] {self.done}/{self.total} jobs  {el:5.0f}s elapsed  ~{eta:4.0f}s left  {what}"
        if self.tty:
            sys.stderr.write("\r" + line[:120].ljust(120))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def run_suite(suite: Suite, workloads: dict[str, Workload], results: Path | None = None, workers: int | None = None,
              only: set[str] | None = None, repair: bool = False, pass_workloads: bool = False) -> SweepSummary:
    """Run (or resume) a suite. `workers=0` runs in this process (for debugging one job).
    `pass_workloads` hands `workloads` to the workers instead of re-importing the registry
    (tests register their own)."""
    t0 = time.perf_counter()
    path = raw_dir(results) / f"{suite.name}.csv"
    summary = SweepSummary(suite.name, path)
    if repair and path.exists():
        line = repair_partial_tail(path)
        if line is not None:
            print(f"{path}: dropped partial line {line}", file=sys.stderr)
    sha = provenance.source_fingerprint()
    jobs, summary.skipped_done = _pending(plan(suite, workloads, only), _done_keys(path), workloads, sha)
    summary.jobs = len(jobs)
    base = {"run_id": uuid.uuid4().hex[:12], "git_sha": sha, "suite": suite.name,
            "device": provenance.SIM_DEVICE, "versions": provenance.versions()}
    progress = _Progress(suite.name, len(jobs))
    groups: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        groups.setdefault((j.chip, j.options), []).append(j)
    n = workers if workers is not None else (os.cpu_count() or 1)

    def record(job: Job, rows: list[dict[str, Any]], skipped: int) -> None:
        if rows:
            append_rows(path, rows)
        summary.rows += len(rows)
        summary.incorrect += sum(1 for r in rows if not r["correct"])
        summary.not_implemented += skipped
        progress.step(f"{job.workload}/{job.shape} on {job.chip}" + (f" [{job.options}]" if job.options != "default" else ""))

    shipped = workloads if pass_workloads else None
    for (chip, options), group in groups.items():
        if n == 0:
            _init_worker(chip, options, shipped or workloads)
            for j in group:
                record(j, *run_job(j, base))
            continue
        ctx = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(max_workers=min(n, len(group)), mp_context=ctx, initializer=_init_worker,
                                    initargs=(chip, options, shipped)) as pool:
            futures = {pool.submit(run_job, j, base): j for j in group}
            for fut in cf.as_completed(futures):
                j = futures[fut]
                try:
                    record(j, *fut.result())
                except cf.process.BrokenProcessPool as e:
                    summary.errors.append(f"{j.workload}/{j.shape}: worker died ({e})")
                    break
                except Exception as e:  # noqa: BLE001 - reported, the sweep goes on
                    summary.errors.append(f"{j.workload}/{j.shape}: {type(e).__name__}: {e}")
    summary.wall_s = time.perf_counter() - t0
    return summary
