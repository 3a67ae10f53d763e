"""What each chip-aware Inductor switch buys on the T3 models (study/model_coverage.py).

    python -m study.inductor_effect [--models decoder,dlrm] [--sizes test] [--out effect.csv]

Per model and size: T3's measurement with every switch of backend/inductor_cpu/options.py off
(Inductor's own choices), with each switch on alone, and with all on. Columns are T3's:
triton_time_us is simulated; fallback_est_us is T3's roofline estimate of the ops left on the
host (not a simulation), so a switch that moves GEMMs onto the chip moves time from the
second column to the first.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path


def settings() -> list[tuple[str, dict[str, bool]]]:
    from backend.inductor_cpu.options import DEFAULTS
    off = {k: False for k in DEFAULTS}
    out = [("all_off", off)]
    out += [(f"only_{k}", dict(off, **{k: True})) for k in DEFAULTS]
    out.append(("all_on", {k: True for k in DEFAULTS}))  # every switch, the off-by-default ones too
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="decoder,dlrm,moe,jagged")
    ap.add_argument("--sizes", default="test")
    ap.add_argument("--settings", default="", help="comma-separated names (default: all)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    from backend.inductor_cpu import options
    from study import model_coverage
    from study.inductor import configure
    model_coverage.configure()
    configure()
    want = set(filter(None, a.settings.split(",")))
    rows = []
    for size in a.sizes.split(","):
        for model in a.models.split(","):
            for name, sw in settings():
                if want and name not in want:
                    continue
                options.activate(**sw)
                c = model_coverage.measure(model, size)
                row = dict(model=model, size=size, setting=name, triton_time_us=round(c.triton_time_us, 3),
                           fallback_est_us=round(c.fallback_est_us, 3), e2e_us=round(c.e2e_us, 3),
                           n_triton_kernels=c.n_triton_kernels, n_fallback_ops=c.n_fallback_ops,
                           fallback_ops=c.fallback_ops, correct=c.correct)
                print(row, flush=True)
                rows.append(row)
    if a.out and rows:
        with open(a.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
