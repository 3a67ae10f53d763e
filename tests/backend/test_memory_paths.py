"""Pointer and mask analysis: which path each memory op takes, pinned on small kernels, and
the numbers of every path checked against torch (the path changes time, never results)."""
from __future__ import annotations

import re

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _masked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=0.0) * 2.0, mask=offs < n)


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BK) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    c_ptrs = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _modulo_index(x_ptr, y_ptr, n, C: tl.constexpr, BLOCK: tl.constexpr):
    # Inductor-style flattened index: the column is offs % C, the row offs // C
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    col = offs % C
    row = offs // C
    v = tl.load(x_ptr + (col * 3 + row), mask=m, other=0.0)
    tl.store(y_ptr + offs, v, mask=m)


@triton.jit
def _embedding_rows(table_ptr, idx_ptr, out_ptr, D: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, D)
    idx = tl.load(idx_ptr + r)
    rows = tl.load(table_ptr + idx[:, None] * D + cols[None, :])
    tl.store(out_ptr + r[:, None] * D + cols[None, :], rows)


@triton.jit
def _select_pointer(a_ptr, b_ptr, out_ptr, use_a, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pa = a_ptr + offs
    pb = b_ptr + offs
    p = tl.where(offs < use_a, pa, pb)
    tl.store(out_ptr + offs, tl.load(p))


@triton.jit
def _block_ptr_copy(x_ptr, y_ptr, M, N, sm, sn, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, (M, N), (sm, sn), (pid * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (pid * BM, 0), (BM, BN), (1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        tl.store(dst, tl.load(src, boundary_check=(0, 1), padding_option="zero") + 1.0, boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, (0, BN))


@triton.jit
def _wrapped_rows(x_ptr, y_ptr, N: tl.constexpr, C: tl.constexpr, BLOCK: tl.constexpr, ASSUME: tl.constexpr):
    # Inductor's GEMM templates: rows (pid_m * BLOCK + arange) % M, a wrap instead of a mask;
    # pid_m through a group swizzle whose sign only an assume tells; M a constant (static shapes)
    pid = tl.program_id(0)
    g = tl.minimum(16 - pid // 8 * 8, 8)
    pid_m = pid % 8 // g
    if ASSUME:
        tl.assume(pid_m >= 0)
    rows = (pid_m * BLOCK + tl.arange(0, BLOCK)) % N
    cols = tl.arange(0, C)
    v = tl.load(x_ptr + rows[:, None] * C + cols[None, :])
    out = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + out[:, None] * C + cols[None, :], v)


def _paths(kernel) -> list[str]:
    return re.findall(r'path = "([\w+]+)"', kernel.asm["tile"])


def test_masked_copy_is_structured_dma_with_box_bounds():
    x = torch.randn(1000)
    y = torch.empty(1000)
    k = _masked_copy[(8,)](x, y, 1000, BLOCK=128)
    torch.testing.assert_close(y, x * 2)
    tile = k.asm["tile"]
    assert _paths(k) == ["dma", "dma"]
    # the mask `offs < n` became an upper bound n - pid*128 on the single dimension
    assert re.search(r"mtia\.dma_load %x_ptr, .*hi=\['%v\d+'\]", tile), tile
    assert "dma_in.load" in k.asm["mtiasm"] and "scalar.load" not in k.asm["mtiasm"]


def test_gemm_loop_carried_pointers_become_scalar_offsets():
    M, N, K = 70, 50, 90
    a = torch.randn(M, K, dtype=torch.bfloat16)
    b = torch.randn(K, N, dtype=torch.bfloat16)
    c = torch.empty(M, N)
    k = _matmul[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=32, BN=32, BK=32)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-4)
    assert _paths(k) == ["dma", "dma", "dma"]
    asm = k.asm["mtiasm"]
    # no pointer tile survives: the loop carries the accumulator and two i64 offsets only
    loop = re.search(r"ctl\.for .*inits=\[(.*)\]", asm).group(1)
    assert loop.count("%") == 3
    assert "simd.addptr" not in asm
    # the tiles inside the loop are double-buffered in local memory (num_stages=2 default)
    assert re.search(r"buffer %\d+: bf16\[32, 32\] @local\+\d+ \(2048 B x2\)", asm)


def test_structured_and_scalar_paths_compute_the_same_numbers():
    M, N, K = 40, 24, 33
    a = torch.randn(M, K)
    b = torch.randn(K, N)
    outs = []
    for structured in (True, False):
        c = torch.empty(M, N)
        k = _matmul[(2, 1)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BM=32, BN=32, BK=16, structured_dma=structured)
        assert set(_paths(k)) == ({"dma"} if structured else {"scalar"})
        outs.append(c)
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)
    torch.testing.assert_close(outs[0], a @ b, rtol=1e-4, atol=1e-4)


def test_modulo_index_takes_index_driven_dma():
    x = torch.randn(300)
    y = torch.empty(300)
    k = _modulo_index[(3,)](x, y, 300, C=3, BLOCK=128)
    offs = torch.arange(300)
    torch.testing.assert_close(y, x[(offs % 3) * 3 + offs // 3])
    assert _paths(k) == ["gather", "dma"]
    # with index DMA switched off the same load falls back to the scalar path
    k2 = _modulo_index[(3,)](x, y, 300, C=3, BLOCK=128, index_dma=False)
    assert _paths(k2) == ["scalar", "dma"]


@pytest.mark.parametrize("n, assume, path", [(256, True, "dma"), (256, False, "gather"), (200, True, "gather")])
def test_block_remainder_is_a_contiguous_run(n, assume, path):
    # (pid_m * 32 + arange(32)) % n: one run from (pid_m * 32) % n where 32 divides n and pid_m
    # is known not negative; otherwise an index-driven DMA. Same numbers either way
    x = torch.randn(n, 16)
    grid = 8
    y = torch.empty(grid * 32, 16)
    k = _wrapped_rows[(grid,)](x, y, n, C=16, BLOCK=32, ASSUME=assume)
    pid = torch.arange(grid)
    g = torch.clamp(16 - pid // 8 * 8, max=8)
    pid_m = pid % 8 // g
    rows = ((pid_m[:, None] * 32 + torch.arange(32)[None, :]) % n).reshape(-1)
    torch.testing.assert_close(y, x[rows])
    assert _paths(k) == [path, "dma"]


def test_embedding_rows_gather_contiguous_runs():
    table = torch.randn(50, 16)
    idx = torch.tensor([3, 7, 7, 0, 49, 12, 1, 2], dtype=torch.int32)
    out = torch.empty(8, 16)
    k = _embedding_rows[(2,)](table, idx, out, D=16, ROWS=4)
    torch.testing.assert_close(out, table[idx.long()])
    assert _paths(k) == ["dma", "gather", "dma"]
    assert re.search(r"mtia\.gather .*run = 16", k.asm["tile"])


@triton.jit
def _rows_one_offset(table_ptr, idx_ptr, out_ptr, D: tl.constexpr, ROWS: tl.constexpr):
    # Inductor's form: one parenthesised offset, a loaded row index plus a column range
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, D)[None, :]
    row = tl.load(idx_ptr + r)
    tl.store(out_ptr + (c + D * r), tl.load(table_ptr + (c + D * row)))


def test_row_index_plus_range_in_one_offset_gathers_whole_rows():
    table = torch.randn(50, 16)
    idx = torch.tensor([3, 7, 7, 0, 49, 12, 1, 2], dtype=torch.int32)
    out = torch.empty(8, 16)
    k = _rows_one_offset[(2,)](table, idx, out, D=16, ROWS=4)
    torch.testing.assert_close(out, table[idx.long()])
    assert _paths(k) == ["dma", "gather", "dma"]
    # the column range is the affine part of the descriptor: one 16-element run per row
    assert re.search(r"mtia\.gather .*run = 16", k.asm["tile"])


def test_pointer_select_takes_scalar_path():
    a = torch.arange(16, dtype=torch.float32)
    b = -torch.arange(16, dtype=torch.float32)
    out = torch.empty(16)
    k = _select_pointer[(1,)](a, b, out, 5, BLOCK=16)
    torch.testing.assert_close(out, torch.where(torch.arange(16) < 5, a, b))
    assert _paths(k) == ["scalar", "dma"]


@pytest.mark.parametrize("M,N", [(64, 64), (50, 37), (1, 5)])
def test_block_pointers_lower_to_bounded_dma(M, N):
    x = torch.randn(N, M).t()  # non-contiguous source
    y = torch.full((M, N), -7.0)
    k = _block_ptr_copy[(triton.cdiv(M, 16),)](x, y, M, N, x.stride(0), x.stride(1), BM=16, BN=16)
    torch.testing.assert_close(y, x + 1.0)
    assert _paths(k) == ["dma", "dma"]
    assert "make_tensor_ptr" not in k.asm["tile"] and "blockptr" not in k.asm["tile"]


@triton.jit
def _mm_gelu(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
    acc = acc * tl.sigmoid(2.0 * u)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.bfloat16))


def test_gemm_epilogue_shares_buffers_and_fits_local_memory():
    # loop-carried accumulator (init, iteration value, dot result, loop result) and the
    # epilogue temporaries share buffers; unshared, this 128x128 tile needs more than 384 KB
    K = 256
    a = torch.randn(128, K, dtype=torch.bfloat16)
    b = torch.randn(K, 128, dtype=torch.bfloat16)
    c = torch.empty(128, 128, dtype=torch.bfloat16)
    k = _mm_gelu[(1,)](a, b, c, K, BM=128, BN=128, BK=64)
    acc = a.float() @ b.float()
    ref = acc * torch.sigmoid(2 * 0.7978845608028654 * (acc + 0.044715 * acc ** 3))
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=2e-2)
    peak = int(re.search(r"PE program: (\d+) of (\d+) bytes", k.asm["pe"]).group(1))
    assert peak <= 256 * 1024, k.asm["pe"].splitlines()[0]


@triton.jit
def _scale_rows(x_ptr, w_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    w = tl.load(w_ptr + cols, mask=m)                  # the same tile in every program
    x = tl.load(x_ptr + row * N + cols, mask=m)        # depends on the program id
    tl.store(out_ptr + row * N + cols, x * w, mask=m)


def test_program_invariant_loads_stay_resident_on_a_pe():
    from backend import driver
    from backend.driver import record_launches
    x = torch.randn(512, 100)
    w = torch.randn(100)
    out = torch.empty_like(x)
    with record_launches() as charged:  # the default: held tiles are charged like any load
        _scale_rows[(512,)](x, w, out, 100, BLOCK=128)
    # the assumption under study (assumptions.held_tiles = "held"): a PE's later programs find
    # the tile in local memory
    old_chip = driver.DEVICE.chip
    driver.set_chip("mtia2i@assumptions.held_tiles=held")
    try:
        _check_held_tiles(x, w, out, charged[0].cycles)
    finally:
        driver.set_chip(old_chip)


def _check_held_tiles(x, w, out, charged_cycles):
    from backend.driver import record_launches
    with record_launches() as recs:
        k = _scale_rows[(512,)](x, w, out, 100, BLOCK=128)
    assert recs[0].cycles < charged_cycles
    torch.testing.assert_close(out, x * w)
    loads = [ln for ln in k.asm["tile"].splitlines() if "mtia.dma_load" in ln]
    assert len(loads) == 2
    assert "pe_resident" in next(ln for ln in loads if "%w_ptr" in ln)
    assert "pe_resident" not in next(ln for ln in loads if "%x_ptr" in ln)
    # out shares w's storage: the launch writes that tensor, so no program may reuse the tile
    buf = torch.zeros(100 + 512 * 100)
    buf[:100] = w
    out2 = buf[100:].view(512, 100)
    with record_launches() as recs2:
        _scale_rows[(512,)](x, buf[:100], out2, 100, BLOCK=128)
    torch.testing.assert_close(out2, x * w)
    assert recs2[0].cycles > recs[0].cycles


def test_a_launch_under_a_dispatch_mode_runs_the_simulator_outside_it():
    """The simulator computes with torch; a caller's TorchDispatchMode (Inductor's runtime
    checks, a host-op recorder) must see only the caller's ops, not one per simulated tile op."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    x = torch.randn(1000)
    y = torch.empty_like(x)
    with Count():
        _masked_copy[(4,)](x, y, x.numel(), BLOCK=256)
    torch.testing.assert_close(y, x * 2.0)
    assert seen == [], f"the simulator's own ops reached the caller's dispatch mode: {sorted(set(seen))[:8]}"


@triton.jit
def _inductor_style_transpose(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK: tl.constexpr, XBLOCK: tl.constexpr):
    # what Inductor generates for x.t().contiguous() (n x n): the load's tile is [Y, X] with Y
    # contiguous in memory, the store's is [Y, X] with X contiguous
    yindex = tl.program_id(1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (yindex + ynumel * xindex), xmask & ymask)
    tl.store(out_ptr0 + (xindex + xnumel * yindex), tmp0, xmask & ymask)


@pytest.mark.parametrize("n", [256, 200])
def test_a_tile_whose_contiguous_dim_is_not_last_is_a_dma_in_memory_order_and_a_permute(n):
    import backend.driver as drv
    x = torch.randn(n, n)
    cycles = {}
    for on in (True, False):
        y = torch.empty(n, n)
        with drv.record_launches() as recs:
            k = _inductor_style_transpose[(triton.cdiv(n, 128), triton.cdiv(n, 8))](
                x, y, n, n, YBLOCK=8, XBLOCK=128, transposed_dma=on)
        torch.testing.assert_close(y, x.t())
        cycles[on] = recs[0].cycles
        tile = k.asm["tile"]
        assert _paths(k) == ["dma", "dma"]
        if on:
            # the load moves a [128, 8] box (runs of 8 contiguous elements), the MLU permutes it
            assert re.search(r"mtia\.dma_load .*strides=\['%ynumel', 1\].*permuted = \[1, 0\]} : tile<128x8xf32>",
                             tile), tile
            assert re.search(r"tt\.trans %v\d+ {order = \[1, 0\]} : tile<8x128xf32>", tile), tile
            assert "mlu.permute" in k.asm["mtiasm"]
        else:
            assert "mlu.permute" not in k.asm["mtiasm"]
    assert cycles[True] < cycles[False] / 2, cycles


@triton.jit
def _every_other(x_ptr, y_ptr, n, STEP: tl.constexpr, BLOCK: tl.constexpr):
    # Inductor's MX4 packing reads x[2i] and x[2i + 1] as two tiles
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + STEP * offs, mask=m, other=0.0)
    b = tl.load(x_ptr + (STEP - 1) + STEP * offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, a - 2.0 * b, mask=m)


@pytest.mark.parametrize("step", [2, 4])
@pytest.mark.parametrize("n", [1 << 16, 1000])
def test_a_load_with_a_small_last_dim_stride_reads_the_dense_span_and_splits_it(step, n):
    import backend.driver as drv
    x = torch.randn(step * n)
    want = x[0::step] - 2.0 * x[step - 1::step]
    cycles = {}
    for on in (True, False):
        y = torch.empty(n)
        with drv.record_launches() as recs:
            k = _every_other[(triton.cdiv(n, 1024),)](x, y, n, STEP=step, BLOCK=1024, dense_strided_dma=on)
        torch.testing.assert_close(y, want)
        cycles[on] = recs[0].cycles
        asm = k.asm["mtiasm"]
        if on:
            # one run of 1024 * step elements per load, bounded at its last wanted element;
            # log2(step) MLU splits keep every step-th
            assert re.search(rf"dense_step = {step}}} : tile<{1024 * step}xf32>", k.asm["tile"]), k.asm["tile"]
            assert asm.count("mlu.split") == 2 * (step.bit_length() - 1), asm
        else:
            assert "mlu.split" not in asm
    if n == 1 << 16:  # 64 programs of 1024: one run per load instead of 1024 (each a whole 32-byte burst)
        assert cycles[True] < cycles[False] / 3, cycles


@triton.jit
def _unpack_nibbles(p_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Inductor's pointwise stack of (p & 15, p >> 4): element x reads p[x // 2] under a parity mask
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    even = (offs % 2) < 1
    lo = tl.load(p_ptr + offs // 2, mask=m & even, other=0).to(tl.int32) & 15
    hi = tl.load(p_ptr + offs // 2, mask=m & ((offs % 2) >= 1), other=0).to(tl.int32) >> 4
    tl.store(y_ptr + offs, tl.where(even, lo, hi), mask=m)


@triton.jit
def _repeat_rows(x_ptr, y_ptr, ROWS: tl.constexpr, K: tl.constexpr, N: tl.constexpr, XBLOCK: tl.constexpr):
    # Inductor's 2-D tiles of a nearest-neighbour repeat along the last dim: y[r, c] = x[r, c // K]
    r = tl.program_id(1) * ROWS + tl.arange(0, ROWS)[:, None]
    c = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    v = tl.load(x_ptr + (N // K) * r + c // K)
    tl.store(y_ptr + N * r + c, v * 3.0)


@pytest.mark.parametrize("n", [1 << 16, 1000])
def test_a_load_at_index_div_two_reads_the_packed_span_once_and_repeats_it(n):
    import backend.driver as drv
    p = torch.randint(0, 256, ((n + 1) // 2,), dtype=torch.uint8)
    q = p.to(torch.int32)
    want = torch.stack([q & 15, q >> 4], dim=1).reshape(-1)[:n]
    cycles = {}
    for on in (True, False):
        y = torch.empty(n, dtype=torch.int32)
        with drv.record_launches() as recs:
            k = _unpack_nibbles[(triton.cdiv(n, 1024),)](p, y, n, BLOCK=1024, repeat_dma=on)
        torch.testing.assert_close(y, want)
        cycles[on] = recs[0].cycles
        if on:
            # a masked DMA of the 512 packed bytes under the tile, the MLU repeats each twice;
            # the two parity-masked loads of the same bytes are one (cat_idiom)
            assert _paths(k) == ["dma+mask", "dma"], _paths(k)
            assert re.search(r"repeat = 2} : tile<512xi8>", k.asm["tile"]), k.asm["tile"]
            assert k.asm["mtiasm"].count("mlu.join") == 1, k.asm["mtiasm"]
        else:
            assert "gather" in _paths(k)
    if n == 1 << 16:  # one run per load instead of one index-driven element each
        assert cycles[True] < cycles[False] / 3, cycles


@pytest.mark.parametrize("rep", [2, 4])
def test_a_2d_tile_at_column_div_k_is_one_dense_dma_and_an_mlu_repeat(rep):
    import backend.driver as drv
    rows, n = 64, 256
    x = torch.randn(rows, n // rep)
    want = 3.0 * x.repeat_interleave(rep, dim=1)
    cycles = {}
    for on in (True, False):
        y = torch.empty(rows, n)
        with drv.record_launches() as recs:
            k = _repeat_rows[(n // 128, rows // 8)](x, y, ROWS=8, K=rep, N=n, XBLOCK=128, repeat_dma=on)
        torch.testing.assert_close(y, want)
        cycles[on] = recs[0].cycles
        if on:
            assert _paths(k) == ["dma", "dma"], _paths(k)
            assert re.search(rf"repeat = {rep}}} : tile<8x{128 // rep}xf32>", k.asm["tile"]), k.asm["tile"]
            assert k.asm["mtiasm"].count("mlu.join") == rep.bit_length() - 1, k.asm["mtiasm"]
    assert cycles[True] < cycles[False], cycles


@triton.jit
def _table_lookup(x_ptr, t_ptr, y_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    # Inductor's lookup of a small table by a computed index, which it checks with an assert
    # (table_offsets[table of each index] in a table-batched embedding bag)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, m)
    t = (x % (K + 1)).to(tl.int64) - 1
    t = tl.where(t < 0, t + K, t)
    tl.device_assert(((0 <= t) & (t < K)) | ~m, "index out of bounds: 0 <= t < K")
    v = tl.load(t_ptr + t, m, other=-7)
    tl.store(y_ptr + offs, x + v, mask=m)


@triton.jit
def _pair_products(idx_ptr, z_ptr, y_ptr, P: tl.constexpr, F: tl.constexpr, YBLOCK: tl.constexpr,
                   XBLOCK: tl.constexpr):
    # Inductor's gather of DLRM's lower-triangle pairs z[b, i[p], j[p]], indices asserted in [0, F)
    b = tl.program_id(1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    p = tl.arange(0, XBLOCK)[None, :]
    m = p < P
    i = tl.load(idx_ptr + p, m)
    j = tl.load(idx_ptr + P + p, m)
    tl.device_assert(((0 <= i) & (i < F)) | ~m, "index out of bounds: 0 <= i < F")
    tl.device_assert(((0 <= j) & (j < F)) | ~m, "index out of bounds: 0 <= j < F")
    v = tl.load(z_ptr + (j + F * i + F * F * b), m)
    tl.store(y_ptr + (p + P * b), v, m)


@pytest.mark.parametrize("n", [5000, 1 << 14])
def test_a_gather_from_a_small_asserted_table_reads_the_table_once(n):
    import backend.driver as drv
    K = 4
    x = torch.arange(n, dtype=torch.int64) * 7
    table = torch.tensor([10, 20, 30, 40], dtype=torch.int64)
    t = x % (K + 1) - 1
    want = x + table[torch.where(t < 0, t + K, t)]
    cycles = {}
    for on in (True, False):
        y = torch.empty_like(x)
        with drv.record_launches() as recs:
            k = _table_lookup[(triton.cdiv(n, 1024),)](x, table, y, n, K=K, BLOCK=1024, debug=True, table_dma=on)
        torch.testing.assert_close(y, want)
        cycles[on] = recs[0].cycles
        if on:
            # the 4-entry table in one DMA (no mask: the span is the asserted range), the MLU gathers
            assert "gather" not in _paths(k), _paths(k)
            assert re.search(r"table = 4} : tile<4xi64>", k.asm["tile"]), k.asm["tile"]
            assert k.asm["mtiasm"].count("mlu.gather") == 1, k.asm["mtiasm"]
        else:
            assert "gather" in _paths(k)
    assert cycles[True] < cycles[False] / 2, cycles


def test_a_gather_of_row_pairs_reads_each_row_densely():
    import backend.driver as drv
    F, B = 27, 64
    i, j = torch.tril_indices(F, F, offset=-1)
    P = i.numel()
    idx = torch.cat([i, j])
    z = torch.randn(B, F, F, dtype=torch.bfloat16)
    cycles = {}
    for on in (True, False):
        y = torch.zeros(B, P, dtype=torch.bfloat16)
        with drv.record_launches() as recs:
            k = _pair_products[(1, B // 8)](idx, z, y, P=P, F=F, YBLOCK=8, XBLOCK=512, debug=True, table_dma=on)
        assert torch.equal(y, z[:, i, j])
        cycles[on] = recs[0].cycles
        if on:  # one row of F * F products per batch row of the tile, at the batch stride
            assert re.search(rf"table = {F * F}}} : tile<8x{F * F}xbf16>", k.asm["tile"]), k.asm["tile"]
    assert cycles[True] < cycles[False] / 2, cycles


def test_a_gather_whose_index_no_assert_bounds_stays_index_driven():
    import backend.driver as drv
    n = 4096
    x = torch.arange(n, dtype=torch.int64) * 7
    table = torch.tensor([10, 20, 30, 40], dtype=torch.int64)
    y = torch.empty_like(x)
    with drv.record_launches():  # no debug: Triton drops the assert, so nothing bounds the index
        k = _table_lookup[(n // 1024,)](x, table, y, n, K=4, BLOCK=1024)
    assert "gather" in _paths(k), _paths(k)
