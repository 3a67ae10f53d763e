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
# # T2: the kernel suite: shapes, lines of code, compile time, correctness
#
# One row per workload of the `full` suite (every study shape and dtype, on the default chip,
# its `cold`-regime rows): the number of shapes and the dtypes measured, lines of the plain
# Triton kernel, of its MTIA-tuned `triton_ext` variant where there is one, and of the expert
# program (`source_lines`, the source named by `source=` in the workload's declaration, plus
# its own helpers, counted the same way for all three), the median cold and cached compile time of the Triton kernel, and
# how many results of all implementations were correct.
#
# Reads `results/raw/full.csv` (suite `full`).
#
# How to read it: the lines-of-code columns are the productivity comparison (TMTIA's claim that
# Triton is much less code than expert C++); `compile s (cold)` is a compile in a fresh Triton
# cache, `cached` one with the on-disk cache warm; `correct` is correct / measured over every
# implementation, with the tolerances of `docs/study.md`.
#
# Run it with `python notebooks/T2_kernel_suite.py` from the repository root (in the project's
# venv), or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/T2_kernel_suite.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw`
# when set) and writes `results/tables/T2_kernel_suite.md|tex`.

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
# one row per measurement: the cold-regime rows (the other regimes re-price the same runs)
df = df[(df.options == "default") & (df.config == "") & (df.chip == df.chip.mode()[0]) & (df.regime == "cold")]
def lines(g, impl):
    v = g.loc[g.impl == impl, "source_lines"].dropna()
    return int(v.iloc[0]) if len(v) else None
rows = []
for (fam, wl), g in df.groupby(["family", "workload"], sort=True):
    tri = g[g.impl == "triton"]
    rows.append({"family": fam, "workload": wl, "shapes": g["shape"].nunique(), "dtypes": ",".join(sorted(g.dtype.unique())),
                 "Triton lines": lines(g, "triton"), "Triton + ext lines": lines(g, "triton_ext"),
                 "expert lines": lines(g, "expert"),
                 "compile s (cold, median)": tri.compile_s.median() if len(tri) else None,
                 "compile s (cached, median)": tri.compile_cached_s.median() if len(tri) else None,
                 "correct": f"{int(g.correct.sum())}/{len(g)}"})
table = pd.DataFrame(rows)
write_table(table, "T2_kernel_suite", "Kernel suite: shapes, lines of Triton, Triton + extensions and expert code, Triton compile time, correct results over all implementations")
table
