"""`host_op_lowerings`: ops Inductor leaves to aten on the host, decomposed into Triton code.

Inductor has no lowering for histc, index_reduce (prod / amin / amax), segment_reduce,
_cdist_forward, _pdist_forward and addbmm: torch/_inductor/lowering.py registers them with
`make_fallback`, so on this path they run on the host. scatter_reduce prod / mean / amax /
amin and scatter with reduce='multiply' it lowers to ScatterFallback (aten on the host: it has
atomic adds only), a GEMM with an empty dimension its templates leave to aten's mm, and
convolutions and bilinear's aten._trilinear go to aten (extern_kernels.convolution). With the switch on, an entry of
Inductor's decomposition table (`torch._inductor.decomposition.decompositions`, applied while
AOTAutograd traces the graph, before lowering) rewrites each call on the cpu -> MTIA path into
ops that Inductor does lower to Triton (pointwise, reductions, bucketize, index_put with
accumulation, mm); anywhere else (another backend, the switch off, arguments the rewrite does
not take) it returns NotImplemented, or the decomposition Inductor had before, and the op is
left as it was.

How each op is rewritten, and what that costs against the aten kernel:

- `histc`: the bin of each element by aten's own linear formula, in the input's dtype
  ((x - lo) * bins / (hi - lo), truncated; x == hi goes to the last bin; outside [lo, hi] and
  NaN dropped), counted by index_put with accumulation (Triton atomic adds on the chip; counts
  in fp32, exact to 2^24 per bin, then cast, where aten counts in the input's dtype: bf16
  counts above 256 differ, aten's being the rounded ones). A range taken from the data
  (min == max) that is not finite fails with a device assertion, as aten raises.
- `index_reduce` prod / amin / amax (Inductor decomposes sum and mean itself, through
  scatter-add atomics; it has no atomic product or minimum): each output position reduces
  `where(index == position, source, identity)` over the whole index, a masked reduction with
  no atomics. The work is positions x index length per output row, quadratic where a scatter
  is linear, so only up to DENSE_LIMIT compares; larger calls stay on the host. An index out
  of range fails with a device assertion (aten raises).
- `segment_reduce` (lengths or offsets; sum, mean, max, min, prod; `initial`): each segment
  reduces the data masked to [start, end) of its segment, the same masked form and limit as
  index_reduce. Segment lengths that are negative or do not add up to the data's length fail
  with a device assertion (aten raises), unless `unsafe`.
- `_cdist_forward`: |x1_i - x2_j|^p summed over features, as a broadcast and reduction
  (p = 0, 1, 2, inf and general p). Where aten takes its matrix-product form for p = 2
  (compute_mode 1, or 0 with more than 25 rows on either side) the rewrite takes the same form
  (|a|^2 + |b|^2 - 2 a.b, one mm, clamped at 1e-30 before the root), with aten's rounding.
- `_pdist_forward`: the row pairs i < j of the upper triangle are computed from the output
  position (a square root and an exact integer correction), gathered, and reduced as in cdist.
- `scatter_reduce` prod / mean / amax / amin (include_self either way) and `scatter` with
  reduce='multiply' (tensor or scalar src): the masked form of index_reduce over the region
  the index covers, each target position along `dim` reducing the src elements whose index
  names it (mean: the sum over the count, self counted once with include_self), padded back
  into self where the index is smaller. Only up to SCATTER_DENSE_LIMIT (target positions x
  index elements: 64K), far below DENSE_LIMIT: the T3 jagged block's segment max (250K) runs
  10x slower in this form than the whole model's other kernels, so it stays on the host; an
  out-of-range index fails with a device assertion. An empty index returns a
  copy of self.
- `mm`, `addmm`, `bmm` with an empty dimension: K = 0 gives zeros (addmm: beta * self, self
  ignored for beta = 0), M or N = 0 an empty result; a pointwise kernel or none, where
  Inductor's GEMM templates leave the call to aten's mm on the host. Non-empty GEMMs are
  untouched.
- `convolution` (1-, 2-, 3-D; stride, padding, dilation, groups): patches
  (padding, then one unfold per spatial dim, every dilation-th tap) and one batched GEMM over
  the groups, compiled like any matmul, plus the bias. The GEMM reads the patches through a
  view: a tap's input is loaded once per output position it serves (k-fold, where a direct
  convolution kernel would reuse it from local memory). A transposed convolution becomes the
  direct one it equals (stride - 1 zeros inserted between input elements, padding
  dilation * (k - 1) - padding, cropped where negative, the weight flipped with its channels
  swapped per group): stride^nd of that GEMM's work is on the inserted zeros.
- `_trilinear` (nn.functional.bilinear): the three inputs unsqueezed at their expand dims,
  multiplied and summed, one reduction kernel where aten takes two matrix products; the
  broadcast product is never stored.
- `index_add` on bf16 / fp16 (sources up to INDEX_ADD_16_LIMIT elements): in FP32 and rounded
  once, where Inductor leaves 16-bit index_add to aten (its atomic adds are FP32 only).
- `_adaptive_avg_pool3d`: two 2-D adaptive average pools (over D with H*W kept, then over
  H, W), which Inductor lowers: a mean of means, where eager divides one sum.
- `avg_pool2d` with a window over 25 elements and a stride unlike it (Inductor's fallback case):
  window sums of the zero-padded input unfolded along H and W, over aten's divisor per output.
- `index_put` with one boolean mask and values that broadcast to each selected element
  (x[mask] = v, a scalar or a row): where(mask, v, x), with no data-dependent shape.
- `grid_sampler_3d` (trilinear or nearest; zeros, border, reflection padding): aten's coordinate
  rules and the 8 or 1 taps gathered from the flattened volume (Inductor decomposes only the 2-D
  sampler).
- `var_mean` over no elements (an empty reduced dimension): NaN for variance and mean, as eager
  gives, where Inductor's Welford reduction gives a mean of 0 (its C++ backend too).
- `_upsample_bilinear2d_aa` (antialiased bilinear resize, FP32): separable, as aten computes
  it: along each dimension whose size changes, a weight matrix (out x in; the triangle filter
  widened by the scale when downsampling, each row normalised to sum 1) built in-graph from
  aten's index and weight rules, and one matmul; a dimension of unchanged size is passed as is,
  as aten skips it (a scale given for it is then ignored). The matmuls run every input element
  of a row against every output (out x in MACs per row) where aten touches only the filter's
  support: cheap at image sizes on the DPE, quadratic in the row length.
- `nonzero_static` (a fixed output size): each nonzero element's place is its rank among the
  nonzeros (a cumsum, Inductor's Triton scan), its coordinates are unravelled from the flat
  position, and one scatter writes them; elements past `size` go to a spare row that is cut
  off, and unfilled rows keep `fill_value`. Up to NONZERO_LIMIT elements (the scan runs in one
  program).
- `addbmm`: one mm over the batch folded into the contraction ((n, b*k) @ (b*k, m)), then
  beta * self + alpha * product as pointwise code (self ignored for beta = 0, as aten does).
  The mm is Inductor's like any other (a GEMM template or the expert GEMM); not addmm, which
  runs on the host where only the expert GEMM is registered.
"""
from __future__ import annotations

