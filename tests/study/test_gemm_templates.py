"""Inductor's Triton GEMM templates on the chip (switch `triton_gemm_templates`,
backend/inductor_cpu/gemm_templates.py): they compile through the backend, run on the
simulated chip and match eager; with `extern_gemm` the expert is one more candidate."""
from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

from backend.inductor_cpu import gemm_templates, options


pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def test_candidate_tiles_fit_local_memory_and_cover_the_pes() -> None:
    local, pes = 384 * 1024, 64
    for batch, m, n, k, size in ((1, 256, 256, 256, 4), (1, 1024, 1024, 512, 2), (8, 256, 256, 256, 2),
                                 (1, 4096, 4096, 4096, 4), (1, 5, 7, 3, 4), (1, 100, 300, 50, 2)):
        cfgs = gemm_templates.chip_configs(batch, m, n, k, size, pes=pes, local_bytes=local)
        assert 0 < len(cfgs) <= gemm_templates.MAX_CONFIGS
        assert all(gemm_templates.tile_bytes(bm, bn, bk, size, size) <= local for bm, bn, bk in cfgs)
        programs = max(batch * -(-m // bm) * -(-n // bn) for bm, bn, _ in cfgs)
        assert programs >= min(pes, batch * -(-m // 16) * -(-n // 16))


def _run(fn, *args, rtol: float, atol: float):
    from backend.driver import record_launches
    c = torch.compile(fn, dynamic=False)
    c(*args)  # compile and autotune
    with record_launches() as recs:
        out = c(*args)
    torch.testing.assert_close(out.float(), fn(*(a.float() for a in args)), rtol=rtol, atol=atol)
    return [r.name for r in recs]


CASES = {
    "mm": (torch.mm, lambda dt: (torch.randn(64, 96, dtype=dt), torch.randn(96, 80, dtype=dt))),
    "mm_ragged": (torch.mm, lambda dt: (torch.randn(50, 33, dtype=dt), torch.randn(33, 70, dtype=dt))),
    "mm_weight_t": (lambda a, w: a @ w.t(), lambda dt: (torch.randn(64, 96, dtype=dt), torch.randn(48, 96, dtype=dt))),
    "addmm": (torch.addmm, lambda dt: (torch.randn(80, dtype=dt), torch.randn(64, 96, dtype=dt),
                                        torch.randn(96, 80, dtype=dt))),
    "bmm": (torch.bmm, lambda dt: (torch.randn(3, 32, 48, dtype=dt), torch.randn(3, 48, 40, dtype=dt))),
    "baddbmm": (torch.baddbmm, lambda dt: (torch.randn(3, 32, 40, dtype=dt), torch.randn(3, 32, 48, dtype=dt),
                                           torch.randn(3, 48, 40, dtype=dt))),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_template_runs_on_the_chip_and_matches_eager(case: str, dtype: torch.dtype) -> None:
    options.activate(extern_gemm=False, triton_gemm_templates=True)
    fn, make = CASES[case]
    torch.manual_seed(0)
    tol = (1e-4, 1e-4) if dtype == torch.float32 else (2e-2, 5e-2)
    names = _run(fn, *make(dtype), rtol=tol[0], atol=tol[1])
    assert any(n.startswith("triton_tem_") for n in names), names


def test_autotuning_weighs_the_expert_against_the_templates() -> None:
    # both on: each candidate is timed on the simulated chip and the faster runs (an FP32 dot
    # on the SIMD engine beats the expert's DPE at 128^3); the expert was a candidate
    from torch._inductor import select_algorithm
    options.activate(extern_gemm=True, triton_gemm_templates=True)
    seen: list[dict[str, float]] = []
    select_algorithm.add_feedback_saver(lambda timings, *a: seen.append({c.name: t for c, t in timings.items()}))
    try:
        names = _run(torch.mm, torch.randn(128, 128), torch.randn(128, 128), rtol=1e-4, atol=1e-4)
    finally:
        select_algorithm.clear_feedback_savers()
    assert names and names[0].startswith("triton_tem_"), names
    (timings,) = seen
    assert "mtia_expert_gemm" in timings and len(timings) > 1
    assert min(timings, key=timings.get) != "mtia_expert_gemm" and all(t > 0 for t in timings.values())


def test_templates_off_leave_the_gemm_to_the_expert() -> None:
    options.activate(extern_gemm=True, triton_gemm_templates=False)
    names = _run(torch.mm, torch.randn(128, 128), torch.randn(128, 128), rtol=1e-4, atol=1e-4)
    assert names and all(n.startswith("expert_gemm") for n in names), names
