"""Tiny workloads the study tests register themselves, independent of study/workloads/."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from study.registry import Shape, Workload, itemsize


@triton.jit
def scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + tl.load(y_ptr + offs, mask=m), mask=m)


def _launch(x: torch.Tensor, y: torch.Tensor, block: int) -> torch.Tensor:
    out = torch.empty_like(x)
    scale_add_kernel[(triton.cdiv(x.numel(), block),)](x, y, out, x.numel(), 2.0, BLOCK=block)
    return out


def make_workloads(sizes: tuple[int, ...] = (2048,)) -> dict[str, Workload]:
    """`tiny_axpy`: out = 2x + y, with a triton impl, an 'expert' (a wider block) and one
    implementation that is wrong on purpose only when asked (see `broken`)."""
    shapes = [Shape(f"n{n}", {"n": n}, tags={"test", "study"}) for n in sizes]
    w = Workload("tiny_axpy", "elementwise", ["f32"], shapes,
                 flops=lambda p, dt: 2 * p["n"], bytes=lambda p, dt: 3 * p["n"] * itemsize(dt))

    @w.inputs
    def _(p: dict, dt: str, gen: torch.Generator) -> dict:
        return {"x": torch.randn(p["n"], generator=gen), "y": torch.randn(p["n"], generator=gen)}

    w.impls["torch"] = lambda x, y: 2.0 * x + y
    w.impls["triton"] = lambda x, y: _launch(x, y, 256)
    w.impls["expert"] = lambda x, y: _launch(x, y, 1024)
    w.source["triton"] = scale_add_kernel
    return {w.name: w}


def broken(workloads: dict[str, Workload]) -> dict[str, Workload]:
    """The same workloads with the triton impl returning a wrong answer."""
    w = workloads["tiny_axpy"]
    w.impls["triton"] = lambda x, y: _launch(x, y, 256) + 1.0
    return workloads
