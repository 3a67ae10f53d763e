"""T3, model coverage: the study's four models through torch.compile (Inductor) and the MTIA backend.

Per (model, size, chip): the model (study/models.py) is compiled with
`torch._inductor.config.cpu_backend = "triton"`, run once to compile (compile_s = that call's wall
time less its simulation time), then run once more for the measurement, inside
`backend.driver.record_launches()` (every Triton kernel, simulated: cycles and time) and inside a
TorchDispatchMode that records every aten op executed on the host outside the simulator: the
extern / fallback ops Inductor left to aten (mm, addmm, bmm, SDPA, _embedding_bag, topk,
index_add, ...), plus anything run eagerly between graph breaks. Allocation and view ops
(empty_strided, as_strided, ...) are not work and are not counted. The measured output is
checked against eager (study/tolerances.py, use "compiled": BF16 rtol = atol = 1e-2; fp32 1e-4).

Fallback ops have no simulated time. Their chip time is a ROOFLINE ESTIMATE on the chip config
(not a simulation): peaks from the config (study.roofline.engine_peaks: DPE flops_per_cycle x
PEs x clock for the dtype, SIMD elements_per_cycle x PEs x clock, offchip bandwidth_gbps):
  GEMM-like (mm, addmm, bmm, baddbmm, convolution, linear, matmul):  max(flops / peak, bytes / bw)
  SDPA: its two matmuls as a GEMM (as above); its softmax part (scale, mask, max, exp, sum,
        divide: 6 ops per score element) as non-GEMM work on SIMD: 6 x B x H x Sq x Sk / SIMD rate
  other (embedding_bag, topk, index_add, scatter_reduce, ...): bytes moved / bw, where bytes are
        the tensors read and written (for embedding_bag: the rows gathered, not the whole table)
Launch overhead is not added to fallback ops (simulated Triton times include the chip's).

Columns: n_triton_kernels (simulated launches), n_fallback_ops (host ops), fallback_ops
("op x count" list), triton_time_us (simulated), fallback_est_us (roofline estimate),
e2e_us = triton_time_us + fallback_est_us, nongemm_share_triton = non-GEMM Triton time /
(non-GEMM Triton time + non-GEMM fallback estimate) where a Triton kernel that keeps the DPE busy
counts as GEMM, ops_share_triton = n_triton_kernels / (n_triton_kernels + n_fallback_ops).

    python -m study.model_coverage [--out results/raw/model_coverage.csv] [--models a,b]
                                   [--sizes test,study] [--chips mtia2i] [--inductor plain,chip]
                                   [--workers 1]

The cases run in a worker process of study/pool.py; each row is appended as its case finishes
(study/results.py), and a rerun skips cases already measured at this code.

Each model is measured twice by default: `plain` (Inductor's own choices: GEMMs, SDPA and
sparse ops stay host fallbacks, priced at the roofline below) and `chip` (every chip-aware
switch of backend/inductor_cpu on: GEMMs as the expert GEMM, SDPA as flash attention,
embedding bags as the Triton kernel, all simulated; column `inductor`).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as _dt
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from study.pool import run_pool
from study.results import Table, append_table, written_keys
from study.roofline import EnginePeaks, engine_peaks
from study.tolerances import tolerance

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "results" / "raw" / "model_coverage.csv"

COLUMNS = ("run_id", "git_sha", "model", "size", "chip", "n_triton_kernels", "n_fallback_ops", "fallback_ops",
           "triton_time_us", "fallback_est_us", "e2e_us", "nongemm_share_triton", "ops_share_triton", "correct",
           "max_abs_err", "compile_s", "sim_wall_s", "notes", "versions",
           # added (docs/study.md allows adding columns, never overloading one)
           "dtype", "shape", "triton_gemm_us", "triton_nongemm_us", "fallback_gemm_est_us",
           "fallback_nongemm_est_us", "max_abs_err_vs_fp32", "eager_max_abs_err_vs_fp32", "triton_kernels",
           "measured_at",
           # "plain": Inductor's own choices; "chip": the chip-aware switches of backend/inductor_cpu
           # (GEMMs, SDPA and embedding bags as simulated kernels instead of host fallbacks)
           "inductor",
           # "ties": the output misses eager's but matches eager run with the chip's rule for tied
           # values (topk picks the first of equal values: stable_ties); empty: judged against eager
           "judged_by")
# results/raw/model_coverage.csv: a case measured at this code is skipped by a rerun; repeats at
# other code are kept (T3's notebook takes the latest by measured_at)
TABLE = Table("model_coverage", COLUMNS, key=("git_sha", "model", "size", "chip", "inductor"), float_format=".6g")

GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "convolution", "linear", "matmul", "_int_mm",
                      "addmv", "mv", "dot"})
SDPA_PREFIX = "_scaled_dot_product"
# allocation, views and metadata: not work on any chip
NOT_WORK = frozenset({"empty", "empty_strided", "empty_like", "as_strided", "view", "_unsafe_view", "_reshape_alias",
                      "detach", "alias", "lift_fresh", "set_", "resize_", "t", "transpose", "permute", "expand",
                      "unsqueeze", "squeeze", "slice", "select", "reshape", "_local_scalar_dense", "is_same_size",
                      "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "_to_copy_noop",
                      "view_as_complex", "view_as_real", "_conj"})
SOFTMAX_OPS_PER_SCORE = 6


_DTYPE_KEY = {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32", "torch.int8": "i8"}


# ----------------------------------------------------------------------------- host ops

@dataclass
class HostOp:
    name: str                 # aten overload packet name, e.g. "mm", "_embedding_bag"
    kind: str                 # "gemm", "sdpa", "other"
    flops: float = 0.0
    bytes: float = 0.0
    softmax_elems: float = 0.0
    dtype: str = "bf16"

    def est_us(self, peaks: EnginePeaks) -> tuple[float, float]:
        """(GEMM part, non-GEMM part) of the roofline estimate, in microseconds."""
        if self.kind == "gemm":
            return max(self.flops / peaks.gemm_flops(self.dtype), self.bytes / peaks.dram_bytes) * 1e6, 0.0
        if self.kind == "sdpa":
            g = max(self.flops / peaks.gemm_flops(self.dtype), self.bytes / peaks.dram_bytes) * 1e6
            return g, SOFTMAX_OPS_PER_SCORE * self.softmax_elems / peaks.simd_elems * 1e6
        return 0.0, self.bytes / peaks.dram_bytes * 1e6


def _tensors(x: Any) -> list:
    import torch
    import torch.utils._pytree as pytree
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def _nbytes(ts: list) -> float:
    return float(sum(t.numel() * t.element_size() for t in ts))


def describe_host_op(func: Any, args: tuple, kwargs: dict, out: Any) -> HostOp:
    name = func.overloadpacket.__name__
    ins = _tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
    outs = _tensors(out)
    if "out" in kwargs:  # out= variants: the output is an argument
        outs = _tensors(kwargs["out"])
    fdt = next((t for t in ins if t.is_floating_point()), None)
    dtype = _DTYPE_KEY.get(str(fdt.dtype), "bf16") if fdt is not None else "bf16"
    if name in GEMM_OPS:
        o = outs[0]
        if name in ("convolution",):
            w = ins[1]
            flops = 2.0 * o.numel() * (w.numel() // w.shape[0])
        else:
            a = args[1] if name in ("addmm", "baddbmm", "addbmm", "addmv") else args[0]
            k = a.shape[-1]
            flops = 2.0 * o.numel() * k * (a.shape[0] if name == "addbmm" else 1)
        return HostOp(name, "gemm", flops, _nbytes(ins) + _nbytes(outs), dtype=dtype)
    if name.startswith(SDPA_PREFIX):
        q, k, v = args[0], args[1], args[2]
        scores = q.numel() // q.shape[-1] * k.shape[-2]
        flops = 2.0 * scores * q.shape[-1] + 2.0 * scores * v.shape[-1]
        return HostOp(name, "sdpa", flops, _nbytes(ins) + _nbytes(outs[:1]), softmax_elems=float(scores), dtype=dtype)
    if name in ("_embedding_bag", "embedding_bag", "_embedding_bag_forward_only", "embedding"):
        weight, indices = args[0], args[1]
        gathered = indices.numel() * weight.shape[-1] * weight.element_size()
        rest = [t for t in ins if t is not weight]
        return HostOp(name, "other", 0.0, gathered + _nbytes(rest) + _nbytes(outs[:1]), dtype=dtype)
    return HostOp(name, "other", 0.0, _nbytes(ins) + _nbytes(outs), dtype=dtype)


@contextlib.contextmanager
def record_host_ops():
    """Every aten op run on the host outside a simulated launch (the simulator itself computes
    with torch: its ops are not the model's)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    got: list[HostOp] = []

    class _Mode(TorchDispatchMode):
        @classmethod
        def ignore_compile_internals(cls) -> bool:
            # Dynamo runs frames eagerly under any other mode; this one is off while compiling
            # and on while the compiled artifact runs, which is what is measured
            return True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            # ops of the mtia_sim namespace launch simulated programs (backend/inductor_cpu/extern.py)
            if getattr(func, "namespace", "") != "mtia_sim":
                name = func.overloadpacket.__name__
                if name not in NOT_WORK and not name.startswith("sym_"):
                    got.append(describe_host_op(func, args, kwargs, out))
            return out

    # backend.driver.launch runs the simulator with the dispatch modes disabled: the torch ops
    # of a simulated launch never reach this one
    with _Mode():
        yield got


# ----------------------------------------------------------------------------- measuring

@dataclass
class Coverage:
    model: str
    size: str
    chip: str
    dtype: str
    shape: str
    inductor: str = "plain"
    n_triton_kernels: int = 0
    n_fallback_ops: int = 0
    fallback_ops: str = ""
    triton_time_us: float = 0.0
    triton_gemm_us: float = 0.0
    triton_nongemm_us: float = 0.0
    fallback_est_us: float = 0.0
    fallback_gemm_est_us: float = 0.0
    fallback_nongemm_est_us: float = 0.0
    e2e_us: float = 0.0
    nongemm_share_triton: float | None = None
    ops_share_triton: float | None = None
    correct: bool = False
    max_abs_err: float | None = None
    max_abs_err_vs_fp32: float | None = None
    eager_max_abs_err_vs_fp32: float | None = None
    compile_s: float = 0.0
    sim_wall_s: float = 0.0
    triton_kernels: str = ""
    notes: str = ""
    judged_by: str = ""


def _is_gemm_kernel(rec: Any) -> bool:
    busy = getattr(rec.timing, "engine_busy", None) or {}
    return busy.get("DPE", 0) > 0


def _count_list(names: list[str]) -> str:
    c = collections.Counter(names)
    return ";".join(f"{n}x{k}" for n, k in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def configure() -> None:
    from backend.inductor_cpu import benchmark
    from study import opinfo
    opinfo.configure()
    benchmark.install()  # Inductor's autotuning compares simulated time, not the simulator's host time


def measure(model: str, size: str, chip: str = "mtia2i") -> Coverage:
    import torch
    import backend.driver as drv
    from study import models

    drv.set_chip(chip)
    torch._dynamo.reset()
    case = models.build(model, size)
    dtype = str(case.inputs[0].dtype if case.inputs[0].is_floating_point() else models.DTYPE).replace("torch.", "")
    tol = tolerance(dtype, use="compiled")
    cov = Coverage(model, size, chip, dtype, case.shape)
    with torch.no_grad():
        ref = case.module(*case.inputs)
        fn = torch.compile(case.module, backend="inductor", fullgraph=False, dynamic=False)
        from torch._dynamo.utils import counters
        graphs0 = counters["stats"]["unique_graphs"]
        t0 = time.perf_counter()
        with drv.record_launches() as warm:
            fn(*case.inputs)
        cov.compile_s = time.perf_counter() - t0 - sum(r.sim_wall_s for r in warm)
        n_graphs = counters["stats"]["unique_graphs"] - graphs0
        n_autotune = len(warm)
        with drv.record_launches() as recs, record_host_ops() as host, drv.shared_llc():
            out = fn(*case.inputs)
        if counters["stats"]["unique_graphs"] - graphs0 != n_graphs:
            raise RuntimeError(f"{model}/{size}: the measured call recompiled; its launches would include autotuning")
    err = (out.double() - ref.double()).abs().max().item()
    cov.max_abs_err = err
    if dtype != "float32":  # how far each is from the same model in fp32 (context for a bf16 miss)
        import copy
        with torch.no_grad():
            ref32 = copy.deepcopy(case.module).float()(*(a.float() if a.is_floating_point() else a
                                                         for a in case.inputs)).double()
        cov.max_abs_err_vs_fp32 = (out.double() - ref32).abs().max().item()
        cov.eager_max_abs_err_vs_fp32 = (ref.double() - ref32).abs().max().item()
    cov.correct = _close(out, ref, tol)
    ties_note = ""
    if not cov.correct:
        # eager's topk picks among tied values by its selection algorithm; the chip's sort-based
        # topk takes the first of them (backend/inductor_cpu/sort.py). The same model run eagerly
        # under the chip's rule tells a routing tie from a wrong kernel.
        with torch.no_grad(), stable_ties() as ties:
            ref_ties = case.module(*case.inputs)
        if ties.rows_differ and _close(out, ref_ties, tol):
            cov.correct, cov.judged_by = True, "ties"
            cov.max_abs_err = (out.double() - ref_ties.double()).abs().max().item()
            ties_note = (f"; judged against eager under the chip's topk tie rule (first of equal values): eager's "
                         f"topk picks other indices in {ties.rows_differ} of {ties.rows} rows (tied scores), "
                         f"max abs err vs eager {err:.3g}")

    peaks = engine_peaks(chip)
    cov.n_triton_kernels = len(recs)
    cov.triton_time_us = sum(r.time_us for r in recs)
    cov.triton_gemm_us = sum(r.time_us for r in recs if _is_gemm_kernel(r))
    cov.triton_nongemm_us = cov.triton_time_us - cov.triton_gemm_us
    cov.sim_wall_s = sum(r.sim_wall_s for r in recs)
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
    scale = f"; study size scaled from docs/study.md ({case.paper}): {case.scaling}" if size == "study" else ""
    cov.notes = (f"{case.shape}{scale}; {n_graphs} FX graph(s) compiled (graph breaks: {max(n_graphs - 1, 0)}); "
                 f"first call launched {n_autotune} kernels (autotuning included; 0 extra when Inductor's cache was "
                 f"warm), compile_s is that call's wall time less its simulation time; fallback_est_us is a roofline estimate on the {chip} config "
                 f"(GEMM max(flops/DPE peak, bytes/LPDDR bw), SDPA softmax on SIMD, other ops bytes/bw), "
                 f"not a simulation{ties_note}")
    return cov


def _close(out: Any, ref: Any, tol: float) -> bool:
    import torch
    try:
        torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
        return True
    except AssertionError:
        return False


@contextlib.contextmanager
def stable_ties():
    """Run eager code with topk's ties broken as the chip's sort-based topk breaks them: the
    first of equal values (in input order) is taken first, a stable sort cut to k. Yields a
    counter of the topk rows (`rows`) and of those where eager's own topk picks other indices
    (`rows_differ`), so a reference under this rule is only used where ties were the cause."""
    import inspect
    from types import SimpleNamespace

    import torch
    from torch.overrides import TorchFunctionMode

    sig = inspect.signature(lambda input, k, dim=-1, largest=True, sorted=True: None)  # noqa: A002
    counts = SimpleNamespace(rows=0, rows_differ=0)

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in (torch.topk, torch.Tensor.topk):
                return func(*args, **kwargs)
            a = sig.bind(*args, **kwargs).arguments
            x, k, dim = a["input"], a["k"], a.get("dim", -1)
            largest = a.get("largest", True)
            v, i = torch.sort(x, dim=dim, descending=largest, stable=True)
            v, i = v.narrow(dim, 0, k), i.narrow(dim, 0, k)
            own = func(*args, **kwargs).indices
            d = dim % max(x.dim(), 1)
            same = (own.sort(dim=d).values == i.sort(dim=d).values).all(dim=d)
            counts.rows += same.numel()
            counts.rows_differ += int((~same).sum())
            return torch.return_types.topk((v, i))

    with _Mode():
        yield counts


# ----------------------------------------------------------------------------- output

def write_rows(covs: list[Coverage], out: Path, run_id: str | None = None) -> None:
    """Append the rows of `covs` to `out` (study/results.py), with this code's fingerprint."""
    from study.provenance import source_fingerprint, versions
    run_id = run_id or _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    sha, ver, now = source_fingerprint(), versions(), _dt.datetime.now().isoformat(timespec="seconds")
    append_table(out, TABLE, [dict(asdict(c), run_id=run_id, git_sha=sha, versions=ver, measured_at=now) for c in covs])


def markdown_table(covs: list[Coverage]) -> str:
    head = ("| model | size | chip | inductor | kernels (sim) | fallback ops | sim us | fallback us (roofline est.) "
            "| e2e us | non-GEMM on chip | ops on chip | correct | max err | fallback ops |")
    lines = [head, "|" + "---|" * 14]
    for c in covs:
        pct = lambda v: "" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        lines.append(f"| {c.model} | {c.size} | {c.chip} | {c.inductor} | {c.n_triton_kernels} | {c.n_fallback_ops} | "
                     f"{c.triton_time_us:.2f} | {c.fallback_est_us:.2f} | {c.e2e_us:.2f} | "
                     f"{pct(c.nongemm_share_triton)} | {pct(c.ops_share_triton)} | {c.correct}"
                     f"{' (' + c.judged_by + ')' if c.judged_by else ''} | "
                     f"{c.max_abs_err:.3g} | {c.fallback_ops.replace(';', ', ')} |")
    return "\n".join(lines)


def _measure_case(case: tuple[str, str, str, str]) -> Coverage:
    """A pool task: one (chip, size, model, inductor mode), configured for the mode first."""
    from backend.inductor_cpu import options
    from study.inductor import configure as configure_chip_aware
    from study.inductor import unconfigure as stock_inductor
    chip, size, model, mode = case
    # kernels compiled in this process by an earlier case are dropped: Inductor keeps them keyed
    # by their source, and a backend option that is not in the source (persistent_invariant's
    # choice) can differ between cases; reusing them made a case's cycles depend on which cases a
    # worker ran before it (the jagged block at the study size: 46.95 or 47.21 us)
    options.forget_compiled_kernels()
    # plain: Inductor's own choices exactly (nothing of backend/inductor_cpu installed)
    configure_chip_aware() if mode == "chip" else stock_inductor()
    options.activate(**{k: mode == "chip" and on for k, on in options.DEFAULTS.items()})
    t0 = time.perf_counter()
    c = measure(model, size, chip)
    c.inductor = mode
    print(f"# {model}/{size}/{chip}/{mode}: {c.n_triton_kernels} Triton kernels, {c.n_fallback_ops} fallback "
          f"ops, correct={c.correct}, compile {c.compile_s:.1f} s, sim {c.sim_wall_s:.1f} s, "
          f"wall {time.perf_counter() - t0:.1f} s", flush=True)
    return c


def main(argv: list[str] | None = None) -> int:
    from study import models
    from study.provenance import source_fingerprint
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--sizes", default=",".join(models.SIZES))
    ap.add_argument("--chips", default="mtia2i")
    ap.add_argument("--inductor", default="plain,chip",
                    help="plain: Inductor's own choices; chip: every chip-aware switch of backend/inductor_cpu on")
    ap.add_argument("--workers", type=int, default=1,
                    help="worker processes; 1 (the default) measures every case in one process, in order, so "
                         "compile_s sees the on-disk caches earlier cases warmed; kernels compiled in memory "
                         "are dropped per case, so cycles do not depend on the order or the worker count")
    a = ap.parse_args(argv)
    for mode in a.inductor.split(","):
        if mode not in ("plain", "chip"):
            raise SystemExit(f"--inductor: unknown mode {mode!r}; known: plain, chip")
    cases = [(c, s, m, i) for c in a.chips.split(",") for s in a.sizes.split(",") for m in a.models.split(",")
             for i in a.inductor.split(",")]
    # resume: a case already measured at this code is not measured again
    sha, done = source_fingerprint(), written_keys(a.out, TABLE)
    todo = [(c, s, m, i) for c, s, m, i in cases if (sha, m, s, c, i) not in done]
    if len(todo) < len(cases):
        print(f"# resuming: {len(cases) - len(todo)} cases already in {a.out} at {sha}", flush=True)
    # the cases run in a worker (study/pool.py), which configures Inductor: this process is left
    # with Inductor's own choices, as it found them
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    covs, failed = [], []
    for d in run_pool(_measure_case, todo, a.workers, initializer=configure):
        if d.error is not None:
            failed.append(f"{'/'.join(d.task)}: {type(d.error).__name__}: {d.error}")
            print(f"# {failed[-1]}", flush=True)
            continue
        write_rows([d.value], a.out, run_id)  # one case at a time: an interrupted run keeps what it measured
        covs.append(d.value)
    print(markdown_table(covs))
    print(f"\nwrote {a.out}")
    return 0 if all(c.correct for c in covs) and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
