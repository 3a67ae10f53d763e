"""Attention workloads: flash-attention forward (prefill, causal and not) and decode attention.

Prefill FLOPs: QK^T and PV, 4 * B * H * S^2 * D, halved (to the S(S+1)/2 visible pairs) when
causal. Bytes: q, k, v read once and o written once. Decode: 4 * B * H * L * D FLOPs and
bytes dominated by one read of the KV cache.
"""
from __future__ import annotations

from baselines import torch_ref
from baselines.expert import attention as E
from kernels import attention as K
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import randn

DTYPES = ["bf16"]


def _declare_prefill(name: str, causal: bool, study: list[Shape]) -> None:
    def pairs(p: dict) -> int:
        s = p["seq"]
        return s * (s + 1) // 2 if causal else s * s

    w = workload(name, family="attention", dtypes=DTYPES,
                 shapes=[Shape("s", {"batch": 1, "heads": 2, "seq": 128, "head_dim": 64}, tags={"test"}),
                         Shape("ragged", {"batch": 2, "heads": 1, "seq": 100, "head_dim": 32}, tags={"test"}),
                         Shape("d128", {"batch": 1, "heads": 1, "seq": 192, "head_dim": 128}, tags={"test"})] + study,
                 flops=lambda p, dt: 4 * p["batch"] * p["heads"] * pairs(p) * p["head_dim"],
                 bytes=lambda p, dt: 4 * p["batch"] * p["heads"] * p["seq"] * p["head_dim"] * itemsize(dt))

    @w.inputs
    def _(p, dt, gen):
        shape = (p["batch"], p["heads"], p["seq"], p["head_dim"])
        return {"q": randn(shape, dt, gen), "k": randn(shape, dt, gen), "v": randn(shape, dt, gen)}

    @w.impl("torch")
    def _(q, k, v):
        return torch_ref.flash_attention(q, k, v, causal=causal)

    @w.impl("triton", source=K.flash_attn_fwd_kernel)
    def _(q, k, v):
        return K.flash_attention(q, k, v, causal=causal)

    @w.impl("expert", source=E.flash_program)
    def _(q, k, v):
        return E.flash_attention(q, k, v, causal=causal)


# The study's decoder block is batch 16 x seq 2048 x 32 heads x 128. Simulating one full
# sequence of it (32 heads x 2048) takes ~55 s of host time non-causal and ~22 s causal, so the
# non-causal shapes keep the per-head work and use fewer heads or a shorter sequence.
_H32_1K = Shape("llm_h32_1k", {"batch": 1, "heads": 32, "seq": 1024, "head_dim": 128}, tags={"study"})
_H8_2K = Shape("llm_h8_2k", {"batch": 1, "heads": 8, "seq": 2048, "head_dim": 128}, tags={"study"})
_declare_prefill("flash_attention", False, [_H32_1K, _H8_2K])
_declare_prefill("flash_attention_causal", True, [
    _H32_1K, _H8_2K,
    Shape("llm_h32_2k", {"batch": 1, "heads": 32, "seq": 2048, "head_dim": 128}, tags={"study"}),
    Shape("llm_h4_4k", {"batch": 1, "heads": 4, "seq": 4096, "head_dim": 128}, tags={"study"})])

decode_attention = workload(
    "decode_attention", family="attention", dtypes=DTYPES,
    shapes=[Shape("s", {"batch": 2, "heads": 2, "kv_len": 1000, "head_dim": 64}, tags={"test"}),
            Shape("short", {"batch": 1, "heads": 4, "kv_len": 100, "head_dim": 128}, tags={"test"}),
            Shape("b8_8k", {"batch": 8, "heads": 32, "kv_len": 8192, "head_dim": 128}, tags={"study"}),
            Shape("b1_32k", {"batch": 1, "heads": 32, "kv_len": 32768, "head_dim": 128}, tags={"study"}),
            Shape("b32_2k", {"batch": 32, "heads": 32, "kv_len": 2048, "head_dim": 128}, tags={"study"})],
    flops=lambda p, dt: 4 * p["batch"] * p["heads"] * p["kv_len"] * p["head_dim"],
    bytes=lambda p, dt: 2 * p["batch"] * p["heads"] * (p["kv_len"] + 1) * p["head_dim"] * itemsize(dt))


@decode_attention.inputs
def _(p, dt, gen):
    b, h, l, d = p["batch"], p["heads"], p["kv_len"], p["head_dim"]
    return {"q": randn((b, h, d), dt, gen), "k": randn((b, h, l, d), dt, gen), "v": randn((b, h, l, d), dt, gen)}


decode_attention.impl("torch")(torch_ref.decode_attention)


@decode_attention.impl("triton", source=K.decode_attn_split_kernel)
def _(q, k, v):
    return K.decode_attention(q, k, v)


decode_attention.impl("expert", source=E.decode_program)(E.decode_attention)