import math
from typing import Any, Callable

# largest (positions x index length x row) compare count of the masked reductions
# (index_reduce, segment_reduce); beyond it the quadratic form costs more than the host call
DENSE_LIMIT = 1 << 22
# scatter_reduce's (target positions x index elements): the dense form of a segment max is a
# poor kernel on this chip (the T3 jagged block's, 64 x 3918 = 250k compares fused into one
# program, simulated 128k cycles, where the host call is a 0.2 us roofline estimate), so only
# small calls take it; a segment-aware lowering (sorted segments, as the jagged kernels) is what
# larger ones need
SCATTER_DENSE_LIMIT = 1 << 16
# nonzero_static's input elements: its rank is one scan over the flattened input, in one program
NONZERO_LIMIT = 1 << 14

_DECOMPS: dict[Any, Callable] = {}
_ORIGINAL: dict[Any, Callable | None] = {}


def _register(*ops: Any) -> Callable:
    def deco(fn: Callable) -> Callable:
        for op in ops:
            _DECOMPS[op] = fn
        return fn
    return deco


def _on_chip(args: tuple, kwargs: dict, switch: str) -> bool:
    import torch
    import torch._inductor.config as ic

    from backend.inductor_cpu import options
    if ic.cpu_backend != "triton" or not options.enabled(switch):
        return False
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    if not tensors:  # a factory op (tril_indices): the device it creates on
        return torch.device(kwargs.get("device") or "cpu").type == "cpu"
    return all(t.device.type == "cpu" for t in tensors)


def _wrap(fn: Callable, original: Callable | None, switch: str) -> Callable:
    def decomposition(*args: Any, **kwargs: Any) -> Any:
        if _on_chip(args, kwargs, switch):
            out = fn(*args, **kwargs)
            if out is not NotImplemented:
                return out
        return original(*args, **kwargs) if original is not None else NotImplemented
    decomposition.mtia_original = original  # type: ignore[attr-defined]
    decomposition.__name__ = f"mtia_{fn.__name__}"
    return decomposition


def _refresh_tables() -> None:
    """Inductor copies its decomposition table once (fast_random_decomps, cached): drop that
    copy so the next compile sees the entries as they are now."""
    from torch._inductor import decomposition as D
    D.fast_random_decomps.cache_clear()


def install_decompositions(decomps: dict[Any, Callable], originals: dict[Any, Callable | None], switch: str) -> None:
    """Add `decomps` to Inductor's decomposition table, each applied on the cpu -> MTIA path
    while `switch` is on (idempotent); `originals` keeps what they replaced."""
    from torch._inductor import decomposition as D
    for op, fn in decomps.items():
        current = D.decompositions.get(op)
        if current is not None and hasattr(current, "mtia_original"):
            continue
        originals[op] = current
        D.decompositions[op] = _wrap(fn, current, switch)
    _refresh_tables()


def uninstall_decompositions(originals: dict[Any, Callable | None]) -> None:
    from torch._inductor import decomposition as D
    for op, original in originals.items():
        if original is None:
            D.decompositions.pop(op, None)
        else:
            D.decompositions[op] = original
    originals.clear()
    _refresh_tables()


def install() -> None:
    """Add the rewrites to Inductor's decomposition table, and the embedding-bag rule to the
    one-output pass (splice.py) (idempotent)."""
    import torch

    from backend.inductor_cpu import splice
    install_decompositions(_DECOMPS, _ORIGINAL, "host_op_lowerings")
    aten = torch.ops.aten
    for op in (aten._embedding_bag.default, aten._embedding_bag_forward_only.default):
        splice.register(splice.Rule(op, 0, "host_op_lowerings", _embedding_bag_rule))
    import torch.nn.modules.linear_cross_entropy  # noqa: F401 - defines the torch_nn ops
    nn_ops = torch.ops.torch_nn
    splice.register(splice.Rule(nn_ops._linear_cross_entropy_batch_chunked.default, 0, "host_op_lowerings",
                                _linear_cross_entropy_rule))
    splice.register(splice.Rule(nn_ops._linear_cross_entropy_batch_chunked_no_reduction.default, None,
                                "host_op_lowerings", _linear_cross_entropy_rule))


def uninstall() -> None:
    from backend.inductor_cpu import splice
    uninstall_decompositions(_ORIGINAL)
    splice.unregister("host_op_lowerings")


def _aten() -> Any:
    import torch
    return torch.ops.aten


# ----------------------------------------------------------------------------- addbmm

def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    import torch
    b, n, k = batch1.shape
    m = batch2.shape[2]
    # sum_b A_b @ B_b is one product over the contraction (b, k): (n, b*k) @ (b*k, m)
    a = batch1.permute(1, 0, 2).reshape(n, b * k)
    prod = torch.mm(a, batch2.reshape(b * k, m))
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # aten ignores self then, NaN and inf included
        return prod
    return (self * beta if beta != 1 else self) + prod


# ----------------------------------------------------------------------------- cdist / pdist

