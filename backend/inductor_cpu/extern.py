"""GEMMs, attention and embedding bags of Inductor graphs on the simulated chip.

Inductor leaves GEMMs on CPU tensors to aten (extern kernels), which run on the host and have
no simulated time. Through Inductor's post-grad custom pass (`config.post_grad_custom_post_pass`,
an extension point, not a fork) each such node becomes `mtia_sim.gemm(a, b)`, a custom op whose
implementation launches a program through backend.driver, so the launch is simulated and
recorded like Inductor's own kernels. Around it the pass keeps what the program does not do as
graph ops, so Inductor generates Triton kernels for them (simulated too): a b operand that is
the transpose of a row-major tensor (a linear layer's weight, x^T in x @ x^T) is passed as that
tensor with `trans_b` (the program's NT form reads it as it lies), any other non-contiguous
operand is first copied contiguous by a Triton kernel, and addmm's bias is added after the
product. The op declares `needs_contiguous_strides` and refuses a strided operand: a copy left to
its implementation would be host work outside the simulated time. Likewise scaled dot-product
attention becomes `mtia_sim.sdpa` (the backend's flash-attention Triton kernel, attention.py) and
embedding bags (sum / mean) `mtia_sim.embedding_bag`.

This module is a registration point: the backend does not import kernels/ or baselines/, so
the programs behind `gemm` and `embedding_bag` are registered by the backend's user with
`register_extern` (study/inductor.py registers the expert GEMM of baselines/expert/gemm.py and
the Triton embedding-bag kernel of kernels/recommendation_ext.py). An op with no registered
implementation is left to Inductor (a host fallback), as with its switch off.

Switches: `extern_gemm`, `extern_sdpa`, `extern_embedding_bag` (backend/inductor_cpu/options.py). Ops in the `mtia_sim` namespace run on
the simulated chip, so host-op accounting skips them (study/model_coverage.py, compile_mtia.py).
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass

from backend.inductor_cpu import options

NAMESPACE = "mtia_sim"
# dtypes the expert GEMM program takes (f32 is priced at the chip's FP32 vector rate)
_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

# The ops whose implementation the backend's user registers, and what each must compute:
#   gemm(a, b, trans_b) -> a @ b: [M, K] @ [K, N], or batched [B, M, K] @ [B, K, N]; with
#       trans_b, b is given transposed ([N, K] or [B, N, K]: a linear layer's weight, x^T of
#       x @ x^T); contiguous operands of one dtype in _DTYPES
#   embedding_bag(weight, indices, offsets, mean) -> [len(offsets) - 1, D]: bag i pools (sums,
#       or averages when `mean`) the rows weight[indices[offsets[i]:offsets[i + 1]]]
EXTERN_OPS = ("gemm", "embedding_bag")
_IMPLS: dict[str, Callable[..., torch.Tensor]] = {}


def register_extern(op: str, impl: Callable[..., torch.Tensor]) -> None:
    """Run custom op `op` (one of EXTERN_OPS) with `impl`, which launches its program(s) through
    backend.driver; a second registration replaces the first. The graph pass routes an op to the
    chip only while it has an implementation."""
    if op not in EXTERN_OPS:
        raise ValueError(f"unknown extern op {op!r}; known: {', '.join(EXTERN_OPS)}")
    _IMPLS[op] = impl


def registered(op: str) -> bool:
    return op in _IMPLS


def _impl(op: str) -> Callable[..., torch.Tensor]:
    fn = _IMPLS.get(op)
    if fn is None:
        raise RuntimeError(f"{NAMESPACE}.{op} has no implementation: register one with "
                           f"backend.inductor_cpu.extern.register_extern({op!r}, ...)")
    return fn


_lib = torch.library.Library(NAMESPACE, "DEF")
# Inductor must hand the program row-major operands: a copy it leaves to the implementation
# would run on the host, unpriced (a transposed operand's copy is a simulated Triton kernel)
_lib.define("gemm(Tensor a, Tensor b, bool trans_b=False) -> Tensor", tags=(torch.Tag.needs_contiguous_strides,))


def _gemm_impl(a: torch.Tensor, b: torch.Tensor, trans_b: bool = False) -> torch.Tensor:
    for name, t in (("a", a), ("b", b)):
        if not t.is_contiguous():
            raise RuntimeError(f"{NAMESPACE}.gemm: operand {name} {tuple(t.shape)} has strides {t.stride()}, not "
                               "row-major; its copy would be host work outside the simulated time")
    return _impl("gemm")(a, b, trans_b)


def _gemm_fake(a: torch.Tensor, b: torch.Tensor, trans_b: bool = False) -> torch.Tensor:
    return a.new_empty((*a.shape[:-1], b.shape[-2] if trans_b else b.shape[-1]))


_lib.impl("gemm", _gemm_impl, "CPU")
torch.library.register_fake(f"{NAMESPACE}::gemm", _gemm_fake, lib=_lib)

_lib.define("sdpa(Tensor q, Tensor k, Tensor v, Tensor? attn_mask, float? scale, bool is_causal) -> Tensor")


def _sdpa_impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None,
               scale: float | None, is_causal: bool) -> torch.Tensor:
    from backend.inductor_cpu.attention import sdpa
    return sdpa(q, k, v, attn_mask, scale, is_causal)


def _sdpa_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None,
               scale: float | None, is_causal: bool) -> torch.Tensor:
    return torch.empty_like(q)


_lib.impl("sdpa", _sdpa_impl, "CPU")
torch.library.register_fake(f"{NAMESPACE}::sdpa", _sdpa_fake, lib=_lib)

_lib.define("embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool mean) -> Tensor")


def _embedding_bag_impl(weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor,
                        mean: bool) -> torch.Tensor:
    return _impl("embedding_bag")(weight, indices, offsets, mean)


def _embedding_bag_fake(weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor,
                        mean: bool) -> torch.Tensor:
    return weight.new_empty((offsets.shape[0] - 1, weight.shape[1]))


_lib.impl("embedding_bag", _embedding_bag_impl, "CPU")
torch.library.register_fake(f"{NAMESPACE}::embedding_bag", _embedding_bag_fake, lib=_lib)


def _val(n: Any) -> Any:
    return n.meta.get("val") if isinstance(n, torch.fx.Node) else None


def _eligible(node: torch.fx.Node) -> bool:
    a, b = _val(node.args[-2]), _val(node.args[-1])
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.device.type == "cpu"
            and a.dtype == b.dtype and a.dtype in _DTYPES and a.numel() > 0 and b.numel() > 0)


class GemmToChip(CustomGraphPass):
    """mm / bmm / addmm (beta = alpha = 1) on CPU tensors -> mtia_sim.gemm (+ bias add)."""

    def __call__(self, graph: torch.fx.Graph) -> None:
        if options.enabled("small_bucketize"):
            from backend.inductor_cpu import bucketize
            bucketize.rewrite(graph)
        if options.enabled("extern_sdpa"):
            _sdpa_to_chip(graph)
        if options.enabled("extern_embedding_bag") and registered("embedding_bag"):
            _embedding_bag_to_chip(graph)
        if not (options.enabled("extern_gemm") and registered("gemm")):
            graph.lint()
            return
        aten = torch.ops.aten
        if options.enabled("triton_gemm_templates"):
            # the expert is a candidate of Inductor's GEMM autotuning (gemm_templates.py)
            _addmm_to_mm_add(graph)
            graph.lint()
            return
        gemm = getattr(torch.ops, NAMESPACE).gemm.default
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target not in (aten.mm.default, aten.bmm.default,
                                                                  aten.addmm.default):
                continue
            if node.target is aten.addmm.default and (node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1):
                continue
            if not _eligible(node):
                continue
            with graph.inserting_before(node):
                ops = []
                trans_b = False
                for i, x in enumerate(node.args[-2:]):
                    v = _val(x)
                    if i == 1 and not v.is_contiguous() and v.transpose(-1, -2).is_contiguous():
                        # b is the transpose of a row-major tensor (a weight, x^T): the program
                        # reads that tensor as it lies (gemm's trans_b), no copy
                        dims = list(range(v.dim() - 2)) + [v.dim() - 1, v.dim() - 2]
                        x = graph.call_function(aten.permute.default, (x, dims))
                        x.meta["val"] = v.transpose(-1, -2)
                        trans_b = True
                    elif not v.is_contiguous():
                        # the program reads row-major operands: the copy is a Triton kernel
                        x = graph.call_function(aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
                        x.meta["val"] = v.contiguous()
                    ops.append(x)
                new = graph.call_function(gemm, tuple(ops) + ((True,) if trans_b else ()))
                new.meta.update(node.meta)
                if node.target is aten.addmm.default:
                    out = graph.call_function(aten.add.Tensor, (new, node.args[0]))
                    out.meta.update(node.meta)
                else:
                    out = new
            node.replace_all_uses_with(out)
            graph.erase_node(node)
        graph.lint()

    def uuid(self) -> Any:
        return ("mtia_sim.GemmToChip", 5, tuple(sorted(options.activate_current().items())), tuple(sorted(_IMPLS)))


def _addmm_to_mm_add(graph: torch.fx.Graph) -> None:
    """addmm (beta = alpha = 1) on CPU tensors the expert takes -> mm + bias add: Inductor's
    autotuning of mm then weighs the expert GEMM against the Triton templates, and the bias add
    is an epilogue of whichever wins."""
    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.addmm.default or not _eligible(node):
            continue
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            continue
        with graph.inserting_before(node):
            mm = graph.call_function(aten.mm.default, tuple(node.args[-2:]))
            mm.meta.update(node.meta)
            out = graph.call_function(aten.add.Tensor, (mm, node.args[0]))
            out.meta.update(node.meta)
        node.replace_all_uses_with(out)
        graph.erase_node(node)


def _sdpa_to_chip(graph: torch.fx.Graph) -> None:
    """_scaled_dot_product_flash_attention_for_cpu -> mtia_sim.sdpa where only its output is used
    (not its logsumexp), without dropout, on shapes the kernel takes."""
    import operator

    from backend.inductor_cpu.attention import supported
    aten = torch.ops.aten
    sdpa = getattr(torch.ops, NAMESPACE).sdpa.default
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten._scaled_dot_product_flash_attention_for_cpu.default:
            continue
        q, k, v = node.args[:3]
        dropout = node.args[3] if len(node.args) > 3 else node.kwargs.get("dropout_p", 0.0)
        causal = node.args[4] if len(node.args) > 4 else node.kwargs.get("is_causal", False)
        mask, scale = node.kwargs.get("attn_mask"), node.kwargs.get("scale")
        users = list(node.users)
        if dropout or not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
            continue
        vq, vk, vv = _val(q), _val(k), _val(v)
        if not all(isinstance(t, torch.Tensor) for t in (vq, vk, vv)) or not supported(vq, vk, vv):
            continue
        if vq.device.type != "cpu":
            continue
        with graph.inserting_before(node):
            new = graph.call_function(sdpa, (q, k, v, mask, scale, bool(causal)))
            new.meta["val"] = _val(users[0]) if users else None
        for u in users:
            u.replace_all_uses_with(new)
            graph.erase_node(u)
        graph.erase_node(node)


def install() -> None:
    import torch._inductor.config as ic
    if not isinstance(ic.post_grad_custom_post_pass, GemmToChip):
        ic.post_grad_custom_post_pass = GemmToChip()


def _embedding_bag_to_chip(graph: torch.fx.Graph) -> None:
    """_embedding_bag(_forward_only) in sum or mean mode with include_last_offset, no per-sample
    weights, no padding index, where only its pooled output is used -> mtia_sim.embedding_bag."""
    import operator
    aten = torch.ops.aten
    targets = (aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
    op = getattr(torch.ops, NAMESPACE).embedding_bag.default
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in targets:
            continue
        a = embedding_bag_args(node)
        users = list(node.users)
        if not (embedding_bag_fits(a) and all(u.target is operator.getitem and u.args[1] == 0 for u in users)):
            continue
        with graph.inserting_before(node):
            new = graph.call_function(op, (a["weight"], a["indices"], a["offsets"], a["mode"] == 1))
            new.meta["val"] = _val(users[0]) if users else None
        for u in users:
            u.replace_all_uses_with(new)
            graph.erase_node(u)
        graph.erase_node(node)


_EB_NAMES = ("weight", "indices", "offsets", "scale_grad_by_freq", "mode", "sparse", "per_sample_weights",
             "include_last_offset", "padding_idx")
_EB_DEFAULTS = dict(scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                    include_last_offset=False, padding_idx=-1)


def embedding_bag_args(node: torch.fx.Node) -> dict[str, Any]:
    """An _embedding_bag(_forward_only) call's arguments by name, defaults filled in."""
    return dict(_EB_DEFAULTS, **dict(zip(_EB_NAMES, node.args)), **node.kwargs)


def embedding_bag_fits(a: dict[str, Any]) -> bool:
    """Whether the Triton embedding-bag kernel takes the call: sum or mean, no per-sample
    weights, include_last_offset, no padding index, a contiguous 2-D table on the cpu path."""
    if (a["mode"] not in (0, 1) or a["per_sample_weights"] is not None or not a["include_last_offset"]
            or a["padding_idx"] not in (-1, None)):
        return False
    w = _val(a["weight"])
    return isinstance(w, torch.Tensor) and w.device.type == "cpu" and w.dim() == 2 and w.is_contiguous()


def embedding_bag_taken(a: dict[str, Any]) -> bool:
    """Whether this module's post-grad pass will send the call to the registered kernel."""
    import torch._inductor.config as ic
    return (isinstance(ic.post_grad_custom_post_pass, GemmToChip) and registered("embedding_bag")
            and options.enabled("extern_embedding_bag") and embedding_bag_fits(a))


def uninstall() -> None:
    import torch._inductor.config as ic
    if isinstance(ic.post_grad_custom_post_pass, GemmToChip):
        ic.post_grad_custom_post_pass = None
