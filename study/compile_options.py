"""Backend compile options for the ablation study (F4), passed without touching the kernels.

A named option set (`ABLATIONS`) is activated with `activate(...)`: it exports
`MTIA_OPTIONS` ("structured_dma=0,num_stages=1"), which the backend's `parse_options` applies
as overrides to every compile in the process, Inductor's included, and which is part of
Triton's cache key. The runner activates one option set per worker process.
"""
from __future__ import annotations

import os
from typing import Any

ENV_VAR = "MTIA_OPTIONS"  # read by backend.compiler.env_options

ABLATIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "no_structured_dma": {"structured_dma": False},
    "no_reduction_engine": {"use_reduction_engine": False},
    "no_index_dma": {"index_dma": False},
    "single_buffer": {"num_stages": 1},
    "no_software_pipeline": {"software_pipeline": False},
    "no_program_overlap": {"pipeline_programs": False},
    # the persistent-program hint of the triton_ext kernels (plain kernels never set it);
    # kernels calling mtia.pe_id() stay persistent: their work split depends on it
    "no_persistent": {"persistent": False},
}


def options_for(label: str) -> dict[str, Any]:
    if label not in ABLATIONS:
        raise ValueError(f"unknown compile option set '{label}'; known: {', '.join(ABLATIONS)}")
    return dict(ABLATIONS[label])


def to_env(opts: dict[str, Any]) -> str:
    return ",".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in sorted(opts.items()))


def activate(label: str) -> dict[str, Any]:
    """Compile everything from now on in this process with the named option set."""
    opts = options_for(label)
    if opts:
        os.environ[ENV_VAR] = to_env(opts)
    else:
        os.environ.pop(ENV_VAR, None)
    return opts
