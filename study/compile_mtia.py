"""`compile_for_mtia`: a model through Inductor onto the simulated MTIA, with a per-kernel report.

    from study import compile_for_mtia
    compiled, report = compile_for_mtia(model, x, mask)
    print(report.report())          # one line per kernel, then host fallbacks
    y = compiled(x, mask)           # later calls run the same compiled graph

The model is compiled with `torch._inductor.config.cpu_backend = "triton"` (study/inductor.py
configures it and the chip-aware switches of backend/inductor_cpu/options.py), run once to
compile (Inductor's benchmarking of configs is not recorded), then run once more on the example
inputs; that run is the report:

- one `KernelRow` per simulated launch: kernel name, the aten ops Inductor fused into it (read
  from the generated module's "Original ATen" comments), grid, simulated cycles and time, and the
  busy cycles of each engine (DMA_IN, DMA_OUT, DPE, SIMD, SFU, RE, ...) from the launch record;
- one `HostOpRow` per aten op that did work on the host (Inductor's extern kernels and
  fallbacks, ops run eagerly after a graph break) with its host wall time. These have no
  simulated time: the report keeps them apart and never adds them to the chip time.

`options` (keyword arguments) override the switches for this compile, e.g.
`compile_for_mtia(m, x, split_reductions=False)`; see backend/inductor_cpu/options.py.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from study.inductor import configure, warm_up


@dataclass
class KernelRow:
    name: str
    aten_ops: list[str]
    grid: tuple[int, int, int]
    cycles: int
    time_us: float
    engine_busy: dict[str, int]


@dataclass
class HostOpRow:
    name: str
    host_s: float


@dataclass
class MTIAReport:
    chip: str
    kernels: list[KernelRow] = field(default_factory=list)
    host_ops: list[HostOpRow] = field(default_factory=list)
    extern_calls: list[str] = field(default_factory=list)  # extern_kernels.* in the generated code
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def chip_time_us(self) -> float:
        """Simulated time of the kernels; host fallbacks are not in it."""
        return sum(k.time_us for k in self.kernels)

    @property
    def host_s(self) -> float:
        return sum(h.host_s for h in self.host_ops)

    @property
    def all_on_chip(self) -> bool:
        return not self.host_ops

    def report(self) -> str:
        lines = [f"MTIA report ({self.chip}; switches {self.options}): {len(self.kernels)} simulated kernels, "
                 f"{self.chip_time_us:.2f} us simulated; {len(self.host_ops)} host ops, "
                 f"{self.host_s * 1e3:.2f} ms host wall (not chip time)"]
        lines.append(f"{'kernel':58} {'grid':>14} {'us':>10}  busy cycles by engine  <- aten ops")
        for k in self.kernels:
            busy = " ".join(f"{e}={c}" for e, c in k.engine_busy.items() if c)
            lines.append(f"{k.name[:58]:58} {str(k.grid):>14} {k.time_us:10.2f}  {busy}  <- {', '.join(k.aten_ops)}")
        if self.host_ops:
            lines.append("host fallbacks (aten on the host, no simulated time):")
            for h in self.host_ops:
                lines.append(f"  {h.name:40} {h.host_s * 1e6:10.1f} us host wall")
        return "\n".join(lines)


# programs launched by backend/inductor_cpu/extern.py's custom ops, by name prefix
_EXTERN_OPS = {"expert_gemm": ["mtia_sim.gemm <- aten.mm/addmm/bmm"],
               "flash_attn": ["mtia_sim.sdpa <- aten._scaled_dot_product_flash_attention_for_cpu"],
               "embedding_bag": ["mtia_sim.embedding_bag <- aten._embedding_bag"]}
_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)'", re.M)
_ATEN = re.compile(r"Original ATen: \[([^\]]*)\]")
_EXTERN = re.compile(r"extern_kernels\.(\w+)\(")


def kernel_aten_ops(codes: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Kernel name -> the aten ops Inductor fused into it; and the extern kernel calls."""
    ops: dict[str, list[str]] = {}
    externs: list[str] = []
    for code in codes:
        for m in _KERNEL_DEF.finditer(code):
            # the "Original ATen" comment is in the block just above the definition
            head = code[max(0, code.rfind("\n\n", 0, m.start())):m.start()]
            a = _ATEN.search(head)
            ops[m.group(2)] = [s.strip() for s in a.group(1).split(",")] if a else []
        externs += _EXTERN.findall(code)
    return ops, externs


class _HostTimer:
    """A dispatch mode timing every aten op that runs on the host outside a simulated launch."""

    def __init__(self) -> None:
        self.rows: list[HostOpRow] = []

    def __enter__(self) -> "_HostTimer":
        from torch.utils._python_dispatch import TorchDispatchMode

        import backend.driver as drv
        from study.model_coverage import NOT_WORK
        rows, state = self.rows, {"in_sim": 0}

        class _Mode(TorchDispatchMode):
            @classmethod
            def ignore_compile_internals(cls) -> bool:
                return True

            def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
                t0 = time.perf_counter()
                out = func(*args, **(kwargs or {}))
                name = func.overloadpacket.__name__
                on_chip = state["in_sim"] or getattr(func, "namespace", "") == "mtia_sim"
                if not on_chip and name not in NOT_WORK and not name.startswith("sym_"):
                    rows.append(HostOpRow(name, time.perf_counter() - t0))
                return out

        self._real = drv.launch

        def launch(program: Any, grid: Any, args: Any) -> Any:
            state["in_sim"] += 1
            try:
                return self._real(program, grid, args)
            finally:
                state["in_sim"] -= 1

        drv.launch = launch
        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        import backend.driver as drv
        self._mode.__exit__(*exc)
        drv.launch = self._real


def compile_for_mtia(model: Callable, *example_inputs: Any, **options: Any) -> tuple[Callable, MTIAReport]:
    """Compile `model` with Inductor for the simulated MTIA and report one run on
    `example_inputs`. `options` override backend/inductor_cpu/options.py switches."""
    from torch._inductor.utils import run_and_get_code

    import backend.driver as drv
    from backend.inductor_cpu import options as opts
    configure()
    active = opts.activate(**options)
    compiled = torch.compile(model, backend="inductor", fullgraph=False, dynamic=False)
    _, codes = warm_up(lambda *a: run_and_get_code(compiled, *a), example_inputs, {})
    names, externs = kernel_aten_ops(codes)
    rep = MTIAReport(drv.DEVICE.chip, extern_calls=externs, options=active)
    with torch.no_grad(), drv.record_launches() as recs, _HostTimer() as host, drv.shared_llc():
        compiled(*example_inputs)
    for r in recs:
        busy = dict(getattr(r.timing, "engine_busy", None) or {})
        ops = names.get(r.name) or _EXTERN_OPS.get(r.name.split("_")[0] + "_" + r.name.split("_")[1], [])
        rep.kernels.append(KernelRow(r.name, ops, tuple(r.grid), r.cycles, r.time_us, busy))
    rep.host_ops = host.rows
    return compiled, rep
