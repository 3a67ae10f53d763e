"""The `inductor` implementation of every workload: its torch reference through torch.compile.

One generic mechanism instead of one impl per workload: `register_inductor(workloads)` gives
each workload that has a torch reference an `inductor` impl that runs that reference (or the
workload's model form, `Workload.model`: the same ops at the workload's dtype, without the
reference's fp32 upcast; baselines/torch_model.py) compiled by
Inductor with `torch._inductor.config.cpu_backend = "triton"` (Triton kernels for CPU tensors,
compiled and simulated by this backend through the `cpu` entry point).

- Compiled once per (workload, input shapes and dtypes): the first call compiles and runs the
  graph once with the launch recorders detached, so Inductor's compile-time benchmarking of its
  configs is not part of the measurement; the measured call is the second run.
- Chip time is only what ran as simulated kernels. Inductor leaves some ops to aten (GEMMs as
  extern kernels, sparse ops as fallbacks, anything after a graph break): those run on the host
  and have no simulated time. A call in which any such op did work raises `HostFallback`, so
  the row is an error ("not on chip: mm x1, ...") instead of a time that leaves work out.
  Ops that `backend.inductor_cpu.extern` routes to simulated kernels (GEMMs, attention) do count as
  chip work; switches: backend/inductor_cpu/options.py.
"""
from __future__ import annotations

import collections
import contextlib
import os
from typing import Any, Callable, Iterator

import torch

from study.registry import Workload

# Dynamo recompiles per input signature; a worker measures a few dtypes of one shape at a time
_CACHE_SIZE_LIMIT = 256


class HostFallback(RuntimeError):
    """Ops of a compiled workload ran on the host (aten), outside the simulated chip."""


class NotOneGraph(RuntimeError):
    """Dynamo split a reference into more than MAX_GRAPHS graphs: data-dependent Python control
    flow (a loop over segments, `.item()`/`.tolist()` per element) that Inductor compiles once per
    distinct value, each graph autotuned in the simulator, which is neither one compiled kernel
    set nor affordable to simulate."""


# A reference that Dynamo splits into more graphs than this is not measured (NotOneGraph):
# every study reference that compiles to one kernel set is one graph
MAX_GRAPHS = 1


