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
# # F4: ablation: each compiler feature switched off in turn
#
# The eight cross-section kernels (suite `ablation`: matmul, softmax, layernorm, add,
# embedding_bag_sum, index_select, flash_attention, transpose; representative shape, first
# dtype, mtia2i) compiled with one backend feature off at a time through `MTIA_OPTIONS`
# (`study/compile_options.py`): `no_structured_dma`, `no_index_dma`, `no_transposed_dma`,
# `no_dense_strided_dma`, `no_repeat_dma`, `no_reduction_engine`,
# `single_buffer` (num_stages=1), `no_software_pipeline`, `no_program_overlap`, `no_persistent`
# (the hint of the `triton_ext` kernels); and, on the `inductor` rows only, each chip-aware
# Inductor switch (`inductor_no_*`, backend/inductor_cpu/options.py) and the backend pass that
# reads Inductor's compare-and-select min/max as one op (`inductor_no_minmax_idiom`), and the one
# that reads its cat / stack selects (`inductor_no_cat_idiom`) and its round half away
# (`inductor_no_round_idiom`); `no_tabulate`, the pass that computes a small-range integer's
# elementwise chain as a table; `no_table_dma`, the dense read of a gather that Inductor's
# index asserts bound to a small span. The kernels are the 8 workloads of the cross-section, plus MX4
# dequantise for the switches that serve it and none of the cross-section (`no_tabulate`,
# `inductor_no_cat_idiom`, `no_repeat_dma`), INT8 quantise for `inductor_no_round_idiom` and
# dot interaction for `no_table_dma`
# (a geomean then mixes the 8 workloads' 1.00x with that kernel's; the heatmap shows each kernel).
#
# Reads `results/raw/ablation.csv` (suite `ablation`).
#
# How to read it: each cell is the slowdown time(feature off) / time(default); the colour is its
# log2, red above 1x: >1x means the feature helps that kernel, 1.00x that it does not matter
# there. "fails": the kernel does not run with the feature off (a persistent kernel's tiles
# overflow local memory without structured DMA); blank: the switch does not apply (Inductor's
# switches on hand-written kernels; MX4 dequantise, INT8 quantise and dot interaction with a switch they were not run with). The table `F4_ablation_geomean` is the geometric mean per
# feature over the kernels that ran.
# Times are simulated (deterministic), so even small differences are real effects of the
# model, not noise.
#
# Run it with `python notebooks/F4_ablation.py` from the repository root (in the project's venv),
# or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F4_ablation.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when
# set) and writes `results/figures/F4_ablation.png|svg` and
# `results/tables/F4_ablation_geomean.md|tex`.

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
df = need(load(["ablation"]), "the ablation suite")
df = df[df.config == ""]
# runs that fail with a feature off (a persistent kernel's tiles overflow local memory without
# structured DMA): a result, drawn as "fails", not left blank like a switch that does not apply
failed = df[(df.options != "default") & df.time_us.isna()]
df = df[df.time_us.notna()]
base = df[df.options == "default"].set_index(["workload", "impl", "shape", "dtype", "chip"]).time_us
rows = []
for opt, d in df[df.options != "default"].groupby("options"):
    d = d.set_index(["workload", "impl", "shape", "dtype", "chip"])
    common = d.index.intersection(base.index)
    r = (d.loc[common].time_us / base.loc[common]).rename("slowdown").reset_index()
    r["options"] = opt
    r["correct"] = d.loc[common].correct.values
    rows.append(r)
need(rows, "ablated rows (options other than default) in the ablation suite")
sl = need(pd.concat(rows), "ablated rows with a default-option row to compare")
summary = sl.groupby(["options", "impl"]).slowdown.apply(geomean).unstack()
write_table(summary.reset_index(), "F4_ablation_geomean", "Geometric-mean slowdown (time with the feature off / time with it on) per switched-off feature")
sl["kernel"] = sl.workload + " " + sl["shape"] + " " + sl.dtype + " (" + sl.impl + ")"
mat = sl.pivot_table(index="kernel", columns="options", values="slowdown", aggfunc="first")
fig, ax = plt.subplots(figsize=(2 + 1.4 * mat.shape[1], 1.2 + 0.28 * mat.shape[0]))
sns.heatmap(np.log2(mat), annot=mat.map(lambda v: f"{v:.2f}x"), fmt="", cmap="RdBu_r", center=0, ax=ax,
            cbar_kws={"label": "log2 slowdown (feature off / on)"}, annot_kws={"fontsize": 7})
for _, f in failed.iterrows():  # seaborn leaves empty cells unannotated
    k = f"{f.workload} {f['shape']} {f['dtype']} ({f.impl})"  # f.dtype is the Series' own
    if k in mat.index and f.options in mat.columns:
        ax.text(mat.columns.get_loc(f.options) + 0.5, mat.index.get_loc(k) + 0.5, "fails", ha="center", va="center",
                fontsize=7, color="#B00000")
ax.set_xlabel("switched off"); ax.set_ylabel("")
ax.set_title("Ablation: slowdown with one backend feature off (>1x = the feature helps); "
             "fails: does not run with it off; blank: the switch does not apply (Inductor's on hand-written kernels) "
             "or was not run (MX4 dequantise, INT8 quantise, dot interaction: only the switches that serve them)", fontsize=9)
save_figure(fig, "F4_ablation")
summary
