"""Recommendation (DLRM-style) workloads: table-batched embedding bags (sum and mean pooling,
variable bag sizes), jagged to padded dense, jagged sum, jagged softmax, dot interaction.

Embedding-bag bytes: every looked-up row read once (no cache reuse assumed), the indices and
offsets read once, the pooled output written once.
"""
from __future__ import annotations

import torch

from baselines import torch_model, torch_ref
from baselines.expert import recommendation as E
from baselines.expert import recommendation_jagged as EJ
from kernels import recommendation as K
from kernels import recommendation_ext as KX
from study.registry import Shape, itemsize, workload
from study.workloads.tensors import jagged, offsets_from_lengths, randint, randn


# one program per (bag, table): batch x tables programs. 26 tables at batch 4096 (106K programs)
# would take minutes of host time to simulate, so the large batches use fewer tables.
def _tbe_lookups(p: dict) -> int:
    # bag sizes are uniform in [0, 2 * pool]: the expected pooling factor is `pool`
    return p["tables"] * p["batch"] * p["pool"]


def _declare_embedding_bag(name: str, mode: str) -> None:
    w = workload(
        name, family="recommendation", dtypes=["f32", "f16"],
        shapes=[Shape("s", {"tables": 3, "rows": 100, "dim": 64, "batch": 8, "pool": 10}, tags={"test"}),
                Shape("ragged", {"tables": 2, "rows": 50, "dim": 24, "batch": 5, "pool": 40}, tags={"test"}),
                Shape("dlrm_b512", {"tables": 26, "rows": 100_000, "dim": 64, "batch": 512, "pool": 20},
                      tags={"study"}),
                Shape("dlrm_b2k", {"tables": 4, "rows": 1_000_000, "dim": 64, "batch": 2048, "pool": 20},
                      tags={"study"}),
                Shape("dlrm_b4k", {"tables": 2, "rows": 100_000, "dim": 128, "batch": 4096, "pool": 10},
                      tags={"study"})],
        flops=lambda p, dt: _tbe_lookups(p) * p["dim"],
        bytes=lambda p, dt: (_tbe_lookups(p) * (p["dim"] * itemsize(dt) + 8)
                             + (p["tables"] * p["batch"] + 1) * 8
                             + p["tables"] * p["batch"] * p["dim"] * itemsize(dt)))

    @w.inputs
    def _(p, dt, gen):
        t, rows, b = p["tables"], p["rows"], p["batch"]
        lengths = randint(0, 2 * p["pool"] + 1, t * b, gen)
        offsets = offsets_from_lengths(lengths)
        per_table = lengths.view(t, b).sum(dim=1).tolist()
        indices = torch.cat([randint(0, rows, n, gen) for n in per_table])
        return {"weights": randn((t * rows, p["dim"]), dt, gen),
                "table_offsets": torch.arange(t, dtype=torch.int64) * rows,
                "indices": indices, "offsets": offsets, "num_tables": t}

    @w.impl("torch")
    def _(weights, table_offsets, indices, offsets, num_tables):
        return torch_ref.embedding_bag(weights, table_offsets, indices, offsets, num_tables, mode)

    w.model = lambda weights, table_offsets, indices, offsets, num_tables: torch_model.embedding_bag(
        weights, table_offsets, indices, offsets, num_tables, mode)

    @w.impl("triton", source=K.embedding_bag_kernel)
    def _(weights, table_offsets, indices, offsets, num_tables):
        return K.embedding_bag(weights, table_offsets, indices, offsets, num_tables, mode)

    @w.impl("triton_ext", source=KX.embedding_bag_ext_kernel)
    def _(weights, table_offsets, indices, offsets, num_tables):
        return KX.embedding_bag(weights, table_offsets, indices, offsets, num_tables, mode)

    @w.impl("expert", source=E.embedding_bag_program)
    def _(weights, table_offsets, indices, offsets, num_tables):
        return E.embedding_bag(weights, table_offsets, indices, offsets, num_tables, mode)


_declare_embedding_bag("embedding_bag_sum", "sum")
_declare_embedding_bag("embedding_bag_mean", "mean")

# user histories: batch 512, lengths 1..1024 (the study's jagged recommender block)
_JAGGED = [Shape("s", {"batch": 4, "max_len": 50, "dim": 32}, tags={"test"}),
           Shape("ragged", {"batch": 6, "max_len": 130, "dim": 40}, tags={"test"}),
           Shape("hist_b512", {"batch": 512, "max_len": 1024, "dim": 128}, tags={"study"}),
           Shape("hist_b2k_short", {"batch": 2048, "max_len": 256, "dim": 64}, tags={"study"})]


