"""The Triton driver for the simulated MTIA: launcher, device interface and simulated clock.

Kernel arguments are ordinary torch CPU tensors. A launch executes every program of the grid
on the functional simulator and prices it with the timing model; the simulated time advances
a device clock that the Event objects read, so `triton.testing.do_bench`, `triton.autotune`
and Inductor's benchmarking measure the simulated chip, never the host's wall clock.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch.utils._python_dispatch import _disable_current_modes
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from backend.configs import DEFAULT_CHIP, load_chip
from backend.regimes import DEFAULT_REGIME, Regime, get_regime

# ----------------------------------------------------------------------------- simulated clock


@dataclass
class KernelRecord:
    """One simulated launch, as the study reads it back."""
    name: str
    grid: tuple[int, int, int]
    chip: str
    cycles: int
    time_us: float
    sim_wall_s: float
    timing: Any = None
    # the program and its executed traces, kept only inside keep_traces() (to price them again),
    # and the traces' signatures (the same on every chip and in every regime)
    program: Any = None
    traces: Any = None
    signatures: Any = None
    # tensor arguments whose bytes an earlier launch of the same shared_llc() block read or wrote
    # (their names): priced as already in the on-chip SRAM where assumptions.llc_across_launches
    # keeps them
    carried: tuple = ()


@dataclass
class _DeviceState:
    clock_us: float = 0.0
    chip: str = os.environ.get("MTIA_CHIP", DEFAULT_CHIP)
    # the memory regime launches are priced in (backend/regimes.py): where inputs start, where
    # outputs go; it changes no compiled code, only the price of a launch
    regime: str = os.environ.get("MTIA_REGIME", DEFAULT_REGIME)
    listeners: list[Callable[[KernelRecord], None]] = field(default_factory=list)
    timing: bool = True
    trace: bool = False  # collect per-instruction engine spans (Perfetto timelines)
    keep_traces: bool = False  # keep each launch's executed traces in its record (reprice)
    # "timing": skip the tile arithmetic whose results cannot reach an address, mask, bound or
    # branch of the launch (backend/sim/executor.values_needed), so the cycles are the
    # functional mode's; float outputs are not computed, launches that write integers
    # (indices for later launches) run functionally. For big shapes and speed sweeps.
    mode: str = os.environ.get("MTIA_SIM_MODE", "functional")
    # inside unsimulated(): launches are not simulated (see there)
    skip: bool = False
    # inside shared_llc(): the storages the block's launches touched, least recent first
    # (storage address -> storage), as many as the LLC holds
    llc: Any = None


DEVICE = _DeviceState()


def set_chip(name: str) -> None:
    """Select the chip config that later compiles target and launches are priced on."""
    load_chip(name)  # validates the name
    DEVICE.chip = name


def set_regime(name: str) -> None:
    """Select the memory regime (backend/regimes.py) that later launches are priced in."""
    get_regime(name)  # validates the name
    DEVICE.regime = name


def current_regime() -> Regime:
    return get_regime(DEVICE.regime)


def price(program: Any, traces: list, chip: dict[str, Any], regime: str | None = None,
          signatures: list | None = None, carried: tuple = ()) -> Any:
    """Price a launch's executed traces on `chip` in the current memory regime (or `regime`):
    the one place the driver and the expert library's timing-only path price a launch, so both
    agree. `signatures`: backend.sim.timing.program_signatures(traces), when already known.
    `carried`: the arguments an earlier launch of the same shared_llc() block touched."""
    from backend.sim.timing import price_launch
    r = current_regime() if regime is None else get_regime(regime)
    return price_launch(program, traces, chip, trace=DEVICE.trace, resident=r.inputs_resident,
                        writeback=r.writeback, signatures=signatures, carried=carried)


@contextlib.contextmanager
def shared_llc() -> Iterator[None]:
    """The launches inside the block are one call of a workload or model: a launch's argument
    whose storage an earlier launch of the block read or wrote is, while the LLC holds it, in the
    on-chip SRAM when the launch starts (the memory regime says where the call's own inputs start;
    assumptions.llc_across_launches whether the LLC keeps what a launch touched for the next:
    "kept", else each launch finds only the regime's inputs). The LLC holds the storages touched
    most recently, up to its capacity. Benchmark launches (simulated_bench) and launches not
    simulated (unsimulated) neither see nor change it."""
    old = DEVICE.llc
    DEVICE.llc = {}
    try:
        yield
    finally:
        DEVICE.llc = old


def _storages(program: Any, args: list[Any]) -> list[tuple[str, int, Any]]:
    """(parameter name, storage address, storage) of a launch's tensor arguments."""
    out = []
    for p, a in zip(program.params, args):
        if isinstance(a, torch.Tensor):
            s = a.untyped_storage()
            out.append((p["name"], s.data_ptr(), s))
    return out


def _carried(storages: list[tuple[str, int, Any]]) -> tuple:
    return tuple(name for name, ptr, _ in storages if ptr in DEVICE.llc)


def _touch(storages: list[tuple[str, int, Any]], chip: dict[str, Any]) -> None:
    """Record a launch's storages as the most recent in the shared LLC, the least recent
    leaving it beyond its capacity. The LLC holds a reference to each storage it keeps: a
    storage the program frees while it is held cannot hand its address to a new tensor, so an
    address in the LLC is always the storage that was touched (the host allocator's reuse of
    addresses would otherwise decide what counts as carried)."""
    llc = DEVICE.llc
    for _, ptr, st in storages:
        llc.pop(ptr, None)
        llc[ptr] = st
    cap = int(chip["sram"].get("llc_bytes", chip["sram"]["bytes"]))
    total = sum(st.nbytes() for st in llc.values())
    while llc and total > cap:
        total -= llc.pop(next(iter(llc))).nbytes()


SIM_MODES = ("functional", "timing")


@contextlib.contextmanager
def sim_mode(mode: str) -> Iterator[None]:
    """Launches inside the block simulate in `mode` (see _DeviceState.mode)."""
    if mode not in SIM_MODES:
        raise ValueError(f"unknown simulation mode '{mode}'; known: {', '.join(SIM_MODES)}")
    old = DEVICE.mode
    DEVICE.mode = mode
    try:
        yield
    finally:
        DEVICE.mode = old


@contextlib.contextmanager
def unsimulated(on: bool = True) -> Iterator[None]:
    """Launches inside the block are not simulated and write nothing: no time, no record, no
    listener called; except those that write integers (what later launches may address memory
    with), which run functionally, and those of a benchmarker inside (simulated_bench simulates
    whatever the block around it). For a call made only for its side effects on the host, such
    as compiling and autotuning (study/inductor.py's warm-up): every config Inductor or
    triton.autotune benchmarks is simulated in timing mode as before, and since timing mode's
    cycles do not depend on float outputs, which config wins does not depend on whether the
    launches before it were simulated. `on=False` simulates inside a block that skips."""
    old = DEVICE.skip
    DEVICE.skip = on
    try:
        yield
    finally:
        DEVICE.skip = old


@contextlib.contextmanager
def keep_traces() -> Iterator[None]:
    """Inside the block each KernelRecord also holds its program and executed traces, so that
    `reprice` can price the same events on another chip config without executing again."""
    old = DEVICE.keep_traces
    DEVICE.keep_traces = True
    try:
        yield
    finally:
        DEVICE.keep_traces = old


def reprice(rec: KernelRecord, chip: str, regime: str | None = None) -> Any:
    """The LaunchTiming of a launch recorded inside keep_traces(), priced on `chip` in the
    current memory regime (or `regime`). Equal to launching again on `chip` in that regime when
    `chip` changes nothing the compiler or the executor reads (backend.configs.PRICING_ONLY):
    a regime never does."""
    if rec.traces is None:
        raise ValueError(f"launch of '{rec.name}' was not recorded inside keep_traces()")
    return price(rec.program, rec.traces, load_chip(chip), regime, signatures=rec.signatures,
                 carried=rec.carried)


@contextlib.contextmanager
def trace_launches() -> Iterator[list[KernelRecord]]:
    """Like record_launches, with per-engine spans in each record's timing (for
    backend.sim.trace.write_perfetto). Slower: use it on small launches."""
    old = DEVICE.trace
    DEVICE.trace = True
    try:
        with record_launches() as got:
            yield got
    finally:
        DEVICE.trace = old


@contextlib.contextmanager
def record_launches() -> Iterator[list[KernelRecord]]:
    """Collect a KernelRecord for every launch inside the block."""
    got: list[KernelRecord] = []
    DEVICE.listeners.append(got.append)
    try:
        yield got
    finally:
        DEVICE.listeners.remove(got.append)


class SimEvent:
    def __init__(self, enable_timing: bool = True, **_: Any):
        self.t_us: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t_us = DEVICE.clock_us

    def elapsed_time(self, end: "SimEvent") -> float:
        """Milliseconds of simulated time between two recorded events."""
        return (end.t_us - self.t_us) / 1e3

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


class SimStream:
    def __init__(self, *a: Any, **k: Any):
        self.cuda_stream = 0

    def synchronize(self) -> None:
        pass


class SimDeviceInterface:
    """The subset of torch.cuda's interface that Triton and Inductor call."""
    Event = SimEvent
    Stream = SimStream

    @staticmethod
    def synchronize(device: Any = None) -> None:
        pass

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def set_device(device: Any) -> None:
        pass

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    @contextlib.contextmanager
    def stream(s: Any) -> Iterator[None]:
        yield

    @staticmethod
    def current_stream(device: Any = None) -> SimStream:
        return SimStream()

    @staticmethod
    def default_stream(device: Any = None) -> SimStream:
        return SimStream()


# ----------------------------------------------------------------------------- launcher

class MTIALauncher:
    def __init__(self, src: Any, metadata: Any):
        constants = getattr(src, "constants", {}) or {}
        signature = getattr(src, "signature", {}) or {}
        fn = getattr(src, "fn", None)
        arg_names = list(getattr(fn, "arg_names", list(signature.keys())))
        self.kernel_name = metadata.name
        # positions of the runtime arguments (constexprs are baked into the binary)
        cexpr = {(arg_names.index(k),) if isinstance(k, str) else tuple(k) for k in constants}
        self.keep = [i for i, n in enumerate(arg_names)
                     if signature.get(n) != "constexpr" and (i,) not in cexpr]

    def __call__(self, gridX: int, gridY: int, gridZ: int, stream: Any, function: Any, packed_metadata: Any,
                 launch_metadata: Any, enter_hook: Any, exit_hook: Any, *args: Any) -> None:
        if enter_hook is not None:
            enter_hook(launch_metadata)
        runtime_args = [args[i] for i in self.keep]
        launch(function, (gridX, gridY, gridZ), runtime_args)
        if exit_hook is not None:
            exit_hook(launch_metadata)


def _storage_tensor(a: Any) -> Any:
    """The torch tensor behind a kernel argument. `triton.reinterpret(t, dtype)` passes a
    TensorWrapper: Triton's specialiser already typed the kernel's pointer with the wrapper's
    dtype (`*u32`, `*fp8e5`, ...), and the simulator reads global memory as bytes typed by each
    instruction, so the launch only needs the underlying tensor's storage."""
    from triton.runtime.jit import TensorWrapper
    while isinstance(a, TensorWrapper):
        a = a.base
    return a


def _int_register(param: dict, a: Any) -> Any:
    """An integer argument as its register holds it: the bits of its type, read as signed (a
    Python int of 2**63 or more is a u64 argument, whose type in the kernel is i64)."""
    if param["kind"] != "int" or isinstance(a, bool) or not isinstance(a, int):
        return a
    from backend.program import INT_BITS
    from backend.sim.isa import wrap_int
    dtype = param.get("dtype", "i64")
    return wrap_int(a, dtype) if dtype in INT_BITS and dtype != "i1" else a


def _persistent_launch(program: Any, grid: tuple[int, int, int], args: list[Any]) -> tuple[tuple, list]:
    """A persistent program (backend/passes/persistent.py) runs once per PE, at most one per
    program of the grid, and reads the grid from three hidden parameters appended here."""
    if not (getattr(program, "meta", None) or {}).get("persistent"):
        return grid, args
    pe_grid = load_chip(DEVICE.chip)["pe_grid"]
    n_pe = int(pe_grid["rows"]) * int(pe_grid["cols"])
    gx, gy, gz = (int(g) for g in grid)
    if program.meta.get("pe_queries") and gx * gy * gz > n_pe:
        # a PE-grid kernel plans its own work per PE: more programs than PEs would run some
        # PE's share twice
        raise ValueError(f"kernel '{program.name}' calls mtia.pe_id() / mtia.num_pes(): launch at most one "
                         f"program per PE, got grid {tuple(grid)} ({gx * gy * gz} programs) on {n_pe} PEs")
    return (min(n_pe, gx * gy * gz), 1, 1), list(args) + [gx, gy, gz]


def launch(program: Any, grid: tuple[int, int, int], args: list[Any]) -> KernelRecord:
    from backend.sim.executor import execute, writes_integers
    from backend.sim.timing import program_signatures
    args = [_storage_tensor(a) for a in args]
    grid, args = _persistent_launch(program, grid, args)
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type != "cpu":
            raise ValueError(f"kernel '{program.name}': tensor argument on device {a.device}; the simulated "
                             "MTIA reads torch CPU tensors")
    if len(args) != len(program.params):
        raise ValueError(f"kernel '{program.name}' takes {len(program.params)} runtime arguments, got {len(args)}")
    for p, a in zip(program.params, args):
        if p["kind"] == "ptr" and not isinstance(a, torch.Tensor) and not (isinstance(a, int) and a != 0):
            raise TypeError(f"kernel '{program.name}': argument '{p['name']}' must be a tensor, got {type(a).__name__}")
    args = [_int_register(p, a) for p, a in zip(program.params, args)]
    t0 = time.perf_counter()
    chip = load_chip(DEVICE.chip)
    if writes_integers(program):
        mode = "functional"  # its outputs may be what later launches address memory with
    elif DEVICE.skip:
        return KernelRecord(program.name, grid, chip["name"], 0, 0.0, 0.0)
    else:
        mode = DEVICE.mode
    # the simulator computes with torch: its ops are not the program's, so a dispatch mode of
    # the caller (Inductor's runtime checks, a host-op recorder) neither sees nor slows them
    shared = DEVICE.llc is not None and not DEVICE.skip
    storages = _storages(program, args) if shared else []
    carried = _carried(storages) if shared else ()
    with _disable_current_modes():
        traces = execute(program, grid, args, record=DEVICE.timing, mode=mode)
        # traces kept to be priced again: their signatures are computed once, for every pricing
        sigs = program_signatures(traces) if DEVICE.keep_traces and not DEVICE.trace else None
        timing = price(program, traces, chip, signatures=sigs, carried=carried)
    if shared:
        _touch(storages, chip)
    rec = KernelRecord(program.name, grid, chip["name"], timing.cycles, timing.time_us,
                       time.perf_counter() - t0, timing, carried=carried)
    if DEVICE.keep_traces:
        rec.program, rec.traces, rec.signatures = program, traces, sigs
    DEVICE.clock_us += timing.time_us
    for fn in list(DEVICE.listeners):
        fn(rec)
    return rec


class MTIAUtils:
    def load_binary(self, name: str, kernel: bytes, shared: int, device: int) -> tuple:
        from backend.program import from_bytes
        program = from_bytes(kernel)
        return program, program, 0, 0, 1 << 30

    def unload_module(self, module: Any) -> None:
        pass

    def get_device_properties(self, device: int) -> dict:
        chip = load_chip(DEVICE.chip)
        return {"max_shared_mem": int(chip["local_memory"]["bytes"]),
                "multiprocessor_count": chip["pe_grid"]["rows"] * chip["pe_grid"]["cols"],
                "max_num_regs": 1 << 20, "warpSize": 1, "sm_clock_rate": int(chip["clock_ghz"] * 1e6),
                "mem_clock_rate": 0, "mem_bus_width": 0}


def simulated_bench(fn: Callable, warmup: int = 0, rep: int = 0, grad_to_none: Any = None,
                    quantiles: Any = None, return_mode: str = "mean", **_: Any) -> Any:
    """Benchmarker for the simulated chip: one run is exact, since simulated time is deterministic.
    The run simulates in timing mode (same events, hence same cycles, as the functional mode;
    float outputs not computed): what calls a benchmarker (triton.autotune, Inductor's
    autotuning) keeps only the time and then launches the chosen config for its result."""
    start = DEVICE.clock_us
    llc, DEVICE.llc = DEVICE.llc, None  # a candidate is timed alone, outside the call it serves
    try:
        with sim_mode("timing"), unsimulated(False):
            fn()
    finally:
        DEVICE.llc = llc
    ms = (DEVICE.clock_us - start) / 1e3
    if quantiles is not None:
        return [ms for _ in quantiles]
    return [ms] if return_mode == "all" else ms


class MTIADriver(DriverBase):
    def __init__(self) -> None:
        super().__init__()
        self.utils = MTIAUtils()
        self.launcher_cls = MTIALauncher

    @classmethod
    def is_active(cls) -> bool:
        if os.environ.get("TRITON_MTIA_DISABLE") == "1":
            return False
        return not torch.cuda.is_available()

    def map_python_to_cpp_type(self, ty: str) -> str:
        return "void*" if ty.startswith("*") else ty

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("mtia", DEVICE.chip, 1)

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_interface(self) -> type:
        return SimDeviceInterface

    def get_benchmarker(self) -> Callable:
        return simulated_bench

    def get_empty_cache_for_benchmark(self) -> torch.Tensor:
        return torch.empty(1, dtype=torch.int8)

    def clear_cache(self, cache: torch.Tensor) -> None:
        """Nothing to flush: every simulated launch starts from the memory state its regime
        prices (backend/regimes.py), whatever ran before it."""
