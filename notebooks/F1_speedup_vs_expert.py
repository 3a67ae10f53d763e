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
# # F1: speedup of Triton over the expert library, over every study shape and dtype
#
# For each workload, one dot per (study shape, dtype): the speedup of the plain Triton kernel
# over the expert program written directly against the intrinsic set, time(expert) /
# time(Triton), for correct Triton results only (suite `full`: every declared study shape and
# dtype, default compile options, the default chip mtia2i). The bar is the workload's geometric
# mean over its dots; workloads are sorted by it. `triton_ext` dots and bars (the MTIA-tuned kernels of
# `kernels/*_ext.py`: compiler hints and language extensions) appear for the workloads that
# have one.
#
# One panel per memory regime measured (column `regime`; rows without one are `cold`):
# `cold` = every input comes from LPDDR, outputs stay in the on-chip SRAM while the launch's
# footprint fits it; `resident` = inputs already in SRAM too (activations between layers);
# `writeback` = inputs cold and outputs written back to LPDDR on the critical path. The regime
# is part of every claim read from this figure: both sides are priced in the same regime.
#
# Reads `results/raw/full.csv` and `results/raw/inductor.csv` (each run's executed events are
# priced in every regime).
#
# How to read it: log x axis; right of 1x Triton is faster, left slower. The dashed line is the
# geometric mean over every dot of the panel, the dotted line the 0.8x floor. The table printed
# below (and written to `results/tables/F1_speedup_by_workload.md`) gives each workload's
# geomean, worst and best dot per regime, and fast_p (share of kernels correct and at least p x
# the expert's speed). The summary (`results/tables/F1_summary.md`) sets each implementation
# beside plain Triton twice: Triton's geomean over the same workloads (all their shapes and
# dtypes), and `vs triton, same kernels`, time(Triton) / time(impl) over exactly the (workload,
# shape, dtype) kernels both have. Inductor's rows (suite `inductor`, every study shape and dtype
# as `full`) miss where Inductor could not keep a call on the chip or Dynamo split the reference
# (error rows, left out of the geomeans: int8 GEMMs beyond the representative shape, the jagged
# references with data-dependent lengths). Anchors: TMTIA ("competitive with expert C++"), ML-Triton (>95% of expert
# by geomean). Times are simulated cycles of the timing model (`backend/sim/timing.py`),
# deterministic; its ASSUMPTION parameters are listed in the chip config and docs/study.md.
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
from study.plots import IMPL_LABELS, PALETTE, geomean, load, need, results_dir, save_figure, style, write_table
style()

# %%
# Inductor's rows come from its own suite (`python -m study run --suite inductor`) when present
df = need(load(["full"] + (["inductor"] if (results_dir() / "raw" / "inductor.csv").exists() else [])), "the full suite")
if "regime" not in df.columns:
    df["regime"] = "cold"
df["regime"] = df["regime"].fillna("cold")
df = df[(df.options == "default") & (df.config == "") & df.time_us.notna()]
key = ["workload", "shape", "dtype", "chip", "regime"]
exp = df[df.impl == "expert"].set_index(key).time_us
rows = []
for impl in ["triton", "triton_ext", "inductor"]:
    d = df[(df.impl == impl) & df.correct].set_index(key)
    common = d.index.intersection(exp.index)
    s = (exp.loc[common] / d.loc[common].time_us).rename("speedup").reset_index()
    s["impl"] = impl
    rows.append(s)
sp = need(pd.concat(rows), "triton/triton_ext/inductor rows with a matching expert row")
REGIME_ORDER = ["cold", "resident", "writeback"]
regimes = [r for r in REGIME_ORDER if r in set(sp.regime)] + sorted(set(sp.regime) - set(REGIME_ORDER))
impls = [i for i in ["triton", "triton_ext", "inductor"] if i in set(sp.impl)]
KERNEL = ["workload", "shape", "dtype", "chip", "regime"]
tri = sp[sp.impl == "triton"].set_index(KERNEL).speedup


def vs_triton_same_kernels(d: pd.DataFrame) -> tuple[float, int]:
    """time(Triton) / time(impl) over the kernels of `d` that plain Triton also has (same
    workload, shape, dtype): (geomean, how many)."""
    both = d.set_index(KERNEL).speedup
    both = both[both.index.isin(tri.index)]
    return (geomean(both / tri.loc[both.index]) if len(both) else float("nan")), len(both)


per_wl = (sp.groupby(["regime", "impl", "workload"]).speedup
          .agg(points="count", geomean=geomean, worst="min", best="max").reset_index())
first = per_wl[(per_wl.regime == regimes[0]) & (per_wl.impl == "triton")].sort_values("geomean")
order = first.workload.tolist() + sorted(set(sp.workload) - set(first.workload))
y = {w: i for i, w in enumerate(order)}

fig, axes = plt.subplots(1, len(regimes), figsize=(4.2 * len(regimes) + 2.2, 0.27 * (len(order) + 2.3 * len(impls)) + 1.6),
                         sharey=True, squeeze=False)
