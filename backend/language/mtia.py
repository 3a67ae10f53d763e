"""MTIA language extensions for @triton.jit kernels: `from backend.language import mtia`.

What plain Triton cannot say about a PE grid:

- `mtia.pe_id()`: the index of the PE running this program (0 .. num_pes() - 1).
- `mtia.num_pes()`: how many PEs the launch runs on.

A kernel that calls either is a PE-grid kernel: it is compiled persistent (the launch runs at
most one program per PE, each looping over the grid's program ids; see
backend/passes/persistent.py), so the PE is a fixed thing the kernel can plan work around,
e.g. split jagged rows so every PE gets the same number of elements:

    @triton.jit
    def k(..., ):
        pe, n = mtia.pe_id(), mtia.num_pes()
        ...                                   # this PE's share of the work
    k[(num_pes,)](...)                        # one program per PE

Each extension is a `tt.extern_elementwise` whose symbol is `mtia.ext.<name>`; the backend's
lowering maps the symbol to instructions (`lower_extension`). Compiled for any other backend
the call raises at compile time, naming the extension and the backend.
"""
from __future__ import annotations

from typing import Any

from triton.language import core

# symbol -> (ISA instruction, attributes): scalar queries of the launch a program belongs to
_QUERIES = {"mtia.ext.pe_id": ("scalar.pid", {"axis": 0}), "mtia.ext.num_pes": ("scalar.nprog", {"axis": 0})}


def _require_mtia(name: str, _semantic: Any) -> None:
    options = getattr(getattr(_semantic, "builder", None), "options", None)
    backend = getattr(options, "backend_name", None)
    if backend != "mtia":
        raise NotImplementedError(f"mtia.{name}() is an MTIA language extension and needs the MTIA backend "
                                  f"(this kernel is being compiled for '{backend}'); use the plain Triton "
                                  "variant of the kernel on other backends")


def _query(name: str, _semantic: Any) -> Any:
    _require_mtia(name, _semantic)
    return core.extern_elementwise("", "", [], {(): (f"mtia.ext.{name}", core.int32)}, is_pure=True,
                                   _semantic=_semantic)


@core.extern
def pe_id(_semantic: Any = None) -> Any:
    """The index of the PE that runs this program (int32 scalar, 0 .. num_pes() - 1)."""
    return _query("pe_id", _semantic)


@core.extern
def num_pes(_semantic: Any = None) -> Any:
    """The number of PEs this launch runs on: min(PEs of the chip, programs of the grid)."""
    return _query("num_pes", _semantic)


def lower_extension(e: Any, op: Any) -> None:
    """Lowering rule for the `mtia.ext.*` symbols (called from backend/lowering.py)."""
    symbol = op.attrs.get("symbol", "")
    if symbol in _QUERIES:
        # the kernel is persistent (passes/persistent.PE_QUERIES): its launch grid is (P, 1, 1),
        # one program per PE, so the physical program id is the PE
        name, attrs = _QUERIES[symbol]
        e.emit(name, [op.result.name], {}, dict(attrs), op.loc)
        return
    raise e.error(op, f"MTIA language extension '{symbol}' has no lowering rule")
