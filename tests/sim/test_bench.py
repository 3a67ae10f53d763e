"""The simulator benchmark's decoder row (tools/bench_sim.py, study/bench_decoder.py) on a tiny decoder."""
from __future__ import annotations

import torch

from tools import bench_sim as bench

TINY = dict(batch=1, seq=32, hidden=64, heads=2, ffn=128)


def test_decoder_row_is_the_graph_launches_in_timing_mode():
    import backend.driver as drv
    from backend.inductor_cpu import options
    from study.inductor import configure, unconfigure
    from study.models import DecoderBlock
    (row,) = bench._decoder_rows(TINY)
    assert row["mode"] == "timing" and row["events"] > 0 and row["wall_s"] >= row["execute_s"] > 0
    # the same model, compiled again, its second call in the functional mode: the same cycles
    torch.manual_seed(0)
    model = DecoderBlock(64, 2, 128).to(torch.bfloat16).eval()
    x = torch.randn(1, 32, 64, generator=torch.Generator().manual_seed(1)).bfloat16()
    mask = torch.full((32, 32), float("-inf")).triu(1).bfloat16()
    configure()
    options.activate(**options.DEFAULTS)
    torch._dynamo.reset()
    try:
        fn = torch.compile(model, backend="inductor", fullgraph=False, dynamic=False)
        with torch.no_grad():
            fn(x, mask)
            with drv.record_launches() as recs, drv.shared_llc():
                fn(x, mask)
    finally:
        unconfigure()
    assert row["cycles"] == sum(r.cycles for r in recs)
