"""Cost inputs: what an executed instruction reports for pricing, one typed record per engine.

Every instruction's semantics (backend/sim/isa.py, memory.py), its timing-only stand-in
(executor.py) and its fast path (fastpath.py) build these through the constructors below, so
each figure is derived in one place. They are TypedDicts: plain dicts at run time (building
and reading them is the hottest part of the simulator), typed for the reader and the checker.
The rules that price them are in rules.py.

Also here: each engine's index, and the instruction kinds a rule is registered for (small ints:
the scheduler dispatches on them).
"""
from __future__ import annotations

import math
from typing import Any, NotRequired, TypedDict

import torch

from backend.program import ENGINES

# An engine's index in the program format's ENGINES (engine_busy and the rules' per-engine
# figures are indexed by it)
ENGINE_INDEX = {e: i for i, e in enumerate(ENGINES)}

# Instruction kinds: one cost rule each (rules.py). The kinds below K_DMA_IN move no memory.
(K_SCALAR, K_LOOP, K_DPE, K_SIMD, K_SFU, K_RE, K_MLU, K_DMA_IN, K_DMA_OUT, K_ATOMIC, K_SCALAR_LOAD,
 K_SCALAR_STORE) = range(12)
N_KINDS = 12

_PREFIX_KIND = {"dpe": K_DPE, "simd": K_SIMD, "sfu": K_SFU, "re": K_RE, "mlu": K_MLU,
                "dma_in": K_DMA_IN, "dma_out": K_DMA_OUT}


def kind_of(op: str) -> int:
    """The kind (and so the cost rule) of an instruction op."""
    if op == "ctl.for" or op == "ctl.while":
        return K_LOOP
    if op == "scalar.load":
        return K_SCALAR_LOAD
    if op == "scalar.store":
        return K_SCALAR_STORE
    if op == "dma_out.atomic":
        return K_ATOMIC
    pre = op.split(".", 1)[0]
    if pre in ("ctl", "scalar"):
        return K_SCALAR
    return _PREFIX_KIND[pre]


# ----------------------------------------------------------------------------- the records

class MatmulInputs(TypedDict):
    """dpe.matmul: a batched [m, k] x [k, n] product of `in_dtype` inputs."""
    m: int
    n: int
    k: int
    batch: int
    in_dtype: str
    flops: int


class VectorInputs(TypedDict):
    """SIMD and SFU work: `elements` results, in `passes` instructions' worth of setup."""
    elements: int
    dtype: str
    passes: NotRequired[int]             # default 1
    flops_per_element: NotRequired[int]  # default 1 (an FMA: 2)


class ReduceInputs(TypedDict):
    """RE work: `elements` read, `out_elements` written, `combine_ops` ops per combine."""
    elements: int
    out_elements: int
    combine_ops: NotRequired[int]        # default 1


class LayoutInputs(TypedDict):
    """MLU work: bytes moved inside local memory (0: a view, nothing moves)."""
    bytes: int


class DmaInputs(TypedDict):
    """A DMA between global memory and local memory (also the scalar path's accesses):
    `runs` contiguous runs of `run_bytes` each, `bytes` in all."""
    bytes: int
    elements: int
    runs: int
    run_bytes: int
    region: NotRequired[int]       # the tensor argument it reads or writes (its memory level)
    addr: NotRequired[int]         # byte address of the first element (structured DMA)
    aligned32: NotRequired[bool]   # the first element is 32-byte aligned (structured DMA)
    indexed: NotRequired[bool]     # index-driven (gather / scatter)
    # masked index-driven DMA: ((bytes moved in a run, runs with that many), ...), runs with
    # nothing moved left out (each run is padded to bursts on its own bytes, not the full run's)
    run_lengths: NotRequired[tuple]


class AtomicInputs(TypedDict):
    """dma_out.atomic: `atomics` read-modify-writes, `bytes` read and written."""
    bytes: int
    elements: int
    atomics: int


class LoopInputs(TypedDict):
    """One trip of ctl.for / ctl.while (reported by the executor per iteration)."""
    iteration: int


CostInputs = MatmulInputs | VectorInputs | ReduceInputs | LayoutInputs | DmaInputs | AtomicInputs | LoopInputs


