"""`sort_kernels`: sorts, and what is derived from one (kthvalue, topk, mode, median, nanmedian), as
Inductor's own Triton sort kernel where the sorted dimension fits a PE.

median and nanmedian are decompositions of this module's own (a stable sort, the row's count
of numbers, one gather: `_median`), not Inductor's median, which gives a row holding a NaN a
number for its median where eager gives NaN. An all-NaN row's nanmedian is NaN at index 0
here; eager's index there is its selection algorithm's own (2 for 4 elements, 5 for 7).

Inductor lowers aten.sort to a persistent Triton kernel (ir.Sort: a bitonic network over the
whole sorted dimension inside one program) only up to 512 elements, and sends topk, kthvalue
and median to aten, unless `config.triton.decompose_sort_ops` is set: that lifts the size limit
(int32 indices) and rewrites the others as a stable sort plus a select. Here one program's
sorted dimension lives in one PE's local memory, so the switch sets that config for a call
whose sorted dimension has at most SORT_LIMIT elements and leaves larger ones to aten: a
program sorting 8192 FP32 keys with their indices keeps 336 KB of tiles live, more than the
allocator can place in a PE's 384 KB.

A sorted dimension longer than SORT_LIMIT (up to MERGE_LIMIT = 4 x SORT_LIMIT) is sorted as runs
of at most SORT_LIMIT (the same Triton sort) merged pairwise by ranks (`_merge`: each element's
place is its place in its run plus how many of the other run go before it, a searchsorted, which
Inductor lowers to a bucketize on the chip, then one scatter), a decomposition of aten.sort;
longer ones stay with aten.

Sorts are stable here, whatever the call asks: ties keep their input order, as eager's
stable=True sort keeps them. An unstable call's indices can still differ from eager's where
values tie (eager's unstable sort orders ties its own way); the values never differ.

topk and mode are Inductor's own sort-based lowerings (under the same config): topk a stable
sort (descending for the largest) cut to k, mode a stable sort, run lengths and the last
position of the most frequent value (the smallest such value). Their values equal eager's; their
indices where values tie are the stable sort's, which eager leaves unspecified: CPU topk picks
among equal values by its partial sort / nth_element, CPU mode returns the last element of the
value's run in an unstable std::sort (the last position only for rows short enough for an
insertion sort). A model that routes on topk (the MoE's top-k experts, T3) picks another expert
than eager only where two router scores tie exactly at the k-th place.
"""
from __future__ import annotations

import math
from typing import Any, Callable

SORT_LIMIT = 4096

_ORIGINAL: dict[Any, Callable] = {}


def _ops() -> dict[Any, Callable[[tuple, dict], Any]]:
    """The lowered ops, each with where its sorted dimension is (None: the whole tensor)."""
    import torch
    aten = torch.ops.aten

    def arg(i: int, default: Any = -1) -> Callable[[tuple, dict], Any]:
        return lambda args, kwargs: kwargs.get("dim", args[i] if len(args) > i else default)
    return {aten.sort.default: arg(1), aten.sort.stable: arg(99), aten.kthvalue.default: arg(2),
            aten.topk.default: arg(2), aten.mode.default: arg(1)}


def _fits(x: Any, dim: Any) -> bool:
    import sympy
    from torch._inductor.virtualized import V
    size = list(x.get_size())
    if not size:
        return True
    n = math.prod(size) if dim is None else size[dim % len(size)]
    return bool(V.graph.sizevars.statically_known_true(sympy.Le(n, SORT_LIMIT)))


