"""`small_bucketize`: bucketize against a few integer boundaries as compare-and-count.

`torch.bucketize(x, boundaries)` maps positions to segments (the table of each index of a
table-batched embedding bag, the row of each value of a jagged tensor). Inductor lowers it to a
binary search whose every step loads `boundaries[mid]` at an index computed per element: on
this chip an index-driven DMA with one element per run, about log2(K) of them per element
(the DLRM embedding bag's 26 table starts: ~5 gathers per index, 213k of the kernel's cycles
at the study shape where the pooling itself takes 480k).

With boundaries that are sorted (bucketize's contract) the bucket is a count: the number of
boundaries below x (`right=False`) or at or below x (`right=True`). With the switch on, a
bucketize on the cpu -> MTIA path whose boundaries are a 1-D integer tensor of at most
`MAX_BOUNDARIES` elements and whose input is an integer tensor becomes

    sum(x[..., None] >= boundaries, -1)    (right=True; `>` for right=False)

which Inductor generates as one reduction over K: the boundaries are one contiguous load per
program, the compares run on the SIMD engine, the count on the reduction engine. The result
is the same integer for sorted boundaries, whatever they hold (duplicates included); integer
compares are exact. Unsorted boundaries, for which bucketize's result is undefined, may give
another answer. Float inputs keep Inductor's lowering (NaN ordering differs).
(A lookup `table[bucket - 1]` that follows, each index's table row offset, stays a gather: as a
one-hot select-and-sum over a 26-entry table it measured slower, SIMD-bound.)

A graph rewrite in Inductor's post-grad custom pass (extern.GemmToChip runs it), the same
extension point as the extern ops.
"""
from __future__ import annotations

from typing import Any

import torch

MAX_BOUNDARIES = 64  # K compares per element stay cheaper than log2(K) gathers up to here

_INTS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _val(n: Any) -> Any:
    # as extern._val: extern runs this rewrite, so importing from it would be a cycle
    return n.meta.get("val") if isinstance(n, torch.fx.Node) else None


def rewrite(graph: torch.fx.Graph) -> int:
    """Rewrite the eligible bucketize nodes of `graph`; returns how many."""
    aten = torch.ops.aten
    done = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.bucketize.Tensor:
            continue
        names = ("self", "boundaries", "out_int32", "right")
        a = dict(dict(out_int32=False, right=False), **dict(zip(names, node.args)), **node.kwargs)
        x, b = _val(a["self"]), _val(a["boundaries"])
        if not (isinstance(x, torch.Tensor) and isinstance(b, torch.Tensor)):
            continue
        if (b.dim() != 1 or not 0 < b.numel() <= MAX_BOUNDARIES or b.dtype not in _INTS or x.dtype not in _INTS
                or x.device.type != "cpu" or b.device.type != "cpu"):
            continue
        out_dtype = torch.int32 if a["out_int32"] else torch.int64
        with graph.inserting_before(node):
            col = graph.call_function(aten.unsqueeze.default, (a["self"], -1))
            col.meta["val"] = x.unsqueeze(-1)
            op = aten.ge.Tensor if a["right"] else aten.gt.Tensor
            cmp = graph.call_function(op, (col, a["boundaries"]))
            cmp.meta["val"] = op(col.meta["val"], b)
            count = graph.call_function(aten.sum.dim_IntList, (cmp, [-1]), {"dtype": out_dtype})
            count.meta.update(node.meta)
        node.replace_all_uses_with(count)
        graph.erase_node(node)
        done += 1
    return done

