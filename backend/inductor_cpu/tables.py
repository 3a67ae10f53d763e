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


def _folded(op: Any, original: Callable | None) -> Callable:
    def table(*args: Any, **kwargs: Any) -> Any:
        import torch
        import torch._inductor.config as ic
        from torch.utils._python_dispatch import _disable_current_modes

        from backend.inductor_cpu import options
        device = torch.device(kwargs.get("device") or "cpu")
        if ic.cpu_backend == "triton" and options.enabled(SWITCH) and device.type == "cpu":
            with _disable_current_modes():  # the real table, outside tracing
                out = op(*args, **kwargs)
            if out.numel() <= TABLE_LIMIT:
                # made again under tracing from its values: a constant of the graph
                return torch.tensor(out.tolist(), dtype=out.dtype, device=device)
        return original(*args, **kwargs) if original is not None else NotImplemented
    table.mtia_original = original  # type: ignore[attr-defined]
    return table


def install() -> None:
    import torch
    from torch._inductor import decomposition as D
    for op in (torch.ops.aten.tril_indices.default, torch.ops.aten.triu_indices.default):
        current = D.decompositions.get(op)
        if hasattr(current, "mtia_original"):
            continue
        _ORIGINAL[op] = current
        D.decompositions[op] = _folded(op, current)
    D.fast_random_decomps.cache_clear()


def uninstall() -> None:
    from backend.inductor_cpu.host_ops import uninstall_decompositions
    uninstall_decompositions(_ORIGINAL)
