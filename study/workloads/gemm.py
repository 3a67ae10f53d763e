"""GEMM workloads: BF16 GEMM (square sweep 256..4096 and LLM production shapes), GEMM with a
fused bias + GELU epilogue, INT8 GEMM (int32 accumulation), batched GEMM.

Bytes: A and B read once, C written once (the minimum for a kernel with perfect on-chip reuse).
"""
from __future__ import annotations

import torch

from baselines import torch_model, torch_ref
from baselines.expert import gemm as E
from kernels import gemm as K
from kernels import gemm_ext as KX
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import randint, randn

_TEST = [Shape("s", {"m": 64, "n": 64, "k": 64}, tags={"test"}),
         Shape("ragged", {"m": 100, "n": 72, "k": 90}, tags={"test"})]
_SQUARE = [Shape(f"sq{n}", {"m": n, "n": n, "k": n}, tags={"study", "sweep"}) for n in (256, 512, 1024, 2048, 4096)]
# LLM inference: prefill of 2048 tokens through a 4096 projection; a 512-token chunk, also through Llama-3-8B's FFN up projection
# (the 2048-token FFN up, 2048x14336x4096, simulates in ~40 s of host time: left out)
_PRODUCTION = [Shape("prefill_2k", {"m": 2048, "n": 4096, "k": 4096}, tags={"study"}),
               Shape("chunk_512", {"m": 512, "n": 4096, "k": 4096}, tags={"study"}),
               Shape("ffn_up_512", {"m": 512, "n": 14336, "k": 4096}, tags={"study"})]


def _mnk(p: dict) -> int:
    return p["m"] * p["n"] * p["k"]


def _gemm_bytes(p: dict, in_size: int, out_size: int) -> int:
    return (p["m"] * p["k"] + p["k"] * p["n"]) * in_size + p["m"] * p["n"] * out_size


matmul = workload("matmul", family="gemm", dtypes=["bf16"], shapes=_TEST + _SQUARE + _PRODUCTION,
                  flops=lambda p, dt: 2 * _mnk(p), bytes=lambda p, dt: _gemm_bytes(p, itemsize(dt), itemsize(dt)))


def _ab(p: dict, dt: str, gen) -> dict:
    # scaled so outputs stay O(1) whatever K is
    s = p["k"] ** -0.25
    return {"a": randn((p["m"], p["k"]), dt, gen, scale=s), "b": randn((p["k"], p["n"]), dt, gen, scale=s)}


matmul.inputs(_ab)
matmul.impl("torch")(torch_ref.matmul)
matmul.model = torch_model.matmul


@matmul.impl("triton", source=K.matmul_kernel)
def _(a, b):
    return K.matmul(a, b)


@matmul.impl("triton_ext", source=KX.matmul_kernel_mtia)
def _(a, b):
    return KX.matmul(a, b)


matmul.impl("expert", source=E.gemm_program)(E.matmul)


matmul_autotuned = workload(
    "matmul_autotuned", family="gemm", dtypes=["bf16"],
    shapes=_TEST + [Shape("sq1024", {"m": 1024, "n": 1024, "k": 1024}, tags={"study"})],
    flops=lambda p, dt: 2 * _mnk(p), bytes=lambda p, dt: _gemm_bytes(p, itemsize(dt), itemsize(dt)))
matmul_autotuned.inputs(_ab)
matmul_autotuned.impl("torch")(torch_ref.matmul)
matmul_autotuned.model = torch_model.matmul


@matmul_autotuned.impl("triton", source=K.matmul_kernel_tuned)
def _(a, b):
    return K.matmul_autotuned(a, b)


matmul_bias_gelu = workload(
    "matmul_bias_gelu", family="gemm", dtypes=["bf16"], shapes=_TEST + _PRODUCTION[:2],
    flops=lambda p, dt: 2 * _mnk(p) + 9 * p["m"] * p["n"],
    bytes=lambda p, dt: _gemm_bytes(p, itemsize(dt), itemsize(dt)) + p["n"] * itemsize(dt))


@matmul_bias_gelu.inputs
def _(p, dt, gen):
    return {**_ab(p, dt, gen), "bias": randn(p["n"], dt, gen)}


matmul_bias_gelu.impl("torch")(torch_ref.matmul_bias_gelu)
matmul_bias_gelu.model = torch_model.matmul_bias_gelu


@matmul_bias_gelu.impl("triton", source=K.matmul_kernel)
def _(a, b, bias):
    return K.matmul_bias_gelu(a, b, bias)


matmul_bias_gelu.impl("expert", source=E.gemm_program)(E.matmul_bias_gelu)


int8_matmul = workload(
    "int8_matmul", family="gemm", dtypes=["i8"],
    shapes=_TEST + [Shape(f"sq{n}", {"m": n, "n": n, "k": n}, tags={"study"}) for n in (1024, 2048, 4096)]
    + _PRODUCTION[:2],
    flops=lambda p, dt: 2 * _mnk(p), bytes=lambda p, dt: _gemm_bytes(p, 1, 4))


@int8_matmul.inputs
def _(p, dt, gen):
    return {"a": randint(-128, 128, (p["m"], p["k"]), gen, dtype=torch.int8),
            "b": randint(-128, 128, (p["k"], p["n"]), gen, dtype=torch.int8)}


int8_matmul.impl("torch")(torch_ref.int8_matmul)


@int8_matmul.impl("triton", source=K.int8_matmul_kernel)
def _(a, b):
    return K.int8_matmul(a, b)


int8_matmul.impl("expert", source=E.gemm_program)(E.int8_matmul)


bmm = workload(
    "bmm", family="gemm", dtypes=["bf16"],
    shapes=[Shape("s", {"batch": 3, "m": 64, "n": 48, "k": 32}, tags={"test"}),
            Shape("ragged", {"batch": 2, "m": 50, "n": 70, "k": 40}, tags={"test"}),
            # attention-score-like (32 heads, 512 tokens, head_dim 128) and its PV product
            Shape("scores_512", {"batch": 32, "m": 512, "n": 512, "k": 128}, tags={"study"}),
            Shape("pv_512", {"batch": 32, "m": 512, "n": 128, "k": 512}, tags={"study"}),
            Shape("b8_1k", {"batch": 8, "m": 1024, "n": 1024, "k": 1024}, tags={"study"})],
    flops=lambda p, dt: 2 * p["batch"] * _mnk(p),
    bytes=lambda p, dt: p["batch"] * _gemm_bytes(p, itemsize(dt), itemsize(dt)))


@bmm.inputs
def _(p, dt, gen):
    s = p["k"] ** -0.25
    return {"a": randn((p["batch"], p["m"], p["k"]), dt, gen, scale=s),
            "b": randn((p["batch"], p["k"], p["n"]), dt, gen, scale=s)}


bmm.impl("torch")(torch_ref.bmm)
bmm.model = torch_model.bmm


@bmm.impl("triton", source=K.bmm_kernel)
def _(a, b):
    return K.bmm(a, b)


bmm.impl("expert", source=E.gemm_program)(E.bmm)
