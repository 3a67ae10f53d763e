"""Triton backend for a simulated Meta MTIA 2i.

Triton imports `backend.compiler` (MTIABackend) and `backend.driver` (MTIADriver) through the
`triton.backends` entry point `mtia`; `backend.inductor_cpu` answers Inductor's `cpu` target.
"""
