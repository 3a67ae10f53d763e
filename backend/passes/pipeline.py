"""The order of the tile-level passes; each pass looks only at its own concern."""
from __future__ import annotations

from backend.tile_ir import Function


def run(fn: Function, options: object) -> dict:
    """Run the level-1 passes in place; returns the count of each kind of memory op."""
    from backend.passes import structure
    return structure.run(fn, options)
