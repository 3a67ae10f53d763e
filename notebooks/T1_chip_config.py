# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # T1: chip config vs published MTIA 2i figures; simulator microbenchmarks
#
# The first table puts the default chip config (`backend/configs/mtia2i.toml`, read with
# `backend.configs.load_chip`) next to the published MTIA 2i figures (ISCA'25 Table 2, see
# `docs/mtia2i.md`): clock, PE count, local memory per PE, dense BF16 and INT8 DPE peaks and
# LPDDR5 bandwidth. `config source` says whether a peak comes from the config itself or from the
# published figures (`study/roofline.py`).
#
# The second table (`T1_microbench`) is the simulator's calibration: each row is a real
# intrinsic program (`backend/sim/microbench.py`: peak DPE BF16 and INT8, SIMD, DMA from LPDDR5,
# SRAM, local memory, and the 2048^3 BF16 GEMM) run through the functional simulator and priced
# by the timing model, end to end (launch, DMA warm-up and drain included).
#
# Reads `results/raw/microbench_mtia2i.csv` (written by `make reproduce`; `make microbench` prints
# the same measurements); without it only the config table is written.
#
# How to read it: `ratio` = measured / published. Below 1 is what a real program achieves
# against the datasheet peak; the anchor is ISCA'25's 2048^3 GEMM at more than 92% of peak. The
# published peaks are calibrated; engine fixed costs and SFU/RE/MLU rates are assumptions
# (marked `ASSUMPTION` in the config).
#
# Run it with `python notebooks/T1_chip_config.py` from the repository root (in the project's
# venv), or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/T1_chip_config.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw`
# when set) and writes `results/tables/T1_chip_config.md|tex` and `T1_microbench.md|tex`.

# %%
import os
import sys
sys.path.insert(0, os.getcwd())  # this tree's packages first, as in a kernel started at the repo root
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from study.plots import IMPL_LABELS, PALETTE, geomean, load, need, save_figure, style, write_table
style()

# %%
import os
from backend.configs import load_chip
from study.plots import results_dir
from study.roofline import PUBLISHED_MTIA2I, chip_peaks
cfg, pk = load_chip("mtia2i"), chip_peaks("mtia2i")
rows = [("clock (GHz)", cfg["clock_ghz"], PUBLISHED_MTIA2I["clock_ghz"]),
        ("PEs", cfg["pe_grid"]["rows"] * cfg["pe_grid"]["cols"], PUBLISHED_MTIA2I["pe_count"]),
        ("local memory per PE (KiB)", cfg["local_memory"]["bytes"] / 1024, 384),
        ("BF16 dense (TFLOP/s)", pk.float_flops / 1e12, PUBLISHED_MTIA2I["bf16_tflops"]),
        ("INT8 dense (TOP/s)", pk.int8_ops / 1e12, PUBLISHED_MTIA2I["int8_tops"]),
        ("LPDDR5 (GB/s)", pk.dram_bytes / 1e9, PUBLISHED_MTIA2I["dram_gbps"])]
table = pd.DataFrame(rows, columns=["figure", "config", "published (ISCA'25)"])
table["config source"] = ["config", "config", "config", pk.source, pk.source, pk.source]
path = results_dir() / "raw" / "microbench_mtia2i.csv"
if path.exists():
    mb = pd.read_csv(path)
    if mb.empty:
        raise ValueError(f"{path} has no rows")
    write_table(mb, "T1_microbench", "Simulator microbenchmarks: achieved vs published peaks")
write_table(table, "T1_chip_config", "MTIA 2i chip config vs published figures")
table
