"""The `inductor` implementation, compile_for_mtia and the chip-aware Inductor switches."""
from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

from backend.inductor_cpu import options
from study.inductor import HostFallback, NotOneGraph, run_on_chip


pytestmark = pytest.mark.usefixtures("chip_aware_inductor")


def test_every_workload_with_a_reference_has_an_inductor_impl() -> None:
    from study.registry import load_all
    ws = load_all()
    assert all("inductor" in w.impls for w in ws.values() if "torch" in w.impls)


def test_inductor_row_is_simulated_and_checked_against_torch() -> None:
    from study.measure import measure, reference
    from study.registry import load_all
    w = load_all()["softmax"]
    shape = next(s for s in w.shapes if s.name == "s")
    inputs, ref = reference(w, shape, "f32")
    (row,) = measure(w, "inductor", shape, "f32", "mtia2i", inputs, ref, {})
    assert row["correct"], row["notes"]
    assert row["launches"] >= 1 and row["time_us"] > 0


def test_host_fallback_is_an_error_not_a_time() -> None:
    x = torch.randn(64, 32)
    with pytest.raises(HostFallback, match="hash_tensor"):
        run_on_chip("hash_test", lambda x: torch.hash_tensor(x, dim=-1), {"x": x})


def test_reference_split_into_graphs_per_value_is_refused() -> None:
    # a Python loop over data (as a jagged reference written per segment): one graph per segment
    def per_segment(x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        b = offsets.tolist()
        for lo, hi in zip(b[:-1], b[1:]):
            out[lo:hi] = torch.softmax(x[lo:hi], dim=0)
        return out
    x = torch.randn(10, 4)
    with pytest.raises(NotOneGraph, match="per_segment_test.*graphs"):
        run_on_chip("per_segment_test", per_segment, {"x": x, "offsets": torch.tensor([0, 3, 7, 10])})


def test_options_env_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTIA_INDUCTOR", "split_reductions=0")
    got = options.activate(extern_gemm=False)
    assert got["split_reductions"] is False and got["extern_gemm"] is False and got["persistent_reductions"]
    with pytest.raises(ValueError):
        options.activate(no_such_switch=True)


def test_split_reductions_spread_a_full_sum_over_the_pes() -> None:
    from study.compile_mtia import compile_for_mtia
    x = torch.randn(1 << 18)
    grids = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, rep = compile_for_mtia(lambda a: a.sum(), x, split_reductions=on)
        torch.testing.assert_close(c(x), x.sum(), rtol=1e-4, atol=1e-3)
        grids[on] = max(k.grid[0] for k in rep.kernels)
    assert grids[True] >= 64 > grids[False]


def test_compile_for_mtia_reports_kernels_and_host_ops_apart() -> None:
    from study import compile_for_mtia, models
    case = models.build("decoder", "test")
    compiled, rep = compile_for_mtia(case.module, *case.inputs)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*case.inputs), case.module(*case.inputs), rtol=1e-2, atol=1e-2)
    assert rep.kernels and all(k.time_us > 0 and k.engine_busy for k in rep.kernels)
    assert any(k.aten_ops and k.aten_ops[0].startswith("aten.") for k in rep.kernels)
    # GEMMs run as the expert program or a Triton template, whichever the simulated autotuning
    # found faster (DPE busy), attention as the masked flash kernel: all on chip
    assert any(k.name.startswith(("expert_gemm", "triton_tem_")) and k.engine_busy.get("DPE", 0) > 0
               for k in rep.kernels)
    assert any(k.name == "flash_attn_mask_kernel" and k.aten_ops for k in rep.kernels)
    assert rep.all_on_chip
    assert rep.chip_time_us == pytest.approx(sum(k.time_us for k in rep.kernels))
    torch._dynamo.reset()
    _, off = compile_for_mtia(case.module, *case.inputs, extern_sdpa=False)
    assert [h.name for h in off.host_ops] == ["_scaled_dot_product_flash_attention_for_cpu"]
    assert "host fallbacks" in off.report()


