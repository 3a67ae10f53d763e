"""Study F6: backend/configs/<device>.toml derived from that GPU's microbenchmarks alone.

    python -m study.gpu_config [--device h200|h100] [--csv CSV] [--out TOML]
    python -m study.gpu_config [--device h200|h100] --check   # exit 1 when the committed config differs

Devices (DEVICES): h200 (results/raw/gpu_microbench_h200.csv -> backend/configs/h200.toml) and
h100 (results/raw/gpu_microbench_h100.csv -> backend/configs/h100.toml). Every measured number
of a config comes from one or more rows of its own device's microbench CSV
(study/gpu_microbench.py, run on that GPU), by the rule written beside it here and in the
generated comment; one rule for both devices. Nothing is fitted to the kernels the config
predicts (results/raw/gpu_<device>.csv is never read). Numbers the microbenchmarks do not
measure (memory sizes, the engine structure of the machine model) are datasheet figures
(study/roofline.py's DATASHEETS) or model structure, and say so.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from study.gpu_microbench import read
from study.roofline import DATASHEETS

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Device:
    """What differs between the GPUs' configs besides the measured numbers: names, the
    datasheet's memory figures and the source each cites."""
    name: str            # the config's (and the chip column's) name
    gpu: str             # as NVIDIA names it
    hbm: str             # offchip.kind
    hbm_bytes: int       # datasheet capacity
    hbm_text: str        # the datasheet's own wording of it
    sources: str         # what the non-measured figures cite

    @property
    def csv(self) -> Path:
        return REPO / "results" / "raw" / f"gpu_microbench_{self.name}.csv"

    @property
    def out(self) -> Path:
        return REPO / "backend" / "configs" / f"{self.name}.toml"

    @property
    def label(self) -> str:
        return f"{self.gpu}-like"


DEVICES = {
    "h200": Device("h200", "H200", "HBM3e", 150323855360, "141 GB", "NVIDIA H200 product brief / Hopper whitepaper"),
    # 80 GB written as 80 GiB, as the h200 entry writes its 141 GB as 140 GiB: the capacity
    # bounds footprints only, and no F6 workload comes near either
    "h100": Device("h100", "H100", "HBM3", 85899345920, "80 GB", "NVIDIA H100 Tensor Core GPU datasheet / Hopper whitepaper"),
}
CSV = DEVICES["h200"].csv
OUT = DEVICES["h200"].out


class MissingRow(ValueError):
    """The microbench CSV lacks a row the derivation reads."""


def _clock_mhz(notes: str, key: str = "sm_mhz") -> float:
    m = re.search(rf"{key}=([0-9.]+)", notes)
    if not m:
        raise ValueError(f"no {key} in {notes!r}")
    return float(m.group(1))


