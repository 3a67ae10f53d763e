"""Seeded input makers shared by the workload declarations (no workloads are declared here)."""
from __future__ import annotations

import torch

from study.registry import TORCH_DTYPES


def randn(shape: tuple | int, dtype: str, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    x = torch.randn(shape, generator=gen)
    if scale != 1.0:  # in place: the embedding tables are hundreds of MB
        x.mul_(scale)
    return x.to(TORCH_DTYPES[dtype])


def randint(lo: int, hi: int, shape: tuple | int, gen: torch.Generator, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64).to(dtype)


def offsets_from_lengths(lengths: torch.Tensor) -> torch.Tensor:
    offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths.to(torch.int64), dim=0)
    return offsets


def jagged(batch: int, max_len: int, dim: int, dtype: str, gen: torch.Generator,
           min_len: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A jagged tensor (values [total, dim], offsets [batch + 1]) with lengths uniform in [min_len, max_len]."""
    lengths = randint(min_len, max_len + 1, batch, gen)
    offsets = offsets_from_lengths(lengths)
    return randn((int(offsets[-1]), dim), dtype, gen), offsets
