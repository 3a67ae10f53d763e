"""Placeholder: structuring of memory ops (filled in by the pointer/mask analysis)."""
from __future__ import annotations


def run(fn, options) -> dict:
    return {}
