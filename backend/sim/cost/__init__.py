"""Engine cost: the one place the time an instruction takes on its engine is computed.

The timing model (backend/sim/timing.py) decides when each executed instruction runs; this
package decides how long it occupies its engine and what it moves. The compiler's and the
expert library's cost estimates read the same figures. Every number comes from the chip config
(backend/configs/<chip>.toml); nothing here is specific to one chip.

Where things live:
  inputs.py  the cost inputs an executed instruction reports, one typed record per engine
             (TypedDicts: plain dicts at run time), and their constructors. The ISA's
             semantics (isa.py, memory.py), the executor's timing-only stand-ins and the fast
             paths (fastpath.py) all build them there. Also each engine's index (their order is
             the program format's, backend/program.py) and the instruction kinds a rule is
             registered for (`kind_of(op)`).
  rules.py   `ChipModel` (the config as per-cycle figures) and the rule registry: one rule per
             kind (`@rule(K_...)`), cost inputs -> engine cycles, adding the bytes moved per
             memory level and the flops done to the program's tally. `Pricer(model, levels)`
             binds a launch's rules once (the scheduler calls one per event);
             `ChipModel.cycles(kind, inputs)` prices one instruction alone.
  levels.py  which memory level a launch's reads come from, and each PE's share of a level.

Per-instruction data: the scheduler's preparation (backend/sim/pe_timing.py `prepare`, which
lists them) caches each instruction's kind (`ins._tk`, from `kind_of`) and engine index
(`ins._te`) on the Instr, next to its structural scheduling data (`_tr`, `_tw`, ...); the
executor caches its runner there (`_run`, `_mode`, `_reads`), the fast path its descriptor
plan (`_dplan`). Attributes rather than a side table keyed per instruction: Instr is not
hashable, and a table keyed by id(ins) measured about 90 ns slower per event (the hot loop
reads them for every executed event, about 1.5 us each).

Engine occupancy is the engine's setup (`fixed_cycles` of its config section) plus its
throughput time; the result becomes readable `latency_cycles` later (timing.py). Per kind:
  - Scalar and control ops: `scalar_cycles` on the control core, blocking issue; a loop trip
    `loop_cycles`; dispatching a tile instruction to its engine queue costs the control core
    `issue_cycles` (command_processor section).
  - DPE: 2 * batch * m' * n' * k' / flops_per_cycle[in_dtype], m, n padded to tile_m / tile_n and
    k to tile_k_bytes of input (INT8 2x BF16 from the table; FP32 at the vector-core rate;
    a dtype the table lacks at BF16's rate).
  - SIMD: fixed * passes + elements / elements_per_cycle (simd.matmul: one pass per k over the
    [m, n] result; simd.reduce: a pairwise tree of passes). SFU: elements / elements_per_cycle.
    RE: elements * combine ops of the region / elements_per_cycle.
  - MLU: bytes / bytes_per_cycle. A view (broadcast or unit-dim reshape, `view=True`) moves
    nothing and costs nothing, not even issue: its readers read, and wait for, its source.
  - DMA: every contiguous run is padded to whole `burst_bytes` bursts (+ `misaligned_extra_bytes`
    when the start is not 32-byte aligned); the transfer takes max(bytes at each level it
    crosses / that level's share, runs * run_cycles (gather_run_cycles for index-driven DMA)).
    A masked index-driven DMA counts each run on the lanes it moves (a 20-index bag in a 64-lane
    run is one 160-byte run) and a run with none as no run.
    A load crosses the off-chip level with its off-chip fraction of the bytes and the SRAM with
    all of them; a store crosses the SRAM, and the off-chip level too when writes spill.
  - A program-invariant tile a PE already holds (assumptions.held_tiles = "held", timing.py):
    the DMA's setup only.
  - Scalar fallback (scalar.load/store): scalar_cycles + `access_cycles` per element, blocking
    the control core.
  - Atomics: `atomic_cycles` per element on DMA_OUT.

Memory levels (levels.py):
  - Shared bandwidth: the on-chip SRAM and the off-chip level are shared by the PEs active at
    once; each of the n_active = min(n_pe, programs) PEs gets bandwidth / n_active (a static,
    deterministic share), capped by its local-memory bandwidth.
  - Which level a read comes from: the first read of each byte of a tensor comes from off-chip,
    re-reads hit the SRAM (LLC) while the launch's footprint fits `sram.llc_bytes`. Applied as a
    per-tensor fraction, spread evenly over all its reads: f = unique bytes / bytes read (unique
    bytes = the tensor size, or the distinct tiles read when the size is unknown); if the
    footprint (unique bytes read + the sizes of the tensors written) exceeds the LLC, re-reads
    hit with probability llc_bytes / footprint. Spreading (rather than charging the first
    reader) keeps the result independent of program order, as PEs in flight together share
    the misses. `resident=` names tensors already in SRAM (`True`, the `resident` memory
    regime: every input, while the footprint fits the LLC).
  - Writes go to the SRAM; their write-back to off-chip is counted in bytes (lpddr_write) but
    is off the critical path while the footprint fits the LLC (the next kernel reads the
    result on-chip), on it (at the off-chip share) otherwise. This is what lets a 2048^3 GEMM
    reach the >92% of peak ISCA'25 measured; study/roofline.py counts bytes the same way.
    `writeback=True` (the `writeback` memory regime) or `assumptions.llc_output_rule =
    "writeback"` puts the write-back on the critical path always.
  - Index-driven DMA (gathers) gets no re-read credit: every gathered byte counts as a first
    read, since which rows repeat depends on the indices (embedding tables are mostly larger
    than the LLC anyway).

Estimates (before anything runs) use the same figures:
  - the lowering's FP32 dot, SIMD or DPE (backend/lowering.py): `ChipModel.cycles` of the two
    instructions, i.e. the rules themselves;
  - the compiler's issue order (backend/passes/schedule.py): each op's throughput term alone
    (`cycles(..., setup=False)`), a dot at BF16's rate unpadded (`dpe_time`), a load at a PE's
    off-chip share of all PEs (`shares`): an ordering estimate, coarser than the rules on
    purpose (its choices, and so the study's cycles, are pinned);
  - the expert GEMM's tile shape (baselines/expert/gemm.py): `dpe_time` of the tile's flops
    unpadded plus the DPE's setup against the A and B tiles' bytes at a PE's SRAM share plus the
    DMA's setup; the expert embedding bag's DPE layout (the DPE rule); the expert jagged
    kernels' row rates (`shares`; the off-chip share not capped by local memory) and softmax
    chunk cost (throughput terms).
Where an estimate is coarser than the rule it approximates (unpadded, without setup, one
bandwidth share), it is because the choices it makes were tuned that way: pricing them with
the full rules would change those choices, and so the study's cycles.
"""
from backend.sim.cost.inputs import (ENGINE_INDEX, K_ATOMIC, K_DMA_IN, K_DMA_OUT, K_DPE, K_LOOP,
                                     K_MLU, K_RE, K_SCALAR, K_SCALAR_LOAD, K_SCALAR_STORE, K_SFU, K_SIMD, N_KINDS,
                                     AtomicInputs, CostInputs, DmaInputs, LayoutInputs, LoopInputs, MatmulInputs,
                                     ReduceInputs, VectorInputs, atomic_inputs, dma_extent, dma_inputs, fma_inputs,
                                     indexed_dma_inputs, kind_of, layout_inputs, matmul_inputs, reduce_inputs,
                                     scalar_access_inputs, simd_matmul_inputs, tree_reduce_inputs, vector_inputs)
from backend.sim.cost.levels import launch_levels, read_fractions
from backend.sim.cost.rules import RULES, TALLY, ZERO_TALLY, ChipModel, Levels, Pricer, Rule, rule

__all__ = [
    "ENGINE_INDEX", "K_ATOMIC", "K_DMA_IN", "K_DMA_OUT", "K_DPE", "K_LOOP", "K_MLU", "K_RE",
    "K_SCALAR", "K_SCALAR_LOAD", "K_SCALAR_STORE", "K_SFU", "K_SIMD", "N_KINDS", "AtomicInputs", "CostInputs",
    "DmaInputs", "LayoutInputs", "LoopInputs", "MatmulInputs", "ReduceInputs", "VectorInputs", "atomic_inputs",
    "dma_extent", "dma_inputs", "fma_inputs", "indexed_dma_inputs", "kind_of", "layout_inputs", "matmul_inputs",
    "reduce_inputs", "scalar_access_inputs", "simd_matmul_inputs", "tree_reduce_inputs", "vector_inputs",
    "launch_levels", "read_fractions", "RULES", "TALLY", "ZERO_TALLY", "ChipModel", "Levels", "Pricer", "Rule", "rule",
]
