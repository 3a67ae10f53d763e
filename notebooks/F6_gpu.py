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
# # F6: real GPU: plain Triton vs the strongest torch path on H200 (measured); the simulator's H200-like config vs the measurement; the H100 as a held-out device
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
# F6b, the H100 as a fully held-out device: the same kernels measured on an NVIDIA H100 80GB
# HBM3 (`results/raw/gpu_h100.csv`) against the simulator in an H100-like config
# (`backend/configs/h100.toml`, derived by `python -m study.gpu_config --device h100` from the
# H100 microbenchmarks `results/raw/gpu_microbench_h100.csv` alone, by the same rules as the
# h200 config). No choice of the model's structure looked at H100 data, and nothing is fitted
# to `gpu_h100.csv`: every H100 workload, calibration half included, is held out. Figure
# `F6b_gpu_h100` and table `F6_gpu_h100_summary` give its error with the H200's beside it, and
# the Triton-vs-torch speedup on the H100.
#
# Reads `results/raw/gpu_h200.csv` and `gpu_h100.csv` (committed; need the GPU to regenerate) and
# `results/raw/sim_h200.csv` / `sim_h100.csv` (`python -m study.gpu --simulate [--chip h100]`;
# `make reproduce` re-simulates both). `make reproduce` skips this notebook when there are no GPU rows.
#
# Run it with `python notebooks/F6_gpu.py` from the repository root (in the project's venv), or
# open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F6_gpu.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when set)
# and writes `results/figures/F6_gpu.png|svg`, `F6b_gpu_h100.png|svg` and
# `results/tables/F6_gpu_failures|F6_gpu_by_workload|F6_gpu_by_family|F6_gpu_summary|F6_gpu_h100_summary.md|tex`.

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


# %% [markdown]
# ## F6b: the H100, a fully held-out device
#
# The same plain Triton kernels, measured on an NVIDIA H100 80GB HBM3 (one timing method, as on
# the H200), against the simulator in its H100-like config. That config comes from the H100's own
# microbenchmarks through the rules that made the h200 config, and no choice of the machine
# model's structure looked at H100 data (nothing is fitted to `gpu_h100.csv`).
# So every H100 workload is held out, whichever half `study.gpu.half` puts it in; the halves are
# kept in the table only to compare like with like against the H200. The H100 differs from the
# H200 mainly in HBM (3.35 vs 4.8 TB/s on the datasheets; 3.0 vs 4.2 TB/s measured copy): the
# check is whether the method, not one calibrated config, predicts a second device.


# %%
def triton_vs_torch(gpu_rows):
    """Per (workload, shape, dtype): the measured triton_gpu and torch_gpu rows side by side, and
    their speedup where both are correct and timed (what (a) plots for the H200)."""
    tags_ = gpu_rows.notes.fillna("").str.extract(r"shape_tags=([a-z+]+)")[0].fillna("")
    gpu_rows = gpu_rows.assign(study=tags_.str.contains("study"))
    tri_ = gpu_rows[gpu_rows.impl == "triton_gpu"].set_index(key)
    tor_ = gpu_rows[gpu_rows.impl == "torch_gpu"].set_index(key)
    b = tri_.merge(tor_, left_index=True, right_index=True, suffixes=("_tri", "_tor"), how="inner")
    b = b[b.correct_tri & b.correct_tor & b.time_us_tri.notna() & b.time_us_tor.notna()].reset_index()
    b["speedup"] = b.time_us_tor / b.time_us_tri
    return tri_, b


def sim_vs_measured(sim_rows, tri_):
    """Simulated and measured Triton time of the same kernel, shape and dtype, and the error."""
    out = sim_rows.merge(tri_[tri_.correct & tri_.time_us.notna()].reset_index(), on=key, suffixes=("_sim", "_gpu"))
    out["half"] = out.workload.map(half)
    out["ratio"] = out.time_us_sim / out.time_us_gpu
    out["err"] = (out.ratio - 1).abs()
    return out


d100 = load(["gpu_h100", "sim_h100"])
gpu100 = need(d100[d100.impl.isin(["triton_gpu", "torch_gpu"]) & (d100.chip == "h100")], "H100 GPU rows (gpu_h100.csv)")
dev100 = gpu100.device.mode()[0]
shas100 = sorted(gpu100.git_sha.unique())
tri100, both100 = triton_vs_torch(gpu100)
sp100 = need(both100[both100.study_tri], "H100 study-shape kernels correct and timed with both triton_gpu and torch_gpu")
g100 = geomean(sp100.speedup)
sim100 = need(d100[(d100.impl == "triton") & (d100.chip == "h100") & (d100.device == "simulated") & d100.correct
                   & d100.time_us.notna()], "simulated h100 rows (sim_h100.csv)")