def test_extern_gemm_off_leaves_mm_on_the_host() -> None:
    from study.compile_mtia import compile_for_mtia
    a, b = torch.randn(32, 64).bfloat16(), torch.randn(64, 48).bfloat16()
    _, on = compile_for_mtia(lambda a, b: (a @ b).relu(), a, b, triton_gemm_templates=False)
    torch._dynamo.reset()
    _, off = compile_for_mtia(lambda a, b: (a @ b).relu(), a, b, extern_gemm=False, triton_gemm_templates=False)
    assert on.all_on_chip and any(k.name.startswith("expert_gemm") for k in on.kernels)
    assert [h.name for h in off.host_ops] == ["mm"]


def test_dlrm_runs_every_op_on_the_chip() -> None:
    from study import compile_for_mtia, models
    case = models.build("dlrm", "test")
    compiled, rep = compile_for_mtia(case.module, *case.inputs)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*case.inputs), case.module(*case.inputs), rtol=1e-2, atol=1e-2)
    assert rep.all_on_chip, rep.report()
    assert any(k.name == "embedding_bag_kernel" for k in rep.kernels)


def test_inductor_autotuning_reads_simulated_time():
    import torch
    from torch._inductor.runtime.benchmarking import benchmarker

    from backend.driver import DEVICE
    from backend.inductor_cpu import benchmark
    benchmark.install()

    def launches_of_known_time():
        DEVICE.clock_us += 3.0  # stands for the simulated launches a call makes

    # Inductor's CPU benchmark now reports the simulated microseconds, as milliseconds
    assert benchmarker.benchmark(launches_of_known_time, device="cpu") == 3.0 / 1e3
    assert benchmarker.benchmark(lambda: torch.zeros(4), device="cpu") == 0.0  # no launch: a tie


def test_extern_ops_are_registered_by_the_study() -> None:
    """The backend routes mm / embedding bags to the chip only through implementations its user
    registers (it imports neither kernels/ nor baselines/); configure() registers them."""
    from backend.inductor_cpu import extern
    with pytest.raises(ValueError, match="unknown extern op"):
        extern.register_extern("conv", lambda *a: None)
    assert extern.registered("gemm") and extern.registered("embedding_bag")


