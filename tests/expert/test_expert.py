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
