"""Multi-buffered DMA overlaps compute; single-buffered does not (the WAR rule on `copies`)."""
from __future__ import annotations

import pytest
import torch
from sim_programs import CHIP, mm_args, mm_loop, price


def _per_iteration(copies: int) -> float:
    # 64 PEs read SRAM-resident B tiles: each PE's share of the SRAM bandwidth sets the DMA time
    t4 = price(mm_loop(4, copies), (64, 1, 1), mm_args(4), resident=True, mode="timing")
    t12 = price(mm_loop(12, copies), (64, 1, 1), mm_args(12), resident=True, mode="timing")
    return (t12.detail["pe_cycles_max"] - t4.detail["pe_cycles_max"]) / 8


def test_double_buffering_hides_the_dma():
    ghz = CHIP["clock_ghz"]
    share = min(CHIP["sram"]["bandwidth_gbps"] / ghz / 64, CHIP["local_memory"]["bandwidth_gbps"] / ghz)
    dma = CHIP["dma"]["fixed_cycles"] + 128 * 128 * 2 / share          # one [128,128] bf16 tile
    dma_ready = dma + CHIP["dma"]["latency_cycles"]
    mm = CHIP["dpe"]["fixed_cycles"] + 2 * 128 ** 3 / CHIP["dpe"]["flops_per_cycle"]["bf16"]
    assert dma_ready < mm  # the case where double buffering can hide all of it
    single, double = _per_iteration(1), _per_iteration(2)
    # single: the DMA of step i waits for matmul i-1 to release the buffer, then the matmul waits for it
    assert single == pytest.approx(dma_ready + mm, rel=1e-9)
    # double: step i+1's DMA runs under matmul i; the DPE never waits
    assert double == pytest.approx(mm, rel=1e-9)
    assert single - double == pytest.approx(dma_ready, rel=1e-9)


def _two_loads(shared: bool):
    """x is DMA'd and read by a long SIMD pass; y is DMA'd next. With y placed in x's memory,
    y's transfer must wait for that read (WAR through memory, not through register names)."""
    from backend.sim.builder import ProgramBuilder
    b = ProgramBuilder(f"two_loads_{shared}")
    X, Y, O = b.param_ptr("x", "f32"), b.param_ptr("y", "f32"), b.param_ptr("o", "f32")
    x = b.dma_load(X, 0, [128, 128], [128, 1])
    sx = b.mul(x, 2.0)
    y = b.dma_load(Y, 0, [128, 128], [128, 1])
    b.dma_store(O, b.add(sx, y), 0, [128, 1])
    prog = b.build()
    if shared:
        prog.buffers[str(y)] = prog.buffers[str(x)]
    return prog


def test_a_write_into_reused_memory_waits_for_the_previous_occupants_readers():
    args = [torch.randn(128, 128), torch.randn(128, 128), torch.empty(128, 128)]
    apart = price(_two_loads(False), (1, 1, 1), args, trace=True)
    shared = price(_two_loads(True), (1, 1, 1), args, trace=True)
    loads = lambda t: [s for s in t.spans if s[1] == "DMA_IN"]  # noqa: E731
    mul = next(s for s in shared.spans if s[4] == "simd.binary")
    # apart: y's DMA follows x's at once; shared: it starts when the SIMD read of x is done
    assert loads(apart)[1][2] == loads(apart)[0][3]
    assert loads(shared)[1][2] == pytest.approx(mul[3])
    assert shared.cycles > apart.cycles


def _loop_bound_from_reduction():
    """n = sum(counts) on the reduction engine, then `for i in range(n)` loading a tile per
    trip: the control core needs n (the loop's trip test) before it can issue the first trip."""
    from backend.sim.builder import ProgramBuilder
    b = ProgramBuilder("bound_from_reduction")
    C, Y, O = b.param_ptr("counts", "i64"), b.param_ptr("y", "f32"), b.param_ptr("o", "f32")
    counts = b.dma_load(C, 0, [64], [1])
    n = b._new("n", "i64")
    b.emit("re.reduce", [n], {"srcs": [counts]}, {"axis": 0, "kind": "sum"})
    with b.loop(0, n, 1) as i:
        y = b.dma_load(Y, b.mul(i, 64), [64], [1])
        b.dma_store(O, y, b.mul(i, 64), [1])
    return b.build()


def test_a_loop_waits_for_its_bound():
    counts = torch.zeros(64, dtype=torch.int64)
    counts[:3] = 1
    args = [counts, torch.randn(3 * 64), torch.empty(3 * 64)]
    t = price(_loop_bound_from_reduction(), (1, 1, 1), args, trace=True)
    reduce_end = next(s[3] for s in t.spans if s[4] == "re.reduce")
    loads = [s for s in t.spans if s[1] == "DMA_IN"]
    assert len(loads) == 4  # the counts, then one tile per trip
    # the first trip's load is issued once the bound is known, not beside the counts' load
    assert loads[1][2] >= reduce_end
