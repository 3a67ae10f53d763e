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
# # F6: real GPU: plain Triton vs the strongest torch path on H200 (measured); the simulator's H200-like config vs the measurement
#
# Measured on a real NVIDIA H200 with stock Triton (`python -m study.gpu` on the GPU machine;
# this backend not installed). Every row is timed one way: `triton.testing.do_bench`'s median
# with L2 cleared before every call, test and study shapes alike; the rows' notes carry the SM /
# memory clocks before and after, and `git_sha` the committed code measured.
#
# (a) The speedup of each plain Triton kernel of `kernels/` over the strongest torch path on the
# device, per workload (geometric mean over its study shapes and dtypes, both correct): cuBLAS
# (torch.matmul / bmm / addmm), cuBLASLt INT8 (`torch._int_mm`), SDPA, aten ops, and for
# workloads whose eager path is a chain of ops or an fp32 reference (quantisation, jagged,
# RoPE, gated and fused elementwise, dot interaction) the faster correct of eager and
# `torch.compile` (inductor, default mode, warm); the embedding bags use one `F.embedding_bag`
# over every table (no per-table loop, no host sync). A hatched bar: torch.compile was the
# torch path for at least one of its kernels.
#
# (b)-(d) The simulator in its H200-like config (`backend/configs/h200.toml`, derived by
# `python -m study.gpu_config` from the H200 microbenchmarks `results/raw/gpu_microbench_h200.csv`
# alone, never from these kernels) against the measured Triton time. The workloads are split
# once by a fixed rule (crc32 of the name, `study.gpu.half`): the calibration half could be
# looked at while choosing the config's model structure; the held-out half was not, and is
# reported separately. (b) simulated vs measured, log-log; (c) the error distribution per half,
# study shapes; (d) the signed error vs kernel size (measured time).
#
# Reads `results/raw/gpu_h200.csv` (committed; needs a GPU to regenerate) and
# `results/raw/sim_h200.csv` (`python -m study.gpu --simulate`; `make reproduce` re-simulates
# it). `make reproduce` skips this notebook when there are no GPU rows.
#
# Run it with `python notebooks/F6_gpu.py` from the repository root (in the project's venv), or
# open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F6_gpu.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when set)
# and writes `results/figures/F6_gpu.png|svg` and
# `results/tables/F6_gpu_failures|F6_gpu_by_workload|F6_gpu_by_family|F6_gpu_summary.md|tex`.

# %%
import os
import sys
sys.path.insert(0, os.getcwd())  # this tree's packages first, as in a kernel started at the repo root
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from study.gpu import half
from study.plots import geomean, load, natural_sort, need, save_figure, style, write_table
style()

# %%
df = load(["gpu_h200", "sim_h200"])
gpu = need(df[df.impl.isin(["triton_gpu", "torch_gpu"]) & (df.chip == "h200")], "GPU rows (impl triton_gpu / torch_gpu)")
device = gpu.device.mode()[0]
shas = sorted(gpu.git_sha.unique())
key = ["workload", "shape", "dtype"]
tags = gpu.notes.fillna("").str.extract(r"shape_tags=([a-z+]+)")[0].fillna("")
gpu = gpu.assign(study=tags.str.contains("study"), kernel=gpu.workload + " " + gpu["shape"] + " " + gpu.dtype)
tri = gpu[gpu.impl == "triton_gpu"].set_index(key)
tor = gpu[gpu.impl == "torch_gpu"].set_index(key)
print(f"{device}, code {', '.join(s[:10] for s in shas)}: triton_gpu correct {int(tri.correct.sum())}/{len(tri)} "
      f"(workload, shape, dtype); torch_gpu correct {int(tor.correct.sum())}/{len(tor)}")
clk = gpu.notes.fillna("").str.extract(r"clocks before sm=(\d+)MHz mem=(\d+)MHz, after sm=(\d+)MHz")
print("SM clock after each job (MHz):", clk[2].dropna().astype(int).value_counts().to_dict())
failed = natural_sort(tri[~tri.correct].reset_index()[key + ["notes"]], key)
write_table(failed.assign(notes=failed.notes.str.slice(0, 90)), "F6_gpu_failures", f"Plain Triton kernels incorrect or failing on {device}")
both = tri.merge(tor, left_index=True, right_index=True, suffixes=("_tri", "_tor"), how="inner")
both = both[both.correct_tri & both.correct_tor & both.time_us_tri.notna() & both.time_us_tor.notna()].reset_index()
both["speedup"] = both.time_us_tor / both.time_us_tri
both["torch_path"] = both.notes_tor.str.extract(r"torch path: ([^;]+)")[0]
both["compiled"] = both.torch_path.str.startswith("torch.compile")
sp = need(both[both.study_tri], "study-shape kernels correct and timed with both triton_gpu and torch_gpu")
per_wl = (sp.groupby("workload").agg(family=("family_tri", "first"), speedup=("speedup", geomean), kernels=("speedup", "size"),
                                     compiled=("compiled", "any"),
                                     torch_path=("torch_path", lambda s: " / ".join(sorted(set(s)))))
          .reset_index().sort_values("speedup"))
