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