def derive(csv: Path = CSV) -> dict[str, float]:
    """The config's measured numbers, by name. A row the rules need and the CSV lacks raises
    MissingRow naming it (a partial microbenchmark run must not give a config)."""
    csv = Path(csv)
    mb = read(csv)

    def row(name: str, param: str) -> dict:
        r = mb.get((name, param))
        if r is None:
            raise MissingRow(f"{csv}: no microbenchmark row {name}/{param} (study/gpu_microbench.py writes it)")
        return r

    def rows(name: str) -> dict[str, float]:
        got = {p: r["value"] for (n, p), r in mb.items() if n == name and r["value"] == r["value"]}
        if not got:
            raise MissingRow(f"{csv}: no microbenchmark rows {name}/* with a value (study/gpu_microbench.py writes them)")
        return got

    def one(name: str, param: str) -> float:
        v = row(name, param)["value"]
        if v != v:
            raise MissingRow(f"{csv}: microbenchmark row {name}/{param} has no value")
        return v

    d: dict[str, float] = {}
    # the SM clock under load (nvidia-smi after the runs; before them the GPU idles at a low clock)
    d["clock_ghz"] = _clock_mhz(row("clocks", "after")["notes"]) / 1000
    d["n_sm"] = one("device", "sm_count")
    per_sm_cycle = d["n_sm"] * d["clock_ghz"] * 1e9
    d["offchip_gbps"] = one("hbm_copy", "2GiB")
    d["sram_gbps"] = max(rows("l2_read").values())
    empties = sorted([one("launch", "empty_do_bench"), one("wave", "empty_blocks1"),
                      one("wave", f"empty_blocks{int(d['n_sm'])}")])
    d["launch_us"] = empties[1]  # the median of three empty-kernel rows
    wave = rows("wave")
    if sum(p.startswith("empty_blocks") for p in wave) < 2 or sum(p.startswith("work_blocks") for p in wave) < 2:
        raise MissingRow(f"{csv}: wave/empty_blocks* and wave/work_blocks* need two grids each")
    big, mid = sorted((int(p.removeprefix("empty_blocks")), v) for p, v in wave.items()
                      if p.startswith("empty_blocks"))[-2:][::-1]
    d["replace_us"] = (big[1] - mid[1]) / ((big[0] - mid[0]) / d["n_sm"])
    work = sorted((int(p.removeprefix("work_blocks")), v) for p, v in wave.items() if p.startswith("work_blocks"))
    (n1, t1), (n2, t2) = work[-2], work[-1]
    iters, threads = 20000, 128  # study/gpu_microbench.py's work_kernel
    d["simd_epc"] = (n2 - n1) * threads * iters / ((t2 - t1) * 1e-6) / per_sm_cycle
    d["dpe_bf16"] = max(rows("tile_bf16").values()) * 1e12 / per_sm_cycle
    d["dpe_i8"] = max(rows("tile_i8").values()) * 1e12 / per_sm_cycle
    # the suite's only f32 tl.dot (dot_interaction) asks for input_precision="ieee": fp32 FMAs
    d["dpe_f32"] = max(rows("tile_f32_ieee").values()) * 1e12 / per_sm_cycle
    d["dpe_tf32"] = max(rows("tile_f32").values()) * 1e12 / per_sm_cycle
    d["dma_latency_cycles"] = one("latency", "hbm_1024MiB") * d["clock_ghz"]
    d["hbm_per_block_gbps"] = one("hbm_read", "grid1_per_block")
    d["cublas_bf16_tflops"] = max(rows("gemm_bf16").values())
    d["cublas_i8_tops"] = max(rows("gemm_i8").values())
    return d