fams = sorted(per_wl.family.unique())
fam_colour = dict(zip(fams, sns.color_palette("colorblind", len(fams))))
g = geomean(sp.speedup)
# simulated (h200 config) vs measured triton_gpu, same kernel, shape, dtype; one timing method for both shapes
sim = df[(df.impl == "triton") & (df.chip == "h200") & (df.device == "simulated") & df.correct & df.time_us.notna()]
m = sim.merge(tri[tri.correct & tri.time_us.notna()].reset_index(), on=key, suffixes=("_sim", "_gpu"))
m["half"] = m.workload.map(half)
m["ratio"] = m.time_us_sim / m.time_us_gpu
m["err"] = (m.ratio - 1).abs()
print(f"simulated vs measured: {len(m)} kernels ({int(m.study.sum())} study shapes); simulated at {', '.join(sorted(s[:10] for s in m.git_sha_sim.unique()))}")
HALF_COL = {"calibration": "#0072b2", "held-out": "#d55e00"}

# %%
fig = plt.figure(figsize=(15, 12.5))
gs = fig.add_gridspec(2, 3, height_ratios=[1.05, 1], hspace=0.62, wspace=0.3)
ax = fig.add_subplot(gs[0, :])
x = np.arange(len(per_wl))
ax.bar(x, per_wl.speedup, color=[fam_colour[f] for f in per_wl.family], width=0.8,
       hatch=["//" if c else "" for c in per_wl.compiled], edgecolor="white", lw=0.3)
for xi, (v, n) in enumerate(zip(per_wl.speedup, per_wl.kernels)):
    ax.annotate(f"{v:.2f}", (xi, v), xytext=(0, 2 if v >= 1 else -9), textcoords="offset points", ha="center", fontsize=6)
ax.axhline(1.0, color="black", lw=0.8)
ax.axhline(g, ls="--", color="black", lw=1.2)
ax.annotate(f"geomean over {len(sp)} kernels: {g:.2f}x", xy=(0.005, g), xycoords=("axes fraction", "data"),
            xytext=(2, 4), textcoords="offset points", fontsize=9)
ax.set_yscale("log")
ax.set_xticks(x); ax.set_xticklabels(per_wl.workload, rotation=60, ha="right", fontsize=7.5); ax.set_xlim(-0.7, len(x) - 0.3)
ax.set_ylabel("speedup of plain Triton over torch\n(time torch / time Triton, log)")
ax.set_title(f"(a) Plain Triton vs the strongest torch path on {device} (do_bench median, L2 cleared): per workload, geomean of its study-shape kernels, "
             "both correct; >1 = Triton faster", fontsize=9.5)
