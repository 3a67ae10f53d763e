"""Chip-aware reduction choices for Inductor's cpu -> MTIA path, through Inductor's own
extension point (`torch._inductor.config.inductor_choices_class`, an InductorChoices subclass).

Inductor sizes reductions for the host it believes it targets: its device properties for
`cpu` report the host's cores (two here) as the multiprocessor count, and its persistent
reduction threshold (rows of up to 1024 elements) is a GPU register budget. On the chip:

- `persistent_reductions`: a program holds a whole row in its PE's local memory (384 KB on
  mtia2i), so a row of up to local memory / (4 bytes x LIVE_TILES) elements is reduced
  persistently: one read of the input instead of one per reduction loop (softmax reads its row
  three times when looped).
- `reduction_rows`: a persistent reduction's program takes as many whole rows as fit the same
  local-memory budget (at least one program per PE) instead of Inductor's one row per program
  for rows over 1024 elements: the row-invariant operands (LayerNorm's weight and bias) are
  loaded once per program, not once per row (`persistent_rows()`, a fixed config through
  InductorChoices.triton_kernel_kwargs).
- `split_reductions`: an inner reduction with fewer outputs than PEs is split in two phases so the
  first phase spreads over the 64 PEs, instead of leaving the work to one or a few programs
  (a full sum is otherwise a grid of one).
- `pointwise_blocks`: Inductor's pointwise candidates hold at most 1024 elements (GPU thread
  blocks) and are autotuned; on the chip a program's start, descriptors and DMA runs are paid
  per tile, so a pointwise kernel gets one fixed block shape (`pointwise_blocks()`, through
  InductorChoices.triton_kernel_kwargs' `fixed_config`): POINTWISE_TILE elements, the
  innermost dimension whole where it fits (square where an access is contiguous along an outer
  dimension: Inductor's transpose), shrunk until every PE has a program.

Each is a switch of backend/inductor_cpu/options.py; off, Inductor's own choice is made.
"""
from __future__ import annotations

from typing import Any

import torch
from torch._inductor.choices import InductorChoices

from backend.inductor_cpu import options
from backend.inductor_cpu.gemm_templates import GemmTemplateChoices

# f32 tiles of one row alive at once in a persistent reduction's program (input, its upcast,
# exponent, output, and num_stages copies of the input): a row must fit that many times
LIVE_TILES = 8
# ... and at least this many for a kernel with few row operands (`row_tiles`): softmax's row,
# its upcast, exponent and output (a 16K-element f32 row in 384 KB, as the hand-written softmax
# holds it)
MIN_LIVE_TILES = 6
# Inductor's persistent-reduction candidates: XBLOCK in (1, 8, 32, 128) with XBLOCK x row at
# most 4096 elements (torch/_inductor/runtime/triton_heuristics.py)
INDUCTOR_MIN_XBLOCK = 8
INDUCTOR_PERSISTENT_NUMEL = 4096
# a split's chunk must amortise a program's start and its partial-result store
MIN_SPLIT_CHUNK = 2048


def _chip() -> dict:
    from backend.configs import load_chip
    from backend.driver import DEVICE
    return load_chip(DEVICE.chip)


def num_pes() -> int:
    g = _chip()["pe_grid"]
    return int(g["rows"]) * int(g["cols"])


def persistent_row_limit(tiles: int = LIVE_TILES) -> int:
    """Largest power-of-two row a persistent reduction keeps in local memory, `tiles` f32
    copies of it alive at once."""
    n = int(_chip()["local_memory"]["bytes"]) // (4 * tiles)
    return 1 << (n.bit_length() - 1)


