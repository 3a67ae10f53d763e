"""Inductor's autotuning on the simulated chip: benchmarks read simulated time, not host time.

Inductor benchmarks the candidate configs of a kernel on CPU tensors with
`Benchmarker.benchmark_cpu`, which times the host wall clock over at least 120 ms of repeated
calls. Through this backend a call is a simulation: its wall time is the simulator's speed,
not the chip's, so the choice would follow the host (and vary between runs) and cost several
simulations per config. `install()` registers, through Inductor's own extension point
(`torch._inductor.runtime.benchmarking.register_benchmarker`), a CPU benchmarker that makes one
call and returns the simulated time of the launches it made (the driver's device clock):
deterministic, and what the chip would measure; the call simulates in timing mode (the
candidates' outputs are not used). A call that launches nothing on the chip (a
C++ kernel of Inductor's own CPU backend) measures 0 and so ties.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator


def simulated_benchmark(_benchmarker: Any, fn: Callable[[], Any], warmup: int = 0, rep: int = 0,
                        **_: Any) -> float:
    """Milliseconds of simulated chip time of one call of `fn` (warmup and rep do not apply:
    simulated time does not vary from call to call), simulated as the driver's benchmarker
    does (backend.driver.simulated_bench: timing mode, outputs not computed)."""
    from backend.driver import simulated_bench
    return simulated_bench(fn)


def install() -> None:
    """Inductor's CPU benchmarks read simulated time (idempotent)."""
    from torch._inductor.runtime.benchmarking import register_benchmarker
    register_benchmarker("cpu", simulated_benchmark, override=True)


def uninstall() -> None:
    """Inductor's own CPU benchmarking again."""
    from torch._inductor.runtime import benchmarking
    if benchmarking._BENCHMARK_DISPATCH.get("cpu") is simulated_benchmark:
        del benchmarking._BENCHMARK_DISPATCH["cpu"]


@contextlib.contextmanager
def benchmarks_apart(launches: list, host: list | None = None) -> Iterator[list]:
    """Inside the block, what every simulated benchmark launches (Inductor's autotuning of
    kernel configs and of GEMM templates, triton.autotune: all time a candidate through
    backend.driver.simulated_bench) is taken out of `launches` (a record_launches list), and the
    host ops it runs out of `host`, and collected in the list yielded instead: a call that
    compiles and tunes leaves in `launches` only the graph's own launches."""
    import backend.driver as drv
    real = drv.simulated_bench
    tuned: list = []

    def bench(fn: Callable, *args: Any, **kw: Any) -> Any:
        n_l, n_h = len(launches), len(host) if host is not None else 0
        try:
            return real(fn, *args, **kw)
        finally:
            tuned.extend(launches[n_l:])
            del launches[n_l:]
            if host is not None:
                del host[n_h:]

    drv.simulated_bench = bench
    try:
        yield tuned
    finally:
        drv.simulated_bench = real
