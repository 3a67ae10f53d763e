"""Pointer analysis + mask analysis: memory ops -> structured DMA, gathers, or the scalar path.

For every `tt.load` / `tt.store` the pass tries, in order:
1. structured DMA (`mtia.dma_load` / `mtia.dma_store`): the pointer tile is
   `base + offset + sum_d idx_d * stride_d` with scalar offset and strides (affine analysis
   of `tt.addptr` chains through splat, make_range, add, mul by uniform, expand_dims,
   broadcast, trans), and the mask is a box `lo_d <= idx_d < hi_d` (compares of affine
   indices with uniform bounds, combined with `&`) or an explicit mask tile. Loop-carried
   pointer tiles advanced by a uniform amount are rewritten into scalar offsets.
   (Triton 3.8 has already rewritten block pointers into such tiles and masks.)
   A box whose contiguous dim (stride 1) is not the tile's last (Inductor's transpose loads
   [Y, X] tiles with Y contiguous) is moved in memory order, runs along that dim, and permuted
   in local memory by the MLU (a `tt.trans` after the load, before the store), instead of one
   DMA run per element (`transposed_dma`, on by default). A load whose last dim has a stride
   of 2 or 4 elements (Inductor's MX4 packing reads x[2i] and x[2i + 1]) reads the dense span
   in one run and the MLU keeps every 2nd / 4th element (`dense_strided_dma`), instead of one
   32-byte burst per element. A load whose last-dim index is `x // k` (Inductor's pointwise
   stack of the two nibbles of a byte reads p[x // 2]; a nearest-neighbour repeat reads
   x[c // k]) moves the tile of distinct elements, k times fewer, in one structured DMA and
   the MLU repeats each k times (`repeat_dma`), instead of an index-driven DMA per element.
   A load whose unstructured index Inductor's asserts bound to a small span
   (`0 <= idx < K`, the check it emits before every indirect access) reads the span densely,
   one run per row of the tile along the dims the structured part moves, and the MLU gathers
   from it in local memory (`table_dma`): a 4-entry table-offset lookup, the 27 x 27 products
   of a DLRM interaction row.
2. index-driven DMA (`mtia.gather` / `mtia.scatter`): the pointer is `splat(base) + offsets`
   with offsets the analysis cannot structure (modulo, division, loaded indices); the offset
   tile is computed on the PE and drives the DMA.
3. the scalar fallback path (the op stays `tt.load` / `tt.store`): pointers the analysis
   cannot relate to a base (selected between tensors, loaded from memory).
Each rewritten op records its `path`; the stage text prints it. Scalar expressions the
descriptors need are emitted once, hoisted to the outermost region where they are defined.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from backend.passes import dce
from backend.passes.sexpr import ONE, ZERO, SExpr
from backend.tile_ir import Function, Op, Region, Type, UnsupportedError, Value, walk

I64 = Type("i64")
# the smallest tile a strided load is read densely for (below it, per-element runs are cheaper
# than the MLU splits' issue and latency: decode attention's per-split (max, sum) pairs)
DENSE_MIN_ELEMENTS = 256
# a gather from a bounded span is read as the dense span (`table_dma`) when the span holds at
# most TABLE_MAX elements and the span's rows at most TABLE_REREAD times the tile's elements
TABLE_MAX = 4096
TABLE_REREAD = 4


@dataclass(frozen=True)
class Aff:
    """An integer tile as base + sum_d idx_d * strides[d] (strides of unit dims are zero)."""
    base: SExpr
    strides: tuple


@dataclass(frozen=True)
class PtrInfo:
    base: Value          # scalar pointer register
    offset: SExpr        # scalar element offset from base
    aff: Aff | None      # tile offsets (None for a scalar pointer)
    resid: tuple = ()    # (offset tile, view shape): offsets the analysis cannot structure


@dataclass
class Box:
    """Per dim: lists of lower / upper bounds (all must hold)."""
    lo: list = field(default_factory=list)
    hi: list = field(default_factory=list)


def _norm(strides, shape) -> tuple:
    return tuple(ZERO if n == 1 else s for s, n in zip(strides, shape))


class Structurer:
    def __init__(self, fn: Function, options: object):
        self.fn = fn
        self.options = options
        self.defs: dict[Value, Op] = {}
        self.region_of_op: dict[int, Region] = {}
        self.parent_of_region: dict[int, Op | None] = {}
        self.def_region: dict[Value, Region] = {}
        self._aff: dict[Value, Aff | None] = {}
        self._ptr: dict[Value, PtrInfo | None] = {}
        self._bounds: dict[Value, tuple[int, int]] | None = None
        self.promoted: dict[Value, PtrInfo] = {}
        self._assumed: set | None = None
        self._uniform: dict[Value, bool] = {}
        self.inserts: dict[tuple[int, int], list[Op]] = {}
        self.shared_consts: set[int] = set()  # ids of the arith.constant ops _as_value made
        self.emitted: dict[tuple[int, SExpr], Value] = {}
        self.report: dict[str, int] = {}
        self._index(fn.body, None)

    # ------------------------------------------------------------------ structure maps

    def _index(self, region: Region, parent: Op | None) -> None:
        self.parent_of_region[id(region)] = parent
        for a in region.args:
            self.def_region[a] = region
        for op in region.ops:
            self.region_of_op[id(op)] = region
            for r in op.results:
                self.defs[r] = op
                self.def_region[r] = region
            for r in op.regions:
                self._index(r, op)

    def _ancestors(self, region: Region) -> list[Region]:
        chain = [region]
        while True:
            p = self.parent_of_region.get(id(chain[-1]))
            if p is None:
                return chain
            chain.append(self.region_of_op[id(p)])

    # ------------------------------------------------------------------ scalar expressions

    def sexpr(self, v: Value) -> SExpr:
        op = self.defs.get(v)
        if op is not None and not v.type.is_tile:
            n = op.name
            if n == "arith.constant" and isinstance(op.attrs.get("value"), (int, bool)):
                return SExpr.of(int(op.attrs["value"]))
            if n == "arith.addi":
                return self.sexpr(op.operands[0]) + self.sexpr(op.operands[1])
            if n == "arith.subi":
                return self.sexpr(op.operands[0]) - self.sexpr(op.operands[1])
            if n == "arith.muli":
                return self.sexpr(op.operands[0]) * self.sexpr(op.operands[1])
            if n in ("arith.extsi", "arith.index_cast"):
                return self.sexpr(op.operands[0])
        return SExpr.of(v)

    def _depth(self, e: SExpr, chain: list[Region]) -> int:
        """How deep (0 = the use's outermost region) the values of `e` force it to live."""
        depth = 0
        for v in e.values:
            r = self.def_region[v]
            depth = max(depth, len(chain) - 1 - chain.index(r)) if r in chain else len(chain) - 1
        return depth

    def emit(self, e: SExpr | int, use_op: Op) -> Value | int:
        """Materialise `e` as scalar ops, each part hoisted as far out as its values allow."""
        if isinstance(e, int):
            e = SExpr.of(e)
        if e.is_const:
            return e.const
        if e.const == 0 and len(e.terms) == 1 and e.terms[0][1] == 1 and len(e.terms[0][0]) == 1:
            return e.terms[0][0][0]
        chain = self._ancestors(self.region_of_op[id(use_op)])
        depth = self._depth(e, chain)
        target = chain[len(chain) - 1 - depth]
        key = (id(target), e)
        if key in self.emitted:
            return self.emitted[key]
        # the loop-invariant part is emitted outside, once
        inner = tuple((m, c) for m, c in e.terms if self._depth(SExpr(((m, c),), 0), chain) == depth)
        outer = SExpr(tuple(t for t in e.terms if t not in inner), e.const)
        ops: list[Op] = []
        new = _builder(ops, use_op.loc)
        acc: Value | None = None
        if depth > 0 and not outer.is_const:
            acc = self._as_value(self.emit(outer, use_op), use_op)
            outer = ZERO
        acc = _sum_terms(new, inner, acc, lambda k: self._as_value(k, use_op))
        if outer.const:
            acc = new("arith.addi", [acc, self._as_value(outer.const, use_op)])
        self._place(ops, target, use_op)
        self.emitted[key] = acc
        return acc

    def _place(self, ops: list[Op], target: Region, use_op: Op) -> None:
        anchor = use_op
        while self.region_of_op[id(anchor)] is not target:
            anchor = self.parent_of_region[id(self.region_of_op[id(anchor)])]
        for o in ops:
            self.region_of_op[id(o)] = target
            for r in o.results:
                self.defs[r] = o
                self.def_region[r] = target
        self.inserts.setdefault((id(target), id(anchor)), []).extend(ops)

    def _as_value(self, x: Value | int, use_op: Op) -> Value:
        """Integer constants become one hoisted `arith.constant` each, shared by every use."""
        if isinstance(x, Value):
            return x
        top = self._ancestors(self.region_of_op[id(use_op)])[-1]
        key = (id(top), int(x))
        if key not in self.emitted:
            out = Value(I64)
            const = Op("arith.constant", [], [out], {"value": int(x)}, [], use_op.loc)
            self._place([const], top, use_op)
            self.shared_consts.add(id(const))
            self.emitted[key] = out
        return self.emitted[key]

    # ------------------------------------------------------------------ affine analysis

    def aff(self, v: Value) -> Aff | None:
        if v in self._aff:
            return self._aff[v]
        self._aff[v] = None  # cycle guard
        r = self._aff_of(v)
        self._aff[v] = r
        return r

    def _aff_of(self, v: Value) -> Aff | None:
        if not v.type.is_tile or v.type.elem not in ("i32", "i64", "i16", "i8"):
            return None
        shape = v.type.shape
        op = self.defs.get(v)
        if op is None:
            return None
        n = op.name
        zeros = tuple(ZERO for _ in shape)
        if n == "tt.make_range":
            return Aff(SExpr.of(op.attrs["start"]), _norm((ONE,), shape))
        if n == "tt.splat":
            return Aff(self.sexpr(op.operands[0]), zeros)
        if n == "arith.constant":
            vals = op.attrs.get("values", [])
            return Aff(SExpr.of(int(vals[0])), zeros) if len(vals) == 1 else None
        if n in ("arith.addi", "arith.subi", "arith.muli"):
            a, b = self.aff(op.operands[0]), self.aff(op.operands[1])
            if a is None or b is None:
                return None
            if n == "arith.addi":
                return Aff(a.base + b.base, tuple(x + y for x, y in zip(a.strides, b.strides)))
            if n == "arith.subi":
                return Aff(a.base - b.base, tuple(x - y for x, y in zip(a.strides, b.strides)))
            if all(s.is_const and s.const == 0 for s in b.strides):
                return Aff(a.base * b.base, tuple(s * b.base for s in a.strides))
            if all(s.is_const and s.const == 0 for s in a.strides):
                return Aff(a.base * b.base, tuple(s * a.base for s in b.strides))
            return None
        if n in ("arith.extsi", "arith.index_cast", "arith.trunci", "arith.extui"):
            return self.aff(op.operands[0])
        if n == "arith.remsi":
            return self._block_rem(op, shape)
        return self._layout(op, self.aff(op.operands[0]) if op.operands else None, shape)

    def _block_rem(self, op: Op, shape: tuple) -> Aff | None:
        """`x % c` of an affine tile x = base + offsets whose block never crosses a multiple of
        c: every term of base a multiple of g, the offsets in [0, g), g a divisor of c, base
        not negative. Then x % c = (base % c) + offsets, one scalar remainder per program.
        Inductor's GEMM templates index A's rows and B's columns as `(pid_m * BLOCK_M +
        arange(BLOCK_M)) % M` (a wrap instead of a mask); where BLOCK_M divides M the rows are
        one contiguous run, not a gather."""
        a = self.aff(op.operands[0])
        c = self._const_tile(op.operands[1])
        if a is None or c is None or c <= 0 or not all(s.is_const and s.const >= 0 for s in a.strides):
            return None
        span = sum((d - 1) * s.const for s, d in zip(a.strides, shape))
        g = math.gcd(a.base.const, *(k for _, k in a.base.terms))
        if g == 0:  # a constant zero base: no wrap below c
            return a if span < c else None
        if span >= g or c % g or not self._nonneg(a.base):
            return None
        if a.base.is_const:
            return Aff(SExpr.of(a.base.const % c), a.strides)
        # emitted here, right before the remainder, with constants of its own: emit()'s shared
        # values may sit at a later use (this analysis runs when a later load asks for it)
        ops: list[Op] = []
        new = _builder(ops, op.loc)
        acc = _sum_terms(new, a.base.terms, None, lambda k: new("arith.constant", [], {"value": k}))
        if a.base.const:
            acc = new("arith.addi", [acc, new("arith.constant", [], {"value": a.base.const})])
        rem = new("arith.remsi", [acc, new("arith.constant", [], {"value": c})])
        self._place(ops, self.region_of_op[id(op)], op)
        return Aff(SExpr.of(rem), a.strides)

    def _const_tile(self, v: Value) -> int | None:
        """The integer every element of v holds, where v is a constant (splat) tile."""
        op = self.defs.get(v)
        if op is None:
            return None
        if op.name == "tt.splat":
            e = self.sexpr(op.operands[0])
            return e.const if e.is_const else None
        if op.name == "arith.constant":
            vals = op.attrs.get("values", [])
            return int(vals[0]) if len(vals) == 1 and isinstance(vals[0], (int, bool)) else None
        return None

    def _nonneg(self, e: SExpr) -> bool:
        return e.const >= 0 and all(k > 0 and all(self._nonneg_value(v) for v in m) for m, k in e.terms)

    def _assumed_nonneg(self) -> set:
        """Values the kernel assumes non-negative: `tl.assume(x >= 0)` (Inductor's GEMM
        templates assume it of their tile coordinates)."""
        if self._assumed is None:
            self._assumed = set()
            for o in walk(self.fn.body):
                c = self.defs.get(o.operands[0]) if o.name == "llvm.intr.assume" and o.operands else None
                if c is None or c.name != "arith.cmpi" or c.operands[0].type.is_tile:
                    continue
                bound = self.sexpr(c.operands[1])
                if bound.is_const and ((c.attrs.get("pred") == "sge" and bound.const >= 0)
                                       or (c.attrs.get("pred") == "sgt" and bound.const >= -1)):
                    self._assumed.add(c.operands[0])
        return self._assumed

    def _nonneg_value(self, v: Value, depth: int = 0) -> bool:
        """v >= 0 by construction: program ids and non-negative constants through add, mul,
        division and remainder (a remainder has its dividend's sign), min / max and select."""
        op = self.defs.get(v)
        if op is None or depth > 16:
            return False
        n = op.name
        if n == "tt.get_program_id" or v in self._assumed_nonneg():
            return True
        if n == "arith.constant":
            x = op.attrs.get("value")
            return isinstance(x, (int, bool)) and int(x) >= 0
        if n == "arith.remsi":
            return self._nonneg_value(op.operands[0], depth + 1)
        if n == "arith.select":
            return all(self._nonneg_value(o, depth + 1) for o in op.operands[1:])
        if n in ("arith.addi", "arith.muli", "arith.divsi", "arith.minsi", "arith.maxsi", "arith.extsi",
                 "arith.index_cast"):
            return all(self._nonneg_value(o, depth + 1) for o in op.operands)
        return False

    def _layout(self, op: Op, src: Aff | PtrInfo | None, shape: tuple):
        """Shape ops applied to an affine tile (or to the affine part of a pointer tile)."""
        if src is None:
            return None
        aff = src.aff if isinstance(src, PtrInfo) else src
        if aff is None:
            return None
        n = op.name
        if n == "tt.expand_dims":
            ax = op.attrs["axis"]
            st = list(aff.strides)
            st.insert(ax, ZERO)
            out = Aff(aff.base, tuple(st))
        elif n == "tt.broadcast":
            out = Aff(aff.base, _norm(aff.strides, op.operands[0].type.shape))
        elif n == "tt.trans":
            out = Aff(aff.base, tuple(aff.strides[i] for i in op.attrs["order"]))
        elif n == "tt.reshape":
            src_shape = op.operands[0].type.shape
            kept = [s for s, d in zip(aff.strides, src_shape) if d != 1]
            if [d for d in src_shape if d != 1] != [d for d in shape if d != 1]:
                return None
            it = iter(kept)
            out = Aff(aff.base, tuple(ZERO if d == 1 else next(it) for d in shape))
        else:
            return None
        out = Aff(out.base, _norm(out.strides, shape))
        if isinstance(src, PtrInfo):
            resid = src.resid
            if resid and n == "tt.expand_dims":
                resid = tuple((v, view[:op.attrs["axis"]] + (1,) + view[op.attrs["axis"]:]) for v, view in resid)
            elif resid and n != "tt.broadcast":
                return None
            return replace(src, aff=out, resid=resid)
        return out

    # ------------------------------------------------------------------ pointer analysis

    def scalar_ptr(self, v: Value) -> tuple[Value, SExpr]:
        op = self.defs.get(v)
        if op is not None and op.name == "tt.addptr" and not v.type.is_tile:
            base, off = self.scalar_ptr(op.operands[0])
            return base, off + self.sexpr(op.operands[1])
        return v, ZERO

    def ptr(self, v: Value) -> PtrInfo | None:
        if v in self._ptr:
            return self._ptr[v]
        self._ptr[v] = None
        r = self._ptr_of(v)
        self._ptr[v] = r
        return r

    def _ptr_of(self, v: Value) -> PtrInfo | None:
        if v in self.promoted:
            return self.promoted[v]
        if not v.type.is_tile:
            base, off = self.scalar_ptr(v)
            return PtrInfo(base, off, None)
        op = self.defs.get(v)
        if op is None:
            return None
        shape = v.type.shape
        if op.name == "tt.splat":
            base, off = self.scalar_ptr(op.operands[0])
            return PtrInfo(base, off, Aff(ZERO, tuple(ZERO for _ in shape)))
        if op.name == "tt.addptr":
            p = self.ptr(op.operands[0])
            if p is None or p.aff is None:
                return None
            off = op.operands[1]
            if off.type.elem not in ("i8", "i16", "i32", "i64"):
                return None
            a, rest = self._split_offset(off)
            if a is None:
                return replace(p, resid=p.resid + ((off, tuple(off.type.shape)),))
            p = replace(p, resid=p.resid + tuple((v, tuple(v.type.shape)) for v in rest))
            return replace(p, aff=Aff(p.aff.base + a.base, tuple(x + y for x, y in zip(p.aff.strides, a.strides))))
        if op.name in ("tt.expand_dims", "tt.broadcast", "tt.trans", "tt.reshape"):
            return self._layout(op, self.ptr(op.operands[0]), shape)
        return None

    def _split_offset(self, off: Value, depth: int = 0) -> tuple[Aff | None, list[Value]]:
        """An offset tile as its affine part plus the addends the analysis cannot structure, through
        a tree of `arith.addi` (Inductor writes `ptr + (x1 + 128*tmp4)`: one offset, a loaded row
        index plus a column range, which a gather reads as one run per row). (None, [off]) when
        no addend is affine."""
        a = self.aff(off)
        if a is not None:
            return a, []
        op = self.defs.get(off)
        if depth > 8 or op is None or op.name != "arith.addi":
            return None, [off]
        a0, r0 = self._split_offset(op.operands[0], depth + 1)
        a1, r1 = self._split_offset(op.operands[1], depth + 1)
        if a0 is None and a1 is None:
            return None, [off]
        zero = Aff(ZERO, tuple(ZERO for _ in off.type.shape))
        a0, a1 = a0 or zero, a1 or zero
        return Aff(a0.base + a1.base, tuple(x + y for x, y in zip(a0.strides, a1.strides))), r0 + r1

    # ------------------------------------------------------------------ loop-carried pointers

    def promote_loops(self) -> None:
        for op in list(walk(self.fn.body)):
            if op.name == "scf.for":
                self._promote_for(op)

    def _promote_for(self, loop: Op) -> None:
        body = loop.regions[0]
        yield_op = body.ops[-1]
        n_iter = len(loop.operands) - 3
        for j in range(n_iter):
            arg = body.args[1 + j]
            init = loop.operands[3 + j]
            nxt = yield_op.operands[j]
            t = arg.type
            if t.is_tile and t.is_ptr:
                info0 = self.ptr(init)
                if info0 is None or info0.aff is None or info0.resid:
                    continue
                d = self.defs.get(nxt)
                if d is None or d.name != "tt.addptr" or d.operands[0] is not arg:
                    continue
                inc = self.aff(d.operands[1])
                if inc is None or not all(s.is_const and s.const == 0 for s in inc.strides):
                    continue
                o = self._add_iter_arg(loop, lambda acc, e=inc.base: (acc, e))
                self.promoted[arg] = replace(info0, offset=info0.offset + SExpr.of(o[0]))
                self.promoted[loop.results[j]] = replace(info0, offset=info0.offset + SExpr.of(o[1]))

    def _add_iter_arg(self, loop: Op, step) -> tuple[Value, Value]:
        """Add an i64 iter arg starting at 0 and advanced by step(acc)[1] each iteration."""
        body = loop.regions[0]
        yield_op = body.ops[-1]
        arg, res = Value(I64), Value(I64)
        outer = self.region_of_op[id(loop)]
        loop.operands.append(self._as_value(0, loop))
        body.args.append(arg)
        loop.results.append(res)
        self.def_region[arg] = body
        self.defs[res] = loop
        self.def_region[res] = outer
        _, delta = step(arg)
        yield_op.operands.append(self._as_value(self.emit(SExpr.of(arg) + delta, yield_op), yield_op))
        return arg, res

    # ------------------------------------------------------------------ mask analysis

    def box(self, m: Value) -> Box | None:
        """Mask as a box of per-dim bounds, or None when it is not box-shaped."""
        op = self.defs.get(m)
        if op is None or not m.type.is_tile:
            return None
        rank = len(m.type.shape)
        if op.name == "arith.constant":
            vals = op.attrs.get("values", [])
            if vals == [True] or vals == [1]:
                return Box([[] for _ in range(rank)], [[] for _ in range(rank)])
            return None
        if op.name == "arith.andi":
            a, b = self.box(op.operands[0]), self.box(op.operands[1])
            if a is None or b is None:
                return None
            return Box([x + y for x, y in zip(a.lo, b.lo)], [x + y for x, y in zip(a.hi, b.hi)])
        if op.name == "tt.broadcast":
            return self.box(op.operands[0])
        if op.name == "tt.expand_dims":
            b = self.box(op.operands[0])
            if b is None:
                return None
            ax = op.attrs["axis"]
            b = Box(list(b.lo), list(b.hi))
            b.lo.insert(ax, [])
            b.hi.insert(ax, [])
            return b
        if op.name == "arith.cmpi":
            pred = op.attrs["pred"]
            a, b = self.aff(op.operands[0]), self.aff(op.operands[1])
            if a is None or b is None or pred not in ("slt", "sle", "sgt", "sge"):
                return None
            # normalise to  base + s * idx_k < 0
            d = Aff(a.base - b.base, tuple(x - y for x, y in zip(a.strides, b.strides)))
            if pred == "sle":
                d = Aff(d.base - ONE, d.strides)
            elif pred == "sgt":
                d = Aff(-d.base, tuple(-s for s in d.strides))
            elif pred == "sge":
                d = Aff(-d.base - ONE, tuple(-s for s in d.strides))
            dims = [k for k, s in enumerate(d.strides) if not (s.is_const and s.const == 0)]
            if len(dims) != 1:
                return None
            k = dims[0]
            s = d.strides[k]
            lo = [[] for _ in range(rank)]
            hi = [[] for _ in range(rank)]
            if s.is_const and s.const == 1:
                hi[k].append(-d.base)               # idx_k < -base
            elif s.is_const and s.const == -1:
                lo[k].append(d.base + ONE)          # idx_k > base
            else:
                return None
            return Box(lo, hi)
        return None

    # ------------------------------------------------------------------ program invariance

    def _region_of_op_is_top(self, op: Op) -> bool:
        return self.region_of_op.get(id(op)) is self.fn.body

    def uniform(self, v: Value) -> bool:
        """True when v is the same in every program: built from kernel arguments and constants
        only (no program id, loop variable or loaded data)."""
        if v in self._uniform:
            return self._uniform[v]
        self._uniform[v] = False  # cycle guard
        op = self.defs.get(v)
        if op is None:
            r = v in self.fn.args
        elif op.name in ("tt.get_program_id", "tt.load", "mtia.dma_load", "mtia.gather") or op.regions:
            r = False
        else:
            r = all(self.uniform(o) for o in op.operands)
        self._uniform[v] = r
        return r

    # ------------------------------------------------------------------ rewriting

    def _bound(self, exprs: list, kind: str, use: Op, ops: list) -> Value | int | None:
        if not exprs:
            return None
        vals = [self.emit(e, use) for e in exprs]
        acc = vals[0]
        for v in vals[1:]:
            out = Value(I64)
            a = self._as_value(acc, use)
            b = self._as_value(v, use)
            ops.append(Op("arith.maxsi" if kind == "lo" else "arith.minsi", [a, b], [out], {}, [], use.loc))
            acc = out
        return acc

    @staticmethod
    def _name(x) -> str | int | None:
        return x.name if isinstance(x, Value) else x

    def _other_operand(self, v: Value | None):
        if v is None:
            return None, []
        op = self.defs.get(v)
        if op is not None and op.name == "arith.constant" and len(op.attrs.get("values", [])) == 1:
            return op.attrs["values"][0], []
        return v.name, [v]

    def _descriptor(self, info_base: Value, offset: SExpr, strides: tuple, box: Box | None, use: Op,
                    pre: list) -> tuple[dict, list]:
        vals: list = [info_base]
        off = self.emit(offset, use)
        st = [self.emit(s, use) for s in strides]
        rank = len(strides)
        lo = [self._bound(box.lo[k], "lo", use, pre) for k in range(rank)] if box else [None] * rank
        hi = [self._bound(box.hi[k], "hi", use, pre) for k in range(rank)] if box else [None] * rank
        for x in [off, *st, *lo, *hi]:
            if isinstance(x, Value):
                vals.append(x)
        desc = {"base": info_base.name, "offset": self._name(off), "strides": [self._name(x) for x in st],
                "lo": [self._name(x) for x in lo], "hi": [self._name(x) for x in hi]}
        return desc, vals

    def _count(self, key: str) -> None:
        self.report[key] = self.report.get(key, 0) + 1

    def rewrite(self, op: Op) -> list[Op]:
        """Returns the ops that replace `op` (scalar prologue ops first)."""
        n = op.name
        if n not in ("tt.load", "tt.store"):
            return [op]
        ptr = op.operands[0]
        is_load = n == "tt.load"
        pre: list[Op] = []
        if ptr.type.elem == "blockptr":
            # Triton 3.8 rewrites block pointers into pointer tiles and masks before TTIR
            raise UnsupportedError(f"kernel '{self.fn.name}' at {op.loc}: block-pointer memory op survived "
                                   "Triton's rewrite; this form is not supported")
        structured = getattr(self.options, "structured_dma", True)
        info = self.ptr(ptr) if structured else None
        mask = op.operands[1 if is_load else 2] if len(op.operands) > (1 if is_load else 2) else None
        shape = list(ptr.type.shape or [])
        if info is not None and not info.resid and (info.aff is not None or not ptr.type.is_tile):
            strides = info.aff.strides if info.aff else ()
            offset = info.offset + (info.aff.base if info.aff else ZERO)
            box = self.box(mask) if mask is not None else None
            perm = self._permutation(op, strides, shape, mask, box, is_load)
            if perm is not None:
                return self._permuted(op, perm, info.base, offset, strides, shape, box, is_load, pre)
            step = self._dense_step(op, strides, shape, mask, box, is_load)
            if step is not None:
                return self._dense(op, step, info.base, offset, strides, shape, box, pre)
            desc, vals = self._descriptor(info.base, offset, strides, box, op, pre)
            if mask is not None and box is None:
                if not mask.type.is_tile:
                    desc["lo"] = [None] * len(shape)
                desc["mask"] = mask.name
                vals.append(mask)
            path = "dma" if mask is None or box is not None else "dma+mask"
            if is_load:
                self._fill(op, desc, vals)
                attrs = {"path": path, "desc": _fmt(desc), "_desc": desc}
                if self._region_of_op_is_top(op) and all(self.uniform(v) for v in vals):
                    # the same tile for every program (weights, biases): kept in local memory
                    # across the programs a PE runs, unless the launch writes that tensor
                    attrs["pe_resident"] = True
                new = Op("mtia.dma_load", vals, op.results, attrs, [], op.loc)
                self._count("dma_load")
            else:
                value = op.operands[1]
                desc["value"] = value.name
                vals.append(value)
                new = Op("mtia.dma_store", vals, [], {"path": path, "desc": _fmt(desc), "_desc": desc,
                                                      "shape": shape, "dtype": value.type.elem}, [], op.loc)
                self._count("dma_store")
            return pre + [new]
        if info is not None and info.resid and info.aff is not None:
            rep = self._repeat(op, info, shape, mask, pre) if is_load else None
            if rep is None and is_load:
                rep = self._table(op, info, shape, mask, pre)
            if rep is not None:
                return rep
            if getattr(self.options, "index_dma", True):
                return pre + [self._gather(op, info, is_load, mask, pre)]
        self._count("scalar_load" if is_load else "scalar_store")
        op.attrs["path"] = "scalar"
        return [op]

    def _permutation(self, op: Op, strides: tuple, shape: list, mask: Value | None, box: Box | None,
                     is_load: bool) -> list[int] | None:
        """The dim order that puts the box's contiguous dim (stride 1) last, when the tile's
        last dim is strided: Inductor's transpose loads a [Y, X] tile whose Y is contiguous in
        memory. The DMA then moves runs along that dim and the MLU permutes the tile in local
        memory, instead of one run per element. None when the box is already in memory order
        (or has no contiguous dim, or a mask or fill tile that would need permuting too)."""
        if not getattr(self.options, "transposed_dma", True) or len(shape) < 2:
            return None
        if not self._layout_change_ok(op, mask, box, is_load):
            return None
        dims = [k for k, n in enumerate(shape) if n > 1]
        if not dims or strides[dims[-1]] == ONE:
            return None
        unit = [k for k in dims if strides[k] == ONE]
        if len(unit) != 1:
            return None
        k = unit[0]
        return [d for d in range(len(shape)) if d != k] + [k]

    def _permuted(self, op: Op, perm: list[int], base: Value, offset: SExpr, strides: tuple, shape: list,
                  box: Box | None, is_load: bool, pre: list) -> list[Op]:
        """A structured DMA of the box in memory order (dims permuted by `perm`) and an MLU
        permute (tt.trans) between it and the tile the kernel names."""
        pstrides = tuple(strides[d] for d in perm)
        pbox = Box([box.lo[d] for d in perm], [box.hi[d] for d in perm]) if box is not None else None
        pshape = tuple(shape[d] for d in perm)
        desc, vals = self._descriptor(base, offset, pstrides, pbox, op, pre)
        self._count("transposed_dma")
        if is_load:
            res = op.results[0]
            self._fill(op, desc, vals)
            loaded = Value(Type(res.type.elem, pshape))
            self._count("dma_load")
            return pre + [Op("mtia.dma_load", vals, [loaded], {"path": "dma", "desc": _fmt(desc), "_desc": desc,
                                                                 "permuted": list(perm)}, [], op.loc),
                          Op("tt.trans", [loaded], [res], {"order": [perm.index(i) for i in range(len(perm))]},
                             [], op.loc)]
        value = op.operands[1]
        moved = Value(Type(value.type.elem, pshape))
        desc["value"] = moved.name
        self._count("dma_store")
        return pre + [Op("tt.trans", [value], [moved], {"order": list(perm)}, [], op.loc),
                      Op("mtia.dma_store", vals + [moved], [], {"path": "dma", "desc": _fmt(desc), "_desc": desc,
                                                                "shape": list(pshape), "dtype": value.type.elem,
                                                                "permuted": list(perm)}, [], op.loc)]

    def _layout_change_ok(self, op: Op, mask: Value | None, box: Box | None, is_load: bool) -> bool:
        """A memory op may be moved in another layout: a box (or no) mask, a scalar fill, not a
        tile loaded once per PE as it is (pe_resident)."""
        if mask is not None and box is None:
            return False
        if is_load and self._region_of_op_is_top(op) and self.uniform(op.operands[0]):
            return False
        if is_load and len(op.operands) > 2:
            _, ov = self._other_operand(op.operands[2])
            if ov and ov[0].type.is_tile:  # a fill tile other than a splat constant
                return False
        return True

    def _fill(self, op: Op, desc: dict, vals: list) -> None:
        """A load's `other` (a constant: its value; else its register) into its descriptor."""
        other, ov = self._other_operand(op.operands[2] if len(op.operands) > 2 else None)
        desc["other"] = other
        vals += ov

    def _dense_step(self, op: Op, strides: tuple, shape: list, mask: Value | None, box: Box | None,
                    is_load: bool) -> int | None:
        """The stride (2 or 4 elements) of a load's last dim when the dense span is the better
        read: Inductor's MX4 packing loads x[2i] and x[2i + 1] as two tiles; moved one element
        per run, each run pays a whole 32-byte burst. None otherwise."""
        if not is_load or not getattr(self.options, "dense_strided_dma", True) or not shape or shape[-1] < 2:
            return None
        last = strides[-1]
        if not (isinstance(last, SExpr) and last.is_const and last.const in (2, 4)):
            return None
        if math.prod(shape) < DENSE_MIN_ELEMENTS:
            return None  # a few runs cost less than the MLU splits' latency
        return last.const if self._layout_change_ok(op, mask, box, is_load) else None

    def _dense(self, op: Op, step: int, base: Value, offset: SExpr, strides: tuple, shape: list,
               box: Box | None, pre: list) -> list[Op]:
        """A structured DMA of the dense span under the tile's last dim (bounded at its last
        wanted element), then the MLU keeps every `step`-th element (reshape, split)."""
        n = shape[-1]
        lo = [list(x) for x in box.lo] if box is not None else [[] for _ in shape]
        hi = [list(x) for x in box.hi] if box is not None else [[] for _ in shape]
        # element i of the tile is element step * i of the span: i < h  <=>  step * i < step * (h - 1) + 1
        lo[-1] = [e * step for e in lo[-1]]
        hi[-1] = [e * step - (step - 1) for e in hi[-1]] + [SExpr.of(step * (n - 1) + 1)]
        dshape = tuple(shape[:-1]) + (n * step,)
        desc, vals = self._descriptor(base, offset, tuple(strides[:-1]) + (ONE,), Box(lo, hi), op, pre)
        res = op.results[0]
        self._fill(op, desc, vals)
        elem = res.type.elem
        cur = Value(Type(elem, dshape))
        ops = [Op("mtia.dma_load", vals, [cur], {"path": "dma", "desc": _fmt(desc), "_desc": desc,
                                                 "dense_step": step}, [], op.loc)]
        self._count("dma_load")
        width = n * step
        while width > n:  # halve the kept elements' stride: [.., w] -> [.., w / 2, 2] -> [.., w / 2]
            width //= 2
            pairs = Value(Type(elem, tuple(shape[:-1]) + (width, 2)))
            kept = res if width == n else Value(Type(elem, tuple(shape[:-1]) + (width,)))
            ops += [Op("tt.reshape", [cur], [pairs], {}, [], op.loc),
                    Op("tt.split", [pairs], [kept, Value(Type(elem, kept.type.shape))], {}, [], op.loc)]
            cur = kept
        return pre + ops

    # ------------------------------------------------------------------ repeated elements

    def _quotient(self, v: Value, depth: int = 0) -> tuple[Aff, int] | None:
        """(a, k) when the integer tile v is `a // k` for an affine tile a and a constant k >= 2,
        seen through the broadcasts, dim insertions and integer casts that follow the division."""
        op = self.defs.get(v)
        if op is None or depth > 8 or not v.type.is_tile:
            return None
        if op.name in ("arith.divsi", "arith.divui"):
            a, k = self.aff(op.operands[0]), self.aff(op.operands[1])
            if a is None or k is None or not k.base.is_const or any(not s.is_const or s.const for s in k.strides):
                return None
            return (a, k.base.const) if k.base.const >= 2 else None
        if op.name in ("arith.extsi", "arith.extui", "arith.index_cast", "arith.trunci"):
            return self._quotient(op.operands[0], depth + 1)
        if op.name in ("tt.broadcast", "tt.expand_dims"):
            q = self._quotient(op.operands[0], depth + 1)
            if q is None:
                return None
            a = self._layout(op, q[0], tuple(v.type.shape))
            return (a, q[1]) if a is not None else None
        return None

    def _repeat(self, op: Op, info: PtrInfo, shape: list, mask: Value | None, pre: list) -> list[Op] | None:
        """A load whose pointer is `base + affine(other dims) + (c + x) // k` with x the last dim's
        index (c a multiple of k): the k-times-smaller tile of distinct elements in one structured
        DMA, then the MLU repeats every element k times along the last dim (k - 1 joins of a tile
        with itself). A mask is reduced over each group of k (an element is read when any of its
        copies is wanted) and applied again, with the load's fill, after the repeat. None when the
        pointer is not of that form."""
        if not getattr(self.options, "repeat_dma", True) or len(info.resid) != 1 or not shape:
            return None
        q = self._quotient(info.resid[0][0])
        if q is None:
            return None
        a, k = q
        n = shape[-1]
        if k & (k - 1) or n % k or info.aff.strides[-1] != ZERO:
            return None
        if a.strides[-1] != ONE or any(s != ZERO for s in a.strides[:-1]):
            return None
        base = _exact_div(a.base, k)
        if base is None:
            return None
        cshape = tuple(shape[:-1]) + (n // k,)
        strides = tuple(info.aff.strides[:-1]) + (ONE,)
        offset = info.offset + info.aff.base + base
        box = self.box(mask) if mask is not None else None
        if box is not None and (box.lo[-1] or box.hi[-1]):
            box = None  # bounds along the repeated dim: reduce the mask tile instead
        res = op.results[0]
        elem = res.type.elem
        ops: list[Op] = []
        cmask = None
        if mask is not None and box is None:
            if not mask.type.is_tile:
                return None
            cmask = self._any_in_groups(mask, k, ops, op)
        desc, vals = self._descriptor(info.base, offset, strides, box, op, pre)
        if cmask is not None:
            desc["mask"] = cmask.name
            vals.append(cmask)
        self._fill(op, desc, vals)
        cur = Value(Type(elem, cshape))
        ops.append(Op("mtia.dma_load", vals, [cur], {"path": "dma+mask" if cmask is not None else "dma",
                                                     "desc": _fmt(desc), "_desc": desc, "repeat": k}, [], op.loc))
        self._count("dma_load")
        self._count("repeat_dma")
        select = cmask is not None and len(op.operands) > 2
        width = n // k
        while width < n:  # [.., w] -> join with itself [.., w, 2] -> [.., 2w]: every element twice
            pairs = Value(Type(elem, tuple(shape[:-1]) + (width, 2)))
            width *= 2
            out = res if width == n and not select else Value(Type(elem, tuple(shape[:-1]) + (width,)))
            ops += [Op("tt.join", [cur, cur], [pairs], {}, [], op.loc),
                    Op("tt.reshape", [pairs], [out], {}, [], op.loc)]
            cur = out
        if select:  # the copies the mask does not want get the load's fill
            ops.append(Op("arith.select", [mask, cur, op.operands[2]], [res], {}, [], op.loc))
        return pre + ops

    # ------------------------------------------------------------------ small tables

    def _local_bytes(self) -> int:
        from backend.configs import load_chip
        from backend.configs import DEFAULT_CHIP
        return int(load_chip(getattr(self.options, "arch", None) or DEFAULT_CHIP)["local_memory"]["bytes"])

    def _asserted(self) -> dict[Value, tuple[int, int]]:
        """[lo, hi) of the integer tiles a `tt.assert` bounds: Inductor checks every indirect
        index as `((lo <= t) & (t < hi)) | ~mask` before it addresses memory with it."""
        if self._bounds is not None:
            return self._bounds
        self._bounds = {}
        for op in walk(self.fn.body):
            if op.name != "tt.assert" or not op.operands:
                continue
            cond = self.defs.get(op.operands[0])
            if cond is not None and cond.name == "arith.ori":  # the bound | ~mask
                cond = next((self.defs.get(v) for v in cond.operands
                             if (d := self.defs.get(v)) is not None and d.name == "arith.andi"), None)
            if cond is None or cond.name != "arith.andi":
                continue
            lo = hi = None
            t = None
            for c in (self.defs.get(v) for v in cond.operands):
                if c is None or c.name != "arith.cmpi":
                    break
                a, b = c.operands
                k = self._const_tile(b)
                if k is None:
                    break
                if t is not None and a is not t:
                    break
                t = a
                pred = c.attrs.get("pred")
                if pred == "sge":
                    lo = k
                elif pred == "sgt":
                    lo = k + 1
                elif pred == "slt":
                    hi = k
                elif pred == "sle":
                    hi = k + 1
            if t is not None and lo is not None and hi is not None and hi > lo:
                self._bounds[t] = (lo, hi)
        return self._bounds

    def _range(self, v: Value, depth: int = 0) -> tuple[int, int] | None:
        """[lo, hi) of an integer tile from the asserts on the values it is computed from
        (sums, products with constants, casts, broadcasts); None when unbounded."""
        bound = self._asserted().get(v)
        if bound is not None:
            return bound
        op = self.defs.get(v)
        if op is None or depth > 12:
            return None
        k = self._const_tile(v)
        if k is not None:
            return k, k + 1
        if op.name in ("arith.extsi", "arith.index_cast", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans"):
            return self._range(op.operands[0], depth + 1)
        if op.name in ("arith.addi", "arith.subi", "arith.muli"):
            a, b = (self._range(o, depth + 1) for o in op.operands)
            if a is None or b is None:
                return None
            if op.name == "arith.addi":
                return a[0] + b[0], a[1] + b[1] - 1
            if op.name == "arith.subi":
                return a[0] - (b[1] - 1), a[1] - b[0]
            corners = [x * y for x in (a[0], a[1] - 1) for y in (b[0], b[1] - 1)]
            return min(corners), max(corners) + 1
        return None

    def _table(self, op: Op, info: PtrInfo, shape: list, mask: Value | None, pre: list) -> list[Op] | None:
        """A load `base + affine(outer dims) + r` whose index r is bounded by Inductor's asserts to
        [lo, lo + K) with the whole span small (a 4-entry table-offset lookup, a row's 729 pair
        products): the span moves in one structured DMA per row of the table (K elements, rows
        only along the dims the affine part moves) and the MLU gathers from it in local memory,
        instead of an index-driven DMA that pays a run per element. Masked-off elements index
        the span's first element and take the load's fill. None when the pointer is not of that
        form, the span is unbounded, reading it densely moves more than TABLE_REREAD times the
        tile's elements, or the tile is smaller than DENSE_MIN_ELEMENTS (the 128 positions a
        program of the 26-table DLRM bucketize holds: 5% slower resident with the table)."""
        if not getattr(self.options, "table_dma", True) or not shape or not op.results:
            return None
        if math.prod(shape) < DENSE_MIN_ELEMENTS:
            return None  # a few index-driven runs cost less than the MLU gather's issue and latency
        rank = len(shape)
        strides = _norm(info.aff.strides, shape)
        if strides[-1] != ZERO:
            return None
        if len({v.type.elem for v, _ in info.resid}) != 1:
            return None
        lo = hi = 0
        for v, view in info.resid:
            vshape = tuple(v.type.shape or ())
            if tuple(view) != vshape or len(vshape) != rank or any(a not in (1, b) for a, b in zip(vshape, shape)):
                return None
            r = self._range(v)
            if r is None:
                return None
            lo, hi = lo + r[0], hi + r[1] - 1
        hi += 1
        span = hi - lo
        tshape = tuple(n if st != ZERO else 1 for n, st in zip(shape[:-1], strides[:-1])) + (span,)
        if span > TABLE_MAX or math.prod(tshape) > TABLE_REREAD * math.prod(shape):
            return None
        # the tiles it adds (the span at the tile's rows, the index and its masked copy) take at
        # most half of local memory: the kernel's own tiles must still fit beside them
        itype = info.resid[0][0].type.elem
        added = (Type(op.results[0].type.elem, tuple(shape[:-1]) + (span,)).nbytes
                 + 2 * Type(itype, tuple(shape)).nbytes)
        if added > self._local_bytes() // 2:
            return None
        box = self.box(mask) if mask is not None else None
        if mask is not None and box is None and any(st != ZERO for st in strides[:-1]):
            return None  # rows of the table outside the tensor could only be told by the mask tile
        if box is not None:  # the rows the table needs: the mask's bounds along the dims it keeps
            box = Box([list(b) if n > 1 else [] for b, n in zip(box.lo[:-1], tshape[:-1])] + [[]],
                      [list(b) if n > 1 else [] for b, n in zip(box.hi[:-1], tshape[:-1])] + [[]])
            if not any(box.lo) and not any(box.hi):
                box = None
        offset = info.offset + info.aff.base + SExpr.of(lo)
        desc, vals = self._descriptor(info.base, offset, tuple(strides[:-1]) + (ONE,), box, op, pre)
        res = op.results[0]
        elem = res.type.elem
        ops: list[Op] = []
        table = Value(Type(elem, tshape))
        ops.append(Op("mtia.dma_load", vals, [table], {"path": "dma", "desc": _fmt(desc), "_desc": desc,
                                                       "table": span}, [], op.loc))
        self._count("dma_load")
        self._count("table_dma")
        full = tuple(shape[:-1]) + (span,)
        if tshape != full:
            wide = Value(Type(elem, full))
            ops.append(Op("tt.broadcast", [table], [wide], {}, [], op.loc))
            table = wide
        index = None
        for v, _ in info.resid:  # the index tile: the sum of the addends, at the tile's shape
            if tuple(v.type.shape) != tuple(shape):
                b = Value(Type(v.type.elem, tuple(shape)))
                ops.append(Op("tt.broadcast", [v], [b], {}, [], op.loc))
                v = b
            if index is not None:
                s_ = Value(Type(itype, tuple(shape)))
                ops.append(Op("arith.addi", [index, v], [s_], {}, [], op.loc))
                v = s_
            index = v
        zero = Value(Type(itype, tuple(shape)))
        ops.append(Op("arith.constant", [], [zero], {"values": [0]}, [], op.loc))
        if lo:
            base = Value(Type(itype, tuple(shape)))
            shifted = Value(Type(itype, tuple(shape)))
            ops += [Op("arith.constant", [], [base], {"values": [lo]}, [], op.loc),
                    Op("arith.subi", [index, base], [shifted], {}, [], op.loc)]
            index = shifted
        if mask is not None:  # masked-off elements may hold any index: read element 0 for them
            safe = Value(Type(itype, tuple(shape)))
            m = mask
            if not mask.type.is_tile:
                m = Value(Type("i1", tuple(shape)))
                ops.append(Op("tt.splat", [mask], [m], {}, [], op.loc))
            ops.append(Op("arith.select", [m, index, zero], [safe], {}, [], op.loc))
            index = safe
            mask = m
        select = mask is not None and len(op.operands) > 2
        out = Value(Type(elem, tuple(shape))) if select else res
        ops.append(Op("tt.gather", [table, index], [out], {"axis": rank - 1}, [], op.loc))
        if select:
            ops.append(Op("arith.select", [mask, out, op.operands[2]], [res], {}, [], op.loc))
        return pre + ops

    @staticmethod
    def _any_in_groups(t: Value, k: int, ops: list, at: Op) -> Value:
        """Mask t [.., n] -> [.., n / k]: the or of each run of k along the last dim (MLU splits)."""
        shape = tuple(t.type.shape)
        cur, width = t, shape[-1]
        while width > shape[-1] // k:
            width //= 2
            pairs = Value(Type(t.type.elem, shape[:-1] + (width, 2)))
            a, b = Value(Type(t.type.elem, shape[:-1] + (width,))), Value(Type(t.type.elem, shape[:-1] + (width,)))
            out = Value(Type(t.type.elem, shape[:-1] + (width,)))
            ops += [Op("tt.reshape", [cur], [pairs], {}, [], at.loc),
                    Op("tt.split", [pairs], [a, b], {}, [], at.loc),
                    Op("arith.ori", [a, b], [out], {}, [], at.loc)]
            cur = out
        return cur

    def _gather(self, op: Op, info: PtrInfo, is_load: bool, mask: Value | None, pre: list) -> Op:
        """Index-driven DMA: a strided descriptor plus the offset tiles computed on the PE."""
        shape = tuple(op.operands[0].type.shape)
        desc, vals = self._descriptor(info.base, info.offset + info.aff.base, info.aff.strides, None, op, pre)
        del desc["lo"], desc["hi"]
        desc["resid"] = [v.name for v, _ in info.resid]
        desc["views"] = [list(view) for _, view in info.resid]
        vals += [v for v, _ in info.resid]
        if mask is not None:
            desc["mask"] = mask.name
            vals.append(mask)
        last = info.aff.strides[-1] if info.aff.strides else ZERO
        contiguous = last.is_const and last.const == 1 and all(
            view[-1] == 1 or self._const_along_last(v) for v, view in info.resid)
        attrs = {"path": "gather", "run": shape[-1] if contiguous and shape else 1}
        if is_load:
            other, ov = self._other_operand(op.operands[2] if len(op.operands) > 2 else None)
            desc["other"] = other
            vals += ov
            attrs.update(desc=_fmt(desc), _desc=desc)
            self._count("gather")
            return Op("mtia.gather", vals, op.results, attrs, [], op.loc)
        value = op.operands[1]
        desc["value"] = value.name
        vals.append(value)
        attrs.update(desc=_fmt(desc), _desc=desc, dtype=value.type.elem, shape=list(shape))
        self._count("scatter")
        return Op("mtia.scatter", vals, [], attrs, [], op.loc)

    def _const_along_last(self, v: Value, depth: int = 0) -> bool:
        if depth > 12 or not v.type.is_tile:
            return not v.type.is_tile
        if v.type.shape[-1] == 1:
            return True
        op = self.defs.get(v)
        if op is None:
            return False
        if op.name in ("tt.splat",):
            return True
        if op.name == "tt.broadcast":
            return op.operands[0].type.shape[-1] == 1 or self._const_along_last(op.operands[0], depth + 1)
        if op.name.startswith("arith.") and op.operands and all(o.type.is_tile for o in op.operands):
            return all(self._const_along_last(o, depth + 1) for o in op.operands)
        return False

    def apply(self) -> None:
        self.promote_loops()
        self._rewrite_region(self.fn.body)
        self._splice(self.fn.body)
        # a shared constant is placed before the first op that asked for it, but the ops are not
        # rewritten in program order (a loop's carried offsets before an earlier load's address),
        # so a later request can come from an earlier op: each goes just before its first reader
        consts = {o.results[0]: o for o in self.fn.body.ops if id(o) in self.shared_consts}
        out: list[Op] = []
        for o in self.fn.body.ops:
            if id(o) in self.shared_consts:
                continue
            for v in [*o.operands, *(u for r in o.regions for i in walk(r) for u in i.operands)]:
                if v in consts:
                    out.append(consts.pop(v))
            out.append(o)
        self.fn.body.ops = out + list(consts.values())

    def _rewrite_region(self, region: Region) -> None:
        out: list[Op] = []
        for op in region.ops:
            for r in op.regions:
                self._rewrite_region(r)
            new_ops = self.rewrite(op)
            for o in new_ops:
                self.region_of_op[id(o)] = region
                for r in o.results:
                    self.defs[r] = o
            out.extend(new_ops)
            if new_ops and new_ops[-1] is not op:
                # the inserts recorded against the old op must move to its replacement
                key = (id(region), id(op))
                if key in self.inserts:
                    self.inserts.setdefault((id(region), id(new_ops[0])), [])[:0] = self.inserts.pop(key)
        region.ops = out

    def _splice(self, region: Region) -> None:
        out: list[Op] = []
        for op in region.ops:
            out.extend(self.inserts.pop((id(region), id(op)), []))
            out.append(op)
            for r in op.regions:
                self._splice(r)
        region.ops = out


def _exact_div(e: SExpr, k: int) -> SExpr | None:
    """e / k when every coefficient of e is a multiple of k (a program's first index, pid * BLOCK)."""
    if e.const % k or any(c % k for _, c in e.terms):
        return None
    return SExpr(tuple((m, c // k) for m, c in e.terms), e.const // k)


def _fmt(desc: dict) -> str:
    parts = [f"{k}={v}" for k, v in desc.items() if v is not None and v != [] and not
             (isinstance(v, list) and all(x is None for x in v))]
    return ", ".join(parts)


def run(fn: Function, options: object) -> dict:
    s = Structurer(fn, options)
    s.apply()
    dce.run(fn)
    # count what survived dead-code elimination
    counts: dict[str, int] = {}
    for op in walk(fn.body):
        if op.name in ("mtia.dma_load", "mtia.dma_store", "mtia.gather", "mtia.scatter", "tt.load", "tt.store"):
            key = {"mtia.dma_load": "dma_load", "mtia.dma_store": "dma_store", "mtia.gather": "gather",
                   "mtia.scatter": "scatter", "tt.load": "scalar_load", "tt.store": "scalar_store"}[op.name]
            counts[key] = counts.get(key, 0) + 1
        elif op.name.startswith("tt.atomic"):
            counts["atomic"] = counts.get("atomic", 0) + 1
    return counts


def _builder(ops: list, loc: Any) -> Callable[..., Value]:
    """new(name, operands, attrs): appends an i64 scalar op to `ops` and gives its result."""
    def new(name: str, operands: list, attrs: dict | None = None) -> Value:
        out = Value(I64)
        ops.append(Op(name, operands, [out], attrs or {}, [], loc))
        return out
    return new


def _sum_terms(new: Callable[..., Value], terms: tuple, acc: Value | None,
               constant: Callable[[int], Value]) -> Value | None:
    """acc plus the sum of `terms` (monomial, coefficient) as ops made by `new`; `constant`
    gives the value of a coefficient."""
    for mono, coeff in terms:
        t: Value = mono[0]
        for v in mono[1:]:
            t = new("arith.muli", [t, v])
        if coeff != 1:
            t = new("arith.muli", [t, constant(coeff)])
        acc = t if acc is None else new("arith.addi", [acc, t])
    return acc
