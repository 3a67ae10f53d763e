"""`segment_reductions`: index_add, accumulating index_put and scatter_reduce whose index is a
segment id, as one segment reduction per call.

Jagged code writes a segment's id per row as `searchsorted(boundaries, arange(n), right=...)`
and then pools rows into their segment with index_add / scatter_reduce (the T3 jagged block:
segment max, then sums). Inductor sees a scatter with an arbitrary index: a 16-bit index_add
or a scatter_reduce max goes to aten on the host, an FP32 index_add becomes atomic adds, and
host_ops.py's forms (FP32 atomics for 16-bit sources, a dense masked reduction for
scatter_reduce) cost far more than the host call on large sources. The index's own graph says
more: with sorted boundaries, the rows of segment b are consecutive,
[b ? boundaries[b-1] : 0, boundaries[b]) for right=True (both ends + 1 for right=False), clipped
to [0, n). A post-grad rule (splice.py) recognises that index and replaces the scatter by the
Triton kernel of segment_kernels.py: one program per (segment, column block), reading its rows
BLOCK_R at a time in order, reducing in FP32 (no atomics, deterministic), then the combination
with `self` as pointwise code (add; max / min, NaN propagating; mean over self and the count).

Taken: dim 0, a 1-D index that is searchsorted(b, iota(n, start 0, step 1)) of 1-D boundaries
with no sorter, as many segments as `self` has rows, floating point. index_add (alpha),
index_put with accumulate=True and that one index, scatter_reduce sum / amax / amin / mean
(include_self either way) of 1-D src. Where aten raises (a row past the last boundary names a
segment `self` lacks) or searchsorted's contract fails (boundaries not sorted), the call fails
with a device assertion instead of dropping rows. Numerics: a 16-bit index_add is summed in FP32
and rounded once where eager rounds after every add (eager's is the farther from the exact sum);
FP32 sums add BLOCK_R rows at a time, not one by one.
"""
from __future__ import annotations

import math
from typing import Any

import torch
import triton

from backend.inductor_cpu import segment_kernels as K
from backend.inductor_cpu.splice import launch, val

SWITCH = "segment_reductions"
_REDUCE = {"sum": K.SUM, "amax": K.MAX, "amin": K.MIN, "mean": K.SUM}
_FLOATS = (torch.float32, torch.bfloat16, torch.float16)


def _segments_of(index: Any) -> tuple[torch.fx.Node, bool] | None:
    """(the boundaries node, right) where `index` is searchsorted(boundaries, arange(n))."""
    aten, prims = torch.ops.aten, torch.ops.prims
    if not isinstance(index, torch.fx.Node) or index.target is not aten.searchsorted.Tensor:
        return None
    bnd, rows = index.args[:2]
    kw = index.kwargs
    if kw.get("sorter") is not None or not isinstance(rows, torch.fx.Node) or rows.target is not prims.iota.default:
        return None
    if rows.kwargs.get("start", 0) != 0 or rows.kwargs.get("step", 1) != 1:
        return None
    b = val(bnd)
    if not isinstance(b, torch.Tensor) or b.dim() != 1 or b.numel() == 0 or b.is_floating_point():
        return None
    right = bool(kw.get("right", False)) or kw.get("side") == "right"
    return bnd, right


