"""Global memory of a launch: the storage of every tensor argument, addressed by byte.

Pointers in the simulated kernel are integer byte addresses. Every access is checked against
the storage of the tensor it falls in; an access outside every argument is an error naming the
kernel, the source line and the offending element offsets, never a silent read.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import torch

from backend.program import ITEMSIZE, TORCH_DTYPE, Instr
from backend.sim.cost.inputs import (AtomicInputs, DmaInputs, atomic_inputs, dma_extent, dma_inputs, indexed_dma_inputs,
                                     scalar_access_inputs)
from backend.sim.isa import ExecState, SimulationError


@dataclass
class Region:
    start: int
    nbytes: int
    raw: torch.Tensor  # flat uint8 view of the storage
    name: str
    index: int

    def typed(self, dtype: str) -> torch.Tensor:
        size = ITEMSIZE[dtype]
        usable = self.nbytes - self.nbytes % size
        t = self.raw[:usable]
        if dtype == "i1":
            return t.view(torch.bool)
        return t.view(TORCH_DTYPE[dtype])


class OutOfBounds(SimulationError):
    pass


def _filled(shape, other, dtype: str) -> torch.Tensor:
    """A tile of `shape` holding `other` (a scalar or a tile) where masked-off elements go."""
    tdt = TORCH_DTYPE[dtype]
    if isinstance(other, torch.Tensor):
        return other.to(tdt).expand(shape).clone()
    return torch.full(shape, other if other is not None else 0, dtype=tdt)


def placeholder(st: ExecState, reg: str, shape: list[int], dtype: str) -> torch.Tensor:
    """Timing-only mode's stand-in for a tile result: register `reg` gets a zero tile of `shape`
    and `dtype` (its current tensor when that matches: no allocation)."""
    cur = st.r.get(reg)
    tdt = TORCH_DTYPE[dtype]
    if isinstance(cur, torch.Tensor) and cur.dtype == tdt and list(cur.shape) == list(shape):
        return cur
    # one zero tile per shape and dtype for the whole launch: no instruction writes into a
    # register's tensor in place, and in this mode tile contents are meaningless anyway
    zeros = st.memory.placeholders
    key = (tdt, tuple(shape))
    t = zeros.get(key)
    if t is None:
        t = zeros[key] = torch.zeros(shape, dtype=tdt)
    st.r[reg] = t
    return t


class GlobalMemory:
    """The tensors of one launch, plus cost bookkeeping per region (bytes read and written)."""

    def __init__(self, tensors: list[tuple[str, torch.Tensor]]):
        by_start: dict[int, Region] = {}
        for name, t in tensors:
            s = t.untyped_storage()
            start, nbytes = s.data_ptr(), s.nbytes()
            if start in by_start:
                continue
            raw = torch.empty(0, dtype=torch.uint8).set_(s, 0, (nbytes,))
            by_start[start] = Region(start, nbytes, raw, name, len(by_start))
        self.regions = sorted(by_start.values(), key=lambda r: r.start)
        self._starts = [r.start for r in self.regions]
        self._typed: dict[tuple[int, str], torch.Tensor] = {}
        self._bases: dict[tuple[int, str], tuple[Region, int]] = {}  # (address, dtype) -> lookup
        # timing mode's stand-in tiles, shared by the launch's programs (placeholder below)
        self.placeholders: dict[tuple, torch.Tensor] = {}

    # ------------------------------------------------------------------ lookup

    def region_of(self, addr: int, st: ExecState, ins: Instr) -> Region:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            r = self.regions[i]
            if addr < r.start + max(r.nbytes, 1):
                return r
        raise OutOfBounds(st.kernel, ins.loc,
                          f"address {addr:#x} is outside the memory of every tensor argument")

    def typed(self, r: Region, dtype: str) -> torch.Tensor:
        key = (r.index, dtype)
        t = self._typed.get(key)
        if t is None:
            t = self._typed[key] = r.typed(dtype)
        return t

    def _element_index(self, r: Region, addr: int, dtype: str, st: ExecState, ins: Instr) -> int:
        off = addr - r.start
        size = ITEMSIZE[dtype]
        if off % size:
            raise SimulationError(st.kernel, ins.loc,
                                  f"misaligned {dtype} access: byte offset {off} into '{r.name}' "
                                  f"is not a multiple of {size}")
        return off // size

    def _check(self, idx: torch.Tensor, n: int, r: Region, base_idx: int, st: ExecState, ins: Instr) -> None:
        if idx.numel() == 0:
            return
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = idx[(idx < 0) | (idx >= n)]
            rel = (bad - base_idx)[:8].tolist()
            raise OutOfBounds(st.kernel, ins.loc,
                              f"out-of-bounds access to '{r.name}' ({n} elements): element offsets "
                              f"{rel} from the base pointer fall outside it; mask them or fix the index")

    # ------------------------------------------------------------------ structured DMA

    def _descriptor(self, st: ExecState, ins: Instr):
        plan = ins.__dict__.get("_dplan")
        if plan is None:
            plan = ins._dplan = _descriptor_plan(ins)
        dtype, shape, breg, bconst, oreg, oconst, stride_ops, bound_ops, full_box = plan
        r_ = st.r
        base = int(r_[breg]) if breg is not None else bconst
        key = (base, dtype)
        hit = self._bases.get(key)
        if hit is None:
            r = self.region_of(base, st, ins)
            hit = self._bases[key] = (r, self._element_index(r, base, dtype, st, ins))
        r, base_idx = hit
        idx0 = base_idx + (int(r_[oreg]) if oreg is not None else oconst)
        strides = [int(r_[x]) if x is not None else c for x, c in stride_ops]
        if full_box is not None:  # constant bounds: the same box every time (shared, never mutated)
            return r, dtype, shape, base_idx, idx0, strides, full_box
        box = []
        for n, lreg, lconst, hreg, hconst in bound_ops:
            lo = lconst if lreg is None else max(0, int(r_[lreg]))
            hi = hconst if hreg is None else min(n, int(r_[hreg]))
            box.append((lo, hi if hi > lo else lo))
        return r, dtype, shape, base_idx, idx0, strides, box

    def _index_tile(self, shape, idx0, strides) -> torch.Tensor:
        idx = torch.full(shape, idx0, dtype=torch.int64) if shape else torch.tensor(idx0)
        for d, (n, s) in enumerate(zip(shape, strides)):
            if s and n > 1:
                view = [1] * len(shape)
                view[d] = n
                idx = idx + torch.arange(n, dtype=torch.int64).mul_(s).view(view)
        return idx

    def _box_mask(self, shape, box) -> torch.Tensor | None:
        if all(lo == 0 and hi == n for (lo, hi), n in zip(box, shape)):
            return None
        m = torch.zeros(shape, dtype=torch.bool)
        m[tuple(slice(lo, hi) for lo, hi in box)] = True
        return m

    def dma_read(self, st: ExecState, ins: Instr) -> DmaInputs:
        r, dtype, shape, base_idx, idx0, strides, box = self._descriptor(st, ins)
        typed = self.typed(r, dtype)
        mask_reg = ins.args.get("mask")
        mask = st.v(mask_reg) if mask_reg is not None else None
        other = st.v(ins.args.get("other"))
        empty_box = any(hi <= lo for lo, hi in box)
        sub_shape = [hi - lo for lo, hi in box]
        start = idx0 + sum(lo * s for (lo, _), s in zip(box, strides))
        n_valid = 0
        if mask is None and not empty_box and all(s >= 0 for s in strides):
            last = start + sum((n - 1) * s for n, s in zip(sub_shape, strides))
            if start < 0 or last >= typed.numel():
                self._check(self._index_tile(sub_shape, start, strides), typed.numel(), r, base_idx, st, ins)
            block = typed.as_strided(sub_shape, strides, start)
            if sub_shape == list(shape):
                out = block.clone()
            else:
                out = _filled(shape, other, dtype)
                out[tuple(slice(lo, hi) for lo, hi in box)] = block
            n_valid = block.numel()
        elif empty_box:
            out = _filled(shape, other, dtype)
        else:
            idx = self._index_tile(shape, idx0, strides)
            valid = self._box_mask(shape, box)
            if mask is not None:
                m = mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))
                valid = m.expand(shape) if valid is None else (valid & m)
            out = _filled(shape, other, dtype)
            if valid is None:
                self._check(idx, typed.numel(), r, base_idx, st, ins)
                out = typed[idx]
            else:
                sel = idx[valid]
                self._check(sel, typed.numel(), r, base_idx, st, ins)
                out[valid] = typed[sel]
            n_valid = int(valid.sum()) if valid is not None else idx.numel()
        st.r[ins.dst[0]] = out if shape else out.item()
        return self._dma_cost(r, dtype, n_valid, strides, start, sub_shape)

    def dma_write(self, st: ExecState, ins: Instr) -> DmaInputs:
        r, dtype, shape, base_idx, idx0, strides, box = self._descriptor(st, ins)
        typed = self.typed(r, dtype)
        value = st.v(ins.args["value"])
        tdt = TORCH_DTYPE[dtype]
        if not isinstance(value, torch.Tensor):
            value = torch.tensor(value, dtype=tdt)
        elif value.dtype != tdt:
            value = value.to(tdt)
        if shape and value.shape != tuple(shape):
            value = value.expand(shape)
        mask_reg = ins.args.get("mask")
        mask = st.v(mask_reg) if mask_reg is not None else None
        sub_shape = [hi - lo for lo, hi in box]
        start = idx0 + sum(lo * s for (lo, _), s in zip(box, strides))
        n_valid = 0
        if any(hi <= lo for lo, hi in box):
            pass
        elif mask is None and all(s > 0 for s in strides) and _non_overlapping(sub_shape, strides):
            last = start + sum((n - 1) * s for n, s in zip(sub_shape, strides))
            if start < 0 or last >= typed.numel():
                self._check(self._index_tile(sub_shape, start, strides), typed.numel(), r, base_idx, st, ins)
            block = typed.as_strided(sub_shape, strides, start)
            full = sub_shape == shape  # the whole tile: no slicing of the value
            block.copy_(value if full or not shape else value[tuple(slice(lo, hi) for lo, hi in box)])
            n_valid = block.numel()
        else:
            idx = self._index_tile(shape, idx0, strides)
            valid = self._box_mask(shape, box)
            if mask is not None:
                m = mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))
                valid = m.expand(shape) if valid is None else (valid & m)
            if valid is None:
                sel, vals = idx.reshape(-1), value.reshape(-1)
            else:
                sel, vals = idx[valid], value[valid]
            self._check(sel, typed.numel(), r, base_idx, st, ins)
            typed[sel] = vals  # duplicates: the last element in order wins, as one DMA would write
            n_valid = sel.numel()
        return self._dma_cost(r, dtype, n_valid, strides, start, sub_shape)

    @staticmethod
    def _dma_cost(r: Region, dtype: str, n: int, strides, start: int, sub_shape) -> DmaInputs:
        """The cost inputs of a structured DMA of `n` elements of the box `sub_shape` at
        `strides`, its first element `start` elements into region `r`."""
        size = ITEMSIZE[dtype]
        return dma_inputs(dma_extent(size, n, strides, sub_shape), r.index, r.start + start * size)

    # ------------------------------------------------------------------ index-driven DMA

    def _indexed(self, st: ExecState, ins: Instr):
        """Element indices of an index-driven DMA: a strided descriptor plus offset tiles
        computed on the PE (broadcast to the tile shape)."""
        a = ins.args
        dtype, shape = ins.attrs["dtype"], ins.attrs["shape"]
        base = int(st.v(a["base"]))
        r = self.region_of(base, st, ins)
        base_idx = self._element_index(r, base, dtype, st, ins)
        idx = self._index_tile(shape, base_idx + int(st.v(a["offset"])), [int(st.v(x)) for x in a["strides"]])
        for reg, view in zip(a["resid"], ins.attrs["views"]):
            t = st.v(reg)
            t = t.to(torch.int64) if isinstance(t, torch.Tensor) else torch.tensor(int(t))
            idx = idx + t.reshape(view)
        idx = idx.expand(shape) if shape else idx
        mask = st.v(a.get("mask"))
        m = None
        if mask is not None:
            m = (mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))).expand(idx.shape)
        return r, dtype, base_idx, idx, m

    def gather(self, st: ExecState, ins: Instr) -> DmaInputs:
        r, dtype, base_idx, idx, m = self._indexed(st, ins)
        typed = self.typed(r, dtype)
        other = st.v(ins.args.get("other"))
        if m is None:
            self._check(idx, typed.numel(), r, base_idx, st, ins)
            out = typed[idx]
            n = idx.numel()
        else:
            out = _filled(idx.shape, other, dtype)
            sel = idx[m]
            self._check(sel, typed.numel(), r, base_idx, st, ins)
            out[m] = typed[sel]
            n = sel.numel()
        st.r[ins.dst[0]] = out if out.dim() else out.item()
        return indexed_dma_inputs(n, ITEMSIZE[dtype], ins.attrs.get("run", 1), r.index, m)

    def scatter(self, st: ExecState, ins: Instr) -> DmaInputs:
        r, dtype, base_idx, idx, m = self._indexed(st, ins)
        typed = self.typed(r, dtype)
        value = st.v(ins.args["value"])
        tdt = TORCH_DTYPE[dtype]
        value = (value.to(tdt) if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=tdt)).expand(idx.shape)
        mask = m
        if m is not None:
            idx, value = idx[m], value[m]
        idx, value = idx.reshape(-1), value.reshape(-1)
        self._check(idx, typed.numel(), r, base_idx, st, ins)
        typed[idx] = value
        return indexed_dma_inputs(idx.numel(), ITEMSIZE[dtype], ins.attrs.get("run", 1), r.index, mask)

    # ------------------------------------------------------------------ scalar fallback path

    def _resolve_addresses(self, addr: torch.Tensor, dtype: str, st: ExecState, ins: Instr):
        """Split a tile of byte addresses into (region, element index) groups."""
        flat = addr.reshape(-1)
        if flat.numel() == 0:
            return []
        size = ITEMSIZE[dtype]
        one = self._in_one_region(flat, dtype, st, ins)
        if one is not None:
            r, rel = one
            return [(r, torch.arange(flat.numel()), rel // size)]
        starts = torch.tensor(self._starts, dtype=torch.int64)
        which = torch.searchsorted(starts, flat, right=True) - 1
        groups = []
        for i in torch.unique(which).tolist():
            sel = torch.nonzero(which == i).reshape(-1)
            # below every tensor: report offsets (negative) from the lowest one
            reg = self.regions[max(i, 0)]
            rel = flat[sel] - reg.start
            bad = (rel < 0) | (rel + size > reg.nbytes)
            if bool(bad.any()):
                # checked before any element is written: a failing store leaves memory untouched.
                # A gap address is blamed on the nearer tensor (x[-3] is before x, not past its neighbour)
                first = int(flat[sel][bad][0])
                nxt = self.regions[i + 1] if 0 <= i < len(self.regions) - 1 else None
                if i >= 0 and nxt is not None and nxt.start - first < first - (reg.start + reg.nbytes):
                    reg = nxt
                rel = flat[sel] - reg.start
                bad = (rel < 0) | (rel + size > reg.nbytes)
                offs = torch.div(rel[bad], size, rounding_mode="floor")[:8].tolist()
                raise OutOfBounds(st.kernel, ins.loc,
                                  f"out-of-bounds {dtype} access to '{reg.name}' ({reg.nbytes // size} elements): "
                                  f"element offsets {offs} from its start fall outside it (first bad address "
                                  f"{int(flat[sel][bad][0]):#x}); mask them or fix the index")
            groups.append((reg, sel, rel // size))
        return groups

    def _in_one_region(self, flat: torch.Tensor, dtype: str, st: ExecState, ins: Instr):
        """(region, byte offsets into it) when every address of the non-empty `flat` lies inside
        one tensor (a misaligned one raises), else None."""
        lo = int(flat.min())
        size = ITEMSIZE[dtype]
        i = bisect.bisect_right(self._starts, lo) - 1
        r = self.regions[i] if i >= 0 else None
        if r is None or lo >= r.start + r.nbytes or int(flat.max()) + size > r.start + r.nbytes:
            return None
        rel = flat - r.start
        if bool((rel % size != 0).any()):
            raise SimulationError(st.kernel, ins.loc, f"misaligned {dtype} access into '{r.name}'")
        return r, rel

    def check_addresses(self, flat: torch.Tensor, dtype: str, st: ExecState, ins: Instr) -> None:
        """Raise what _resolve_addresses raises for these byte addresses (misaligned, out of
        bounds), without resolving them when they all fall inside one tensor."""
        if flat.numel() and self._in_one_region(flat, dtype, st, ins) is None:
            self._resolve_addresses(flat, dtype, st, ins)

    def load_addresses(self, st: ExecState, ins: Instr) -> DmaInputs:
        dtype = ins.attrs["dtype"]
        addr = st.v(ins.args["addr"])
        scalar = not isinstance(addr, torch.Tensor)
        addr_t = torch.tensor([int(addr)]) if scalar else addr
        mask = st.v(ins.args.get("mask"))
        other = st.v(ins.args.get("other"))
        out = _filled(addr_t.shape, other, dtype).reshape(-1)
        flat = addr_t.reshape(-1)
        keep = None
        if mask is not None:
            m = mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))
            keep = torch.nonzero(m.expand(addr_t.shape).reshape(-1)).reshape(-1)
            flat = flat[keep]
        n = 0
        for reg, sel, idx in self._resolve_addresses(flat, dtype, st, ins):
            pos = sel if keep is None else keep[sel]
            out[pos] = self.typed(reg, dtype)[idx]
            n += idx.numel()
        out = out.reshape(addr_t.shape)
        st.r[ins.dst[0]] = out.item() if scalar else out
        return scalar_access_inputs(n, ITEMSIZE[dtype])

    def store_addresses(self, st: ExecState, ins: Instr) -> DmaInputs:
        dtype = ins.attrs["dtype"]
        addr = st.v(ins.args["addr"])
        addr_t = torch.tensor([int(addr)]) if not isinstance(addr, torch.Tensor) else addr
        tdt = TORCH_DTYPE[dtype]
        value = st.v(ins.args["value"])
        value = (value.to(tdt) if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=tdt))
        value = value.expand(addr_t.shape).reshape(-1)
        flat = addr_t.reshape(-1)
        mask = st.v(ins.args.get("mask"))
        if mask is not None:
            m = (mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))).expand(addr_t.shape).reshape(-1)
            flat, value = flat[m], value[m]
        n = 0
        for reg, sel, idx in self._resolve_addresses(flat, dtype, st, ins):
            self.typed(reg, dtype)[idx] = value[sel]
            n += idx.numel()
        return scalar_access_inputs(n, ITEMSIZE[dtype])

    # ------------------------------------------------------------------ atomics

    def atomic(self, st: ExecState, ins: Instr) -> AtomicInputs:
        dtype, kind = ins.attrs["dtype"], ins.attrs["kind"]
        addr = st.v(ins.args["addr"])
        scalar = not isinstance(addr, torch.Tensor)
        addr_t = torch.tensor([int(addr)]) if scalar else addr
        shape = addr_t.shape
        tdt = TORCH_DTYPE[dtype]

        def tile(x):
            x = x.to(tdt) if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=tdt)
            return x.expand(shape).reshape(-1)

        value = tile(st.v(ins.args["value"]))
        cmp = tile(st.v(ins.args["cmp"])) if kind == "cas" else None
        mask = st.v(ins.args.get("mask"))
        m = torch.ones(shape, dtype=torch.bool).reshape(-1) if mask is None else \
            (mask if isinstance(mask, torch.Tensor) else torch.tensor(bool(mask))).expand(shape).reshape(-1)
        flat = addr_t.reshape(-1)
        old = torch.zeros(flat.shape, dtype=tdt)
        active = torch.nonzero(m).reshape(-1)
        groups = self._resolve_addresses(flat[active], dtype, st, ins)
        # element by element, in order: repeated addresses within one tile see each other's updates
        for reg, sel, idx in groups:
            mem = self.typed(reg, dtype)
            for j, e in zip(sel.tolist(), idx.tolist()):
                i = int(active[j])
                cur = mem[e].clone()
                old[i] = cur
                v = value[i]
                if kind == "cas":  # compares bits, as the hardware does (-0.0 is not 0.0, NaN is NaN)
                    new = v if _same_bits(cur, cmp[i]) else cur
                elif kind in ("add", "fadd"):
                    new = cur + v
                elif kind in ("max", "umax"):
                    new = torch.maximum(cur, v) if kind == "max" else _umax(cur, v)
                elif kind in ("min", "umin"):
                    new = torch.minimum(cur, v) if kind == "min" else _umin(cur, v)
                elif kind == "and":
                    new = cur & v
                elif kind == "or":
                    new = cur | v
                elif kind == "xor":
                    new = cur ^ v
                elif kind == "exch":
                    new = v
                else:
                    raise SimulationError(st.kernel, ins.loc, f"atomic '{kind}' is not supported")
                mem[e] = new
        res = old.reshape(shape)
        if ins.dst:
            st.r[ins.dst[0]] = res.item() if scalar else res
        return atomic_inputs(int(active.numel()), ITEMSIZE[dtype])


_BITS_OF = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if not a.dtype.is_floating_point:
        return bool(a == b)
    ib = _BITS_OF[a.element_size()]
    return bool(a.reshape(1).view(ib) == b.reshape(1).view(ib))


def _umax(a, b):
    bits = a.element_size() * 8
    ua, ub = int(a) & ((1 << bits) - 1), int(b) & ((1 << bits) - 1)
    return a if ua >= ub else b


def _umin(a, b):
    bits = a.element_size() * 8
    ua, ub = int(a) & ((1 << bits) - 1), int(b) & ((1 << bits) - 1)
    return a if ua <= ub else b


def _descriptor_plan(ins: Instr) -> tuple:
    """What does not change between executions of a structured DMA instruction: its dtype and
    shape, which operands are registers, and the immediates already converted (the clamping
    of the box bounds to the tile is the one of GlobalMemory._descriptor before this cache)."""
    a, attrs = ins.args, ins.attrs
    shape = attrs["shape"]

    def op(x):
        return (x, None) if isinstance(x, str) else (None, int(x))

    breg, bconst = op(a["base"])
    oreg, oconst = op(a["offset"])
    strides = tuple(op(x) for x in a["strides"])
    los, his = a.get("lo"), a.get("hi")
    bounds = []
    for d, n in enumerate(shape):
        lo = los[d] if los else None
        hi = his[d] if his else None
        lreg, lconst = (None, 0) if lo is None else op(lo)
        hreg, hconst = (None, n) if hi is None else op(hi)
        if lreg is None:
            lconst = max(0, lconst)
        if hreg is None:
            hconst = min(n, hconst)
        bounds.append((n, lreg, lconst, hreg, hconst))
    full = None
    if all(lreg is None and hreg is None for _, lreg, _, hreg, _ in bounds):
        full = [(lc, hc if hc > lc else lc) for _, _, lc, _, hc in bounds]
    return attrs["dtype"], shape, breg, bconst, oreg, oconst, strides, tuple(bounds), full


def _non_overlapping(shape, strides) -> bool:
    """True when distinct indices of the box map to distinct addresses (copy_ is then exact)."""
    dims = sorted((s, n) for s, n in zip(strides, shape) if n > 1)
    span = 1
    for s, n in dims:
        if s < span:
            return False
        span = s * n
    return True