def test_pointwise_blocks_fill_a_tile_and_every_pe() -> None:
    from backend.inductor_cpu.heuristics import pointwise_blocks
    # a 4096-wide row is whole in a tile of 8192; two rows per program
    assert pointwise_blocks({"x": 4096, "y": 4096}, 8192, 64) == {"x": 4096, "y": 2}
    # 1128 columns: 2048 pads no more than 1024 (2048 either way), so the larger block
    assert pointwise_blocks({"x": 1128, "y": 4096}, 8192, 64) == {"x": 2048, "y": 4}
    # too few elements for 64 programs of a full tile: blocks halve, outer dimension first
    b = pointwise_blocks({"x": 512, "y": 64}, 8192, 64)
    assert b["x"] * b["y"] >= 256 and -(-512 // b["x"]) * -(-64 // b["y"]) >= 64
    assert pointwise_blocks({"x": 1 << 24}, 8192, 64) == {"x": 8192}
    # a transpose: square, so both the contiguous store and the transposed load move long runs
    assert pointwise_blocks({"x": 4096, "y": 4096}, 8192, 64, square=True) == {"x": 128, "y": 64}


def test_a_transpose_is_tiled_square_and_a_broadcast_or_concat_is_not() -> None:
    from study.compile_mtia import compile_for_mtia
    cases = {"transpose": (lambda a: a.t().contiguous(), (torch.randn(1024, 1024),)),
             "bias": (lambda a, b: a + b, (torch.randn(1024, 1024), torch.randn(1024))),
             "concat": (lambda a, b: torch.cat([a, b], 1), (torch.randn(1024, 1000), torch.randn(1024, 24)))}
    grids = {}
    for name, (fn, args) in cases.items():
        torch._dynamo.reset()
        c, rep = compile_for_mtia(fn, *args)
        torch.testing.assert_close(c(*args), fn(*args))
        grids[name] = [k.grid for k in rep.kernels]
    # 128 x 64 blocks: 8 x 16 programs; the load is a DMA in memory order plus an MLU permute
    assert grids["transpose"] == [(8, 16, 1)], grids
    # whole rows in x (1024 columns; 1000 and 24 padded to 1024 and 32)
    assert all(g[0] == 1 for g in grids["bias"] + grids["concat"]), grids


def test_bias_broadcast_is_tiled_and_sized_for_the_chip() -> None:
    from study.compile_mtia import compile_for_mtia
    x, bias = torch.randn(256, 1024), torch.randn(1024)
    fn = lambda a, b: torch.nn.functional.gelu(a + b)  # noqa: E731
    reps = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, reps[on] = compile_for_mtia(fn, x, bias, nd_tiling=on, pointwise_blocks=on)
        torch.testing.assert_close(c(x, bias), fn(x, bias), rtol=1e-5, atol=1e-5)
    (off,), (on,) = reps[False].kernels, reps[True].kernels
    # on: a 2-D tile whose bias row is one run, in 8192-element programs, at least one per PE.
    # off: Inductor's 1-D kernel reads the bias through `(x0 + arange) % 1024`; the backend's
    # structure pass reads a block that never crosses a multiple of 1024 as one run too (it was a
    # gather, and `on` twice as fast), so both read the same bytes the same way
    assert on.grid[0] * on.grid[1] >= 32 and off.grid[0] >= 64
    assert 0.8 < on.engine_busy["DMA_IN"] / off.engine_busy["DMA_IN"] < 1.2


@pytest.mark.parametrize("name", ["matmul", "dot_interaction"])
def test_inductor_compiles_the_model_form_at_the_workload_dtype(name: str) -> None:
    from study.measure import measure, reference
    from study.registry import load_all
    w = load_all()[name]
    assert w.model is not None and w.model is not w.impls["torch"]
    shape = next(s for s in w.shapes if "test" in s.tags)
    inputs, ref = reference(w, shape, "bf16")
    (row,) = measure(w, "inductor", shape, "bf16", "mtia2i", inputs, ref, {})
    assert row["correct"], row["notes"]


def test_a_stack_feeding_pointwise_code_is_fused_into_it_not_materialised() -> None:
    # MX4 dequantisation unpacks each byte with torch.stack([p & 15, p >> 4], 1): Inductor's CPU
    # path materialises the stack (two stores of stride 2); `pointwise_cat` fuses it into its user
    from baselines import torch_ref
    from study.compile_mtia import compile_for_mtia
    packed, exps = torch_ref.mx4_quantize(torch.randn(1 << 16))
    want = torch_ref.mx4_dequantize(packed, exps)
    reps = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, reps[on] = compile_for_mtia(torch_ref.mx4_dequantize, packed, exps, pointwise_cat=on)
        torch.testing.assert_close(c(packed, exps), want)
    assert len(reps[False].kernels) == 2 and len(reps[True].kernels) == 1
    assert "aten.stack" in reps[True].kernels[0].aten_ops
    assert reps[True].chip_time_us < reps[False].chip_time_us / 2, (reps[True].chip_time_us, reps[False].chip_time_us)


def test_a_concat_of_inputs_or_one_returned_as_is_keeps_inductors_concat_kernel() -> None:
    # no pointwise user: Inductor's ConcatKernel computes each input straight into its slice of
    # the output, which a fused masked select would only make slower; the switch leaves it alone
    from study.compile_mtia import compile_for_mtia
    a, b = torch.randn(64, 32), torch.randn(64, 16)
    for fn in (lambda a, b: torch.cat([a, b], dim=1), lambda a, b: torch.cat([a * 2, b + 1], dim=1)):
        names = {}
        for on in (False, True):
            torch._dynamo.reset()
            c, rep = compile_for_mtia(fn, a, b, pointwise_cat=on)
            torch.testing.assert_close(c(a, b), fn(a, b))
            names[on] = sorted(k.name for k in rep.kernels)
        assert names[True] == names[False]


def test_a_transposed_gemm_operand_is_read_as_it_lies_and_a_strided_one_copied_on_the_chip() -> None:
    # the extern GEMM reads row-major operands: x^T of x @ x^T goes to its NT form (no copy),
    # here its Gram form (x is B's operand too, and a 27 x 27 matrix is one tile: x read once);
    # another strided operand is copied by a simulated kernel (the program refuses a strided
    # operand rather than copy it on the host, unpriced)
    # (Inductor's Triton templates off, the default: with them on, a template reads the strided operand itself)
    from study.compile_mtia import compile_for_mtia
    x = torch.randn(8, 27, 32)
    fn = lambda x: torch.bmm(x, x.transpose(1, 2))  # noqa: E731
    c, rep = compile_for_mtia(fn, x, triton_gemm_templates=False)
    torch.testing.assert_close(c(x), fn(x), rtol=1e-4, atol=1e-4)
    assert [k.name.startswith("expert_gemm_gram") for k in rep.kernels] == [True]
    torch._dynamo.reset()
    z = torch.randn(8, 27, 32)
    fn1 = lambda x, z: torch.bmm(x, z.transpose(1, 2))  # noqa: E731
    c1, rep1 = compile_for_mtia(fn1, x, z, triton_gemm_templates=False)
    torch.testing.assert_close(c1(x, z), fn1(x, z), rtol=1e-4, atol=1e-4)
    assert [k.name.startswith("expert_gemm_nt") for k in rep1.kernels] == [True]
    torch._dynamo.reset()
    y = torch.randn(8, 64, 27)
    fn2 = lambda x, y: torch.bmm(x, y[:, ::2, :])  # noqa: E731
    c2, rep2 = compile_for_mtia(fn2, x, y, triton_gemm_templates=False)
    torch.testing.assert_close(c2(x, y), fn2(x, y), rtol=1e-4, atol=1e-4)
    names = [k.name for k in rep2.kernels]
    assert len(names) == 2 and names[1].startswith("expert_gemm_8x") and not names[0].startswith("expert"), names
    torch._dynamo.reset()
    c3, rep3 = compile_for_mtia(fn2, x, y, triton_gemm_templates=True)
    torch.testing.assert_close(c3(x, y), fn2(x, y), rtol=1e-4, atol=1e-4)
    assert [k.name.startswith("triton_tem_") for k in rep3.kernels] == [True]


def test_attention_copies_a_strided_head_dim_on_the_chip() -> None:
    """A q whose head dim is not unit-stride is made contiguous by a simulated copy kernel (a
    priced launch), not on the host, and the attention matches torch."""
    from backend.driver import record_launches
    from backend.inductor_cpu.attention import sdpa
    g = torch.Generator().manual_seed(0)
    qt = torch.randn(2, 3, 32, 40, generator=g)          # [B, H, D, S]: q's head dim has stride S
    k, v = (torch.randn(2, 3, 40, 32, generator=g) for _ in range(2))
    q = qt.transpose(-1, -2)
    with record_launches() as recs:
        got = sdpa(q, k, v)
    assert [r.name for r in recs] == ["head_copy_kernel", "flash_attn_mask_kernel"]
    torch.testing.assert_close(got, torch.nn.functional.scaled_dot_product_attention(q, k, v),
                               rtol=1e-4, atol=1e-4)


def test_causal_attention_starts_the_longest_query_blocks_first() -> None:
    """Causal, a query block's work grows with its position: the sdpa kernel starts the longest
    blocks of every head first (as the hand-written kernel does), so the PEs finish together;
    same cycles as kernels/attention.py on the same shape, and torch's numbers."""
    from backend.driver import record_launches, sim_mode
    from backend.inductor_cpu.attention import sdpa
    from kernels.attention import flash_attention
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 256, 64, generator=g).to(torch.bfloat16) for _ in range(3))
    torch.testing.assert_close(sdpa(q, k, v, is_causal=True).float(), torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), is_causal=True), rtol=2e-2, atol=2e-2)
    # 8 heads x 16 query blocks: twice as many programs as PEs (timing mode: cycles only)
    q, k, v = (torch.randn(1, 8, 2048, 64, generator=g).to(torch.bfloat16) for _ in range(3))
    with record_launches() as recs, sim_mode("timing"):
        sdpa(q, k, v, is_causal=True)
        flash_attention(q, k, v, causal=True)
    extern, hand = recs
    assert extern.cycles <= 1.01 * hand.cycles, (extern.cycles, hand.cycles)


