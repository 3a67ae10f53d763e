"""study/roofline.py, the one place for peaks: the chip configs' roofline peaks, their engine
rates, and the H200 datasheet, which the h200 config and F6's rows both read."""
from __future__ import annotations

import tomllib

import pytest

from backend.configs import CONFIG_DIR
from study.roofline import (H100_DATASHEET, H200_DATASHEET, PUBLISHED_MTIA2I, chip_peaks, datasheet_peaks,
                            engine_peaks, h200_datasheet_peaks, roofline_fraction)


def test_mtia2i_roofline_peaks_are_the_published_figures():
    p = chip_peaks("mtia2i")
    assert p.float_flops == PUBLISHED_MTIA2I["bf16_tflops"] * 1e12
    assert p.int8_ops == PUBLISHED_MTIA2I["int8_tops"] * 1e12
    assert p.dram_bytes == PUBLISHED_MTIA2I["dram_gbps"] * 1e9


def test_engine_peaks_are_the_config_rates():
    e = engine_peaks("mtia2i")
    assert e.gemm_flops("bf16") == pytest.approx(177e12, rel=0.01)  # 2048 FLOP/cycle/PE x 64 x 1.35 GHz
    assert e.gemm_flops("f32") == pytest.approx(1.4e12, rel=0.01)   # the vector core's FP32
    assert e.gemm_flops("f64") == e.gemm_flops("bf16")                # no rate of its own: the bf16 one
    assert e.simd_elems == pytest.approx(32 * 64 * 1.35e9)
    assert e.dram_bytes == pytest.approx(204.8e9)


def test_h200_datasheet_is_what_the_config_and_the_gpu_rows_use():
    d = h200_datasheet_peaks()
    # the exact figures study/gpu.py hard-coded before (989 TFLOP/s, 1979 TOP/s, 4.8 TB/s)
    assert (d.float_flops, d.int8_ops, d.dram_bytes) == (989e12, 1979e12, 4.8e12)
    c = chip_peaks("h200")  # read from backend/configs/h200.toml's [published] section
    assert (c.float_flops, c.int8_ops, c.dram_bytes) == (d.float_flops, d.int8_ops, d.dram_bytes)
    with open(CONFIG_DIR / "h200.toml", "rb") as f:
        assert tomllib.load(f)["published"] == H200_DATASHEET


def test_h100_datasheet_is_what_its_config_and_simulated_rows_use():
    d = datasheet_peaks("h100")
    # NVIDIA H100 SXM5 datasheet, dense: the H200's compute, 3.35 TB/s HBM3
    assert (d.float_flops, d.int8_ops, d.dram_bytes) == (989e12, 1979e12, 3.35e12)
    c = chip_peaks("h100")
    assert (c.float_flops, c.int8_ops, c.dram_bytes) == (d.float_flops, d.int8_ops, d.dram_bytes)
    with open(CONFIG_DIR / "h100.toml", "rb") as f:
        assert tomllib.load(f)["published"] == H100_DATASHEET
    from study import gpu
    got = gpu.derived(0, 1 << 30, "f32", 1000.0, gpu.PEAKS["h100"])
    assert got["roofline_frac"] == pytest.approx((1 << 30) / 1e-3 / 3.35e12)


def test_gpu_rows_roofline_is_the_shared_roofline():
    from study import gpu
    for flops, nbytes, dtype, t_us in [(2 * 4096 ** 3, 3 * 4096 ** 2 * 2, "bf16", 180.0), (4096, 49152, "f32", 4.03),
                                       (2 * 512 ** 3, 3 * 512 ** 2, "i8", 9.0), (0, 1 << 20, "f32", 1.0)]:
        got = gpu.derived(flops, nbytes, dtype, t_us)
        assert got["roofline_frac"] == roofline_fraction(flops, nbytes, dtype, t_us * 1e-6, h200_datasheet_peaks())
        # the formula study/gpu.py had: min(peak, intensity x HBM) for kernels with flops, else bandwidth
        s, peak = t_us * 1e-6, (1979e12 if dtype == "i8" else 989e12)
        old = (flops / s) / min(peak, flops / nbytes * 4.8e12) if flops else (nbytes / s) / 4.8e12
        assert got["roofline_frac"] == old
    assert gpu.derived(1, 1, "f32", None) == {"tflops": None, "gbps": None, "roofline_frac": None}
