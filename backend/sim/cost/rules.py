"""The chip model and the cost rules: a chip config turned into per-cycle figures, and one rule
per instruction kind that turns cost inputs (inputs.py) into engine cycles.

The formulas are documented in the package docstring (backend/sim/cost/__init__.py).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from backend.program import ENGINES, ITEMSIZE
from backend.sim.cost.inputs import (ENGINE_INDEX, K_ATOMIC, K_DMA_IN, K_DMA_OUT, K_DPE, K_LOOP,
                                     K_MLU, K_RE, K_SCALAR, K_SCALAR_LOAD, K_SCALAR_STORE, K_SFU, K_SIMD, N_KINDS)

_DPE, _SIMD, _SFU, _RE, _MLU = (ENGINE_INDEX[e] for e in ("DPE", "SIMD", "SFU", "RE", "MLU"))
_DMA_IN, _DMA_OUT = ENGINE_INDEX["DMA_IN"], ENGINE_INDEX["DMA_OUT"]


# ----------------------------------------------------------------------------- chip parameters

class ChipModel:
    """The config turned into per-cycle figures the rules (and the scheduler) read."""

    def __init__(self, chip: dict):
        self.name = chip["name"]
        self.clock_ghz = float(chip["clock_ghz"])
        self.n_pe = int(chip["pe_grid"]["rows"]) * int(chip["pe_grid"]["cols"])
        ghz = self.clock_ghz
        self.local_bpc = chip["local_memory"]["bandwidth_gbps"] / ghz
        self.sram_bpc = chip["sram"]["bandwidth_gbps"] / ghz
        self.off_bpc = chip["offchip"]["bandwidth_gbps"] / ghz
        self.llc_bytes = int(chip["sram"].get("llc_bytes", chip["sram"]["bytes"]))
        self.launch_cycles = chip["launch"]["launch_us"] * 1e3 * ghz
        self.replace_cycles = chip["launch"]["replace_us"] * 1e3 * ghz
        # the config's [assumptions] (modelling choices no source publishes; docs/study.md)
        a = chip.get("assumptions", {})
        self.dispatch = a.get("dispatch", chip["launch"].get("dispatch", "dynamic"))
        self.held_tiles = a.get("held_tiles", "charged") == "held"
        self.issue_streams = bool(a.get("resident_issue_streams", True))
        self.program_overlap = bool(a.get("program_overlap", True))
        self.always_writeback = a.get("llc_output_rule", "fits") == "writeback"
        self.llc_reuse = a.get("llc_reuse", "capacity")
        self.llc_across_launches = a.get("llc_across_launches", "kept") == "kept"
        for key, val, ok in (("dispatch", self.dispatch, ("dynamic", "static")),
                             ("held_tiles", a.get("held_tiles", "charged"), ("held", "charged")),
                             ("llc_output_rule", a.get("llc_output_rule", "fits"), ("fits", "writeback")),
                             ("llc_reuse", self.llc_reuse, ("capacity", "ideal")),
                             ("llc_across_launches", a.get("llc_across_launches", "kept"), ("kept", "cold"))):
            if val not in ok:
                raise ValueError(f"chip '{self.name}': assumptions.{key} must be one of {ok}, got {val!r}")
        cp = chip["command_processor"]
        self.issue = float(cp["issue_cycles"])
        self.scalar = float(cp["scalar_cycles"])
        self.loop = float(cp["loop_cycles"])
        self.depth = int(cp["queue_depth"])
        d = chip["dpe"]
        self.dpe_rate = {k: float(v) for k, v in d["flops_per_cycle"].items()}
        self.tile_m, self.tile_n, self.tile_kb = int(d["tile_m"]), int(d["tile_n"]), int(d["tile_k_bytes"])
        self.fixed = [0.0] * len(ENGINES)
        self.latency = [0.0] * len(ENGINES)
        for eng, sec in (("DPE", "dpe"), ("SIMD", "simd"), ("SFU", "sfu"), ("RE", "re"), ("MLU", "mlu"),
                         ("DMA_IN", "dma"), ("DMA_OUT", "dma")):
            self.fixed[ENGINE_INDEX[eng]] = float(chip[sec]["fixed_cycles"])
            self.latency[ENGINE_INDEX[eng]] = float(chip[sec]["latency_cycles"])
        self.simd_epc = float(chip["simd"]["elements_per_cycle"])
        self.sfu_epc = float(chip["sfu"]["elements_per_cycle"])
        self.re_epc = float(chip["re"]["elements_per_cycle"])
        self.mlu_bpc = float(chip["mlu"]["bytes_per_cycle"])
        dma = chip["dma"]
        self.burst = int(dma["burst_bytes"])
        self.misalign = int(dma["misaligned_extra_bytes"])
        self.run_cycles = float(dma["run_cycles"])
        self.gather_run_cycles = float(dma["gather_run_cycles"])
        self.atomic_cycles = float(dma["atomic_cycles"])
        self.scalar_access = float(chip["scalar_path"]["access_cycles"])
        self._alone: list[Pricer | None] = [None, None]  # cycles(): with, without setup

    # -- the DPE: flops padded to its tiles (the DPE rule), at the rate of the input dtype

    def dpe_rate_for(self, dtype: str) -> float:
        """Flops per cycle of the DPE on `dtype` inputs (BF16's rate for a dtype it lacks)."""
        return self.dpe_rate.get(dtype) or self.dpe_rate["bf16"]

    def dpe_k_quantum(self, dtype: str) -> int:
        """The DPE pads k to a multiple of this many elements (tile_k_bytes of `dtype` input)."""
        return max(1, self.tile_kb // ITEMSIZE.get(dtype, 2))

    def dpe_time(self, flops: float, dtype: str) -> float:
        """Cycles the DPE takes for `flops` of `dtype` inputs, unpadded (an estimate's figure;
        the DPE rule pads to the tiles)."""
        return flops / self.dpe_rate_for(dtype)

    # -- memory levels: a PE's share of a level's bandwidth

    def shares(self, n_active: int) -> tuple[float, float]:
        """(SRAM, off-chip) bytes per cycle of one of `n_active` PEs active at once: an even,
        static share of the level's bandwidth, capped by the PE's local-memory bandwidth."""
        return min(self.sram_bpc / n_active, self.local_bpc), min(self.off_bpc / n_active, self.local_bpc)

    # -- pricing one instruction alone (the compiler's and the expert library's heuristics)

    def cycles(self, kind: int, inputs: dict, setup: bool = True) -> float:
        """The engine cycles the timing model charges an instruction of `kind` with these cost
        inputs, as if it ran alone: every read from off-chip, at an even share of all PEs; 0.0
        for a view. `setup=False` leaves the engine's fixed_cycles out (its throughput term)."""
        i = 0 if setup else 1
        if self._alone[i] is None:
            m = self
            if not setup:
                m = copy.copy(self)
                m.fixed, m._alone = [0.0] * len(self.fixed), [None, None]
            self._alone[i] = Pricer(m, Levels.alone(m))
        p = self._alone[i]
        p.start()
        return p.rules[kind](inputs) or 0.0


# ----------------------------------------------------------------------------- memory levels of a launch

@dataclass
class Levels:
    """Where a launch's DMA traffic goes: per region (tensor argument) the fraction of its read
    bytes that come from off-chip (the rest hit the SRAM; levels.py), each PE's share of the
    SRAM and off-chip bandwidth, and whether writes pay the off-chip share too (`spill`)."""
    sram_share: float
    off_share: float
    frac: dict[int, float] = field(default_factory=dict)
    spill: bool = False

    @classmethod
    def alone(cls, m: ChipModel) -> "Levels":
        """No launch context: every read from off-chip, every PE active."""
        sram_share, off_share = m.shares(m.n_pe)
        return cls(sram_share, off_share)


# ----------------------------------------------------------------------------- the rule registry

# A rule prices one executed instruction: cost inputs -> engine cycles (None: it occupies no
# engine, a view), adding the bytes it moves and the flops it does to the program's tally.
Rule = Callable[[Any], "float | None"]
# Registered per kind: (chip, launch's memory levels, tally, kind) -> the rule, with every
# figure it reads bound once per launch (the scheduler calls it per event).
RuleFactory = Callable[[ChipModel, Levels, list, int], Rule]
RULES: dict[int, RuleFactory] = {}

# the tally of one program: what its instructions moved and computed (LaunchTiming.bytes, flops)
TALLY = ("off_read", "off_write", "sram_read", "sram_write", "local", "dpe_flops", "vec_flops", "scalar_accesses")
T_OFF_READ, T_OFF_WRITE, T_SRAM_READ, T_SRAM_WRITE, T_LOCAL, T_DPE_FLOPS, T_VEC_FLOPS, T_SCALAR = range(len(TALLY))
ZERO_TALLY = (0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0)


def rule(*kinds: int) -> Callable[[RuleFactory], RuleFactory]:
    """Register the rule factory of instruction `kinds`."""
    def deco(factory: RuleFactory) -> RuleFactory:
        for k in kinds:
            assert k not in RULES, k
            RULES[k] = factory
        return factory
    return deco


class Pricer:
    """The rules of one launch (its chip and memory levels), indexed by kind, and the tally
    they add to."""

    def __init__(self, m: ChipModel, levels: Levels):
        self.model, self.levels = m, levels
        self.tally = list(ZERO_TALLY)
        self.rules: list[Rule] = [RULES[k](m, levels, self.tally, k) for k in range(N_KINDS)]
        # a program-invariant tile a PE already holds (assumptions.held_tiles = "held"): the
        # DMA's setup only
        self.held_load = m.fixed[_DMA_IN]

    def start(self) -> list:
        """A program begins: its tally from zero."""
        self.tally[:] = ZERO_TALLY
        return self.tally

    def flush(self, acc: dict) -> None:
        """Add the program's tally to the launch's totals."""
        for key, v in zip(TALLY, self.tally):
            acc[key] += v


# ----------------------------------------------------------------------------- the rules

@rule(K_SCALAR)
def _scalar(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    """A scalar or control op on the control core: scalar_cycles, blocking issue."""
    cyc = m.scalar
    return lambda c: cyc


@rule(K_LOOP)
def _loop(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    """A loop trip (back-edge: compare, branch, induction update): loop_cycles on the control core."""
    cyc = m.loop
    return lambda c: cyc


@rule(K_SCALAR_LOAD, K_SCALAR_STORE)
def _scalar_access(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    """The scalar fallback path: access_cycles per element, blocking the control core."""
    scal, access = m.scalar, m.scalar_access
    level = T_SRAM_READ if kind == K_SCALAR_LOAD else T_SRAM_WRITE

    def price(c: dict | None) -> float:
        n = c["elements"] if c else 0
        t[T_SCALAR] += n
        t[level] += c["bytes"] if c else 0
        return scal + n * access
    return price


@rule(K_DPE)
def _dpe(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    """2 * batch * m' * n' * k' / flops_per_cycle[in_dtype]: m, n padded to the DPE's tiles, k
    to its k quantum."""
    fixed, tm, tn = m.fixed[_DPE], m.tile_m, m.tile_n
    per_dtype: dict[str, tuple[int, float]] = {}  # in_dtype -> (k quantum, flops per cycle)

    def price(c: dict) -> float:
        dt = c["in_dtype"]
        kr = per_dtype.get(dt)
        if kr is None:
            kr = per_dtype[dt] = (m.dpe_k_quantum(dt), m.dpe_rate_for(dt))
        kq, rate = kr
        mm, n, k = c["m"], c["n"], c["k"]
        t[T_DPE_FLOPS] += c["flops"]
        return fixed + 2 * c["batch"] * (-(-mm // tm) * tm) * (-(-n // tn) * tn) * (-(-k // kq) * kq) / rate
    return price


@rule(K_SIMD)
def _simd(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    fixed, epc = m.fixed[_SIMD], m.simd_epc

    def price(c: dict) -> float:
        n = c["elements"]
        t[T_VEC_FLOPS] += n * c.get("flops_per_element", 1)
        return fixed * c.get("passes", 1) + n / epc
    return price


@rule(K_SFU)
def _sfu(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    fixed, epc = m.fixed[_SFU], m.sfu_epc

    def price(c: dict) -> float:
        n = c["elements"]
        t[T_VEC_FLOPS] += n
        return fixed + n / epc
    return price


@rule(K_RE)
def _re(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    fixed, epc = m.fixed[_RE], m.re_epc
    return lambda c: fixed + c["elements"] * c.get("combine_ops", 1) / epc


@rule(K_MLU)
def _mlu(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    fixed, bpc = m.fixed[_MLU], m.mlu_bpc

    def price(c: dict) -> float | None:
        b = c["bytes"]
        if not b:
            return None  # a view: strides change, no data moves (its readers read its source)
        t[T_LOCAL] += 2 * b
        return fixed + b / bpc
    return price


@rule(K_DMA_IN, K_DMA_OUT)
def _dma(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    fixed = m.fixed[_DMA_IN if kind == K_DMA_IN else _DMA_OUT]
    burst, misalign, run_c, grun_c = m.burst, m.misalign, m.run_cycles, m.gather_run_cycles
    frac, sram_share, off_share, spill = lv.frac, lv.sram_share, lv.off_share, lv.spill
    load = kind == K_DMA_IN

    def price(c: dict) -> float:
        b = c["bytes"]
        runs = c["runs"]
        if not (b and runs):
            return fixed
        # every run padded to whole bursts, one more for an unaligned start
        lengths = c.get("run_lengths")
        if lengths is None:
            rb = c["run_bytes"]
            eff = runs * (-(-rb // burst) * burst)
        else:  # a masked index-driven DMA: each run on the bytes it moves
            eff = sum(k * (-(-rb // burst) * burst) for rb, k in lengths)
        if c.get("aligned32") is False:
            eff += runs * misalign
        if eff < b:
            eff = b
        rc = grun_c if c.get("indexed") else run_c
        if load:
            f = frac.get(c.get("region"), 1.0)
            off = eff * f
            t_x = max(off / off_share, eff / sram_share, runs * rc)
            t[T_OFF_READ] += off * (b / eff)
            t[T_SRAM_READ] += (eff - off) * (b / eff)
        else:
            t_x = max(eff / sram_share, runs * rc)
            if spill:
                t_x = max(t_x, eff / off_share)
            t[T_OFF_WRITE] += b
            t[T_SRAM_WRITE] += b
        t[T_LOCAL] += b
        return fixed + t_x
    return price


@rule(K_ATOMIC)
def _atomic(m: ChipModel, lv: Levels, t: list, kind: int) -> Rule:
    """atomic_cycles per element on DMA_OUT (a read-modify-write at the SRAM)."""
    fixed, per = m.fixed[_DMA_OUT], m.atomic_cycles

    def price(c: dict | None) -> float:
        n = c.get("atomics", c.get("elements", 0)) if c else 0
        t[T_SRAM_WRITE] += c.get("bytes", 0) if c else 0
        return fixed + n * per
    return price


assert sorted(RULES) == list(range(N_KINDS)), "a rule per kind"
