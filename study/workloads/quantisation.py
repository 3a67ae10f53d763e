"""Quantisation workloads: row-wise INT8 quantise / dequantise, MX4 (OCP MX FP4) block quantise /
dequantise. Quantised codes compare bit for bit with the reference (same fp32 arithmetic).
Bytes: the input read once, codes and scales written once (or the reverse)."""
from __future__ import annotations

from baselines import torch_ref
from baselines.expert import quantisation as E
from baselines.expert import quantisation_mx4 as EM
from kernels import quantisation as K
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import randn

_ROWS = [Shape("s", {"m": 16, "n": 256}, tags={"test"}),
         Shape("ragged", {"m": 9, "n": 1000}, tags={"test"}),
         Shape("4k", {"m": 4096, "n": 4096}, tags={"study"}),
         Shape("weights_14k", {"m": 14336, "n": 4096}, tags={"study"})]

quantize_int8 = workload(
    "quantize_int8_rowwise", family="quantisation", dtypes=["f32", "bf16"], shapes=_ROWS,
    flops=lambda p, dt: 4 * p["m"] * p["n"],
    bytes=lambda p, dt: p["m"] * p["n"] * (itemsize(dt) + 1) + 4 * p["m"])


@quantize_int8.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], p["n"]), dt, gen)}


quantize_int8.impl("torch")(torch_ref.quantize_int8_rowwise)


@quantize_int8.impl("triton", source=K.quantize_int8_rowwise_kernel)
def _(x):
    return K.quantize_int8_rowwise(x)


quantize_int8.impl("expert", source=E.quantize_int8_program)(E.quantize_int8_rowwise)


dequantize_int8 = workload(
    "dequantize_int8_rowwise", family="quantisation", dtypes=["f32"], shapes=_ROWS,
    flops=lambda p, dt: p["m"] * p["n"],
    bytes=lambda p, dt: p["m"] * p["n"] * (1 + itemsize(dt)) + 4 * p["m"])


@dequantize_int8.inputs
def _(p, dt, gen):
    q, scale = torch_ref.quantize_int8_rowwise(randn((p["m"], p["n"]), "f32", gen))
    return {"q": q, "scale": scale}


dequantize_int8.impl("torch")(torch_ref.dequantize_int8_rowwise)


@dequantize_int8.impl("triton", source=K.dequantize_int8_rowwise_kernel)
def _(q, scale):
    return K.dequantize_int8_rowwise(q, scale)


dequantize_int8.impl("expert", source=E.dequantize_int8_program)(E.dequantize_int8_rowwise)


_FLAT = [Shape("s", {"n": 2048}, tags={"test"}),
         Shape("ragged", {"n": 32 * 70}, tags={"test"}),
         Shape("4M", {"n": 1 << 22}, tags={"study"}),
         # a 4096 x 14336 weight (58M values) simulates in ~80 s of host time: 16M is the largest kept
         Shape("16M", {"n": 1 << 24}, tags={"study"})]

mx4_quantize = workload(
    "mx4_quantize", family="quantisation", dtypes=["f32", "bf16"], shapes=_FLAT,
    flops=lambda p, dt: 6 * p["n"],
    bytes=lambda p, dt: p["n"] * itemsize(dt) + p["n"] // 2 + p["n"] // 32)


@mx4_quantize.inputs
def _(p, dt, gen):
    return {"x": randn(p["n"], dt, gen)}


mx4_quantize.impl("torch")(torch_ref.mx4_quantize)


@mx4_quantize.impl("triton", source=K.mx4_quantize_kernel)
def _(x):
    return K.mx4_quantize(x)


mx4_quantize.impl("expert", source=EM.mx4_quantize_program)(EM.mx4_quantize)


mx4_dequantize = workload(
    "mx4_dequantize", family="quantisation", dtypes=["f32"], shapes=_FLAT,
    flops=lambda p, dt: 3 * p["n"],
    bytes=lambda p, dt: p["n"] // 2 + p["n"] // 32 + p["n"] * itemsize(dt))


@mx4_dequantize.inputs
def _(p, dt, gen):
    packed, exps = torch_ref.mx4_quantize(randn(p["n"], "f32", gen))
    return {"packed": packed, "exponents": exps}


mx4_dequantize.impl("torch")(torch_ref.mx4_dequantize)


@mx4_dequantize.impl("triton", source=K.mx4_dequantize_kernel)
def _(packed, exponents):
    return K.mx4_dequantize(packed, exponents)


mx4_dequantize.impl("expert", source=EM.mx4_dequantize_program)(EM.mx4_dequantize)
