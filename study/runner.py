"""Sweeps: run a suite's jobs in worker processes and append rows to results/raw/<suite>.csv.

Workers are started per (chip, compile-option set) group and configured before their first
compile, so Triton's per-process kernel caches never mix chips or option sets: forked
processes on this machine (engine "pool", the default: study/pool.py, the pool every sweep in
study/ runs on) or Ray actors, locally or on a cluster
(engine "ray"). Each worker takes whole (workload, shape) jobs and returns their rows; only
the parent writes, one atomic append per job. A sweep resumes: (impl, dtype) pairs whose rows
already carry the current source fingerprint and the same key are skipped.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
import logging
import os
import pickle
import platform
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from study import provenance
from study.measure import Comparison, error_note, measure, reference, seeded_inputs
from study.pool import NotStarted, WorkerDied, run_pool
from study.registry import Workload
from study.results import Table, append_rows, raw_dir, read_table, repair_partial_tail, write_table, written_keys
from study.schema import DEFAULT_OPTIONS, DEFAULT_REGIME, row_key
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
# where this sweep's workers put their private Triton caches: a folder run_suite removes at the
# end (a forked worker inherits it; a Ray worker, not forked, uses the system's temp folder)
_CACHE_ROOT: str | None = None


def _init_worker(chip: str, options: str, workloads: dict[str, Workload] | None) -> None:
    import torch

    from backend.driver import set_chip
    from study.compile_options import activate
    torch.set_num_threads(1)  # the parallelism is across processes
    # a private on-disk cache: the first compile in this worker is a true cold compile
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="study-triton-cache-", dir=_CACHE_ROOT)
    os.environ["MTIA_CHIP"] = chip
    set_chip(chip)
    activate(options)  # for the life of this process
    # nothing compiled before (by the process a worker was forked from, or, in process, under
    # the previous configuration) may be launched under this one
    _forget_compiled()
    _warm_compiler()
    if workloads is not None:
        _WORKLOADS.update(workloads)
    else:
        from study.registry import load_all
        _WORKLOADS.update(load_all())


@contextlib.contextmanager
def _worker_caches() -> Iterator[None]:
    """A folder for the private Triton caches of the workers started inside, removed after."""
    global _CACHE_ROOT
    with tempfile.TemporaryDirectory(prefix="study-triton-caches-") as root:
        _CACHE_ROOT = root
        try:
            yield
        finally:
            _CACHE_ROOT = None


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
    from backend.driver import set_regime, sim_mode
    # the regime only changes how launches are priced, not what is compiled: set per job
    set_regime(job.regime)
    w = _WORKLOADS[job.workload]
    shape = next(s for s in w.shapes if s.name == job.shape)
    rows: list[dict[str, Any]] = []
    skipped = 0
    refs: dict[tuple[str, bool], tuple[dict, Any]] = {}  # (dtype, timing mode) -> (inputs, torch result)
    for impl, dtype in job.pairs:
        b = dict(base, options=job.options, regime=job.regime)
        # a timing-mode row is checked at a test shape: its own shape needs inputs, no torch result
        checked = check_at_test_shapes(w, impl, dtype, job.chip, b) if job.sim_mode == "timing" else None
        try:
            key = (dtype, checked is not None)
            if key not in refs:
                refs[key] = (seeded_inputs(w, shape, dtype), None) if checked is not None else reference(w, shape, dtype)
            inputs, ref = refs[key]
        except NotImplementedError:
            skipped += 1
            continue
        except Exception as e:
            msg = error_note(e)
            rows.append(dict(b, workload=w.name, family=w.family, impl=impl, shape=shape.label, dtype=dtype,
                             chip=job.chip, correct=False, notes=f"error in inputs or torch reference: {msg}"))
            continue
        try:
            with sim_mode("timing" if checked is not None else "functional"):
                rows.extend(measure(w, impl, shape, dtype, job.chip, inputs, ref, b,
                                    autotune=job.autotune, cached_compile=job.cached_compile, variants=job.variants,
                                    regimes=job.priced_regimes, checked=checked))
        except NotImplementedError:
            skipped += 1
    return rows, skipped


def check_at_test_shapes(w: Workload, impl: str, dtype: str, chip: str, base: dict[str, Any]) -> Comparison | None:
    """`impl` at `dtype` against torch, simulated functionally at the workload's check shape
    (check_shapes), with this process's chip and compile options: the check that stands for a
    study shape simulated in timing mode, whose float outputs are not computed. None when the
    impl covers none of those shapes (the study shape is then simulated functionally and
    checked itself)."""
    from backend.driver import sim_mode
    for s in check_shapes(w):
        try:
            inputs, ref = reference(w, s, dtype)
            with sim_mode("functional"):
                r = measure(w, impl, s, dtype, chip, inputs, ref, base)[0]
        except NotImplementedError:
            continue
        ok = bool(r.get("correct"))
        # the absolute error: the elementwise relative one is large wherever the reference is
        # near zero, also on rows within tolerance (flash attention: 3.1e+01 on correct rows)
        err = f", max abs err {r['max_abs_err']:.1e}" if r.get("max_abs_err") is not None else ""
        what = f"timing mode: float outputs not computed; numbers checked in functional mode at test shapes {s.name}{err}"
        why = "" if ok else f"at test shape {s.name}: {r.get('notes') or 'incorrect'}; "
        # the error columns are the measured shape's: none here
        return Comparison(None, None, ok, why + what)
    return None


def check_shapes(w: Workload) -> list:
    """The test-tagged shapes a timing-mode row is checked at: the ragged ones (a dimension that
    is not a power of two: masked edges, partial tiles), else the first; every test shape is
    checked for the default options and chip by the quick and full suites."""
    shapes = w.shapes_tagged("test")
    ragged = [s for s in shapes if any(isinstance(v, int) and v > 0 and v & (v - 1) for v in s.params.values())]
    return ragged[:1] or shapes[:1]


# ----------------------------------------------------------------------------- parent side

def _pending(jobs: list[Job], done: set[tuple], workloads: dict[str, Workload], sha: str) -> tuple[list[Job], int]:
    out, skipped = [], 0
    for j in jobs:
        w = workloads[j.workload]
        label = next(s.label for s in w.shapes if s.name == j.shape)
        # a pair is measured again when any chip it prices lacks its row (the parent then
        # writes only the missing rows)
        regimes = (j.regime or DEFAULT_REGIME,) + j.priced_regimes
        todo = tuple(p for p in j.pairs
                     if any((sha, j.workload, p[0], label, p[1], c, j.options or DEFAULT_OPTIONS, "", g) not in done
                            for c in j.chips for g in regimes))
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


# ----------------------------------------------------------------------------- engines
# An engine runs one (chip, options) group's jobs in workers configured for that group and
# yields (job, outcome, wall_s) as jobs finish: outcome is (rows, skipped), the job's exception,
# or a WorkerDied, after which the engine starts no further job of the group; wall_s is the
# job's host time. Only run_suite writes.

ENGINES = ("pool", "ray")
RAY_INSTALL_HINT = "pip install -e '.[ray]' (or pip install -r requirements-ray.txt)"


class EngineError(RuntimeError):
    """An engine cannot be used here (e.g. Ray is not installed)."""


Outcome = tuple[list[dict[str, Any]], int] | Exception
Finished = tuple[Job, Outcome, float]  # what an engine yields: the job, its outcome, its host seconds


def _forget_compiled() -> None:
    """Drop every kernel this process compiled and holds in memory: Triton's per-function
    kernel cache (keyed on the arguments' types and constexprs, with the target and options
    captured when it was first filled, not on MTIA_OPTIONS or the chip), autotuners' choices,
    Dynamo's compiled frames and study.inductor's compiled workloads. The on-disk Triton cache
    is keyed on both and stays."""
    import gc

    import torch
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    from backend.inductor_cpu.options import forget_compiled_kernels
    from study import inductor
    for obj in gc.get_objects():
        cls = type(obj)  # not isinstance: it reads __class__, which some lazy modules' objects warn on
        if issubclass(cls, JITFunction):
            obj.device_caches.clear()
        elif issubclass(cls, Autotuner):
            obj.cache.clear()
    inductor._COMPILED.clear()
    forget_compiled_kernels()  # Inductor's kernels, kept by source (options are not in it)
    torch._dynamo.reset()


def _inline_engine(chip: str, options: str, group: list[Job], base: dict[str, Any], n: int,
                   workloads: dict[str, Workload]) -> Iterator[Finished]:
    """The group's jobs in this process, configured as a worker is; afterwards the process is
    configured (environment, chip, threads) as before, and what was compiled is dropped."""
    import torch

    from backend.driver import DEVICE, set_chip
    from study.compile_options import ENV_VAR, INDUCTOR_ENV_VAR
    saved_env = {k: os.environ.get(k) for k in (ENV_VAR, INDUCTOR_ENV_VAR, "MTIA_CHIP", "TRITON_CACHE_DIR")}
    saved_chip, saved_threads = DEVICE.chip, torch.get_num_threads()
    try:
        _init_worker(chip, options, workloads)
        for j in group:
            t0 = time.perf_counter()
            out = run_job(j, base)  # an exception propagates: workers=0 is for debugging
            yield j, out, time.perf_counter() - t0
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        from backend.inductor_cpu import options as inductor_options
        inductor_options.activate()
        set_chip(saved_chip)
        torch.set_num_threads(saved_threads)
        _forget_compiled()


def _preload() -> None:
    """Import in this process what every worker imports (Inductor, the backend's Inductor
    hooks, the measurement code) and compile one trivial kernel, before workers are forked
    from it: a forked worker then starts in about 0.15 s instead of 1.8 s (an ablation or chip
    sweep starts a worker per configuration). Nothing compiled here reaches a worker: its
    initializer drops every in-memory kernel and compiles into a cache directory of its own."""
    import torch._dynamo  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401

    import study.inductor  # noqa: F401
    import study.measure  # noqa: F401
    from backend.inductor_cpu import heuristics  # noqa: F401
    _warm_compiler()


def _pool_engine(jobs: list[Job], base: dict[str, Any], n: int,
                 shipped: dict[str, Workload] | None) -> Iterator[Finished]:
    """Every job in one pool of forked workers, each started for one (chip, options): a worker
    whose configuration has no job left is replaced by one for the next job's, so the
    configurations share the workers (no worker waits for another configuration's last job)."""
    _preload()
    for done in run_pool(functools.partial(run_job, base=base), jobs, n, initializer=_init_worker,
                         initargs_for=lambda j: (j.chip, j.options, shipped), stop_on_death=True):
        if not isinstance(done.error, NotStarted):  # never started after a worker died: not run
            yield done.task, done.value if done.error is None else done.error, done.wall_s


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EngineError(f"--engine ray needs Ray, which is not installed: {RAY_INSTALL_HINT}") from None
    return ray


@contextlib.contextmanager
def ray_session(workers: int | None = None) -> Iterator[Any]:
    """Ray for the sweeps inside: an already initialised Ray is reused (and left running);
    otherwise RAY_ADDRESS, when set, names the cluster to attach to, and without it a private
    local Ray with `workers` CPUs is started (address="local": a plain ray.init() would also
    attach to a `ray start` cluster it finds in /tmp/ray) and shut down at the end."""
    ray = _import_ray()
    if ray.is_initialized():
        yield ray
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False, logging_level=logging.WARNING)
    else:
        # no dashboard, no worker output on the driver's terminal (it is in Ray's session logs
        # under /tmp/ray); Ray's temp files stay in its own temp dir, out of the repo
        ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                 log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield ray
    finally:
        ray.shutdown()