def _jagged_rows(p: dict) -> int:
    return p["batch"] * (1 + p["max_len"]) // 2  # lengths uniform in [1, max_len]


def _jagged_inputs(p: dict, dt: str, gen) -> dict:
    values, offsets = jagged(p["batch"], p["max_len"], p["dim"], dt, gen, min_len=1)
    return {"values": values, "offsets": offsets}


jagged_to_padded_dense = workload(
    "jagged_to_padded_dense", family="recommendation", dtypes=["f32", "bf16"], shapes=_JAGGED,
    flops=lambda p, dt: 0,
    bytes=lambda p, dt: ((_jagged_rows(p) + p["batch"] * p["max_len"]) * p["dim"] * itemsize(dt)
                         + (p["batch"] + 1) * 8))


@jagged_to_padded_dense.inputs
def _(p, dt, gen):
    return {**_jagged_inputs(p, dt, gen), "max_len": p["max_len"]}


jagged_to_padded_dense.impl("torch")(torch_ref.jagged_to_padded_dense)


@jagged_to_padded_dense.impl("triton", source=K.jagged_to_padded_dense_kernel)
def _(values, offsets, max_len):
    return K.jagged_to_padded_dense(values, offsets, max_len)


jagged_to_padded_dense.impl("expert", source=EJ.jagged_to_padded_dense_program)(EJ.jagged_to_padded_dense)


jagged_sum = workload(
    "jagged_sum", family="recommendation", dtypes=["f32", "bf16"], shapes=_JAGGED,
    flops=lambda p, dt: _jagged_rows(p) * p["dim"],
    bytes=lambda p, dt: (_jagged_rows(p) + p["batch"]) * p["dim"] * itemsize(dt) + (p["batch"] + 1) * 8)
jagged_sum.inputs(_jagged_inputs)
jagged_sum.impl("torch")(torch_ref.jagged_sum)


@jagged_sum.impl("triton", source=K.jagged_sum_kernel)
def _(values, offsets):
    return K.jagged_sum(values, offsets)


@jagged_sum.impl("triton_ext", source=(KX.jagged_sum_ext_kernel, KX.jagged_sum_combine))
def _(values, offsets):
    return KX.jagged_sum(values, offsets)


jagged_sum.impl("expert", source=EJ.jagged_sum_program)(EJ.jagged_sum)


jagged_softmax = workload(
    "jagged_softmax", family="recommendation", dtypes=["f32", "bf16"], shapes=_JAGGED,
    flops=lambda p, dt: 5 * _jagged_rows(p) * p["dim"],
    bytes=lambda p, dt: 2 * _jagged_rows(p) * p["dim"] * itemsize(dt) + (p["batch"] + 1) * 8)
jagged_softmax.inputs(_jagged_inputs)
jagged_softmax.impl("torch")(torch_ref.jagged_softmax)


@jagged_softmax.impl("triton", source=K.jagged_softmax_kernel)
def _(values, offsets):
    return K.jagged_softmax(values, offsets)


jagged_softmax.impl("expert", source=EJ.jagged_softmax_program)(EJ.jagged_softmax)


def _pairs(p: dict) -> int:
    return p["features"] * (p["features"] - 1) // 2


dot_interaction = workload(
    "dot_interaction", family="recommendation", dtypes=["f32", "bf16"],
    shapes=[Shape("s", {"batch": 8, "features": 5, "dim": 16}, tags={"test"}),
            Shape("ragged", {"batch": 3, "features": 27, "dim": 24}, tags={"test"}),
            # DLRM: 26 sparse features + the dense one, dim 64 / 128
            Shape("dlrm_b512", {"batch": 512, "features": 27, "dim": 128}, tags={"study"}),
            Shape("dlrm_b4k", {"batch": 4096, "features": 27, "dim": 64}, tags={"study"})],
    flops=lambda p, dt: 2 * p["batch"] * _pairs(p) * p["dim"],
    bytes=lambda p, dt: p["batch"] * (p["features"] * p["dim"] + p["dim"] + _pairs(p)) * itemsize(dt))


@dot_interaction.inputs
def _(p, dt, gen):
    return {"x": randn((p["batch"], p["features"], p["dim"]), dt, gen, scale=0.5)}


dot_interaction.impl("torch")(torch_ref.dot_interaction)
dot_interaction.model = torch_model.dot_interaction


@dot_interaction.impl("triton", source=K.dot_interaction_kernel)
def _(x):
    return K.dot_interaction(x)


@dot_interaction.impl("triton_ext", source=KX.dot_interaction_ext_kernel)
def _(x):
    return KX.dot_interaction(x)

dot_interaction.impl("expert", source=EJ.dot_interaction_program)(EJ.dot_interaction)
