"""Every expert implementation against the torch reference on the workloads' "test" shapes
(docs/study.md tolerances through study.measure.compare)."""
from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (circular import otherwise)

from backend.driver import record_launches
from study.measure import compare
from study.registry import load_all

WORKLOADS = load_all()
CASES = [(w.name, s.name, dt) for w in WORKLOADS.values() if "expert" in w.impls
         for s in w.shapes_tagged("test") for dt in w.dtypes]


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=["/".join(c) for c in CASES])
def test_expert_matches_torch(name, shape, dtype):
    w = WORKLOADS[name]
    s = next(x for x in w.shapes if x.name == shape)
    inputs = w.make(s, dtype)
    ref = w.impls["torch"](**{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
    with record_launches() as recs:
        out = w.impls["expert"](**inputs)
    assert recs, "the expert implementation must launch through backend.driver.launch"
    c = compare(out, ref, dtype)
    assert c.correct, f"{name}/{shape}/{dtype}: {c.why} (max abs {c.max_abs_err}, max rel {c.max_rel_err})"


@pytest.mark.parametrize("shape", [(1, 64, 96, 160), (3, 27, 27, 40)])
def test_the_nt_gemm_reads_b_transposed_and_matches_torch(shape):
    from baselines.expert.gemm import matmul_nt
    bs, M, N, K = shape
    g = torch.Generator().manual_seed(0)
    a = torch.randn(bs, M, K, generator=g).to(torch.bfloat16)
    bt = torch.randn(bs, N, K, generator=g).to(torch.bfloat16)
    got = matmul_nt(a if bs > 1 else a[0], bt if bs > 1 else bt[0])
    want = (a.float() @ bt.float().transpose(-1, -2)).to(torch.bfloat16)
    torch.testing.assert_close(got, want if bs > 1 else want[0], rtol=2e-2, atol=2e-2)


def test_gemm_padding_tiles_read_and_write_nothing():
    """4 x 7 = 28 output tiles of 32 x 64 on 64 PEs: 36 programs walk a padding tile (past the
    last batch), which must neither read B nor write C out of bounds."""
    from baselines.expert.common import launch
    from baselines.expert.gemm import gemm_program
    g = torch.Generator().manual_seed(0)
    a = torch.randn(1, 128, 64, generator=g).to(torch.bfloat16)
    b = torch.randn(1, 64, 448, generator=g).to(torch.bfloat16)
    prog = gemm_program(1, 128, 448, 64, "bf16", "bf16", None, BM=32, BN=64)
    c = torch.zeros(1, 128, 448, dtype=torch.bfloat16)
    launch(prog, prog.meta["grid"], [a, b, c])
    torch.testing.assert_close(c.float(), (a.float() @ b.float()).to(torch.bfloat16).float(), rtol=2e-2, atol=2e-2)


def test_gemm_tile_is_the_fastest_of_those_timed():
    """The expert GEMM times its best-estimated tiles on the chip and keeps the fastest: the
    program's own cycles (any regime) are the minimum geomean of those it timed."""
    from baselines.expert.gemm import gemm_program
    prog = gemm_program(1, 512, 1024, 512, "bf16", "bf16")
    tuned = prog.meta["tuned"]
    label = "x".join(str(x) for x in prog.meta["tile"])
    assert len(tuned) > 1 and tuned[label] == min(tuned.values())
