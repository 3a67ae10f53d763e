"""Timing mode's fast paths give the per-program executor's cycles, bit for bit.

Lockstep (backend/sim/lockstep.py) runs the programs of a launch together; the timing model
then schedules the programs of one lockstep group once per PE state (timing.price_launch).
Each kernel here is launched in timing mode program by program with every program scheduled
(MTIA_SIM_LOCKSTEP=0, MTIA_SIM_PRICE_MEMO=0), in the functional mode with and without the
memo that schedules programs of equal signature once, and in timing mode with lockstep:
cycles, engine busy cycles, bytes and the memory detail must agree. The kernels cover what makes lanes disagree: edge tiles (box
bounds), masks, causal loops (trip counts), persistent programs with padding tiles, and a
data-dependent kernel that lockstep must hand back to the per-program executor.
"""
from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest
import torch

import backend.driver as drv
from backend.sim import lockstep
from backend.sim.timing import _replay, _signatures


@contextlib.contextmanager
def _mode(mode: str, lockstep_on: bool | str, monkeypatch, memo: bool = True):
    old = drv.DEVICE.mode
    drv.DEVICE.mode = mode
    # "debug": an instruction lockstep gives up on raises instead of falling back quietly
    monkeypatch.setenv("MTIA_SIM_LOCKSTEP", {True: "debug", False: "0"}.get(lockstep_on, lockstep_on))
    # memo=False: the timing model schedules every program (no schedule reused between programs)
    monkeypatch.setenv("MTIA_SIM_PRICE_MEMO", "1" if memo else "0")
    try:
        yield
    finally:
        drv.DEVICE.mode = old


def _gemm():
    from kernels.gemm import matmul
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 200, generator=g).bfloat16(), torch.randn(200, 250, generator=g).bfloat16()
    return lambda: matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)


def _expert_gemm():
    from baselines.expert.gemm import matmul
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(520, 200, generator=g).bfloat16(), torch.randn(200, 300, generator=g).bfloat16()
    return lambda: matmul(a, b)


def _layernorm():
    from kernels.normalisation import layernorm
    g = torch.Generator().manual_seed(0)
    x = torch.randn(100, 300, generator=g)
    w, b = torch.randn(300, generator=g), torch.randn(300, generator=g)
    return lambda: layernorm(x, w, b)


def _causal_attention():
    from kernels.attention import flash_attention
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 200, 64, generator=g).bfloat16() for _ in range(3))
    return lambda: flash_attention(q, k, v, causal=True)


def _add():
    from kernels.elementwise import add
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(1000, generator=g), torch.randn(1000, generator=g)
    return lambda: add(x, y, BLOCK=128)


