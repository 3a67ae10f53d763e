"""Inductor's own Triton GEMM templates (mm, addmm, bmm, baddbmm) on the simulated chip.

Switch `triton_gemm_templates` (options.py). Inductor offers its Triton templates for CPU
tensors when max_autotune_gemm is on, TRITON is an allowed GEMM backend and the scheduling has
BackendFeature.TRITON_TEMPLATES (torch._inductor.utils.use_triton_template); the kernels then
compile through this backend like any other Inductor kernel. What this module adds, through
Inductor's extension points (the InductorChoices handler of heuristics.py calls it):

- The candidate tiles (`chip_configs`): Inductor's CPU heuristic halves its GPU tiles and drops
  any over 8192 outputs (mm) or 128 on a side (bmm), sized for a host's caches and Triton-CPU
  compile time. On the chip a program holds its A and B tiles (double-buffered) and an fp32
  accumulator in a PE's local memory (384 KB on mtia2i), and the grid should cover the 64 PEs:
  the candidates are the tiles that fit, the largest that still give every PE a program and
  the next larger and smaller, each with two K steps (MAX_CONFIGS at most).
- The host stays out of the choice: Inductor adds aten's kernel (host work, no simulated time)
  and subgraph choices built on aten (decompose-K, contiguous B) to the candidates; where a
  Triton template applies they are dropped. An op no template takes (float64, int) keeps aten.
- The expert GEMM as a candidate (`EXPERT`): with `extern_gemm` on too, the registered
  mtia_sim.gemm implementation (study/inductor.py: the expert GEMM program) is one more choice
  of the same autotuning, for mm and bmm whose A is row-major and B row-major or the transpose
  of a row-major tensor (extern.py's NT form); the post-grad pass then leaves mm / bmm to
  Inductor and turns addmm into mm + bias add, so the bias is an epilogue of whichever wins.
- Simulated timing: Inductor times a template candidate on a CPU tensor with
  `benchmarker.benchmark_cpu` (host wall clock; autotune_process.CPUDeviceBenchmarkMixin), not
  through the registered device benchmarker that benchmark.py installs; each template choice's
  benchmark request is given `SimulatedTritonBenchmarkRequest`'s do_bench, the simulated time
  of its launch (backend.driver.simulated_bench), as the extern choices already are measured.
"""
from __future__ import annotations

import functools
from typing import Any, Iterator

import torch
from torch._inductor.choices import InductorChoices

from backend.inductor_cpu import options

# output tiles (BLOCK_M, BLOCK_N) tried, largest first; K steps per dtype size
TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64), (64, 32), (32, 64), (32, 32),
         (32, 16), (16, 32), (16, 16))
K_STEPS = {4: (32, 64), 2: (64, 128), 1: (128, 256)}
MAX_CONFIGS = 6
# what a template's program keeps in local memory: A and B tiles num_stages times, the fp32
# accumulator and the output tile
NUM_STAGES = 2


def _chip() -> dict:
    from backend.configs import load_chip
    from backend.driver import DEVICE
    return load_chip(DEVICE.chip)


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def tile_bytes(bm: int, bn: int, bk: int, in_size: int, out_size: int, stages: int = NUM_STAGES) -> int:
    """Local memory a template program needs for one tile (operands x stages, accumulator, output)."""
    return stages * (bm * bk + bk * bn) * in_size + bm * bn * (4 + out_size)


