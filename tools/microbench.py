"""Calibration microbenchmarks: simulated peaks of a chip config against its published figures.

    python -m tools.microbench --chip mtia2i [--json] [--csv results/raw/microbench_mtia2i.csv]

Every number comes from a real program (written with backend/sim/builder.py) run through
executor.execute and priced by timing.price_launch, end to end: launch overhead, DMA warm-up
and pipeline drain are included, so a peak below 100% is what the program really gets.
Programs whose timing does not depend on data use the executor's timing-only mode (printed).

What each row can show (column `check`): the peak rows (DPE, SIMD, LPDDR, SRAM, local memory,
launch) read back figures the config was set from, so they are a self-consistency check of the
simulator (its overheads cost what they should), not a validation. The expert 2048^3 GEMM's
fraction of peak is the one published end-to-end figure that is not a config input: it is
reported under both output policies (C kept in the on-chip SRAM, the study's default `cold`
regime; C written back to LPDDR on the critical path), since the published figure does not say
which one it was measured with.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import torch

from backend.configs import load_chip
from backend.sim.builder import ProgramBuilder
from backend.sim.executor import execute
from backend.program import Program
from backend.sim.timing import LaunchTiming, price_launch

SOURCE = "ISCA25 Table 2"
SELF_CHECK = "self-consistency: the config was set from this figure"
INDEPENDENT = "independent: a published end-to-end figure, not a config input"


def n_pes(chip: dict) -> int:
    return chip["pe_grid"]["rows"] * chip["pe_grid"]["cols"]


def run(prog: Program, grid: tuple[int, int, int], args: list, chip: dict, mode: str = "functional",
        **kw: Any) -> LaunchTiming:
    traces = execute(prog, grid, args, mode=mode)
    return price_launch(prog, traces, chip, **kw)


# ----------------------------------------------------------------------------- programs

def dpe_peak_program(dtype: str, iters: int, m: int = 256, n: int = 128, k: int = 128) -> Program:
    """Every PE loads one A and B tile (the same for all) and multiplies them `iters` times."""
    b = ProgramBuilder(f"dpe_peak_{dtype}")
    A, B = b.param_ptr("a", dtype), b.param_ptr("b", dtype)
    ta = b.dma_load(A, 0, [m, k], [k, 1])
    tb = b.dma_load(B, 0, [k, n], [n, 1])
    acc = b.zeros([1, 1], "i32" if dtype == "i8" else "f32")
    out = b.tile([m, n], acc.dtype, name="out")
    with b.loop(0, iters, 1):
        b.matmul(ta, tb, acc, out=out)
    return b.build()


def simd_peak_program(iters: int, rows: int = 64, cols: int = 256) -> Program:
    """FMA on tiles resident in local memory, accumulated in place."""
    b = ProgramBuilder("simd_peak")
    x = b.splat(1.0, [rows, cols], "f32")
    y = b.splat(0.5, [rows, cols], "f32")
    z = b.zeros([rows, cols], "f32")
    with b.loop(0, iters, 1):
        b.fma(x, y, z, out=z)
    return b.build()


def stream_program(tile_elems: int, tiles_per_pe: int, stride_pe: int, dtype: str = "f32") -> Program:
    """Each program streams `tiles_per_pe` contiguous tiles of `tile_elems`, double-buffered;
    program p starts at element p * stride_pe (0: every PE reads the same data)."""
    b = ProgramBuilder("stream")
    src = b.param_ptr("src", dtype)
    base = b.mul(b.pid(0), stride_pe)
    with b.loop(0, tiles_per_pe, 1) as i:
        b.dma_load(src, b.add(base, b.mul(i, tile_elems)), [tile_elems], [1], copies=2)
    return b.build()


def empty_program() -> Program:
    return ProgramBuilder("empty").build()


def gemm_program(M: int, N: int, K: int, BM: int = 256, BN: int = 128, BK: int = 32,
                 workers: int = 64, dtype: str = "bf16", stages: int = 3, acc_copies: int = 2,
                 chip: str | None = None) -> Program:
    """Expert GEMM C[M,N] (f32) = A[M,K] @ B[K,N]: persistent, one program per PE.

    Program w computes output tiles w, w + workers, ... (BM x BN each; tile t is row block
    t // (N/BN), column block t % (N/BN)). K is the inner loop; A and B tiles are
    double-buffered (DMA of step k+1 overlaps the matmul of step k) and so is the FP32
    accumulator (the store of tile t overlaps the compute of tile t+1). The first matmul of a
    tile takes a broadcast [1,1] zero as its accumulator, so no SIMD pass clears it.
    Local memory: A 2x32 KB + B 2x16 KB + acc 2x128 KB = 352 KB of 384 KB."""
    assert M % BM == 0 and N % BN == 0 and K % BK == 0 and K // BK >= 2
    tiles_n = N // BN
    n_tiles = (M // BM) * tiles_n
    workers = min(workers, n_tiles)
    assert n_tiles % workers == 0, "workers must divide the number of output tiles"
    per_worker = -(-n_tiles // workers)
    b = ProgramBuilder(f"gemm_{M}x{N}x{K}", chip=chip)
    A, B, C = b.param_ptr("a", dtype), b.param_ptr("b", dtype), b.param_ptr("c", "f32")
    w = b.pid(0)
    zero = b.zeros([1, 1], "f32")
    acc = b.tile([BM, BN], "f32", copies=acc_copies, name="acc")
    with b.loop(0, per_worker, 1, name="t") as j:
        t = b.add(w, b.mul(j, workers))
        row = b.mul(b.scalar("sdiv", t, tiles_n), BM)
        col = b.mul(b.scalar("srem", t, tiles_n), BN)
        a_off = b.mul(row, K)
        ta = b.dma_load(A, a_off, [BM, BK], [K, 1], copies=stages)
        tb = b.dma_load(B, col, [BK, BN], [N, 1], copies=stages)
        b.matmul(ta, tb, zero, out=acc)
        with b.loop(BK, K, BK, name="k") as k:
            ta = b.dma_load(A, b.add(a_off, k), [BM, BK], [K, 1], copies=stages, out=ta)
            tb = b.dma_load(B, b.add(b.mul(k, N), col), [BK, BN], [N, 1], copies=stages, out=tb)
            b.matmul(ta, tb, acc)
        b.dma_store(C, acc, b.add(b.mul(row, N), col), [N, 1])
    return b.build()


# tile configs tried in order, the first that fits the chip's local memory wins
GEMM_CONFIGS = ({"BM": 256, "BN": 128, "BK": 32, "stages": 3, "acc_copies": 2},
                {"BM": 128, "BN": 128, "BK": 32, "stages": 3, "acc_copies": 2},
                {"BM": 128, "BN": 128, "BK": 32, "stages": 2, "acc_copies": 1},
                {"BM": 64, "BN": 64, "BK": 32, "stages": 2, "acc_copies": 1})


def gemm_for_chip(M: int, N: int, K: int, chip: str) -> tuple[Program, dict]:
    from backend.sim.builder import LocalMemoryOverflow
    P = n_pes(load_chip(chip))
    for cfg in GEMM_CONFIGS:
        n_tiles = (M // cfg["BM"]) * (N // cfg["BN"])
        workers = max(w for w in range(1, min(P, n_tiles) + 1) if n_tiles % w == 0)
        try:
            return gemm_program(M, N, K, workers=workers, chip=chip, **cfg), {**cfg, "workers": workers}
        except LocalMemoryOverflow:
            continue
    raise LocalMemoryOverflow(f"no GEMM tile config fits the local memory of {chip}")


def gemm_grid(M: int, N: int, BM: int = 256, BN: int = 128, workers: int = 64) -> tuple[int, int, int]:
    return (min(workers, (M // BM) * (N // BN)), 1, 1)


# ----------------------------------------------------------------------------- measurements

def measure(chip_name: str) -> list[dict]:
    chip = load_chip(chip_name)
    pub = chip.get("published", {})
    P = n_pes(chip)
    rows: list[dict] = []

    def row(metric: str, unit: str, measured: float, published: float | None, mode: str, note: str = "",
            check: str = SELF_CHECK) -> None:
        rows.append({"metric": metric, "unit": unit, "measured": measured, "published": published,
                     "ratio": measured / published if published else None, "source": SOURCE,
                     "chip": chip_name, "mode": mode, "note": note, "check": check})

    # DPE peaks: every PE x 128 matmuls of 256x128x128 on resident tiles
    for dt, key, unit in (("bf16", "dpe_bf16_tflops", "TFLOPS"), ("i8", "dpe_int8_tops", "TOPS")):
        prog = dpe_peak_program(dt, 128)
        if dt == "i8":
            a, bb = torch.ones(256, 128, dtype=torch.int8), torch.ones(128, 128, dtype=torch.int8)
        else:
            a, bb = torch.randn(256, 128).bfloat16(), torch.randn(128, 128).bfloat16()
        t = run(prog, (P, 1, 1), [a, bb], chip, mode="timing")
        row(f"dpe_peak_{dt}", unit, t.detail["dpe_flops"] / (t.time_us * 1e-6) / 1e12, pub.get(key), "timing")

    # SIMD: FMA (2 ops / element), 64 x 256 f32 tiles, 64 PEs
    prog = simd_peak_program(512)
    t = run(prog, (P, 1, 1), [], chip, mode="timing")
    row("simd_peak_fma", "TOPS", t.detail["vector_flops"] / (t.time_us * 1e-6) / 1e12, pub.get("simd_tops"),
        "timing")

    # off-chip stream: every PE reads its own 512 KB once (all first reads)
    tile, per = 16384, 8  # 64 KB f32 tiles
    src = torch.zeros(P * tile * per, dtype=torch.float32)
    t = run(stream_program(tile, per, tile * per), (P, 1, 1), [src], chip)
    row("offchip_stream_read", "GB/s", t.bytes["lpddr_read"] / (t.time_us * 1e-6) / 1e9, pub.get("offchip_gbps"),
        "functional", f"{chip['offchip']['kind']}; {P} PEs, distinct data")

    # on-chip SRAM: every PE re-reads the same 256 KB (first read off-chip, the rest hits SRAM)
    tile, per = 16384, 64
    src = torch.zeros(tile * 4, dtype=torch.float32)
    prog = ProgramBuilder("sram_stream")
    s_ = prog.param_ptr("src", "f32")
    with prog.loop(0, per, 1) as i:
        prog.dma_load(s_, prog.mul(prog.scalar("srem", i, 4), tile), [tile], [1], copies=2)
    t = run(prog.build(), (P, 1, 1), [src], chip)
    row("sram_read", "GB/s", (t.bytes["sram_read"] + t.bytes["lpddr_read"]) / (t.time_us * 1e-6) / 1e9,
        pub.get("sram_gbps"), "functional", f"{P} PEs re-reading 256 KB")

    # local memory: one PE, 256 KB DMAs of SRAM-resident data (the PE's port is the limit)
    tile, per = 65536, 1024
    src = torch.zeros(tile, dtype=torch.float32)
    prog = ProgramBuilder("local_stream")
    s_ = prog.param_ptr("src", "f32")
    with prog.loop(0, per, 1):
        prog.dma_load(s_, 0, [tile], [1])
    t = run(prog.build(), (1, 1, 1), [src], chip, resident=True)
    row("local_memory_fill", "GB/s", t.bytes["local"] / (t.time_us * 1e-6) / 1e9, pub.get("local_gbps"),
        "functional", "1 PE, DMA into local memory from SRAM")

    # launch latency: an empty kernel
    t = run(empty_program(), (1, 1, 1), [], chip)
    row("launch_latency", "us", t.time_us, pub.get("launch_us"), "functional", "empty kernel")

    # expert GEMM 2048^3 BF16, under both output policies (the published figure names neither)
    for writeback, policy in ((False, "C kept in SRAM (the study's cold regime)"),
                              (True, "C written back to LPDDR on the critical path (writeback regime)")):
        g = gemm_fraction(chip_name, 2048, mode="timing", writeback=writeback)
        row("gemm_2048_bf16_frac_of_peak" + ("_writeback" if writeback else ""), "fraction", g["frac_of_peak"],
            pub.get("gemm_2048_frac"), "timing",
            f"{policy}; {g['tflops']:.1f} TFLOPS, {g['cycles']} cycles, "
            f"tiles {g['tiles']['BM']}x{g['tiles']['BN']}x{g['tiles']['BK']}", check=INDEPENDENT)
    return rows


def gemm_fraction(chip_name: str, size: int, mode: str = "timing", check: bool = False,
                  writeback: bool = False) -> dict:
    chip = load_chip(chip_name)
    P = n_pes(chip)
    M = N = K = size
    prog, cfg = gemm_for_chip(M, N, K, chip_name)
    a, bb = torch.randn(M, K).bfloat16(), torch.randn(K, N).bfloat16()
    c = torch.zeros(M, N)
    traces = execute(prog, gemm_grid(M, N, cfg["BM"], cfg["BN"], workers=cfg["workers"]), [a, bb, c], mode=mode)
    t = price_launch(prog, traces, chip, writeback=writeback)
    if check:
        torch.testing.assert_close(c, a.float() @ bb.float(), atol=2e-2, rtol=2e-2)
    peak = chip["dpe"]["flops_per_cycle"]["bf16"] * P * chip["clock_ghz"] * 1e9
    flops = 2 * M * N * K
    tflops = flops / (t.time_us * 1e-6) / 1e12
    return {"cycles": t.cycles, "time_us": t.time_us, "tflops": tflops, "frac_of_peak": tflops * 1e12 / peak,
            "timing": t, "events": sum(len(x.events) for x in traces), "tiles": cfg}


# ----------------------------------------------------------------------------- CLI

def format_table(rows: list[dict]) -> str:
    head = f"{'metric':<30} {'unit':<9} {'measured':>10} {'published':>10} {'ratio':>7}  mode"
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: r["check"] != SELF_CHECK):
        pub = f"{r['published']:.4g}" if r["published"] is not None else "-"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        lines.append(f"{r['metric']:<30} {r['unit']:<9} {r['measured']:>10.4g} {pub:>10} {ratio:>7}  {r['mode']}"
                     + (f"  ({r['note']})" if r["note"] else ""))
    return "\n".join(lines)


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["metric", "unit", "measured", "published", "ratio", "source", "chip",
                                          "check", "note"])
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{r[k]:.6g}" if isinstance(r[k], float) else ("" if r[k] is None else r[k]))
                        for k in w.fieldnames})
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="mtia2i")
    ap.add_argument("--json", action="store_true", help="print JSON rows instead of the table")
    ap.add_argument("--csv", default=None, help="raw result path (default results/raw/microbench_<chip>.csv)")
    ap.add_argument("--no-csv", action="store_true")
    a = ap.parse_args(argv)
    rows = measure(a.chip)
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        print(f"microbenchmarks, chip {a.chip}")
        print(format_table(rows))
    if not a.no_csv:
        write_csv(rows, Path(a.csv or f"results/raw/microbench_{a.chip}.csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