m100 = sim_vs_measured(sim100, tri100)
print(f"{dev100}, code {', '.join(s[:10] for s in shas100)}: triton_gpu correct {int(tri100.correct.sum())}/{len(tri100)}; "
      f"Triton/torch geomean over {len(sp100)} study kernels {g100:.3f} (H200: {g:.3f} over {len(sp)})")
print(f"simulated (h100 config) vs measured: {len(m100)} kernels ({int(m100.study.sum())} study shapes); "
      f"simulated at {', '.join(sorted(s[:10] for s in m100.git_sha_sim.unique()))}")
DEV_COL = {"H100 (held out)": "#d55e00", "H200": "#0072b2"}
pair = {"H100 (held out)": m100, "H200": m}

# %%
fig = plt.figure(figsize=(13, 11))
gs = fig.add_gridspec(2, 2, hspace=0.42, wspace=0.28)
ax = fig.add_subplot(gs[0, 0])
for is_study, mk in [(False, "o"), (True, "D")]:
    e = m100[m100.study == is_study]
    ax.scatter(e.time_us_gpu, e.time_us_sim, s=20 if is_study else 11, marker=mk, color=DEV_COL["H100 (held out)"],
               alpha=0.85 if is_study else 0.5, edgecolor="white", lw=0.3, label=f"{'study' if is_study else 'test'} shapes ({len(e)})")
lo = min(m100.time_us_gpu.min(), m100.time_us_sim.min()) / 1.5; hi = max(m100.time_us_gpu.max(), m100.time_us_sim.max()) * 1.5
xx = np.array([lo, hi]); ax.plot(xx, xx, color="black", lw=0.9)
ax.fill_between(xx, xx / 1.15, xx * 1.15, color="grey", alpha=0.2, lw=0, label="±15%")
ax.set_xlim(lo, hi); ax.set_ylim(lo, hi); ax.set_xscale("log"); ax.set_yscale("log")
ax.legend(fontsize=7, loc="upper left", title="every workload held out", title_fontsize=7)
ax.set_xlabel(f"measured Triton time on {dev100} (us)"); ax.set_ylabel("simulated time, h100 config (us)")
ax.set_title(f"(a) held-out device: simulator (h100 config from H100 microbenchmarks)\nvs measured H100, {len(m100)} kernels", fontsize=9.5)

ax = fig.add_subplot(gs[0, 1])
for name, mm in pair.items():
    for study_only, ls in [(True, "-"), (False, ":")]:
        e = np.sort(mm[mm.study].err.values if study_only else mm.err.values)
        if not len(e):
            continue
        ax.step(np.r_[e, e[-1]], np.r_[np.arange(1, len(e) + 1) / len(e), 1.0], where="post", color=DEV_COL[name], ls=ls,
                lw=1.8 if study_only else 1.2,
                label=f"{name}, {'study' if study_only else 'all'}: median {np.median(e) * 100:.0f}% ({len(e)})")
ax.axvline(0.15, color="grey", lw=1.2, label="target 15%")
ax.set_xscale("log"); ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v * 100:g}%"))
ax.set_xlim(left=max(min(mm.err.min() for mm in pair.values()), 1e-3)); ax.set_ylim(0, 1.02)
ax.set_xlabel("|simulated - measured| / measured (log)"); ax.set_ylabel("share of kernels with at most this error")
ax.legend(fontsize=7, loc="upper left", title="shapes: median error (kernels)", title_fontsize=6.5)
ax.set_title(f"(b) error distribution, H100 (held out) beside H200: within 15%,\nstudy shapes: H100 {(m100[m100.study].err <= 0.15).mean() * 100:.0f}%, "
             f"H200 {(m[m.study].err <= 0.15).mean() * 100:.0f}%; all shapes: H100 {(m100.err <= 0.15).mean() * 100:.0f}%, "
             f"H200 {(m.err <= 0.15).mean() * 100:.0f}%", fontsize=9.5)

ax = fig.add_subplot(gs[1, 0])
# the same kernel's error on both devices: points on the diagonal are errors the model makes on
# either GPU (its structure), points off it are what the device's own config changes
kk = m100.merge(m, on=key, suffixes=("_h100", "_h200"))
for is_study, mk in [(False, "o"), (True, "D")]:
    e = kk[kk.study_h100 == is_study]
    ax.scatter(e.ratio_h200, e.ratio_h100, s=22 if is_study else 11, marker=mk, color=DEV_COL["H100 (held out)"],
               alpha=0.85 if is_study else 0.5, edgecolor="white", lw=0.3, label=f"{'study' if is_study else 'test'} shapes ({len(e)})")