def test_bucketize_against_a_few_boundaries_is_a_compare_and_count_not_a_search() -> None:
    # the table of each index of a table-batched embedding bag: Inductor's binary search loads
    # boundaries[mid] per element per step (one-element gathers); `small_bucketize` counts the
    # boundaries at or below each position instead: same integers, a fraction of the DMA time
    from study.compile_mtia import compile_for_mtia
    pos = torch.arange(3000)
    # sorted, with duplicates, below and above every position
    starts = torch.tensor([0, 0, 17, 400, 400, 401, 1999, 2500, 4000])
    for right in (True, False):
        fn = (lambda p, b: torch.bucketize(p, b, right=True)) if right else \
            (lambda p, b: torch.bucketize(p, b, out_int32=True))
        reps = {}
        for on in (False, True):
            torch._dynamo.reset()
            c, reps[on] = compile_for_mtia(fn, pos, starts, small_bucketize=on)
            got, want = c(pos, starts), fn(pos, starts)
            assert got.dtype == want.dtype and torch.equal(got, want)
        busy = {on: sum(k.engine_busy.get("DMA_IN", 0) for k in reps[on].kernels) for on in reps}
        assert busy[True] < busy[False] / 4, busy
        assert reps[True].chip_time_us < reps[False].chip_time_us, (reps[True].chip_time_us, reps[False].chip_time_us)


