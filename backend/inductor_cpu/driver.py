"""Driver for Inductor's `cpu` target: the MTIA driver; never auto-activated (Inductor's
generated code activates it with triton_helpers.set_driver_to_cpu())."""
from __future__ import annotations

from triton.backends.compiler import GPUTarget

from backend import driver as _mtia


class InductorCPUDriver(_mtia.MTIADriver):
    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cpu", _mtia.DEVICE.chip, 1)
