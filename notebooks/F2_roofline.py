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
# # F2: roofline of MTIA 2i with every kernel placed on it
#
# Every correct measurement of the `full` suite on mtia2i (every study shape and dtype, Triton
# and expert, in the `cold` memory regime the LPDDR roof is drawn for) placed on the chip's
# roofline: the LPDDR5 memory roof and the BF16 and INT8 DPE compute roofs, with the
# peaks from `study/roofline.py` (the config's, else the published 177 TFLOPS / 354 TOPS /
# 204.8 GB/s).
#
# Reads `results/raw/full.csv` (suite `full`).
#
# How to read it: log-log. x is arithmetic intensity in FLOP per off-chip byte, counted as the
# roofline fraction counts bytes: outputs that fit the 256 MB on-chip SRAM stay on chip (the
# timing model keeps them there); y is achieved TFLOP/s (simulated). A point's distance below
# the roof at its x is its fraction of the attainable bound. FP32 kernels are held to the BF16
# roof (no FP32 DPE figure is published), so they sit lower than their true bound. A point above
# the roof would be a timing-model or declared-cost defect; the figure says how many there are.
#
# Run it with `python notebooks/F2_roofline.py` from the repository root (in the project's venv),
# or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F2_roofline.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when
# set) and writes `results/figures/F2_roofline.png|svg`.

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
from study.roofline import chip_peaks, ridge_point
df = need(load(["full"]), "the full suite")
chip = "mtia2i" if "mtia2i" in set(df.chip) else df.chip.mode()[0]
# the cold regime (inputs from LPDDR): the regime the LPDDR roof is drawn for; F1 shows the others
df = df[(df.options == "default") & (df.config == "") & (df.chip == chip) & (df.regime == "cold") & df.correct & (df.flops > 0) & df.time_us.notna()]
need(df, "correct rows with declared flops")
pk = chip_peaks(chip)
df = df.assign(achieved=df.flops / (df.time_us * 1e-6) / 1e12)
# intensity per off-chip byte, as the roofline fraction counts bytes (study/roofline.py: outputs
# that fit the SRAM stay on chip); recovered exactly from roofline_frac on the memory roof
peak = np.where(df.dtype.isin(["i8", "i32", "i64"]), pk.int8_ops, pk.float_flops) / 1e12
att = df.achieved / df.roofline_frac
df = df.assign(intensity=np.where(att < peak * 0.999, att * 1e12 / pk.dram_bytes, df.flops / df.bytes))
fig, ax = plt.subplots(figsize=(7, 4.8))
x = np.logspace(np.log10(max(df.intensity.min() / 4, 1e-3)), np.log10(max(df.intensity.max() * 4, ridge_point("i8", pk) * 4)), 200)
for dt, ls, lab in [("bf16", "-", "BF16 DPE peak"), ("i8", ":", "INT8 DPE peak")]:
    ax.plot(x, np.minimum(pk.compute_peak(dt), x * pk.dram_bytes) / 1e12, color="black", ls=ls, lw=1.2,
            label=f"{lab} {pk.compute_peak(dt) / 1e12:.0f} T{'OP' if dt == 'i8' else 'FLOP'}/s; LPDDR {pk.dram_bytes / 1e9:.1f} GB/s")
impls = [i for i in PALETTE if i in set(df.impl)]
for impl in impls:
    d = df[df.impl == impl]
    ax.scatter(d.intensity, d.achieved, s=22, color=PALETTE[impl], label=IMPL_LABELS[impl], alpha=0.85, edgecolor="white", lw=0.4)
ax.set_xscale("log"); ax.set_yscale("log")
ax.set_xlabel("arithmetic intensity (FLOP per off-chip byte; outputs that fit the SRAM stay on chip)")
ax.set_ylabel("achieved TFLOP/s (simulated)")
ax.set_title(f"Roofline of {chip} (peaks: {pk.source})", fontsize=10)
ax.legend(fontsize=8, loc="lower right")
n_above = int((df.roofline_frac > 1.0).sum())
if n_above:
    ax.text(0.02, 0.97, f"{n_above} of {len(df)} points above the roof: timing-model or declared-cost defect",
            transform=ax.transAxes, va="top", fontsize=8, color="darkred")
save_figure(fig, "F2_roofline")
above = df[df.roofline_frac > 1.0]
print(f"{len(above)} of {len(df)} points above the roofline (a timing-model or declared-cost defect):",
      sorted(set(above.workload)))
