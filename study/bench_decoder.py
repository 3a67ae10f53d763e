"""The simulator benchmark's decoder row (tools/bench_sim.py, `--workloads decoder`): T3's
decoder block at docs/study.md's shape through chip-aware Inductor, in timing mode, one call.

tools/ never import study/ (tests/test_layering.py), and this row needs study's model and
Inductor configuration, so the benchmark runs this file in a child interpreter:

    python -c "import runpy, sys; sys.argv = ['bench_decoder', OUT_JSON, SHAPE_JSON, THREADS]; \
runpy.run_path('study/bench_decoder.py', run_name='__main__')"

with `backend` and `study` from the tree being measured (PYTHONPATH; with `--baseline`, the
baseline revision's: this file's workload against that revision's simulator, as the rest of the
benchmark). It writes the rows (tools/bench_sim.py's columns) as JSON to OUT_JSON.
"""
from __future__ import annotations

import json
import sys
import time

import torch

DECODER_PAPER = dict(batch=16, seq=2048, hidden=4096, heads=32, ffn=11008)


def decoder_rows(shape: dict | None = None) -> list[dict]:
    """T3's decoder block (study.models.DecoderBlock) at docs/study.md's shape through
    chip-aware Inductor, in timing mode: one call, wall = compile + autotuning + simulation;
    events, execute (simulation) and cycles of the graph's own launches (Inductor's autotuning
    launches are made through its CPU benchmarker, wrapped here, and left out)."""

    from backend import driver
    from backend.inductor_cpu import benchmark, options
    from study.inductor import configure, unconfigure
    from study.models import DecoderBlock
    d = dict(DECODER_PAPER, **(shape or {}))
    b, s, h = d["batch"], d["seq"], d["hidden"]
    torch.manual_seed(0)
    model = DecoderBlock(h, d["heads"], d["ffn"]).to(torch.bfloat16).eval()
    x = torch.randn(b, s, h, generator=torch.Generator().manual_seed(1)).bfloat16()
    mask = torch.full((s, s), float("-inf")).triu(1).bfloat16()
    configure()
    options.activate(**options.DEFAULTS)
    torch._dynamo.reset()
    try:
        fn = torch.compile(model, backend="inductor", fullgraph=False, dynamic=False)
        with torch.no_grad(), driver.sim_mode("timing"), driver.record_launches() as recs, driver.shared_llc(), \
                benchmark.benchmarks_apart(recs):
            t0 = time.perf_counter()
            fn(x, mask)
            wall = time.perf_counter() - t0
    finally:
        unconfigure()
    events = int(sum(r.timing.detail.get("events", 0) for r in recs))
    name = f"decoder_b{b}_s{s}_h{h}_bf16"
    return [{"workload": name, "mode": "timing", "events": events,
             "execute_s": sum(r.sim_wall_s for r in recs), "price_s": float("nan"), "wall_s": wall,
             "events_per_s": events / wall, "price_us_per_event": float("nan"),
             "cycles": sum(r.cycles for r in recs)}]


def main(argv: list[str]) -> int:
    out, shape, threads = argv[0], json.loads(argv[1]) if len(argv) > 1 else None, int(argv[2]) if len(argv) > 2 else 0
    if threads:
        torch.set_num_threads(threads)
    import triton  # noqa: F401  (Triton's backend discovery before backend.driver)
    rows = decoder_rows(shape)
    with open(out, "w") as f:
        json.dump(rows, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
