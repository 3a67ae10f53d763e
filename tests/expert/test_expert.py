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
