"""Study F6: microbenchmarks of the real H200, the only source of backend/configs/h200.toml's numbers.

On the GPU machine (stock torch + triton, this project's backend not installed), repo root:

    PYTHONPATH=. python3 -m study.gpu_microbench --out $OUT/gpu_microbench_h200.csv [--git-sha SHA]

Rows (one CSV, columns below) for:
  hbm_read      a Triton streaming-read kernel over a 2 GiB fp32 buffer (bytes read / time)
  hbm_copy      torch copy_ of 1 GiB (bytes read + written / time)
  l2_read       the same read kernel looping over an L2-resident buffer (8 and 24 MiB), many passes
  gemm_bf16     torch.matmul (cuBLAS) bf16, square sizes 256..8192 (TFLOP/s)
  gemm_i8       torch._int_mm (cuBLASLt) int8, square sizes 256..8192 (TOP/s)
  tile_bf16     a plain Triton GEMM microkernel at 8192^3 by tile (BLOCK_M x BLOCK_N x BLOCK_K)
  launch        an empty Triton kernel: do_bench median (L2 flushed, as the study's rows are
                timed), back-to-back host launch rate, and CUDA-graph replay per kernel
  wave          a fixed-work Triton kernel, time vs number of blocks (wave quantisation over the
                SMs), and an empty kernel's time vs number of blocks (block-scheduling cost)
  clocks        nvidia-smi SM / memory clocks before and after
Timing is triton.testing.do_bench (median, L2 cleared before every call) unless the row's
method says otherwise (the L2 rows loop inside one launch; the host-rate row uses a host clock).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from study.results import Table, read_table, write_table

FIELDS = ("name", "param", "value", "unit", "method", "notes")
TABLE = Table("gpu_microbench_h200", FIELDS, key=("name", "param"))


def clocks() -> str:
    """SM / memory clocks as nvidia-smi reports them now ('' when it is not there)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,"
                              "temperature.gpu,power.draw", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
        sm, mem, smax, mmax, temp, pw = [v.strip() for v in out[0].split(",")]
        return f"sm_mhz={sm} mem_mhz={mem} max_sm_mhz={smax} max_mem_mhz={mmax} temp_c={temp} power_w={pw}"
    except Exception as e:  # noqa: BLE001 - no nvidia-smi: say so
        return f"nvidia-smi unavailable ({type(e).__name__})"


