"""Workload registry: each workload declares its shapes, dtypes, cost and implementations.

In the spirit of tritonbench: a workload is declared once; implementations register with a
decorator; inputs are produced by the workload; FLOPs and minimum bytes moved are declared by
the workload, so throughput and roofline fractions are computed centrally by the runner.

    add = workload("add", family="elementwise", dtypes=["f32", "bf16"],
                   shapes=[Shape("s", {"n": 4096}, tags={"test"}),
                           Shape("l", {"n": 1 << 24}, tags={"study"})],
                   flops=lambda p, dt: p["n"], bytes=lambda p, dt: 3 * p["n"] * itemsize(dt))

    @add.inputs
    def _(p, dt, gen): return {"x": randn(p["n"], dt, gen), "y": randn(p["n"], dt, gen)}

    @add.impl("torch")
    def _(x, y): return x + y

    @add.impl("triton", source=K.add_kernel)
    def _(x, y): ...launch the kernel from kernels/...; return out

    add.impl("expert", source=E.add_program)(E.add)   # baselines/expert/<family>.py

A workload declares all its implementations in its family's module, study/workloads/<family>.py,
whose kernels are kernels/<family>*.py and whose expert programs are baselines/expert/<family>*.py;
only `inductor`, derived from the torch reference, is added for every workload by load_all().
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

IMPLS = ("torch", "triton", "triton_ext", "expert", "inductor")
TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "i8": torch.int8,
                "i32": torch.int32, "i64": torch.int64}


@dataclass(frozen=True)
class Shape:
    name: str
    params: dict
    tags: frozenset = frozenset()

    def __init__(self, name: str, params: dict, tags: set | frozenset = frozenset()):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", dict(params))
        object.__setattr__(self, "tags", frozenset(tags))

    @property
    def label(self) -> str:
        return "x".join(f"{k}{v}" for k, v in self.params.items()) if self.params else self.name


@dataclass
class Workload:
    name: str
    family: str
    dtypes: list[str]
    shapes: list[Shape]
    flops: Callable[[dict, str], int]
    bytes: Callable[[dict, str], int]
    make_inputs: Callable | None = None
    impls: dict[str, Callable] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)  # impl -> object whose lines are counted

    def inputs(self, fn: Callable) -> Callable:
        """Decorator: fn(params, dtype, generator) -> dict of named inputs."""
        self.make_inputs = fn
        return fn

    def impl(self, name: str, source: Any = None) -> Callable:
        """Decorator registering implementation `name` (one of IMPLS); `source` is the kernel
        or expert program builder whose lines the productivity table counts."""
        if name not in IMPLS:
            raise ValueError(f"workload '{self.name}': unknown implementation '{name}', expected one of {IMPLS}")

        def deco(fn: Callable) -> Callable:
            self.impls[name] = fn
            if source is not None:
                self.source[name] = source
            return fn
        return deco

    def make(self, shape: Shape, dtype: str, seed: int = 0) -> dict:
        if self.make_inputs is None:
            raise RuntimeError(f"workload '{self.name}' declares no inputs")
        gen = torch.Generator().manual_seed(seed)
        return self.make_inputs(shape.params, dtype, gen)

    def shapes_tagged(self, tag: str) -> list[Shape]:
        return [s for s in self.shapes if tag in s.tags]


WORKLOADS: dict[str, Workload] = {}


def workload(name: str, *, family: str, dtypes: list[str], shapes: list[Shape],
             flops: Callable[[dict, str], int], bytes: Callable[[dict, str], int]) -> Workload:
    if name in WORKLOADS:
        raise ValueError(f"workload '{name}' is registered twice")
    w = Workload(name, family, list(dtypes), list(shapes), flops, bytes)
    WORKLOADS[name] = w
    return w


def itemsize(dtype: str) -> int:
    return torch.empty(0, dtype=TORCH_DTYPES[dtype]).element_size()


def load_all() -> dict[str, Workload]:
    """Import every study/workloads module (one per op family) so its workloads register with
    the implementations they declare (torch, triton, triton_ext, expert), then add `inductor`
    to every workload with a torch reference."""
    import importlib
    import pkgutil

    import study.workloads as pkg
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        importlib.import_module(f"study.workloads.{m.name}")
    # every workload's torch reference compiled by Inductor (study/inductor.py)
    from study.inductor import register_inductor
    register_inductor(WORKLOADS)
    return WORKLOADS
