"""Driver for Inductor's `cpu` target: the MTIA driver; never auto-activated (Inductor's
generated code activates it with triton_helpers.set_driver_to_cpu(), for the rest of the
process).

Its current target is the MTIA target, not `cpu`: Inductor compiles its own kernels for the
`cpu` target it names explicitly (torch/_inductor/runtime/triton_heuristics.py), while a plain
@triton.jit kernel launched after Inductor's code has run compiles for the target of the active
driver. Answering `cpu` there would compile a hand-written kernel with the options of Inductor's
path (backend/inductor_cpu/compiler.py: `persistent_invariant`) once any Inductor code had run
in the process: its cycles would depend on what ran before it."""
from __future__ import annotations

from triton.backends.compiler import GPUTarget

from backend import driver as _mtia


class InductorCPUDriver(_mtia.MTIADriver):
    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("mtia", _mtia.DEVICE.chip, 1)
