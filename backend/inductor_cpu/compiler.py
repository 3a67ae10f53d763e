"""Compiler for Inductor's `cpu` target: the MTIA backend under another target name."""
from __future__ import annotations

from triton.backends.compiler import GPUTarget

from backend import compiler as _mtia


class InductorCPUBackend(_mtia.MTIABackend):
    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == "cpu"

    def parse_options(self, opts: dict) -> _mtia.MTIAOptions:
        opts = dict(opts)
        # Inductor's target carries a CPU "arch"; the chip is the driver's current one
        from backend.driver import DEVICE
        opts["arch"] = DEVICE.chip
        from backend.inductor_cpu import options
        opts["persistent_invariant"] = options.enabled("persistent_invariant")
        return super().parse_options(opts)