def _p_norm(diff, p: float, dim: int = -1):
    """The p-norm of `diff` over `dim`, as aten's cdist / pdist define it (p = 0: the count of
    non-zero differences)."""
    if p == 0:
        return (diff != 0).to(diff.dtype).sum(dim)
    if p == 1:
        return diff.abs().sum(dim)
    if p == 2:
        return (diff * diff).sum(dim).sqrt()
    if math.isinf(p):
        return diff.abs().amax(dim)
    return diff.abs().pow(p).sum(dim).pow(1.0 / p)


def _cdist_forward(x1, x2, p, compute_mode=None):
    import torch
    if p < 0 or x1.shape[-1] != x2.shape[-1] or not x1.dtype.is_floating_point:
        return NotImplemented  # aten's own error
    r1, r2, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    if r1 == 0 or r2 == 0 or m == 0:
        return NotImplemented
    mode = 0 if compute_mode is None else compute_mode
    if p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        # aten's matrix-product form (its _euclidean_dist), with its cancellation
        n1 = (x1 * x1).sum(-1, keepdim=True)
        n2 = (x2 * x2).sum(-1, keepdim=True)
        a = torch.cat([-2 * x1, n1, torch.ones_like(n1)], -1)
        b = torch.cat([x2, torch.ones_like(n2), n2], -1)
        return torch.matmul(a, b.transpose(-1, -2)).clamp_min(1e-30).sqrt()
    return _p_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def _pdist_forward(x, p=2):
    import torch
    if x.dim() != 2 or p < 0 or not x.dtype.is_floating_point:
        return NotImplemented
    n = x.shape[0]
    if n < 2:
        return x.new_empty((0,))  # no pairs
    if n > 2048 or x.shape[1] == 0:
        # above 2048 rows (2n - 1)^2 is no longer exact in fp32 and the root's error can
        # exceed the one-step correction
        return NotImplemented
    total = n * (n - 1) // 2
    k = torch.arange(total, dtype=torch.int64, device=x.device)

    def start(i):  # output position of the pair (i, i + 1)
        return i * (2 * n - i - 1) // 2
    # row i of the pair at position k: the root of i^2 - (2n - 1) i + 2k = 0, then corrected
    # by one either way against the exact integer starts (the float root can be off by one)
    c = float(2 * n - 1)
    i = ((c - torch.sqrt((c * c - 8.0 * k.to(torch.float32)).clamp_min(0))) / 2).floor().to(torch.int64)
    i = i.clamp(0, n - 2)
    i = torch.where(k < start(i), i - 1, i)
    i = torch.where(k >= start(i + 1), i + 1, i)
    j = k - start(i) + i + 1
    return _p_norm(x[i] - x[j], p)


# ----------------------------------------------------------------------------- histc

def _histc(x, bins=100, min=0, max=0):  # noqa: A002 - aten's argument names
    import torch
    if not x.dtype.is_floating_point or bins <= 0:
        return NotImplemented
    lo, hi = float(min), float(max)
    flat = x.reshape(-1)
    dt = x.dtype
    if lo == hi and flat.numel() > 0:
        # the data's range (aten: aminmax), widened by one each way where it is a point
        lo_t, hi_t = flat.amin(), flat.amax()
        same = lo_t == hi_t
        lo_t = torch.where(same, lo_t - 1, lo_t)
        hi_t = torch.where(same, hi_t + 1, hi_t)
        torch._assert_async(torch.isfinite(lo_t) & torch.isfinite(hi_t), "torch.histc: range of the input is not finite")
    else:
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            return NotImplemented  # aten raises its own error
        lo_t = torch.full((), lo, dtype=dt, device=x.device)
        hi_t = torch.full((), hi, dtype=dt, device=x.device)
    # aten's formula in the input's dtype, one rounding per operation
    pos = (((flat - lo_t).to(dt) * bins).to(dt) / (hi_t - lo_t).to(dt)).to(dt)
    pos = pos.to(torch.int64)
    pos = torch.where(pos == bins, pos - 1, pos)
    valid = (flat >= lo_t) & (flat <= hi_t)
    pos = torch.where(valid, pos, 0).clamp(0, bins - 1)
    counts = torch.zeros(bins, dtype=torch.float32, device=x.device)
    counts = counts.index_put((pos,), valid.to(torch.float32), accumulate=True)
    return counts.to(dt)


# ----------------------------------------------------------------------------- masked reductions

_IDENTITY = {"prod": 1.0, "amax": -math.inf, "amin": math.inf, "max": -math.inf, "min": math.inf, "sum": 0.0,
             "mean": 0.0}


def _masked_reduce(vals, mask, reduction: str, dim: int):
    """`reduction` of `vals` where `mask` holds, over `dim` (the identity elsewhere)."""
    import torch
    v = torch.where(mask, vals, _IDENTITY[reduction])
    if reduction in ("sum", "mean"):
        return v.sum(dim)
    if reduction == "prod":
        return v.prod(dim)
    if reduction in ("amax", "max"):
        return v.amax(dim)
    return v.amin(dim)


def _combine(a, b, reduction: str):
    import torch
    if reduction in ("sum", "mean"):
        return a + b
    if reduction == "prod":
        return a * b
    if reduction in ("amax", "max"):
        return torch.maximum(a, b)
    return torch.minimum(a, b)


def _index_reduce(self, dim, index, source, reduce, *, include_self=True):
    import torch
    if reduce not in ("prod", "amax", "amin") or not self.dtype.is_floating_point or source.dim() != self.dim():
        return NotImplemented  # sum / mean: Inductor's own decomposition (scatter-add)
    if self.dim() == 0:  # a scalar is its one-element vector
        return _index_reduce(self.reshape(1), 0, index, source.reshape(1), reduce,
                             include_self=include_self).reshape(())
    dim = dim % self.dim()
    n, k = self.shape[dim], index.numel()
    rest = self.numel() // n if n else 0
    if k == 0 or n * k * rest > DENSE_LIMIT:
        return NotImplemented
    idx = index.reshape(-1).to(torch.int64)
    torch._assert_async(((idx >= 0) & (idx < n)).all(), "index_reduce: index out of range")
    return _reduce_into(self.movedim(dim, -1), source.movedim(dim, -1), idx, reduce, include_self).movedim(-1, dim)