def test_a_persistent_reduction_takes_several_rows_and_loads_the_weight_once_per_program() -> None:
    # LayerNorm over 4096-wide rows: Inductor runs one row per program and loads the weight and
    # bias with every row; `reduction_rows` gives a program two rows (what local memory holds
    # with a program left for every PE), so those loads halve; same numbers
    import backend.driver as drv
    from study.compile_mtia import compile_for_mtia
    x, w, b = torch.randn(256, 4096), torch.randn(4096), torch.randn(4096)
    fn = lambda x, w, b: torch.nn.functional.layer_norm(x, (4096,), w, b)  # noqa: E731
    reps = {}
    before = drv.DEVICE.regime
    drv.set_regime("resident")  # the regime where those loads are the critical path
    try:
        for on in (False, True):
            torch._dynamo.reset()
            c, reps[on] = compile_for_mtia(fn, x, w, b, reduction_rows=on, persistent_invariant=False)
            torch.testing.assert_close(c(x, w, b), fn(x, w, b))
    finally:
        drv.set_regime(before)
    (off,), (rows,) = reps[False].kernels, reps[True].kernels
    assert off.grid == (256, 1, 1) and rows.grid == (128, 1, 1)
    assert rows.engine_busy["DMA_IN"] < 0.8 * off.engine_busy["DMA_IN"], (rows.engine_busy, off.engine_busy)
    assert rows.cycles < off.cycles


def test_a_large_compare_and_count_takes_a_fixed_block_not_inductors_autotuning() -> None:
    # small_bucketize's reduction runs over a broadcast row (the boundaries): with rows enough
    # for every PE to hold a full block, `reduction_rows` fixes its block (int64: 128 rows of 32,
    # what local memory holds) instead of autotuning XBLOCK 1..128 through the simulator; the
    # block autotuning would also pick is no slower, and the integers are the same (without
    # `persistent_invariant`, which makes the boundaries' load once per PE in either case when
    # it is a large enough share of a program's loads)
    from study.compile_mtia import compile_for_mtia
    pos = torch.arange(64 * 128 * 2)
    # 26 boundaries, as the DLRM shape's tables (Inductor unrolls a reduction of 8 or fewer)
    starts = torch.tensor(sorted([0, 5, 900, 900, 12000, 20000, *range(13000, 13020)]))
    fn = lambda p, b: torch.bucketize(p, b, right=True)  # noqa: E731
    reps = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, reps[on] = compile_for_mtia(fn, pos, starts, reduction_rows=on, persistent_invariant=False)
        assert torch.equal(c(pos, starts), fn(pos, starts))
    (off,), (rows,) = reps[False].kernels, reps[True].kernels
    # Inductor names an autotuned persistent reduction triton_per_*, a fixed config triton_unk_*
    assert off.name.startswith("triton_per_") and rows.name.startswith("triton_unk_"), (off.name, rows.name)
    assert rows.grid == (128, 1, 1), rows.grid
    assert rows.cycles <= off.cycles, (rows.cycles, off.cycles, off.grid)


