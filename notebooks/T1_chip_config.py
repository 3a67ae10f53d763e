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
# The second table (`T1_microbench`) runs real intrinsic programs (`tools/microbench.py`:
# peak DPE BF16 and INT8, SIMD, DMA from LPDDR5, SRAM, local memory, launch, and the 2048^3 BF16
# expert GEMM) through the functional simulator and prices them with the timing model, end to end
# (launch, DMA warm-up and drain included).
#
# Reads `results/raw/microbench_mtia2i.csv` (written by `make reproduce`; `make microbench` prints
# the same measurements); without it only the config table is written.
#
# How to read it, column `check`: the peak rows read back figures the config was set from, so
# a ratio near 1 is a self-consistency check (the simulator's overheads cost what they should),
# not a validation against hardware. The one independent point is the published 2048^3 GEMM
# at more than 92% of peak (ISCA'25), which the config does not encode. It is shown under both
# output policies, since the publication does not say which it measured: with C kept in the
# on-chip SRAM (the study's default `cold` regime, in which the next kernel reads C on-chip)
# the expert GEMM reaches about 94% of peak, matching the figure; with C written back to LPDDR
# on the critical path (the `writeback` regime) it reaches about 59%: writing 16.8 MB of FP32 C
# at 204.8 GB/s alone takes 82 us, about 80% of the 104 us the DPE needs. The study uses the first as its default
# because an inference kernel's output is the next kernel's input, and reports the second as a
# regime of its own (F1's `writeback` panel). `ratio` = measured / published.
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
    write_table(mb, "T1_microbench", "Simulator microbenchmarks: achieved vs published peaks; check says which rows are self-consistency read-backs of config figures and which is an independent published figure")
write_table(table, "T1_chip_config", "MTIA 2i chip config vs published figures")
table