def _reduce_into(s, x, idx, reduce: str, include_self: bool):
    """The masked form of a scatter with a reduction: each of the n positions of `s` (..., n)
    reduces the elements of `x` (..., k) whose index in `idx` (broadcast to x) names it, and
    combines them with its own value (include_self) or takes their reduction alone; positions
    no index names keep `s`. mean: the sum over the count, `s` counted once with include_self."""
    import torch
    n = s.shape[-1]
    pos = torch.arange(n, dtype=torch.int64, device=s.device).unsqueeze(-1)
    hit = idx.unsqueeze(-2) == pos                                # (..., n, k)
    count = hit.sum(-1)                                           # (..., n)
    red = _masked_reduce(x.unsqueeze(-2), hit, reduce, -1)        # (..., n)
    if reduce == "mean":
        total = red + s if include_self else red
        red = total / (count + 1 if include_self else count.clamp(min=1)).to(red.dtype)
    elif include_self:
        red = _combine(s, red, reduce)
    return torch.where(count > 0, red, s)


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    import torch
    if indices is not None or reduce not in ("sum", "mean", "max", "min", "prod") \
            or not data.dtype.is_floating_point:
        return NotImplemented
    axis = axis % data.dim()
    if lengths is not None:
        lengths = lengths.to(torch.int64)
        ends = lengths.cumsum(-1)
        starts = ends - lengths
    elif offsets is not None:
        offsets = offsets.to(torch.int64)
        starts, ends = offsets[..., :-1], offsets[..., 1:]
        lengths = ends - starts
    else:
        return NotImplemented
    if lengths.dim() != axis + 1:
        return NotImplemented
    n, s = data.shape[axis], lengths.shape[-1]
    if s == 0 or n * s * data.numel() // max(n, 1) > DENSE_LIMIT:
        return NotImplemented
    if not unsafe:
        ok = (lengths >= 0).all() & (lengths.sum(-1) == n).all()
        torch._assert_async(ok, "segment_reduce: segment lengths must be non-negative and add up to the data's size "
                                "along axis")
    trail = data.dim() - axis - 1
    pos = torch.arange(n, dtype=torch.int64, device=data.device)
    # (batch..., s, n) masks, then one trailing 1 per data dimension after axis
    mask = (starts.unsqueeze(-1) <= pos) & (pos < ends.unsqueeze(-1))
    mask = mask.reshape(*mask.shape, *([1] * trail))
    red = _masked_reduce(data.unsqueeze(axis), mask, reduce, axis + 1)   # (batch..., s, rest...)
    count = lengths.reshape(*lengths.shape, *([1] * trail)).to(data.dtype)
    if initial is not None:
        red = _combine(red, torch.full_like(red, initial), reduce)
    if reduce == "mean":
        red = torch.where(count > 0, red / count, math.nan if initial is None else float(initial))
    return red


# ----------------------------------------------------------------------------- scatter_reduce

def _scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce prod / mean / amax / amin (Inductor lowers sum itself, through atomic
    adds) as the masked form of index_reduce: each target position along `dim` reduces the
    src elements whose index names it, over the index's extent along `dim`."""
    import torch
    if reduce not in ("prod", "mean", "amax", "amin") or not self.dtype.is_floating_point \
            or not (self.dim() == index.dim() == src.dim()):
        return NotImplemented
    if index.numel() == 0:
        return self.clone()
    if self.dim() == 0:  # a scalar is its one-element vector
        return _scatter_reduce(self.reshape(1), 0, index.reshape(1), src.reshape(1), reduce,
                               include_self=include_self).reshape(())
    dim = dim % self.dim()
    n = self.shape[dim]
    if n * index.numel() > SCATTER_DENSE_LIMIT:
        return NotImplemented
    # the region the index covers: its own extent in every dim but `dim`, all of self's along it
    region = [slice(0, index.shape[j]) if j != dim else slice(None) for j in range(self.dim())]
    s = self[tuple(region)].movedim(dim, -1)                                  # (..., n)
    x = src[tuple(slice(0, m) for m in index.shape)].movedim(dim, -1)          # (..., k)
    idx = index.movedim(dim, -1).to(torch.int64)                               # (..., k)
    torch._assert_async(((idx >= 0) & (idx < n)).all(), "scatter_reduce: index out of range")
    out = _reduce_into(s, x, idx, reduce, include_self).movedim(-1, dim)
    if out.shape == self.shape:
        return out
    # back into self: padded out to self's shape, self wherever the index does not reach
    pad = []
    for j in reversed(range(self.dim())):
        pad += [0, self.shape[j] - out.shape[j]]
    inside = torch.ones(out.shape, dtype=torch.bool, device=self.device)
    return torch.where(torch.constant_pad_nd(inside, pad, False), torch.constant_pad_nd(out, pad, 0.0), self)


def _scatter_multiply(self, dim, index, src, *, reduce):
    """scatter(..., reduce='multiply') (a tensor or a scalar src): scatter_reduce's prod with self."""
    import torch
    if reduce != "multiply":
        return NotImplemented
    if not isinstance(src, torch.Tensor):
        src = torch.full(index.shape, src, dtype=self.dtype, device=self.device)
    return _scatter_reduce(self, dim, index, src, "prod", include_self=True)


# ----------------------------------------------------------------------------- _trilinear

def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """bilinear's core: the three inputs, each unsqueezed at its expand dims (positions in the
    result's rank), multiplied and summed over `sumdim`: one broadcast reduction, which
    Inductor fuses into a reduction kernel (aten contracts with two matrix products)."""
    def expanded(t, dims):
        for d in sorted(dims):
            t = t.unsqueeze(d)
        return t
    prod = expanded(i1, expand1) * expanded(i2, expand2) * expanded(i3, expand3)
    return prod.sum(list(sumdim)) if len(sumdim) else prod


# ----------------------------------------------------------------------------- convolution

