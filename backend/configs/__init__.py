"""Chip configs as data: one TOML file per chip in this folder; `load_chip(name)` reads one.

A name may carry overrides of single keys, `<chip>@<section>.<key>=<value>` (several joined by
`@`), e.g. `mtia2i@dma.latency_cycles=400` or `mtia2i@assumptions.held_tiles=charged`: the
sensitivity study (study/suites.py) prices the same chip with one assumption changed, and the
name, recorded in each row's `chip` column, says exactly which. A value is read as a TOML value
(number, boolean, quoted string) and otherwise as a bare string; an override must name a key
the base config already has, so a typo is an error rather than a silently ignored knob.
"""
from __future__ import annotations

import copy
import functools
import os
import tomllib
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).parent
DEFAULT_CHIP = "mtia2i"
OVERRIDE_SEP = "@"
# Keys that only the timing model reads (never the compiler, the expert library's tiling or the
# functional simulator; not dma.fixed_cycles: the expert GEMM sizes its tiles with it): a chip
# differing from its base in these alone runs the same programs with the same events, so its
# times can be priced from the base chip's executed traces.
# tests/sim/test_regimes.py checks that repricing equals a full run for the sensitivity variants.
PRICING_ONLY: tuple[str, ...] = ("assumptions.", "dma.latency_cycles", "dma.run_cycles",
                                 "dma.gather_run_cycles", "dma.atomic_cycles", "command_processor.",
                                 "launch.", "scalar_path.")


def available_chips() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def base_chip(name: str) -> str:
    """The config file a (possibly overridden) chip name reads: `mtia2i@dma.x=1` -> `mtia2i`."""
    return name.split(OVERRIDE_SEP, 1)[0]


def variant_name(base: str, overrides: dict[str, Any]) -> str:
    """The chip name of `base` with `overrides` ({"dma.latency_cycles": 400}), in key order."""
    def text(v: Any) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else str(v)
    return OVERRIDE_SEP.join([base] + [f"{k}={text(v)}" for k, v in sorted(overrides.items())])


def pricing_only(name: str) -> bool:
    """True when every override of chip `name` is a key only the timing model reads."""
    return all(k.startswith(PRICING_ONLY) for k in parse_overrides(name)[1])


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: "static", "charged"


def parse_overrides(name: str) -> tuple[str, dict[str, Any]]:
    """(base chip, {dotted key: value}) of a chip name."""
    base, *parts = name.split(OVERRIDE_SEP)
    out: dict[str, Any] = {}
    for p in parts:
        key, eq, val = p.partition("=")
        if not eq or not key or "." not in key:
            raise ValueError(f"chip '{name}': override '{p}' is not <section>.<key>=<value>")
        out[key] = _parse_value(val)
    return base, out


@functools.lru_cache(maxsize=None)
def load_chip(name: str | None = None) -> dict[str, Any]:
    name = name or os.environ.get("MTIA_CHIP", DEFAULT_CHIP)
    base, overrides = parse_overrides(name)
    path = CONFIG_DIR / f"{base}.toml"
    if not path.exists():
        raise ValueError(f"unknown chip config '{base}'; available: {', '.join(available_chips())}")
    with path.open("rb") as f:
        cfg = tomllib.load(f)
    cfg.setdefault("name", base)
    if overrides:
        cfg = copy.deepcopy(cfg)
        for key, val in overrides.items():
            *sections, leaf = key.split(".")
            node = cfg
            for s in sections:
                node = node.get(s) if isinstance(node, dict) else None
                if not isinstance(node, dict):
                    raise ValueError(f"chip '{name}': no section '{'.'.join(sections)}' in {base}.toml")
            if leaf not in node:
                raise ValueError(f"chip '{name}': {base}.toml has no key '{key}' to override")
            old = node[leaf]
            if isinstance(old, (int, float)) and not isinstance(old, bool) and isinstance(val, (int, float)) \
                    and not isinstance(val, bool):
                val = type(old)(val) if isinstance(old, float) or float(val).is_integer() else float(val)
            elif type(old) is not type(val):
                raise ValueError(f"chip '{name}': '{key}' is {type(old).__name__} in {base}.toml, "
                                 f"got {val!r}")
            node[leaf] = val
        cfg["name"] = name
    return cfg