lo, hi = min(kk.ratio_h200.min(), kk.ratio_h100.min()) / 1.3, max(kk.ratio_h200.max(), kk.ratio_h100.max()) * 1.3
ax.plot([lo, hi], [lo, hi], color="black", lw=0.9)
ax.axhspan(1 / 1.15, 1.15, color="grey", alpha=0.2, lw=0); ax.axvspan(1 / 1.15, 1.15, color="grey", alpha=0.2, lw=0)
ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)
ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}x")); ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}x"))
ax.set_xlabel("simulated / measured on H200 (h200 config, log)"); ax.set_ylabel("simulated / measured on H100 (h100 config, log)")
ax.legend(fontsize=7, loc="upper left", title="grey bands: within 15%", title_fontsize=6.5)
r_ = np.corrcoef(np.log(kk.ratio_h200), np.log(kk.ratio_h100))[0, 1]
ax.set_title(f"(c) the same kernel's error on each device ({len(kk)} kernels):\nlog-ratio correlation {r_:.2f}; <1 the simulator is faster than the GPU", fontsize=9.5)

ax = fig.add_subplot(gs[1, 1])
wl200 = sp.groupby("workload").speedup.apply(geomean)
wl100 = sp100.groupby("workload").speedup.apply(geomean)
cmp_ = pd.concat({"h200": wl200, "h100": wl100}, axis=1).dropna()
fam_of = dict(zip(per_wl.workload, per_wl.family))
for f in fams:
    e = cmp_[cmp_.index.map(fam_of) == f]
    ax.scatter(e.h200, e.h100, s=28, color=fam_colour[f], edgecolor="white", lw=0.4, label=f)
lo, hi = cmp_.min().min() / 1.4, cmp_.max().max() * 1.4
ax.plot([lo, hi], [lo, hi], color="black", lw=0.9); ax.axhline(1, color="grey", lw=0.6); ax.axvline(1, color="grey", lw=0.6)
moved = np.log(cmp_.h100 / cmp_.h200).abs().sort_values()
for w_ in moved.index[-4:]:  # name the workloads whose speedup moved most between the devices
    ax.annotate(w_, (cmp_.h200[w_], cmp_.h100[w_]), xytext=(4, -8), textcoords="offset points", fontsize=6.5)
ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)
ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}x")); ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}x"))
ax.set_xlabel(f"Triton / torch speedup on H200 (geomean {g:.2f}x)"); ax.set_ylabel(f"Triton / torch speedup on H100 (geomean {g100:.2f}x)")
ax.legend(fontsize=6.5, loc="upper left", ncol=2)
ax.set_title(f"(d) measured plain Triton vs the strongest torch path, per workload\n(geomean of study shapes, {len(cmp_)} workloads): H100 vs H200", fontsize=9.5)
fig.suptitle("F6b: the H100 as a fully held-out device (no model choice looked at H100 data; config from H100 microbenchmarks alone)",
             fontsize=11, y=0.95)
save_figure(fig, "F6b_gpu_h100")

# %%


def errors(mm, dev, role, spd, n_sp):
    def q(sel):
        return float(mm[sel].err.median()) if sel.any() else None
    st = mm.study
    return {"device": dev, "role": role, "sim-vs-measured kernels": len(mm), "of them study shapes": int(st.sum()),
            "median error, study": q(st), "median error, all shapes": q(mm.err.notna()),
            "share within 15%, study": float((mm[st].err <= 0.15).mean()) if st.any() else None,
            "share within 15%, all shapes": float((mm.err <= 0.15).mean()),
            "median error, study, calibration-half workloads": q(st & (mm.half == "calibration")),
            "median error, study, held-out-half workloads": q(st & (mm.half == "held-out")),
            "geomean speedup Triton/torch (study)": spd, "speedup kernels (study)": n_sp}


h100_summary = pd.DataFrame([errors(m100, dev100, "every workload held out (config from H100 microbenchmarks)", g100, len(sp100)),
                             errors(m, device, "calibration and held-out halves (config from H200 microbenchmarks)", g, len(sp))])
write_table(h100_summary, "F6_gpu_h100_summary",
            f"F6b: the simulator's H100-like config (from H100 microbenchmarks alone; every H100 workload held out) vs measured Triton time on {dev100}, "
            f"with the H200's figures beside it; plain Triton vs the strongest torch path on each device (study shapes)")
h100_summary.T
