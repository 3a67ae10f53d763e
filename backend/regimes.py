"""Memory regimes: where a launch's inputs start and what happens to its outputs.

The chip config says what the memory system is; a regime says what a kernel finds in it, which
no config can: a kernel in the middle of a model reads activations the previous layer left in
the on-chip SRAM, a kernel benchmarked alone reads them from LPDDR. The driver (and the expert
library's launch, through it) prices every launch in the regime selected with `MTIA_REGIME` or
`backend.driver.set_regime(name)`, so Triton and the expert are priced alike.

- `cold` (the default; what every result before the regime axis measured): inputs come from
  LPDDR on first read; outputs stay in the SRAM while the launch's footprint fits the LLC
  (write-back off the critical path), as the chip's `assumptions.llc_output_rule` says.
- `resident`: activations resident between layers: every input is already in the SRAM (while
  the footprint fits the LLC; a larger launch reads cold), outputs kept as in `cold`.
- `writeback`: inputs cold; every output is written back to LPDDR on the critical path.

A regime says where a call's own inputs start. Within one call of several launches (a workload's
implementation, a compiled model: backend.driver.shared_llc), a later launch also finds in the
SRAM what the call's earlier launches read or wrote, while the LLC holds it
(assumptions.llc_across_launches = "kept", the default; "cold" prices every launch as if
benchmarked alone).
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_REGIME = "cold"
ENV_VAR = "MTIA_REGIME"


@dataclass(frozen=True)
class Regime:
    name: str
    inputs: str    # "cold": from LPDDR on first read; "resident": already in the on-chip SRAM
    outputs: str   # "kept": the chip's llc_output_rule (kept while the footprint fits); "writeback": always
    description: str

    @property
    def inputs_resident(self) -> bool:
        return self.inputs == "resident"

    @property
    def writeback(self) -> bool:
        return self.outputs == "writeback"


REGIMES: dict[str, Regime] = {r.name: r for r in (
    Regime("cold", "cold", "kept", "inputs cold in LPDDR, outputs kept in SRAM while the footprint fits"),
    Regime("resident", "resident", "kept", "activations resident between layers: inputs and outputs in SRAM"),
    Regime("writeback", "cold", "writeback", "inputs cold, outputs written back to LPDDR on the critical path"),
)}


def get_regime(name: str) -> Regime:
    if name not in REGIMES:
        raise ValueError(f"unknown memory regime '{name}'; known: {', '.join(REGIMES)}")
    return REGIMES[name]
