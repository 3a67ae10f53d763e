"""`constant_tables`: index tables of constant arguments folded to constants at compile time.

`torch.tril_indices(n, n, offset)` / `triu_indices` take Python numbers only, so their value is
known when the graph is compiled. Inductor decomposes them into index arithmetic that it
computes on every call, each table in a kernel of its own (DLRM's pairwise-interaction gather
`z[:, i, j]`: two launches of about 1.3 us each before the gather). With the switch on, on the
cpu -> MTIA path, the decomposition returns the table itself (computed once, outside tracing,
and made again from its values under tracing, so the graph holds it as a constant): the gather
reads it from memory like any other index tensor. Tables of more than TABLE_LIMIT elements keep
Inductor's decomposition.

Installed in Inductor's decomposition table, wrapping the entry it replaces.
"""
from __future__ import annotations

from typing import Any, Callable

SWITCH = "constant_tables"
TABLE_LIMIT = 1 << 16
_ORIGINAL: dict[Any, Callable | None] = {}


def _folded(op: Any) -> Callable:
    def table(*args: Any, **kwargs: Any) -> Any:
        import torch
        from torch.utils._python_dispatch import _disable_current_modes
        with _disable_current_modes():  # the real table, outside tracing
            out = op(*args, **kwargs)
        if out.numel() > TABLE_LIMIT:
            return NotImplemented
        # made again under tracing from its values: a constant of the graph
        return torch.tensor(out.tolist(), dtype=out.dtype, device=kwargs.get("device") or "cpu")
    return table


def install() -> None:
    import torch

    from backend.inductor_cpu.host_ops import install_decompositions
    ops = (torch.ops.aten.tril_indices.default, torch.ops.aten.triu_indices.default)
    install_decompositions({op: _folded(op) for op in ops}, _ORIGINAL, SWITCH)


def uninstall() -> None:
    from backend.inductor_cpu.host_ops import uninstall_decompositions
    uninstall_decompositions(_ORIGINAL)