def row_tiles(features: Any) -> int:
    """The f32 row tiles a persistent reduction of this kernel keeps alive: one per buffer of
    the fused nodes that holds a row or more (inputs, outputs and the intermediates Inductor
    fused: an exponent, a centred row; a per-row statistic does not count where rows outnumber
    their elements), three more for the upcasts and values between, at least MIN_LIVE_TILES and at
    most LIVE_TILES (the budget of any kernel whose accesses are not known). A softmax row (its
    input, exponent and output) gets 6: 16K f32 elements in 384 KB instead of 8K; a LayerNorm
    (row, weight, bias, centred row, output) keeps LIVE_TILES."""
    try:
        row = int(features.reduction_numel)
        held: set[str] = set()
        for node in features.scheduler_nodes():
            rw = node.read_writes
            for dep in list(rw.reads) + list(rw.writes):
                numel = 1
                for n in dep.size:
                    numel *= int(n)
                if numel >= row:
                    held.add(dep.name)
    except Exception:  # noqa: BLE001 - symbolic sizes or unknown accesses: the general budget
        return LIVE_TILES
    return max(MIN_LIVE_TILES, min(LIVE_TILES, len(held) + 3))


def pointwise_tile() -> int:
    """Elements of a pointwise tile: the largest power of two that LIVE_TILES f32 copies of
    fit in local memory (8192 on mtia2i: the block of the triton_ext streaming kernels)."""
    return persistent_row_limit()


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def pointwise_blocks(sizes: dict[str, int], tile: int, pes: int, square: bool = False) -> dict[str, int]:
    """Block per dimension ('x' innermost, then 'y', 'z') of a pointwise kernel over `sizes`:
    at most `tile` elements; x takes the power of two that pads its extent least (ties: the
    larger, fewer programs), the outer dimensions take what is left; then blocks halve (outer
    first) while the grid has fewer programs than `pes` and the tile is over 256 elements.
    `square` (a kernel that also accesses memory contiguously along y: a transpose): x takes at
    most 2^ceil(log2(tile) / 2) elements, so the DMA runs are long on both sides."""
    order = [p for p in ("x", "y", "z") if p in sizes]
    blocks: dict[str, int] = {}
    left = tile
    for i, p in enumerate(order):
        n = max(1, sizes[p])
        cap = min(left, 1 << (tile.bit_length() // 2)) if square and i == 0 and len(order) > 1 else left
        lo = min(_pow2_floor(n), cap)
        hi = min(lo * 2, cap) if lo < n else lo
        blocks[p] = hi if -(-n // hi) * hi <= -(-n // lo) * lo else lo
        left = max(1, left // blocks[p])

    def programs() -> int:
        out = 1
        for p in order:
            out *= -(-sizes[p] // blocks[p])
        return out

    def elems() -> int:
        out = 1
        for b in blocks.values():
            out *= b
        return out

    while programs() < pes and elems() > 256:
        p = next((q for q in reversed(order) if blocks[q] > 1), None)
        if p is None:
            break
        blocks[p] //= 2
    return blocks


def transposed_access(features: Any) -> bool:
    """Whether a node of the kernel reads or writes memory contiguously along an outer loop
    variable and strided along the innermost (`in[c1, c0]` read in the order of `out[c0, c1]`):
    Inductor's 2D tiling of a transpose, unlike a broadcast's or a concatenation's, whose every
    access is contiguous along the innermost variable."""
    import sympy
    from torch._inductor.dependencies import MemoryDep
    for node in getattr(features, "node_schedule", ()):
        rw = getattr(node, "read_writes", None)
        if rw is None:
            continue
        for dep in list(rw.reads) + list(rw.writes):
            if not isinstance(dep, MemoryDep):  # StarDep, WeakDep: no index
                continue
            index, names, size = dep.index, dep.var_names, dep.size
            live = [v for v, n in zip(names, size) if n != 1]
            if index is None or len(live) < 2:
                continue
            try:
                strides = [sympy.diff(index, v) for v in live]
            except Exception:  # noqa: BLE001 - an index sympy cannot differentiate: not this pattern
                continue
            if strides[-1] != 1 and any(s == 1 for s in strides[:-1]):
                return True
    return False


def persistent_rows(features: Any, tiling: dict) -> dict[str, int] | None:
    """The XBLOCK of a persistent reduction over one x dimension: as many whole rows per
    program as fit the persistent row budget (`persistent_row_limit` elements) while every PE
    keeps a program; None: Inductor's own choice.

    - Rows over 512 elements (an inner reduction): Inductor's candidates hold one row per
      program at most; at the study's 4096-wide rows the weight and bias are then loaded once
      per row.
    - Rows of at most 512 elements, where Inductor autotunes XBLOCK 1..128: only when every row
      operand is a broadcast (`broadcast_rows`: loaded once per program, so more rows per
      program only save loads and program starts) and the grid has rows enough for every PE to
      hold a full block: small_bucketize's compare-and-count kernel. Autotuning picks the same
      block there (measured at the DLRM shape), but it runs every candidate through the
      simulator, and XBLOCK 1 is one program per row: 267,034 programs whose data-dependent
      table lookup keeps the simulator from running them in lockstep. Other short rows (MX4's
      32-element groups) keep Inductor's autotuning, which measured better blocks there.
    """
    from torch._inductor.runtime.hints import ReductionHint
    if not (options.enabled("reduction_rows") and options.enabled("persistent_reductions") and _on_chip_graph()):
        return None
    if set(tiling) != {"x", "r0_"}:
        return None
    try:
        xn, rn = int(tiling["x"]), int(tiling["r0_"])
    except TypeError:
        return None
    rblock = 1 << max(0, (rn - 1).bit_length())
    if rblock > persistent_row_limit(row_tiles(features)):
        return None
    # several rows per program within the general budget (a row past it is one per program)
    limit = persistent_row_limit()
    long_rows = rblock * INDUCTOR_MIN_XBLOCK > INDUCTOR_PERSISTENT_NUMEL
    if long_rows:
        if features.get_reduction_hint() != ReductionHint.INNER:
            return None
    else:
        # the budget counts f32 tiles (narrower types are computed in f32); 8-byte elements
        # (int64: the compare-and-count kernel) take twice the room. (Long rows keep the f32
        # budget: no study kernel reduces a long row of 8-byte elements.)
        limit = limit * 4 // max(4, _widest_itemsize(features))
        if not broadcast_rows(features, xn * rn) or xn < (limit // rblock) * num_pes():
            return None
    x = 1
    while rblock * x * 2 <= limit and -(-xn // (x * 2)) >= num_pes():
        x *= 2
    # one row per program is fixed too for long rows (Inductor's only candidate there): a fixed
    # XBLOCK of 1 is Inductor's `no_x_dim` form, whose row mask is a constant, so the reductions'
    # and loads' selects on it (a SIMD pass over the row each) are not emitted. Not for scans and
    # sorts: Inductor's split scan takes no fixed config (the paper-shape MoE's cumsum)
    if x == 1 and (features.contains_op("scan") or features.contains_op("sort")):
        return None
    return {"XBLOCK": x} if x > 1 or long_rows else None


def broadcast_rows(features: Any, block: int) -> bool:
    """Whether no memory access of the kernel spans its x-by-row block (`block` elements):
    every row operand is the same for every x (a broadcast, such as small_bucketize's
    boundaries) and every per-x operand has one element per row. Judged from each access's
    index: the product of the extents of the loop variables it depends on. (Inductor's
    reduction hint does not tell: it differed for the same graph between compiles.)"""
    from torch._inductor.dependencies import MemoryDep
    for node in features.scheduler_nodes():
        rw = getattr(node, "read_writes", None)
        if rw is None:
            continue
        for dep in list(rw.reads) + list(rw.writes):
            if not isinstance(dep, MemoryDep) or dep.index is None:
                continue
            extents = dict(zip(dep.var_names, dep.size))
            span = 1
            for v in dep.index.free_symbols:
                if v in extents:
                    try:
                        span *= int(extents[v])
                    except TypeError:  # a symbolic extent: it may span
                        return False
            if span >= block:
                return False
    return True


def _widest_itemsize(features: Any) -> int:
    """Bytes of the widest element type among the buffers the kernel reads or writes (4 when
    none is known)."""
    from torch._inductor.virtualized import V
    widest = 4
    for name in features.buf_accesses():
        try:
            widest = max(widest, V.graph.get_dtype(name).itemsize)
        except Exception:  # noqa: BLE001 - a name the graph does not know (a kernel-local buffer)
            continue
    return widest


def _on_chip_graph() -> bool:
    """The graph being compiled targets CPU tensors, i.e. this backend (cpu_backend="triton")."""
    from torch._inductor.virtualized import V
    try:
        dev = V.graph.get_current_device_or_throw()
    except Exception:
        return True
    return dev.type == "cpu"


class MTIAChoices(GemmTemplateChoices):
    def triton_kernel_kwargs(self, kernel_cls: Any, features: Any, groups: Any, kernel_kwargs: dict) -> dict:
        kw = super().triton_kernel_kwargs(kernel_cls, features, groups, kernel_kwargs)
        if kw.get("fixed_config") is not None or not _on_chip_graph():
            return kw
        tiling = groups[0] if groups and isinstance(groups[0], dict) else kw.get("tiling")
        if not tiling:
            return kw
        from torch._inductor.codegen.triton import FixedTritonConfig
        if features.is_reduction():  # `reduction_rows` (persistent_rows reads its switch)
            persistent = kw.get("override_persistent_reduction")
            if persistent is None:  # what the kernel will decide (cooperative: never on a cpu device)
                persistent = self.should_use_persistent_reduction(features, False)
            block = persistent_rows(features, tiling) if persistent else None
            return kw if block is None else {**kw, "fixed_config": FixedTritonConfig(block)}
        if not options.enabled("pointwise_blocks") or any(p.startswith("r") and int(v) != 1 for p, v in tiling.items()
                                                          if getattr(v, "is_number", True)):
            return kw
        try:
            sizes = {p: int(v) for p, v in tiling.items() if not p.startswith("r")}
        except TypeError:  # a symbolic extent: Inductor's own candidates
            return kw
        blocks = pointwise_blocks(sizes, pointwise_tile(), num_pes(), square=transposed_access(features))
        return {**kw, "fixed_config": FixedTritonConfig({f"{p.upper()}BLOCK": b for p, b in blocks.items()})}

    @staticmethod
    def should_use_persistent_reduction(features: Any, cooperative_reduction: bool) -> bool:
        from torch._inductor import config
        from torch._inductor.runtime.hints import ReductionHint
        from torch._inductor.virtualized import V
        if (options.enabled("persistent_reductions") and config.triton.persistent_reductions
                and not cooperative_reduction and _on_chip_graph()
                and features.get_reduction_hint() == ReductionHint.INNER):
            return V.graph.sizevars.statically_known_leq(features.reduction_numel,
                                                         persistent_row_limit(row_tiles(features)))
        return InductorChoices.should_use_persistent_reduction(features, cooperative_reduction)

    @staticmethod
    def reduction_split_factor(device: torch.device, reduction_numel_hint: int, numel_hint: int,
                               inner_reduction: bool) -> int:
        # outer reductions keep Inductor's split: it already spreads 128-output column blocks
        if not (options.enabled("split_reductions") and device.type == "cpu" and inner_reduction):
            return InductorChoices.reduction_split_factor(device, reduction_numel_hint, numel_hint, inner_reduction)
        pes = num_pes()
        programs = max(1, numel_hint)  # an inner reduction runs one output row per program
        if programs >= pes:
            return 1
        split = -(-pes // programs)
        return max(1, min(split, reduction_numel_hint // MIN_SPLIT_CHUNK))


def install() -> None:
    """Make MTIAChoices Inductor's choices handler (config for new threads, and this one's)."""
    import torch._inductor.config as ic
    from torch._inductor.virtualized import V
    ic.inductor_choices_class = MTIAChoices
    if not isinstance(V.choices, MTIAChoices):
        V.set_choices_handler(MTIAChoices())


def uninstall() -> None:
    import torch._inductor.config as ic
    from torch._inductor.virtualized import V
    if ic.inductor_choices_class is MTIAChoices:
        ic.inductor_choices_class = None
    if isinstance(V.choices, MTIAChoices):
        V.set_choices_handler(InductorChoices())
