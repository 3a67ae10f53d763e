"""MTIA compiler hints and language extensions: `persistent=True` (backend/passes/persistent.py)
and `mtia.pe_id()` / `mtia.num_pes()` (backend/language/mtia.py). The printed PE-level IR of
a small kernel is pinned; numbers are checked against torch and the plain launch."""
from __future__ import annotations

import re

import pytest
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from backend.driver import record_launches
from backend.language import libdevice as mtia_libdevice
from backend.language import mtia


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def _scale_rows(x_ptr, w_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """out[r, :] = x[r, :] * w + (pid_y, pid_z, grid sizes): a weight row the same in every
    program, and every program-id / grid query."""
    r = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
    cols = tl.arange(0, BLOCK)
    m = cols < N
    w = tl.load(w_ptr + cols, mask=m)
    x = tl.load(x_ptr + r * N + cols, mask=m)
    extra = (tl.program_id(1) * 10 + tl.program_id(2) * 100 + tl.num_programs(2) * 1000).to(tl.float32)
    tl.store(out_ptr + r * N + cols, x * w + extra, mask=m)


def _canonical(text: str) -> str:
    """The printed IR with value names numbered in order of appearance and source locations
    dropped (value numbers depend on what was compiled before)."""
    names: dict[str, str] = {}

    def name(m: re.Match) -> str:
        return names.setdefault(m.group(0), f"%{len(names)}")
    text = re.sub(r"\s*//\s*/\S+:\d+:\d+", "", text)
    return re.sub(r"%v?\d+", name, text)


PINNED_PE = """\
// PE program: 1536 of 393216 bytes of local memory, DMA in loops buffered x2
// buffer %0: f32[64] at local+0 (256 B x2)
// buffer %1: f32[64] at local+0 (256 B x2)
// buffer %2: f32[64] at local+0 (256 B x2)
// buffer %3: f32[64] at local+0 (256 B x2)
// buffer %4: f32[64] at local+0 (256 B x2)
// buffer %5: f32[64] at local+0 (256 B x2)
// buffer %6: f32[64] at local+0 (256 B x2)
// buffer %7: f32[64] at local+512 (256 B x2)
// buffer %8: f32[64] at local+512 (256 B x2)
// buffer %9: f32[64] at local+512 (256 B x2)
// buffer %10: f32[64] at local+512 (256 B x2)
// buffer %11: f32[64] at local+512 (256 B x2)
// buffer %12: f32[64] at local+512 (256 B x2)
// buffer %13: f32[64] at local+512 (256 B x2)
// buffer %14: f32[64] at local+1024 (256 B x2)
tile.func @_add(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %out_ptr: ptr<f32>, %n: i32, %mtia_grid_x: i32, %mtia_grid_y: i32, %mtia_grid_z: i32) {
  %15 = arith.constant  {value = 64} : i64
  %16 = arith.constant  {value = -64} : i64
  %17 = tt.get_program_id  {axis = 0} : i32
  %18 = arith.muli %mtia_grid_x, %mtia_grid_y : i32
  %19 = arith.muli %18, %mtia_grid_z : i32
  %20 = arith.cmpi %17, %19 {pred = "slt"} : i1
  %2, %9 = scf.if %20 : tile<64xf32>, tile<64xf32>
    ^region0():
      %21 = arith.remsi %17, %mtia_grid_x : i32
      %22 = arith.muli %21, %15 : i64
      %23 = arith.muli %21, %16 : i64
      %24 = arith.addi %23, %n : i64
      %0 = mtia.dma_load %x_ptr, %22, %24 {path = "dma", desc = "base=%x_ptr, offset=%22, strides=[1], hi=['%24']"} : tile<64xf32>
      %7 = mtia.dma_load %y_ptr, %22, %24 {path = "dma", desc = "base=%y_ptr, offset=%22, strides=[1], hi=['%24']"} : tile<64xf32>
      scf.yield %0, %7
    ^region1():
      %1 = ub.poison  : tile<64xf32>
      %8 = ub.poison  : tile<64xf32>
      scf.yield %1, %8
  %25 = tt.get_num_programs  {axis = 0} : i32
  %6, %13 = scf.for %17, %19, %25, %2, %9 {prefetch = 2} : tile<64xf32>, tile<64xf32>
    ^region0(%26: i32, %3: tile<64xf32>, %10: tile<64xf32>):
      %27 = arith.addi %26, %25 : i32
      %28 = arith.remsi %26, %mtia_grid_x : i32
      %14 = arith.addf %3, %10 : tile<64xf32>
      %29 = arith.cmpi %27, %19 {pred = "slt"} : i1
      %30 = arith.muli %28, %15 : i64
      %31 = arith.muli %28, %16 : i64
      %5, %12 = scf.if %29 : tile<64xf32>, tile<64xf32>
        ^region0():
          %32 = arith.remsi %27, %mtia_grid_x : i32
          %33 = arith.muli %32, %15 : i64
          %34 = arith.muli %32, %16 : i64
          %35 = arith.addi %34, %n : i64
          %4 = mtia.dma_load %x_ptr, %33, %35 {path = "dma", desc = "base=%x_ptr, offset=%33, strides=[1], hi=['%35']"} : tile<64xf32>
          %11 = mtia.dma_load %y_ptr, %33, %35 {path = "dma", desc = "base=%y_ptr, offset=%33, strides=[1], hi=['%35']"} : tile<64xf32>
          scf.yield %4, %11
        ^region1():
          scf.yield %3, %10
      %36 = arith.addi %31, %n : i64
      mtia.dma_store %out_ptr, %30, %36, %14 {path = "dma", desc = "base=%out_ptr, offset=%30, strides=[1], hi=['%36'], value=%14", shape = [64], dtype = "f32"}
      scf.yield %5, %12
  tt.return
}
"""


def test_persistent_pe_ir_is_pinned():
    x, y = torch.randn(300), torch.randn(300)
    out = torch.empty(300)
    k = _add[(5,)](x, y, out, 300, BLOCK=64, persistent=True)
    assert torch.equal(out, x + y)
    # the grid as hidden parameters; the first id's loads before the loop over program ids
    # (pid, pid + P, ...); in the loop, the next id's loads (guarded) before this id's store
    assert _canonical(k.asm["pe"]) == PINNED_PE


def test_persistent_matches_torch_and_plain_launch():
    torch.manual_seed(0)
    for n in (1, 100, 64 * 64, 64 * 64 * 3 + 17):
        x, y = torch.randn(n), torch.randn(n)
        out = torch.empty(n)
        _add[(triton.cdiv(n, 16),)](x, y, out, n, BLOCK=16, persistent=True)
        assert torch.equal(out, x + y), n
    # 3-D grid, more programs than PEs, a hoisted weight row and every id / size query
    gx, gy, gz, N = 7, 5, 3, 40
    x, w = torch.randn(gx * gy * gz, N), torch.randn(N)
    rows = torch.arange(gx * gy * gz)
    py, pz = (rows // gx) % gy, rows // (gx * gy)
    ref = x * w + (py * 10 + pz * 100 + gz * 1000).float()[:, None]
    for persistent in (False, True):
        out = torch.empty_like(x)
        k = _scale_rows[(gx, gy, gz)](x, w, out, N, BLOCK=64, persistent=persistent)
        torch.testing.assert_close(out, ref)
    # the weight row is loaded once per PE, before the loop over program ids
    head, loop = k.asm["tile"].split("scf.for", 1)
    assert "base=%w_ptr" in head and "base=%w_ptr" not in loop


def test_persistent_launch_runs_one_program_per_pe_and_pays_overheads_once():
    n = 64 * 64 * 8
    x, y = torch.randn(n), torch.randn(n)
    cycles = {}
    for persistent in (False, True):
        out = torch.empty(n)
        with record_launches() as recs:
            _add[(n // 64,)](x, y, out, n, BLOCK=64, persistent=persistent)
        assert torch.equal(out, x + y)
        cycles[persistent] = recs[0].cycles
        assert recs[0].grid == ((64, 1, 1) if persistent else (n // 64, 1, 1))
        assert recs[0].timing.detail["n_programs"] == (64 if persistent else n // 64)
    # 8 tiny programs per PE: replacing a job (0.5 us) costs more than their work
    assert cycles[True] < 0.6 * cycles[False]
    with record_launches() as recs:
        _add[(3,)](x, y, out, 3 * 64, BLOCK=64, persistent=True)
    assert recs[0].grid == (3, 1, 1)


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_persistent_store_of_a_prefetched_tile():
    """A store of the loaded tile itself (a copy): the prefetch moves the load to the previous
    iteration and the store's descriptor names the carried tile, not the moved load."""
    x = torch.randn(1000)
    out = torch.empty_like(x)
    k = _copy[(8,)](x, out, 1000, BLOCK=128, persistent=True)
    assert torch.equal(out, x)
    assert "prefetch = 1" in k.asm["tile"]


@pytest.mark.parametrize("value", ["yes", 2, None.__class__])
def test_bad_hint_values_are_errors_naming_the_hint(value):
    x = torch.zeros(64)
    with pytest.raises(ValueError, match=r"MTIA hint persistent=.* is not valid"):
        _add[(1,)](x, x, x, 64, BLOCK=64, persistent=value)


@pytest.mark.parametrize("hint", ["use_reduction_engine", "software_pipeline", "pipeline_programs"])
def test_bad_switch_values_are_errors_naming_the_switch(hint):
    x = torch.zeros(64)
    with pytest.raises(ValueError, match=rf"MTIA hint {hint}='maybe' is not valid"):
        _add[(1,)](x, x, x, 64, BLOCK=64, **{hint: "maybe"})


def test_unknown_hint_is_an_error_naming_it():
    x = torch.zeros(64)
    with pytest.raises(KeyError, match="persistant"):
        _add[(1,)](x, x, x, 64, BLOCK=64, persistant=True)


@triton.jit
def _who(out_ptr):
    tl.store(out_ptr + tl.program_id(0) * 2, mtia.pe_id())
    tl.store(out_ptr + tl.program_id(0) * 2 + 1, mtia.num_pes())


def test_pe_id_and_num_pes():
    out = torch.full((128,), -1, dtype=torch.int32)
    k = _who[(64,)](out)
    # compiled persistent whatever the launch options say: one program per PE
    assert out.view(-1, 2).tolist() == [[i, 64] for i in range(64)]
    assert "scalar.pid" in k.asm["mtiasm"] and '"persistent": true' in k.asm["tile"]
    out = torch.full((10,), -1, dtype=torch.int32)
    _who[(5,)](out)
    assert out.view(-1, 2).tolist() == [[i, 5] for i in range(5)]
    # more programs than PEs would run some PE's share of the work twice
    with pytest.raises(ValueError, match=r"calls mtia.pe_id\(\) / mtia.num_pes\(\): launch at most one program "
                                         r"per PE, got grid \(100, 1, 1\)"):
        _who[(100,)](torch.zeros(200, dtype=torch.int32))


def test_extension_on_another_backend_is_a_clear_error():
    with pytest.raises(Exception, match=r"mtia\.pe_id\(\) is an MTIA language extension and needs the MTIA "
                                        r"backend \(this kernel is being compiled for 'cuda'\)"):
        triton.compile(ASTSource(_who, {"out_ptr": "*i32"}, {}), target=GPUTarget("cuda", 80, 32))


@triton.jit
def _row_sums(x_ptr, out_ptr, M, N: tl.constexpr):
    """The README's example: a contiguous share of the rows per PE."""
    pe, n_pe = mtia.pe_id(), mtia.num_pes()
    rows_per_pe = tl.cdiv(M, n_pe)
    for r in range(pe * rows_per_pe, tl.minimum(M, (pe + 1) * rows_per_pe)):
        tl.store(out_ptr + r, tl.sum(tl.load(x_ptr + r * N + tl.arange(0, N)), axis=0))


def test_readme_pe_grid_example():
    x = torch.randn(1000, 128)
    out = torch.empty(1000)
    _row_sums[(64,)](x, out, 1000, N=128)
    torch.testing.assert_close(out, x.sum(1), atol=1e-4, rtol=1e-5)


@triton.jit
def _gather_rows(x_ptr, index_ptr, out_ptr, n, D: tl.constexpr, BM: tl.constexpr):
    """docs/extensions.md: a PE-grid row gather loading the next tile's indices first."""
    pe, n_pe = mtia.pe_id(), mtia.num_pes()
    per = tl.cdiv(tl.cdiv(n, BM), n_pe)
    rows = tl.arange(0, BM)
    cols = tl.arange(0, D)
    idx = tl.load(index_ptr + pe * per * BM + rows, mask=pe * per * BM + rows < n, other=0)
    for t in range(pe * per, tl.minimum((pe + 1) * per, tl.cdiv(n, BM))):
        r = (t + 1) * BM + rows
        idx_n = tl.load(index_ptr + r, mask=r < n, other=0)
        m = (t * BM + rows)[:, None] < n
        x = tl.load(x_ptr + idx[:, None] * D + cols[None, :], mask=m)
        tl.store(out_ptr + (t * BM + rows)[:, None] * D + cols[None, :], x, mask=m)
        idx = idx_n


@triton.jit
def _silu_mul(g_ptr, u_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    g = tl.load(g_ptr + offs)
    tl.store(o_ptr + offs, g * mtia_libdevice.sigmoid(g) * tl.load(u_ptr + offs))


def test_docs_extensions_examples():
    x, index = torch.randn(500, 128), torch.randint(0, 500, (1000,))
    out = torch.empty(1000, 128)
    _gather_rows[(64,)](x, index, out, 1000, D=128, BM=64)
    assert torch.equal(out, x[index])
    g, u, o = torch.randn(256), torch.randn(256), torch.empty(256)
    k = _silu_mul[(1,)](g, u, o, N=256)
    torch.testing.assert_close(o, torch.nn.functional.silu(g) * u, rtol=1e-5, atol=1e-6)
    # the MTIA libdevice's sigmoid is one SFU lookup (tl.sigmoid: exp, add, divide)
    assert "fn=sigmoid" in k.asm["mtiasm"] and "fn=exp" not in k.asm["mtiasm"]


def test_mtia_options_switch_the_hint_off(monkeypatch):
    monkeypatch.setenv("MTIA_OPTIONS", "persistent=0")
    x, y = torch.randn(640), torch.randn(640)
    out = torch.empty(640)
    with record_launches() as recs:
        _add[(80,)](x, y, out, 640, BLOCK=8, persistent=True)
    assert torch.equal(out, x + y) and recs[0].grid == (80, 1, 1)


@triton.jit
def _double(x_ptr, out_ptr, N: tl.constexpr):
    r = tl.program_id(0)
    x = tl.load(x_ptr + r * N + tl.arange(0, N))
    tl.store(out_ptr + r * N + tl.arange(0, N), x * 2.0)


def test_persistent_that_does_not_fit_names_the_hint():
    x = torch.randn(3, 65536)  # a 256 KB row: fits once, not twice
    out = torch.empty_like(x)
    _double[(3,)](x, out, N=65536)
    with pytest.raises(Exception, match=r"persistent=True: the loop over program ids buffers its loads x2"):
        _double[(3,)](x, out, N=65536, persistent=True)
    out.zero_()
    _double[(3,)](x, out, N=65536, persistent=True, num_stages=1)
    assert torch.equal(out, x * 2)


@triton.jit
def _norm_like(x_ptr, w_ptr, out_ptr, N: tl.constexpr, TWICE: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    m = tl.sum(x, axis=0) / N
    if TWICE:  # a second pass over the row, as a looped reduction's (masked: not the same load)
        x = tl.load(x_ptr + offs, mask=tl.arange(0, N) < N, other=0.0)
    tl.store(out_ptr + offs, (x - m) * tl.load(w_ptr + tl.arange(0, N)))


@pytest.mark.parametrize("twice", [False, True])
def test_persistent_invariant_hoists_a_weight_read_once_per_pe_unless_the_row_streams_twice(twice):
    """`persistent_invariant` (the compiler's choice on Inductor's path): the weight is half of a
    program's loads, so the kernel runs persistent, one program per PE, with fewer bytes loaded;
    a program that loads its row twice keeps one program per row (persistent it lost more to the
    missing program overlap than it saved), and so does one whose weight is small."""
    import backend.driver as drv
    n, rows = 2048, 256  # an 8 KB weight: the least the compiler hoists (pipeline.INVARIANT_BYTES)
    x, w, out = torch.randn(rows * n), torch.randn(n), torch.empty(rows * n)
    got = {}
    for on in (False, True):
        with drv.record_launches() as recs:
            k = _norm_like[(rows,)](x, w, out, N=n, TWICE=twice, persistent_invariant=on)
        xs = x.view(rows, n)
        torch.testing.assert_close(out.view(rows, n), (xs - xs.mean(1, keepdim=True)) * w, rtol=1e-5, atol=1e-5)
        got[on] = (bool(k.metadata.persistent_invariant), recs[0].grid, recs[0].timing.engine_busy["DMA_IN"])
    assert got[True][1] == ((rows, 1, 1) if twice else (64, 1, 1)), got
    assert (got[True][2] < got[False][2]) != twice, got


def test_persistent_invariant_leaves_a_small_weight_to_program_overlap():
    import backend.driver as drv
    n, rows = 512, 512  # a 2 KB weight
    x, w, out = torch.randn(rows * n), torch.randn(n), torch.empty(rows * n)
    with drv.record_launches() as recs:
        _norm_like[(rows,)](x, w, out, N=n, TWICE=False, persistent_invariant=True)
    assert recs[0].grid == (rows, 1, 1)
