"""Memory regimes (backend/regimes.py) and the [assumptions] switches of the chip configs."""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from backend import driver
from backend.configs import available_chips, load_chip, parse_overrides, variant_name
from backend.sim.cost import ChipModel


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def _row_bias(x_ptr, b_ptr, out_ptr, N: tl.constexpr):
    # the bias tile is the same in every program: the compiler marks its load pe_resident
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(b_ptr + tl.arange(0, N)))


@pytest.fixture
def device():
    old_chip, old_regime = driver.DEVICE.chip, driver.DEVICE.regime
    yield driver
    driver.set_chip(old_chip)
    driver.set_regime(old_regime)


def _cycles(fn) -> int:
    with driver.record_launches() as got:
        fn()
    return sum(r.cycles for r in got)


def _add_cycles(n: int, regime: str) -> int:
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    driver.set_regime(regime)
    return _cycles(lambda: _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024))


def test_a_small_kernel_is_faster_with_its_inputs_resident(device):
    cold, resident = _add_cycles(1 << 16, "cold"), _add_cycles(1 << 16, "resident")
    assert resident < cold


def test_writeback_is_slower_when_the_output_is_large(device):
    n = 1 << 20  # 4 MB of output: its write-back is a third of the off-chip traffic
    cold, wb = _add_cycles(n, "cold"), _add_cycles(n, "writeback")
    assert wb > 1.2 * cold


def test_the_expert_launch_is_priced_in_the_same_regime(device):
    from baselines.expert import elementwise
    x, y = torch.randn(1 << 16), torch.randn(1 << 16)
    got = {}
    for r in ("cold", "resident", "writeback"):
        driver.set_regime(r)
        got[r] = _cycles(lambda: elementwise.add(x, y))
    assert got["resident"] < got["cold"] <= got["writeback"]


def test_unknown_regime_is_a_clear_error(device):
    with pytest.raises(ValueError, match="unknown memory regime"):
        driver.set_regime("lukewarm")


@pytest.mark.parametrize("name", available_chips())
def test_every_config_states_its_assumptions(name):
    a = load_chip(name)["assumptions"]
    assert set(a) >= {"dispatch", "held_tiles", "resident_issue_streams", "program_overlap", "llc_output_rule",
                      "llc_reuse"}
    m = ChipModel(load_chip(name))
    # the defaults: held tiles are charged (no instruction keeps a tile between programs), the
    # other switches keep the model's long-standing behaviour
    assert (m.dispatch, m.held_tiles, m.issue_streams, m.program_overlap, m.always_writeback, m.llc_reuse) == \
        ("dynamic", False, True, True, False, "capacity")


def test_chip_overrides_resolve_and_are_checked():
    name = variant_name("mtia2i", {"dma.latency_cycles": 400, "assumptions.held_tiles": "charged"})
    assert parse_overrides(name) == ("mtia2i", {"assumptions.held_tiles": "charged", "dma.latency_cycles": 400})
    c = load_chip(name)
    assert c["name"] == name and c["dma"]["latency_cycles"] == 400 and c["assumptions"]["held_tiles"] == "charged"
    assert load_chip("mtia2i")["dma"]["latency_cycles"] == 200  # the base config is untouched
    assert load_chip("mtia2i@command_processor.issue_cycles=0.5")["command_processor"]["issue_cycles"] == 0.5
    with pytest.raises(ValueError, match="no key"):
        load_chip("mtia2i@dma.latency=400")
    with pytest.raises(ValueError, match="is bool"):
        load_chip("mtia2i@assumptions.program_overlap=maybe")
    with pytest.raises(ValueError, match="must be one of"):
        ChipModel(load_chip("mtia2i@assumptions.held_tiles=sometimes"))


def test_charged_tiles_cost_more_than_held_ones(device):
    n, rows = 512, 256
    x, b, out = torch.randn(rows * n), torch.randn(n), torch.empty(rows * n)
    got = {}
    for v in ("held", "charged"):
        driver.set_chip(f"mtia2i@assumptions.held_tiles={v}")
        got[v] = _cycles(lambda: _row_bias[(rows,)](x, b, out, N=n))
    torch.testing.assert_close(out, x + b.repeat(rows))
    assert got["charged"] > got["held"]


def test_always_writeback_rule_equals_the_writeback_regime(device):
    driver.set_chip("mtia2i@assumptions.llc_output_rule=writeback")
    by_rule = _add_cycles(1 << 18, "cold")
    driver.set_chip("mtia2i")
    assert by_rule == _add_cycles(1 << 18, "writeback") > _add_cycles(1 << 18, "cold")


