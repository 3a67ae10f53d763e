"""Golden cycle counts of small builder programs: determinism, and any model change shows up.

If a deliberate model or config change moves these, regenerate them with
    PYTHONPATH=.:tests/sim python -c "from test_golden import regenerate; regenerate()"
and say why in the commit.
"""
from __future__ import annotations

import pytest
from golden_programs import cases
from sim_programs import price

GOLDEN = {
    "mm_loop_single": 11598,
    "mm_loop_double": 10302,
    "gemm_512x512x256": 18960,
    "softmax_64x256": 3280,  # views (unit-dim reshapes, broadcasts) cost nothing
    "elementwise_4": 2029,
    "scalar_path": 4660,
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_cycles_both_modes(name):
    prog, grid, args = cases()[name]
    functional = price(prog, grid, args)
    assert functional.cycles == GOLDEN[name]
    prog, grid, args = cases()[name]
    timing_only = price(prog, grid, args, mode="timing")
    assert timing_only.cycles == functional.cycles
    assert timing_only.engine_busy == functional.engine_busy
    assert timing_only.bytes == functional.bytes


def test_pricing_is_deterministic():
    prog, grid, args = cases()["gemm_512x512x256"]
    from backend.configs import load_chip
    from backend.sim.executor import execute
    from backend.sim.timing import price_launch
    traces = execute(prog, grid, args)
    a = price_launch(prog, traces, load_chip("mtia2i"))
    b = price_launch(prog, traces, load_chip("mtia2i"), trace=True)
    assert (a.cycles, a.engine_busy, a.bytes, a.flops) == (b.cycles, b.engine_busy, b.bytes, b.flops)


def test_double_buffered_golden_is_faster():
    assert GOLDEN["mm_loop_double"] < GOLDEN["mm_loop_single"]


def regenerate() -> None:
    for name in sorted(GOLDEN):
        prog, grid, args = cases()[name]
        print(f"    {name!r}: {price(prog, grid, args).cycles},")
