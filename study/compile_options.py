"""Backend compile options for the ablation study (F4), passed without touching the kernels.

A named option set (`ABLATIONS`) is activated with `compile_options(...)`. It does two things:

1. exports `MTIA_COMPILE_OPTIONS` (a JSON object, e.g. {"structured_dma": false}) so the
   backend's `parse_options` can apply it as overrides to every compile in the process,
   including Inductor's, which bypass `JITFunction.run`;
2. until the backend reads that variable, injects the same keyword arguments into every
   `JITFunction.run` call (what `kernel[grid](..., structured_dma=False)` does), which also
   puts them into Triton's in-memory cache key.

The runner activates one option set per worker process, before the first compile, so no
process ever holds kernels compiled under two sets.
"""
from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Iterator

ENV_VAR = "MTIA_COMPILE_OPTIONS"

ABLATIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "no_structured_dma": {"structured_dma": False},
    "no_reduction_engine": {"use_reduction_engine": False},
    "no_index_dma": {"index_dma": False},
    "single_buffer": {"num_stages": 1},
}


def options_for(label: str) -> dict[str, Any]:
    if label not in ABLATIONS:
        raise ValueError(f"unknown compile option set '{label}'; known: {', '.join(ABLATIONS)}")
    return dict(ABLATIONS[label])


def from_env() -> dict[str, Any]:
    """The active overrides, as the backend should read them."""
    text = os.environ.get(ENV_VAR, "")
    return json.loads(text) if text else {}


_installed: dict[str, Any] = {}


def _patch_jit_run() -> None:
    from triton.runtime.jit import JITFunction
    if "run" in _installed:
        return
    original = JITFunction.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(from_env())  # the ablation wins over a kernel's own num_stages
        return original(self, *args, **kwargs)

    _installed["run"] = original
    JITFunction.run = run


def activate(label: str) -> dict[str, Any]:
    """Compile everything from now on in this process with the named option set."""
    opts = options_for(label)
    if opts:
        os.environ[ENV_VAR] = json.dumps(opts, sort_keys=True)
        _patch_jit_run()
    else:
        os.environ.pop(ENV_VAR, None)
    return opts


@contextlib.contextmanager
def compile_options(label: str) -> Iterator[dict[str, Any]]:
    """Compile everything inside the block with the named option set (kernels compiled inside
    stay in Triton's in-memory cache under their options; see the module note)."""
    old = os.environ.get(ENV_VAR)
    opts = activate(label)
    try:
        yield opts
    finally:
        if old is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = old
