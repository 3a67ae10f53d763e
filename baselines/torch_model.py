"""What a PyTorch model contains for a workload, at the workload's dtype: what Inductor compiles.

The references of torch_ref.py are the numerical oracle: they upcast to fp32 and return fp32, so
that every implementation is compared with the most exact answer. Compiled as they are, they
would ask Inductor for an fp32 GEMM or attention where a model runs bf16 (an fp32 GEMM runs at
the chip's vector rate, not the DPE's), which no hand-written kernel of the study computes. A
workload whose reference differs from model code that way declares its model form here
(`Workload.model`, study/registry.py); the `inductor` implementation compiles it and its output
is checked against the reference at the dtype's tolerance, like the Triton kernels'. Workloads
without a model form compile their reference, its FP32 result cast to the inputs' 16-bit dtype
where they have one (study.inductor.at_input_dtype: the hand-written kernels write that dtype;
with FP32 inputs the two are the same).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return F.gelu(a @ b + bias, approximate="tanh")


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.bmm(a, b)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q[:, :, None, :], k, v)[:, :, 0, :]


def dot_interaction(x: torch.Tensor) -> torch.Tensor:
    """DLRM's feature interaction at the features' dtype: the pairwise dot products as one bmm
    in that dtype (a bf16 model's GEMM, on the DPE), where the reference upcasts to FP32 first
    (an FP32 GEMM at the vector rate that no hand-written kernel of the study computes)."""
    f = x.shape[1]
    z = torch.bmm(x, x.transpose(1, 2))
    i, j = torch.tril_indices(f, f, offset=-1)
    return torch.cat([x[:, 0, :], z[:, i, j]], dim=1)


def jagged_offsets(lengths: torch.Tensor) -> torch.Tensor:
    """The reference's exclusive cumsum written without an in-place slice store (which Inductor
    leaves to aten as a host `zero_` of the output)."""
    return torch.cat([lengths.new_zeros(1), torch.cumsum(lengths, dim=0).to(lengths.dtype)])


def embedding_bag(weights: torch.Tensor, table_offsets: torch.Tensor, indices: torch.Tensor,
                  offsets: torch.Tensor, num_tables: int, mode: str = "sum") -> torch.Tensor:
    """The tables as one stacked table (a fused embedding-bag module): each index is moved to its
    table's rows, all bags pooled by one embedding_bag, the output laid out [batch, tables * dim].
    The reference's per-table loop slices by values read from `offsets`, which Inductor leaves
    to aten on the host."""
    B = (offsets.numel() - 1) // num_tables
    starts = offsets[:-1].view(num_tables, B)[:, 0].contiguous()
    pos = torch.arange(indices.numel(), dtype=starts.dtype)
    table = torch.bucketize(pos, starts, right=True) - 1
    idx = indices.long() + table_offsets.long()[table]
    pooled = F.embedding_bag(idx, weights, offsets.long(), mode=mode, include_last_offset=True)
    return pooled.view(num_tables, B, -1).transpose(0, 1).reshape(B, -1)
