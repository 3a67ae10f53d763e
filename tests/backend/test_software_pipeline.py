"""Loop rotation (backend/passes/rotate.py): the GEMM of the next iteration is issued before
the softmax of this one. Pinned on the printed IR of small kernels, numbers checked against
torch, and the simulated time compared with the pass switched off."""
from __future__ import annotations

import re

import torch
import triton
import triton.language as tl

from backend.driver import record_launches


@triton.jit
def _scores_then_values(q_ptr, k_ptr, v_ptr, o_ptr, L, D: tl.constexpr, BN: tl.constexpr):
    """o = sum_j exp(q k_j^T) v_j over KV blocks: two chained GEMMs, the first state-free."""
    rows = tl.arange(0, 16)
    cols = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + cols[None, :])
    acc = tl.zeros((16, D), dtype=tl.float32)
    for start in range(0, L, BN):
        kv = start + tl.arange(0, BN)
        k = tl.load(k_ptr + kv[:, None] * D + cols[None, :], mask=kv[:, None] < L, other=0.0)
        s = tl.dot(q, tl.trans(k))
        p = tl.where(kv[None, :] < L, tl.exp(s * 0.125), 0.0)
        v = tl.load(v_ptr + kv[:, None] * D + cols[None, :], mask=kv[:, None] < L, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
    tl.store(o_ptr + rows[:, None] * D + cols[None, :], acc)


def _run(L: int, **opts):
    torch.manual_seed(0)
    q = torch.randn(16, 32, dtype=torch.bfloat16)
    k = torch.randn(L, 32, dtype=torch.bfloat16)
    v = torch.randn(L, 32, dtype=torch.bfloat16)
    o = torch.empty(16, 32)
    with record_launches() as recs:
        kern = _scores_then_values[(1,)](q, k, v, o, L, D=32, BN=16, **opts)
    p = torch.exp((q.float() @ k.float().T) * 0.125).to(torch.bfloat16).float()
    return kern, o, p @ v.float(), recs[0].cycles


def test_next_gemm_is_issued_before_this_iterations_softmax():
    kern, o, ref, _ = _run(40)
    torch.testing.assert_close(o, ref, rtol=2e-2, atol=2e-2)
    tile = kern.asm["tile"]
    # prologue: S_0 under `lb < ub`, before the loop
    head, loop = tile.split("scf.for", 1)
    assert re.search(r"scf\.if %v\d+", head) and "tt.dot" in head
    # in the body the guarded S_{j+1} comes first, then the exp of S_j, then the PV GEMM
    body = loop.splitlines()
    first_if = next(i for i, ln in enumerate(body) if "scf.if" in ln)
    first_exp = next(i for i, ln in enumerate(body) if "math.exp" in ln)
    assert first_if < first_exp
    assert "software_pipelined = 1" in loop.splitlines()[0]
    # the carried S is a two-instance ring in local memory
    assert re.search(r"buffer %v?\d+: f32\[16, 16\] @local\+\d+ \(1024 B x2\)", kern.asm["mtiasm"])


def test_rotated_loop_handles_zero_one_and_ragged_trip_counts():
    for L in (0, 5, 16, 33):
        _, o, ref, _ = _run(L)
        torch.testing.assert_close(o, ref, rtol=2e-2, atol=2e-2)


def test_gemm_with_carried_accumulator_is_not_rotated():
    from tests.backend.test_memory_paths import _matmul
    a = torch.randn(64, 64)
    b = torch.randn(64, 64)
    c = torch.empty(64, 64)
    k = _matmul[(1, 1)](a, b, c, 64, 64, 64, 64, 1, 64, 1, 64, 1, BM=64, BN=64, BK=16)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "software_pipelined" not in k.asm["tile"] and "scf.if" not in k.asm["tile"]


def test_pipelining_shortens_the_loop_and_keeps_its_numbers():
    kern_on, o_on, ref, on = _run(256)
    kern_off, o_off, _, off = _run(256, software_pipeline=False)
    assert "scf.if" not in kern_off.asm["tile"]
    torch.testing.assert_close(o_on, o_off, rtol=0, atol=0)
    torch.testing.assert_close(o_on, ref, rtol=2e-2, atol=2e-2)
    # the DPE computes S_{j+1} while SIMD/SFU work on S_j
    assert on < 0.9 * off, (on, off)


def test_online_softmax_rescale_is_issued_before_the_big_exp():
    """passes/schedule.py: alpha = exp2(m_i - m_new) and acc * alpha move ahead of
    P = exp2(S - m_new), so the SIMD rescale overlaps the SFU computing P."""
    from kernels.attention import flash_attn_fwd_kernel
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 64, 32, dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    s = [q.stride(i) for i in range(3)]
    kern = flash_attn_fwd_kernel[(1, 1)](q, k, v, o, 1, 64, 32 ** -0.5, *s, *s, *s, *s,
                                         CAUSAL=False, HEAD_DIM=32, BLOCK_M=64, BLOCK_N=16)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    torch.testing.assert_close(o.float(), ref, rtol=2e-2, atol=2e-2)
    body = kern.asm["tile"].split("scf.for", 1)[1]
    exps = [ln for ln in body.splitlines() if "math.exp2" in ln]
    assert [("64x16" in ln) for ln in exps] == [False, True], exps  # alpha ([64]) first, then P
    big_exp = next(i for i, ln in enumerate(body.splitlines()) if "math.exp2" in ln and "64x16" in ln)
    rescale = next(i for i, ln in enumerate(body.splitlines()) if "arith.mulf" in ln and "64x32xf32" in ln)
    assert rescale < big_exp
    # the runtime scale is read as a scalar operand: no [64, 16] splat is built per iteration
    mt = kern.asm["mtiasm"].split("ctl.for", 1)[1]
    assert not re.search(r"simd\.splat a=%\w+ \{shape=\[64, 16\]", mt), mt


def test_loads_are_issued_before_scalar_code_that_waits_for_a_reduction():
    """passes/schedule._hoist_loads: LayerNorm's weight and bias loads move above the row
    statistics (whose scalar rstd blocks the command processor), so the next program's row
    DMA is not stuck behind them."""
    from kernels.normalisation import layernorm
    import kernels.normalisation as K
    torch.manual_seed(0)
    x, w, b = torch.randn(8, 256), torch.randn(256), torch.randn(256)
    out = layernorm(x, w, b)
    torch.testing.assert_close(out, torch.nn.functional.layer_norm(x, (256,), w, b), rtol=1e-4, atol=1e-4)
    kern = list(K.layernorm_fwd_kernel.device_caches[0][0].values())[-1]
    lines = kern.asm["tile"].splitlines()
    loads = [i for i, ln in enumerate(lines) if "mtia.dma_load" in ln]
    first_reduce = next(i for i, ln in enumerate(lines) if "tt.reduce" in ln)
    assert len(loads) == 3 and max(loads) < first_reduce


@triton.jit
def _big_copy(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)


def test_programs_sharing_one_memory_overlap_only_where_memory_allows():
    """A program whose buffers fit local memory once still starts when the previous one is
    issued, but each of its writes waits for the previous program's last access to that
    memory (the command processor's dependency check)."""
    from backend.driver import trace_launches
    n = 65536  # 256 KB per tile (the doubled value is computed in place): fits 384 KB once
    x = torch.randn(128 * n)  # 2 programs per PE
    y = torch.empty_like(x)
    cycles = {}
    for overlap in (True, False):
        with trace_launches() as recs:
            _big_copy[(128,)](x, y, N=n, pipeline_programs=overlap)
        torch.testing.assert_close(y, x * 2)
        cycles[overlap] = recs[0].cycles
        spans = [s for s in recs[0].timing.spans if s[0] == 0]
        progs = [s for s in spans if s[1] == "PROGRAM"]
        assert len(progs) == 2
        loads = sorted(s for s in spans if s[1] == "DMA_IN")
        stores = sorted(s for s in spans if s[1] == "DMA_OUT")
        # the second program's load overwrites memory the first program's store reads
        assert loads[1][2] >= stores[0][3] - 1e-6
        if overlap:
            assert progs[1][2] < progs[0][3]  # started before the first one finished
    assert cycles[True] <= cycles[False]


@triton.jit
def _pool_one_behind(x_ptr, idx_ptr, out_ptr, n, BR: tl.constexpr, D: tl.constexpr):
    """out[i] = 2 * sum of the rows x[idx[i * BR : (i + 1) * BR]]: iteration i gathers block i's
    rows (its indices loaded one iteration earlier), reduces them, and scales and stores block
    i - 1's sum (the carried result of the previous iteration's reduction)."""
    rows = tl.arange(0, BR)
    cols = tl.arange(0, D)
    idx = tl.load(idx_ptr + rows)
    acc = tl.zeros((D,), dtype=tl.float32)
    for i in range(0, n):
        x = tl.load(x_ptr + idx[:, None] * D + cols[None, :])
        y = acc * 2.0
        idx = tl.load(idx_ptr + (i + 1) * BR + rows, mask=(i + 1) * BR + rows < n * BR, other=0)
        tl.store(out_ptr + (i - 1) * D + cols, y, mask=(cols < D) & (i > 0))
        acc = tl.sum(x, axis=0)
    tl.store(out_ptr + (n - 1) * D + cols, acc * 2.0)


def test_work_on_a_carried_reduction_is_ordered_after_the_loads():
    """passes/schedule.py: a reduction of loaded data carried to the next iteration is not ready
    at its top. Scaling it there, ahead of the loads, would queue the scale behind the reduction
    on in-order SIMD and stop the command processor from issuing the loads behind it; it is
    ordered after them. The gather whose row offsets come from the previous iteration (through
    stride views, which move nothing) stays first."""
    torch.manual_seed(0)
    n, BR, D = 5, 16, 32
    x = torch.randn(40, D)
    idx = torch.randint(0, 40, (n * BR,))
    out = torch.empty(n, D)
    kern = _pool_one_behind[(1,)](x, idx, out, n, BR=BR, D=D)
    torch.testing.assert_close(out, 2 * x[idx].view(n, BR, D).sum(1), rtol=1e-5, atol=1e-5)
    body = kern.asm["tile"].split("scf.for", 1)[1].split("scf.yield", 1)[0].splitlines()
    at = {key: next(i for i, ln in enumerate(body) if key in ln)
          for key in ("mtia.gather", "mtia.dma_load", "arith.mulf", "tt.reduce")}
    assert at["mtia.gather"] < at["mtia.dma_load"] < at["arith.mulf"], body


@triton.jit
def _segments_prefetched(x_ptr, off_ptr, out_ptr, n, D: tl.constexpr, BL: tl.constexpr):
    """Sum of each segment x[off[i]:off[i+1]], the next segment's bounds loaded one segment
    ahead (the loop bounds are scalars the control core waits for)."""
    cols = tl.arange(0, D)
    lo_n = tl.load(off_ptr)
    hi_n = tl.load(off_ptr + 1)
    for i in range(0, n):
        lo = lo_n
        hi = hi_n
        nxt = tl.minimum(i + 1, n - 1)
        lo_n = tl.load(off_ptr + nxt)
        hi_n = tl.load(off_ptr + nxt + 1)
        acc = tl.zeros((D,), dtype=tl.float32)
        for r in range(lo, hi, BL):
            rows = r + tl.arange(0, BL)
            acc += tl.sum(tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=rows[:, None] < hi, other=0.0), 0)
        tl.store(out_ptr + i * D + cols, acc)


def test_a_prefetch_written_before_a_loading_loop_is_issued_before_it():
    """passes/schedule.py: loads keep their source order with a nested loop that loads. Both
    bound loads of the next segment are issued before this segment's row loop; ordered after it
    (the loop's start estimate ignored its transfers), the second would queue behind every row
    transfer and the next segment's first row load would wait a DMA latency for it."""
    torch.manual_seed(0)
    D = 32
    lengths = [70, 3, 129, 64, 1, 90]
    off = torch.tensor([0] + lengths).cumsum(0)
    x = torch.randn(int(off[-1]), D)
    out = torch.empty(len(lengths), D)
    kern = _segments_prefetched[(1,)](x, off, out, len(lengths), D=D, BL=32)
    want = torch.stack([x[int(a):int(b)].sum(0) for a, b in zip(off[:-1], off[1:])])
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    outer = kern.asm["tile"].split("scf.for", 1)[1]
    head = outer.split("scf.for", 1)[0]
    assert head.count("mtia.dma_load") + head.count("tt.load") == 2, head