def _kernel_by_name(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _reduce_kernel(kernel: Any) -> tuple:
    """Triton kernels hold locks and caches: they travel as their module-level name."""
    fn = kernel
    while not inspect.isfunction(fn):
        fn = fn.fn
    module, name = fn.__module__, fn.__qualname__
    try:
        found = _kernel_by_name(module, name)
    except (ImportError, AttributeError):
        found = None
    if found is not kernel:
        raise pickle.PicklingError(f"Triton kernel {module}.{name} cannot be sent to Ray workers: "
                                   "define it at module level")
    return _kernel_by_name, (module, name)


def _dumps_workloads(workloads: dict[str, Workload]) -> bytes:
    """Workloads for Ray workers: cloudpickle (impls may be lambdas or closures), with Triton
    kernels by reference; a kernel's module must be importable in the workers."""
    from ray import cloudpickle
    from triton.runtime.jit import KernelInterface

    class _Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, KernelInterface):
                return _reduce_kernel(obj)
            return super().reducer_override(obj)

    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(workloads)
    return buf.getvalue()


class _RayWorker:
    """One worker slot of a Ray sweep: a process of its own, configured like a pool worker."""

    def __init__(self, chip: str, options: str, workloads: bytes | None, sys_path: list[str], sha: str):
        if _WORKLOADS:
            raise RuntimeError("a Ray worker process was reused; each must be configured once")
        # a forked pool worker inherits the parent's sys.path; give a Ray worker the same
        sys.path.extend(p for p in sys_path if p not in sys.path)
        mine = provenance.source_fingerprint()
        if mine != sha:
            raise RuntimeError(f"worker on {platform.node()} runs source {mine}, the driver {sha}: "
                               "every node needs the same checkout")
        _init_worker(chip, options, pickle.loads(workloads) if workloads is not None else None)

    def run_job(self, job: Job, base: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        return run_job(job, base)

    def remove_cache(self) -> None:
        """Remove this worker's private Triton cache (a Ray worker is not forked from the
        sweep, whose cache folder it cannot use; it is killed, not left to clean up)."""
        import shutil
        shutil.rmtree(os.environ["TRITON_CACHE_DIR"], ignore_errors=True)


def _ray_engine(chip: str, options: str, group: list[Job], base: dict[str, Any], n: int,
                shipped: dict[str, Workload] | None) -> Iterator[Finished]:
    """One actor per worker slot, one job in flight per actor. Actors are not restarted and
    their tasks not retried, so a job runs at most once; after a worker dies no new job is
    started, the jobs in flight on the others are still collected."""
    ray = _import_ray()
    from ray.exceptions import RayActorError, RayTaskError
    blob = ray.put(_dumps_workloads(shipped)) if shipped is not None else None
    worker = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_RayWorker)
    actors = [worker.remote(chip, options, blob, list(sys.path), base["git_sha"])
              for _ in range(min(n, len(group)))]
    todo, idle, running = list(reversed(group)), list(actors), {}
    died = False
    try:
        while running or (todo and not died):
            while idle and todo and not died:
                actor, job = idle.pop(), todo.pop()
                running[actor.run_job.remote(job, base)] = (job, actor, time.perf_counter())
            [ref], _ = ray.wait(list(running), num_returns=1)
            job, actor, t0 = running.pop(ref)
            try:
                out: Outcome = ray.get(ref)
                idle.append(actor)
            except RayActorError as e:
                died = True
                out = WorkerDied(_first_line(e))
            except RayTaskError as e:
                out = e.cause if isinstance(e.cause, Exception) else e
                idle.append(actor)
            yield job, out, time.perf_counter() - t0
    finally:
        try:  # the live actors' caches; a dead actor's is left where it was
            ray.wait([a.remove_cache.remote() for a in actors], num_returns=len(actors), timeout=30)
        except Exception:  # noqa: BLE001 - cleaning up must not hide what ended the sweep
            pass
        for actor in actors:
            ray.kill(actor)


