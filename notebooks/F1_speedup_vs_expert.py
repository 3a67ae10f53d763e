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
# # F1: per-kernel speedup of Triton over the expert library
#
# One bar per workload at its representative study shape (suite `full`, first dtype, default
# compile options, the default chip mtia2i): the speedup of the plain Triton kernel over the
# expert program written directly against the intrinsic set, time(expert) / time(Triton), for
# correct Triton results only. `triton_ext` bars (the MTIA-tuned kernels of `kernels/*_ext.py`:
# hints and language extensions) appear for the workloads that have one.
#
# Reads `results/raw/full.csv` (suite `full`).
#
# How to read it: log y axis; bars grow from 1x (parity): up, >1, means Triton is faster, down,
# <1, slower. The dashed line is the geometric mean, the dotted line the 0.8x floor. The
# printed fast_p is the share of kernels correct and at least p x the expert's speed. Anchors:
# TMTIA ("competitive with expert C++"), ML-Triton (>95% of expert by geomean). Times are
# simulated cycles of the timing model (`backend/sim/timing.py`), deterministic; see the
# README's "Limits of the model" (no NoC contention, equal per-PE share of SRAM and LPDDR
# bandwidth, assumed engine fixed costs).
#
# Run it with `python notebooks/F1_speedup_vs_expert.py` from the repository root (in the
# project's venv), or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F1_speedup_vs_expert.ipynb`. It reads only `results/raw/`
# (`$STUDY_RESULTS/raw` when set) and writes `results/figures/F1_speedup_vs_expert.png|svg`.

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
df = need(load(["full"]), "the full suite")
df = df[(df.options == "default") & (df.config == "") & df.time_us.notna()]
exp = df[df.impl == "expert"].set_index(["workload", "shape", "dtype", "chip"]).time_us
rows = []
for impl in ["triton", "triton_ext"]:
    d = df[(df.impl == impl) & df.correct].set_index(["workload", "shape", "dtype", "chip"])
    common = d.index.intersection(exp.index)
    s = (exp.loc[common] / d.loc[common].time_us).rename("speedup").reset_index()
    s["impl"] = impl
    rows.append(s)
sp = need(pd.concat(rows), "triton/triton_ext rows with a matching expert row")
one_shape = sp.groupby("workload")["shape"].nunique().max() == 1
sp["kernel"] = sp.workload + " (" + sp.dtype + ")" if one_shape else sp.workload + " " + sp["shape"] + " " + sp.dtype
order = sp[sp.impl == "triton"].sort_values("speedup").kernel.tolist() + sorted(set(sp.kernel) - set(sp[sp.impl == "triton"].kernel))
fig, ax = plt.subplots(figsize=(max(6, 0.32 * len(order) + 2), 4.2))
impls = [i for i in ["triton", "triton_ext"] if i in set(sp.impl)]
# bars grow from 1x (parity with the expert): up = Triton faster, down = slower
x = np.arange(len(order))
width = 0.8 / len(impls)
for j, impl in enumerate(impls):
    v = sp[sp.impl == impl].set_index("kernel").speedup.reindex(order).to_numpy()
    ax.bar(x + (j - (len(impls) - 1) / 2) * width, v - 1.0, bottom=1.0, width=width, color=PALETTE[impl],
           label=IMPL_LABELS[impl])
ax.set_xticks(x, order)
ax.set_xlim(-0.6, len(order) - 0.4)
ax.set_yscale("log")
lo, hi = min(sp.speedup.min(), 0.8) / 1.08, max(sp.speedup.max(), 1.0) * 1.08
ax.set_ylim(lo, hi)
ticks = [t for t in (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0) if lo <= t <= hi]
ax.set_yticks(ticks, [f"{t:g}x" for t in ticks]); ax.minorticks_off()
ax.axhline(1.0, color="black", lw=1)
ax.axhline(0.8, color="grey", lw=1, ls=":")
ax.annotate("0.8x target floor", xy=(0.0, 0.8), xycoords=("axes fraction", "data"), xytext=(4, -10),
            textcoords="offset points", color="grey", fontsize=8)
for impl in impls:
    g = geomean(sp[sp.impl == impl].speedup)
    ax.axhline(g, color=PALETTE[impl], ls="--", lw=1.5)
    ax.annotate(f"geomean {IMPL_LABELS[impl]}: {g:.2f}x", xy=(1.0, g), xycoords=("axes fraction", "data"),
                xytext=(4, 0), textcoords="offset points", va="center", color=PALETTE[impl], fontsize=9)
ax.set_xlabel("workload (dtype), at its representative study shape" if one_shape else "kernel (workload, shape, dtype)")
ax.set_ylabel("speedup over expert (time expert / time impl, log)")
ax.set_title("Triton vs expert library on the simulated MTIA 2i (correct results only; >1 = Triton faster)")
ax.tick_params(axis="x", rotation=75, labelsize=7)
ax.legend(loc="upper left")
save_figure(fig, "F1_speedup_vs_expert")
fast = {impl: {p: float((sp[sp.impl == impl].speedup >= p).mean()) for p in (0.5, 0.8, 1.0)} for impl in impls}
print("fast_p (share of kernels correct and at least p x expert speed):", fast)
