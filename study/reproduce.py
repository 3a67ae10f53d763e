"""`make reproduce`: run the study on the default chip, then execute every notebook headless.

A notebook's only source is its jupytext percent-format script, notebooks/<ID>_<name>.py (plain
Python: `python notebooks/F1_speedup_vs_expert.py` runs it too). Here each one is converted to a
notebook with jupytext, executed with nbclient from the repository root, and the executed copy,
with its outputs, is written to notebooks/executed/<ID>_<name>.ipynb (committed: the regenerated
artefact beside results/figures and results/tables). Cell ids are fixed and execution times are
not recorded, so re-executing an unchanged notebook on unchanged data gives the same file.

Notebooks whose input is optional (T1's microbenchmarks are always shown with the config
table; F6 needs committed GPU rows) are skipped with a message when their data is absent;
every other notebook must run, and a failing one fails the whole reproduction.
"""
from __future__ import annotations

import csv
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from study.results import Table, raw_dir, read_rows, write_table

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
SOURCE_GLOB = "[FT][0-9]*_*.py"  # one source per table or figure: F1_speedup_vs_expert.py, T2_kernel_suite.py, ...


def notebook_sources(notebook_dir: Path = NOTEBOOK_DIR) -> list[Path]:
    """The jupytext sources of the study's notebooks, in order."""
    return sorted(notebook_dir.glob(SOURCE_GLOB))


def executed_path(source: Path) -> Path:
    """Where `make reproduce` keeps the executed copy of a source, outputs included."""
    return source.parent / "executed" / f"{source.stem}.ipynb"


def _has_gpu_rows(results: Path) -> bool:
    from study.results import raw_files
    return any(r["impl"] in ("triton_gpu", "torch_gpu") for p in raw_files(results) for r in read_rows(p))


def _has_expert_rows(results: Path) -> bool:
    p = raw_dir(results) / "full.csv"
    return p.exists() and any(r["impl"] == "expert" for r in read_rows(p))


# notebook -> predicate its data must meet to be run at all; every other notebook must succeed.
# F1 compares against baselines/expert, which lands after the workloads.
def _has_autotune_rows(results: Path) -> bool:
    p = raw_dir(results) / "autotune.csv"
    return p.exists() and any(r["config"] for r in read_rows(p))


OPTIONAL: dict[str, Callable[[Path], bool]] = {"F6_gpu": _has_gpu_rows, "F1_speedup_vs_expert": _has_expert_rows,
                                                "F7_autotune": _has_autotune_rows}


def to_notebook(source: Path) -> Any:
    """The notebook of a jupytext percent-format source, with stable cell ids."""
    import jupytext
    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{source.stem}-{i}"  # stable ids: re-executing gives identical files
    return nb


# the kernel's name for a cell's code in tracebacks and warnings: /tmp/ipykernel_<pid>/<hash>.py
_KERNEL_CELL_FILE = re.compile(r"/\S*?/ipykernel_\d+/\d+\.py")


def _machine_independent(nb: Any, repo: Path, results: Path) -> None:
    """Outputs without this machine's paths: the results folder and the repository root become
    relative names, the kernel's temporary cell file `<cell>`, so an executed copy is the same
    wherever it was executed."""
    res = results.resolve()

    def clean(text: str) -> str:
        if res != repo / "results":
            text = text.replace(f"{res}/", "$STUDY_RESULTS/")
        return _KERNEL_CELL_FILE.sub("<cell>", text.replace(f"{repo}/", ""))

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = clean(out["text"])
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/") and isinstance(value, str):
                    out["data"][mime] = clean(value)
            if "traceback" in out:
                out["traceback"] = [clean(t) for t in out["traceback"]]


