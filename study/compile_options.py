"""Backend compile options for the ablation study (F4), passed without touching the kernels.

A named option set (`ABLATIONS`) is activated with `activate(...)`: it exports
`MTIA_OPTIONS` ("structured_dma=0,num_stages=1"), which the backend's `parse_options` applies
as overrides to every compile in the process, Inductor's included, and which is part of
Triton's cache key. The runner activates one option set per worker process.

Option sets named `inductor_no_*` switch off one chip-aware Inductor enhancement
(backend/inductor_cpu/options.py) instead, through `MTIA_INDUCTOR`; they change only what the
`inductor` implementation compiles; `inductor_no_minmax_idiom` switches off a backend pass that
only Inductor's code needs, and is measured on the same rows. (The `extern_*` switches are not ablated here: off, the op
runs on the host and the row is an error, not a slower time; T3 shows them.)
"""
from __future__ import annotations

import os
from typing import Any

ENV_VAR = "MTIA_OPTIONS"  # read by backend.compiler.env_options
INDUCTOR_ENV_VAR = "MTIA_INDUCTOR"  # read by backend.inductor_cpu.options.activate
# the chip-aware Inductor switches an option set may turn off (backend/inductor_cpu/options.py)
INDUCTOR_SWITCHES = ("nd_tiling", "pointwise_blocks", "pointwise_cat", "persistent_reductions", "split_reductions",
                     "small_bucketize", "reduction_rows", "persistent_invariant", "constant_tables")

ABLATIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "no_structured_dma": {"structured_dma": False},
    "no_reduction_engine": {"use_reduction_engine": False},
    "no_index_dma": {"index_dma": False},
    "no_transposed_dma": {"transposed_dma": False},
    "no_dense_strided_dma": {"dense_strided_dma": False},
    "no_repeat_dma": {"repeat_dma": False},
    "single_buffer": {"num_stages": 1},
    "no_software_pipeline": {"software_pipeline": False},
    "no_program_overlap": {"pipeline_programs": False},
    # the persistent-program hint of the triton_ext kernels (plain kernels never set it);
    # kernels calling mtia.pe_id() stay persistent: their work split depends on it
    "no_persistent": {"persistent": False},
    **{f"inductor_no_{k}": {k: False} for k in INDUCTOR_SWITCHES},
    # a backend pass for the spelling of min/max in Inductor's helpers (backend/passes/idioms.py);
    # no hand-written kernel uses it (the gate's cycles did not move when it landed), so like the
    # Inductor switches it is measured on the inductor rows only
    "inductor_no_minmax_idiom": {"minmax_idiom": False},
    # Inductor's cat / stack spelling (backend/passes/idioms.py): measured on MX4 dequantise
    # (study/suites.py ABLATION_EXTRA), whose stack of two nibbles it serves
    "inductor_no_cat_idiom": {"cat_idiom": False},
    # torch's round-half-away spelling (floor / ceil / select) as trunc(y + copysign(0.5, y)):
    # measured on INT8 quantise (ABLATION_EXTRA), whose reference writes it
    "inductor_no_round_idiom": {"round_idiom": False},
    # small-range integer chains as tables (backend/passes/tabulate.py): a backend pass for every
    # kernel; none of the cross-section has such a chain, MX4 dequantise does
    "no_tabulate": {"tabulate": False},
    # a gather bounded by Inductor's index asserts to a small span, read densely and gathered by
    # the MLU (backend/passes/structure.py): measured on dot interaction (ABLATION_EXTRA), whose
    # lower-triangle gather it serves; no hand-written kernel asserts its indices
    "no_table_dma": {"table_dma": False},
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
    for var, part in ((ENV_VAR, {k: v for k, v in opts.items() if k not in INDUCTOR_SWITCHES}),
                      (INDUCTOR_ENV_VAR, {k: v for k, v in opts.items() if k in INDUCTOR_SWITCHES})):
        if part:
            os.environ[var] = to_env(part)
        else:
            os.environ.pop(var, None)
    from backend.inductor_cpu import options as inductor_options
    inductor_options.activate()  # re-read MTIA_INDUCTOR now (a forked worker inherits the parent's)
    return opts
