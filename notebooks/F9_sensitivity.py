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
# # F9: sensitivity of the Triton-vs-expert result to the model's assumptions
#
# The eight cross-section kernels (suite `sensitivity`: matmul, softmax, layernorm, add,
# embedding_bag_sum, index_select, flash_attention, transpose; representative shape, first
# dtype, cold memory regime), Triton and expert, priced on mtia2i and on variants of it with one
# modelling choice that no source publishes changed at a time (chip names such as
# `mtia2i@dma.latency_cycles=400`, resolved by `backend.configs.load_chip`; the list is
# `SENSITIVITY` in `study/suites.py`): the `[assumptions]` switches flipped (dispatch,
# held_tiles, resident_issue_streams, program_overlap, llc_output_rule) and the numeric
# ASSUMPTION parameters that matter most halved and doubled (DMA fixed cost, latency and per-run
# cost, command-processor issue cost, job replace time).
#
# Reads `results/raw/sensitivity.csv` (suite `sensitivity`).
#
# How to read it: for each variant, the F1-style geometric mean of time(expert) / time(Triton)
# over the eight kernels (correct Triton results only; >1 = Triton faster) and the worst
# kernel; the table also gives how much each side's own time moves (`triton time x`, `expert
# time x`: geomean of time on the variant / time on mtia2i). A claim flips when, relative to the unchanged chip, the geomean crosses 0.8x or 1.0x,
# or the worst kernel moves to the other side of the 0.8x floor; such rows are marked (red, and
# `flips` in the table `F9_sensitivity`). The heatmap shows each kernel's speedup under each
# variant. Both sides are priced by the same model, so a variant that slows both alike leaves
# the ratio unchanged: the figure says how much the *comparison* depends on each assumption,
# not how much absolute times do. The memory regime (inputs resident in SRAM, outputs written
# back) is the other large modelling choice; the `full` suite prices every workload and shape in each regime (F1).
#
# Run it with `python notebooks/F9_sensitivity.py` from the repository root (in the project's
# venv), or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F9_sensitivity.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw`
# when set) and writes `results/figures/F9_sensitivity.png|svg` and
# `results/tables/F9_sensitivity.md|tex`.

# %%
import os
import sys
sys.path.insert(0, os.getcwd())  # this tree's packages first, as in a kernel started at the repo root
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from backend.configs import parse_overrides
from study.plots import PALETTE, geomean, load, need, save_figure, style, write_table
from study.suites import SENSITIVITY
style()
FLOOR, PARITY = 0.8, 1.0

# %%
df = need(load(["sensitivity"]), "the sensitivity suite")
df = df[(df.options == "default") & (df.config == "") & (df.regime == "cold") & df.time_us.notna()]
key = ["workload", "shape", "dtype", "chip"]
exp = df[df.impl == "expert"].set_index(key).time_us
tri = df[(df.impl == "triton") & df.correct].set_index(key).time_us
common = tri.index.intersection(exp.index)
sp = need((exp.loc[common] / tri.loc[common]).rename("speedup").reset_index(), "triton rows with an expert row")


def label(chip: str) -> tuple[str, str]:
    base, ov = parse_overrides(chip)
    if not ov:
        return "(none: " + base + ")", "default"
    (k, v), = ov.items()
    return k, str(v).lower() if isinstance(v, bool) else str(v)


sp[["assumption", "value"]] = [label(c) for c in sp.chip]
base_chip = next(c for c in sp.chip.unique() if not parse_overrides(c)[1])
# how much each side's own time moves (geomean of time on the variant / time on the default chip)
times = df[df.correct | (df.impl == "expert")].pivot_table(index=["impl", "chip"], columns="workload",
                                                            values="time_us", aggfunc="first")
moved_by = {impl: {c: geomean((times.loc[(impl, c)] / times.loc[(impl, base_chip)]).dropna())
                   for c in times.loc[impl].index} for impl in ("triton", "expert")}
per = sp.pivot_table(index="chip", columns="workload", values="speedup", aggfunc="first")
# the default chip first, then the variants in the order study/suites.py lists them
rank = {k: i for i, k in enumerate(SENSITIVITY)}
order = [base_chip] + sorted((c for c in dict.fromkeys(sp.chip) if c != base_chip),
                             key=lambda c: (rank.get(label(c)[0], len(rank)), *parse_overrides(c)[1].values()))