def execute_notebook(source: Path, results: Path, timeout_s: int = 600) -> Path:
    """Convert, execute (from the repository root) and write the executed copy; returns its path.
    A notebook that fails leaves its previous executed copy in place."""
    import nbformat
    from nbclient import NotebookClient
    nb = to_notebook(source)
    os.environ["STUDY_RESULTS"] = str(results)
    os.environ.setdefault("MPLBACKEND", "Agg")
    from jupyter_client.manager import KernelManager
    # local sockets, not TCP; named under a temporary directory (the default names them in the
    # working directory, where they would outlive the run)
    with tempfile.TemporaryDirectory(prefix="study-kernel-") as sockets:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=str(Path(sockets) / "kernel"))
        try:
            NotebookClient(nb, km=km, timeout=timeout_s, kernel_name="python3", record_timing=False,
                           resources={"metadata": {"path": str(source.parent.parent)}}).execute()
        finally:
            if km.has_kernel:  # a kernel manager handed to nbclient is not shut down by it
                km.shutdown_kernel(now=True)
    _machine_independent(nb, source.resolve().parent.parent, results)
    out = executed_path(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return out


def run_notebooks(results: Path, workers: int | None = None) -> list[str]:
    """Execute every notebook whose data is there, `workers` at a time (each in a process of
    its own, forked from this one, with its own kernel); lists them as they finish and returns
    the names of those that failed."""
    from study.pool import run_pool
    todo = []
    for src in notebook_sources():
        pred = OPTIONAL.get(src.stem)
        if pred is not None and not pred(results):
            print(f"  skip {src.name}: its data is not in {raw_dir(results)}")
            continue
        todo.append(src)
    sys.stdout.flush()  # a forked process must not inherit (and print again) unflushed output
    failures = []
    for d in run_pool(lambda src: execute_notebook(src, results), todo, workers or os.cpu_count() or 1, fresh=True):
        if d.error is None:
            print(f"  ok   {d.task.name} ({d.wall_s:.1f}s)")
        else:
            msg = str(d.error).strip().splitlines()
            print(f"  FAIL {d.task.name}: {msg[-1] if msg else type(d.error).__name__}")
            failures.append(d.task.name)
        sys.stdout.flush()
    return sorted(failures)


WALL_COLUMNS = ("suite", "wall_s", "rows", "workers", "engine", "cpus", "git_sha", "measured_at")
WALL_TABLE = Table("reproduce_wall", WALL_COLUMNS, key=("suite",))


def _write_walls(path: Path, walls: list[tuple[str, float, int]], workers: int | None, engine: str) -> None:
    """Each suite's host wall time in this reproduction (F10): replaced whole, atomically."""
    import datetime

    from study import provenance
    sha = provenance.source_fingerprint()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    write_table(path, WALL_TABLE, [dict(zip(WALL_COLUMNS, (name, f"{wall:.1f}", rows, workers or os.cpu_count(), engine,
                                                          os.cpu_count(), sha, now))) for name, wall, rows in walls])


def _gate_full(workloads: dict, results: Path, workers: int | None) -> None:
    """Every study shape's cycles against results/expected_full.csv (the rows just measured are
    reused). Reported, not fatal: a reproduction after an intended model change is expected to
    move numbers, and the printed command records them."""
    from study.gate import expected_path_for, run_gate
    expected = expected_path_for("full")
    if not expected.exists():
        print(f"gate (full): no {expected.name} yet; record it with `python -m study gate --suite full --update`")
        return
    report, _ = run_gate(workloads, results, expected, workers=workers, suite="full")
    print(report.lines()[-1].replace("gate", "gate (full suite, every study shape)", 1))
    if not report.ok:
        for line in report.lines()[:-1][:20]:
            print(f"  {line}")
        print("  review, then record with `python -m study gate --suite full --update`")


# F6's simulated h200 rows, re-simulated at this code on every reproduction (the measured GPU
# rows, results/raw/gpu_h200.csv, need an H200 and are not): test shapes, then the study shapes
# up to SIM_H200_MAX_COST (bytes + flops/200, study.gpu.cost) smallest first: 140 jobs, about
# 2-4 minutes on two cores (5 under load); the budget is a guard for a much slower machine,
# where it stops starting new jobs and the largest study shapes are left out (listed in the output).
# The h100 rows (F6's held-out device, gpu_h100.csv measured) follow, the same jobs on the h100 config.
SIM_H200_BUDGET_S = 420.0
SIM_H200_MAX_COST = 64e6
SIM_GPU_CHIPS = ("h200", "h100")  # the order reproduce simulates them in


def simulate_gpu(results: Path, chip: str = "h200", workers: int | None = None) -> bool:
    """Replace raw/sim_<chip>.csv with rows simulated now on the chip's GPU config (a separate
    process: the simulate mode switches its process to that chip). Returns whether it ran."""
    import subprocess
    name = f"sim_{chip}"
    out = raw_dir(results) / f"{name}.csv"
    tmp = out.with_name(f"{name}.csv.new")
    tmp.unlink(missing_ok=True)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "study.gpu", "--simulate", "--chip", chip, "--out", str(tmp), "--budget-s",
           str(SIM_H200_BUDGET_S), "--max-cost", str(SIM_H200_MAX_COST), "--job-timeout-s", "120",
           "--workers", str(workers or os.cpu_count() or 1)]
    r = subprocess.run(cmd, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True)
    tail = r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else []
    if r.returncode != 0 or not tmp.exists():
        print(f"error: {name} failed ({r.returncode}): {r.stderr.strip()[-300:]}", file=sys.stderr)
        return False
    os.replace(tmp, out)
    print(f"{name}: {' '.join(tail)} ({time.perf_counter() - t0:.0f}s)")
    return True


def simulate_h200(results: Path, workers: int | None = None) -> bool:
    """simulate_gpu on the h200 config."""
    return simulate_gpu(results, "h200", workers)


# reproduce_wall.csv's name of the paper-shape models step, which overlaps the suites and the
# steps after them (F10 leaves it out of the sum of the steps' wall times)
BACKGROUND_MODELS = "paper-shape models (T3, in the background)"


