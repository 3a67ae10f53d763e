"""Every expert implementation against the torch reference on the workloads' "test" shapes
(docs/study.md tolerances through study.measure.compare)."""
from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (circular import otherwise)

from backend.driver import record_launches
from study.measure import compare
from study.registry import load_all

WORKLOADS = load_all()
CASES = [(w.name, s.name, dt) for w in WORKLOADS.values() if "expert" in w.impls
         for s in w.shapes_tagged("test") for dt in w.dtypes]


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=["/".join(c) for c in CASES])
def test_expert_matches_torch(name, shape, dtype):
    w = WORKLOADS[name]
    s = next(x for x in w.shapes if x.name == shape)
    inputs = w.make(s, dtype)
    ref = w.impls["torch"](**{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
    with record_launches() as recs:
        out = w.impls["expert"](**inputs)
    assert recs, "the expert implementation must launch through backend.driver.launch"
    c = compare(out, ref, dtype)
    assert c.correct, f"{name}/{shape}/{dtype}: {c.why} (max abs {c.max_abs_err}, max rel {c.max_rel_err})"


@pytest.mark.parametrize("shape", [(1, 64, 96, 160), (3, 27, 27, 40)])
def test_the_nt_gemm_reads_b_transposed_and_matches_torch(shape):
    from baselines.expert.gemm import matmul_nt
    bs, M, N, K = shape
    g = torch.Generator().manual_seed(0)
    a = torch.randn(bs, M, K, generator=g).to(torch.bfloat16)
    bt = torch.randn(bs, N, K, generator=g).to(torch.bfloat16)
    got = matmul_nt(a if bs > 1 else a[0], bt if bs > 1 else bt[0])
    want = (a.float() @ bt.float().transpose(-1, -2)).to(torch.bfloat16)
    torch.testing.assert_close(got, want if bs > 1 else want[0], rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_gram_matrix_reads_its_operand_once(dtype):
    """x @ x^T (DLRM's pairwise interactions), one tile per matrix: the A tile is also B's, so
    half the operand bytes are read; the numbers are the NT GEMM's."""
    import backend.driver as drv
    from baselines.expert.gemm import matmul_nt
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 27, 64, generator=g).to(dtype)
    with drv.record_launches() as recs:
        got = matmul_nt(x, x)
        other = matmul_nt(x, x.clone())  # equal values, another tensor: the plain NT GEMM
    assert recs[0].name.startswith("expert_gemm_gram_") and "_gram_" not in recs[1].name, [r.name for r in recs]
    assert torch.equal(got, other)
    want = (x.float() @ x.float().transpose(-1, -2)).to(dtype)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    gram, nt = (r.timing.bytes["lpddr_read"] + r.timing.bytes["sram_read"] for r in recs)
    assert 0 < gram < 0.6 * nt, (gram, nt)


def test_gemm_padding_tiles_read_and_write_nothing():
    """4 x 7 = 28 output tiles of 32 x 64 on 64 PEs: 36 programs walk a padding tile (past the
    last batch), which must neither read B nor write C out of bounds."""
    from baselines.expert.common import launch
    from baselines.expert.gemm import gemm_program
    g = torch.Generator().manual_seed(0)
    a = torch.randn(1, 128, 64, generator=g).to(torch.bfloat16)
    b = torch.randn(1, 64, 448, generator=g).to(torch.bfloat16)
    prog = gemm_program(1, 128, 448, 64, "bf16", "bf16", None, BM=32, BN=64)
    c = torch.zeros(1, 128, 448, dtype=torch.bfloat16)
    launch(prog, prog.meta["grid"], [a, b, c])
    torch.testing.assert_close(c.float(), (a.float() @ b.float()).to(torch.bfloat16).float(), rtol=2e-2, atol=2e-2)


def test_gemm_tile_is_the_fastest_of_those_timed():
    """The expert GEMM times its best-estimated tiles on the chip and keeps the fastest: the
    program's own cycles (any regime) are the minimum geomean of those it timed."""
    from baselines.expert.gemm import gemm_program
    prog = gemm_program(1, 512, 1024, 512, "bf16", "bf16")
    tuned = prog.meta["tuned"]
    label = "x".join(str(x) for x in prog.meta["tile"])
    assert len(tuned) > 1 and tuned[label] == min(tuned.values())


# batch not a multiple of S (a padding block), K not a multiple of the chunk, M = 1, both B layouts
@pytest.mark.parametrize("bs,M,N,K,trans_b,S,KC", [(5, 27, 30, 70, False, 2, 16), (7, 27, 27, 40, True, 4, 8),
                                                    (3, 1, 64, 100, False, 1, 32), (130, 5, 3, 9, True, 4, 8)])
def test_the_fp32_simd_gemm_matches_torch(bs, M, N, K, trans_b, S, KC):
    """The FP32 GEMM on the SIMD engine and the RE: every block, padding ones included (more
    blocks than PEs in the last case), writes exactly its matrices."""
    from baselines.expert.common import launch
    from baselines.expert.gemm import _build_simd
    g = torch.Generator().manual_seed(0)
    a = torch.randn(bs, M, K, generator=g)
    b = torch.randn(bs, N, K, generator=g) if trans_b else torch.randn(bs, K, N, generator=g)
    prog = _build_simd(bs, M, N, K, S, KC, trans_b)
    c = torch.full((bs, M, N), float("nan"))
    launch(prog, prog.meta["grid"], [a, b, c])
    torch.testing.assert_close(c, a @ (b.transpose(1, 2) if trans_b else b), rtol=1e-5, atol=1e-4)


def test_small_fp32_gemms_are_tuned_between_the_dpe_and_the_simd_engine():
    """FP32 has no DPE rate of its own (the vector core's 1.4 TFLOPS): for small matrices the
    tuner also times the SIMD/RE program, and keeps it where it is faster (dot interaction's
    x x^T: 512 matrices of 27 x 27 x 128), the DPE tile where that is (64 x 64: only an 8-wide
    K chunk fits)."""
    from baselines.expert.gemm import gemm_program
    small = gemm_program(512, 27, 27, 128, "f32", "f32", trans_b=True)
    assert small.meta["tile"][0] == "simd" and any(k.startswith("32x") for k in small.meta["tuned"])
    assert small.meta["tuned"]["x".join(map(str, small.meta["tile"]))] == min(small.meta["tuned"].values())
    square = gemm_program(7, 64, 64, 33, "f32", "f32", trans_b=True)
    assert square.meta["tile"][0] != "simd" and "simdx1x8" in square.meta["tuned"]
    assert gemm_program(4, 27, 27, 128, "bf16", "bf16").meta["tile"][0] != "simd"  # 16-bit: the DPE only
