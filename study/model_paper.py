"""T3 at docs/study.md's shapes: the models at their "paper" size, simulated in timing mode.

    python -m study.model_paper [--models decoder,moe,dlrm] [--chips C1,C2] [--out results/raw/model_coverage_paper.csv]

The study's T3 (study/model_coverage.py) runs each model at a scaled-down "study" size in the
functional simulator and checks it against eager. At the target shapes themselves (study/models.py
`PAPER_SIZES`: decoder batch 16, seq 2048, hidden 4096, 32 heads; MoE 4096 tokens x hidden 4096,
top-2 of 8; jagged batch 512, lengths 1-1024; DLRM its study shape) a functional simulation and
an eager reference are out of reach on a 2-core host, so the model runs in the simulator's
timing mode (backend.driver.DEVICE.mode = "timing": the tile data that cannot reach an
address, mask, bound or branch is not computed; the cycles are the functional mode's). Its
outputs are not computed, so nothing is compared with eager here; instead each row records
`timing_check`: the same model at its "test" size (same structure, same compiled graph shape)
run in both modes, kernel for kernel, with equal cycles.

One call per model (Inductor chip-aware, as T3's `chip` rows: GEMMs as the expert GEMM, SDPA
as flash attention, embedding bags as the Triton kernel): the compiling call is the measured
one. Inductor's autotuning runs inside it and is left out of the measurement: launches and
host ops made while Inductor benchmarks a candidate config (its registered CPU benchmarker,
backend/inductor_cpu/benchmark.py, wrapped here) are dropped; the launches that remain are the
graph's own, with the configs autotuning chose (the same launches a second call would make;
tests/study/test_model_paper.py checks it); so are host ops run by its autotuner around the
benchmarks (CachingAutotuner.benchmark_all_configs: zeroing an atomic kernel's outputs). Columns are model_coverage.csv's, plus `mode`
(timing), `timing_check`, `triton_compiled_us` (launches of Triton-compiled kernels: Inductor's,
flash attention, embedding bag), `expert_us` (the expert GEMM programs), `triton_share`
(triton_compiled_us / e2e_us), `autotune_launches`, `autotune_sim_s` and `wall_s` (the whole
measurement: build, compile, autotune, simulation).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as _dt
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from study.model_coverage import COLUMNS as T3_COLUMNS
from study.model_coverage import Coverage, record_host_ops
from study.roofline import engine_peaks

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "results" / "raw" / "model_coverage_paper.csv"
# jagged is left out by default: at its paper shape Inductor's searchsorted kernel runs one
# program per item (262k), tens of millions of functional events (it writes integers, so timing
# mode runs it functionally), beyond this host's memory (README, T3). Decoder, MoE and DLRM take
# about 15, 35 and 7 s each per chip on a 2-core host
DEFAULT_MODELS = ("decoder", "moe", "dlrm")
# the paper-shape GEMMs' footprints exceed the 256 MB LLC: each model is priced under both LLC
# re-read assumptions (configs: assumptions.llc_reuse), the default and its optimistic bound
DEFAULT_CHIPS = ("mtia2i", "mtia2i@assumptions.llc_reuse=ideal")
EXTRA_COLUMNS = ("mode", "timing_check", "triton_compiled_us", "expert_us", "triton_share", "autotune_launches",
                 "autotune_sim_s", "wall_s")
COLUMNS = T3_COLUMNS + EXTRA_COLUMNS


@dataclass
class PaperCoverage(Coverage):
    mode: str = "timing"
    timing_check: str = ""
    triton_compiled_us: float = 0.0
    expert_us: float = 0.0
    triton_share: float | None = None
    autotune_launches: int = 0
    autotune_sim_s: float = 0.0
    wall_s: float = 0.0


@contextlib.contextmanager
def autotuning_apart(launches: list, host: list) -> Iterator[list]:
    """Inside the block, what Inductor's benchmarking of candidate configs launches (and the
    host ops it runs: argument clones) is taken out of `launches` and `host` and collected in
    the list yielded instead."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    from backend.inductor_cpu import benchmark

    def host_dropped(real: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kw: Any) -> Any:
            n_h = len(host)
            try:
                return real(self, *args, **kw)
            finally:
                del host[n_h:]
        return wrapped

    # the host work of autotuning around the benchmarks (zeroing the outputs of an atomic
    # kernel between configs) is Inductor's CachingAutotuner.benchmark_all_configs'; the GEMM
    # templates' selection (their example inputs and outputs: zeros, clones) is Inductor's
    # AlgorithmSelectorCache's, at compile time
    real_all, real_select = CachingAutotuner.benchmark_all_configs, AlgorithmSelectorCache.__call__
    CachingAutotuner.benchmark_all_configs = host_dropped(real_all)
    AlgorithmSelectorCache.__call__ = host_dropped(real_select)
    try:
        with benchmark.benchmarks_apart(launches, host) as tuned:
            yield tuned
    finally:
        CachingAutotuner.benchmark_all_configs = real_all
        AlgorithmSelectorCache.__call__ = real_select