def test_norm_weights_are_loaded_once_per_pe_by_persistent_programs() -> None:
    # RMSNorm's weight is the same in every program: with `persistent_invariant` the kernel is
    # compiled persistent (one program per PE) and the weight load hoisted out of the loop over
    # program ids; the grid is then the PE count, the weight's bytes are read 64 times instead of
    # once per program, and the numbers are the same
    from study.compile_mtia import compile_for_mtia
    x, w = torch.randn(512, 4096), torch.randn(4096)
    fn = lambda x, w: torch.nn.functional.rms_norm(x, (4096,), w, 1e-6)  # noqa: E731
    reps = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, reps[on] = compile_for_mtia(fn, x, w, persistent_invariant=on)
        torch.testing.assert_close(c(x, w), fn(x, w), rtol=1e-5, atol=1e-5)
    (off,), (per,) = reps[False].kernels, reps[True].kernels
    assert off.grid[0] > 64 and per.grid == (64, 1, 1), (off.grid, per.grid)
    assert per.engine_busy["DMA_IN"] < off.engine_busy["DMA_IN"] and per.cycles < off.cycles


@triton.jit
def _plain_row_bias(x_ptr, b_ptr, out_ptr, N: triton.language.constexpr):
    offs = triton.language.program_id(0) * N + triton.language.arange(0, N)
    triton.language.store(out_ptr + offs, triton.language.load(x_ptr + offs)
                          + triton.language.load(b_ptr + triton.language.arange(0, N)))


def test_a_plain_kernel_run_after_inductor_code_compiles_for_the_mtia_target() -> None:
    # Inductor's generated code makes its `cpu` driver the active one for the rest of the
    # process; a hand-written kernel launched afterwards must still compile for the MTIA target
    # (with Inductor's options it would come out persistent: its cycles would depend on what
    # ran before it in the process)
    from study.compile_mtia import compile_for_mtia
    x = torch.randn(64, 256)
    compile_for_mtia(lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)), x)
    n, rows = 256, 128
    xs, b, out = torch.randn(rows * n), torch.randn(n), torch.empty(rows * n)
    k = _plain_row_bias[(rows,)](xs, b, out, N=n)
    torch.testing.assert_close(out, xs + b.repeat(rows))
    assert k.metadata.target.backend == "mtia" and not k.metadata.persistent_invariant


def test_reference_result_is_compiled_at_the_inputs_dtype() -> None:
    """The inductor implementation compiles the FP32 reference as bf16 model code would run: its
    FP32 result in the inputs' 16-bit dtype, as the hand-written kernels write it; integer
    results, tuples and FP32 calls unchanged."""
    from study.inductor import at_input_dtype
    ref = at_input_dtype(lambda x, idx=None: x.float() * 2)
    assert ref(x=torch.ones(3, dtype=torch.bfloat16)).dtype == torch.bfloat16
    assert ref(x=torch.ones(3, dtype=torch.float16), idx=torch.arange(2)).dtype == torch.float16
    assert ref(x=torch.ones(3)).dtype == torch.float32
    pair = at_input_dtype(lambda x: (x.float(), x.float()))(x=torch.ones(2, dtype=torch.bfloat16))
    assert all(t.dtype == torch.float32 for t in pair)
    ints = at_input_dtype(lambda x: x.to(torch.int32))(x=torch.ones(2, dtype=torch.bfloat16))
    assert ints.dtype == torch.int32


