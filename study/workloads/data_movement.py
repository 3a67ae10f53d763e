"""Data-movement workloads: transpose, gather (index_select), concat. No FLOPs; bytes are one
read and one write of every moved element (plus the index array for the gather)."""
from __future__ import annotations

from baselines import torch_ref
from baselines.expert import data_movement as E
from kernels import data_movement as K
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import randint, randn

DTYPES = ["f32", "bf16"]

transpose = workload(
    "transpose", family="data_movement", dtypes=DTYPES,
    shapes=[Shape("s", {"m": 64, "n": 128}, tags={"test"}),
            Shape("ragged", {"m": 100, "n": 70}, tags={"test"}),
            Shape("4k", {"m": 4096, "n": 4096}, tags={"study"}),
            Shape("8kx4k", {"m": 8192, "n": 4096}, tags={"study"})],
    flops=lambda p, dt: 0, bytes=lambda p, dt: 2 * p["m"] * p["n"] * itemsize(dt))


@transpose.inputs
def _(p, dt, gen):
    return {"x": randn((p["m"], p["n"]), dt, gen)}


transpose.impl("torch")(torch_ref.transpose)


@transpose.impl("triton", source=K.transpose_kernel)
def _(x):
    return K.transpose(x)


transpose.impl("expert", source=E.transpose_program)(E.transpose)


index_select = workload(
    "index_select", family="data_movement", dtypes=DTYPES,
    shapes=[Shape("s", {"rows": 200, "dim": 64, "n_index": 64}, tags={"test"}),
            Shape("ragged", {"rows": 50, "dim": 100, "n_index": 77}, tags={"test"}),
            Shape("emb_64k", {"rows": 1_000_000, "dim": 128, "n_index": 65536}, tags={"study"}),
            Shape("tokens_8k", {"rows": 32_000, "dim": 4096, "n_index": 8192}, tags={"study"})],
    flops=lambda p, dt: 0,
    bytes=lambda p, dt: 2 * p["n_index"] * p["dim"] * itemsize(dt) + 8 * p["n_index"])


@index_select.inputs
def _(p, dt, gen):
    return {"x": randn((p["rows"], p["dim"]), dt, gen), "index": randint(0, p["rows"], p["n_index"], gen)}


index_select.impl("torch")(torch_ref.index_select)


@index_select.impl("triton", source=K.index_select_kernel)
def _(x, index):
    return K.index_select(x, index)


index_select.impl("expert", source=E.index_select_program)(E.index_select)


concat = workload(
    "concat", family="data_movement", dtypes=DTYPES,
    shapes=[Shape("s", {"m": 32, "n1": 64, "n2": 32, "n3": 128}, tags={"test"}),
            Shape("ragged", {"m": 33, "n1": 7, "n2": 100, "n3": 20}, tags={"test"}),
            # DLRM top-MLP input: dense (128) + pairwise interactions (351) + pooled embeddings
            Shape("dlrm_b4k", {"m": 4096, "n1": 128, "n2": 351, "n3": 3328}, tags={"study"}),
            Shape("llm_qkv_4k", {"m": 4096, "n1": 4096, "n2": 1024, "n3": 1024}, tags={"study"})],
    flops=lambda p, dt: 0,
    bytes=lambda p, dt: 2 * p["m"] * (p["n1"] + p["n2"] + p["n3"]) * itemsize(dt))


@concat.inputs
def _(p, dt, gen):
    return {"tensors": [randn((p["m"], p[k]), dt, gen) for k in ("n1", "n2", "n3")]}


@concat.impl("torch")
def _(tensors):
    return torch_ref.concat(tensors, dim=1)


@concat.impl("triton", source=K.copy_2d_kernel)
def _(tensors):
    return K.concat(tensors, dim=1)


concat.impl("expert", source=E.concat_program)(E.concat)
