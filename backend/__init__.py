"""Triton backend for a simulated Meta MTIA 2i.

Triton imports `backend.compiler` (MTIABackend) and `backend.driver` (MTIADriver) through the
`triton.backends` entry point `mtia`; `backend.inductor_cpu` answers Inductor's `cpu` target.
"""

# Import Triton first: its backend discovery imports backend.compiler and backend.driver, which
# must not find a half-initialised backend.driver when a user imports that module first.
import triton  # noqa: E402,F401
