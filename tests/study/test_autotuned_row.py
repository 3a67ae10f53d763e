"""An autotuned kernel's row is the chosen config's time, not the sum of the tuning launches."""
from backend.driver import record_launches
from study.measure import measure, reference
from study.registry import load_all


def test_autotuned_row_excludes_the_tuning_launches():
    w = load_all()["matmul_autotuned"]
    shape = w.shapes_tagged("test")[0]
    tuner = w.source["triton"]
    tuner.cache.clear()
    inputs, ref = reference(w, shape, "bf16")
    with record_launches() as all_launches:
        (row,) = measure(w, "triton", shape, "bf16", "mtia2i", inputs, ref, {})
    assert row["correct"] and "autotuning launches excluded" in row["notes"]
    assert len(all_launches) > row["launches"] == 1  # tuning launched every config first
    with record_launches() as again:  # tuned now: one launch of the chosen config
        w.impls["triton"](**inputs)
    assert len(again) == 1 and row["cycles"] == again[0].cycles


def test_benchmark_launches_simulate_in_timing_mode_with_the_functional_cycles():
    """The driver's benchmarker (what triton.autotune and Inductor's autotuning call) runs its
    launch in timing mode: the same cycles as a functional launch, outputs not computed."""
    import torch

    from backend.driver import DEVICE, simulated_bench
    from kernels.gemm import matmul
    a = torch.randn(96, 64).bfloat16()
    b = torch.randn(64, 80).bfloat16()
    modes = []
    DEVICE.listeners.append(lambda rec: modes.append(DEVICE.mode))
    try:
        with record_launches() as bench:
            ms = simulated_bench(lambda: matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32))
        with record_launches() as func:
            out = matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    finally:
        DEVICE.listeners.pop()
    assert modes == ["timing", "functional"]
    assert bench[0].cycles == func[0].cycles and abs(ms - bench[0].time_us / 1e3) < 1e-9
    torch.testing.assert_close(out.float(), (a.float() @ b.float()).bfloat16().float(), rtol=2e-2, atol=2e-2)


def test_unsimulated_launches_write_nothing_but_benchmarks_and_integer_writers_still_run():
    """Inside unsimulated() (Inductor's warm-up call): a float kernel is not simulated, a kernel
    writing integers runs functionally (later launches may address memory with its output), and
    a benchmark inside is simulated with the cycles it has outside."""
    import torch

    from backend.driver import DEVICE, simulated_bench, unsimulated
    from kernels.gemm import matmul
    a = torch.randn(96, 64).bfloat16()
    b = torch.randn(64, 80).bfloat16()
    out_ref = torch.argmax(a.float(), dim=1)
    ms_out = simulated_bench(lambda: matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32))
    clock = DEVICE.clock_us
    with unsimulated(), record_launches() as recs:
        c = matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        assert DEVICE.clock_us == clock and recs == []  # no time, no record
        ms_in = simulated_bench(lambda: matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32))
        idx = _argmax_rows(a.float())
    assert ms_in == ms_out > 0 and len(recs) == 2  # the benchmark's launch and the integer writer's
    assert torch.equal(idx, out_ref)
    assert c.shape == (96, 80)


def _argmax_rows(x):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def argmax_rows(x_ptr, out_ptr, N: tl.constexpr):
        row = tl.program_id(0)
        v = tl.load(x_ptr + row * N + tl.arange(0, N))
        tl.store(out_ptr + row, tl.argmax(v, axis=0).to(tl.int32))

    out = torch.empty(x.shape[0], dtype=torch.int32)
    argmax_rows[(x.shape[0],)](x, out, N=x.shape[1])
    return out.long()
