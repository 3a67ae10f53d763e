"""Simulator speed: host seconds to simulate big kernels, and events priced per second.

    python -m tools.bench_sim [--chip mtia2i] [--modes timing,functional] [--json]
    python -m tools.bench_sim --baseline REV [--repeat N] [--csv PATH]

Workloads are builder-written expert programs: a 4096^3 BF16 GEMM (tools/microbench.py's
gemm_program) and a 16384 x 4096 BF16 row softmax, the same two as plain Triton kernels, and
(timing mode only) T3's decoder block at docs/study.md's shape (batch 16, seq 2048, hidden 4096,
32 heads, ffn 11008, BF16) through chip-aware Inductor, one call: its wall time is compile,
autotuning and the simulation of every kernel, what study/model_paper.py spends on it (the row
needs study's model and Inductor configuration, which tools/ never import: it runs
study/bench_decoder.py in a child interpreter). Each row
says which executor mode it used (functional: real tile data; timing: tile data skipped, same
events and cycles) and splits the wall time into execute (functional / timing-only simulation)
and price (timing model). Wall-clock numbers here are host time, never chip time.
`--workloads gemm,softmax,triton,decoder` picks row groups (default: all).

`--baseline REV` measures the simulator of git revision REV (checked out in a temporary git
worktree) and the current code in one run, each in its own subprocess, one after the other on
the same host, and prints them side by side with the speed-up; the simulated cycles of both
must be equal (the exit status is 1 otherwise). `--repeat N` alternates the two N times and
keeps each row's fastest run. `--csv PATH` writes the rows of both. The rows of both are
measured by this file's code (its workloads, run against each revision's simulator), so a
workload added here is compared too; the decoder row needs study/ and backend/inductor_cpu/
at the baseline revision as well (present since T3's chip-aware Inductor); at a revision from
before tools/ the GEMM program comes from backend/sim/microbench.py, where it was then.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from backend.configs import load_chip
from backend.sim.builder import ProgramBuilder
from backend.sim.executor import execute
from backend.sim.timing import price_launch

try:
    from tools.microbench import gemm_grid, gemm_program, n_pes
except ImportError:  # --baseline at a revision from before tools/ (this file runs against it)
    from backend.sim.microbench import gemm_grid, gemm_program, n_pes

if TYPE_CHECKING:
    from backend.program import Program


def softmax_program(rows: int, cols: int, block_rows: int = 4, workers: int = 64) -> Program:
    """Row softmax of a BF16 [rows, cols] matrix, FP32 inside: persistent, `workers` programs,
    each taking row blocks w, w + workers, ...; the input DMA is double-buffered."""
    assert rows % (block_rows * workers) == 0
    per = rows // (block_rows * workers)
    b = ProgramBuilder(f"softmax_{rows}x{cols}")
    X, Y = b.param_ptr("x", "bf16"), b.param_ptr("y", "bf16")
    w = b.pid(0)
    xf = b.tile([block_rows, cols], "f32", name="xf")
    yb = b.tile([block_rows, cols], "bf16", copies=2, name="yb")
    with b.loop(0, per, 1, name="blk") as i:
        off = b.mul(b.mul(b.add(w, b.mul(i, workers)), block_rows), cols)
        x = b.dma_load(X, off, [block_rows, cols], [cols, 1], copies=2)
        b.cast(x, "f32", out=xf)
        mx = b.reshape(b.reduce(xf, 1, "max"), [block_rows, 1])
        b.sub(xf, mx, out=xf)
        b.exp(xf, out=xf)
        s = b.reshape(b.reduce(xf, 1, "sum"), [block_rows, 1])
        b.binary("div", xf, s, out=xf)
        b.cast(xf, "bf16", out=yb)
        b.dma_store(Y, yb, off, [cols, 1])
    return b.build()


def _timed(prog: Program, grid: tuple, args: list, chip: dict, mode: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    traces = execute(prog, grid, args, mode=mode)
    t1 = time.perf_counter()
    timing = price_launch(prog, traces, chip)
    t2 = time.perf_counter()
    events = sum(len(t.events) for t in traces)
    return {"mode": mode, "events": events, "execute_s": t1 - t0, "price_s": t2 - t1, "wall_s": t2 - t0,
            "events_per_s": events / (t2 - t0), "price_us_per_event": (t2 - t1) / events * 1e6,
            "cycles": timing.cycles, "sim_time_us": timing.time_us}


WORKLOADS = ("gemm", "softmax", "triton", "decoder")


def run(chip_name: str = "mtia2i", modes: tuple[str, ...] = ("timing", "functional"),
        workloads: tuple[str, ...] = WORKLOADS) -> list[dict]:
    chip = load_chip(chip_name)
    P = n_pes(chip)
    rows: list[dict] = []
    torch.manual_seed(0)
    if "gemm" in workloads:
        M = N = K = 4096
        prog = gemm_program(M, N, K, workers=P)
        a, bm = torch.randn(M, K).bfloat16(), torch.randn(K, N).bfloat16()
        c = torch.zeros(M, N)
        for mode in modes:
            rows.append({"workload": "gemm_4096x4096x4096_bf16", **_timed(prog, gemm_grid(M, N, workers=P),
                                                                           [a, bm, c], chip, mode)})
        del a, bm, c
    if "softmax" in workloads:
        R, C = 16384, 4096
        prog = softmax_program(R, C, workers=P)
        x = torch.randn(R, C).bfloat16()
        y = torch.empty_like(x)
        for mode in modes:
            rows.append({"workload": "softmax_16384x4096_bf16", **_timed(prog, (P, 1, 1), [x, y], chip, mode)})
        del x, y
    if "triton" in workloads:
        rows += _triton_rows(modes)
    if "decoder" in workloads and "timing" in modes:
        rows += _decoder_rows()
    return rows


def _decoder_rows(shape: dict | None = None) -> list[dict]:
    """T3's decoder block at docs/study.md's shape (`shape`: other sizes) through chip-aware
    Inductor, in timing mode, one call (study/bench_decoder.py, its docstring says what the row
    measures), run in a child interpreter with `backend` and `study` from the tree whose
    simulator this process measures."""
    root = Path(execute.__code__.co_filename).resolve().parents[2]  # the tree `backend` came from
    script = Path(__file__).resolve().parents[1] / "study" / "bench_decoder.py"
    with tempfile.TemporaryDirectory(prefix="sim-bench-decoder-") as tmp:
        out = str(Path(tmp) / "rows.json")
        argv = ["bench_decoder", out, json.dumps(shape or {}), str(torch.get_num_threads())]
        # run_path leaves sys.path alone (the file's folder first would shadow stdlib modules)
        code = f"import runpy, sys; sys.argv = {argv!r}; runpy.run_path({str(script)!r}, run_name='__main__')"
        env = dict(os.environ, PYTHONPATH=str(root))
        proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"decoder row in {root} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        with open(out) as f:
            return json.load(f)


def _triton_rows(modes: tuple[str, ...]) -> list[dict]:
    """The same two workloads as plain Triton kernels (kernels/), compiled by the backend and
    launched through the driver: what a user of the backend waits for."""
    import triton  # noqa: F401  (backend discovery first)
    from backend import driver
    from kernels.gemm import matmul
    from kernels.normalisation import softmax
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4096, 4096, generator=g).bfloat16()
    b = torch.randn(4096, 4096, generator=g).bfloat16()
    x = torch.randn(16384, 4096, generator=g).bfloat16()
    rows = []
    for name, call in (("triton_gemm_4096^3_bf16", lambda: matmul(a, b)),
                       ("triton_softmax_16384x4096", lambda: softmax(x))):
        for mode in modes:
            old = driver.DEVICE.mode
            driver.DEVICE.mode = mode
            try:
                call()  # compile (and one simulation) outside the timed call
                with driver.record_launches() as recs:
                    t0 = time.perf_counter()
                    call()
                    wall = time.perf_counter() - t0
            finally:
                driver.DEVICE.mode = old
            events = int(sum(r.timing.detail.get("events", 0) for r in recs))
            rows.append({"workload": name, "mode": mode, "events": events, "execute_s": wall,
                         "price_s": float("nan"), "wall_s": wall, "events_per_s": events / wall,
                         "price_us_per_event": float("nan"), "cycles": sum(r.cycles for r in recs)})
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'workload':<26} {'mode':<10} {'events':>8} {'execute s':>9} {'price s':>8} {'wall s':>7} "
            f"{'events/s':>9} {'us/event':>8} {'sim cycles':>11}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['workload']:<26} {r['mode']:<10} {r['events']:>8} {r['execute_s']:>9.2f} "
                     f"{r['price_s']:>8.2f} {r['wall_s']:>7.2f} {r['events_per_s']:>9.0f} "
                     f"{r['price_us_per_event']:>8.2f} {r['cycles']:>11}")
    return "\n".join(lines)


CSV_COLUMNS = ("code", "workload", "mode", "events", "wall_s", "events_per_s", "cycles")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _measure_in(root: Path, chip: str, modes: str, workloads: str = ",".join(WORKLOADS)) -> list[dict]:
    """Run this benchmark (this file) with the simulator under `root` in a fresh interpreter; its rows."""
    env = dict(os.environ, PYTHONPATH=str(root))  # `backend` (and Triton's plugin) from `root`
    # run_path leaves sys.path alone (the file's folder first would shadow the stdlib's `trace`)
    code = (f"import runpy, sys; sys.argv = ['bench', '--chip', {chip!r}, '--modes', {modes!r}, '--workloads', "
            f"{workloads!r}, '--json']; runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"benchmark in {root} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = proc.stdout
    at = out.find("[\n") if out.startswith("[\n") else out.find("\n[\n") + 1
    if at < 0 or not out[at:].startswith("["):
        raise RuntimeError(f"benchmark in {root} printed no JSON rows:\n{out[-2000:]}")
    return json.JSONDecoder().raw_decode(out[at:])[0]


def _fastest(runs: list[list[dict]]) -> list[dict]:
    """Per (workload, mode), the row of the run with the least wall time."""
    best: dict[tuple, dict] = {}
    for rows in runs:
        for r in rows:
            key = (r["workload"], r["mode"])
            if key not in best or r["wall_s"] < best[key]["wall_s"]:
                best[key] = r
    return list(best.values())


def compare(rev: str, chip: str = "mtia2i", modes: str = "timing,functional", repeat: int = 1,
            workloads: str = ",".join(WORKLOADS)) -> list[dict]:
    """Rows of revision `rev` (code "baseline <sha>") and of the current working tree (code
    "current <sha>", "+dirty" when the code it measures has uncommitted changes: results,
    notebooks and docs do not count, as in study/provenance.py). The two alternate `repeat`
    times and each row keeps its fastest run: on a shared host the load changes within minutes,
    and the minimum is the least disturbed measurement of the same deterministic work."""
    root = Path(__file__).resolve().parents[1]
    base_sha = _git(root, "rev-parse", "--short", f"{rev}^{{commit}}")
    cur_sha = _git(root, "rev-parse", "--short", "HEAD")
    # the code a measurement depends on (study.provenance.CODE_PATHS, which tools/ may not import)
    code = ("backend", "kernels", "baselines", "study", "tools", "pyproject.toml", "requirements.txt")
    if _git(root, "status", "--porcelain", "--untracked-files=no", "--", *code):
        cur_sha += "+dirty"
    base_runs, cur_runs = [], []
    with tempfile.TemporaryDirectory(prefix="sim-bench-") as tmp:
        wt = Path(tmp) / "baseline"
        _git(root, "worktree", "add", "--detach", str(wt), base_sha)
        try:
            for _ in range(max(1, repeat)):
                base_runs.append(_measure_in(wt, chip, modes, workloads))
                cur_runs.append(_measure_in(root, chip, modes, workloads))
        finally:
            _git(root, "worktree", "remove", "--force", str(wt))
    return [{"code": f"baseline {base_sha}", **r} for r in _fastest(base_runs)] + \
        [{"code": f"current {cur_sha}", **r} for r in _fastest(cur_runs)]


def format_comparison(rows: list[dict]) -> tuple[str, bool]:
    """The side-by-side table, and whether every workload's cycles agree between the two."""
    base = {(r["workload"], r["mode"]): r for r in rows if r["code"].startswith("baseline")}
    cur = {(r["workload"], r["mode"]): r for r in rows if r["code"].startswith("current")}
    codes = [next(r["code"] for r in rows if r["code"].startswith(k)) for k in ("baseline", "current")]
    head = (f"{'workload':<26} {'mode':<10} {'events':>8} {'base s':>7} {'cur s':>7} {'speed-up':>8} "
            f"{'base cycles':>11} {'cur cycles':>11} same")
    lines = [f"{codes[0]} vs {codes[1]} (speed-up: baseline wall s / current wall s)", head, "-" * len(head)]
    same_all = True
    for key, b in base.items():
        c = cur.get(key)
        if c is None:
            lines.append(f"{key[0]:<26} {key[1]:<10} (missing in the current run)")
            same_all = False
            continue
        same = b["cycles"] == c["cycles"] and b["events"] == c["events"]
        same_all &= same
        lines.append(f"{key[0]:<26} {key[1]:<10} {c['events']:>8} {b['wall_s']:>7.2f} {c['wall_s']:>7.2f} "
                     f"{b['wall_s'] / c['wall_s']:>7.2f}x {b['cycles']:>11} {c['cycles']:>11} "
                     f"{'yes' if same else 'NO'}")
    return "\n".join(lines), same_all