def _kernel_cycles(model: str, size: str, mode: str) -> list[tuple[str, int]]:
    import torch

    import backend.driver as drv
    from study import models
    torch._dynamo.reset()
    case = models.build(model, size)
    fn = torch.compile(case.module, backend="inductor", fullgraph=False, dynamic=False)
    with torch.no_grad(), drv.sim_mode(mode):
        fn(*case.inputs)
        with drv.record_launches() as recs, drv.shared_llc():
            fn(*case.inputs)
    return [(r.name, r.cycles) for r in recs]


def timing_check(model: str, size: str = "test") -> str:
    """The model at `size`, run in the functional and in the timing mode: whether every
    kernel's cycles agree (what licenses timing mode's numbers at the paper shape)."""
    f = _kernel_cycles(model, size, "functional")
    t = _kernel_cycles(model, size, "timing")
    same = sum(a == b for a, b in zip(f, t))
    verdict = "equal" if f == t else "DIFFER"
    return f"{size} size: {same}/{len(f)} kernels' cycles equal in timing and functional mode ({verdict})"


def _is_expert(rec: Any) -> bool:
    return rec.name.startswith("expert_")


def measure(model: str, size: str = "paper", chip: str = "mtia2i", check_size: str | None = "test",
            check: str | None = None, keep: list | None = None, compiled: list | None = None) -> PaperCoverage:
    """One model at `size` on `chip`, in timing mode. `check`: the timing check's verdict when the
    caller already has it (it compares executor modes, which no pricing key of `chip` changes);
    otherwise it is run at `check_size` (None: skipped). `keep`: a list that receives the model
    and its compiled function. `compiled`: what `keep` received from a measurement on a chip that
    differs from `chip` only in timing-model keys (`same_compile`): the model is not built and
    compiled again, its compiled function is called again on `chip` (no compile, no autotuning:
    the graph, its kernels and autotuning's choices are those a compile for `chip` makes, since
    neither reads those keys; what runs at launch time, such as the expert GEMM's choice of
    program for the chip, is chosen again)."""
    import torch

    import backend.driver as drv
    from backend.inductor_cpu import options
    from study import models
    from study.inductor import configure
    from study.model_coverage import configure as configure_t3
    t_start = time.perf_counter()
    configure_t3()
    configure()
    options.activate(**options.DEFAULTS)
    drv.set_chip(chip)
    if check is None:
        check = timing_check(model, check_size) if check_size else ""
    if compiled is not None:
        case, fn = compiled
    else:
        torch._dynamo.reset()
        case = models.build(model, size)
        fn = torch.compile(case.module, backend="inductor", fullgraph=False, dynamic=False)
    dtype = str(models.DTYPE).replace("torch.", "")
    cov = PaperCoverage(model, size, chip, dtype, case.shape, inductor="chip", timing_check=check)
    with torch.no_grad(), drv.sim_mode("timing"):
        from torch._dynamo.utils import counters
        graphs0 = counters["stats"]["unique_graphs"]
        t0 = time.perf_counter()
        with drv.record_launches() as recs, record_host_ops() as host, autotuning_apart(recs, host) as tuned, \
                drv.shared_llc():
            fn(*case.inputs)
        call_s = time.perf_counter() - t0
        n_graphs = counters["stats"]["unique_graphs"] - graphs0
    sim_s = sum(r.sim_wall_s for r in recs)
    cov.autotune_launches = len(tuned)
    cov.autotune_sim_s = sum(r.sim_wall_s for r in tuned)
    cov.compile_s = call_s - sim_s - cov.autotune_sim_s
    cov.sim_wall_s = sim_s
    _summarise(cov, recs, host)
    cov.wall_s = time.perf_counter() - t_start
    how = ("the compiled function of the run above (same graph and autotuning choices), called again"
           if compiled is not None else "one call")
    cov.notes = (f"{case.shape}; size {size} ({case.paper}; {case.scaling}); simulated in TIMING mode "
                 f"(outputs not computed, not compared with eager: the study size is, model_coverage.csv); "
                 f"{check}; chip-aware Inductor, {how}: compile {cov.compile_s:.1f} s, autotuning "
                 f"{len(tuned)} launches ({cov.autotune_sim_s:.1f} s simulated, left out), "
                 f"{n_graphs} FX graph(s); fallback_est_us is a roofline estimate on the {chip} config")
    if keep is not None:
        keep[:] = [case, fn]
    case = fn = None
    return cov


