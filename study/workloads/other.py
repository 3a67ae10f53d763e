"""Other workloads: cumsum of lengths into jagged offsets, rotary position embedding (RoPE)."""
from __future__ import annotations

import torch

from baselines import torch_ref
from baselines.expert import other as E
from kernels import other as K
from study.registry import TORCH_DTYPES, Shape, itemsize, workload
from study.workloads.tensors import randint, randn

jagged_offsets = workload(
    "jagged_offsets", family="other", dtypes=["i32", "i64"],
    shapes=[Shape("s", {"n": 512}, tags={"test"}),
            Shape("ragged", {"n": 3000}, tags={"test"}),
            Shape("dlrm_26x4k", {"n": 26 * 4096}, tags={"study"}),
            Shape("1M", {"n": 1 << 20}, tags={"study"})],
    flops=lambda p, dt: p["n"], bytes=lambda p, dt: (2 * p["n"] + 1) * itemsize(dt))


@jagged_offsets.inputs
def _(p, dt, gen):
    return {"lengths": randint(0, 100, p["n"], gen, dtype=TORCH_DTYPES[dt])}


jagged_offsets.impl("torch")(torch_ref.jagged_offsets)


@jagged_offsets.impl("triton", source=K.jagged_offsets_kernel)
def _(lengths):
    return K.jagged_offsets(lengths)


jagged_offsets.impl("expert", source=E.jagged_offsets_program)(E.jagged_offsets)


rope = workload(
    "rope", family="other", dtypes=["f32", "bf16"],
    shapes=[Shape("s", {"batch": 1, "seq": 16, "heads": 4, "head_dim": 64}, tags={"test"}),
            Shape("ragged", {"batch": 2, "seq": 7, "heads": 5, "head_dim": 32}, tags={"test"}),
            Shape("llm_b16_2k", {"batch": 16, "seq": 2048, "heads": 32, "head_dim": 128}, tags={"study"}),
            Shape("llm_b1_8k", {"batch": 1, "seq": 8192, "heads": 32, "head_dim": 128}, tags={"study"})],
    flops=lambda p, dt: 3 * p["batch"] * p["seq"] * p["heads"] * p["head_dim"],
    bytes=lambda p, dt: (2 * p["batch"] * p["seq"] * p["heads"] * p["head_dim"] * itemsize(dt)
                         + 2 * p["seq"] * (p["head_dim"] // 2) * 4))


@rope.inputs
def _(p, dt, gen):
    half = p["head_dim"] // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float32) / half))
    angles = torch.arange(p["seq"], dtype=torch.float32)[:, None] * inv_freq[None, :]
    return {"x": randn((p["batch"], p["seq"], p["heads"], p["head_dim"]), dt, gen),
            "cos": torch.cos(angles), "sin": torch.sin(angles)}


rope.impl("torch")(torch_ref.rope)


@rope.impl("triton", source=K.rope_kernel)
def _(x, cos, sin):
    return K.rope(x, cos, sin)


rope.impl("expert", source=E.rope_program)(E.rope)