def render(d: dict[str, float], device: str = "h200") -> str:
    dev = DEVICES[device]
    published = "\n".join(f"{k} = {v}" for k, v in DATASHEETS[device].items())  # study/roofline.py: one place
    f = lambda v, nd=0: f"{v:.{nd}f}"  # noqa: E731
    rows_, cols_ = _grid(int(d["n_sm"]))
    n_sm = int(d["n_sm"])
    csv_rel = f"results/raw/gpu_microbench_{dev.name}.csv"
    SRC = f"measured: {csv_rel}"
    return f"""# GENERATED by `python -m study.gpu_config` from {csv_rel}: edit
# study/gpu_config.py, not this file. An {dev.label} config for the cross-check against measured
# {dev.gpu} runs (study F6): the same machine model with GPU figures: a "PE" is an SM, local memory is
# shared memory, the on-chip SRAM level is L2, off-chip is {dev.hbm}. Every measured number comes
# from the {dev.gpu} microbenchmarks (study/gpu_microbench.py), never from the kernels it predicts;
# the rest is datasheet ({dev.sources}) or model structure.
# It is an approximation of a GPU (no warps, no register file, no tensor-memory accelerator).
name = "{dev.name}"
label = "{dev.label}"
projection = false
clock_ghz = {d['clock_ghz']:.3f}                # {SRC} (clocks/after: nvidia-smi SM clock under load)

[pe_grid]                        # {SRC} (device/sm_count: {int(d['n_sm'])} SMs)
rows = {rows_}
cols = {cols_}

[local_memory]
bytes = 233472                   # datasheet (not measured): 228 KB shared memory per SM
bandwidth_gbps = 253             # datasheet (not measured): 128 B/cycle/SM shared memory; also caps one SM's share of L2/HBM

[sram]
bytes = 52428800                 # datasheet (not measured): 50 MB L2
llc_bytes = 52428800
bandwidth_gbps = {f(d['sram_gbps'])}           # {SRC} (l2_read: the larger of the 8 / 24 MiB resident-read rows)

[offchip]
kind = "{dev.hbm}"
bytes = {dev.hbm_bytes:<24d} # datasheet (not measured): {dev.hbm_text}
bandwidth_gbps = {f(d['offchip_gbps'])}          # {SRC} (hbm_copy/2GiB: bytes read + written / time)

[launch]
launch_us = {d['launch_us']:.3f}                # {SRC} (median of launch/empty_do_bench, wave/empty_blocks1 and /empty_blocks{n_sm}: an empty kernel, timed as the rows are)
replace_us = {d['replace_us']:.4f}              # {SRC} (wave/empty_blocks: slope of time vs empty blocks per SM, the two largest grids)

[assumptions]                    # modelling choices no source publishes; each is a switch the sensitivity study (F9) flips
# ASSUMPTION: which SM runs the next program. "dynamic": the block scheduler hands the next block to the first SM that can take it
# (a command processor handing out jobs);
# "static" is round-robin by program id. Programs of equal length land the same way under both.
dispatch = "dynamic"
# ASSUMPTION: a load the compiler marks `pe_resident` (the same tile in every program: weights,
# biases) is paid by a SM's first program only; "held" prices it on later programs as the
# descriptor setup alone (the tile is still in local memory), "charged" at the full DMA price.
# The functional simulator performs the load in every program either way (the data is the same),
# so "held" is a timing-only credit with no instruction behind it (a GPU's shared memory does not
# outlive its block either): default "charged"; "held" is studied in the sensitivity suite (F9).
held_tiles = "charged"
# ASSUMPTION: programs the compiler pipelines on a SM (buffers fit local memory more than once)
# each get their own issue context, so the command processor interleaves their streams (true); false:
# one in-order stream, the next program's first instruction is issued after the previous one's last.
# Default true: the ISA's queues are per engine, not per program, and interleaving is what lets DMA
# of one program overlap compute of another.
resident_issue_streams = true
# ASSUMPTION: programs whose buffers fit local memory only once still overlap (true): the next one
# starts once the previous one is issued, each of its writes waiting for the previous program's last
# access to that memory (the command processor's dependency checks); false: back to back.
program_overlap = true
# ASSUMPTION: what happens to a launch's outputs. "fits": they stay in the on-chip SRAM while the
# launch's footprint fits the LLC (write-back off the critical path: the next kernel reads them
# on-chip); "writeback": always written back off-chip on the critical path. This is the output half
# of the memory regime (backend/regimes.py): the `writeback` regime forces it whatever this says.
llc_output_rule = "fits"
# ASSUMPTION: re-reads when a launch's footprint (what it reads plus what it writes) exceeds the
# LLC. "capacity": a tile read again hits the LLC with probability llc_bytes / footprint, whatever
# the order the launch reads its tiles in (order-blind: a GEMM with M = 32768 re-reads its A and B
# panels from LPDDR at about half their reuses, though its row-panel order keeps B, 32 MB, in the
# LLC); "ideal": every re-read hits (the bound for a tile order whose reuse distance fits the LLC).
# Outputs spill (llc_output_rule) and the `resident` regime reads cold under both when it exceeds.
# No source publishes the LLC's policy; the two bracket an LRU cache. Default "capacity" (the
# pessimistic one); the sensitivity suite (F9) and the paper-shape models (T3) report "ideal".
llc_reuse = "capacity"

[command_processor]              # model structure (not measured)
issue_cycles = 1
scalar_cycles = 1
loop_cycles = 2
queue_depth = 8

[dpe]                            # tensor cores
# {SRC}: the fastest plain Triton tl.dot GEMM tile per dtype (tile_bf16 at 8192^3, tile_i8 at
# 4096^3), in ops / cycle / SM at the clock above; f32: tile_f32_ieee (input_precision="ieee",
# fp32 FMAs, as the suite's one f32 tl.dot asks; TF32 tiles measured {f(d['dpe_tf32'])}); f16 = bf16
# (same tensor-core rate, not measured separately); f8 not measured (no fp8 workload): 2x bf16
flops_per_cycle = {{ bf16 = {f(d['dpe_bf16'])}, f16 = {f(d['dpe_bf16'])}, i8 = {f(d['dpe_i8'])}, f8e4m3 = {f(2 * d['dpe_bf16'])}, f8e5m2 = {f(2 * d['dpe_bf16'])}, f32 = {f(d['dpe_f32'])} }}
tile_m = 64                      # model structure: wgmma m64
tile_n = 8
tile_k_bytes = 32
fixed_cycles = 16
latency_cycles = 32

[simd]
elements_per_cycle = {f(d['simd_epc'], 1)}        # {SRC} (wave/work_blocks: slope of the two largest grids, fp32 multiply-adds / cycle / SM)
fixed_cycles = 4                 # model structure (not measured)
latency_cycles = 8

[sfu]                            # datasheet (not measured): 16 SFU ops/cycle/SM
elements_per_cycle = 16
fixed_cycles = 4
latency_cycles = 16

[re]                             # model structure (not measured): warp-shuffle reductions at half the ALU rate
elements_per_cycle = 64
fixed_cycles = 8
latency_cycles = 16

[mlu]                            # datasheet (not measured): shared-memory bandwidth
bytes_per_cycle = 128
fixed_cycles = 8
latency_cycles = 8

[dma]                            # TMA / cp.async
fixed_cycles = 32                # model structure (not measured)
latency_cycles = {f(d['dma_latency_cycles'])}             # {SRC} (latency/hbm_1024MiB: a dependent load chain after the L2 flush, in cycles)
burst_bytes = 32                 # datasheet: 32-byte sectors
misaligned_extra_bytes = 32      # model structure (not measured) from here on
run_cycles = 0.25
gather_run_cycles = 2.0
atomic_cycles = 32

[scalar_path]
access_cycles = 8                # model structure: per-thread loads are coalesced on a GPU; not a slow path

[vector_core]
fp32_tflops = {2 * d['simd_epc'] * d['n_sm'] * d['clock_ghz'] / 1e3:.1f}               # {SRC} (= 2 x simd elements_per_cycle x SMs x clock)

[published]                      # NVIDIA datasheet, for the microbench table's comparison
{published}
"""


def _grid(n: int) -> tuple[int, int]:
    r = int(n ** 0.5)
    while n % r:
        r -= 1
    return n // r, r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.gpu_config", description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=sorted(DEVICES), default="h200",
                    help="which GPU's microbenchmarks and config (default h200)")
    ap.add_argument("--csv", default=None, help="microbench CSV (default results/raw/gpu_microbench_<device>.csv)")
    ap.add_argument("--out", default=None, help="config to write (default backend/configs/<device>.toml)")
    ap.add_argument("--check", action="store_true", help="only compare with --out; exit 1 when it differs")
    args = ap.parse_args(argv)
    dev = DEVICES[args.device]
    out = Path(args.out or dev.out)
    try:
        d = derive(Path(args.csv or dev.csv))
    except MissingRow as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    text = render(d, dev.name)
    if args.check:
        same = out.exists() and out.read_text() == text
        print(f"{dev.name} config matches the microbenchmarks" if same else f"{out} differs from the derivation")
        return 0 if same else 1
    out.write_text(text)
    for k, v in d.items():
        print(f"{k:22s} {v:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
