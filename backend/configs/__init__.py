"""Chip configs as data: one TOML file per chip in this folder; `load_chip(name)` reads one."""
from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).parent
DEFAULT_CHIP = "mtia2i"


def available_chips() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


@functools.lru_cache(maxsize=None)
def load_chip(name: str | None = None) -> dict[str, Any]:
    name = name or os.environ.get("MTIA_CHIP", DEFAULT_CHIP)
    path = CONFIG_DIR / f"{name}.toml"
    if not path.exists():
        raise ValueError(f"unknown chip config '{name}'; available: {', '.join(available_chips())}")
    with path.open("rb") as f:
        cfg = tomllib.load(f)
    cfg.setdefault("name", name)
    return cfg
