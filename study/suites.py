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


def _default_chip() -> list[str]:
    return [DEFAULT_CHIP]


def _is_autotuned(w: Workload) -> bool:
    from triton.runtime.autotuner import Autotuner
    src = w.source.get("triton")
    return isinstance(src, Autotuner) and len(src.configs) > 1


SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("quick", "test-tagged shapes of every workload on mtia2i; what CI and the gate run", "test",
          lambda: ["mtia2i"]),
    Suite("full", "study shapes of every workload on the default chip (T2, F1, F2, F3)", "study", _default_chip),
    Suite("gemm_sweep", "GEMM family, study shapes: fraction of peak vs size (F3)", "study", _default_chip,
          impls=("triton", "triton_ext", "expert"), families=frozenset({"gemm"})),
    Suite("generations", "plain Triton and expert on every chip config (F5)", "study", available_chips,
          impls=("triton", "expert"), cached_compile=False),
    Suite("autotune", "every config of the autotuned Triton kernels (F7)", "study", _default_chip,
          impls=("triton",), autotune=True, cached_compile=False, wants=_is_autotuned),
    Suite("ablation", "each backend compile option switched off in turn (F4)", "study", _default_chip,
          impls=TRITON_IMPLS, options=tuple(ABLATIONS), cached_compile=False),
)}

# What `make reproduce` runs, in order: everything the notebooks read.
REPRODUCE_SUITES = ("full", "ablation", "generations", "autotune")


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
                if not suite.wants(w):
                    continue
                impls = [i for i in suite.impls if i in w.impls and not i.endswith("_gpu")]
                pairs = tuple((i, d) for i in impls for d in w.dtypes)
                if not pairs:
                    continue
                for s in w.shapes_tagged(suite.shape_tag):
                    jobs.append(Job(suite.name, name, s.name, chip, opt, pairs, suite.autotune, suite.cached_compile))
    return jobs