def write_csv(rows: list[dict], path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "wall_s": f"{r['wall_s']:.4f}", "events_per_s": f"{r['events_per_s']:.0f}"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="mtia2i")
    ap.add_argument("--modes", default="timing,functional")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--baseline", metavar="REV", help="also measure git revision REV and compare")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="with --baseline: alternate the two N times, keep each row's fastest run")
    ap.add_argument("--csv", metavar="PATH", help="write the rows (code, workload, mode, events, wall_s, "
                                                  "events_per_s, cycles) to PATH")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"row groups, of {', '.join(WORKLOADS)}")
    a = ap.parse_args(argv)
    unknown = set(a.workloads.split(",")) - set(WORKLOADS)
    if unknown:
        ap.error(f"--workloads: unknown {sorted(unknown)}; known: {', '.join(WORKLOADS)}")
    if a.baseline:
        rows = compare(a.baseline, a.chip, a.modes, a.repeat, a.workloads)
        if a.csv:
            write_csv(rows, a.csv)
        table, same = format_comparison(rows)
        print(f"simulator speed, chip {a.chip}, one host thread, wall seconds of the simulator")
        print(table)
        if not same:
            print("ERROR: baseline and current disagree on events or cycles")
        return 0 if same else 1
    torch.set_num_threads(1)  # the target is one core
    rows = run(a.chip, tuple(a.modes.split(",")), tuple(a.workloads.split(",")))
    if a.csv:
        write_csv([{"code": "current " + _git(Path(__file__).resolve().parents[1], "rev-parse", "--short", "HEAD"),
                    **r} for r in rows], a.csv)
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        print(f"simulator speed, chip {a.chip}, one host thread (price: us/event of the timing model)")
        print(format_table(rows))
        same = {}
        for r in rows:
            same.setdefault(r["workload"], set()).add(r["cycles"])
        for wl, cyc in same.items():
            if len(cyc) > 1:
                print(f"WARNING: {wl}: modes disagree on cycles {sorted(cyc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
