"""Chip peaks and the roofline: the one place that says how fast a chip can go.

Three sets of peaks, each for its own question:
  chip_peaks(chip)    what the roofline fraction of a row is judged against: the peak figures the
                      chip config states (a `[roofline]` or `[published]` section, or `[dpe]` /
                      `[lpddr]` keys), else the published MTIA 2i figures scaled by PE count and
                      clock. For h200 these are the datasheet's (H200_DATASHEET, below).
  engine_peaks(chip)  the rates the config gives the simulator's engines (DPE FLOP/cycle per dtype,
                      SIMD elements/cycle, off-chip bandwidth) times PEs and clock: what the timing
                      model could at best price, used to estimate host-fallback ops in T3
                      (study/model_coverage.py). They differ from chip_peaks where the published
                      sheet is not the model (mtia2i: 2048 FLOP/cycle/PE x 64 x 1.35 GHz = 176.9
                      TFLOP/s bf16 against the published 177; f32 has its own slow DPE rate here).
  H200_DATASHEET      NVIDIA's H200 figures: the roofline of F6's measured and simulated H200
                      rows (study/gpu.py), and the h200 config's `[published]` section
                      (rendered from here by study/gpu_config.py). H100_DATASHEET is the same
                      for the H100 (F6's held-out device); DATASHEETS names both by chip.

Memory-side bytes follow the timing model: `offchip_bytes` drops outputs that stay in the
on-chip SRAM. When the configs gain peak keys, only this module changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.configs import load_chip

# Published MTIA 2i figures (ISCA'25 Table 2): dense DPE throughput and LPDDR5 bandwidth.
PUBLISHED_MTIA2I = {"pe_count": 64, "clock_ghz": 1.35, "bf16_tflops": 177.0, "int8_tops": 354.0,
                    "dram_gbps": 204.8}
INT_DTYPES = frozenset({"i8", "i32", "i64"})

# H200 SXM, NVIDIA H200 Tensor Core GPU product brief (dense figures: half the brief's "with
# sparsity" ones): BF16/FP16 tensor core 989 TFLOP/s, INT8 tensor core 1979 TOP/s, FP32 67 TFLOP/s,
# HBM3e 4.8 TB/s. The last three (L2 about 10 TB/s, shared memory 253 GB/s per SM, a launch about
# 3 us) are not on the brief: they are the reference figures the h200 config has always carried
# for its microbenchmark table. Units are the chip configs' [published] keys: study/gpu_config.py
# writes this dict into backend/configs/h200.toml.
H200_DATASHEET: dict[str, float] = {"dpe_bf16_tflops": 989, "dpe_int8_tops": 1979, "simd_tops": 67,
                                    "offchip_gbps": 4800, "sram_gbps": 10000, "local_gbps": 253, "launch_us": 3.0}

# H100 SXM5 80GB, NVIDIA H100 Tensor Core GPU datasheet (dense figures: half the datasheet's "with
# sparsity" ones): BF16/FP16 tensor core 989 TFLOP/s (1979 with sparsity), INT8 tensor core
# 1979 TOP/s, FP32 67 TFLOP/s, HBM3 3.35 TB/s, 80 GB; 50 MB L2, 228 KB shared memory per SM,
# 132 SMs (Hopper whitepaper). The compute figures equal the H200's: the two differ in memory
# alone. L2, shared-memory and launch figures are not on the datasheet: the H200 entry's
# reference figures, which hold for the H100 too (the same SM, L2 and clock: 128 B/cycle x
# 1.98 GHz = 253 GB/s per SM), so the two microbench tables compare against the same yardstick.
H100_DATASHEET: dict[str, float] = {"dpe_bf16_tflops": 989, "dpe_int8_tops": 1979, "simd_tops": 67,
                                    "offchip_gbps": 3350, "sram_gbps": 10000, "local_gbps": 253, "launch_us": 3.0}
DATASHEETS: dict[str, dict[str, float]] = {"h200": H200_DATASHEET, "h100": H100_DATASHEET}


@dataclass(frozen=True)
class Peaks:
    chip: str
    float_flops: float    # FLOP/s of the DPE for bf16/fp16; also used for f32, see below
    int8_ops: float       # OP/s for int8 GEMM
    dram_bytes: float     # B/s from off-chip memory
    source: str           # "config" or "published MTIA 2i figures, scaled"

    def compute_peak(self, dtype: str) -> float:
        # The published sheet gives no DPE FP32 figure; the bf16 peak is an upper bound, so the
        # f32 roofline fraction is a lower bound rather than a flattering overestimate.
        return self.int8_ops if dtype in INT_DTYPES else self.float_flops


def _first(cfg: dict[str, Any], *paths: str) -> float | None:
    for p in paths:
        node: Any = cfg
        for part in p.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            return float(node)
    return None


def chip_peaks(chip: str) -> Peaks:
    """Peak compute and memory bandwidth of a chip config."""
    cfg = load_chip(chip)
    bf16 = _first(cfg, "roofline.peak_tflops_bf16", "published.dpe_bf16_tflops", "dpe.peak_tflops_bf16")
    int8 = _first(cfg, "roofline.peak_tops_int8", "published.dpe_int8_tops", "dpe.peak_tops_int8")
    bw = _first(cfg, "roofline.dram_gbps", "published.offchip_gbps", "offchip.bandwidth_gbps")
    source = "config"
    if bf16 is None or int8 is None or bw is None:
        source = "published MTIA 2i figures, scaled by PE count x clock"
        grid = cfg.get("pe_grid", {})
        pes = grid.get("rows", 8) * grid.get("cols", 8)
        scale = (pes * float(cfg.get("clock_ghz", PUBLISHED_MTIA2I["clock_ghz"]))) / (
            PUBLISHED_MTIA2I["pe_count"] * PUBLISHED_MTIA2I["clock_ghz"])
        bf16 = bf16 if bf16 is not None else PUBLISHED_MTIA2I["bf16_tflops"] * scale
        int8 = int8 if int8 is not None else PUBLISHED_MTIA2I["int8_tops"] * scale
        bw = bw if bw is not None else PUBLISHED_MTIA2I["dram_gbps"]
    return Peaks(chip, bf16 * 1e12, int8 * 1e12, bw * 1e9, source)


def datasheet_peaks(chip: str) -> Peaks:
    """A GPU datasheet's roofline peaks (DATASHEETS[chip]; f32 judged against bf16, as chip_peaks
    does); the chip's config states the same figures, so chip_peaks(chip) agrees
    (tests/study/test_peaks.py)."""
    d = DATASHEETS[chip]
    return Peaks(chip, d["dpe_bf16_tflops"] * 1e12, d["dpe_int8_tops"] * 1e12, d["offchip_gbps"] * 1e9,
                 f"NVIDIA {chip.upper()} datasheet")


def h200_datasheet_peaks() -> Peaks:
    """The H200 datasheet's roofline peaks: datasheet_peaks("h200")."""
    return datasheet_peaks("h200")