per = per.reindex(order)


def side(x: float, t: float) -> bool:
    return x >= t


b_geo, b_worst = geomean(per.loc[base_chip]), per.loc[base_chip].min()
rows = []
for chip in order:
    v = per.loc[chip].dropna()
    g, w = geomean(v), v.min()
    flips = []
    for t in (FLOOR, PARITY):
        if side(g, t) != side(b_geo, t):
            flips.append(f"geomean {'<' if g < t else '>='} {t:g}x")
    if side(w, FLOOR) != side(b_worst, FLOOR):
        flips.append(f"worst {'<' if w < FLOOR else '>='} {FLOOR:g}x")
    moved = [k for k in v.index if side(v[k], FLOOR) != side(per.loc[base_chip, k], FLOOR)]
    a, val = label(chip)
    rows.append({"assumption": a, "value": val, "triton time x": moved_by["triton"].get(chip),
                 "expert time x": moved_by["expert"].get(chip), "geomean": g, "vs default": g / b_geo,
                 "worst": v.idxmin(),
                 "worst speedup": w, "below 0.8x": int((v < FLOOR).sum()), "kernels": len(v),
                 "flips": "; ".join(flips + ([f"{', '.join(moved)} cross 0.8x"] if moved else [])) or "-"})
table = pd.DataFrame(rows)
write_table(table, "F9_sensitivity", "Triton vs expert (geomean of time expert / time Triton over the cross-section) "
            "with one modelling assumption changed at a time; flips: claims that change side of 0.8x or 1.0x")
table

# %%
names = [f"{a} = {v}" for a, v in zip(table.assumption, table.value)]
flipped = table.flips != "-"
fig, (ax, hm) = plt.subplots(1, 2, figsize=(15, 0.42 * len(table) + 2),
                             gridspec_kw={"width_ratios": [1, 1.5]})
y = np.arange(len(table))
ax.scatter(table.geomean, y, color=PALETTE["triton"], zorder=3, label="geomean (expert / Triton)")
ax.scatter(table["worst speedup"], y, color=PALETTE["expert"], marker="v", zorder=3, label="worst kernel")
for i, (g, w) in enumerate(zip(table.geomean, table["worst speedup"])):
    ax.plot([w, g], [i, i], color="grey", lw=0.8, zorder=2)
ax.axvline(FLOOR, color="grey", ls=":", lw=1)
ax.axvline(PARITY, color="black", lw=1)
ax.axvline(b_geo, color=PALETTE["triton"], ls="--", lw=1)
ax.set_xscale("log")
lo, hi = min(table["worst speedup"].min(), FLOOR) / 1.1, max(table.geomean.max(), PARITY) * 1.1
ax.set_xlim(lo, hi)
ticks = [t for t in (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0) if lo <= t <= hi]
ax.set_xticks(ticks, [f"{t:g}x" for t in ticks]); ax.minorticks_off()
ax.set_yticks(y, names)
for t, f in zip(ax.get_yticklabels(), flipped):
    t.set_color("#CC0000" if f else "black")
ax.invert_yaxis()
ax.set_xlabel("speedup of Triton over expert (log; >1 = Triton faster)")
ax.set_title("Geomean and worst kernel per assumption (red: a claim flips)")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8)
sns.heatmap(np.log2(per.to_numpy()), annot=per.map(lambda v: f"{v:.2f}").to_numpy(), fmt="", cmap="RdBu",
            center=0, ax=hm, xticklabels=list(per.columns), yticklabels=False,
            cbar_kws={"label": "log2 speedup (expert / Triton)"}, annot_kws={"fontsize": 7})
hm.set_xlabel(""); hm.tick_params(axis="x", rotation=45)
hm.set_title("Per-kernel speedup under each variant")
save_figure(fig, "F9_sensitivity")
print(f"default chip: geomean {b_geo:.3f}x, worst {per.loc[base_chip].idxmin()} {b_worst:.3f}x")
print("claims that flip:", {n: f for n, f in zip(names, table.flips) if f != "-"} or "none")
