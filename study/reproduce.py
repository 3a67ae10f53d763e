"""`make reproduce`: run the study on the default chip, then execute every notebook headless.

Notebooks whose input is optional (T1's microbenchmarks are always shown with the config
table; F6 needs committed GPU rows) are skipped with a message when their data is absent;
every other notebook must run, and a failing one fails the whole reproduction.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

from study.results import raw_dir, read_rows

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"


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


def execute_notebook(path: Path, results: Path, timeout_s: int = 600) -> None:
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    os.environ["STUDY_RESULTS"] = str(results)
    os.environ.setdefault("MPLBACKEND", "Agg")
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name="python3", transport="ipc")  # local sockets, not TCP
    NotebookClient(nb, km=km, timeout=timeout_s, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent.parent)}}).execute()


def run_notebooks(results: Path) -> list[str]:
    failures = []
    for nb in sorted(NOTEBOOK_DIR.glob("*.ipynb")):
        pred = OPTIONAL.get(nb.stem)
        if pred is not None and not pred(results):
            print(f"  skip {nb.name}: its data is not in {raw_dir(results)}")
            continue
        t0 = time.perf_counter()
        try:
            execute_notebook(nb, results)
            print(f"  ok   {nb.name} ({time.perf_counter() - t0:.1f}s)")
        except Exception as e:  # noqa: BLE001 - every failure is listed, then the run fails
            msg = str(e).strip().splitlines()
            print(f"  FAIL {nb.name}: {msg[-1] if msg else type(e).__name__}")
            failures.append(nb.name)
    return failures


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
        with ray_session(workers) if engine == "ray" else contextlib.nullcontext():
            for name in REPRODUCE_SUITES:
                s = run_suite(get_suite(name), workloads, results, workers, engine=engine)
                print(f"{name}: {s.rows} rows in {s.wall_s:.0f}s ({s.skipped_done} already measured, "
                      f"{s.not_implemented} not implemented, {s.incorrect} incorrect or failed)")
                for e in s.errors:
                    print(f"  error: {e}", file=sys.stderr)
                    status = 1
        from study import timeline
        timeline.main(["--out", str(raw_dir(results) / "timeline_matmul.json")])
        from backend.sim import microbench  # T1: the simulator's calibration against published peaks
        microbench.main(["--chip", "mtia2i", "--csv", str(raw_dir(results) / "microbench_mtia2i.csv")])
    print("notebooks:")
    failures = run_notebooks(results)
    if failures:
        print(f"error: notebooks failed: {', '.join(failures)}", file=sys.stderr)
        status = 1
    print(f"reproduce: total wall time {time.perf_counter() - t0:.0f}s"
          + ("" if status == 0 else " (with failures)"))
    return status