def _summarise(cov: PaperCoverage, recs: list, host: list) -> None:
    """The columns that follow from the launches (priced on cov.chip) and the host ops."""
    from study.model_coverage import _count_list, _is_gemm_kernel
    peaks = engine_peaks(cov.chip)
    cov.n_triton_kernels = len(recs)
    cov.triton_time_us = sum(r.time_us for r in recs)
    cov.triton_gemm_us = sum(r.time_us for r in recs if _is_gemm_kernel(r))
    cov.triton_nongemm_us = cov.triton_time_us - cov.triton_gemm_us
    cov.expert_us = sum(r.time_us for r in recs if _is_expert(r))
    cov.triton_compiled_us = cov.triton_time_us - cov.expert_us
    cov.triton_kernels = _count_list([r.name for r in recs])
    cov.n_fallback_ops = len(host)
    cov.fallback_ops = _count_list([h.name for h in host])
    for h in host:
        g, ng = h.est_us(peaks)
        cov.fallback_gemm_est_us += g
        cov.fallback_nongemm_est_us += ng
    cov.fallback_est_us = cov.fallback_gemm_est_us + cov.fallback_nongemm_est_us
    cov.e2e_us = cov.triton_time_us + cov.fallback_est_us
    nongemm = cov.triton_nongemm_us + cov.fallback_nongemm_est_us
    cov.nongemm_share_triton = cov.triton_nongemm_us / nongemm if nongemm > 0 else None
    n = cov.n_triton_kernels + cov.n_fallback_ops
    cov.ops_share_triton = cov.n_triton_kernels / n if n else None
    cov.triton_share = cov.triton_compiled_us / cov.e2e_us if cov.e2e_us else None
    cov.correct = None  # timing mode computes no outputs: not compared with eager (see timing_check)


def same_compile(measured: str, chip: str) -> bool:
    """Whether `chip` differs from the `measured` chip only in keys the timing model alone reads
    (backend.configs.pricing_only): a model compiled for one is compiled for the other."""
    from backend.configs import base_chip, pricing_only
    return pricing_only(chip) and pricing_only(measured) and base_chip(chip) == base_chip(measured)


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def write_rows(covs: list[PaperCoverage], out: Path) -> None:
    """Rows of this run replace earlier rows of the same (model, size, chip); others are kept."""
    from study.provenance import source_fingerprint, versions
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    sha, ver, now = source_fingerprint(), versions(), _dt.datetime.now().isoformat(timespec="seconds")
    keep: list[dict] = []
    new_keys = {(c.model, c.size, c.chip) for c in covs}
    if out.exists():
        with open(out, newline="") as f:
            keep = [r for r in csv.DictReader(f) if (r["model"], r["size"], r["chip"]) not in new_keys]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in keep:
            w.writerow(r)
        for c in covs:
            row = {k: _fmt(v) for k, v in asdict(c).items() if k in COLUMNS}
            row.update(run_id=run_id, git_sha=sha, versions=ver, measured_at=now)
            w.writerow(row)
    os.replace(tmp, out)


def markdown_table(covs: list[PaperCoverage]) -> str:
    lines = ["| model | shape | kernels (sim) | fallback ops | simulated us | e2e us | Triton-compiled share | "
             "GEMM share | timing check | wall s |", "|" + "---|" * 10]
    for c in covs:
        gemm = c.triton_gemm_us / c.e2e_us if c.e2e_us else 0.0
        lines.append(f"| {c.model} | {c.shape} | {c.n_triton_kernels} | {c.fallback_ops or '-'} | "
                     f"{c.triton_time_us:.1f} | {c.e2e_us:.1f} | {100 * (c.triton_share or 0):.1f}% | "
                     f"{100 * gemm:.1f}% | {c.timing_check} | {c.wall_s:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--size", default="paper", help="paper (default), or study/test to compare with T3's rows")
    ap.add_argument("--chips", default=",".join(DEFAULT_CHIPS),
                    help="chip configs, comma-separated (default: mtia2i, and mtia2i with every LLC re-read a hit)")
    ap.add_argument("--check-size", default="test", help="size of the timing-vs-functional check ('' to skip)")
    a = ap.parse_args(argv)
    from backend.configs import load_chip
    from study.inductor import unconfigure
    chips = [c for c in a.chips.split(",") if c]
    for c in chips:
        load_chip(c)  # a bad chip name or override fails here, before any model is built
    covs = []
    try:
        for model in a.models.split(","):
            check = None  # run with the first chip, reused for the others
            first, kept = None, []
            for chip in chips:
                if first is not None and same_compile(first.chip, chip):
                    c = measure(model, a.size, chip, check=check, compiled=kept)
                else:
                    c = measure(model, a.size, chip, a.check_size or None, check,
                                keep=kept if len(chips) > 1 else None)
                    first = c
                check = c.timing_check
                print(f"# {model}/{a.size}/{chip}: {c.n_triton_kernels} kernels, {c.triton_time_us:.1f} us "
                      f"simulated, e2e {c.e2e_us:.1f} us, compile {c.compile_s:.1f} s, autotune "
                      f"{c.autotune_sim_s:.1f} s, sim {c.sim_wall_s:.1f} s, wall {c.wall_s:.1f} s; {c.timing_check}",
                      flush=True)
                covs.append(c)
                write_rows([c], a.out)  # each row as it is measured: an interrupted run keeps the others
            kept.clear()  # this model and its compiled function
    finally:
        unconfigure()  # leave the process with Inductor's own choices
    print(markdown_table(covs))
    print(f"\nwrote {a.out}")
    return 0 if all("DIFFER" not in c.timing_check for c in covs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
