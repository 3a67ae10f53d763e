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
# # F8: engine timeline of one kernel (DMA / DPE / SIMD overlap) from the simulator's trace
#
# The engine timeline of the first PE running the plain Triton GEMM (`kernels/gemm.py`, BF16,
# a shape small enough to trace every instruction: see `study/timeline.py`), from the
# simulator's trace of one launch on mtia2i.
#
# Reads `results/raw/timeline_matmul.json` (a Perfetto / Chrome trace written by
# `python -m study.timeline`; load it in ui.perfetto.dev for every PE).
#
# How to read it: x is simulated time in us, one row per engine (PROGRAM: a program's lifetime
# on the PE; DMA_IN / DMA_OUT transfers; DPE matrix ops; SIMD, SFU, RE, MLU, SCALAR). Bars that
# overlap in time are engines working concurrently, e.g. the next tiles' DMA under the current
# DPE work (double buffering). The title gives each engine's busy share of the programs' time.
#
# Run it with `python notebooks/F8_timeline.py` from the repository root (in the project's venv),
# or open it in Jupyter (jupytext); `make reproduce` executes it into
# `notebooks/executed/F8_timeline.ipynb`. It reads only `results/raw/` (`$STUDY_RESULTS/raw` when
# set) and writes `results/figures/F8_timeline.png|svg`.

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
import json
from study.plots import results_dir
path = results_dir() / "raw" / "timeline_matmul.json"
if not path.exists():
    raise FileNotFoundError(f"{path} is missing: run python -m study.timeline")
doc = json.loads(path.read_text())
meta = doc["otherData"]
tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
spans = pd.DataFrame([dict(pe=e["pid"], engine=tracks[(e["pid"], e["tid"])], start=e["ts"], dur=e["dur"])
                      for e in doc["traceEvents"] if e.get("ph") == "X"])
spans = need(spans, "trace spans")
engines = [e for e in ["PROGRAM", "DMA_IN", "DPE", "SIMD", "SFU", "RE", "MLU", "DMA_OUT", "SCALAR"] if e in set(spans.engine)]
pe0 = spans[spans.pe == spans.pe.min()]
colors = {"PROGRAM": "#bdbdbd", "DMA_IN": "#3182bd", "DMA_OUT": "#6baed6", "DPE": "#e6550d", "SIMD": "#31a354",
          "SFU": "#756bb1", "RE": "#636363", "MLU": "#fdae6b", "SCALAR": "#969696"}
fig, ax = plt.subplots(figsize=(9, 0.45 * len(engines) + 1.2))
for i, eng in enumerate(engines):
    d = pe0[pe0.engine == eng]
    ax.broken_barh(list(zip(d.start, d.dur)), (i - 0.4, 0.8), color=colors.get(eng, "#999999"))
ax.set_yticks(range(len(engines)), engines)
ax.invert_yaxis()
ax.set_xlabel("simulated time (us)")
busy = {e: pe0[pe0.engine == e].dur.sum() for e in engines if e != "PROGRAM"}
span = pe0[pe0.engine == "PROGRAM"].dur.sum() or (pe0.start + pe0.dur).max()
util = ", ".join(f"{e} {100 * b / span:.0f}%" for e, b in busy.items() if b > 0)
ax.set_title(f"{meta['kernel']} {meta['shape']} {meta['dtype']} on {meta['chip']}, PE {int(pe0.pe.min())}: "
             f"engine busy share {util}", fontsize=9)
save_figure(fig, "F8_timeline")
