"""Compile-time and launch-overhead figures of the MTIA backend over the test corpus.

`python -m tools.bench_compile` (make bench-compile). For every corpus kernel: the cold compile
time (fresh TRITON_CACHE_DIR and an empty in-process kernel cache; first launch minus a cached
launch of the same inputs), then the host overhead of a cached launch of a tiny kernel (wall time
per launch, and that minus the simulator's own time). Prints a table and the medians against the
targets. It prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

TARGET_COLD_COMPILE_S = 1.0
TARGET_LAUNCH_OVERHEAD_MS = 1.0

_CORPUS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "backend")


def _load_corpus():
    sys.path.insert(0, _CORPUS_DIR)
    import corpus
    return corpus


def _clear_kernel_cache(kernel) -> None:
    for attr in ("device_caches", "cache"):
        c = getattr(kernel, attr, None)
        if hasattr(c, "clear"):
            c.clear()


def cold_compile(corpus, case) -> tuple[float, float]:
    """(cold first launch - cached launch, cached launch) in seconds, in a fresh cache dir."""
    import triton
    with tempfile.TemporaryDirectory(prefix="mtia-bench-cache-") as d:
        old = triton.knobs.cache.dir
        triton.knobs.cache.dir = d
        try:
            _clear_kernel_cache(case.kernel)
            args = case.make(corpus.gen(0))
            grid = case.grid_of(args)
            t0 = time.perf_counter()
            case.kernel[grid](**args, **case.kwargs)
            first = time.perf_counter() - t0
            args = case.make(corpus.gen(0))
            t0 = time.perf_counter()
            case.kernel[grid](**args, **case.kwargs)
            cached = time.perf_counter() - t0
        finally:
            triton.knobs.cache.dir = old
            _clear_kernel_cache(case.kernel)
    return max(first - cached, 0.0), cached


def launch_overhead(corpus, reps: int) -> tuple[float, float]:
    """Median wall ms per cached launch of a tiny kernel, and that minus the simulator's time."""
    import torch
    from backend.driver import record_launches
    x, y, out = torch.randn(16), torch.randn(16), torch.zeros(16)
    kernel = corpus.add_kernel
    kernel[(1,)](x, y, out, 16, BLOCK=16)
    walls, host = [], []
    with record_launches() as recs:
        for _ in range(reps):
            t0 = time.perf_counter()
            kernel[(1,)](x, y, out, 16, BLOCK=16)
            w = time.perf_counter() - t0
            walls.append(w * 1e3)
            host.append((w - recs[-1].sim_wall_s) * 1e3)
    return statistics.median(walls), statistics.median(host)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only corpus cases whose name contains this")
    ap.add_argument("--reps", type=int, default=300, help="launches timed for the overhead figure")
    opts = ap.parse_args(argv)
    corpus = _load_corpus()
    cases = [c for c in corpus.CASES if opts.k in c.name]
    rows = []
    print(f"{'case':34s} {'kernel':26s} {'cold compile ms':>16s} {'cached launch ms':>17s}")
    for c in cases:
        try:
            comp, cached = cold_compile(corpus, c)
        except Exception as e:  # a failing case is reported, not fatal: this is a benchmark
            print(f"{c.name:34s} {c.kernel.__name__:26s} {'error: ' + type(e).__name__:>16s}")
            continue
        rows.append((c.name, comp, cached))
        print(f"{c.name:34s} {c.kernel.__name__:26s} {comp * 1e3:16.1f} {cached * 1e3:17.2f}")
    wall_ms, host_ms = launch_overhead(corpus, opts.reps)
    comps = [r[1] for r in rows]
    med = statistics.median(comps) if comps else float("nan")
    print()
    print(f"kernels compiled: {len(rows)} of {len(cases)}; cold compile median {med * 1e3:.1f} ms, "
          f"p90 {sorted(comps)[int(0.9 * (len(comps) - 1))] * 1e3 if comps else float('nan'):.1f} ms, "
          f"max {max(comps) * 1e3 if comps else float('nan'):.1f} ms")
    ok_c = med < TARGET_COLD_COMPILE_S
    ok_l = host_ms < TARGET_LAUNCH_OVERHEAD_MS
    print(f"median cold compile       {med * 1e3:8.1f} ms   target < {TARGET_COLD_COMPILE_S * 1e3:.0f} ms   "
          f"{'OK' if ok_c else 'MISSED'}")
    print(f"cached launch (tiny)      {wall_ms:8.3f} ms   wall per launch, simulator included")
    print(f"cached launch overhead    {host_ms:8.3f} ms   target < {TARGET_LAUNCH_OVERHEAD_MS:.0f} ms   "
          f"{'OK' if ok_l else 'MISSED'}  (wall minus simulator time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
