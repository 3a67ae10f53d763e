"""`special_functions`: Inductor's special functions as Triton code on the chip.

Inductor has no Triton expression for digamma, polygamma, the Hurwitz zeta function, the
exponentially scaled Bessel functions i0e / i1e, K0 / K1 (plain and scaled), the spherical
Bessel j0, the Airy function Ai, ndtri, the regularized incomplete gamma functions and the orthogonal polynomials
(Chebyshev T/U/V/W and their shifted forms, Hermite H/He, Laguerre L, Legendre P): on a Triton
device its lowering (torch/_inductor/lowering.py, `triton_fallback`) hands them to aten, so on
this path they run on the host. With the switch on, a call on the cpu -> MTIA path is lowered
as a pointwise IR node instead (fusing with its neighbours as any pointwise op), whose Triton
code calls a `@triton.jit` function of backend/inductor_cpu/special_math.py.

Two extension points of Inductor:

- the lowering table (`torch._inductor.lowering.lowerings`): each op's registered lowering is
  wrapped; on the chip with the switch on, the op becomes `make_pointwise(ops.<name>)` with the
  op's own type promotion and broadcasting (as `register_pointwise` builds it for an op that has
  a Triton expression); otherwise the original lowering (the aten fallback) runs;
- Inductor's Triton overrides (`TritonOverrides.<name>`, the expression an `ops.<name>` becomes
  in a Triton kernel): `special_math.<fn>(args)`. The generated kernel reaches the module through
  a line `from backend.inductor_cpu import special_math as mtia_specialN` that the override adds
  to the kernel's helper functions (`TritonKernel.helper_functions`, spliced into the kernel's
  source before the kernel): the kernel's source names the module itself, so it compiles the
  same in a fresh process, from Inductor's caches and with its async compile.
"""
from __future__ import annotations

from typing import Any, Callable

# Inductor op name (torch/_inductor/codegen/common.py, pointwise_overrides_data) -> the
# special_math function its Triton expression calls (the op's arguments in the ops call's order),
# and the constant arguments that follow them (a polynomial's kind, a Bessel function's order)
FUNCTIONS: dict[str, tuple[str, str]] = {
    "digamma": ("digamma", ""),
    "polygamma": ("polygamma", ""),
    "zeta": ("zeta", ""),
    "i0e": ("i0e", ""),
    "i1e": ("i1e", ""),
    "ndtri": ("ndtri", ""),
    "modified_bessel_k0": ("bessel_k", "0, False"),
    "modified_bessel_k1": ("bessel_k", "1, False"),
    "scaled_modified_bessel_k0": ("bessel_k", "0, True"),
    "scaled_modified_bessel_k1": ("bessel_k", "1, True"),
    "spherical_bessel_j0": ("spherical_j0", ""),
    "airy_ai": ("airy_ai", ""),
    "igamma": ("incomplete_gamma", "False"),
    "igammac": ("incomplete_gamma", "True"),
    "gammainc": ("incomplete_gamma", "False"),
    "gammaincc": ("incomplete_gamma", "True"),
    "chebyshev_polynomial_t": ("chebyshev", "0, False"),
    "chebyshev_polynomial_u": ("chebyshev", "1, False"),
    "chebyshev_polynomial_v": ("chebyshev", "2, False"),
    "chebyshev_polynomial_w": ("chebyshev", "3, False"),
    "shifted_chebyshev_polynomial_t": ("chebyshev", "0, True"),
    "shifted_chebyshev_polynomial_u": ("chebyshev", "1, True"),
    "shifted_chebyshev_polynomial_v": ("chebyshev", "2, True"),
    "shifted_chebyshev_polynomial_w": ("chebyshev", "3, True"),
    "hermite_polynomial_h": ("hermite", "True"),
    "hermite_polynomial_he": ("hermite", "False"),
    "laguerre_polynomial_l": ("laguerre_l", ""),
    "legendre_polynomial_p": ("legendre_p", ""),
}

MODULE = "backend.inductor_cpu.special_math"

_ORIGINAL_LOWERINGS: dict[Any, Callable] = {}
_ORIGINAL_OVERRIDES: dict[str, Any] = {}


def _module_name() -> str:
    """The name under which the kernel being generated imports special_math (one import line
    per kernel: HelperFunctions keeps one copy of each text)."""
    from torch._inductor.virtualized import V
    package, _, module = MODULE.rpartition(".")
    return V.kernel.helper_functions.add(f"from {package} import {module} as {{name}}", base_name="mtia_special")


def _override(fn: str, constants: str) -> Callable[..., str]:
    def expr(*args: Any) -> str:
        return f"{_module_name()}.{fn}({', '.join([str(a) for a in args] + ([constants] if constants else []))})"
    expr.__name__ = fn
    return expr


def _on_chip(args: tuple) -> bool:
    import torch._inductor.config as ic
    from torch._inductor import ir
    if ic.cpu_backend != "triton":
        return False
    devices = [a.get_device() for a in args if isinstance(a, ir.IRNode)]
    return bool(devices) and all(d is not None and d.type == "cpu" for d in devices)


def _chip_lowering(op: Any, name: str, original: Callable) -> Callable:
    from torch._inductor import lowering as L
    from torch._inductor.codegen.common import pointwise_overrides_data

    from backend.inductor_cpu import options
    # the lowering register_pointwise would build for an op with a Triton expression, kept out
    # of the lowering table (a scratch dict) so that the dispatch below stays in charge
    pointwise = L.register_lowering(op, broadcast=True, type_promotion_kind=pointwise_overrides_data[name].type_promotion_kind,
                                    lowering_dict={})(L.make_pointwise(L.ops_wrapper(name)))

    def lowering(*args: Any, **kwargs: Any) -> Any:
        if options.enabled("special_functions") and _on_chip(args):
            return pointwise(*args, **kwargs)
        return original(*args, **kwargs)
    lowering.mtia_original = original  # type: ignore[attr-defined]
    return lowering


def install() -> None:
    """Wrap the lowerings of FUNCTIONS' ops and give them Triton expressions (idempotent)."""
    import torch
    from torch._inductor import lowering as L
    from torch._inductor.codegen.common import pointwise_overrides_data
    from torch._inductor.codegen.triton import TritonOverrides
    for name, (fn, constants) in FUNCTIONS.items():
        if name not in _ORIGINAL_OVERRIDES:
            _ORIGINAL_OVERRIDES[name] = TritonOverrides.__dict__.get(name)
            setattr(TritonOverrides, name, staticmethod(_override(fn, constants)))
        packet = getattr(torch.ops.aten, pointwise_overrides_data[name].name, None)
        if packet is None:
            continue
        for op in [getattr(packet, o) for o in packet.overloads()]:
            current = L.lowerings.get(op)
            if current is None or hasattr(current, "mtia_original"):
                continue
            _ORIGINAL_LOWERINGS[op] = current
            L.lowerings[op] = _chip_lowering(op, name, current)


def uninstall() -> None:
    from torch._inductor import lowering as L
    from torch._inductor.codegen.triton import TritonOverrides
    for op, original in _ORIGINAL_LOWERINGS.items():
        L.lowerings[op] = original
    _ORIGINAL_LOWERINGS.clear()
    for name, original in _ORIGINAL_OVERRIDES.items():
        if original is None:
            delattr(TritonOverrides, name)
        else:
            setattr(TritonOverrides, name, original)
    _ORIGINAL_OVERRIDES.clear()
