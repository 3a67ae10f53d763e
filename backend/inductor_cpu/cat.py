"""`pointwise_cat`: a concatenation (or stack) feeding pointwise code is fused into that code.

Inductor lowers `aten.cat` (and `stack`, which it decomposes into a cat of unsqueezed inputs)
either as a ConcatKernel, which computes each input into its slice of a materialised output,
or as a pointwise "cat" whose every element selects the input it comes from, which then fuses
into the consumer. On a `cpu` device Inductor always takes the ConcatKernel (its C++ code does
not vectorise the select, lowering.py says); on the chip that costs a round trip through memory
and, for a stack, stores of stride 2 (MX4 dequantisation unpacks each byte's two nibbles with
`torch.stack([p & 15, p >> 4], 1)`: one 32-byte burst per 4-byte element). With the switch on,
a cat on the cpu -> MTIA path is lowered as a pointwise cat when it can fuse:

- 2 to `config.max_pointwise_cat_inputs` inputs, each an unrealised pointwise computation
  (not a buffer already in memory: copying a buffer is what the ConcatKernel does best),
  none of them read by anything else (a pointwise cat would compute it twice), none reading
  a reduction (it would be recomputed per element);
- every user of the cat is pointwise (through views): the cat is consumed elementwise, so it
  never exists in memory. A cat returned as is keeps the ConcatKernel.

Otherwise, and with the switch off, Inductor's own lowering runs. Installed through Inductor's
lowering table (`torch._inductor.lowering.lowerings`), wrapping the registered lowering.

A narrowing conversion of a cat (`torch.cat([...]).to(torch.bfloat16)`: an FP32 computation
written at a 16-bit model's dtype, the study's bf16 RoPE) is moved into the cat's inputs
first, `cat([a.to(bf16), b.to(bf16)])`, by a rule of the post-grad pass (splice.py): the same
values, since the conversion is elementwise. Left where it is, the conversion is the cat's one
pointwise user, so the cat is fused into it as a select that computes every input for every
element (RoPE's two rotated halves: each half's loads and arithmetic twice); moved, each input
is computed into its slice of the output once, at the narrow dtype.
"""
from __future__ import annotations

from typing import Any, Callable

_ORIGINAL: dict[Any, Callable] = {}


def _fusable(inputs: list) -> bool:
    import torch._inductor.config as ic
    from torch._inductor import ir
    from torch._inductor.utils import is_pointwise_use
    from torch._inductor.virtualized import V

    node = V.current_node
    if node is None or not 2 <= len(inputs) <= ic.max_pointwise_cat_inputs:
        return False

    def unwrapped(x: Any) -> Any:
        while isinstance(x, (ir.TensorBox, ir.StorageBox)) or (isinstance(x, ir.BaseView)
                                                              and not isinstance(x, ir.ReinterpretView)):
            x = x.data
        return x

    def reads_reduction(p: Any) -> bool:
        for name in p.get_read_names():
            buf = V.graph.get_buffer(name)
            if isinstance(buf, ir.ComputedBuffer) and isinstance(buf.data, ir.Reduction):
                return True
        return False

    if not all(isinstance(unwrapped(x), ir.Pointwise) and not reads_reduction(unwrapped(x)) for x in inputs):
        return False
    fx_inputs = node.args[0] if isinstance(node.args[0], (list, tuple)) else []
    if len(fx_inputs) != len(inputs) or any(len(getattr(a, "users", ())) > 1 for a in fx_inputs):
        return False
    return bool(node.users) and all(is_pointwise_use(u) for u in node.users)


def _chip_cat(original: Callable) -> Callable:
    def cat(inputs: list, dim: int = 0) -> Any:
        import torch._inductor.config as ic
        from torch._inductor import lowering as L

        from backend.inductor_cpu import options
        on_chip = ic.cpu_backend == "triton" and inputs and inputs[0].get_device().type == "cpu"
        if on_chip and options.enabled("pointwise_cat"):
            dim = L._validate_dim(inputs[0], dim, 0)
            dtype = L.get_promoted_dtype(*inputs, type_promotion_kind=L.ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
            promoted = [L.to_dtype(x, dtype) for x in inputs]
            if _fusable(promoted):
                return L.pointwise_cat(promoted, dim)
        return original(inputs, dim)
    cat.mtia_original = original  # type: ignore[attr-defined]
    return cat


def _cast_through_cat(node: Any) -> tuple[Callable, list] | None:
    """Splice rule for convert_element_type(cat(xs, dim), dtype), the cat read by nothing else
    and the conversion narrowing a float: the function cat([x.to(dtype) ...], dim) of xs."""
    import torch

    from backend.inductor_cpu.splice import val
    src = node.args[0]
    dtype = node.args[1] if len(node.args) > 1 else node.kwargs.get("dtype")
    if (not isinstance(src, torch.fx.Node) or src.target is not torch.ops.aten.cat.default
            or len(src.users) != 1 or not isinstance(dtype, torch.dtype)):
        return None
    xs = src.args[0]
    dim = src.args[1] if len(src.args) > 1 else src.kwargs.get("dim", 0)
    wide = val(src)
    if (wide is None or not wide.dtype.is_floating_point or not dtype.is_floating_point
            or dtype.itemsize >= wide.dtype.itemsize or not all(isinstance(x, torch.fx.Node) for x in xs)):
        return None

    def narrowed_cat(*parts: Any) -> Any:
        return torch.cat([p.to(dtype) for p in parts], dim)
    return narrowed_cat, list(xs)


def install() -> None:
    import torch
    from torch._inductor import lowering as L

    from backend.inductor_cpu import splice
    splice.register(splice.Rule(torch.ops.prims.convert_element_type.default, None, "pointwise_cat",
                                _cast_through_cat))
    op = torch.ops.aten.cat.default
    current = L.lowerings[op]
    if not hasattr(current, "mtia_original"):
        _ORIGINAL[op] = current
        L.lowerings[op] = _chip_cat(current)


def uninstall() -> None:
    from torch._inductor import lowering as L

    from backend.inductor_cpu import splice
    splice.unregister("pointwise_cat")
    for op, original in _ORIGINAL.items():
        L.lowerings[op] = original
    _ORIGINAL.clear()