def run(out: Path, git_sha: str) -> list[dict]:
    import torch
    import triton
    import triton.language as tl
    import triton.testing as tt

    rows: list[dict] = []

    def add(name, param, value, unit, method="do_bench median, L2 cleared", notes=""):
        rows.append({"name": name, "param": param, "value": f"{value:.6g}", "unit": unit,
                     "method": method, "notes": notes})
        print(f"{name:10s} {param:28s} {value:12.4g} {unit}", flush=True)

    def bench_us(fn, warmup=25, rep=100):
        return tt.do_bench(fn, warmup=warmup, rep=rep, return_mode="median") * 1e3

    @triton.jit
    def read_kernel(x, out, nchunks, passes, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        g = tl.num_programs(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        offs = tl.arange(0, BLOCK)
        for _ in range(passes):
            for c in range(pid, nchunks, g):
                acc += tl.load(x + c * BLOCK + offs)
        tl.store(out + pid * BLOCK + offs, acc)

    @triton.jit
    def empty_kernel(out):
        if tl.program_id(0) < 0:
            tl.store(out, 0.0)

    @triton.jit
    def work_kernel(out, iters, BLOCK: tl.constexpr):
        # fixed arithmetic per block, no memory traffic: the time of one block on one SM
        x = tl.arange(0, BLOCK).to(tl.float32) * 1e-3
        for _ in range(iters):
            x = x * 0.999 + 0.001
        tl.store(out + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), x)

    @triton.jit
    def gemm_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        width = GROUP * npn
        gid = pid // width
        first = gid * GROUP
        gsz = tl.minimum(npm - first, GROUP)
        pm = first + (pid % width) % gsz
        pn = (pid % width) // gsz
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * K + rk[None, :]
        pb = b + rk[:, None] * N + rn[None, :]
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(pa), tl.load(pb))
            pa += BK
            pb += BK * N
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    @triton.jit
    def gemm_acc_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        INT: tl.constexpr):
        # int8 x int8 -> int32, or f32 x f32 (tl.dot's default precision, TF32) -> f32
        pid = tl.program_id(0)
        npn = tl.cdiv(N, BN)
        pm, pn = pid // npn, pid % npn
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * K + rk[None, :]
        pb = b + rk[:, None] * N + rn[None, :]
        acc = tl.zeros([BM, BN], dtype=tl.int32 if INT else tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(pa), tl.load(pb))
            pa += BK
            pb += BK * N
        tl.store(c + rm[:, None] * N + rn[None, :], acc)

    @triton.jit
    def chase_kernel(nxt, out, steps):
        # one thread's dependent loads: i = nxt[i], steps times (a random cycle over the buffer)
        i = tl.load(nxt)
        for _ in range(steps):
            i = tl.load(nxt + i)
        tl.store(out, i)

    @triton.jit
    def gemm_ieee_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        # f32 x f32 -> f32 with input_precision="ieee": fp32 FMAs, no tensor cores
        pid = tl.program_id(0)
        npn = tl.cdiv(N, BN)
        pm, pn = pid // npn, pid % npn
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * K + rk[None, :]
        pb = b + rk[:, None] * N + rn[None, :]
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(pa), tl.load(pb), input_precision="ieee")
            pa += BK
            pb += BK * N
        tl.store(c + rm[:, None] * N + rn[None, :], acc)

    nsm = torch.cuda.get_device_properties(0).multi_processor_count
    add("device", "sm_count", nsm, "SMs", method="torch.cuda.get_device_properties",
        notes=torch.cuda.get_device_name())
    c0 = clocks()
    add("clocks", "before", 0, "-", method="nvidia-smi", notes=c0)

    # HBM read and copy
    BLOCK = 4096
    n = 1 << 29  # 2 GiB fp32
    x = torch.rand(n, device="cuda")
    red = torch.empty(nsm * 8 * BLOCK, device="cuda")
    for g in (nsm * 4, nsm * 8):
        us = bench_us(lambda g=g, x=x, red=red: read_kernel[(g,)](x, red, n // BLOCK, 1, BLOCK=BLOCK, num_warps=8))
        add("hbm_read", f"2GiB_grid{g}", n * 4 / (us * 1e-6) / 1e9, "GB/s", notes=f"time_us={us:.2f}")
    y = torch.empty_like(x)
    us = bench_us(lambda x=x, y=y: y.copy_(x))
    add("hbm_copy", "2GiB", 2 * n * 4 / (us * 1e-6) / 1e9, "GB/s", notes=f"time_us={us:.2f}; bytes read + written")
    del x, y
    # L2: many passes over a resident buffer inside one launch (the flush before the call only
    # costs the first pass)
    for mib in (8, 24):
        nn = mib * (1 << 20) // 4
        xb = torch.rand(nn, device="cuda")
        passes = 50
        us = bench_us(lambda xb=xb, nn=nn, red=red, passes=passes: read_kernel[(nsm * 8,)](xb, red, nn // BLOCK, passes, BLOCK=BLOCK,
                                                                     num_warps=8))
        add("l2_read", f"{mib}MiB_x{passes}", passes * nn * 4 / (us * 1e-6) / 1e9, "GB/s",
            method="do_bench median; 50 passes over the buffer in one launch", notes=f"time_us={us:.2f}")
    del red
    torch.cuda.empty_cache()

    # tensor cores: cuBLAS bf16, cuBLASLt int8, by size
    for s in (256, 512, 1024, 2048, 4096, 8192):
        a = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
        us = bench_us(lambda a=a, b=b: a @ b)
        add("gemm_bf16", f"sq{s}", 2 * s ** 3 / (us * 1e-6) / 1e12, "TFLOP/s", notes=f"time_us={us:.2f}; torch.matmul")
        ai = torch.randint(-127, 128, (s, s), device="cuda", dtype=torch.int8)
        bi = torch.randint(-127, 128, (s, s), device="cuda", dtype=torch.int8)
        us = bench_us(lambda a=ai, b=bi: torch._int_mm(a, b))
        add("gemm_i8", f"sq{s}", 2 * s ** 3 / (us * 1e-6) / 1e12, "TOP/s", notes=f"time_us={us:.2f}; torch._int_mm")
    s = 8192
    a = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(s, s, device="cuda", dtype=torch.bfloat16)
    for bm, bn, bk, w, st in ((64, 64, 32, 4, 3), (128, 64, 64, 4, 3), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3)):
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        try:
            f = (lambda bm=bm, bn=bn, bk=bk, w=w, st=st, grid=grid, a=a, b=b, c=c: gemm_kernel[grid](a, b, c, s, s, s, BM=bm, BN=bn, BK=bk,
                                                                           GROUP=8, num_warps=w, num_stages=st))
            f()
            torch.cuda.synchronize()
            us = bench_us(f)
            add("tile_bf16", f"{bm}x{bn}x{bk}_w{w}_s{st}", 2 * s ** 3 / (us * 1e-6) / 1e12, "TFLOP/s",
                notes=f"time_us={us:.2f}; plain Triton tl.dot GEMM 8192^3")
        except Exception as e:  # noqa: BLE001 - a tile that does not fit: say so
            add("tile_bf16", f"{bm}x{bn}x{bk}_w{w}_s{st}", float("nan"), "TFLOP/s", notes=f"error {type(e).__name__}")
    del a, b, c
    s = 4096
    for dt, int_ in (("i8", True), ("f32", False)):
        if int_:
            a = torch.randint(-127, 128, (s, s), device="cuda", dtype=torch.int8)
            b = torch.randint(-127, 128, (s, s), device="cuda", dtype=torch.int8)
            c = torch.empty(s, s, device="cuda", dtype=torch.int32)
        else:
            a = torch.randn(s, s, device="cuda")
            b = torch.randn(s, s, device="cuda")
            c = torch.empty(s, s, device="cuda")
        tiles = ((64, 64, 64, 4, 3), (128, 128, 64, 8, 3), (128, 128, 128, 8, 3), (128, 256, 128, 8, 3)) if int_ else \
            ((64, 64, 32, 4, 3), (128, 128, 32, 8, 3), (128, 128, 64, 8, 2))
        for bm, bn, bk, w, st in tiles:
            grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
            try:
                f = (lambda bm=bm, bn=bn, bk=bk, w=w, st=st, grid=grid, a=a, b=b, c=c, int_=int_:
                     gemm_acc_kernel[grid](a, b, c, s, s, s, BM=bm, BN=bn, BK=bk, INT=int_, num_warps=w, num_stages=st))
                f()
                torch.cuda.synchronize()
                us = bench_us(f)
                add(f"tile_{dt}", f"{bm}x{bn}x{bk}_w{w}_s{st}", 2 * s ** 3 / (us * 1e-6) / 1e12,
                    "TOP/s" if int_ else "TFLOP/s", notes=f"time_us={us:.2f}; plain Triton tl.dot GEMM {s}^3")
            except Exception as e:  # noqa: BLE001 - a tile that does not fit: say so
                add(f"tile_{dt}", f"{bm}x{bn}x{bk}_w{w}_s{st}", float("nan"), "-", notes=f"error {type(e).__name__}")
        del a, b, c
    a = torch.randn(s, s, device="cuda")
    b = torch.randn(s, s, device="cuda")
    c = torch.empty(s, s, device="cuda")
    for bm, bn, bk, w in ((64, 64, 32, 4), (128, 128, 32, 8), (64, 128, 16, 4)):
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        try:
            f = (lambda bm=bm, bn=bn, bk=bk, w=w, grid=grid, a=a, b=b, c=c:
                 gemm_ieee_kernel[grid](a, b, c, s, s, s, BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=2))
            f()
            torch.cuda.synchronize()
            us = bench_us(f)
            add("tile_f32_ieee", f"{bm}x{bn}x{bk}_w{w}", 2 * s ** 3 / (us * 1e-6) / 1e12, "TFLOP/s",
                notes=f"time_us={us:.2f}; plain Triton tl.dot(input_precision='ieee') GEMM {s}^3")
        except Exception as e:  # noqa: BLE001
            add("tile_f32_ieee", f"{bm}x{bn}x{bk}_w{w}", float("nan"), "-", notes=f"error {type(e).__name__}")
    del a, b, c
    # load latency: one thread's dependent chain through a random cycle of 64-byte lines, L2
    # cleared before the call. HBM: 4096 steps over 1 GiB (every step a miss) minus 0 steps;
    # L2: a 1 MiB cycle walked 5 times minus once (the first pass misses, later ones hit)
    def chain(mib):
        nn = mib * (1 << 20) // 8
        nodes = torch.randperm(nn // 8, device="cuda") * 8
        nxt = torch.zeros(nn, dtype=torch.int64, device="cuda")
        nxt[nodes] = torch.roll(nodes, 1)
        return nxt, nn // 8

    o1 = torch.empty(1, dtype=torch.int64, device="cuda")
    for label, mib, s0, s1 in (("hbm", 1024, 0, 4096), ("l2", 1, None, None)):
        nxt, nodes = chain(mib)
        if s0 is None:
            s0, s1 = nodes, 5 * nodes
        t = [bench_us(lambda nxt=nxt, st=st: chase_kernel[(1,)](nxt, o1, st, num_warps=1), warmup=10, rep=50)
             for st in (s0, s1)]
        add("latency", f"{label}_{mib}MiB", (t[1] - t[0]) / (s1 - s0) * 1e3, "ns",
            notes=f"time_us={t[1]:.2f} for {s1} dependent loads, {t[0]:.2f} for {s0}")
        del nxt
    # per-SM HBM read: the read kernel with one block, and one block per SM
    n = 1 << 27  # 512 MiB
    x = torch.rand(n, device="cuda")
    red = torch.empty(nsm * BLOCK, device="cuda")
    for g in (1, nsm):
        us = bench_us(lambda g=g, x=x, red=red: read_kernel[(g,)](x, red, (n // BLOCK) if g > 1 else 4096, 1,
                                                                  BLOCK=BLOCK, num_warps=8), rep=50)
        nbytes = n * 4 if g > 1 else 4096 * BLOCK * 4
        add("hbm_read", f"grid{g}_per_block", nbytes / g / (us * 1e-6) / 1e9, "GB/s",
            notes=f"time_us={us:.2f}; bytes read per block / time: one block per SM" if g > 1 else
            f"time_us={us:.2f}; one block alone (64 MiB)")
    del x, red
    torch.cuda.empty_cache()

    # launch latency
    o = torch.empty(1 << 20, device="cuda")
    empty_kernel[(1,)](o)
    torch.cuda.synchronize()
    add("launch", "empty_do_bench", bench_us(lambda: empty_kernel[(1,)](o)), "us",
        notes="one empty Triton kernel, grid 1, timed as the study's rows are")
    import time
    for _ in range(200):
        empty_kernel[(1,)](o)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    k = 2000
    for _ in range(k):
        empty_kernel[(1,)](o)
    torch.cuda.synchronize()
    add("launch", "host_rate", (time.perf_counter() - t0) / k * 1e6, "us",
        method="host clock over 2000 back-to-back launches", notes="Triton launcher's host cost per launch")
    g = torch.cuda.CUDAGraph()
    s_ = torch.cuda.Stream()
    s_.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s_):
        empty_kernel[(1,)](o)
    torch.cuda.current_stream().wait_stream(s_)
    with torch.cuda.graph(g):
        for _ in range(100):
            empty_kernel[(1,)](o)
    g.replay()
    torch.cuda.synchronize()
    us = bench_us(lambda: g.replay())
    add("launch", "graph_per_kernel", us / 100, "us", method="do_bench median of a 100-kernel CUDA graph / 100",
        notes="GPU-side cost of one dependent empty kernel")

    # waves: fixed-work blocks; empty blocks
    iters = 20000
    for nb in (1, nsm // 2, nsm, nsm + 1, 2 * nsm, 2 * nsm + 1, 4 * nsm, 4 * nsm + 1, 8 * nsm, 8 * nsm + 1,
               16 * nsm, 32 * nsm):
        us = bench_us(lambda nb=nb: work_kernel[(nb,)](o, iters, BLOCK=128, num_warps=4), warmup=10, rep=50)
        add("wave", f"work_blocks{nb}", us, "us", notes=f"{iters} dependent fp32 FMAs per thread, 128 threads/block")
    for nb in (1, nsm, 16 * nsm, 128 * nsm, 1024 * nsm):
        us = bench_us(lambda nb=nb: empty_kernel[(nb,)](o, num_warps=4), warmup=10, rep=50)
        add("wave", f"empty_blocks{nb}", us, "us", notes="empty blocks, 128 threads")
    add("clocks", "after", 0, "-", method="nvidia-smi", notes=clocks())
    for r in rows:
        r["notes"] = (r["notes"] + f"; git_sha={git_sha}").lstrip("; ")
    write_table(out, TABLE, rows)  # one snapshot of the device: replaces the file, atomically
    print(f"{len(rows)} rows -> {out}")
    return rows


def read(path: Path) -> dict[tuple[str, str], dict]:
    """The microbench CSV as {(name, param): row}, value as float."""
    return {(r["name"], r["param"]): dict(r, value=float(r["value"])) for r in read_table(Path(path), TABLE)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.gpu_microbench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/raw/gpu_microbench_h200.csv")
    ap.add_argument("--git-sha", default="")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("no CUDA device: run this on the GPU machine", file=sys.stderr)
        return 2
    run(Path(args.out), args.git_sha)
    return 0


if __name__ == "__main__":
    sys.exit(main())