def test_llc_reuse_brackets_a_gemm_whose_footprint_spills_the_llc(device):
    """A GEMM re-reads its A and B tiles; with an LLC smaller than its footprint, "capacity"
    sends a share of the re-reads off-chip, "ideal" none (its outputs still spill)."""
    from baselines.expert import gemm
    a, b = torch.randn(512, 512).bfloat16(), torch.randn(512, 512).bfloat16()
    got = {}
    for name, chip in (("fits", "mtia2i"), ("capacity", "mtia2i@sram.llc_bytes=1048576"),
                       ("ideal", "mtia2i@sram.llc_bytes=1048576@assumptions.llc_reuse=ideal")):
        driver.set_chip(chip)
        with driver.record_launches() as recs:
            out = gemm.matmul(a, b)
        got[name] = sum(r.cycles for r in recs)
        torch.testing.assert_close(out.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-1)
        if name != "fits":
            assert recs[0].timing.detail["footprint_bytes"] > 1048576
    assert got["capacity"] > got["ideal"] >= got["fits"]
    with pytest.raises(ValueError, match="llc_reuse must be one of"):
        ChipModel(load_chip("mtia2i@assumptions.llc_reuse=lru"))


def test_repricing_equals_running_on_the_variant(device):
    """The sensitivity suite prices timing-only variants from the base chip's executed events
    (Suite.reprice): that must give exactly the cycles of a launch on the variant."""
    from backend.configs import pricing_only
    from baselines.expert import elementwise
    from study.suites import sensitivity_chips
    n, rows = 256, 128
    x, b, out = torch.randn(rows * n), torch.randn(n), torch.empty(rows * n)
    y = torch.randn(rows * n)
    calls = [lambda: _row_bias[(rows,)](x, b, out, N=n), lambda: elementwise.add(x, y)]
    variants = [c for c in sensitivity_chips() if pricing_only(c) and "@" in c]
    assert len(variants) >= 10
    for regime in ("cold", "writeback"):
        driver.set_regime(regime)
        driver.set_chip("mtia2i")
        with driver.record_launches() as recs, driver.keep_traces():
            for f in calls:
                f()
        for v in variants:
            driver.set_chip(v)
            with driver.record_launches() as direct:
                for f in calls:
                    f()
            assert [driver.reprice(r, v).cycles for r in recs] == [r.cycles for r in direct], v


# ------------------------------------------------------------------ the LLC across the launches of one call

def _two_pass(n: int, x, y, tmp, out) -> list:
    """tmp = x + y; out = tmp + x: the second launch reads what the first wrote and read."""
    with driver.record_launches() as got:
        _add[(triton.cdiv(n, 1024),)](x, y, tmp, n, BLOCK=1024)
        _add[(triton.cdiv(n, 1024),)](tmp, x, out, n, BLOCK=1024)
    return got


def test_a_later_launch_of_one_call_reads_what_the_earlier_touched_from_the_sram(device):
    n = 1 << 18
    x, y, tmp, out = torch.randn(n), torch.randn(n), torch.empty(n), torch.empty(n)
    alone = _two_pass(n, x, y, tmp, out)
    with driver.shared_llc():
        shared = _two_pass(n, x, y, tmp, out)
    assert [r.carried for r in alone] == [(), ()]
    assert shared[0].carried == () and set(shared[1].carried) == {"x_ptr", "y_ptr"}  # tmp and x
    assert shared[0].cycles == alone[0].cycles and shared[1].cycles < 0.8 * alone[1].cycles
    torch.testing.assert_close(out, 2 * x + y)
    # the second launch alone in the resident regime reads the same: its inputs are in the SRAM
    driver.set_regime("resident")
    assert _cycles(lambda: _add[(triton.cdiv(n, 1024),)](tmp, x, out, n, BLOCK=1024)) == shared[1].cycles
    driver.set_regime("cold")
    # repricing keeps what the launch found carried; the assumption's "cold" prices it as alone
    with driver.keep_traces(), driver.shared_llc():
        kept = _two_pass(n, x, y, tmp, out)
    assert driver.reprice(kept[1], "mtia2i").cycles == shared[1].cycles
    assert driver.reprice(kept[1], "mtia2i@assumptions.llc_across_launches=cold").cycles == alone[1].cycles
    driver.set_chip("mtia2i@assumptions.llc_across_launches=cold")
    with driver.shared_llc():
        off = _two_pass(n, x, y, tmp, out)
    assert [r.cycles for r in off] == [r.cycles for r in alone]


def test_the_shared_llc_holds_the_most_recent_storages_up_to_its_capacity(device):
    cap = int(load_chip("mtia2i")["sram"].get("llc_bytes", load_chip("mtia2i")["sram"]["bytes"]))
    n = 1 << 16
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    big = torch.empty(cap // 4 + 1024)  # a storage larger than the LLC evicts everything before it
    with driver.shared_llc():
        _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        assert set(driver.DEVICE.llc) == {t.untyped_storage().data_ptr() for t in (x, y, out)}
        _add[(1,)](big, big, big, 1, BLOCK=1024)
        assert driver.DEVICE.llc == {}
        with driver.record_launches() as got:
            _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    assert got[0].carried == ()
    assert driver.DEVICE.llc is None  # outside the block nothing is shared


def test_a_benchmark_inside_a_call_neither_sees_nor_changes_its_llc(device):
    n = 1 << 16
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    launch = lambda: _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)  # noqa: E731
    alone_ms = driver.simulated_bench(launch)
    with driver.shared_llc():
        launch()
        state = dict(driver.DEVICE.llc)
        assert driver.simulated_bench(launch) == alone_ms
        assert driver.DEVICE.llc == state
