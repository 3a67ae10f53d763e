"""Named sweeps: which workloads, shapes, implementations, chips and compile options run.

A suite is data; `plan(suite, workloads)` expands it into jobs, one per
(workload, shape, chip, option set), each covering every (impl, dtype) of that workload.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backend.configs import DEFAULT_CHIP, available_chips
from study.compile_options import ABLATIONS
from study.registry import Workload

# The plain kernel and its MTIA-tuned variant: the implementations the compiler options affect.
TRITON_IMPLS = ("triton", "triton_ext")
MEASURED_IMPLS = ("triton", "triton_ext", "expert", "inductor")  # torch is the reference, not measured


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


# The representative production shape of each workload in `full`: chosen so the whole study
# simulates in about ten minutes on two cores. Every other study shape runs in `study_all`.
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


def _default_chip() -> list[str]:
    return [DEFAULT_CHIP]


def _is_autotuned(w: Workload) -> bool:
    from triton.runtime.autotuner import Autotuner
    src = w.source.get("triton")
    return isinstance(src, Autotuner) and len(src.configs) > 1


SUITES: dict[str, Suite] = {s.name: s for s in (
    # the gate's suite: hand-written kernels and expert programs (Inductor's rows come from `full`;
    # compiling every test shape through Inductor would multiply the gate's time)
    Suite("quick", "test-tagged shapes of every workload on mtia2i; what CI and the gate run", "test",
          lambda: ["mtia2i"], impls=("triton", "triton_ext", "expert")),
    Suite("full", "the representative study shape of every workload on the default chip (T2, F1, F2)",
          "study", _default_chip, primary_only=True, first_dtype_only=True),
    Suite("study_all", "every study shape and dtype of every workload (long: not part of reproduce)", "study",
          _default_chip),
    Suite("gemm_sweep", "square BF16 GEMM 256..4096: fraction of peak vs size (F3)", "sweep", _default_chip,
          impls=("triton", "triton_ext", "expert"), families=frozenset({"gemm"})),
    Suite("generations", "plain Triton and expert on every chip config (F5)", "study", available_chips,
          impls=("triton", "expert"), primary_only=True, first_dtype_only=True, workloads=CROSS_SECTION),
    Suite("autotune", "every config of the autotuned Triton kernels (F7)", "study", _default_chip,
          impls=("triton",), autotune=True, cached_compile=False, wants=_is_autotuned),
    Suite("ablation", "each backend compile option switched off in turn (F4)", "study", _default_chip,
          impls=TRITON_IMPLS, options=tuple(ABLATIONS), primary_only=True, first_dtype_only=True,
          workloads=CROSS_SECTION),
)}

# What `make reproduce` runs, in order: everything the notebooks read.
REPRODUCE_SUITES = ("full", "gemm_sweep", "ablation", "generations", "autotune")


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


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite '{name}'; known: {', '.join(SUITES)}")
    return SUITES[name]


def plan(suite: Suite, workloads: dict[str, Workload], only: set[str] | None = None) -> list[Job]:
    """Jobs of a suite over `workloads` (optionally only those named), in a stable order."""
    jobs = []
    for chip in suite.chips():
        for opt in suite.options:
            for name in sorted(workloads):
                w = workloads[name]
                if only and name not in only:
                    continue
                if suite.families is not None and w.family not in suite.families:
                    continue
                if not suite.wants(w) or (suite.workloads is not None and name not in suite.workloads):
                    continue
                impls = [i for i in suite.impls if i in w.impls and not i.endswith("_gpu")]
                dtypes = w.dtypes[:1] if suite.first_dtype_only else w.dtypes
                pairs = tuple((i, d) for i in impls for d in dtypes)
                if not pairs:
                    continue
                shapes = w.shapes_tagged(suite.shape_tag)
                if suite.primary_only:
                    pick = [x for x in shapes if x.name == PRIMARY.get(name)]
                    shapes = pick or shapes[:1]
                for s in shapes:
                    jobs.append(Job(suite.name, name, s.name, chip, opt, pairs, suite.autotune, suite.cached_compile))
    return jobs
