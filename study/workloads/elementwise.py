"""Elementwise workloads: add, GELU (tanh and erf), SiLU-and-mul (SwiGLU), bias + GELU.

FLOPs count the formula's arithmetic with a transcendental as one operation; bytes are one
read of every input and one write of the output.
"""
from __future__ import annotations

from typing import Callable

from baselines import torch_ref
from baselines.expert import elementwise as E
from kernels import elementwise as K
from kernels import elementwise_ext as KX
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import randn

DTYPES = ["f32", "bf16"]
_N_SHAPES = [Shape("s", {"n": 4096}, tags={"test"}),
             Shape("ragged", {"n": 3000}, tags={"test"}),
             Shape("16M", {"n": 1 << 24}, tags={"study"}),
             Shape("64M", {"n": 1 << 26}, tags={"study"})]

add = workload("add", family="elementwise", dtypes=DTYPES, shapes=_N_SHAPES,
               flops=lambda p, dt: p["n"], bytes=lambda p, dt: 3 * p["n"] * itemsize(dt))


@add.inputs
def _(p, dt, gen):
    return {"x": randn(p["n"], dt, gen), "y": randn(p["n"], dt, gen)}


add.impl("torch")(torch_ref.add)


@add.impl("triton", source=K.add_kernel)
def _(x, y):
    return K.add(x, y)


@add.impl("triton_ext", source=KX.add_ext_kernel)
def _(x, y):
    return KX.add(x, y)


add.impl("expert", source=E.add_program)(E.add)


def _declare_gelu(name: str, approximate: str, flops_per_elem: int, expert: Callable) -> None:
    w = workload(name, family="elementwise", dtypes=DTYPES, shapes=_N_SHAPES[:3],
                 flops=lambda p, dt: flops_per_elem * p["n"], bytes=lambda p, dt: 2 * p["n"] * itemsize(dt))

    @w.inputs
    def _(p, dt, gen):
        return {"x": randn(p["n"], dt, gen, scale=2.0)}

    @w.impl("torch")
    def _(x):
        return torch_ref.gelu(x, approximate)

    @w.impl("triton", source=K.gelu_kernel)
    def _(x):
        return K.gelu(x, approximate)

    w.impl("expert", source=E.act_program)(expert)


_declare_gelu("gelu_tanh", "tanh", 8, E.gelu_tanh)
_declare_gelu("gelu_erf", "none", 5, E.gelu_erf)

silu_mul = workload(
    "silu_mul", family="elementwise", dtypes=DTYPES,
    shapes=[Shape("s", {"m": 16, "h": 512}, tags={"test"}),
            Shape("ragged", {"m": 7, "h": 1000}, tags={"test"}),
            Shape("llama8b_2k", {"m": 2048, "h": 14336}, tags={"study"}),
            Shape("llm_4k", {"m": 4096, "h": 4096}, tags={"study"})],
    flops=lambda p, dt: 5 * p["m"] * p["h"], bytes=lambda p, dt: 3 * p["m"] * p["h"] * itemsize(dt))


@silu_mul.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], 2 * p["h"]), dt, gen)}


silu_mul.impl("torch")(torch_ref.silu_mul)


@silu_mul.impl("triton", source=K.silu_mul_kernel)
def _(x):
    return K.silu_mul(x)


silu_mul.impl("expert", source=E.act_program)(E.silu_mul)


bias_gelu = workload(
    "bias_gelu", family="elementwise", dtypes=DTYPES,
    shapes=[Shape("s", {"m": 32, "n": 256}, tags={"test"}),
            Shape("ragged", {"m": 33, "n": 300}, tags={"test"}),
            Shape("4k", {"m": 4096, "n": 4096}, tags={"study"}),
            Shape("ffn", {"m": 2048, "n": 16384}, tags={"study"})],
    flops=lambda p, dt: 9 * p["m"] * p["n"],
    bytes=lambda p, dt: (2 * p["m"] * p["n"] + p["n"]) * itemsize(dt))


@bias_gelu.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], p["n"]), dt, gen), "bias": randn(p["n"], dt, gen)}


@bias_gelu.impl("torch")
def _(x, bias):
    return torch_ref.bias_act(x, bias, "gelu_tanh")


@bias_gelu.impl("triton", source=K.bias_act_kernel)
def _(x, bias):
    return K.bias_act(x, bias, "gelu_tanh")


bias_gelu.impl("expert", source=E.bias_act_program)(E.bias_gelu)