@dataclass(frozen=True)
class EnginePeaks:
    chip: str
    dpe_flops: dict[str, float]   # FLOP/s by dtype key (bf16, f16, f32, i8, ...)
    simd_elems: float             # elements/s over all PEs
    dram_bytes: float             # B/s off-chip

    def gemm_flops(self, dtype: str) -> float:
        return self.dpe_flops.get(dtype, self.dpe_flops.get("bf16"))


def engine_peaks(chip: str) -> EnginePeaks:
    """The config's own engine rates times PEs and clock (backend/configs/<chip>.toml)."""
    cfg = load_chip(chip)
    pes = cfg["pe_grid"]["rows"] * cfg["pe_grid"]["cols"]
    hz = float(cfg["clock_ghz"]) * 1e9
    dpe = {k: float(v) * pes * hz for k, v in cfg["dpe"]["flops_per_cycle"].items()}
    simd = float(cfg["simd"]["elements_per_cycle"]) * pes * hz
    bw = float(cfg["offchip"]["bandwidth_gbps"]) * 1e9
    return EnginePeaks(cfg["name"], dpe, simd, bw)


def offchip_bytes(nbytes: float, out_bytes: float, chip: str, regime: str = "cold") -> float:
    """The bytes a kernel must move across the off-chip interface, as the timing model counts
    them: results that fit in the on-chip SRAM (the LLC) stay there for the next kernel, so
    only a launch whose footprint exceeds the LLC pays for writing its outputs back. In the
    memory regimes (backend/regimes.py): `writeback` pays for every output, `resident` reads
    its inputs on-chip too (while the footprint fits)."""
    cfg = load_chip(chip)
    llc = _first(cfg, "sram.llc_bytes")
    if llc is None or nbytes > llc:
        return nbytes
    inputs = 0.0 if regime == "resident" else max(nbytes - out_bytes, 0.0)
    written = regime == "writeback" or cfg.get("assumptions", {}).get("llc_output_rule") == "writeback"
    return min(inputs + (out_bytes if written else 0.0), float(nbytes))


def attainable_flops(flops: float, nbytes: float, dtype: str, peaks: Peaks) -> float:
    """Roofline bound in FLOP/s: min(peak compute, arithmetic intensity x bandwidth)."""
    if nbytes <= 0:
        return peaks.compute_peak(dtype)
    return min(peaks.compute_peak(dtype), flops / nbytes * peaks.dram_bytes)


def roofline_fraction(flops: float, nbytes: float, dtype: str, time_s: float, peaks: Peaks) -> float | None:
    """Achieved over attainable. A kernel without flops is judged on bandwidth alone."""
    if time_s <= 0:
        return None
    if flops <= 0:
        return (nbytes / time_s) / peaks.dram_bytes if nbytes > 0 else None
    return (flops / time_s) / attainable_flops(flops, nbytes, dtype, peaks)


def ridge_point(dtype: str, peaks: Peaks) -> float:
    """Arithmetic intensity (FLOP/B) where the memory roof meets the compute roof."""
    return peaks.compute_peak(dtype) / peaks.dram_bytes
