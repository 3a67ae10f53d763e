"""Tile-IR passes: pointer analysis, mask analysis, DMA structuring, dead-code elimination."""