# ----------------------------------------------------------------------------- constructors

def matmul_inputs(batch: int, m: int, n: int, k: int, in_dtype: str) -> MatmulInputs:
    return {"m": m, "n": n, "k": k, "batch": batch, "in_dtype": in_dtype, "flops": 2 * batch * m * n * k}


def simd_matmul_inputs(batch: int, m: int, n: int, k: int) -> VectorInputs:
    """simd.matmul: one broadcast FMA pass over the [m, n] result per k."""
    return {"elements": batch * m * n * k, "passes": batch * k, "dtype": "f32", "flops_per_element": 2}


def vector_inputs(elements: int, dtype: str) -> VectorInputs:
    return {"elements": elements, "dtype": dtype}


def fma_inputs(elements: int, dtype: str) -> VectorInputs:
    return {"elements": elements, "dtype": dtype, "flops_per_element": 2}


def tree_reduce_inputs(elements: int, passes: int, combine_ops: int) -> VectorInputs:
    """simd.reduce: a pairwise tree of `passes` SIMD passes (no reduction engine)."""
    return {"elements": elements, "dtype": "f32", "passes": passes, "flops_per_element": combine_ops}


def reduce_inputs(elements: int, out_elements: int, combine_ops: int = 1) -> ReduceInputs:
    return {"elements": elements, "out_elements": out_elements, "combine_ops": combine_ops}


def layout_inputs(nbytes: int) -> LayoutInputs:
    return {"bytes": nbytes}


def dma_extent(itemsize: int, n: int, strides: list[int], sub_shape: list[int]) -> tuple[int, int, int, int]:
    """(bytes, elements, runs, run bytes) of a structured DMA of `n` elements of the box
    `sub_shape` at `strides`: dims that follow each other in memory (unit dims aside) are one
    contiguous run."""
    inner = sub_shape[-1] if sub_shape and strides and strides[-1] == 1 else 1
    if sub_shape and n == math.prod(sub_shape):
        inner = 1
        for extent, stride in zip(reversed(sub_shape), reversed(strides)):
            if extent == 1:
                continue
            if stride != inner:
                break
            inner *= extent
    runs = (n + inner - 1) // inner if inner else 0
    return n * itemsize, n, runs, inner * itemsize


def dma_inputs(extent: tuple[int, int, int, int], region: int, addr: int) -> DmaInputs:
    """A structured DMA of `extent` (dma_extent) starting at byte address `addr` of `region`."""
    return {"bytes": extent[0], "elements": extent[1], "runs": extent[2], "run_bytes": extent[3],
            "region": region, "addr": addr, "aligned32": addr % 32 == 0}


def indexed_dma_inputs(n: int, itemsize: int, run: int, region: int, mask: Any = None) -> DmaInputs:
    """An index-driven DMA (gather / scatter) of `n` elements in runs of `run` elements.
    `mask` (a bool tile of the DMA's shape, runs along its last `run` lanes): masked lanes are
    neither moved nor priced, so each run counts the bytes of its lanes left (a bag of 20
    indices in a 64-lane run is a 160-byte run, not a 512-byte one) and a run with none is no
    run."""
    d: DmaInputs = {"bytes": n * itemsize, "elements": n, "runs": (n + run - 1) // run, "run_bytes": run * itemsize,
                    "region": region, "indexed": True}
    if mask is not None and run > 1 and mask.numel() % run == 0 and n < mask.numel():
        # runs by the number of lanes they move (0..run): a counting pass, no sort
        counts = torch.bincount(mask.reshape(-1, run).sum(1), minlength=run + 1)[1:].tolist()
        d["runs"] = sum(counts)
        d["run_lengths"] = tuple((e * itemsize, k) for e, k in enumerate(counts, 1) if k)
    return d


def scalar_access_inputs(n: int, itemsize: int) -> DmaInputs:
    """scalar.load / scalar.store: `n` single-element accesses."""
    return {"bytes": n * itemsize, "elements": n, "runs": n, "run_bytes": itemsize}


def atomic_inputs(n: int, itemsize: int) -> AtomicInputs:
    return {"bytes": 2 * n * itemsize, "elements": n, "atomics": n}
