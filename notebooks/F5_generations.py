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
# # F5: generations what-if: the same kernels on every chip config
#
# Plain Triton and expert on the eight cross-section kernels (suite `generations`,
# representative shape, first dtype, default options) on every chip config in
# `backend/configs/`: MTIA 1, MTIA 2i, the projected MTIA 300/400/450/500 and the H200-like
# config. The projections are configs scaled from a base by the relative changes published for
# the roadmap (`projection = true` in their TOML, `docs/mtia2i.md`, "Later generations"): they
# are what-ifs, not measured chips.
#
# Reads `results/raw/generations.csv` (suite `generations`).
#
# How to read it: y is the speedup over mtia2i, time(mtia2i) / time(chip), log; dots are
# kernels, diamonds the geometric mean per chip and implementation; >1 = faster than on the
# 2i. The table `F5_generations_geomean` gives the diamonds' values.
#
# Run it with `python notebooks/F5_generations.py` from the repository root (in the project's
# venv), or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F5_generations.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw`
# when set) and writes `results/figures/F5_generations.png|svg` and
# `results/tables/F5_generations_geomean.md|tex`.

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
df = need(load(["generations"]), "the generations suite")
df = df[(df.options == "default") & (df.config == "") & df.correct & df.time_us.notna()]
need(df, "correct rows")
ref_chip = "mtia2i" if "mtia2i" in set(df.chip) else sorted(df.chip)[0]
ref = df[df.chip == ref_chip].set_index(["workload", "impl", "shape", "dtype"]).time_us
rows = []
for chip, d in df.groupby("chip"):
    d = d.set_index(["workload", "impl", "shape", "dtype"])
    common = d.index.intersection(ref.index)
    r = (ref.loc[common] / d.loc[common].time_us).rename("speedup").reset_index()
    r["chip"] = chip
    rows.append(r)
sp = pd.concat(rows)
g = sp.groupby(["chip", "impl"]).speedup.apply(geomean).rename("geomean").reset_index()
fig, ax = plt.subplots(figsize=(max(5, 1.3 * sp.chip.nunique() + 2), 4))
impls = [i for i in PALETTE if i in set(sp.impl)]
np.random.seed(0)  # stripplot's jitter draws from numpy's global generator: the same figure on every run
sns.stripplot(sp, x="chip", y="speedup", hue="impl", palette=PALETTE, hue_order=impls, dodge=True, alpha=0.5, size=4, ax=ax, legend=False)
sns.pointplot(g, x="chip", y="geomean", hue="impl", palette=PALETTE, hue_order=impls, dodge=0.4 if len(impls) > 1 else False, markers="D", linestyles="none", ax=ax)
ax.set_yscale("log"); ax.axhline(1, color="black", lw=0.8)
ax.set_xlabel("chip config"); ax.set_ylabel(f"speedup over {ref_chip} (log; diamonds: geomean)")
ax.set_title("Generations what-if: per-kernel speedup relative to " + ref_chip)
h, l = ax.get_legend_handles_labels(); ax.legend(h, [IMPL_LABELS.get(x, x) for x in l])
save_figure(fig, "F5_generations")
write_table(g.pivot(index="chip", columns="impl", values="geomean").reset_index(), "F5_generations_geomean",
            f"Geometric-mean speedup over {ref_chip} per chip config")