def _chip_lowering(op: Any, where: Callable[[tuple, dict], Any], original: Callable) -> Callable:
    import torch
    import torch._inductor.config as ic
    from torch._inductor import lowering as L

    from backend.inductor_cpu import options
    aten = torch.ops.aten

    def lowering(*args: Any, **kwargs: Any) -> Any:
        x = args[0]
        if not (options.enabled("sort_kernels") and ic.cpu_backend == "triton"
                and getattr(x.get_device(), "type", None) == "cpu" and _fits(x, where(args, kwargs))):
            return original(*args, **kwargs)
        with ic.patch({"triton.decompose_sort_ops": True}):
            if op is aten.sort.default:  # (self, dim=-1, descending=False)
                descending = kwargs.get("descending", args[2] if len(args) > 2 else False)
                return L.sort_stable(x, stable=True, dim=where(args, kwargs), descending=descending)
            if op is aten.sort.stable:   # (self, *, stable, dim=-1, descending=False)
                return L.sort_stable(x, stable=True, dim=where(args, kwargs), descending=kwargs.get("descending", False))
            out = original(*args, **kwargs)
            if op is aten.topk.default:
                # the k leading columns of the sorted rows, copied out contiguous: read in place,
                # a strided slice of the sort's buffers costs each consumer short DMA bursts
                out = tuple(L.clone(t) for t in out)
                for t in out:
                    t.realize()
            return out
    lowering.mtia_original = original  # type: ignore[attr-defined]
    return lowering


