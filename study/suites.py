"""Named sweeps: which workloads, shapes, implementations, chips and compile options run.

A suite is data; `plan(suite, workloads)` expands it into jobs, one per
(workload, shape, chip, option set, memory regime), each covering every (impl, dtype) of that
workload. A chip may be a config with overrides (`mtia2i@dma.latency_cycles=400`,
backend/configs): the sensitivity suite prices the same kernels with one assumption changed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backend.configs import DEFAULT_CHIP, available_chips, base_chip, pricing_only, variant_name
from backend.regimes import DEFAULT_REGIME
from study.compile_options import ABLATIONS
from study.registry import Workload

# The plain kernel and its MTIA-tuned variant: the implementations the compiler options affect.
TRITON_IMPLS = ("triton", "triton_ext")
MEASURED_IMPLS = ("triton", "triton_ext", "expert", "inductor")  # torch is the reference, not measured
HAND_WRITTEN_IMPLS = ("triton", "triton_ext", "expert")


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    shape_tag: str
    chips: Callable[[], list[str]]
    impls: tuple[str, ...] = MEASURED_IMPLS
    options: tuple[str, ...] = ("default",)
    families: frozenset[str] | None = None
    autotune: bool = False
    cached_compile: bool = False
    wants: Callable[[Workload], bool] = lambda w: True
    primary_only: bool = False          # one representative shape per workload (PRIMARY)
    first_dtype_only: bool = False      # the workload's first declared dtype only
    workloads: frozenset[str] | None = None
    regimes: tuple[str, ...] = (DEFAULT_REGIME,)  # memory regimes (backend/regimes.py) each job runs in
    # price chips that differ from another chip of the suite only in timing-model keys
    # (backend.configs.pricing_only) from that chip's run instead of running them again
    reprice: bool = False
    # memory regimes priced from each job's executed events besides the job's own (a regime
    # changes only the price of a launch): every regime for the cost of one execution
    priced_regimes: tuple[str, ...] = ()
    # "timing": the suite's shapes simulate without the tile arithmetic that reaches no address
    # (backend.driver.DEVICE.mode; the same cycles), and each (impl, dtype, options, chip) is
    # checked against torch in functional mode at a ragged test shape (runner.check_shapes). For the
    # sweeps that multiply the work; `full` checks numbers at every study shape.
    sim_mode: str = "functional"
    # workloads outside `workloads` run with only some option sets: {workload: option sets}
    # (the ablation of a pass that no kernel of the cross-section exercises, on a kernel it serves)
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def runs(self, workload: str, options: str) -> bool:
        """Whether the suite runs `workload` with the option set `options` (workloads and extra)."""
        if self.workloads is None or workload in self.workloads:
            return True
        return any(w == workload and options in opts for w, opts in self.extra)


# The representative production shape of each workload: the one shape the sweeps that multiply
# the work (ablation, generations) run. `full` runs every study shape and dtype.
PRIMARY = {
    "add": "16M", "bias_gelu": "4k", "bmm": "scores_512", "concat": "dlrm_b4k", "decode_attention": "b32_2k",
    "dequantize_int8_rowwise": "4k", "dot_interaction": "dlrm_b512", "embedding_bag_mean": "dlrm_b512",
    "embedding_bag_sum": "dlrm_b512", "flash_attention": "llm_h32_1k", "flash_attention_causal": "llm_h32_1k",
    "gelu_erf": "16M", "gelu_tanh": "16M", "index_select": "emb_64k", "int8_matmul": "chunk_512",
    "jagged_offsets": "dlrm_26x4k", "jagged_softmax": "hist_b512", "jagged_sum": "hist_b512",
    "jagged_to_padded_dense": "hist_b512", "layernorm": "llm_4k", "matmul": "chunk_512",
    "matmul_bias_gelu": "chunk_512", "matmul_autotuned": "sq1024", "mx4_dequantize": "4M", "mx4_quantize": "4M", "quantize_int8_rowwise": "4k",
    "rmsnorm": "llm_4k", "rope": "llm_b1_8k", "silu_mul": "llm_4k", "softmax": "4k", "transpose": "4k",
}

# A cross-section of the families for the sweeps that multiply the work (ablation, generations).
CROSS_SECTION = frozenset({"matmul", "softmax", "layernorm", "add", "embedding_bag_sum", "index_select",
                           "flash_attention", "transpose"})
# The ablation's kernels beyond the cross-section: a pass or DMA form none of its kernels uses,
# switched off on a workload whose kernels do (with its default-option row to compare with)
# (MX4 quantise, which dense strided DMA serves, is left out: its Inductor rows simulate their
# integer outputs functionally, 33 s a job on a 2-core host)
ABLATION_EXTRA = (
    ("mx4_dequantize", ("default", "no_tabulate", "inductor_no_cat_idiom", "no_repeat_dma")),
    ("quantize_int8_rowwise", ("default", "inductor_no_round_idiom")),
    ("dot_interaction", ("default", "no_table_dma", "inductor_no_constant_tables")),
)


# The sensitivity study (F9): each modelling choice no source publishes (the [assumptions]
# switches of the chip config, flipped, and the numeric ASSUMPTION parameters that move results
# most, halved and doubled; replace_us is ISCA'25's upper bound, so only smaller is a bound,
# doubled is asked for completeness) applied to the default chip one at a time.
SENSITIVITY: dict[str, tuple] = {
    "assumptions.dispatch": ("static",),
    "assumptions.held_tiles": ("held",),
    "assumptions.resident_issue_streams": (False,),
    "assumptions.program_overlap": (False,),
    "assumptions.llc_output_rule": ("writeback",),
    "assumptions.llc_reuse": ("ideal",),
    "assumptions.llc_across_launches": ("cold",),
    "dma.fixed_cycles": (8, 32),
    "dma.latency_cycles": (100, 400),
    "dma.run_cycles": (0.125, 0.5),
    "command_processor.issue_cycles": (0.5, 2),
    "launch.replace_us": (0.25, 1.0),
}


def sensitivity_chips(base: str = DEFAULT_CHIP) -> list[str]:
    """The base chip, then one variant per (assumption, value) of SENSITIVITY."""
    return [base] + [variant_name(base, {key: v}) for key, vals in SENSITIVITY.items() for v in vals]


def _default_chip() -> list[str]:
    return [DEFAULT_CHIP]


def _is_autotuned(w: Workload) -> bool:
    from triton.runtime.autotuner import Autotuner
    src = w.source.get("triton")
    return isinstance(src, Autotuner) and len(src.configs) > 1


SUITES: dict[str, Suite] = {s.name: s for s in (
    # quick and full: hand-written kernels and expert programs. Inductor has a suite of its own
    # (every study shape and dtype, as full): each compile runs Inductor, and its autotuning of the
    # kernels it does not give a fixed block shape runs every candidate through the simulator
    Suite("quick", "test-tagged shapes of every workload on mtia2i; what CI and the gate run", "test",
          lambda: ["mtia2i"], impls=HAND_WRITTEN_IMPLS),
    Suite("full", "every study shape and dtype of every workload on the default chip, priced in every memory "
          "regime (T2, F1, F2)", "study", _default_chip, impls=HAND_WRITTEN_IMPLS,
          priced_regimes=("resident", "writeback")),
    Suite("inductor", "torch.compile of every workload's model code (or reference) at every study shape and "
          "dtype, chip-aware switches on (F1)", "study", _default_chip, impls=("inductor",),
          priced_regimes=("resident", "writeback")),
    Suite("gemm_sweep", "square BF16 GEMM 256..4096: fraction of peak vs size (F3)", "sweep", _default_chip,
          impls=("triton", "triton_ext", "expert"), families=frozenset({"gemm"})),
    Suite("generations", "plain Triton and expert on every chip config (F5)", "study", available_chips,
          impls=("triton", "expert"), primary_only=True, first_dtype_only=True, workloads=CROSS_SECTION,
          sim_mode="timing"),
    Suite("autotune", "every config of the autotuned Triton kernels (F7)", "study", _default_chip,
          impls=("triton",), autotune=True, cached_compile=False, wants=_is_autotuned),
    Suite("ablation", "each backend compile option switched off in turn (F4)", "study", _default_chip,
          impls=TRITON_IMPLS + ("inductor",), options=tuple(ABLATIONS), primary_only=True, first_dtype_only=True,
          workloads=CROSS_SECTION, sim_mode="timing", extra=ABLATION_EXTRA),
    Suite("sensitivity", "triton and expert on the cross-section with one modelling assumption changed at a "
          "time (F9)", "study", sensitivity_chips, impls=("triton", "expert"), primary_only=True,
          first_dtype_only=True, workloads=CROSS_SECTION, sim_mode="timing", reprice=True),
)}

# What `make reproduce` runs, in order: everything the notebooks read.
REPRODUCE_SUITES = ("full", "inductor", "gemm_sweep", "ablation", "generations", "autotune", "sensitivity")


@dataclass(frozen=True)
class Job:
    suite: str
    workload: str
    shape: str            # Shape.name, unique within its workload
    chip: str
    options: str
    pairs: tuple[tuple[str, str], ...]   # (impl, dtype) still to measure
    autotune: bool = False
    cached_compile: bool = False
    regime: str = DEFAULT_REGIME
    variants: tuple[str, ...] = ()  # chips priced from this job's executed events (Suite.reprice)
    priced_regimes: tuple[str, ...] = ()  # regimes priced from this job's executed events
    sim_mode: str = "functional"  # Suite.sim_mode

    @property
    def chips(self) -> tuple[str, ...]:
        return (self.chip,) + self.variants


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite '{name}'; known: {', '.join(SUITES)}")
    return SUITES[name]


def plan(suite: Suite, workloads: dict[str, Workload], only: set[str] | None = None) -> list[Job]:
    """Jobs of a suite over `workloads` (optionally only those named), in a stable order."""
    jobs = []
    chips = suite.chips()
    priced_from: dict[str, list[str]] = {}
    if suite.reprice:
        for c in chips:
            if base_chip(c) != c and base_chip(c) in chips and pricing_only(c):
                priced_from.setdefault(base_chip(c), []).append(c)
    repriced = {c for cs in priced_from.values() for c in cs}
    for chip in (c for c in chips if c not in repriced):
        for opt, regime in ((o, r) for o in suite.options for r in suite.regimes):
            for name in sorted(workloads):
                w = workloads[name]
                if only and name not in only:
                    continue
                if suite.families is not None and w.family not in suite.families:
                    continue
                if not suite.wants(w) or not suite.runs(name, opt):
                    continue
                impls = [i for i in suite.impls if i in w.impls and not i.endswith("_gpu")]
                if opt.startswith("inductor_"):  # an Inductor switch changes only Inductor's code
                    impls = [i for i in impls if i == "inductor"]
                dtypes = w.dtypes[:1] if suite.first_dtype_only else w.dtypes
                pairs = tuple((i, d) for i in impls for d in dtypes)
                if not pairs:
                    continue
                shapes = w.shapes_tagged(suite.shape_tag)
                if suite.primary_only:
                    pick = [x for x in shapes if x.name == PRIMARY.get(name)]
                    shapes = pick or shapes[:1]
                for s in shapes:
                    jobs.append(Job(suite.name, name, s.name, chip, opt, pairs, suite.autotune, suite.cached_compile,
                                    regime, tuple(priced_from.get(chip, ())),
                                    tuple(g for g in suite.priced_regimes if g != regime), suite.sim_mode))
    return jobs
