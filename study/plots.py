"""What every notebook shares: loading raw rows, one colour per implementation, saving figures
and tables the same way. Notebooks read only results/raw through `load`."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable

from study.results import RESULTS_DIR, load_raw
from study.schema import DEFAULT_REGIME

# One colour per implementation, used by every figure (colour-blind-safe Okabe-Ito hues).
PALETTE: dict[str, str] = {
    "triton": "#0072B2", "triton_ext": "#56B4E9", "expert": "#D55E00", "inductor": "#009E73",
    "torch": "#999999", "triton_gpu": "#CC79A7", "torch_gpu": "#E69F00",
}
IMPL_LABELS: dict[str, str] = {
    "triton": "Triton (plain)", "triton_ext": "Triton + MTIA extensions", "expert": "expert library",
    "inductor": "Inductor", "torch": "PyTorch eager", "triton_gpu": "Triton on H200", "torch_gpu": "torch/cuBLAS on H200",
}
MEASUREMENT_KEY = ["workload", "impl", "shape", "dtype", "chip", "options", "config", "regime"]


def results_dir() -> Path:
    """The notebooks' results folder: $STUDY_RESULTS when set (reproduce sets it), else results/."""
    return Path(os.environ.get("STUDY_RESULTS", RESULTS_DIR))


class MissingDataError(RuntimeError):
    pass


def load(suites: Iterable[str] | None = None, require: Iterable[str] = ()) -> Any:
    """Latest measurement per key, across the given suites' raw files. Repeats of one key (a
    later sweep, or the same row in two suites) keep the most recently measured."""
    df = load_raw(results_dir(), suites)
    df = df.sort_values("measured_at", kind="stable", na_position="first")
    df["options"] = df["options"].fillna("default")
    df["config"] = df["config"].fillna("")
    df["regime"] = df["regime"].fillna(DEFAULT_REGIME)  # rows from before the regime column were priced cold
    df = df.drop_duplicates(MEASUREMENT_KEY, keep="last")
    # in key order, not file order: sweeps append rows as jobs finish (longest first, so the order
    # follows the host's timings), and a figure must not depend on it (strip-plot jitter does)
    df = df.sort_values(list(MEASUREMENT_KEY), kind="stable").reset_index(drop=True)
    for col in require:
        if df[col].isna().all():
            raise MissingDataError(f"raw results have no values in column '{col}'")
    return df


def need(df: Any, what: str) -> Any:
    """Fail loudly when a notebook's selection is empty: a blank figure would mislead."""
    if len(df) == 0:
        raise MissingDataError(f"no raw rows for {what} in {results_dir() / 'raw'}")
    return df


def geomean(values: Iterable[float]) -> float:
    vs = [float(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vs:
        return float("nan")
    return math.exp(sum(math.log(v) for v in vs) / len(vs))


def natural_key(label: Any) -> tuple:
    """Sort key for shape labels with numbers in them: m4096xn4096 before m14336xn4096."""
    import re
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(label)))


def natural_sort(df: Any, columns: list[str]) -> Any:
    """`df` sorted by `columns`, numbers inside their values compared as numbers."""
    return df.sort_values(columns, key=lambda col: col.map(natural_key)).reset_index(drop=True)


def save_figure(fig: Any, name: str) -> list[Path]:
    out = results_dir() / "figures"
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    # a fixed hash salt keeps SVG ids, and so the files, identical from run to run
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        # four significant digits: with three a ratio of 0.9996 printed as "1", a target met;
        # within 0.1% of 1 (not 1 itself) five decimals, so that 0.99996 and 1.00004 differ
        if v != 1.0 and 0.999 <= v < 1.001:
            return f"{v:.5f}"
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def write_table(df: Any, name: str, caption: str) -> list[Path]:
    """Markdown and LaTeX versions of one table, written without extra dependencies."""
    out = results_dir() / "tables"
    out.mkdir(parents=True, exist_ok=True)
    cols = [str(c) for c in df.columns]
    rows = [[_cell(v) for v in r] for r in df.itertuples(index=False)]
    md = [f"<!-- {caption} -->", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    esc = lambda s: s.replace("\\", "\\textbackslash{}").replace("_", "\\_").replace("%", "\\%").replace("&", "\\&").replace("#", "\\#")
    tex = ["\\begin{table}[t]", "\\centering", f"\\caption{{{esc(caption)}}}", f"\\label{{tab:{name}}}",
           "\\begin{tabular}{" + "l" * len(cols) + "}", "\\toprule", " & ".join(esc(c) for c in cols) + " \\\\",
           "\\midrule"] + [" & ".join(esc(c) for c in r) + " \\\\" for r in rows] + [
           "\\bottomrule", "\\end{tabular}", "\\end{table}"]
    paths = [out / f"{name}.md", out / f"{name}.tex"]
    paths[0].write_text("\n".join(md) + "\n")
    paths[1].write_text("\n".join(tex) + "\n")
    return paths


def style() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.1)
    plt.rcParams.update({"svg.hashsalt": "study", "figure.dpi": 110, "savefig.dpi": 150})
