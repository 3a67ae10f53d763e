"""The study: workload registry, runner, result schema, regression gate, model workloads."""

from typing import Any


def compile_for_mtia(model: Any, *example_inputs: Any, **options: Any) -> Any:
    """A model through Inductor onto the simulated MTIA: (compiled model, per-kernel report).
    Documented in study/compile_mtia.py; imported lazily so `import study` stays light."""
    from study.compile_mtia import compile_for_mtia as _impl
    return _impl(model, *example_inputs, **options)
