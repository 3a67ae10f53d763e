"""Normalisation workloads (forward): row softmax, LayerNorm, RMSNorm.

Bytes: one read of x, one write of the output, one read of the per-column parameters.
"""
from __future__ import annotations

from baselines import torch_ref
from baselines.expert import normalisation as E
from kernels import normalisation as K
from kernels import normalisation_ext as KX
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import randn

DTYPES = ["f32", "bf16"]


def _shapes(study: list[tuple[str, int, int]]) -> list[Shape]:
    return ([Shape("s", {"m": 64, "n": 256}, tags={"test"}),
             Shape("ragged", {"m": 37, "n": 1000}, tags={"test"})]
            + [Shape(name, {"m": m, "n": n}, tags={"study"}) for name, m, n in study])


softmax = workload(
    "softmax", family="normalisation", dtypes=DTYPES,
    shapes=_shapes([("4k", 4096, 4096), ("scores_2k", 32768, 2048), ("wide", 1024, 16384)]),
    flops=lambda p, dt: 5 * p["m"] * p["n"], bytes=lambda p, dt: 2 * p["m"] * p["n"] * itemsize(dt))


@softmax.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], p["n"]), dt, gen, scale=3.0)}


softmax.impl("torch")(torch_ref.softmax)


@softmax.impl("triton", source=K.softmax_kernel)
def _(x):
    return K.softmax(x)


softmax.impl("expert", source=E.norm_program)(E.softmax)


_TOKENS = [("llm_4k", 4096, 4096), ("llm_16k_tokens", 16384, 4096), ("llm_8k_hidden", 4096, 8192)]

layernorm = workload(
    "layernorm", family="normalisation", dtypes=DTYPES, shapes=_shapes(_TOKENS),
    flops=lambda p, dt: 8 * p["m"] * p["n"],
    bytes=lambda p, dt: (2 * p["m"] * p["n"] + 2 * p["n"]) * itemsize(dt))


@layernorm.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], p["n"]), dt, gen), "weight": randn(p["n"], dt, gen),
            "bias": randn(p["n"], dt, gen)}


layernorm.impl("torch")(torch_ref.layernorm)


@layernorm.impl("triton", source=K.layernorm_fwd_kernel)
def _(x, weight, bias):
    return K.layernorm(x, weight, bias)


@layernorm.impl("triton_ext", source=KX.layernorm_ext_kernel)
def _(x, weight, bias):
    return KX.layernorm(x, weight, bias)


layernorm.impl("expert", source=E.norm_program)(E.layernorm)


rmsnorm = workload(
    "rmsnorm", family="normalisation", dtypes=DTYPES, shapes=_shapes(_TOKENS),
    flops=lambda p, dt: 4 * p["m"] * p["n"],
    bytes=lambda p, dt: (2 * p["m"] * p["n"] + p["n"]) * itemsize(dt))


@rmsnorm.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], p["n"]), dt, gen), "weight": randn(p["n"], dt, gen)}


rmsnorm.impl("torch")(torch_ref.rmsnorm)


@rmsnorm.impl("triton", source=K.rmsnorm_fwd_kernel)
def _(x, weight):
    return K.rmsnorm(x, weight)


rmsnorm.impl("expert", source=E.norm_program)(E.rmsnorm)
