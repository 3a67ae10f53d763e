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
# # F7: autotuning landscape: simulated time over block-size configs
#
# Every config of the autotuned Triton GEMM (`matmul_autotuned`, its `triton.autotune`
# configs: block sizes and num_stages), each measured on its own on mtia2i at the workload's
# largest study shape (suite `autotune`).
#
# Reads `results/raw/autotune.csv` (suite `autotune`).
#
# How to read it: one bar per config, sorted from fastest (highlighted) to slowest; x is the
# simulated time in us (shorter is better). The title gives the best time and how much slower
# the worst config is. Because the driver's events report simulated time, this is the same
# landscape `triton.autotune` itself sees when it benchmarks on the simulated chip.
#
# Run it with `python notebooks/F7_autotune.py` from the repository root (in the project's venv),
# or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F7_autotune.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when
# set) and writes `results/figures/F7_autotune.png|svg`.

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
df = need(load(["autotune"]), "the autotune suite")
cfg = need(df[(df.config != "") & df.time_us.notna()], "per-config autotune rows")
# one kernel, its largest shape: the landscape a reader can take in at once
wl = cfg.groupby("workload").config.nunique().idxmax()
d = cfg[cfg.workload == wl]
shape = d.loc[d.flops.idxmax(), "shape"]; d = d[d["shape"] == shape]
d = d.groupby("config", as_index=False).time_us.min().sort_values("time_us")
best = d.time_us.min()
fig, ax = plt.subplots(figsize=(7, 0.8 + 0.26 * len(d)))
ax.barh(d.config, d.time_us, color=[PALETTE["triton"] if t == best else "#9ecae1" for t in d.time_us])
ax.invert_yaxis()
ax.set_xlabel("simulated time (us)"); ax.set_ylabel("config (block sizes; num_stages)")
ax.set_title(f"Autotuning landscape: {wl} {shape} ({len(d)} configs; best {best:.3g} us, worst {d.time_us.max() / best:.2f}x slower)", fontsize=10)
ax.tick_params(axis="y", labelsize=7)
save_figure(fig, "F7_autotune")