def _bounds(bnd: torch.Tensor, n: int, right: bool, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(lo, hi) row range of each segment, int32, with the device assertion of the contract."""
    ends = bnd.to(torch.int64) + (0 if right else 1)
    torch._assert_async((ends[1:] >= ends[:-1]).all() & (ends[-1] >= n),
                         f"{what}: segment boundaries not sorted, or a row past the last one (index out of range)")
    hi = ends.clamp(0, n)
    lo = torch.cat([hi.new_zeros(1), hi[:-1]])
    return lo.to(torch.int32), hi.to(torch.int32)


def segment_reduce(src: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, reduce: str) -> torch.Tensor:
    """(segments, *src.shape[1:]) FP32: `reduce` over rows [lo[b], hi[b]) of src."""
    n, segs = src.shape[0], lo.shape[0]
    d = math.prod(src.shape[1:])
    flat = src.reshape(n, d)
    block_d = min(triton.next_power_of_2(d), 128)
    block_r = max(1, min(128, 8192 // block_d))
    out = torch.empty((segs, d), dtype=torch.float32, device=src.device)
    red = launch(K.segment_reduce_kernel, (segs, triton.cdiv(d, block_d), 1), {"out_ptr": out},
                  src_ptr=flat, lo_ptr=lo, hi_ptr=hi, D=d, s_r=flat.stride(0), s_d=flat.stride(1),
                  REDUCE=_REDUCE[reduce], BLOCK_R=block_r, BLOCK_D=block_d)[0]
    return red.reshape(segs, *src.shape[1:])


def _matched(self_n: Any, index: Any, src_n: Any) -> tuple[torch.fx.Node, bool] | None:
    """(boundaries node, right) where `index` is a segment id over as many segments as self has
    rows and self / src are floating point of one dtype, src one row per id."""
    seg = _segments_of(index)
    self, src = val(self_n), val(src_n)
    if seg is None or not (isinstance(self, torch.Tensor) and isinstance(src, torch.Tensor)):
        return None
    ok = (self.device.type == "cpu" and self.dtype in _FLOATS and src.dtype == self.dtype and self.dim() >= 1
          and self.shape[0] == val(seg[0]).numel() and src.shape[0] == val(index).shape[0]
          and tuple(src.shape[1:]) == tuple(self.shape[1:]))
    return seg if ok else None


def _segment_sum(self_n: Any, index: Any, src_n: Any, alpha: Any, what: str):
    """self + alpha * the segment sums of src, in FP32, rounded once to self's dtype."""
    seg = _matched(self_n, index, src_n)
    if seg is None:
        return None
    bnd_n, right = seg

    def fn(x, b, s):
        lo, hi = _bounds(b, s.shape[0], right, what)
        return (x.float() + alpha * segment_reduce(s, lo, hi, "sum")).to(x.dtype)
    return fn, [self_n, bnd_n, src_n]


def _index_add_rule(node: torch.fx.Node):
    """index_add(self, 0, seg, source, alpha=a) = self + a * segment sums of source."""
    self_n, dim, index, src_n = node.args[:4]
    alpha = node.kwargs.get("alpha", node.args[4] if len(node.args) > 4 else 1)
    self = val(self_n)
    if not isinstance(self, torch.Tensor) or dim % max(self.dim(), 1) != 0:
        return None
    return _segment_sum(self_n, index, src_n, alpha, "index_add")


def _index_put_rule(node: torch.fx.Node):
    """index_put(self, [seg], values, accumulate=True) = self + segment sums of values."""
    self_n, indices, vals_n = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    if not accumulate or len(indices) != 1:
        return None
    return _segment_sum(self_n, indices[0], vals_n, 1, "index_put")


def _scatter_reduce_rule(node: torch.fx.Node):
    """scatter_reduce(self, 0, seg, src, reduce, include_self) of 1-D src: the segment's
    reduction combined with self (include_self), or taking self's place where the segment has
    rows (include_self=False)."""
    self_n, dim, index, src_n, reduce = node.args[:5]
    include_self = node.kwargs.get("include_self", node.args[5] if len(node.args) > 5 else True)
    self = val(self_n)
    if reduce not in _REDUCE or dim not in (0, -1) or not isinstance(self, torch.Tensor) or self.dim() != 1:
        return None
    seg = _matched(self_n, index, src_n)
    if seg is None:
        return None
    bnd_n, right = seg

    def fn(x, b, s):
        lo, hi = _bounds(b, s.shape[0], right, "scatter_reduce")
        red = segment_reduce(s, lo, hi, reduce)
        count = (hi - lo).to(torch.float32)
        xf = x.float()
        if reduce == "mean":
            out = (red + xf) / (count + 1) if include_self else red / count.clamp(min=1)
        elif not include_self:
            out = red
        elif reduce == "sum":
            out = red + xf
        else:
            out = torch.maximum(red, xf) if reduce == "amax" else torch.minimum(red, xf)
        if not include_self:
            out = torch.where(count > 0, out, xf)
        return out.to(x.dtype)
    return fn, [self_n, bnd_n, src_n]


def install() -> None:
    """Register the rules (idempotent); they act only while the switch is on."""
    from backend.inductor_cpu import splice
    aten = torch.ops.aten
    splice.register(splice.Rule(aten.index_add.default, None, SWITCH, _index_add_rule))
    splice.register(splice.Rule(aten.index_put.default, None, SWITCH, _index_put_rule))
    splice.register(splice.Rule(aten.scatter_reduce.two, None, SWITCH, _scatter_reduce_rule))


def uninstall() -> None:
    from backend.inductor_cpu import splice
    splice.unregister(SWITCH)
