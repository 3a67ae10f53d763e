"""The streaming skeleton shared by every bandwidth-bound expert program.

A logical [rows, cols] iteration space is cut into [BR, BC] tiles; the persistent program of
each PE takes a contiguous run of tiles (row-major); for each tile it DMAs every input in
(double-buffered), runs a per-tile body on the SIMD / SFU / RE engines, and DMAs the outputs
out (double-buffered). Tile edges are handled by the DMA box bounds.

Per-row-whole programs (normalisation, row quantisation) use BC = cols: the body then sees
complete rows and may reduce along axis 1 on the reduction engine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from backend.sim.builder import Reg
from baselines.expert.common import ProgramBuilder
from baselines.expert.common import cdiv, n_pes, partition, pid64, pipelined_segments, s64, smin


@dataclass(frozen=True)
class Operand:
    """One tensor streamed by tiles: element (r, c) of the iteration space lives at
    offset + r * row_stride + c * col_stride. row_stride=0 broadcasts one row (bias, weights);
    `per_row` marks a [rows] vector read / written one value per row (scales)."""
    name: str
    dtype: str
    row_stride: int
    offset: int = 0
    col_stride: int = 1
    per_row: bool = False
    resident: bool = False  # loaded once per program (broadcast rows only)


def stream2d(name: str, rows: int, cols: int, BR: int, BC: int, ins: Sequence[Operand], outs: Sequence[Operand],
             body: Callable[[ProgramBuilder, list[Reg], list[Reg]], None], setup: Callable | None = None,
             workers: int | None = None, prologue: Callable | None = None):
    """Build the program. body(b, in_tiles, out_tiles) fills the output tiles (declared here,
    double-buffered) from the input tiles; setup(b) may declare temporaries once;
    prologue(b, {name: tile}) runs once per program on the resident operands (e.g. converts
    weights to FP32 outside the tile loop)."""
    tr, tc = cdiv(rows, BR), cdiv(cols, BC)
    grid, per = partition(tr * tc, workers)
    b = ProgramBuilder(name)
    ptrs = [b.param_ptr(o.name, o.dtype) for o in list(ins) + list(outs)]
    pin, pout = ptrs[:len(ins)], ptrs[len(ins):]
    if setup is not None:
        setup(b)
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), tr * tc)

    def shape_of(o: Operand) -> list[int]:
        return [BR, 1] if o.per_row else ([1, BC] if o.row_stride == 0 else [BR, BC])

    # resident broadcast rows (only when one column tile covers every column)
    resident = {}
    for p, o in zip(pin, ins):
        if o.resident:
            assert tc == 1 and o.row_stride == 0
            resident[o.name] = b.dma_load(p, o.offset, [1, BC], [0, o.col_stride], hi=[1, cols])
    if prologue is not None:
        prologue(b, resident)
    out_tiles = [b.tile(shape_of(o), o.dtype, copies=2, name=f"o_{o.name}") for o in outs]
    in_tiles: list[Reg | None] = [None] * len(ins)
    with b.loop(first, last, 1, name="tile") as t:
        r0 = s64(b, "mul", s64(b, "sdiv", t, tc), BR)
        c0 = s64(b, "mul", s64(b, "srem", t, tc), BC)
        hr, hc = s64(b, "sub", rows, r0), s64(b, "sub", cols, c0)
        for i, (p, o) in enumerate(zip(pin, ins)):
            if o.resident:
                in_tiles[i] = resident[o.name]
                continue
            off, strides, hi = _desc(b, o, r0, c0, hr, hc)
            in_tiles[i] = b.dma_load(p, off, shape_of(o), strides, copies=2, hi=hi, out=in_tiles[i])
        body(b, list(in_tiles), out_tiles)
        for p, o, v in zip(pout, outs, out_tiles):
            off, strides, hi = _desc(b, o, r0, c0, hr, hc)
            b.dma_store(p, v, off, strides, hi=hi)
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


def stream_tiles(name: str, rows: int, cols: int, BR: int, BC: int, ins: Sequence[Operand],
                 outs: Sequence[Operand], make_body: Callable[[ProgramBuilder, int], Callable],
                 prologue: Callable | None = None, tail_rows: int | None = None, workers: int | None = None):
    """The streaming skeleton, software-pipelined, with broadcast rows loaded once per column block.

    make_body(b, br) declares the temporaries for tiles of br rows and returns
    body(b, in_tiles, out_tiles) (it is called for BR and, with tail_rows, for the tail tiles).
    Operand conventions as stream2d. Differences:
      - the loads of tile i + 1 are issued before the body of tile i (common.pipelined_segments);
      - work is split by column block first: the PEs form tc groups (tc = column blocks), each
        streaming a contiguous range of rows of its block, so broadcast operands (bias, weights:
        row_stride 0) are DMA'd once per program (once per column block when a program covers
        several), not once per tile; prologue(b, {name: tile}) runs after each such load;
      - tail_rows < BR: a program's last BR rows stream as tiles of tail_rows rows, their loads
        all issued before the last big tile's body, so the work left after the program's last
        byte arrives is a small tile's (the big tiles keep the DMA descriptor count low);
      - the ragged ends are bounded by the DMA box as in stream2d."""
    P = workers or n_pes()
    tr, tc = cdiv(rows, BR), cdiv(cols, BC)
    if tc >= P:
        cper, g, per = cdiv(tc, P), 1, tr
        gc = cdiv(tc, cper)
    else:
        cper, gc = 1, tc
        per = cdiv(tr, max(1, P // tc))
        g = cdiv(tr, per)
    BRs = tail_rows if tail_rows and tail_rows < BR else None
    b = ProgramBuilder(name)
    ptrs = [b.param_ptr(o.name, o.dtype) for o in list(ins) + list(outs)]
    pin, pout = ptrs[:len(ins)], ptrs[len(ins):]
    w = pid64(b)
    cg, j = (s64(b, "sdiv", w, g), s64(b, "srem", w, g)) if g > 1 else (w, 0)
    r_first = s64(b, "mul", j, per * BR)
    r_end = smin(b, s64(b, "add", r_first, per * BR), rows)          # rows of this program
    c_first = s64(b, "mul", cg, cper)
    c_last = smin(b, s64(b, "add", c_first, cper), tc)
    if BRs:
        # big tiles but the last: n_main = max(0, ceil(rows / BR) - 1); the rest in small tiles
        n_main = s64(b, "smax", s64(b, "sub", s64(b, "sdiv", s64(b, "add", s64(b, "sub", r_end, r_first), BR - 1), BR), 1), 0)
        r_tail = s64(b, "add", r_first, s64(b, "mul", n_main, BR))
        n_tail = s64(b, "sdiv", s64(b, "add", s64(b, "sub", r_end, r_tail), BRs - 1), BRs)
        plan = [(BR, r_first, n_main), (BRs, r_tail, n_tail)]
    else:
        plan = [(BR, r_first, s64(b, "sdiv", s64(b, "add", s64(b, "sub", r_end, r_first), BR - 1), BR))]

    def shape_of(o: Operand, br: int) -> list[int]:
        return [br, 1] if o.per_row else ([1, BC] if o.row_stride == 0 else [br, BC])

    bodies = [make_body(b, br) for br, _, _ in plan]
    out_tiles = [[b.tile(shape_of(o, br), o.dtype, copies=2, name=f"o_{o.name}") for o in outs] for br, _, _ in plan]
    bcast: dict[int, Reg] = {}
    with b.loop(c_first, c_last, 1, name="cblk") as c:
        c0 = s64(b, "mul", c, BC)
        hc = s64(b, "sub", cols, c0)
        for i, (p, o) in enumerate(zip(pin, ins)):
            if o.row_stride == 0 and not o.per_row:
                bcast[i] = b.dma_load(p, s64(b, "add", s64(b, "mul", c0, o.col_stride), o.offset), [1, BC],
                                      [0, o.col_stride], hi=[1, hc], out=bcast.get(i))
        if prologue is not None:
            prologue(b, {ins[i].name: r for i, r in bcast.items()})

        def segment(k):
            br, base, count = plan[k]

            def rows_of(t):
                r0 = s64(b, "add", base, s64(b, "mul", t, br))
                return r0, s64(b, "sub", r_end, r0)

            def load(t, regs):
                r0, hr = rows_of(t)
                regs = list(regs) if regs else [None] * len(ins)
                for i, (p, o) in enumerate(zip(pin, ins)):
                    if i in bcast:
                        regs[i] = bcast[i]
                        continue
                    off, strides, hi = _desc(b, o, r0, c0, hr, hc)
                    regs[i] = b.dma_load(p, off, shape_of(o, br), strides, hi=hi, out=regs[i])
                return regs

            def run(regs, t):
                r0, hr = rows_of(t)
                bodies[k](b, list(regs), out_tiles[k])
                for p, o, v in zip(pout, outs, out_tiles[k]):
                    off, strides, hi = _desc(b, o, r0, c0, hr, hc)
                    b.dma_store(p, v, off, strides, hi=hi)
            return (0, count, load, run, BR // BRs if BRs and k == 1 else None)

        pipelined_segments(b, [segment(k) for k in range(len(plan))])
    prog = b.build()
    prog.meta["grid"] = gc * g
    return prog


def _desc(b: ProgramBuilder, o: Operand, r0, c0, hr, hc):
    if o.per_row:
        return s64(b, "add", r0, o.offset), [1, 0], [hr, 1]
    if o.row_stride == 0:
        return s64(b, "add", s64(b, "mul", c0, o.col_stride), o.offset), [0, o.col_stride], [1, hc]
    off = s64(b, "add", s64(b, "add", s64(b, "mul", r0, o.row_stride), s64(b, "mul", c0, o.col_stride)), o.offset)
    return off, [o.row_stride, o.col_stride], [hr, hc]


def tile_shape(rows: int, cols: int, elems: int = 8192, whole_rows: bool = False) -> tuple[int, int]:
    """[BR, BC] of about `elems` elements: whole rows when asked (or when rows are short),
    BR a power of two no larger than needed."""
    if whole_rows or cols <= elems:
        bc = cols
        br = max(1, min(elems // max(cols, 1), rows))
        br = 1 << (br.bit_length() - 1)
        return br, bc
    return 1, elems