def _median(x, dim=None, keepdim=False, *, ignore_nan=False):
    """median / nanmedian as a stable sort and one gather. Inductor's own median (its
    decompose_sort_ops) takes the middle of the sorted row, NaNs sorted last: a row holding a
    NaN then has a number for its median where eager's is NaN. Here the position is taken
    from the row's count of numbers c out of n: median NaN at the first NaN (position c of
    the stable sort, eager's index) when c < n, else (n - 1) // 2; nanmedian (c - 1) // 2, 0
    for an all-NaN row (NaN at index 0, as eager)."""
    import torch
    whole = dim is None
    if whole:
        x, dim = x.reshape(-1), 0
    if x.dim() == 0:  # a scalar is its own median, at index 0, NaN or not
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    if not (x.dtype.is_floating_point and 0 < x.shape[dim % x.dim()] <= SORT_LIMIT):
        return NotImplemented
    dim = dim % x.dim()
    n = x.shape[dim]
    values, indices = torch.sort(x, dim=dim, stable=True)
    count = (~torch.isnan(x)).sum(dim, keepdim=True)
    k = ((count - 1) // 2).clamp(min=0) if ignore_nan else torch.where(count < n, count, (n - 1) // 2)
    v, i = values.gather(dim, k), indices.gather(dim, k)
    if whole:
        return v.reshape(())
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


def _median_dim(x, dim=-1, keepdim=False):
    return _median(x, dim, keepdim)


def _nanmedian_dim(x, dim=-1, keepdim=False):
    return _median(x, dim, keepdim, ignore_nan=True)


def _median_all(x):
    return _median(x)


def _nanmedian_all(x):
    return _median(x, ignore_nan=True)


# longest sorted dimension taken as chunks of at most SORT_LIMIT merged on the chip (`_long_sort`)
MERGE_LIMIT = 4 * SORT_LIMIT


def _merge(av, ai, bv, bi, descending: bool):
    """Stable merge of sorted runs a and b (a first in input order; (..., L) each), values and
    their indices, by ranks: an element's output position is its position in its run plus the
    number of elements of the other run that go before it (searchsorted, on the chip as a
    bucketize). NaN is the largest value, as in torch.sort: last ascending, first descending."""
    import torch
    la, lb = av.shape[-1], bv.shape[-1]
    ra = torch.arange(la, device=av.device)
    rb = torch.arange(lb, device=av.device)
    a_nan, b_nan = torch.isnan(av), torch.isnan(bv)

    def below(seq, v, equal: bool):
        """How many of seq (ascending, NaN last) are < v (<= v with `equal`), v a number.
        searchsorted's bisection does not order NaN: NaN is read as +inf, and with `equal` the
        NaN counted at v = +inf taken back."""
        if not seq.is_floating_point():
            return torch.searchsorted(seq, v, right=equal)
        nan = torch.isnan(seq)
        got = torch.searchsorted(torch.where(nan, math.inf, seq), v, right=equal)
        return got - torch.where(v == math.inf, nan.sum(-1, keepdim=True), 0) if equal else got
    if not descending:
        # a's element v: b's elements < v (NaN: b's numbers); b's element v: a's elements <= v
        before_a = torch.where(a_nan, (~b_nan).sum(-1, keepdim=True), below(bv, av, False))
        before_b = torch.where(b_nan, la, below(av, bv, True))
    else:
        # a's element v: b's elements > v (NaN: none); b's element v: a's elements >= v
        b_up, a_up = bv.flip(-1), av.flip(-1)    # ascending, NaN last
        before_a = torch.where(a_nan, 0, lb - below(b_up, av, True))
        before_b = torch.where(b_nan, a_nan.sum(-1, keepdim=True), la - below(a_up, bv, False))
    pos = torch.cat([ra + before_a, rb + before_b], -1)
    vals, idx = torch.cat([av, bv], -1), torch.cat([ai, bi], -1)
    return torch.zeros_like(vals).scatter(-1, pos, vals), torch.zeros_like(idx).scatter(-1, pos, idx)


def _long_sort(x, dim=-1, descending=False):
    """A sort whose dimension exceeds a PE's SORT_LIMIT (up to MERGE_LIMIT): runs of at most
    SORT_LIMIT sorted by Inductor's Triton sort (stable), then merged pairwise (`_merge`). The
    dimension is padded to a power-of-two number of runs with values that sort last (NaN
    ascending, -inf descending; an integer type's extreme), which the stable merge keeps behind
    the real ones, and sliced off. Stable, as the short sorts are here."""
    import torch
    if x.dim() == 0:
        return NotImplemented
    dim = dim % x.dim()
    n = x.shape[dim]
    if not (SORT_LIMIT < n <= MERGE_LIMIT) or not (x.dtype.is_floating_point or x.dtype in (
            torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8)):
        return NotImplemented
    runs = 1 << math.ceil(math.log2(math.ceil(n / SORT_LIMIT)))
    length = math.ceil(n / runs)
    v = x.movedim(dim, -1)
    if x.dtype.is_floating_point:
        fill = -math.inf if descending else math.nan
    else:
        info = torch.iinfo(x.dtype)
        fill = info.min if descending else info.max
    pad = runs * length - n
    if pad:
        v = torch.cat([v, torch.full((*v.shape[:-1], pad), fill, dtype=x.dtype, device=x.device)], -1)
    lead = v.shape[:-1]
    vals, idx = torch.sort(v.reshape(*lead, runs, length), dim=-1, descending=descending, stable=True)
    idx = idx + (torch.arange(runs, device=x.device) * length)[:, None]
    while vals.shape[-2] > 1:
        vals, idx = _merge(vals[..., 0::2, :], idx[..., 0::2, :], vals[..., 1::2, :], idx[..., 1::2, :], descending)
    vals, idx = vals[..., 0, :n], idx[..., 0, :n]
    return vals.movedim(-1, dim), idx.movedim(-1, dim)


def _sort_default(x, dim=-1, descending=False):
    return _long_sort(x, dim, descending)


def _sort_stable(x, *, stable=None, dim=-1, descending=False):
    return _long_sort(x, dim, descending)


_DECOMP_ORIGINAL: dict[Any, Any] = {}


def _decomps() -> dict[Any, Callable]:
    import torch
    aten = torch.ops.aten
    return {aten.median.dim: _median_dim, aten.median.default: _median_all,
            aten.nanmedian.dim: _nanmedian_dim, aten.nanmedian.default: _nanmedian_all,
            aten.sort.default: _sort_default, aten.sort.stable: _sort_stable}


def install() -> None:
    """Wrap the lowerings of the sort ops and add the median decompositions (idempotent)."""
    from torch._inductor import lowering as L

    from backend.inductor_cpu import host_ops
    host_ops.install_decompositions(_decomps(), _DECOMP_ORIGINAL, "sort_kernels")
    for op, where in _ops().items():
        current = L.lowerings.get(op)
        if current is None or hasattr(current, "mtia_original"):
            continue
        _ORIGINAL[op] = current
        L.lowerings[op] = _chip_lowering(op, where, current)


def uninstall() -> None:
    from torch._inductor import lowering as L

    from backend.inductor_cpu import host_ops
    host_ops.uninstall_decompositions(_DECOMP_ORIGINAL)
    for op, original in _ORIGINAL.items():
        L.lowerings[op] = original
    _ORIGINAL.clear()
