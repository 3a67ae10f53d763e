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
# # F6: real GPU: plain Triton vs torch/cuBLAS on H200 (measured); the simulator's H200-like config vs the measurement
#
# Measured on a real NVIDIA H200 with stock Triton (`python -m study.gpu` on the GPU machine;
# this backend not installed): (a) the speedup of each plain Triton kernel of `kernels/` over the
# torch path a user would write (cuBLAS for GEMMs, SDPA for attention, aten elsewhere), study
# shapes, both correct; (b) the simulator in its H200-like config (`backend/configs/h200.toml`)
# against the measured Triton time, per kernel; (c) the distribution of that prediction error.
#
# Reads `results/raw/gpu_h200.csv` (committed; needs a GPU to regenerate) and
# `results/raw/sim_h200.csv` (`python -m study.gpu --simulate`). `make reproduce` skips this
# notebook when there are no GPU rows.
#
# How to read it: (a) log y, time(torch) / time(Triton), >1 = Triton faster, dashed line the
# geometric mean, colours by family. (b) log-log, y = x is a perfect prediction, the band is
# +-10% (LLMCompass's per-operator error). Measured times are do_bench medians with L2 cleared
# for study shapes; test shapes use CUDA-graph replay times (under do_bench they are host-launch
# bound), and a test shape without a graph time is left out. (c) |simulated - measured| /
# measured, log x, medians marked. The h200 config is a coarse analogue of a GPU (no warps,
# register file or TMA), so large errors are expected; the tables give the failures, the
# per-family geomeans and a summary.
#
# Run it with `python notebooks/F6_gpu.py` from the repository root (in the project's venv), or
# open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F6_gpu.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when set)
# and writes `results/figures/F6_gpu.png|svg` and
# `results/tables/F6_gpu_failures|F6_gpu_by_family|F6_gpu_summary.md|tex`.

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
df = load(["gpu_h200", "sim_h200"])
gpu = need(df[df.impl.isin(["triton_gpu", "torch_gpu"]) & (df.chip == "h200")], "GPU rows (impl triton_gpu / torch_gpu)")
device = gpu.device.mode()[0]
key = ["workload", "shape", "dtype"]
tags = gpu.notes.fillna("").str.extract(r"shape_tags=([a-z+]+)")[0].fillna("")
gpu = gpu.assign(study=tags.str.contains("study"), kernel=gpu.workload + " " + gpu["shape"] + " " + gpu.dtype)
tri = gpu[gpu.impl == "triton_gpu"].set_index(key)
tor = gpu[gpu.impl == "torch_gpu"].set_index(key)
print(f"{device}: triton_gpu correct {int(tri.correct.sum())}/{len(tri)} (workload, shape, dtype); "
      f"torch_gpu correct {int(tor.correct.sum())}/{len(tor)}")
failed = tri[~tri.correct].reset_index()[key + ["notes"]]
write_table(failed.assign(notes=failed.notes.str.slice(0, 90)), "F6_gpu_failures", f"Plain Triton kernels incorrect or failing on {device}")
both = tri.join(tor, lsuffix="_tri", rsuffix="_tor", how="inner")
both = both[both.correct_tri & both.correct_tor & both.time_us_tri.notna() & both.time_us_tor.notna()].reset_index()
both["speedup"] = both.time_us_tor / both.time_us_tri
sp = need(both[both.study_tri], "study-shape kernels correct and timed with both triton_gpu and torch_gpu").sort_values("speedup")
fams = sorted(sp.family_tri.unique())
fam_colour = dict(zip(fams, sns.color_palette("colorblind", len(fams))))
# simulated (h200 config) vs measured triton_gpu, same kernel, shape, dtype
sim = df[(df.impl == "triton") & (df.chip == "h200") & (df.device == "simulated") & df.correct & df.time_us.notna()]
m = sim.merge(tri[tri.correct & tri.time_us.notna()].reset_index(), on=key, suffixes=("_sim", "_gpu"))
# measured device time: study shapes, do_bench's median with L2 cleared; test shapes (a few us of
# work) are host-launch bound under do_bench, so their CUDA-graph replay time is used, and a test
# shape whose launches could not be captured in a graph (or ran over 50 us) is left out
graph_us = m.notes_gpu.fillna("").str.extract(r"cudagraph_us=([0-9.]+)")[0].astype(float)
m["time_us_gpu"] = np.where(m.study, m.time_us_gpu, graph_us)
n_dropped = int(m.time_us_gpu.isna().sum()); m = m[m.time_us_gpu.notna()].copy()
print(f"simulated vs measured: {len(m)} kernels ({int(m.study.sum())} study shapes); {n_dropped} test shapes without a graph time left out")
m["err"] = (m.time_us_sim - m.time_us_gpu).abs() / m.time_us_gpu
m["ratio"] = m.time_us_sim / m.time_us_gpu
fig = plt.figure(figsize=(max(12, 0.16 * len(sp) + 2), 11.5))
gs = fig.add_gridspec(2, 2, height_ratios=[1.2, 1], hspace=1.05, wspace=0.2)
ax = fig.add_subplot(gs[0, :])
ax.bar(np.arange(len(sp)), sp.speedup, color=[fam_colour[f] for f in sp.family_tri], width=0.8)
g = geomean(sp.speedup)
ax.axhline(1.0, color="black", lw=0.8)
ax.axhline(g, ls="--", color="black", lw=1.2)
ax.annotate(f"geomean {g:.2f}x over {len(sp)} kernels", xy=(0.005, g), xycoords=("axes fraction", "data"),
            xytext=(2, 4), textcoords="offset points", fontsize=9)