def _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """A 1-, 2- or 3-D convolution (not transposed) as patches and one GEMM: the input padded,
    each spatial dim unfolded into its windows (every dilation-th element of a window of
    dilation * (k - 1) + 1), and (N, groups, positions, C/g * taps) @ (groups, C/g * taps, O/g),
    which Inductor compiles like any matmul (a GEMM template or the expert GEMM), plus the bias.
    The patches are a view that the GEMM's loads read through (k-fold reuse of the input is not
    exploited). Inductor leaves aten.convolution to the host (extern_kernels.convolution)."""
    import torch
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or weight.dim() != nd + 2 or not x.dtype.is_floating_point:
        return NotImplemented
    if transposed:
        return _conv_transposed(x, weight, bias, stride, padding, dilation, output_padding, groups)
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    taps = list(weight.shape[2:])
    if c != cg * groups or o % groups or x.numel() == 0 or weight.numel() == 0:
        return NotImplemented
    pad = []
    for p in reversed(padding):
        pad += [p, p]
    if any(pad):
        x = torch.constant_pad_nd(x, pad, 0.0)
    for d in range(nd):
        span = dilation[d] * (taps[d] - 1) + 1
        if x.shape[2 + d] < span:
            return NotImplemented
        x = x.unfold(2 + d, span, stride[d])                   # window appended last
        if dilation[d] > 1:
            x = x[..., ::dilation[d]]
    out_sizes = list(x.shape[2:2 + nd])
    positions = math.prod(out_sizes)
    # (N, g, C/g, L..., K...) -> (N, g, L..., C/g, K...) -> (N, g, L, C/g * K)
    x = x.reshape(n, groups, cg, *out_sizes, *taps)
    perm = [0, 1, *range(3, 3 + nd), 2, *range(3 + nd, 3 + 2 * nd)]
    cols = x.permute(perm).reshape(n, groups, positions, cg * math.prod(taps))
    w = weight.reshape(groups, o // groups, cg * math.prod(taps)).transpose(1, 2)   # (g, CK, O/g)
    out = torch.matmul(cols, w)                                 # (N, g, L, O/g)
    out = out.permute(0, 1, 3, 2).reshape(n, o, *out_sizes)
    if bias is not None:
        out = out + bias.reshape(1, o, *([1] * nd))
    return out


def _conv_transposed(x, weight, bias, stride, padding, dilation, output_padding, groups):
    """A transposed convolution as the direct one it equals: the input with stride - 1 zeros
    between its elements (per spatial dim), padded by dilation * (k - 1) - padding on each side
    (cropped where that is negative) plus output_padding at the end, convolved at stride 1
    with the weight flipped spatially and its in / out channels swapped per group. The zeros
    are computed on like any input element (stride^nd of the work is on zeros): a gather-free
    form, where a col2im scatter would add overlapping windows with atomics."""
    import torch
    nd = x.dim() - 2
    c = x.shape[1]
    if c != weight.shape[0] or c % groups or x.numel() == 0 or weight.numel() == 0:
        return NotImplemented
    taps = list(weight.shape[2:])
    for d in range(nd):
        s = stride[d]
        if s > 1:   # (.., L) -> (.., L, s) with zeros after each element -> (.., (L - 1) * s + 1)
            xd = x.movedim(2 + d, -1).unsqueeze(-1)
            xd = torch.cat([xd, torch.zeros(*xd.shape[:-1], s - 1, dtype=x.dtype, device=x.device)], -1)
            xd = xd.flatten(-2)[..., :(x.shape[2 + d] - 1) * s + 1]
            x = xd.movedim(-1, 2 + d)
        lo = dilation[d] * (taps[d] - 1) - padding[d]   # a negative pad crops
        x = torch.constant_pad_nd(x, [0, 0] * (nd - 1 - d) + [lo, lo + output_padding[d]], 0.0)
    o = weight.shape[1] * groups
    w = weight.reshape(groups, c // groups, weight.shape[1], *taps).transpose(1, 2)
    w = w.reshape(o, c // groups, *taps).flip(list(range(2, 2 + nd)))
    return _convolution(x, w, bias, [1] * nd, [0] * nd, dilation, False, [0] * nd, groups)


# ----------------------------------------------------------------------------- GEMMs on empty operands

def _empty_product(m: int, n: int, k: int, like, self=None, beta=1):
    """The product of an empty contraction (k == 0: zeros; with addmm's self, beta * self) or an
    empty result (m or n == 0), which Inductor's GEMM templates leave to aten's mm; None when
    the GEMM is not empty."""
    import torch
    if m and n and k:
        return None
    out = torch.zeros((m, n), dtype=like.dtype, device=like.device)
    if self is not None and beta != 0 and m and n:
        out = out + (self * beta if beta != 1 else self)
    return out


def _mm(a, b):
    out = _empty_product(a.shape[0], b.shape[1], a.shape[1], a)
    return NotImplemented if out is None else out


def _addmm(self, a, b, *, beta=1, alpha=1):
    out = _empty_product(a.shape[0], b.shape[1], a.shape[1], a, self, beta)
    return NotImplemented if out is None else out


def _bmm(a, b):
    import torch
    if all((*a.shape, b.shape[2])):
        return NotImplemented
    return torch.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype, device=a.device)


# ----------------------------------------------------------------------------- 16-bit index_add

# largest source (elements) of a 16-bit index_add taken in FP32: the T3 jagged block's attention
# pooling (bf16, far larger) took 527k cycles this way, where the host call is a roofline estimate
# of well under one microsecond, so large calls stay on the host
INDEX_ADD_16_LIMIT = 1 << 16


def _index_add_16(self, dim, index, source, *, alpha=1):
    """index_add on bf16 / fp16: Inductor's form is index_put with accumulation, atomic adds that
    the chip (and Inductor's Triton path) has for FP32 only, so it leaves 16-bit calls to aten.
    Here they accumulate in FP32 and round once (eager rounds after every add: the results
    differ where several sources meet one position, the FP32 sum being the nearer one)."""
    import torch
    if self.dtype not in (torch.bfloat16, torch.float16) or source.numel() > INDEX_ADD_16_LIMIT:
        return NotImplemented
    return self.float().index_add(dim, index, source.float(), alpha=alpha).to(self.dtype)


# ----------------------------------------------------------------------------- adaptive pooling

def _adaptive_avg_pool3d(x, output_size):
    """3-D adaptive average pooling (Inductor lowers the 2-D one, not this) as two 2-D ones: the
    mean over a box of windows is the mean over D's window of the means over (H, W)'s, and a
    2-D adaptive pool whose output keeps a dimension's size pools nothing along it. First
    (D, H*W) -> (OD, H*W), then (H, W) -> (OH, OW). Each output is a mean of means (two roundings
    in the input's precision where eager divides one sum once)."""
    import torch.nn.functional as F
    od, oh, ow = output_size
    if x.dim() not in (4, 5) or not x.dtype.is_floating_point or x.numel() == 0:
        return NotImplemented
    lead = x.shape[:-3]
    d, h, w = x.shape[-3:]
    y = F.adaptive_avg_pool2d(x.reshape(-1, d, h * w), (od, h * w))          # (L, OD, H*W)
    y = F.adaptive_avg_pool2d(y.reshape(-1, h, w), (oh, ow))                 # (L*OD, OH, OW)
    return y.reshape(*lead, od, oh, ow)


def _pool_out(n: int, k: int, s: int, p: int, ceil_mode: bool) -> int:
    """aten's pooling output length (pooling_output_shape, dilation 1)."""
    out = (n + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _avg_pool2d(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    """avg_pool2d with a window of more than 25 elements and a stride that differs from it,
    which Inductor leaves to aten (its lowering unrolls the window): window sums as a zero-padded
    input unfolded along H and W and reduced, divided by aten's divisor for each output (the
    window clipped to the padded input, or to the input without count_include_pad, or
    divisor_override), computed from the static shape. Smaller windows keep Inductor's
    lowering."""
    import torch
    pair = lambda v: [v, v] if isinstance(v, int) else list(v) * (2 if len(v) == 1 else 1)  # noqa: E731
    k = pair(kernel_size)
    st = pair(stride) if stride else k
    pd = pair(padding)
    if x.dim() not in (3, 4) or not x.dtype.is_floating_point or x.numel() == 0:
        return NotImplemented
    if k[0] * k[1] <= 25 or k == st:
        return NotImplemented
    size = list(x.shape[-2:])
    out = [_pool_out(size[i], k[i], st[i], pd[i], ceil_mode) for i in range(2)]
    if min(out) <= 0:
        return NotImplemented
    right = [max((out[i] - 1) * st[i] + k[i] - size[i] - pd[i], 0) for i in range(2)]
    xp = torch.constant_pad_nd(x, [pd[1], right[1], pd[0], right[0]], 0.0)
    win = xp.unfold(-2, k[0], st[0]).unfold(-2, k[1], st[1])          # (..., OH, OW, kh, kw)
    total = win[..., :out[0], :out[1], :, :].sum((-2, -1), dtype=torch.float32)

    def counts(i: int) -> list[int]:
        got = []
        for o in range(out[i]):
            start = o * st[i] - pd[i]
            end = min(start + k[i], size[i] + pd[i])
            got.append(end - start if count_include_pad else min(end, size[i]) - max(start, 0))
        return got
    if divisor_override:
        div = torch.full((), float(divisor_override), dtype=torch.float32, device=x.device)
    else:
        ch = torch.tensor(counts(0), dtype=torch.float32, device=x.device)
        cw = torch.tensor(counts(1), dtype=torch.float32, device=x.device)
        div = ch[:, None] * cw[None, :]
    return (total / div).to(x.dtype)


# ----------------------------------------------------------------------------- embedding bags

def _embedding_bag_rule(node: Any):
    """An embedding bag whose pooled output alone is read (its offset2bag, bag sizes and argmax
    indices exist for the backward) and that the registered Triton kernel does not take
    (extern.py: per-sample weights, max mode, a padding index, offsets without the last one,
    or no kernel registered, as in T4): gathered rows, scaled by the per-sample weights, added
    into their bags (index_add: FP32 atomics; 16-bit tables in FP32, index_add above) or, for
    max, the dense masked maximum of scatter_reduce above; a mean divides by the bag's count; an
    empty bag is 0, as in eager."""
    import torch

    from backend.inductor_cpu import extern
    from backend.inductor_cpu.splice import val
    a = extern.embedding_bag_args(node)
    w, idx, offs = val(a["weight"]), val(a["indices"]), val(a["offsets"])
    psw = a["per_sample_weights"]
    if not all(isinstance(t, torch.Tensor) for t in (w, idx, offs)) or extern.embedding_bag_taken(a):
        return None
    if w.device.type != "cpu" or w.dim() != 2 or idx.dim() != 1 or offs.dim() != 1 or idx.numel() == 0:
        return None
    mode, last, pad = a["mode"], bool(a["include_last_offset"]), a["padding_idx"]
    pad = -1 if pad is None else int(pad)
    if pad < 0 and pad != -1:
        pad = pad % w.shape[0]
    if mode not in (0, 1, 2) or (mode == 2 and idx.numel() * (offs.numel() - last) > SCATTER_DENSE_LIMIT):
        return None

    def bag(weight, indices, offsets, *psw_t):
        n = indices.shape[0]
        starts = offsets[:-1] if last else offsets
        nbags = starts.shape[0]
        pos = torch.arange(n, device=indices.device)
        which = torch.searchsorted(starts, pos, right=True) - 1
        keep = which >= 0
        if last:
            keep = keep & (pos < offsets[-1])
        if pad >= 0:
            keep = keep & (indices != pad)
        which = torch.where(keep, which, 0)
        rows = weight[indices]
        if psw_t:
            rows = rows * psw_t[0].to(rows.dtype)[:, None]
        if mode == 2:
            low = torch.full((nbags, weight.shape[1]), float("-inf"), dtype=weight.dtype, device=weight.device)
            rows = torch.where(keep[:, None], rows, float("-inf"))
            out = low.scatter_reduce(0, which[:, None].expand_as(rows), rows, "amax", include_self=True)
            return torch.where(out == float("-inf"), 0.0, out).to(weight.dtype)
        rows = torch.where(keep[:, None], rows, 0)
        out = torch.zeros(nbags, weight.shape[1], dtype=weight.dtype, device=weight.device).index_add(0, which, rows)
        if mode == 1:
            count = torch.zeros(nbags, dtype=torch.float32, device=weight.device).index_add(
                0, which, keep.to(torch.float32))
            out = (out.float() / count.clamp(min=1)[:, None]).to(weight.dtype)
        return out
    inputs = [a["weight"], a["indices"], a["offsets"]] + ([psw] if psw is not None else [])
    return bag, inputs


# ----------------------------------------------------------------------------- linear cross entropy

def _linear_cross_entropy_rule(node: Any):
    """F.linear_cross_entropy's chunked custom ops (torch_nn._linear_cross_entropy_batch_chunked
    and its reduction='none' form), a Python loop over batch chunks that computes the loss and,
    for a backward, the gradients in the forward, which Inductor cannot see into: where only the
    loss is read, the reference formula the op documents, cross_entropy(linear(input, weight,
    bias), target, ...) in the op's accumulation dtype, compiled like any model code (the logits
    of the whole batch are materialised where the op keeps one chunk's)."""
    import torch
    import torch.nn.functional as F

    from backend.inductor_cpu.splice import val
    none = "no_reduction" in str(node.target)
    names = (["input", "linear_weight", "target", "linear_bias", "weight", "ignore_index", "batch_chunk_size",
              "acc_policy", "acc_dtype"] if none else
             ["input", "linear_weight", "target", "linear_bias", "weight", "reduction", "ignore_index",
              "label_smoothing", "batch_chunk_size", "acc_policy", "acc_dtype"])
    a = dict(zip(names, node.args), **node.kwargs)
    x, w = val(a["input"]), val(a["linear_weight"])
    out = val(node) if none else val(next(iter(node.users)))
    if not all(isinstance(t, torch.Tensor) for t in (x, w, out)) or x.device.type != "cpu" or x.dim() != 2:
        return None
    reduction = "none" if none else a["reduction"]
    smoothing = 0.0 if none else float(a["label_smoothing"])
    ignore, acc = int(a["ignore_index"]), a["acc_dtype"]
    tensors = [a[k] for k in ("input", "linear_weight", "target", "linear_bias", "weight") if a.get(k) is not None]
    has_bias, has_weight = a.get("linear_bias") is not None, a.get("weight") is not None

    def loss(inp, lw, target, *rest):
        bias = rest[0] if has_bias else None
        cw = rest[-1] if has_weight else None
        logits = F.linear(inp.to(acc), lw.to(acc), None if bias is None else bias.to(acc))
        got = F.cross_entropy(logits, target, weight=None if cw is None else cw.to(acc), reduction=reduction,
                              ignore_index=ignore, label_smoothing=smoothing)
        return got.to(out.dtype).reshape(out.shape)
    return loss, tensors


# ----------------------------------------------------------------------------- boolean-mask assignment

def _index_put(x, indices, values, accumulate=False):
    """x[mask] = values (or += with accumulate) for one boolean mask over x's leading dims and
    values that broadcast to every selected element (a scalar, a row): a select, where(mask,
    values, x), with no data-dependent shape. Inductor lowers a boolean index to aten (the
    number of selected elements is data); values with one entry per selected element still
    need that count and stay there."""
    import torch
    idx = [i for i in indices]
    if len(idx) != 1 or idx[0] is None or idx[0].dtype not in (torch.bool, torch.uint8):
        return NotImplemented
    mask = idx[0].bool()
    k = mask.dim()
    rest = x.shape[k:]
    if k == 0 or k > x.dim() or tuple(mask.shape) != tuple(x.shape[:k]) or values.dim() > len(rest) + 1:
        return NotImplemented
    if values.dim() == len(rest) + 1:
        if values.shape[0] != 1:
            return NotImplemented  # one value per selected element: the count is data
        values = values[0]
    try:
        torch.broadcast_shapes(values.shape, rest)
    except RuntimeError:
        return NotImplemented
    m = mask.reshape(*mask.shape, *([1] * len(rest)))
    v = values.to(x.dtype).expand(*x.shape[:k], *rest) if values.dim() else values.to(x.dtype)
    return x + torch.where(m, v, 0) if accumulate else torch.where(m, v, x)


# ----------------------------------------------------------------------------- 3-D grid sampling

def _reflect(c, lo2: float, hi2: float):
    """aten's reflect_coordinates: c reflected into [lo2 / 2, hi2 / 2]."""
    import torch
    if lo2 == hi2:
        return torch.zeros_like(c)
    low, span = lo2 / 2, (hi2 - lo2) / 2
    c = (c - low).abs()
    extra = torch.fmod(c, span)
    flips = torch.floor(c / span)
    return torch.where(torch.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _grid_sampler_3d(x, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_3d (trilinear or nearest; zeros, border or reflection padding), which
    Inductor leaves to aten (it decomposes the 2-D one): aten's unnormalisation and padding of
    each coordinate, then the 8 (trilinear) or 1 (nearest, half to even) taps gathered from the
    flattened volume, out-of-range taps weighted 0 under zeros padding."""
    import torch
    if interpolation_mode not in (0, 1) or padding_mode not in (0, 1, 2) or x.dim() != 5 or \
            not x.dtype.is_floating_point or x.numel() == 0 or grid.numel() == 0:
        return NotImplemented
    n, c, d, h, w = x.shape
    out_shape = grid.shape[1:4]
    g = grid.float()
    sizes = (w, h, d)   # grid's last dim: x (W), y (H), z (D)
    coords = []
    for i, size in enumerate(sizes):
        v = g[..., i]
        v = ((v + 1) / 2) * (size - 1) if align_corners else ((v + 1) * size - 1) / 2
        if padding_mode == 1:
            v = v.clamp(0, size - 1)
        elif padding_mode == 2:
            v = _reflect(v, 0, 2 * (size - 1)) if align_corners else _reflect(v, -1, 2 * size - 1)
            v = v.clamp(0, size - 1)
        coords.append(v)
    flat = x.reshape(n, c, d * h * w)

    def tap(ix, iy, iz, weight):
        ok = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h) & (iz >= 0) & (iz < d)
        lin = (iz.clamp(0, d - 1) * h + iy.clamp(0, h - 1)) * w + ix.clamp(0, w - 1)
        vals = flat.gather(2, lin.reshape(n, 1, -1).expand(n, c, -1).long())
        return vals.float() * torch.where(ok, weight, 0.0).reshape(n, 1, -1)
    if interpolation_mode == 1:
        ix, iy, iz = (torch.round(v).long() for v in coords)
        out = tap(ix, iy, iz, torch.ones_like(coords[0]))
    else:
        (fx, fy, fz) = (torch.floor(v) for v in coords)
        tx, ty, tz = coords[0] - fx, coords[1] - fy, coords[2] - fz
        x0, y0, z0 = fx.long(), fy.long(), fz.long()
        out = 0
        for dz in (0, 1):
            for dy in (0, 1):
                for dx in (0, 1):
                    wgt = (tx if dx else 1 - tx) * (ty if dy else 1 - ty) * (tz if dz else 1 - tz)
                    out = out + tap(x0 + dx, y0 + dy, z0 + dz, wgt)
    return out.reshape(n, c, *out_shape).to(x.dtype)


# ----------------------------------------------------------------------------- empty reductions

def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    """var_mean over no elements: NaN for both, as eager gives. Inductor's Welford reduction
    returns a mean of 0 there (its C++ and Triton code alike); other calls keep its lowering."""
    import torch
    dims = list(range(x.dim())) if dim is None or (isinstance(dim, (list, tuple)) and not dim) else \
        [d % max(x.dim(), 1) for d in ([dim] if isinstance(dim, int) else dim)]
    if not x.dtype.is_floating_point or math.prod(x.shape[d] for d in dims) != 0:
        return NotImplemented
    shape = [1 if d in dims else n for d, n in enumerate(x.shape)] if keepdim else \
        [n for d, n in enumerate(x.shape) if d not in dims]
    nan = torch.full(shape, math.nan, dtype=x.dtype, device=x.device)
    return nan, nan.clone()


# ----------------------------------------------------------------------------- resampling, nonzero

def _aa_scale(n_in: int, n_out: int, align_corners: bool, scale: float | None) -> float:
    """aten's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _aa_weights(n_in: int, n_out: int, align_corners: bool, scale: float | None, device):
    """(n_out, n_in) weights of the antialiased bilinear filter, by aten's rules: output i is
    centred at s * (i + 0.5); the triangle filter's support is max(s, 1) input pixels each way,
    taps from trunc(centre - support + 0.5) to trunc(centre + support + 0.5), clipped to the
    input, each weighted 1 - |(j - centre + 0.5) / max(s, 1)| (at least 0), then normalised."""
    import torch
    s = _aa_scale(n_in, n_out, align_corners, scale)
    support = max(s, 1.0)
    i = torch.arange(n_out, device=device, dtype=torch.float32)[:, None]
    j = torch.arange(n_in, device=device, dtype=torch.float32)[None, :]
    centre = s * (i + 0.5)
    lo = (centre - support + 0.5).to(torch.int64).clamp(min=0)
    hi = (centre + support + 0.5).to(torch.int64).clamp(max=n_in)
    w = (1.0 - ((j - centre + 0.5) / support).abs()).clamp(min=0.0)
    w = torch.where((j >= lo) & (j < hi), w, 0.0)
    total = w.sum(1, keepdim=True)
    return torch.where(total != 0, w / total, w)


def _upsample_bilinear2d_aa(x, output_size, align_corners, scales_h=None, scales_w=None):
    import torch
    if x.dim() != 4 or x.dtype != torch.float32 or x.numel() == 0:
        return NotImplemented
    (h, w), (oh, ow) = x.shape[-2:], output_size
    y = x
    if ow != w:
        y = torch.matmul(y, _aa_weights(w, ow, align_corners, scales_w, x.device).t())
    if oh != h:
        y = torch.matmul(_aa_weights(h, oh, align_corners, scales_h, x.device), y)
    return y.clone() if y is x else y


def _nonzero_static(x, *, size, fill_value=-1):
    import torch
    n = x.numel()
    if x.dim() == 0 or n == 0 or size <= 0 or n > NONZERO_LIMIT or x.is_complex():
        return NotImplemented
    flat = (x != 0).reshape(-1)
    rank = torch.cumsum(flat.to(torch.int64), 0) - 1
    row = torch.where(flat & (rank < size), rank, size)   # the rest go to a spare row
    pos = torch.arange(n, device=x.device)
    coords = []
    for d in reversed(range(x.dim())):
        coords.append(pos % x.shape[d])
        pos = pos // x.shape[d]
    coords = torch.stack(coords[::-1], 1)
    out = torch.full((size + 1, x.dim()), fill_value, dtype=torch.int64, device=x.device)
    return out.scatter(0, row[:, None].expand(n, x.dim()), coords)[:size]


def _register_all() -> None:
    import torch
    aten = torch.ops.aten
    table = {aten.addbmm.default: _addbmm, aten._cdist_forward.default: _cdist_forward,
             aten._pdist_forward.default: _pdist_forward, aten.histc.default: _histc,
             aten.index_reduce.default: _index_reduce, aten.segment_reduce.default: _segment_reduce,
             aten.scatter_reduce.two: _scatter_reduce, aten.scatter.reduce: _scatter_multiply,
             aten.scatter.value_reduce: _scatter_multiply,
             aten.mm.default: _mm, aten.addmm.default: _addmm, aten.bmm.default: _bmm,
             aten._trilinear.default: _trilinear, aten.convolution.default: _convolution,
             aten.var_mean.correction: _var_mean, aten.index_add.default: _index_add_16,
             aten._adaptive_avg_pool3d.default: _adaptive_avg_pool3d, aten.avg_pool2d.default: _avg_pool2d,
             aten.index_put.default: _index_put, aten.grid_sampler_3d.default: _grid_sampler_3d,
             aten._upsample_bilinear2d_aa.default: _upsample_bilinear2d_aa,
             aten.nonzero_static.default: _nonzero_static}
    for op, fn in table.items():
        _register(op)(fn)


_register_all()