hs = [plt.Rectangle((0, 0), 1, 1, color=fam_colour[f]) for f in fams] + [plt.Rectangle((0, 0), 1, 1, facecolor="lightgrey", hatch="//", edgecolor="white")]
ax.legend(handles=hs, labels=fams + ["torch path: torch.compile"], fontsize=7, ncol=len(fams) + 1, loc="upper left")
if len(m):
    ax = fig.add_subplot(gs[1, 0])
    for h, d in m.groupby("half"):
        for is_study, mk in [(False, "o"), (True, "D")]:
            e = d[d.study == is_study]
            ax.scatter(e.time_us_gpu, e.time_us_sim, s=18 if is_study else 10, marker=mk, color=HALF_COL[h],
                       alpha=0.85 if is_study else 0.5, edgecolor="white", lw=0.3,
                       label=f"{h}, {'study' if is_study else 'test'} shapes ({len(e)})")
    lo = min(m.time_us_gpu.min(), m.time_us_sim.min()) / 1.5; hi = max(m.time_us_gpu.max(), m.time_us_sim.max()) * 1.5
    xx = np.array([lo, hi]); ax.plot(xx, xx, color="black", lw=0.9)
    ax.fill_between(xx, xx / 1.15, xx * 1.15, color="grey", alpha=0.2, lw=0, label="±15%")
    ax.set_xlim(lo, hi); ax.set_ylim(lo, hi); ax.set_xscale("log"); ax.set_yscale("log")
    ax.legend(fontsize=6.5, loc="upper left")
    ax.set_xlabel(f"measured Triton time on {device} (us)"); ax.set_ylabel("simulated time, h200 config (us)")
    ax.set_title(f"(b) simulator (h200 config from microbenchmarks)\nvs measured, {len(m)} kernels", fontsize=9.5)
    ax = fig.add_subplot(gs[1, 1])
    s_ = m[m.study]
    bins = np.logspace(np.log10(max(m.err.min(), 1e-3)), np.log10(max(m.err.max(), 1.0) * 1.05), 25)
    for h, d in s_.groupby("half"):
        ax.hist(d.err.clip(lower=bins[0]), bins=bins, histtype="step", lw=1.8, color=HALF_COL[h],
                label=f"{h}: median {d.err.median() * 100:.0f}% ({len(d)} kernels of {d.workload.nunique()} workloads)")
        ax.axvline(d.err.median(), color=HALF_COL[h], ls="--", lw=1.2)
    ax.axvline(0.15, color="grey", lw=1.2, label="target 15%")
    ax.set_xscale("log"); ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v * 100:g}%"))
    ax.set_xlabel("|simulated - measured| / measured (log)"); ax.set_ylabel("study-shape kernels (count)")
    ax.legend(fontsize=7, loc="upper left")
    n_study = int((tri.correct & gpu[gpu.impl == "triton_gpu"].set_index(key).study).sum())
    ax.set_title(f"(c) prediction error, the {len(s_)} simulated of {n_study} study kernels: median {s_.err.median() * 100:.0f}%\n"
                 f"(all shapes: calibration {m[m.half == 'calibration'].err.median() * 100:.0f}%, held-out {m[m.half == 'held-out'].err.median() * 100:.0f}%)", fontsize=9.5)
    ax = fig.add_subplot(gs[1, 2])
    for h, d in m.groupby("half"):
        ax.scatter(d.time_us_gpu, d.ratio, s=np.where(d.study, 18, 9), marker="o", color=HALF_COL[h], alpha=0.7,
                   edgecolor="white", lw=0.3, label=h)
    ax.axhline(1.0, color="black", lw=0.9); ax.axhspan(1 / 1.15, 1.15, color="grey", alpha=0.2, lw=0)
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel("measured Triton time (us, log): kernel size"); ax.set_ylabel("simulated / measured (log)")
    ax.legend(fontsize=7, loc="best", title="large markers: study shapes", title_fontsize=6.5)
    ax.set_title("(d) error vs kernel size: >1 the simulator is slower", fontsize=9.5)
save_figure(fig, "F6_gpu")

# %%
err_wl = m[m.study].groupby("workload").agg(sim_kernels=("err", "size"), median_error=("err", "median"))
by_wl = per_wl.merge(err_wl, on="workload", how="left").assign(half=lambda d: d.workload.map(half))
by_wl = by_wl[["workload", "family", "half", "kernels", "speedup", "torch_path", "sim_kernels", "median_error"]]
write_table(by_wl.rename(columns={"speedup": "geomean speedup Triton/torch", "kernels": "study kernels",
                                  "median_error": "median sim error (study shapes)"}),
            "F6_gpu_by_workload", f"F6: plain Triton vs the strongest torch path on {device}, per workload (study shapes), and the h200 config's prediction error")
by_family = sp.groupby("family_tri").speedup.agg([geomean, "count"]).rename(columns={"geomean": "geomean speedup Triton/torch", "count": "kernels"})
by_family["torch paths"] = [" / ".join(sorted(set(sp[sp.family_tri == f].torch_path))) for f in by_family.index]
write_table(by_family.reset_index().rename(columns={"family_tri": "family"}), "F6_gpu_by_family",
            f"F6: geometric-mean speedup of plain Triton over the strongest torch path per family on {device} (study shapes)")
print(by_wl.to_string())


def med(sel):
    return float(m[sel].err.median()) if sel.any() else None


summary = pd.DataFrame([{"device": device, "git_sha": ", ".join(s[:10] for s in shas), "kernels (triton_gpu rows)": len(tri),
                         "triton correct": int(tri.correct.sum()), "speedup kernels (study)": len(sp),
                         "geomean speedup Triton/torch (study)": g, "share Triton >= torch": float((sp.speedup >= 1).mean()),
                         "sim-vs-measured kernels": len(m), "of them study shapes": int(m.study.sum()),
                         "median error, study, calibration": med(m.study & (m.half == "calibration")),
                         "median error, study, held-out": med(m.study & (m.half == "held-out")),
                         "median error, study, all": med(m.study),
                         "median error, all shapes": med(m.err.notna()),
                         "share within 15% (study)": float((m[m.study].err <= 0.15).mean()) if m.study.any() else None}])
write_table(summary, "F6_gpu_summary", f"F6: plain Triton vs the strongest torch path on {device}; simulator (h200 config from microbenchmarks) vs measured Triton time")
summary.T
