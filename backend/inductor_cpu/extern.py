"""GEMMs of Inductor graphs on the simulated chip: aten.mm / addmm / bmm as the expert GEMM.

Inductor leaves GEMMs on CPU tensors to aten (extern kernels), which run on the host and have
no simulated time. Through Inductor's post-grad custom pass (`config.post_grad_custom_post_pass`,
an extension point, not a fork) each such node becomes `mtia_sim.gemm(a, b)`, a custom op that
launches the expert GEMM program (baselines/expert/gemm.py) through backend.driver, so the
launch is simulated and recorded like Inductor's own kernels. Around it the pass keeps what the
program does not do as graph ops, so Inductor generates Triton kernels for them (simulated too):
a non-contiguous operand (a linear layer's transposed weight) is first copied contiguous, and
addmm's bias is added after the product.

Switch: `extern_gemm` (backend/inductor_cpu/options.py). Ops in the `mtia_sim` namespace run on
the simulated chip, so host-op accounting skips them (study/model_coverage.py, compile_mtia.py).
"""
from __future__ import annotations

from typing import Any

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass

from backend.inductor_cpu import options

NAMESPACE = "mtia_sim"
# dtypes the expert GEMM program takes (f32 is priced at the chip's FP32 vector rate)
_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

_lib = torch.library.Library(NAMESPACE, "DEF")
_lib.define("gemm(Tensor a, Tensor b) -> Tensor")


def _gemm_impl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    from baselines.expert.gemm import matmul
    from baselines.expert.gemm import bmm
    return bmm(a, b) if a.dim() == 3 else matmul(a, b)


def _gemm_fake(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.new_empty((*a.shape[:-1], b.shape[-1]))


_lib.impl("gemm", _gemm_impl, "CPU")
torch.library.register_fake(f"{NAMESPACE}::gemm", _gemm_fake, lib=_lib)


def _val(n: Any) -> Any:
    return n.meta.get("val") if isinstance(n, torch.fx.Node) else None


def _eligible(node: torch.fx.Node) -> bool:
    a, b = _val(node.args[-2]), _val(node.args[-1])
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.device.type == "cpu"
            and a.dtype == b.dtype and a.dtype in _DTYPES and a.numel() > 0 and b.numel() > 0)


class GemmToChip(CustomGraphPass):
    """mm / bmm / addmm (beta = alpha = 1) on CPU tensors -> mtia_sim.gemm (+ bias add)."""

    def __call__(self, graph: torch.fx.Graph) -> None:
        if not options.enabled("extern_gemm"):
            return
        aten = torch.ops.aten
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
                for x in node.args[-2:]:
                    v = _val(x)
                    if not v.is_contiguous():
                        # the program reads row-major operands: the copy is a Triton kernel
                        x = graph.call_function(aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
                        x.meta["val"] = v.contiguous()
                    ops.append(x)
                new = graph.call_function(gemm, tuple(ops))
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
        return ("mtia_sim.GemmToChip", 1, options.enabled("extern_gemm"))


def install() -> None:
    import torch._inductor.config as ic
    if not isinstance(ic.post_grad_custom_post_pass, GemmToChip):
        ic.post_grad_custom_post_pass = GemmToChip()