def configure() -> None:
    """Inductor settings for the cpu -> MTIA path; idempotent, cheap, call before compiling."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # compile in-process: fork-safe workers
    import torch._dynamo
    import torch._inductor.config as ic
    ic.cpu_backend = "triton"
    ic.compile_threads = 1
    # the switches of backend/inductor_cpu/options.py change code generation outside Inductor's
    # cache key: a cached graph could come from another setting
    ic.fx_graph_cache = False
    ic.autotune_local_cache = False
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, _CACHE_SIZE_LIMIT)
    from backend.inductor_cpu import (benchmark, cat, extern, fft, heuristics, host_ops, linalg, options, segments, sort,
                                      special, tables)
    options.activate_current()  # the switches that are Inductor config keys (nd_tiling)
    heuristics.install()
    cat.install()
    tables.install()
    special.install()
    host_ops.install()
    sort.install()
    fft.install()
    linalg.install()
    segments.install()
    extern.register_extern("gemm", _expert_gemm)
    extern.register_extern("embedding_bag", _triton_embedding_bag)
    extern.install()
    benchmark.install()  # Inductor's autotuning compares simulated time, not the simulator's host time


def _expert_gemm(a: torch.Tensor, b: torch.Tensor, trans_b: bool = False) -> torch.Tensor:
    """mtia_sim.gemm (backend/inductor_cpu/extern.py): the expert GEMM program (its NT form when
    b comes transposed)."""
    from baselines.expert.gemm import bmm, matmul, matmul_nt
    if trans_b:
        return matmul_nt(a, b)
    return bmm(a, b) if a.dim() == 3 else matmul(a, b)


def _triton_embedding_bag(weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor,
                          mean: bool) -> torch.Tensor:
    """mtia_sim.embedding_bag: one table at row 0 of the table-batched Triton kernel of
    kernels/recommendation_ext.py (the study's fastest Triton embedding bag: balanced over the
    PEs, software-pipelined); bf16 tables, which it does not take (its 16-bit DPE pooling
    rounds the sum on the DPE, fp16 only), use the plain kernel of kernels/recommendation.py."""
    from kernels import recommendation, recommendation_ext
    embedding_bag = recommendation.embedding_bag if weight.dtype == torch.bfloat16 else recommendation_ext.embedding_bag
    table_offsets = torch.zeros(1, dtype=offsets.dtype)
    return embedding_bag(weight, table_offsets, indices, offsets, 1, "mean" if mean else "sum")


def unconfigure() -> None:
    """Undo configure()'s chip-aware choices and graph pass (Inductor's own choices again), for
    a process that goes on to compile without them (T3's stock measurement, tests)."""
    from backend.inductor_cpu import cat, extern, fft, heuristics, host_ops, linalg, segments, sort, special, tables
    heuristics.uninstall()
    cat.uninstall()
    tables.uninstall()
    special.uninstall()
    sort.uninstall()
    host_ops.uninstall()
    fft.uninstall()
    linalg.uninstall()
    segments.uninstall()
    extern.uninstall()


@contextlib.contextmanager
def launches_unrecorded() -> Iterator[None]:
    """Launches inside the block reach no record_launches() recorder (compile and autotuning
    runs, which the measurement must not include)."""
    from backend.driver import DEVICE
    saved = list(DEVICE.listeners)
    DEVICE.listeners.clear()
    try:
        yield
    finally:
        DEVICE.listeners[:] = saved


def warm_up(call: Callable, args: tuple, kwargs: dict) -> Any:
    """The compiling call, on copies of the inputs, unrecorded, its launches not simulated
    (backend.driver.unsimulated: the call is made to compile and autotune; the configs Inductor
    benchmarks are simulated in timing mode, which needs no float output of an earlier launch);
    simulated in full if that fails (an index computed by a skipped instruction can leave its
    tensor)."""
    from backend.driver import sim_mode, unsimulated

    def copies() -> tuple[tuple, dict]:
        cl = lambda v: v.clone() if isinstance(v, torch.Tensor) else v  # noqa: E731
        return tuple(cl(a) for a in args), {k: cl(v) for k, v in kwargs.items()}
    try:
        a, k = copies()
        with torch.no_grad(), launches_unrecorded(), sim_mode("timing"), unsimulated():
            return call(*a, **k)
    except Exception:
        a, k = copies()
        with torch.no_grad(), launches_unrecorded():
            return call(*a, **k)


def _signature(args: dict) -> tuple:
    def sig(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return ("T", tuple(v.shape), tuple(v.stride()), str(v.dtype))
        if isinstance(v, (list, tuple)):
            return tuple(sig(x) for x in v)
        return ("V", repr(v))
    return tuple((k, sig(v)) for k, v in sorted(args.items()))


_COMPILED: dict[tuple, Callable] = {}


def compiled(name: str, fn: Callable, kwargs: dict) -> Callable:
    """`fn` compiled by Inductor for these inputs; compiled and warmed on first use."""
    key = (name, _signature(kwargs))
    if key not in _COMPILED:
        configure()
        c = torch.compile(fn, backend=_counted_inductor(name), fullgraph=False, dynamic=False)
        warm_up(lambda *a, **k: c(*a, **k), (), kwargs)
        _COMPILED[key] = c
    return _COMPILED[key]


def _counted_inductor(name: str) -> Callable:
    """Inductor as a torch.compile backend that refuses the (MAX_GRAPHS + 1)-th graph of `name`."""
    from torch._inductor.compile_fx import compile_fx
    graphs: list[int] = []

    def inductor_one_graph(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        graphs.append(len(gm.graph.nodes))
        if len(graphs) > MAX_GRAPHS:
            raise NotOneGraph(f"workload '{name}': Dynamo split its torch reference into {len(graphs)} graphs or "
                              f"more, {MAX_GRAPHS} allowed (graph breaks at data-dependent Python control flow, compiled once per "
                              f"value); Inductor cannot compile it as one kernel set")
        return compile_fx(gm, example_inputs)
    return inductor_one_graph


def host_work(ops: list[Any]) -> str:
    """'op x count' of the host ops that did work ('' when everything ran on the chip)."""
    c = collections.Counter(h.name for h in ops)
    return ", ".join(f"{n} x{k}" for n, k in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def run_on_chip(name: str, fn: Callable, kwargs: dict) -> Any:
    """Run the compiled `fn`; raise HostFallback when any op did work on the host."""
    from study.model_coverage import record_host_ops
    try:
        c = compiled(name, fn, kwargs)
    except Exception as e:  # Dynamo wraps a backend's refusal in BackendCompilerFailed
        inner = getattr(e, "inner_exception", None)
        if isinstance(inner, NotOneGraph):
            raise inner from None
        raise
    with torch.no_grad(), record_host_ops() as host:
        out = c(**kwargs)
    if host:
        raise HostFallback(f"not on chip: Inductor left {host_work(host)} to aten on the host (no simulated time)")
    return out


def at_input_dtype(ref: Callable) -> Callable:
    """The reference as model code at the workload's dtype: the references upcast to FP32 and
    return FP32 (baselines/torch_ref.py), where a bf16 / fp16 model, and every hand-written
    kernel and expert program of the study, writes its result in the inputs' 16-bit dtype. A
    single FP32 result of a call with a 16-bit floating input is cast to that dtype (Inductor
    fuses the cast into the store); integer results, tuples and FP32 calls are returned as they
    are. Without it, Inductor's bf16 rows wrote twice the output bytes of the kernels they are
    compared with (writeback 0.67x the expert on elementwise kernels from that alone)."""
    def model(**kwargs: Any) -> Any:
        out = ref(**kwargs)
        low = next((t.dtype for t in kwargs.values()
                    if isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16)), None)
        if low is not None and isinstance(out, torch.Tensor) and out.dtype == torch.float32:
            return out.to(low)
        return out
    model.__name__ = getattr(ref, "__name__", "model")
    return model


def inductor_impl(w: Workload) -> Callable:
    # model code at the workload's dtype where it differs from the reference (torch_model.py),
    # else the reference with its FP32 result in the inputs' 16-bit dtype
    ref = w.model or at_input_dtype(w.impls["torch"])

    def impl(**kwargs: Any) -> Any:
        return run_on_chip(w.name, ref, kwargs)
    impl.__name__ = f"inductor_{w.name}"
    return impl


def register_inductor(workloads: dict[str, Workload]) -> None:
    """Give every workload with a torch reference an `inductor` implementation (unless it
    declares its own)."""
    for w in workloads.values():
        if "torch" in w.impls and "inductor" not in w.impls:
            w.impls["inductor"] = inductor_impl(w)