class PaperModels:
    """T3's models at docs/study.md's shapes in timing mode (study/model_paper.py), in a child
    interpreter (it configures Inductor for the chip) started in the background before the
    suites: one process beside their workers, it takes the time a core would idle (a worker
    starting, a suite's last jobs) and is mostly done before the steps after the suites. Its
    output goes to files, not pipes (no reader thread in a process the suites fork workers
    from). `wait()` gives the rows it wrote, or -1 when it failed; `wall_s` its own run time."""

    def __init__(self, results: Path, cmd: list[str] | None = None):
        import subprocess
        self.out = raw_dir(results) / "model_coverage_paper.csv"
        cmd = cmd or [sys.executable, "-m", "study.model_paper", "--out", str(self.out)]
        self.logs = Path(tempfile.mkdtemp(prefix="study-models-"))
        self.t0 = time.time()
        self.wall_s = 0.0
        with open(self.logs / "stdout", "w") as out, open(self.logs / "stderr", "w") as err:
            self.proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)

    def wait(self) -> int:
        import shutil
        self.proc.wait()
        # its last line is written as it ends: the file's time is the run's end
        self.wall_s = max(0.0, max(p.stat().st_mtime for p in self.logs.iterdir()) - self.t0)
        stdout, stderr = ((self.logs / n).read_text() for n in ("stdout", "stderr"))
        shutil.rmtree(self.logs, ignore_errors=True)
        if self.proc.returncode != 0 or not self.out.exists():
            print(f"error: paper-shape models failed ({self.proc.returncode}): {stderr.strip()[-300:]}",
                  file=sys.stderr)
            return -1
        for line in stdout.splitlines():
            if line.startswith("# "):
                print(f"  {line[2:]}")
        print(f"paper-shape models: {self.wall_s:.0f}s (beside the suites)")
        with open(self.out, newline="") as f:
            return sum(1 for _ in csv.DictReader(f))


def reproduce(results: Path, workers: int | None = None, skip_run: bool = False, engine: str = "pool") -> int:
    import contextlib

    from study.registry import load_all
    from study.runner import ray_session, run_suite
    from study.suites import REPRODUCE_SUITES, get_suite
    t0 = time.perf_counter()
    status = 0
    if not skip_run:
        workloads = dict(load_all())
        if not workloads:
            print("error: no workloads registered in study/workloads/", file=sys.stderr)
            return 1
        # one Ray for every suite (run_suite reuses an initialised Ray)
        walls: list[tuple[str, float, int]] = []
        models = PaperModels(results)
        try:
            with ray_session(workers) if engine == "ray" else contextlib.nullcontext():
                for name in REPRODUCE_SUITES:
                    s = run_suite(get_suite(name), workloads, results, workers, engine=engine)
                    walls.append((name, s.wall_s, s.rows))
                    print(f"{name}: {s.rows} rows in {s.wall_s:.0f}s ({s.skipped_done} already measured, "
                          f"{s.not_implemented} not implemented, {s.incorrect} incorrect or failed)")
                    for e in s.errors:
                        print(f"  error: {e}", file=sys.stderr)
                        status = 1
            _gate_full(workloads, results, workers)
            from study import timeline
            timeline.main(["--out", str(raw_dir(results) / "timeline_matmul.json")])
            from tools import microbench  # T1: the simulator's calibration against published peaks
            microbench.main(["--chip", "mtia2i", "--csv", str(raw_dir(results) / "microbench_mtia2i.csv")])
            sys.stdout.flush()
            for chip in SIM_GPU_CHIPS:
                t_sim = time.perf_counter()
                if not simulate_gpu(results, chip, workers):
                    status = 1
                sim_csv = raw_dir(results) / f"sim_{chip}.csv"
                walls.append((f"sim_{chip} (F6)", time.perf_counter() - t_sim,
                              len(read_rows(sim_csv)) if sim_csv.exists() else 0))
        except BaseException:  # an interrupted reproduction leaves no model run behind
            models.proc.kill()
            models.wait()
            raise
        n_models = models.wait()
        if n_models < 0:
            status = 1
        walls.append((BACKGROUND_MODELS, models.wall_s, max(n_models, 0)))
        print("suite wall times: " + ", ".join(f"{n} {w:.0f}s ({r} rows)" for n, w, r in walls))
        _write_walls(raw_dir(results) / "reproduce_wall.csv", walls, workers, engine)
    print("notebooks:")
    sys.stdout.flush()  # a process started from here must not inherit (and print again) unflushed output
    failures = run_notebooks(results, workers)
    if failures:
        print(f"error: notebooks failed: {', '.join(failures)}", file=sys.stderr)
        status = 1
    print(f"reproduce: total wall time {time.perf_counter() - t0:.0f}s"
          + ("" if status == 0 else " (with failures)"))
    return status