def test_a_16k_softmax_row_is_one_persistent_read_without_row_mask_selects() -> None:
    # a softmax row of 16384 f32 elements (64 KB): its input, exponent and output fit a PE's
    # local memory (`row_tiles`), so the row is read once instead of by Inductor's three loops;
    # one row per program is a fixed XBLOCK of 1, Inductor's `no_x_dim` form, whose row mask is a
    # constant: no select per element for the max and the sum
    import backend.driver as drv
    from study.compile_mtia import compile_for_mtia
    x = torch.randn(64, 16384)
    fn = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    reps = {}
    before = drv.DEVICE.regime
    drv.set_regime("resident")
    try:
        for on in (False, True):
            torch._dynamo.reset()
            c, reps[on] = compile_for_mtia(fn, x, persistent_reductions=on)
            torch.testing.assert_close(c(x), fn(x))
    finally:
        drv.set_regime(before)
    (looped,), (persistent,) = reps[False].kernels, reps[True].kernels
    assert looped.name.startswith("triton_red_") and persistent.name.startswith("triton_unk_"), (looped.name, persistent.name)
    # a pass of the SIMD for the subtraction and one for the division per element; no selects
    assert persistent.engine_busy["SIMD"] <= 2.1 * x.numel() / 16, persistent.engine_busy
    assert persistent.engine_busy["DMA_IN"] < looped.engine_busy["DMA_IN"] / 2.5, (persistent.engine_busy, looped.engine_busy)
    assert persistent.cycles < 0.7 * looped.cycles, (persistent.cycles, looped.cycles)


def test_a_narrowing_cast_of_a_cat_moves_into_its_inputs() -> None:
    # rotate-half RoPE in FP32 written at bf16: cat([x1 c - x2 s, x2 c + x1 s]).to(bf16). Fused
    # into the cast as a select, each element would compute both halves; with the cast moved into
    # the cat's inputs each half is computed once, into its slice of the bf16 output
    from baselines import torch_ref
    from study.compile_mtia import compile_for_mtia
    from study.inductor import at_input_dtype
    x = torch.randn(1, 64, 4, 128).to(torch.bfloat16)
    cos, sin = torch.randn(64, 64), torch.randn(64, 64)
    fn = at_input_dtype(torch_ref.rope)
    want = fn(x=x, cos=cos, sin=sin)
    reps = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, reps[on] = compile_for_mtia(lambda x, c_, s_: fn(x=x, cos=c_, sin=s_), x, cos, sin, pointwise_cat=on)
        got = c(x, cos, sin)
        assert got.dtype == torch.bfloat16
        torch.testing.assert_close(got, want)  # the chip contracts x1 c - x2 s into an FMA: one bf16 ulp apart at most
    # on: one kernel computes both halves into the bf16 output; off: Inductor's ConcatKernel
    # writes the FP32 cat, which a second kernel converts
    (k,) = reps[True].kernels
    assert "aten.cat" not in k.aten_ops and len(reps[False].kernels) == 2
    assert reps[True].chip_time_us < reps[False].chip_time_us, (reps[True].chip_time_us, reps[False].chip_time_us)


def test_a_tril_indices_table_is_a_constant_not_kernels() -> None:
    # DLRM's lower-triangle gather z[:, i, j] with (i, j) = tril_indices(27, 27, -1): Inductor
    # computes the table on every call in two kernels; `constant_tables` folds it at compile time
    from baselines import torch_model
    from study.compile_mtia import compile_for_mtia
    x = torch.randn(64, 27, 16).to(torch.bfloat16)
    want = torch_model.dot_interaction(x)
    reps = {}
    for on in (False, True):
        torch._dynamo.reset()
        c, reps[on] = compile_for_mtia(torch_model.dot_interaction, x, constant_tables=on)
        assert torch.equal(c(x), want)
    names = {on: [k.name for k in reps[on].kernels] for on in reps}
    assert len(names[True]) == len(names[False]) - 2, names
    assert reps[True].chip_time_us < reps[False].chip_time_us
