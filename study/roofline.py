"""Chip peaks and the roofline: the one place that says how fast a chip config can go.

Memory-side bytes follow the timing model: `offchip_bytes` drops outputs that stay in the
on-chip SRAM. `chip_peaks` reads peak figures from the chip config when it states them (a `[roofline]`
section, or `[dpe]` / `[lpddr]` sections) and otherwise falls back to the published MTIA 2i
figures, scaled by PE count and clock for other configs. When the configs gain peak keys,
only this module changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.configs import load_chip

# Published MTIA 2i figures (ISCA'25 Table 2): dense DPE throughput and LPDDR5 bandwidth.
PUBLISHED_MTIA2I = {"pe_count": 64, "clock_ghz": 1.35, "bf16_tflops": 177.0, "int8_tops": 354.0,
                    "dram_gbps": 204.8}
INT_DTYPES = frozenset({"i8", "i32", "i64"})


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