ax.set_yscale("log")
ax.set_xticks(np.arange(len(sp))); ax.set_xticklabels(sp.kernel_tri, rotation=90, fontsize=5.5); ax.set_xlim(-0.7, len(sp) - 0.3)
ax.set_ylabel("speedup of plain Triton over torch\n(time torch / time Triton, log)")
ax.set_title(f"(a) Plain Triton kernels vs torch/cuBLAS/SDPA, measured on {device}: one bar per kernel (workload, study shape, dtype), both correct; >1 = Triton faster", fontsize=10)
ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=fam_colour[f]) for f in fams], labels=fams, fontsize=7, ncol=len(fams), loc="upper left")
ax = fig.add_subplot(gs[1, 0])
if len(m):
    for is_study, mk in [(False, "o"), (True, "D")]:
        d = m[m.study == is_study]
        ax.scatter(d.time_us_gpu, d.time_us_sim, s=16, marker=mk, c=[fam_colour.get(f, "grey") for f in d.family_gpu],
                   alpha=0.8, edgecolor="white", lw=0.3)
        ax.scatter([], [], s=16, marker=mk, color="grey", label="study shape" if is_study else "test shape")
    lo = min(m.time_us_gpu.min(), m.time_us_sim.min()) / 1.5; hi = max(m.time_us_gpu.max(), m.time_us_sim.max()) * 1.5
    x = np.array([lo, hi]); ax.plot(x, x, color="black", lw=0.9, label="y = x")
    ax.fill_between(x, x / 1.1, x * 1.1, color="grey", alpha=0.2, lw=0, label="±10% (LLMCompass per-operator error)")
    ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(f"(b) simulator, H200-like config, vs measured ({len(m)} kernels; colour: family as in (a))", fontsize=10)
else:
    ax.text(0.5, 0.5, "no simulated h200 rows matching measured ones", ha="center", transform=ax.transAxes)
ax.set_xlabel(f"measured Triton time on {device} (us; study: do_bench median, test: CUDA-graph replay)")
ax.set_ylabel("simulated time, h200 config (us)")
ax = fig.add_subplot(gs[1, 1])
if len(m):
    bins = np.logspace(np.log10(max(m.err.min(), 1e-3)), np.log10(max(m.err.max(), 1.0)), 30)
    ax.hist([m.err[~m.study].clip(lower=bins[0]), m.err[m.study].clip(lower=bins[0])], bins=bins, stacked=True,
            color=["#9ecae1", PALETTE["triton"]], label=["test shapes", "study shapes"])
    med, med_s = m.err.median(), m.err[m.study].median()
    ax.axvline(med, color="black", ls="--", lw=1.2, label=f"median, all: {med * 100:.0f}%")
    if m.study.any():
        ax.axvline(med_s, color=PALETTE["triton"], ls=":", lw=1.5, label=f"median, study shapes: {med_s * 100:.0f}%")
    ax.axvline(0.10, color="grey", lw=1.2, label="LLMCompass ~10%")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v * 100:g}%"))
    over = float((m.ratio > 1).mean())
    ax.set_title("(c) prediction error |simulated - measured| / measured", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", title=f"simulator slower than measured for {over * 100:.0f}%", title_fontsize=7)
ax.set_xlabel("prediction error (log)"); ax.set_ylabel("kernels (count)")
save_figure(fig, "F6_gpu")
by_family = sp.groupby("family_tri").speedup.agg([geomean, "count"]).rename(columns={"geomean": "geomean speedup Triton/torch", "count": "kernels"})
by_family["torch path"] = [", ".join(sorted(set(sp[sp.family_tri == f].notes_tor.fillna("").str.contains("fp32 reference").map({True: "fp32 reference ops", False: "native-dtype torch op"})))) for f in by_family.index]
write_table(by_family.reset_index().rename(columns={"family_tri": "family"}), "F6_gpu_by_family",
            f"F6: geometric-mean speedup of plain Triton over the torch path per family on {device} (study shapes)")
print(by_family)
summary = pd.DataFrame([{"device": device, "kernels (triton_gpu rows)": len(tri), "triton correct": int(tri.correct.sum()),
                         "speedup kernels (study)": len(sp), "geomean speedup Triton/torch": g,
                         "fast_1 (share >= torch)": float((sp.speedup >= 1).mean()),
                         "sim-vs-measured kernels": len(m), "median error": m.err.median() if len(m) else None,
                         "median error, study shapes": m.err[m.study].median() if len(m) and m.study.any() else None,
                         "share within 10%": float((m.err <= 0.10).mean()) if len(m) else None}])
write_table(summary, "F6_gpu_summary", f"F6: plain Triton vs torch on {device}; simulator (h200 config) vs measured Triton time")
summary.T