def chip_configs(batch: int, m: int, n: int, k: int, in_size: int, out_size: int | None = None,
                 pes: int | None = None, local_bytes: int | None = None) -> list[tuple[int, int, int]]:
    """(BLOCK_M, BLOCK_N, BLOCK_K) candidates for a [batch x] m x n x k GEMM on the chip: tiles
    clipped to the problem (at least 16), fitting local memory; of them the largest that gives
    every PE a program (else the smallest), and its neighbours in TILES' order, each with the
    dtype's K steps clipped to k; at most MAX_CONFIGS."""
    out_size = in_size if out_size is None else out_size
    if pes is None or local_bytes is None:
        chip = _chip()
        g = chip["pe_grid"]
        pes = pes or int(g["rows"]) * int(g["cols"])
        local_bytes = local_bytes or int(chip["local_memory"]["bytes"])
    pm, pn, pk = (max(16, _pow2_ceil(x)) for x in (m, n, k))
    tiles: list[tuple[int, int]] = []
    for bm, bn in TILES:
        t = (min(bm, pm), min(bn, pn))
        if t not in tiles:
            tiles.append(t)
    steps = sorted({min(s, pk) for s in K_STEPS.get(in_size, K_STEPS[4])})
    fits = [t for t in tiles if tile_bytes(*t, steps[0], in_size, out_size) <= local_bytes]
    if not fits:
        return []

    def programs(t: tuple[int, int]) -> int:
        return batch * -(-m // t[0]) * -(-n // t[1])
    full = [i for i, t in enumerate(fits) if programs(t) >= pes]
    centre = full[0] if full else len(fits) - 1
    picked = fits[max(0, centre - 1):centre + 2]
    out = [(bm, bn, bk) for bm, bn in picked for bk in steps
           if tile_bytes(bm, bn, bk, in_size, out_size) <= local_bytes]
    return out[:MAX_CONFIGS]


# ----------------------------------------------------------------------------- template configs

def _hint(x: Any) -> int:
    from torch._inductor.virtualized import V
    return int(V.graph.sizevars.optimization_hint(x))


@functools.cache
def _heuristic_class(template_uid: str, op_name: str) -> type:
    """Inductor's CPU heuristic for (template, op) with the chip's candidate tiles."""
    from torch._inductor.template_heuristics.registry import get_registered_heuristic_class
    from torch._inductor.template_heuristics.triton import GemmConfig
    base = get_registered_heuristic_class(template_uid, "cpu", op_name)

    class ChipGemmHeuristic(base):  # type: ignore[misc, valid-type]
        def get_mm_configs(self) -> Any:
            return functools.partial(self._chip_configs)

        def get_exhaustive_mm_configs(self) -> Any:
            return functools.partial(self._chip_configs)

        def _chip_configs(self, m: Any, n: Any, k: Any, dtype_size: int = 4, op_name: str = "mm",
                          **kwargs: Any) -> Iterator[Any]:
            batch = getattr(self, "_batch", 1)
            cfgs = chip_configs(batch, _hint(m), _hint(n), _hint(k), int(dtype_size) or 4)
            return self._finalize_mm_configs([GemmConfig(bm, bn, bk, NUM_STAGES, 4, group_m=8)
                                              for bm, bn, bk in cfgs])

        def _get_template_configs_impl(self, kernel_inputs: Any, op_name: str, **kwargs: Any) -> Iterator[Any]:
            shape = kernel_inputs.shapes_symbolic()[kernel_inputs._mat1_idx]
            self._batch = _hint(shape[0]) if len(shape) == 3 else 1
            yield from super()._get_template_configs_impl(kernel_inputs, op_name, **kwargs)

    ChipGemmHeuristic.__name__ = f"Chip{base.__name__}"
    return ChipGemmHeuristic


def template_uids() -> tuple[str, ...]:
    from torch._inductor.kernel.bmm import bmm_template
    from torch._inductor.kernel.mm import mm_template
    return (mm_template.uid, bmm_template.uid)


def chip_heuristic(template_uid: str, op_name: str) -> Any:
    return _heuristic_class(template_uid, op_name)()


def _is_expert(choice: Any) -> bool:
    return getattr(getattr(choice, "choice", None), "name", None) == "mtia_expert_gemm"


def on_chip(choices: list) -> list:
    """The candidates that run on the chip: the Triton templates' and the expert's. Inductor's
    others (aten, and subgraphs built on it: decompose-K, contiguous B) run on the host, where
    simulated timing would rate them free; they stay only where no chip candidate was made (a
    dtype no template takes, an empty K)."""
    from torch._inductor.select_algorithm import TritonTemplateCaller
    expert = [c for c in choices if _is_expert(c)]
    chip = [c for c in choices if isinstance(c, TritonTemplateCaller)] + expert
    return chip if chip else choices


# ----------------------------------------------------------------------------- simulated timing

def simulate_benchmarks(choices: list) -> list:
    """Template choices among `choices` are timed in simulated time (see the module doc), and
    the expert's whole benchmark is one simulated benchmark (Inductor's request for an extern
    kernel without an out= variant first calls it once outside the benchmarker, to check the
    output's layout: a launch that would count as the graph's)."""
    from torch._inductor.autotune_process import ExternKernelCPUBenchmarkRequest, TritonCPUBenchmarkRequest
    for c in choices:
        req = getattr(c, "bmreq", None)
        if isinstance(req, TritonCPUBenchmarkRequest) and not isinstance(req, SimulatedTritonBenchmarkRequest):
            req.__class__ = SimulatedTritonBenchmarkRequest
        elif isinstance(req, ExternKernelCPUBenchmarkRequest) and _is_expert(c) \
                and not isinstance(req, SimulatedExternBenchmarkRequest):
            req.__class__ = SimulatedExternBenchmarkRequest
    return choices


def _simulated_request_class() -> type:
    from torch._inductor.autotune_process import TritonCPUBenchmarkRequest

    class SimulatedTritonBenchmarkRequest(TritonCPUBenchmarkRequest):
        """A template's benchmark request whose time is the simulated time of one launch."""

        def do_bench(self, fn: Any, *input_tensors: torch.Tensor, out: torch.Tensor | None = None) -> float:
            from backend.driver import simulated_bench
            return simulated_bench(fn)
    return SimulatedTritonBenchmarkRequest


SimulatedTritonBenchmarkRequest = _simulated_request_class()


def _simulated_extern_request_class() -> type:
    from torch._inductor.autotune_process import ExternKernelCPUBenchmarkRequest

    class SimulatedExternBenchmarkRequest(ExternKernelCPUBenchmarkRequest):
        """An extern choice's benchmark request whose time is the simulated time of one call,
        the layout check on that call's output."""

        def benchmark(self, *input_tensors: torch.Tensor, out: torch.Tensor | None = None) -> float:
            if out is not None and out.numel() == 0:
                return 0.0
            from backend.driver import simulated_bench
            algo = self.to_callable()
            got: list = []
            ms = simulated_bench(lambda: got.append(algo(*input_tensors)))
            if out is not None and not self.has_out_variant:
                torch._C._dynamo.guards.assert_size_stride(got[0], tuple(out.size()), tuple(out.stride()))
            return ms
    return SimulatedExternBenchmarkRequest


SimulatedExternBenchmarkRequest = _simulated_extern_request_class()


# ----------------------------------------------------------------------------- the expert as a choice

def _is_row_major(size: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expect = 1
    for s, st in zip(reversed(size), reversed(stride)):
        if s != 1 and st != expect:
            return False
        expect *= s
    return True


def _expert_gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """mm / bmm through the registered mtia_sim.gemm implementation (b row-major, or the
    transpose of a row-major tensor: the NT form)."""
    from backend.inductor_cpu import extern
    if a.is_contiguous() and b.is_contiguous():
        return extern._gemm_impl(a, b, False)
    bt = b.transpose(-1, -2)
    if a.is_contiguous() and bt.is_contiguous():
        return extern._gemm_impl(a, bt, True)
    raise RuntimeError(f"mtia_expert_gemm: operands of strides {a.stride()}, {b.stride()} are not row-major")


@functools.cache
def expert_choice() -> Any:
    from torch._inductor.select_algorithm import ExternKernelChoice
    return ExternKernelChoice.lookup("mtia_expert_gemm") or ExternKernelChoice(
        _expert_gemm, None, name="mtia_expert_gemm", has_out_variant=False)


def expert_applies(kernel_inputs: Any, op_name: str) -> bool:
    """The expert GEMM takes this mm / bmm: registered, a dtype it takes, A row-major and B
    row-major or transposed row-major (static shapes)."""
    from backend.inductor_cpu import extern
    if op_name not in ("mm", "bmm") or not extern.registered("gemm"):
        return False
    nodes = kernel_inputs.nodes()
    if len(nodes) != 2 or kernel_inputs.dtype() not in extern._DTYPES:
        return False
    try:
        (sa, sb), (ta, tb) = kernel_inputs.shapes_hinted(), kernel_inputs.strides_hinted()
    except Exception:
        return False
    if any(d == 0 for shape in (sa, sb) for d in shape) or not _is_row_major(sa, ta):
        return False
    sbt = (*sb[:-2], sb[-1], sb[-2])
    tbt = (*tb[:-2], tb[-1], tb[-2])
    return _is_row_major(sb, tb) or _is_row_major(sbt, tbt)


def expert_ktc(kernel_inputs: Any) -> Any:
    from torch._inductor.kernel_template_choice import make_ktc_generator
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams
    return next(make_ktc_generator(template=expert_choice(), cs=iter([DictKernelTemplateParams({})]),
                                   extra_kwargs={}, overrides={}, layout=kernel_inputs.output_layout(),
                                   inputs=kernel_inputs))


# ----------------------------------------------------------------------------- the choices handler

class GemmTemplateChoices(InductorChoices):
    """Inductor's choices with the GEMM templates of this module while `triton_gemm_templates`
    is on (heuristics.MTIAChoices extends it; alone, `install()` makes it the handler)."""

    def get_ktc(self, kernel_inputs: Any, template: Any, op_name: str, kwarg_overrides: dict | None = None) -> Any:
        if not (options.enabled("triton_gemm_templates") and kernel_inputs.device_type == "cpu"
                and template.uid in template_uids()):
            return super().get_ktc(kernel_inputs, template, op_name, kwarg_overrides)
        from torch._inductor.kernel_template_choice import make_ktc_generator
        heuristic = chip_heuristic(template.uid, op_name)
        return make_ktc_generator(template=template, cs=heuristic.get_template_configs(kernel_inputs, op_name),
                                  extra_kwargs=heuristic.get_extra_kwargs(kernel_inputs, op_name),
                                  overrides=kwarg_overrides or {}, layout=kernel_inputs.output_layout(),
                                  inputs=heuristic.adjust_kernel_inputs(kernel_inputs, op_name))

    def _finalize_template_configs(self, template_choices: dict, kernel_inputs: Any, templates: list, op_name: str,
                                   kwarg_overrides: dict | None = None) -> list:
        chosen = super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name,
                                                    kwarg_overrides)
        if (options.enabled("triton_gemm_templates") and kernel_inputs.device_type == "cpu"
                and options.enabled("extern_gemm") and expert_applies(kernel_inputs, op_name)):
            chosen.append(expert_ktc(kernel_inputs))
        return chosen

    def uuid(self) -> Any:
        """Part of Inductor's graph cache key (T4 keeps the cache): the class and the switches."""
        return (type(self).__module__, type(self).__qualname__, 1, tuple(sorted(options.activate_current().items())))

    def get_template_configs(self, kernel_inputs: Any, templates: list, op_name: str,
                             kwarg_overrides: dict | None = None) -> list:
        choices = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
        if not (options.enabled("triton_gemm_templates") and kernel_inputs.device_type == "cpu"):
            return choices
        return simulate_benchmarks(on_chip(choices))


def install() -> None:
    """GemmTemplateChoices as Inductor's choices handler where none of ours is (T4's plain
    Inductor path, study/opinfo.py), and the switch's Inductor config."""
    import torch._inductor.config as ic
    from torch._inductor.virtualized import V
    nd_tiling = ic.triton.prefer_nd_tiling
    options.activate_current()
    ic.triton.prefer_nd_tiling = nd_tiling  # this switch's config only, not the other switches'
    options.apply_template_config(options.enabled("triton_gemm_templates"))
    if not (isinstance(ic.inductor_choices_class, type) and issubclass(ic.inductor_choices_class, GemmTemplateChoices)):
        ic.inductor_choices_class = GemmTemplateChoices
    if not isinstance(V.choices, GemmTemplateChoices):
        V.set_choices_handler(ic.inductor_choices_class())


