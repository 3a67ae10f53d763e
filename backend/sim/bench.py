"""Simulator speed: host seconds to simulate big kernels, and events priced per second.

    python -m backend.sim.bench [--chip mtia2i] [--modes timing,functional] [--json]

Workloads are builder-written expert programs: a 4096^3 BF16 GEMM (backend.sim.microbench's
gemm_program) and a 16384 x 4096 BF16 row softmax. Each row says which executor mode it used
(functional: real tile data; timing: tile data skipped, same events and cycles) and splits
the wall time into execute (functional / timing-only simulation) and price (timing model).
Wall-clock numbers here are host time, never chip time.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch

from backend.configs import load_chip
from backend.sim.builder import ProgramBuilder
from backend.sim.executor import execute
from backend.sim.isa import Program
from backend.sim.microbench import gemm_grid, gemm_program, n_pes
from backend.sim.timing import price_launch


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


def run(chip_name: str = "mtia2i", modes: tuple[str, ...] = ("timing", "functional")) -> list[dict]:
    chip = load_chip(chip_name)
    P = n_pes(chip)
    rows: list[dict] = []
    torch.manual_seed(0)
    M = N = K = 4096
    prog = gemm_program(M, N, K, workers=P)
    a, bm = torch.randn(M, K).bfloat16(), torch.randn(K, N).bfloat16()
    c = torch.zeros(M, N)
    for mode in modes:
        rows.append({"workload": "gemm_4096x4096x4096_bf16", **_timed(prog, gemm_grid(M, N, workers=P),
                                                                       [a, bm, c], chip, mode)})
    del a, bm, c
    R, C = 16384, 4096
    prog = softmax_program(R, C, workers=P)
    x = torch.randn(R, C).bfloat16()
    y = torch.empty_like(x)
    for mode in modes:
        rows.append({"workload": "softmax_16384x4096_bf16", **_timed(prog, (P, 1, 1), [x, y], chip, mode)})
    del x, y
    return rows + _triton_rows(modes)


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="mtia2i")
    ap.add_argument("--modes", default="timing,functional")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)  # the target is one core
    rows = run(a.chip, tuple(a.modes.split(",")))
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