lo, hi = min(sp.speedup.min(), 0.8) / 1.15, max(sp.speedup.max(), 1.0) * 1.15
ticks = [t for t in (0.1, 0.2, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0) if lo <= t <= hi]
step = 0.8 / len(impls)  # the impls of a workload side by side within its row
off = {impl: (j - (len(impls) - 1) / 2) * step for j, impl in enumerate(impls)}
for ax, regime in zip(axes[0], regimes):
    for impl in impls:
        d = sp[(sp.regime == regime) & (sp.impl == impl)]
        g = per_wl[(per_wl.regime == regime) & (per_wl.impl == impl)]
        yy = np.array([y[w] for w in g.workload]) + off[impl]
        ax.barh(yy, g.geomean - 1.0, left=1.0, height=step * 0.95, color=PALETTE[impl], alpha=0.35, lw=0)
        ax.scatter(d.speedup, np.array([y[w] for w in d.workload]) + off[impl], s=11, color=PALETTE[impl],
                   edgecolor="white", lw=0.3, zorder=3, label=f"{IMPL_LABELS[impl]} (one dot per shape and dtype)")
        gm = geomean(d.speedup)
        ax.axvline(gm, color=PALETTE[impl], ls="--", lw=1.2)
        n_wl = d.workload.nunique()
        # an extension covers a few workloads: its geomean is set beside plain Triton's on the same ones
        same = sp[(sp.regime == regime) & (sp.impl == "triton") & sp.workload.isin(set(d.workload))]
        same_gm, same_n = vs_triton_same_kernels(d)
        vs = "" if impl == "triton" else (f"\n  plain Triton on them: {geomean(same.speedup):.3f}x;"
                                          f"\n  {same_gm:.3f}x Triton's speed on the same {same_n} kernels")
        ax.text(0.02, 0.995 - 0.065 * impls.index(impl), f"{impl}: geomean {gm:.4f}x, {len(d)} kernels, "
                f"{n_wl} workloads{vs}", transform=ax.transAxes, va="top", fontsize=7, color=PALETTE[impl],
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
    ax.axvline(1.0, color="black", lw=1)
    ax.axvline(0.8, color="grey", lw=1, ls=":")
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.minorticks_off()
    ax.set_title(f"regime: {regime}", fontsize=10)
    ax.set_xlabel("time expert / time Triton (log; >1 = Triton faster)")
axes[0][0].set_yticks(range(len(order)), order, fontsize=8)
# headroom above the top workload for the per-impl geomean notes, so they cover no data
axes[0][0].set_ylim(-0.7, len(order) - 0.3 + 2.3 * len(impls))
handles, labels = axes[0][0].get_legend_handles_labels()
fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
fig.suptitle("Triton vs the expert library on the simulated MTIA 2i, every study shape and dtype "
             "(correct results only; dotted: 0.8x)", fontsize=10)
fig.tight_layout(rect=(0, 0.035, 1, 1))
save_figure(fig, "F1_speedup_vs_expert")

# %%
table = per_wl.pivot_table(index="workload", columns=["impl", "regime"], values=["geomean", "worst"])
table.columns = [f"{impl} {regime} {stat}" for stat, impl, regime in table.columns]
table = table[sorted(table.columns, key=lambda c: (c.split()[0], REGIME_ORDER.index(c.split()[1])
                                                    if c.split()[1] in REGIME_ORDER else 9, c.split()[2]))]
table = table.reindex(order).reset_index()
summary = []
for (regime, impl), d in sp.groupby(["regime", "impl"]):
    # like for like: the impl against plain Triton on the very kernels both have (same workload,
    # shape and dtype), time(Triton) / time(impl); the column before it compares geomeans over
    # every Triton kernel of the same workloads (other shapes and dtypes included)
    same_gm, same_n = vs_triton_same_kernels(d)
    w = per_wl[(per_wl.regime == regime) & (per_wl.impl == impl)].sort_values("geomean")
    summary.append({"regime": regime, "impl": impl, "kernels": len(d), "workloads": len(w),
                    "geomean": geomean(d.speedup), "worst kernel": f"{d.speedup.min():.2f}x",
                    "worst workload (geomean)": f"{w.workload.iloc[0]} {w.geomean.iloc[0]:.2f}x",
                    "below 0.8x": int((d.speedup < 0.8).sum()),
                    "triton on the same workloads": geomean(sp[(sp.regime == regime) & (sp.impl == "triton")
                                                               & sp.workload.isin(set(d.workload))].speedup),
                    "vs triton, same kernels": same_gm, "same kernels": same_n,
                    **{f"fast_{p}": float((d.speedup >= p).mean()) for p in (0.8, 1.0)}})
summary = pd.DataFrame(summary)
print(summary.to_string(index=False))
write_table(summary, "F1_summary", "F1: Triton vs expert per memory regime over every study shape and dtype")
write_table(table, "F1_speedup_by_workload", "F1: per-workload geomean and worst speedup over the expert, per regime")
print(table.to_string(index=False))
