"""Multi-buffered DMA overlaps compute; single-buffered does not (the WAR rule on `copies`)."""
from __future__ import annotations

import pytest
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
