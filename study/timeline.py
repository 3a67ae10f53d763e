"""F8's raw data: the engine timeline of one kernel, from the simulator's trace.

`python -m study.timeline` runs the plain Triton GEMM (the study's kernel, on a shape small
enough to trace every instruction) and writes results/raw/timeline_matmul.json, a Perfetto /
Chrome trace (load it in ui.perfetto.dev) that the F8 notebook plots.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import triton  # noqa: F401  (Triton's backend discovery first)
import torch

from backend.driver import trace_launches
from backend.sim.trace import to_perfetto
from study.results import RESULTS_DIR
from study.tolerances import tolerance


def trace_matmul(m: int = 512, n: int = 512, k: int = 1024) -> dict:
    from kernels.gemm import matmul
    gen = torch.Generator().manual_seed(0)
    a = torch.randn((m, k), generator=gen).to(torch.bfloat16)
    b = torch.randn((k, n), generator=gen).to(torch.bfloat16)
    matmul(a, b)  # compile outside the traced launch
    with trace_launches() as recs:
        c = matmul(a, b)
    tol = tolerance("bf16", use="smoke")
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=tol, atol=tol)
    rec = recs[-1]
    doc = to_perfetto(rec.timing)
    doc["otherData"].update(kernel=rec.name, shape=f"m{m}xn{n}xk{k}", dtype="bf16", grid=list(rec.grid),
                            engine_busy=rec.timing.engine_busy)
    return doc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "raw" / "timeline_matmul.json")
    args = ap.parse_args(argv)
    doc = trace_matmul()
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(args.out)  # atomic: a reader never sees half a trace
    print(f"wrote {args.out} ({len(doc['traceEvents'])} events, {doc['otherData']['cycles']} cycles)")


if __name__ == "__main__":
    main()