def _embedding_bag():
    from kernels.recommendation import embedding_bag
    g = torch.Generator().manual_seed(0)
    table = torch.randn(500, 32, generator=g)
    lengths = torch.randint(0, 6, (40,), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    idx = torch.randint(0, 500, (int(lengths.sum()),), generator=g)
    return lambda: embedding_bag(table, torch.zeros(1, dtype=torch.long), idx, offsets, 1, "sum")


# (kernel, whether lockstep forms groups for it)
CASES = {"triton_gemm_edges": (_gemm, True), "expert_gemm_padding": (_expert_gemm, True),
         "layernorm_masked": (_layernorm, True), "flash_causal": (_causal_attention, True),
         "add_partial_block": (_add, True), "embedding_bag_data_dependent": (_embedding_bag, False)}


def _run(call, mode, lockstep_on, monkeypatch, memo=True):
    with _mode(mode, lockstep_on, monkeypatch, memo), drv.keep_traces(), drv.record_launches() as recs:
        call()
    return recs


def _summary(rec):
    t = rec.timing
    return (rec.name, rec.cycles, t.engine_busy, t.bytes, t.flops, t.detail["events"],
            t.detail["offchip_read_fraction"], t.detail["footprint_bytes"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_lockstep_cycles_equal_per_program_and_functional(name, monkeypatch):
    make, grouped = CASES[name]
    call = make()
    call()  # compile outside the comparison
    # the reference: every program executed and scheduled on its own
    alone = _run(call, "timing", False, monkeypatch, memo=False)
    functional = _run(call, "functional", False, monkeypatch, memo=False)
    # the functional mode's programs scheduled once per signature (timing.price_launch)
    functional_memo = _run(call, "functional", False, monkeypatch)
    together = _run(call, "timing", True if grouped else "1", monkeypatch)
    assert [_summary(r) for r in together] == [_summary(r) for r in alone] == [_summary(r) for r in functional] \
        == [_summary(r) for r in functional_memo]
    groups = {id(t.group) for r in together for t in r.traces if t.group is not None}
    assert bool(groups) == grouped
    # the functional mode's memo has something to reuse: programs that share a signature
    sigs = [s for r in functional_memo for s in _signatures(r.traces)]
    shared = [s for s in sigs if s is not None]
    assert shared and len(set(shared)) < len(shared)
    if not grouped:
        return
    # the memoised schedule equals scheduling every program (trace=True schedules each one)
    for r in together:
        again = drv.reprice(r, "mtia2i")
        drv.DEVICE.trace = True
        try:
            traced = drv.reprice(r, "mtia2i")
        finally:
            drv.DEVICE.trace = False
        assert (again.cycles, again.engine_busy, again.bytes) == (traced.cycles, traced.engine_busy, traced.bytes)


def test_lockstep_splits_lanes_that_disagree(monkeypatch):
    call = _causal_attention()
    call()
    recs = _run(call, "timing", True, monkeypatch)
    groups = {id(t.group): t.group for t in recs[0].traces if t.group is not None}
    # causal: each query block runs its own number of key blocks
    assert len(groups) > 1
    assert sum(g.n for g in groups.values()) == len(recs[0].traces)


def test_replay_adds_in_order():
    rng = random.Random(0)
    for n in (3, 17, 1000):
        terms = [rng.uniform(0, 1e4) * 10 ** rng.randint(-6, 6) for _ in range(n)]
        start = rng.uniform(0, 1e9)
        busy, acc = [start], {"x": 1.5}
        _replay(busy, acc, [np.array(terms) if n > 16 else terms], {"x": 2.25})
        ref = start
        for t in terms:
            ref += t
        assert busy[0] == ref and acc["x"] == 3.75


def test_vector_integer_semantics_match_the_isa():
    from backend.sim.isa import _py_binary
    rng = random.Random(1)
    vals = [0, 1, -1, 7, -7, 2**31 - 1, -2**31, 2**40 + 3, -(2**40) - 5, 2**63 - 1, -2**63] + \
        [rng.randint(-2**63, 2**63 - 1) for _ in range(30)] + [rng.randint(-1000, 1000) for _ in range(30)]
    for fn in ("add", "sub", "mul", "sdiv", "srem", "smin", "smax", "and", "or", "xor"):
        for dtype in ("i32", "i64", "i1"):
            a = np.array(vals, dtype=np.int64)
            b = np.array(list(reversed(vals)), dtype=np.int64)
            if fn in ("sdiv", "srem"):
                b = np.where(b == 0, 3, b)
            with np.errstate(all="ignore"):
                got = lockstep._wrap(lockstep._INT[fn](a, b), lockstep.INT_BITS[dtype])
            want = [int(_py_binary(fn, int(x), int(y), dtype)) for x, y in zip(a, b)]
            assert got.tolist() == want, (fn, dtype)


def test_a_memo_seldom_reused_stops_and_keeps_the_cycles(monkeypatch):
    # bags of many lengths under dynamic dispatch: PEs seldom meet the same state, so the memo
    # stops recording after its trial (made short here); the cycles are the memo-free ones
    from backend.sim import timing
    call = _embedding_bag()
    call()
    alone = _run(call, "functional", False, monkeypatch, memo=False)
    monkeypatch.setattr(timing, "MEMO_TRIAL", 4)
    stopped = _run(call, "functional", False, monkeypatch)
    assert [_summary(r) for r in stopped] == [_summary(r) for r in alone]
