"""Rewrites of a multi-output op of which one output is used, after AOTAutograd.

Some ops reach Inductor's graph with outputs nobody reads, computed only in case a gradient
needs them (_linalg_svd's singular vectors under torch.compile, _embedding_bag's offset2bag,
bag sizes and argmax indices). A decomposition cannot know they are unused, so it would have to
reproduce all of them, quirks included. Inductor's post-grad custom pre-pass
(`config.post_grad_custom_pre_pass`, which runs before Inductor decomposes the functional
Triton-kernel nodes) sees the users: a rule registered here replaces a call whose only read
output is the one it computes by a function traced (Inductor's `fwd_only`, under the graph's fake
mode) into the graph in its place.

Rules are registered by the modules that own them (linalg.py, host_ops.py), each with the switch
it belongs to; the pass is set while any rule is registered, and a module's uninstall drops only
its own rules (`unregister`).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass
class Rule:
    target: Any                      # the aten overload
    output: int | None               # the one output a rewrite computes (None: the op has one)
    switch: str                      # backend/inductor_cpu/options.py switch it belongs to
    # (node, the input values) -> (function of the tensor inputs, the input nodes) or None to skip
    build: Callable[[torch.fx.Node], tuple[Callable, list[torch.fx.Node]] | None]


RULES: list[Rule] = []


def register(rule: Rule) -> None:
    """Add a rule and install the pass (idempotent)."""
    if not any(r.target is rule.target for r in RULES):
        RULES.append(rule)
    _install()


def unregister(switch: str) -> None:
    """Drop the rules of one switch's module; the pass goes once no rule is left."""
    RULES[:] = [r for r in RULES if r.switch != switch]
    if not RULES:
        _uninstall()


def only_output_users(node: torch.fx.Node, index: int) -> list[torch.fx.Node] | None:
    """The getitem users of `node` if all of them read output `index`, else None."""
    users = list(node.users)
    if users and all(u.target is operator.getitem and u.args[1] == index for u in users):
        return users
    return None


def val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def launch(kernel: Any, grid: tuple, outputs: dict[str, torch.Tensor], **args: Any) -> list[torch.Tensor]:
    """Put a Triton kernel into the graph being traced as Inductor's functional Triton-kernel
    node (the form a user's `wrap_triton` call takes once functionalized), which Inductor emits
    as a user-defined Triton kernel: `outputs` (name -> a fresh tensor) come back written, the
    tensor `args` are read, the others are constants. Used by the decompositions and rules of
    linalg.py and segments.py."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table, triton_kernel_wrapper_functional
    tensors = {k: v for k, v in {**args, **outputs}.items() if isinstance(v, torch.Tensor)}
    constants = {k: v for k, v in args.items() if not isinstance(v, torch.Tensor)}
    out = triton_kernel_wrapper_functional(
        kernel_idx=kernel_side_table.add_kernel(kernel), constant_args_idx=kernel_side_table.add_constant_args(constants),
        grid=[grid], tma_descriptor_metadata={}, kwargs=tensors, tensors_to_clone=list(outputs))
    return [out[k] for k in outputs]


def _splice(graph: torch.fx.Graph, node: torch.fx.Node, users: list[torch.fx.Node] | None, fn: Callable,
            inputs: list[torch.fx.Node]) -> None:
    from torch._guards import detect_fake_mode
    from torch._inductor.pattern_matcher import fwd_only
    vals = [val(n) for n in inputs]
    with detect_fake_mode(tuple(vals)):
        gm = fwd_only(fn, vals)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    with graph.inserting_before(node):
        out = graph.graph_copy(gm.graph, dict(zip(placeholders, inputs)))
    read = node.all_input_nodes
    if users is None:
        node.replace_all_uses_with(out)
    else:
        for u in users:
            u.replace_all_uses_with(out)
            graph.erase_node(u)
    graph.erase_node(node)
    for n in read:  # an input only the replaced call read (a rule that reads through it: a cat)
        if n.op == "call_function" and not n.users and not n.is_impure():
            graph.erase_node(n)


def rewrite(graph: torch.fx.Graph) -> None:
    import torch._inductor.config as ic

    from backend.inductor_cpu import options
    if ic.cpu_backend != "triton":
        return
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        for rule in RULES:
            if node.target is not rule.target or not options.enabled(rule.switch):
                continue
            if rule.output is None:
                users, ok = None, bool(node.users)
            else:
                users = only_output_users(node, rule.output)
                ok = users is not None
            built = rule.build(node) if ok else None
            if built is not None:
                _splice(graph, node, users, *built)
            break


from torch._inductor.custom_graph_pass import CustomGraphPass  # noqa: E402


class OneOutputPass(CustomGraphPass):
    """Inductor's post-grad custom pre-pass: `rewrite`."""

    def __call__(self, graph: torch.fx.Graph) -> None:
        rewrite(graph)

    def uuid(self) -> Any:
        from backend.inductor_cpu import options
        return ("mtia-one-output", 1, tuple(sorted(options.activate_current().items())),
                tuple(str(r.target) for r in RULES))


def _install() -> None:
    import torch._inductor.config as ic
    if ic.post_grad_custom_pre_pass is None:
        ic.post_grad_custom_pre_pass = OneOutputPass()


def _uninstall() -> None:
    import torch._inductor.config as ic
    if isinstance(ic.post_grad_custom_pre_pass, OneOutputPass):
        ic.post_grad_custom_pre_pass = None
