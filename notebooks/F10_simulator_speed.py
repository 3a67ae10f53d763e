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
# # F10: simulator speed, before and after, and what `make reproduce` costs
#
# Left: host throughput of the simulator (simulated instructions, "events", per second of host
# wall time) on the benchmark kernels of `python -m tools.bench_sim` (a 4096^3 BF16 GEMM and a
# 16384 x 4096 softmax, builder-written and plain Triton through the driver), in the timing-only
# and the functional mode, for a baseline revision and the current code, measured side by side
# in one run (`python -m tools.bench_sim --baseline REV --csv results/raw/sim_speed.csv`). The
# cycles of both must be equal: a speed-up that changes a simulated number is a bug.
# Right: each suite's host wall time in the last `make reproduce` (`results/raw/reproduce_wall.csv`,
# with the number of worker processes and host CPUs it ran with; where steps were last run at
# different revisions, each bar names its own); the paper-shape models run in
# the background beside the suites and the steps after them, so the title's sum leaves them out.
#
# How to read it: both are host time on the machine that ran them, never chip time; ratios
# measured in one run are comparable, absolute seconds depend on the host and its load.
#
# Run it with `python notebooks/F10_simulator_speed.py` from the repository root (in the
# project's venv), or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F10_simulator_speed.ipynb`. It reads only `results/raw/`
# (`$STUDY_RESULTS/raw` when set) and writes `results/figures/F10_simulator_speed.png|svg`.

# %%
import os
import sys
sys.path.insert(0, os.getcwd())  # this tree's packages first, as in a kernel started at the repo root
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from study.plots import MissingDataError, results_dir, save_figure, style, write_table
style()

# %%
raw = results_dir() / "raw"
speed_path, wall_path = raw / "sim_speed.csv", raw / "reproduce_wall.csv"
if not speed_path.exists() and not wall_path.exists():
    raise MissingDataError(f"neither {speed_path} nor {wall_path} exists")
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.4, 1]})
if speed_path.exists():
    sp = pd.read_csv(speed_path)
    sp["code"] = sp["code"].astype(str)
    codes = list(dict.fromkeys(sp.code))  # baseline first, as the benchmark writes them
    cyc = sp.groupby(["workload", "mode"]).cycles.nunique()
    if (cyc > 1).any():
        print("WARNING: cycles differ between revisions for", list(cyc[cyc > 1].index))
    def short(w: str) -> str:  # "triton_gemm_4096^3_bf16" -> "Triton\ngemm": the table below has the sizes
        side = "Triton" if w.startswith("triton_") else "builder"
        op = w.removeprefix("triton_").split("_")[0]
        return f"{side}\n{op}"
    sp["bench"] = [short(w) + "\n" + m for w, m in zip(sp.workload, sp["mode"])]
    benches = list(dict.fromkeys(sp.bench))
    x = np.arange(len(benches))
    width = 0.8 / len(codes)
    ax = axes[0]
    for j, code in enumerate(codes):
        v = sp[sp.code == code].set_index("bench").events_per_s.reindex(benches) / 1e6
        ax.bar(x + (j - (len(codes) - 1) / 2) * width, v, width=width, label=code,
               color=["#999999", "#0072B2", "#56B4E9"][j % 3])
    base, cur = codes[0], codes[-1]
    ratio = (sp[sp.code == cur].set_index("bench").events_per_s / sp[sp.code == base].set_index("bench").events_per_s
             ).reindex(benches)
    top = sp.groupby("bench").events_per_s.max().reindex(benches) / 1e6
    for xi, r, h in zip(x, ratio, top):
        if np.isfinite(r):
            ax.annotate(f"{r:.1f}x", (xi, h), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=9,
                        fontweight="bold")
    ax.set_ylim(0, top.max() * 1.15)
    ax.set_xticks(x, benches, fontsize=7)
    ax.set_ylabel("simulated instructions per host second (millions)")
    ax.set_title("simulator throughput, same cycles (speed-up of current over baseline)", fontsize=9)
    ax.legend(fontsize=8)
    table = sp.pivot_table(index=["workload", "mode"], columns="code", values="wall_s").reset_index()
    write_table(table, "F10_simulator_speed", "Simulator host wall time (s) per benchmark, baseline vs current")
    print(table.to_string(index=False))
else:
    axes[0].text(0.5, 0.5, f"no {speed_path.name}", ha="center", transform=axes[0].transAxes)
if wall_path.exists():
    wl = pd.read_csv(wall_path)
    ax = axes[1]
    ax.barh(wl.suite, wl.wall_s / 60, color="#0072B2")
    wl["git_sha"] = wl.git_sha.astype(str)
    mixed = wl.git_sha.nunique() > 1  # steps last run at different revisions: each bar names its own
    for yi, (w, r, sha) in enumerate(zip(wl.wall_s, wl["rows"], wl.git_sha)):
        ax.annotate(f"{w / 60:.1f} min, {r} rows" + (f" (at {sha[:7]})" if mixed else ""), (w / 60, yi),
                    xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, wl.wall_s.max() / 60 * 1.5)
    ax.set_xlabel("host wall time (minutes)")
    # a step run in the background overlaps the others: not added to the sum
    serial = wl[~wl.suite.str.contains("in the background")]
    ax.set_title(f"make reproduce: {serial.wall_s.sum() / 60:.1f} min of steps, {int(wl.workers.iloc[0])} workers "
                 f"on {int(wl.cpus.iloc[0])} CPUs" + ("\n(steps last run at different revisions)" if mixed else ""),
                 fontsize=9)
    print(wl.to_string(index=False))
else:
    axes[1].text(0.5, 0.5, f"no {wall_path.name}", ha="center", transform=axes[1].transAxes)
fig.tight_layout()
save_figure(fig, "F10_simulator_speed")
