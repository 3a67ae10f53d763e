"""Study F6: the torch side of the H200 comparison, on the device: what each workload's torch_gpu
row times (study/gpu_measure.py) and the fp32 references its rows are checked against.

GPU_TORCH holds the vendor op where one exists (cuBLAS for GEMMs, torch._int_mm for INT8, SDPA for
attention) and aten ops elsewhere; a workload without an entry times its fp32 reference ops;
those in COMPILE are also timed torch.compile'd. Stock torch only: nothing of this project's
backend is imported (the GPU machine does not install it).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from study.registry import Workload


def _segment_ids(offsets: torch.Tensor, total: int) -> torch.Tensor:
    lengths = offsets[1:] - offsets[:-1]
    return torch.repeat_interleave(torch.arange(lengths.numel(), device=offsets.device), lengths,
                                   output_size=total)


def _embedding_bag(mode: str) -> Callable:
    def fn(weights, table_offsets, indices, offsets, num_tables):
        # FBGEMM's TBE is not in stock torch: one F.embedding_bag over every table's bags at
        # once (indices shifted into the stacked weights on the device; no host sync, no loop)
        n_bags = offsets.numel() - 1
        B = n_bags // num_tables
        lengths = offsets[1:] - offsets[:-1]
        table = torch.arange(num_tables, device=indices.device).repeat_interleave(B)
        shift = torch.repeat_interleave(table_offsets.to(indices.device)[table], lengths,
                                        output_size=indices.numel())
        out = F.embedding_bag(indices.long() + shift, weights, offsets[:-1].long(), mode=mode)
        return out.view(num_tables, B, -1).transpose(0, 1).reshape(B, -1)
    return fn


def _jagged_to_padded_dense(values, offsets, max_len):
    return torch.ops.aten._jagged_to_padded_dense_forward(values, [offsets], [max_len], 0.0)


def _jagged_sum(values, offsets):
    # fp32 accumulation, as the kernel does (a bf16 segment sum loses whole digits)
    return torch.segment_reduce(values.float(), "sum", offsets=offsets, axis=0, unsafe=True).to(values.dtype)


def _jagged_softmax(values, offsets):
    # softmax over each sequence's rows, per column: segment max, exp, segment sum
    seg = _segment_ids(offsets, values.shape[0])
    v = values.float()
    mx = torch.segment_reduce(v, "max", offsets=offsets, axis=0, unsafe=True)
    e = torch.exp(v - mx[seg])
    s = torch.segment_reduce(e, "sum", offsets=offsets, axis=0, unsafe=True)
    return (e / s[seg]).to(values.dtype)


_TRIL: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def _dot_interaction(x):
    B, Fn, D = x.shape
    key = (Fn, x.device)
    if key not in _TRIL:
        _TRIL[key] = tuple(torch.tril_indices(Fn, Fn, offset=-1, device=x.device))
    i, j = _TRIL[key]
    z = torch.bmm(x, x.transpose(1, 2))
    return torch.cat([x[:, 0, :], z[:, i, j]], dim=1)


def _int_mm_ok(a, b) -> bool:
    # torch._int_mm (cuBLASLt INT8) needs m > 16 and k, n multiples of 8
    return a.shape[0] > 16 and a.shape[1] % 8 == 0 and b.shape[1] % 8 == 0


def _int8_matmul(a, b):
    if _int_mm_ok(a, b):
        return torch._int_mm(a, b)  # cuBLASLt INT8 GEMM, int32 out
    return (a.float() @ b.float()).to(torch.int32)  # exact here: |sum| < 2**24 for these small K


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def _jagged_offsets(lengths):
    out = torch.zeros(lengths.numel() + 1, dtype=lengths.dtype, device=lengths.device)
    out[1:] = torch.cumsum(lengths, dim=0)
    return out


GPU_TORCH: dict[str, Callable] = {
    "add": lambda x, y: x + y,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_erf": lambda x: F.gelu(x),
    "silu_mul": lambda x: (lambda g, u: F.silu(g) * u)(*x.chunk(2, dim=-1)),
    "bias_gelu": lambda x, bias: F.gelu(x + bias, approximate="tanh"),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "layernorm": lambda x, weight, bias: F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5),
    "rmsnorm": lambda x, weight: F.rms_norm(x, (x.shape[-1],), weight, 1e-6),
    "matmul": lambda a, b: a @ b,
    "matmul_bias_gelu": lambda a, b, bias: F.gelu(torch.addmm(bias, a, b), approximate="tanh"),
    "int8_matmul": _int8_matmul,
    "bmm": lambda a, b: torch.bmm(a, b),
    "flash_attention": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    "flash_attention_causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "decode_attention": lambda q, k, v: F.scaled_dot_product_attention(q[:, :, None, :], k, v)[:, :, 0, :],
    "embedding_bag_sum": _embedding_bag("sum"),
    "embedding_bag_mean": _embedding_bag("mean"),
    "jagged_to_padded_dense": _jagged_to_padded_dense,
    "jagged_sum": _jagged_sum,
    "jagged_softmax": _jagged_softmax,
    "dot_interaction": _dot_interaction,
    "transpose": lambda x: x.t().contiguous(),
    "index_select": lambda x, index: x.index_select(0, index),
    "concat": lambda tensors: torch.cat(tensors, dim=1),
    "jagged_offsets": _jagged_offsets,
    "rope": _rope,
    "matmul_autotuned": lambda a, b: a @ b,
    # quantisation: the references are plain fp32 torch ops that run on cuda as they are; their
    # torch.compile'd version (COMPILE) is the strong path
}

# Workloads whose eager torch path is a chain of ops (or the fp32 reference): torch.compile'd
# (inductor, mode "default", static shapes, warm) is timed beside eager, and the faster correct
# one is the torch_gpu row (its notes say which, with both times).
COMPILE = frozenset({"quantize_int8_rowwise", "dequantize_int8_rowwise", "mx4_quantize", "mx4_dequantize",
                     "jagged_sum", "jagged_softmax", "rope", "silu_mul", "bias_gelu", "dot_interaction",
                     "matmul_bias_gelu"})


def torch_paths(w: Workload) -> list[tuple[str, Callable]]:
    """The torch candidates of a workload, (label, fn): eager first, then torch.compile'd."""
    if w.name in GPU_TORCH:
        eager = ("eager " + TORCH_PATH_NAMES.get(w.name, "aten ops, input dtype"), GPU_TORCH[w.name])
    else:
        eager = ("eager fp32 reference ops", w.impls["torch"])
    out = [eager]
    if w.name in COMPILE:
        out.append(("torch.compile(default) of the eager path", torch.compile(eager[1], dynamic=False)))
    return out


TORCH_PATH_NAMES = {
    "matmul": "cuBLAS (torch.matmul)", "matmul_autotuned": "cuBLAS (torch.matmul)", "bmm": "cuBLAS (torch.bmm)",
    "matmul_bias_gelu": "cuBLAS addmm + gelu", "int8_matmul": "cuBLASLt INT8 (torch._int_mm)",
    "flash_attention": "SDPA", "flash_attention_causal": "SDPA", "decode_attention": "SDPA",
    "embedding_bag_sum": "F.embedding_bag over all tables, no host sync",
    "embedding_bag_mean": "F.embedding_bag over all tables, no host sync",
    "jagged_to_padded_dense": "aten _jagged_to_padded_dense_forward", "jagged_sum": "segment_reduce",
    "jagged_softmax": "segment_reduce chain", "dot_interaction": "bmm + gather",
}


def _int8_ref(a, b):
    # exact: |products| summed stay far below 2**53
    return (a.to(torch.float64) @ b.to(torch.float64)).to(torch.int32)


REF_OVERRIDE: dict[str, Callable] = {"int8_matmul": _int8_ref}

