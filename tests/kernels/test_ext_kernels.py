"""Every workload's "triton_ext" implementation (kernels/*_ext.py: the MTIA hints and language
extensions) against its "torch" reference on the "test" shapes, and the embedding bag's
PE-grid kernel on the cases its planning has to get right."""
from __future__ import annotations

import pytest
import torch

from kernels import recommendation_ext as KX
from study.registry import load_all
from test_kernels import _outputs, assert_close

WORKLOADS = load_all()


def _cases() -> list:
    return [pytest.param(w, s, dt, id=f"{w.name}-{s.name}-{dt}")
            for w in WORKLOADS.values() if "triton_ext" in w.impls
            for s in w.shapes_tagged("test") for dt in w.dtypes]


@pytest.mark.parametrize("w, shape, dtype", _cases())
def test_triton_ext_matches_torch(w, shape, dtype) -> None:
    inputs = w.make(shape, dtype, seed=0)
    want = _outputs(w.impls["torch"](**inputs))
    try:
        got = _outputs(w.impls["triton_ext"](**inputs))
    except NotImplementedError:
        pytest.skip(f"triton_ext does not cover {dtype}")
    assert len(got) == len(want)
    for i, (g, r) in enumerate(zip(got, want)):
        assert_close(g, r, f"{w.name}[{shape.name}, {dtype}] output {i}")


def _tbe(lengths: list[int], tables: int, rows: int, dim: int, dtype: torch.dtype, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    lengths_t = torch.tensor(lengths, dtype=torch.int64)
    offsets = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths_t, 0)
    indices = torch.randint(0, rows, (int(offsets[-1]),), generator=gen)
    return {"weights": torch.randn(tables * rows, dim, generator=gen).to(dtype),
            "table_offsets": torch.arange(tables, dtype=torch.int64) * rows,
            "indices": indices, "offsets": offsets, "num_tables": tables}


def _reference(weights, table_offsets, indices, offsets, num_tables, mode):
    B = (offsets.numel() - 1) // num_tables
    D = weights.shape[1]
    out = torch.zeros(B, num_tables * D, dtype=torch.float64)
    for t in range(num_tables):
        for b in range(B):
            lo, hi = int(offsets[t * B + b]), int(offsets[t * B + b + 1])
            rows = weights[table_offsets[t] + indices[lo:hi]].double()
            if hi > lo:
                out[b, t * D:(t + 1) * D] = rows.sum(0) / (hi - lo if mode == "mean" else 1)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("lengths, tables, dim", [
    ([3, 0, 5, 1, 0, 2, 7], 1, 16),                  # B not a multiple of the item's bags, empty bags
    ([0] * 6, 2, 32),                                 # every bag empty
    ([16, 16, 1, 16, 16, 3], 2, 24),                  # longest bag a power of two; D not one
    ([40, 2, 33, 9, 0, 40, 17, 25, 1, 38], 2, 64),    # 40 lanes: 32 + 8 on the DPE
    ([70, 1, 0, 64, 5, 3, 66, 2, 9, 11, 0, 4], 3, 32),  # 70 lanes: 64 + 8
])
def test_embedding_bag_ext_plans_its_items(lengths, tables, dim, mode, dtype) -> None:
    inputs = _tbe(lengths, tables, rows=50, dim=dim, dtype=dtype)
    got = KX.embedding_bag(**inputs, mode=mode)
    want = _reference(**inputs, mode=mode)
    assert_close(got, want.to(dtype), f"embedding bag {mode} {lengths}")


def test_embedding_bag_ext_many_bags_per_pe() -> None:
    """More items than PEs: the two-level count splits them; every bag is pooled exactly once."""
    gen = torch.Generator().manual_seed(1)
    lengths = torch.randint(0, 9, (2 * 700,), generator=gen).tolist()
    inputs = _tbe(lengths, tables=2, rows=40, dim=16, dtype=torch.float32)
    got = KX.embedding_bag(**inputs, mode="sum")
    assert_close(got, _reference(**inputs, mode="sum").float(), "embedding bag, 1400 bags")


def test_embedding_bag_ext_trailing_empty_bags() -> None:
    """Bags are split by lookups: the empty bags after the last lookup (which start at the
    total) and a batch of only empty bags are still pooled (zeros), not left unwritten."""
    lengths = [5, 3, 9, 1] + [0] * 70 + [4, 2] + [0] * 60
    inputs = _tbe(lengths, tables=2, rows=30, dim=16, dtype=torch.float32)
    got = KX.embedding_bag(**inputs, mode="mean")
    assert_close(got, _reference(**inputs, mode="mean").float(), "embedding bag, trailing empty bags")
    inputs = _tbe([0] * 200, tables=2, rows=30, dim=16, dtype=torch.float32)
    got = KX.embedding_bag(**inputs, mode="sum")
    assert torch.equal(got, torch.zeros_like(got))


@pytest.mark.parametrize("lengths, dim", [
    ([0, 0, 0], 16),                        # nothing to sum: zeros, stored by whole empty items
    ([5000], 40),                           # one segment cut over every PE (its partials combined)
    ([0, 3000, 0, 0, 1, 2], 33),            # empty segments; D not a multiple of the column block
    ([0] * 70 + [300] + [0] * 70, 3),       # cuts falling in empty items' cost
    ([7, 0, 900, 2, 2, 2, 500, 0], 100),
])
def test_jagged_sum_ext_cuts_between_rows(lengths, dim) -> None:
    """PEs share the rows exactly, cutting items between rows: every item is summed once,
    whole or from the partials of the PEs it was cut over."""
    g = torch.Generator().manual_seed(1)
    offsets = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    offsets[1:] = torch.tensor(lengths).cumsum(0)
    values = torch.randn(int(offsets[-1]), dim, generator=g)
    want = torch.stack([values[offsets[b]:offsets[b + 1]].sum(0) for b in range(len(lengths))])
    assert_close(KX.jagged_sum(values, offsets), want, f"jagged sum ext {lengths[:4]}..., D={dim}")


@pytest.mark.parametrize("tile", __import__("kernels.gemm_ext", fromlist=["TILES"]).TILES, ids=str)
def test_peeled_gemm_every_tile(tile) -> None:
    """Every autotuning tile of the peeled `triton_ext` GEMM on a ragged shape. With BLOCK_N equal
    to BLOCK_K the structure pass once defined a shared address constant after its first use
    (KeyError in the simulator at 32 x 64 and 64 x 64)."""
    import triton
    from kernels.gemm import matmul_autotuned
    from kernels.gemm_ext import matmul_peeled_kernel
    bm, bn = tile
    one = triton.autotune(configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8})],
                          key=["M", "N", "K"])(matmul_peeled_kernel)
    gen = torch.Generator().manual_seed(0)
    a = torch.randn((100, 130), generator=gen).to(torch.bfloat16)
    b = torch.randn((130, 70), generator=gen).to(torch.bfloat16)
    assert_close(matmul_autotuned(a, b, one), (a.float() @ b.float()).to(torch.bfloat16), "bf16")
