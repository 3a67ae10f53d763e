"""`python -m study report`: a terminal summary of results/raw, for a quick look without notebooks."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from study.results import raw_files, read_rows
from study.schema import DEFAULT_REGIME, row_regime


def _geomean(vs: list[float]) -> float:
    vs = [v for v in vs if v > 0]
    return math.exp(sum(map(math.log, vs)) / len(vs)) if vs else float("nan")


def summarise(results: Path) -> str:
    out = []
    for path in raw_files(results):
        rows = read_rows(path)
        shas = sorted({r["git_sha"] for r in rows})
        bad = [r for r in rows if not r["correct"]]
        out.append(f"{path.name}: {len(rows)} rows, {len(bad)} incorrect, fingerprints {', '.join(shas[-3:])}")
        for r in bad[:10]:
            out.append(f"    incorrect {r['workload']}/{r['impl']}/{r['shape']}/{r['dtype']}/{r['chip']}: {r['notes']}")
        by: dict[tuple, dict[str, float]] = defaultdict(dict)
        for r in rows:
            if r["correct"] and r["time_us"] and (r.get("options") or "default") == "default" and not r.get("config"):
                by[(r["workload"], r["shape"], r["dtype"], r["chip"], row_regime(r))][r["impl"]] = r["time_us"]
        regimes = sorted({k[-1] for k in by})
        for regime in regimes:  # never one geomean across memory regimes
            at = " in the " + regime + " regime" if len(regimes) > 1 or regime != DEFAULT_REGIME else ""
            for impl in ("triton", "triton_ext", "inductor"):
                sp = [t["expert"] / t[impl] for k, t in by.items() if k[-1] == regime and impl in t and "expert" in t]
                if sp:
                    out.append(f"    {impl} over expert{at}: geomean {_geomean(sp):.3f}x over {len(sp)} kernels")
    return "\n".join(out) if out else f"no raw results in {results / 'raw'}"