def _first_line(e: BaseException) -> str:
    """The line of a Ray error that says why, not its traceback."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    why = next((ln for ln in reversed(lines) if not ln.startswith(("File ", "Traceback", "^"))), "")
    return (why or type(e).__name__)[:300]


# ----------------------------------------------------------------------------- the sweep

# each job's host wall time in the latest sweep that ran it: the next sweep starts the longest
# first, so that no core idles at the end of a suite while one long job finishes (a schedule,
# never a result: rows are measured whatever the order)
JOB_WALLS = Table("job_walls", ("suite", "workload", "shape", "chip", "options", "regime", "wall_s", "git_sha"),
                  key=("suite", "workload", "shape", "chip", "options", "regime"), float_format=".3f")


def _wall_key(j: Job) -> tuple[str, ...]:
    return (j.suite, j.workload, j.shape, j.chip, j.options, j.regime)


def _read_walls(path: Path) -> dict[tuple[str, ...], dict[str, str]]:
    from study.results import CorruptResultsError
    try:
        return {tuple(r[k] for k in JOB_WALLS.key): r for r in read_table(path, JOB_WALLS)} if path.exists() else {}
    except CorruptResultsError as e:
        print(f"warning: {e}; jobs start in plan order", file=sys.stderr)
        return {}


def _longest_first(jobs: list[Job], walls: dict[tuple[str, ...], dict[str, str]]) -> list[Job]:
    """Jobs no earlier sweep timed first (in plan order: any may be long), then the others by
    their recorded wall time, longest first (longest processing time first scheduling)."""
    def recorded(j: Job) -> float:
        r = walls.get(_wall_key(j))
        return float(r["wall_s"]) if r is not None and r.get("wall_s") else float("inf")
    return sorted(jobs, key=lambda j: -recorded(j))  # stable: ties keep plan order


@contextlib.contextmanager
def _recording_walls(path: Path, walls: dict[tuple[str, ...], dict[str, str]], sha: str) -> Iterator[dict]:
    """A dict for the wall times of the jobs that finish inside, written over `walls` at the
    end, also when the sweep is interrupted (the jobs it finished keep theirs)."""
    measured: dict[tuple[str, ...], float] = {}
    try:
        yield measured
    finally:
        if measured:
            rows = dict(walls)
            for k, wall in measured.items():
                rows[k] = dict(zip(JOB_WALLS.key, k), wall_s=wall, git_sha=sha)
            write_table(path, JOB_WALLS, [rows[k] for k in sorted(rows)])


def run_suite(suite: Suite, workloads: dict[str, Workload], results: Path | None = None, workers: int | None = None,
              only: set[str] | None = None, repair: bool = False, pass_workloads: bool = False,
              engine: str = "pool") -> SweepSummary:
    """Run (or resume) a suite. `workers=0` runs in this process (for debugging one job).
    `pass_workloads` hands `workloads` to the workers instead of re-importing the registry
    (tests register their own). `engine` runs the workers: "pool" (forked processes on this
    machine) or "ray" (Ray actors, locally or on the cluster named by RAY_ADDRESS)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine '{engine}'; known: {', '.join(ENGINES)}")
    if engine == "ray":
        if workers == 0:
            raise ValueError("the ray engine needs at least one worker (workers=0 runs in this process)")
        _import_ray()  # fail before any work when Ray is not installed
    t0 = time.perf_counter()
    path = raw_dir(results) / f"{suite.name}.csv"
    summary = SweepSummary(suite.name, path)
    if repair and path.exists():
        line = repair_partial_tail(path)
        if line is not None:
            print(f"{path}: dropped partial line {line}", file=sys.stderr)
    sha = provenance.source_fingerprint()
    done = written_keys(path)
    jobs, summary.skipped_done = _pending(plan(suite, workloads, only), done, workloads, sha)
    summary.jobs = len(jobs)
    base = {"run_id": uuid.uuid4().hex[:12], "git_sha": sha, "suite": suite.name,
            "device": provenance.SIM_DEVICE, "versions": provenance.versions()}
    walls_path = raw_dir(results) / f"{JOB_WALLS.name}.csv"
    walls = _read_walls(walls_path)
    jobs = _longest_first(jobs, walls)
    progress = _Progress(suite.name, len(jobs))
    groups: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        groups.setdefault((j.chip, j.options), []).append(j)
    n = workers if workers is not None else (os.cpu_count() or 1)

    def record(job: Job, rows: list[dict[str, Any]], skipped: int) -> None:
        if job.variants or job.priced_regimes:  # a resumed job re-prices rows already written
            rows = [r for r in rows if row_key(dict(r, options=r.get("options") or DEFAULT_OPTIONS,
                                                    config=r.get("config") or "")) not in done]
        if rows:
            append_rows(path, rows)
        summary.rows += len(rows)
        summary.incorrect += sum(1 for r in rows if not r["correct"])
        summary.not_implemented += skipped
        progress.step(f"{job.workload}/{job.shape} on {job.chip}" + (f" [{job.options}]" if job.options != "default" else "")
                      + (f" ({job.regime})" if job.regime != DEFAULT_REGIME else ""))

    shipped = workloads if pass_workloads else None
    if n and engine == "pool" and groups:
        # one pool for every (chip, options): its workers move between configurations
        batches = [(("", ""), jobs)]
    else:
        batches = list(groups.items())
    with ray_session(n) if engine == "ray" and groups else contextlib.nullcontext(), _worker_caches(), \
            _recording_walls(walls_path, walls, sha) as measured:
        for (chip, options), group in batches:
            if n == 0:
                outcomes = _inline_engine(chip, options, group, base, n, shipped or workloads)
            elif engine == "ray":
                outcomes = _ray_engine(chip, options, group, base, n, shipped)
            else:
                outcomes = _pool_engine(group, base, n, shipped)
            finished = 0
            with contextlib.closing(outcomes):
                for j, out, wall in outcomes:
                    finished += 1
                    if isinstance(out, WorkerDied):
                        summary.errors.append(f"{j.workload}/{j.shape}: worker died ({out})")
                    elif isinstance(out, Exception):
                        summary.errors.append(f"{j.workload}/{j.shape}: {type(out).__name__}: {out}")
                    else:
                        try:
                            record(j, *out)
                            measured[_wall_key(j)] = wall
                        except Exception as e:  # noqa: BLE001 - reported, the sweep goes on
                            summary.errors.append(f"{j.workload}/{j.shape}: {type(e).__name__}: {e}")
            if finished < len(group):
                where = f" on {chip} [{options}]" if chip else ""
                summary.errors.append(f"{len(group) - finished} jobs{where} not run after a worker "
                                      "died; run again to resume")
    summary.wall_s = time.perf_counter() - t0
    return summary
