"""T4, operator coverage: PyTorch OpInfo ops through torch.compile (Inductor) and the MTIA backend.

For every OpInfo in `op_db` (inference only, no grad) and each requested dtype, the first few
sample inputs are run in eager mode (the reference) and through
`torch.compile(fn, backend="inductor", fullgraph=False, dynamic=False)` with
`torch._inductor.config.cpu_backend = "triton"`, so Inductor's Triton kernels compile through
backend/ and run on the functional simulator. Each (op, variant, dtype) gets one status:

  pass            correct, and at least one Triton kernel ran on the simulated chip
  pass_no_triton  correct, but Inductor produced no Triton kernel (extern/aten fallback only)
  wrong           numbers differ beyond tolerance (torch.testing.assert_close, equal_nan)
  compile_error   Dynamo / Inductor / Triton / the backend failed to compile
  runtime_error   the compiled function failed when run (simulator errors included)
  timeout         the per-op time limit was hit
  skipped         not applicable: dtype unsupported, sample generation or eager fails,
                  random or nondeterministic output

Every op runs in a forked worker (the parent imports torch, Inductor and the backend once and
warms them up), at most `--workers` at a time, with a per-op timeout; rows are appended and
flushed one at a time, and a rerun skips (op, variant, dtype) already in the output file.

    python -m study.opinfo [--ops a,b,c] [--limit N] [--out results/raw/opinfo_coverage.csv]
                           [--timeout S] [--dtypes float32,bfloat16] [--samples 3] [--workers 2]
    python -m study.opinfo --summary [--out ...]
"""
from __future__ import annotations

import argparse
import collections
import csv
import datetime as _dt
import io
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any, Iterable

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "results" / "raw" / "opinfo_coverage.csv"

COLUMNS = ("run_id", "git_sha", "versions", "op", "variant", "dtype", "status", "n_samples", "n_kernels",
           "n_launches", "max_abs_err", "atol", "rtol", "error_type", "error_origin", "backend_op",
           "error_message", "error_where", "n_graphs", "fallback_ops", "no_triton_reason", "inductor_cpp", "wall_s",
           "measured_at")

STATUSES = ("pass", "pass_no_triton", "wrong", "compile_error", "runtime_error", "timeout", "skipped")
ERROR_STATUSES = ("compile_error", "runtime_error", "timeout")

# docs/study.md: fp32 1e-4, bf16/fp16 1e-2 (rtol and atol); OpInfo overrides may only loosen them.
STUDY_TOL = {"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1e-2), "float16": (1e-2, 1e-2)}

# Ops whose output is not a function of the inputs, beyond what OpInfo marks
# (has_nondeterministic_output) and what the two-seed eager check below catches.
NONDETERMINISTIC = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
                    "bernoulli", "normal", "uniform", "multinomial", "rand_like", "randn_like", "randint_like",
                    "randint", "randn", "rand", "nn.functional.dropout", "nn.functional.dropout2d",
                    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
                    "nn.functional.rrelu", "cauchy", "exponential", "geometric", "log_normal", "torch.empty"}

# Inference-relevant ops first (the sweep may be cut short): docs/study.md's workloads and their parts.
PRIORITY_OPS = [
    "add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
    "pow", "maximum", "minimum", "clamp", "where", "reciprocal", "erf", "floor", "round",
    "sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "argmax", "argmin", "logsumexp", "norm",
    "softmax", "log_softmax", "nn.functional.softmax", "nn.functional.log_softmax",
    "nn.functional.layer_norm", "nn.functional.rms_norm", "nn.functional.group_norm", "nn.functional.batch_norm",
    "nn.functional.normalize",
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.leaky_relu",
    "nn.functional.elu", "nn.functional.hardswish", "nn.functional.hardsigmoid", "nn.functional.softplus",
    "nn.functional.mish", "nn.functional.glu", "nn.functional.relu6", "nn.functional.tanhshrink",
    "nn.functional.linear", "matmul", "mm", "bmm", "addmm", "baddbmm",
    "nn.functional.embedding", "nn.functional.embedding_bag", "index_select", "gather", "take_along_dim",
    "index_add", "scatter", "scatter_add", "index_put", "masked_fill", "masked_select", "take",
    "cat", "stack", "hstack", "vstack", "transpose", "permute", "view", "reshape", "flatten", "squeeze",
    "unsqueeze", "expand", "narrow", "select", "split", "chunk", "t", "contiguous", "clone", "flip", "roll",
    "repeat", "tril", "triu", "cumsum", "cumprod", "topk", "sort",
    "nn.functional.scaled_dot_product_attention", "nn.functional.pad",
]


@dataclass
class OpResult:
    op: str
    variant: str
    dtype: str
    status: str
    n_samples: int = 0
    n_kernels: int = 0
    n_launches: int = 0
    max_abs_err: float | None = None
    atol: float | None = None
    rtol: float | None = None
    error_type: str = ""
    error_origin: str = ""
    backend_op: str = ""
    error_message: str = ""
    error_where: str = ""
    n_graphs: int = 0
    fallback_ops: str = ""
    no_triton_reason: str = ""
    inductor_cpp: str = ""
    wall_s: float = 0.0
    kernels: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- set-up

def configure(cache_dir: str | None = None) -> None:
    """Environment and Inductor settings; call before the first torch.compile (and before fork)."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # compile in-process: no pool, fork-safe
    if cache_dir:
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(cache_dir, "triton"))
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache_dir, "inductor"))
    import torch
    import torch._inductor.config as ic
    torch.set_num_threads(1)
    ic.cpu_backend = "triton"
    ic.compile_threads = 1
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 64
    import warnings
    warnings.filterwarnings("ignore")


def warm_up() -> None:
    """One compile in the parent so every worker starts with Dynamo, Inductor, Triton and the
    backend imported (saves seconds per op)."""
    import torch
    from backend.driver import record_launches
    x = torch.randn(4, 4)
    with record_launches() as recs:
        torch.compile(lambda a: (a.sin() + 1).sum(-1), backend="inductor", fullgraph=False, dynamic=False)(x)
    if not recs:
        raise RuntimeError("warm-up: Inductor produced no Triton launch; is cpu_backend='triton' reaching backend/?")
    torch._dynamo.reset()


def load_op_db() -> list:
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def op_key(op) -> tuple[str, str]:
    return op.name, op.variant_test_name or ""


def full_name(name: str, variant: str) -> str:
    return f"{name}.{variant}" if variant else name


def prioritised(ops: list) -> list:
    """Curated inference ops first, then pointwise / reduction / nn.functional, then the rest;
    op_db order within a tier."""
    from torch.testing._internal.opinfo.core import BinaryUfuncInfo, ReductionOpInfo, UnaryUfuncInfo
    rank = {n: i for i, n in enumerate(PRIORITY_OPS)}

    def tier(i_op):
        i, op = i_op
        if op.name in rank:
            return (0, rank[op.name], i)
        if isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo, ReductionOpInfo)):
            return (1, 0, i)
        if op.name.startswith("nn.functional.") or "index" in op.name or "scatter" in op.name:
            return (2, 0, i)
        if op.name.startswith(("linalg.", "fft.", "special.", "sparse.", "_")):
            return (4, 0, i)
        return (3, 0, i)
    return [op for _, op in sorted(enumerate(ops), key=tier)]


# ----------------------------------------------------------------------------- comparing

def tolerances(op, dtype) -> tuple[float, float]:
    """docs/study.md's (rtol, atol) for the dtype, loosened to the largest forward-test override
    the OpInfo declares for that dtype on CPU (toleranceOverride in its decorators)."""
    from torch.testing._internal.common_device_type import toleranceOverride
    rtol, atol = STUDY_TOL.get(str(dtype).replace("torch.", ""), (1e-4, 1e-4))
    for d in getattr(op, "decorators", ()) or ():
        decs = getattr(d, "decorators", [d])
        test_name = getattr(d, "test_name", None) or ""
        if getattr(d, "device_type", None) not in (None, "cpu"):
            continue
        if any(k in test_name for k in ("grad", "jvp", "vjp", "backward")):
            continue
        for dec in decs:
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                t = dec.d[dtype]
                atol, rtol = max(atol, t.atol), max(rtol, t.rtol)
    return rtol, atol


def _leaves(x) -> list:
    import torch.utils._pytree as pytree
    return pytree.tree_leaves(x)


def max_abs_err(actual, expected) -> float | None:
    import torch
    worst = None
    for a, e in zip(_leaves(actual), _leaves(expected)):
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)) or a.shape != e.shape:
            continue
        if a.numel() == 0 or e.is_sparse or a.is_sparse:
            continue
        a64, e64 = a.detach().to(torch.complex128 if a.is_complex() or e.is_complex() else torch.float64), \
            e.detach().to(torch.complex128 if a.is_complex() or e.is_complex() else torch.float64)
        both_nan = a64.isnan() & e64.isnan()
        same = (a64 == e64) | both_nan
        d = (a64 - e64).abs()
        d = torch.where(same, torch.zeros_like(d), d)
        d = torch.where(d.isnan(), torch.full_like(d, float("inf")), d)
        v = float(d.max())
        worst = v if worst is None else max(worst, v)
    return worst


def compare(actual, expected, rtol: float, atol: float) -> str | None:
    """None when close, else assert_close's first message line."""
    import torch
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True, check_device=False,
                                   check_layout=False)
        return None
    except AssertionError as e:
        return _first_line(str(e))
    except (TypeError, ValueError, RuntimeError) as e:  # e.g. a non-tensor output of another type
        if actual == expected if not isinstance(actual, torch.Tensor) else False:
            return None
        return _first_line(f"{type(e).__name__}: {e}")


# ----------------------------------------------------------------------------- errors

def _first_line(s: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in str(s).strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line[:limit]


_WRAPPERS = ("InductorError", "BackendCompilerFailed", "CompilationError", "TorchRuntimeError")


def _chain(e: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first: Dynamo/Inductor's inner_exception, then
    __cause__; __context__ only out of a wrapper (never into an unrelated handled error)."""
    out, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.append(e)
        nxt = getattr(e, "inner_exception", None) or e.__cause__
        if nxt is None and type(e).__name__ in _WRAPPERS and not e.__suppress_context__:
            nxt = e.__context__
        e = nxt
    return out


def _short_path(path: str) -> str:
    path = str(path)
    for prefix in ("site-packages/", str(REPO) + "/"):
        if prefix in path:
            return path.split(prefix, 1)[1]
    return os.path.basename(path)


def _where(e: BaseException) -> str:
    """The innermost frame in backend/ that the exception passed through, else its innermost frame."""
    frames = traceback.extract_tb(e.__traceback__) if e.__traceback__ else []
    mine = [f for f in frames if f.filename.startswith(str(REPO / "backend"))]
    f = (mine or frames or [None])[-1]
    return f"{_short_path(f.filename)}:{f.lineno}:{f.name}" if f else ""


def _clean_message(root: BaseException) -> str:
    text = str(root)
    if type(root).__name__ == "CompilationError":  # "at L:C:" + source + caret + the error, last
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        text = lines[-1] if lines else text
    msg = _first_line(text) or type(root).__name__
    return re.sub(r"(?:/[^\s:']+/)([^/\s:']+\.py)", r"\1", msg)  # generated-module paths -> file name


_BACKEND_OP_PATTERNS = [
    (re.compile(r"operation '([^']+)'"), "{0}"),
    (re.compile(r"libdevice\.(\w+) is not available"), "libdevice.{0}"),
    (re.compile(r"extern function '([^']+)'"), "extern {0}"),
    (re.compile(r"libdevice' has no attribute '(\w+)'"), "libdevice.{0}"),
    (re.compile(r"type (\S+) is not supported"), "type {0}"),
    (re.compile(r"comparison predicate '([^']+)'"), "cmp {0}"),
    (re.compile(r"atomic '([^']+)'"), "atomic {0}"),
    (re.compile(r"(?:does not fit|local memory)", re.I), "local memory"),
    (re.compile(r"misaligned (\S+) access"), "misaligned {0}"),
    (re.compile(r"(out of bounds|outside)", re.I), "out of bounds"),
    (re.compile(r"unknown instruction (\S+)"), "instr {0}"),
    (re.compile(r"cannot decode dense constant"), "dense constant"),
    (re.compile(r"not structured by pointer analysis"), "pointer analysis"),
]


def classify_exception(e: BaseException) -> tuple[str, str, str, str, str, str]:
    """(status, error_type, error_origin, backend_op, message, where) for an exception of the
    compiled run. The root is the innermost cause; its origin is the backend when the backend
    raised it (its type or its innermost frame is in backend/, or Triton found no such
    function in the backend's libdevice), the simulator or driver when raised while running a
    kernel (backend/sim, backend/driver.py), else Triton's front end, Inductor, Dynamo or torch.
    Backend and Triton/Inductor/Dynamo failures are compile errors; simulator, driver and
    other failures at run time are runtime errors."""
    from backend.sim.isa import SimulationError
    from backend.tile_ir import UnsupportedError
    chain = _chain(e)
    names = {type(x).__name__ for x in chain}
    root = chain[-1]
    where = _where(root)
    text = str(root)
    mod = type(root).__module__ or ""
    if isinstance(root, SimulationError) or where.startswith("backend/sim/"):
        origin = "simulator"
    elif where.startswith("backend/driver.py"):
        origin = "driver"
    elif isinstance(root, UnsupportedError) or mod.startswith("backend") or where.startswith("backend/") \
            or "backend.language.libdevice" in text:
        origin = "backend"
    elif mod.startswith("triton") or "CompilationError" in names:
        origin = "triton"
    elif mod.startswith("torch._inductor") or "InductorError" in names or "BackendCompilerFailed" in names:
        origin = "inductor"
    elif mod.startswith(("torch._dynamo", "torch.fx")) or "TorchRuntimeError" in names:
        origin = "dynamo"
    else:
        origin = "torch"
    if origin in ("simulator", "driver"):
        status = "runtime_error"
    elif origin in ("backend", "triton", "inductor", "dynamo"):
        status = "compile_error"
    else:
        status = "runtime_error"
    msg = _clean_message(root)
    backend_op = ""
    if origin in ("backend", "simulator", "driver"):
        for pat, fmt in _BACKEND_OP_PATTERNS:
            m = pat.search(text)
            if m:
                backend_op = fmt.format(*m.groups())
                break
        backend_op = backend_op or f"{type(root).__name__} in {where.rsplit(':', 1)[-1] or '?'}"
    return status, type(root).__name__, origin, backend_op, msg, where


def error_pattern(row: dict) -> str:
    """A grouping key for failures: the backend op when the backend names one, else the
    message with kernel names, locations, numbers and quoted names blanked."""
    if row.get("backend_op"):
        msg = row.get("error_message", "")
        msg = re.sub(r"^kernel '[^']*' at [^:]*(:\d+)*:\s*", "", msg)
        msg = re.sub(r"'[^']*'", "'X'", msg)
        msg = re.sub(r"\d+", "N", msg)
        return f"[{row.get('error_origin')}] {row['backend_op']}: {msg[:100]}"
    msg = row.get("error_message", "")
    msg = re.sub(r"kernel '[^']*' at [^:]*(:\d+)*:\s*", "", msg)
    msg = re.sub(r"'[^']*'", "'X'", msg)
    msg = re.sub(r"\[[^\]]*\]", "[..]", msg)
    msg = re.sub(r"\d+", "N", msg)
    return f"[{row.get('error_origin') or row.get('status')}] {row.get('error_type')}: {msg[:100]}"


# ----------------------------------------------------------------------------- one op

def _clone(x):
    import torch
    import torch.utils._pytree as pytree
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, x)


def _samples(op, dtype, n: int, scan: int):
    """Up to n (sample, eager_output) pairs whose eager run works; scans at most `scan`."""
    import itertools
    import torch
    got, eager_err = [], None
    torch.manual_seed(0)
    gen = op.sample_inputs("cpu", dtype, requires_grad=False)
    for s in itertools.islice(gen, scan):
        try:
            torch.manual_seed(0)
            ref = op.op(*_clone((s.input, *s.args)), **_clone(s.kwargs))
        except Exception as e:  # noqa: BLE001 - eager failure makes the sample inapplicable
            eager_err = e
            continue
        got.append((s, ref))
        if len(got) >= n:
            break
    return got, eager_err


def _is_random(op, sample, ref) -> bool:
    import torch
    torch.manual_seed(1)
    try:
        again = op.op(*_clone((sample.input, *sample.args)), **_clone(sample.kwargs))
    except Exception:  # noqa: BLE001
        return False
    return compare(again, ref, 0.0, 0.0) is not None


def run_op(op, dtype, n_samples: int = 3, compile_fn=None, cpp_control: bool = True) -> OpResult:
    """Classify one OpInfo at one dtype in this process. `compile_fn(fn)` replaces torch.compile
    (tests use it to inject a wrong result)."""
    import torch
    from backend.driver import record_launches
    name, variant = op_key(op)
    dname = str(dtype).replace("torch.", "")
    t0 = time.perf_counter()
    res = OpResult(name, variant, dname, "skipped")

    def done(**kw) -> OpResult:
        for k, v in kw.items():
            setattr(res, k, v)
        res.wall_s = round(time.perf_counter() - t0, 3)
        return res

    if not op.supports_dtype(dtype, "cpu"):
        return done(error_message=f"{dname} not supported on cpu by the OpInfo")
    if getattr(op, "has_nondeterministic_output", False) or name in NONDETERMINISTIC:
        return done(error_message="nondeterministic or random output")
    try:
        samples, eager_err = _samples(op, dtype, n_samples, scan=n_samples + 10)
    except Exception as e:  # noqa: BLE001
        return done(error_type=type(e).__name__, error_message="sample generation failed: " + _first_line(str(e)))
    if not samples:
        if eager_err is not None:
            return done(error_type=type(eager_err).__name__,
                        error_message="eager failed on every sample: " + _first_line(str(eager_err)))
        return done(error_message="no sample inputs")
    if _is_random(op, *samples[0]):
        return done(error_message="random: eager output depends on the seed")

    rtol, atol = tolerances(op, dtype)
    res.rtol, res.atol = rtol, atol
    compile_fn = compile_fn or _default_compile
    kernels: set[str] = set()
    codes: list[str] = []
    worst = None

    def finish(**kw) -> OpResult:
        n_graphs, fallbacks = _inductor_summary(codes)
        res.n_graphs, res.fallback_ops = n_graphs, ";".join(fallbacks)
        if kw.get("status") == "pass_no_triton":
            res.no_triton_reason = "no_graph" if n_graphs == 0 else ("fallback" if fallbacks else "no_compute")
        if kw.get("status") in ("wrong", "compile_error", "runtime_error") and cpp_control:
            res.inductor_cpp = _cpp_control(op, samples, rtol, atol)
        return done(n_kernels=len(kernels), kernels=sorted(kernels), max_abs_err=worst, **kw)

    for i, (s, ref) in enumerate(samples):
        inp, args, kwargs = _clone((s.input, s.args, s.kwargs))
        try:
            with record_launches() as recs:
                out = _run_compiled(op, compile_fn, inp, args, kwargs, codes)
        except Exception as e:  # noqa: BLE001
            status, etype, origin, bop, msg, where = classify_exception(e)
            res.n_launches += len(recs)
            kernels.update(r.name for r in recs)
            return finish(status=status, error_type=etype, error_origin=origin, backend_op=bop, error_message=msg,
                          error_where=where, n_samples=i)
        res.n_launches += len(recs)
        kernels.update(r.name for r in recs)
        err = max_abs_err(out, ref)
        if err is not None:
            worst = err if worst is None else max(worst, err)
        mismatch = compare(out, ref, rtol, atol)
        if mismatch is not None:
            return finish(status="wrong", error_type="AssertionError", error_origin="compare",
                          error_message=f"sample {i}: {mismatch}", n_samples=i + 1)
    torch._dynamo.reset()
    return finish(status="pass" if res.n_launches > 0 else "pass_no_triton", n_samples=len(samples))


def _default_compile(f):
    import torch
    return torch.compile(f, backend="inductor", fullgraph=False, dynamic=False)


def _run_compiled(op, compile_fn, inp, args, kwargs, codes: list[str]):
    """One fresh compile and run of the op; the wrapper code of every Inductor graph compiled
    (or loaded from the FX graph cache) is appended to `codes`."""
    from unittest import mock
    import torch
    from torch._inductor.graph import GraphLowering
    torch._dynamo.reset()
    opfn = op.op

    def fn(inp, args, kwargs):
        return opfn(inp, *args, **kwargs)

    compiled = compile_fn(fn)
    torch.manual_seed(0)
    with mock.patch.object(GraphLowering, "save_output_code", codes.append):
        return compiled(inp, args, kwargs)


_EXTERN_RE = re.compile(r"\bextern_kernels\.(\w+)\(")
_FALLBACK_RE = re.compile(r"\btorch\.ops\.(\w+)\.(\w+)\.\w+\(")


def _inductor_summary(codes: list[str]) -> tuple[int, list[str]]:
    """(graphs compiled, distinct extern / aten-fallback calls in their wrapper code)."""
    found: set[str] = set()
    for code in codes:
        for line in code.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "assert_", "from ", "import ")):
                continue
            found.update(f"extern.{m}" for m in _EXTERN_RE.findall(line))
            found.update(f"{ns}.{name}" for ns, name in _FALLBACK_RE.findall(line))
    return len(codes), sorted(found)


def _cpp_control(op, samples, rtol, atol) -> str:
    """The same samples through Inductor's own C++ CPU backend: 'pass' means the failure
    belongs to the Triton path (the MTIA backend, or Inductor's Triton codegen); 'wrong' or an
    error means Inductor itself fails there too."""
    import torch._inductor.config as ic
    old = ic.cpu_backend
    ic.cpu_backend = "cpp"
    try:
        for s, ref in samples:
            inp, args, kwargs = _clone((s.input, s.args, s.kwargs))
            try:
                out = _run_compiled(op, _default_compile, inp, args, kwargs, [])
            except Exception as e:  # noqa: BLE001
                return f"error: {type(_chain(e)[-1]).__name__}"
            if compare(out, ref, rtol, atol) is not None:
                return "wrong"
        return "pass"
    finally:
        ic.cpu_backend = old
        import torch
        torch._dynamo.reset()


# ----------------------------------------------------------------------------- the sweep

def _worker(op, dtype, n_samples: int, conn, log_path: str | None) -> None:
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    try:
        r = run_op(op, dtype, n_samples)
        payload = asdict(r)
    except BaseException as e:  # noqa: BLE001 - report whatever happened
        traceback.print_exc()
        payload = {"status": "runtime_error", "error_type": type(e).__name__, "error_origin": "harness",
                   "error_message": _first_line(str(e))}
    try:
        conn.send(payload)
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def read_done(path: Path) -> set[tuple[str, str, str]]:
    if not path.exists():
        return set()
    with path.open(newline="") as f:
        return {(r["op"], r["variant"], r["dtype"]) for r in csv.DictReader(f)}


class RowWriter:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists() or path.stat().st_size == 0
        self.f = path.open("a", newline="")
        if new:
            self._write(dict(zip(COLUMNS, COLUMNS)))

    def _write(self, row: dict) -> None:
        buf = io.StringIO()
        csv.DictWriter(buf, COLUMNS, extrasaction="ignore", lineterminator="\n").writerow(row)
        self.f.write(buf.getvalue())  # one write per row
        self.f.flush()
        os.fsync(self.f.fileno())

    def write(self, row: dict) -> None:
        self._write(row)

    def close(self) -> None:
        self.f.close()


def sweep(ops: list, dtypes: list, out: Path, timeout: float, n_samples: int, workers: int,
          log_dir: Path | None, run_meta: dict) -> list[dict]:
    import multiprocessing as mp
    from multiprocessing.connection import wait
    ctx = mp.get_context("fork")
    done = read_done(out)
    jobs = [(op, dt) for op in ops for dt in dtypes
            if (op.name, op.variant_test_name or "", str(dt).replace("torch.", "")) not in done]
    n_prev = len(ops) * len(dtypes) - len(jobs)
    if n_prev:
        print(f"[opinfo] resuming: {n_prev} (op, dtype) already in {out}", file=sys.stderr)
    writer = RowWriter(out)
    rows: list[dict] = []
    running: dict[Any, tuple] = {}
    counts = collections.Counter()
    t_start = time.time()
    total = len(jobs)
    queue = collections.deque(jobs)

    def finish(key_op, dt, payload: dict, wall: float) -> None:
        name, variant = op_key(key_op)
        row = {c: "" for c in COLUMNS}
        row.update({k: v for k, v in payload.items() if k in COLUMNS})
        row.update(run_meta)
        row.update(op=name, variant=variant, dtype=str(dt).replace("torch.", ""), wall_s=round(wall, 3),
                   measured_at=_dt.datetime.now().isoformat(timespec="seconds"))
        for k in ("max_abs_err", "atol", "rtol"):
            if row.get(k) is None:
                row[k] = ""
        writer.write(row)
        rows.append(row)
        counts[row["status"]] += 1
        n = sum(counts.values())
        el = time.time() - t_start
        eta = el / n * (total - n)
        summary = " ".join(f"{s}={counts[s]}" for s in STATUSES if counts[s])
        extra = f" {row['backend_op'] or row['error_type']}" if row["status"] not in ("pass", "pass_no_triton") else ""
        print(f"[opinfo] {n}/{total} {full_name(name, variant)} {row['dtype']}: {row['status']}{extra} "
              f"({row['wall_s']}s) | {summary} | {el/60:.1f} min, eta {eta/60:.1f} min", file=sys.stderr, flush=True)

    try:
        while queue or running:
            while queue and len(running) < workers:
                op, dt = queue.popleft()
                recv, send = ctx.Pipe(duplex=False)
                log = None
                if log_dir is not None:
                    log_dir.mkdir(parents=True, exist_ok=True)
                    log = str(log_dir / f"{full_name(*op_key(op))}.{str(dt).replace('torch.', '')}.log")
                p = ctx.Process(target=_worker, args=(op, dt, n_samples, send, log), daemon=True)
                p.start()
                send.close()
                running[recv] = (p, op, dt, time.time())
            ready = wait(list(running), timeout=0.5)
            for conn in ready:
                p, op, dt, t0 = running.pop(conn)
                try:
                    payload = conn.recv()
                except (EOFError, OSError):
                    p.join(5)
                    payload = {"status": "runtime_error", "error_type": "WorkerCrash", "error_origin": "harness",
                               "error_message": f"worker exited with code {p.exitcode} before reporting"}
                conn.close()
                p.join(5)
                if p.is_alive():
                    p.kill()
                finish(op, dt, payload, time.time() - t0)
            now = time.time()
            for conn, (p, op, dt, t0) in list(running.items()):
                if now - t0 > timeout:
                    p.kill()
                    p.join(5)
                    conn.close()
                    del running[conn]
                    finish(op, dt, {"status": "timeout", "error_type": "Timeout", "error_origin": "harness",
                                    "error_message": f"no result within {timeout:g} s"}, now - t0)
    finally:
        for conn, (p, *_r) in running.items():
            p.kill()
        writer.close()
    return rows


# ----------------------------------------------------------------------------- summary

def summarize(path: Path, file=sys.stdout, top: int = 25, dtype: str | None = None) -> dict:
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if dtype is None or r["dtype"] == dtype]
    dtypes = sorted({r["dtype"] for r in rows})
    if dtype is None and len(dtypes) > 1:
        return {d: summarize(path, file, top, d) for d in dtypes}
    c = collections.Counter(r["status"] for r in rows)
    total = len(rows)
    applicable = total - c["skipped"]
    attempted = sum(c[s] for s in STATUSES if s != "skipped")
    cov = c["pass"] / applicable if applicable else 0.0
    correct = (c["pass"] + c["pass_no_triton"]) / applicable if applicable else 0.0
    p = lambda s: print(s, file=file)  # noqa: E731
    p(f"OpInfo coverage ({path}{', ' + dtype if dtype else ''}): {total} (op, variant, dtype) rows")
    p("  " + ", ".join(f"{s}={c[s]}" for s in STATUSES))
    p(f"  coverage = pass / (total - skipped) = {c['pass']}/{applicable} = {cov:.1%}")
    p(f"  pass / (pass + pass_no_triton + wrong + errors) = {c['pass']}/{attempted} = "
      f"{(c['pass'] / attempted if attempted else 0):.1%}")
    p(f"  correct (pass + pass_no_triton) / (total - skipped) = {c['pass'] + c['pass_no_triton']}/{applicable} = "
      f"{correct:.1%}")
    fails = [r for r in rows if r["status"] in ("wrong", "compile_error", "runtime_error", "timeout")]
    triton_fails = [r for r in fails if r.get("inductor_cpp") == "pass" or r["status"] == "timeout"]
    tp = c["pass"] + len(triton_fails)
    p(f"  Triton-path success = pass / (pass + failures that Inductor's C++ backend does not share) = "
      f"{c['pass']}/{tp} = {(c['pass'] / tp if tp else 0):.1%}")
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for r in fails:
        key = error_pattern(r) if r["status"] != "wrong" else "[wrong] numbers differ"
        if r["status"] == "timeout":
            key = "[timeout]"
        groups[key].append(full_name(r["op"], r["variant"]))
    p(f"  top failure causes ({len(fails)} failing rows):")
    for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:top]:
        p(f"    {len(names):4d}  {key}  e.g. {', '.join(names[:5])}")
    nt = collections.Counter(r.get("no_triton_reason") or "?" for r in rows if r["status"] == "pass_no_triton")
    p("  pass_no_triton because: " + ", ".join(f"{k}={v}" for k, v in nt.most_common())
      + "  (no_graph: Dynamo compiled no graph; no_compute: views/metadata only; fallback: extern/aten call)")
    ctl = collections.Counter(r.get("inductor_cpp") or "-" for r in fails)
    p("  the same failing samples through Inductor's C++ backend: " + ", ".join(f"{k}={v}" for k, v in ctl.most_common())
      + "  (pass = the failure is the Triton/MTIA path's)")
    bops = collections.Counter(r["backend_op"] for r in fails if r["backend_op"])
    if bops:
        cls = collections.Counter()
        for k, v in bops.items():
            cls[k.split(".")[0] if k.startswith("libdevice.") else k] += v
        p("  backend failure classes: " + ", ".join(f"{k}={v}" for k, v in cls.most_common()))
        p("  backend-reported ops: " + ", ".join(f"{k}={v}" for k, v in bops.most_common()))
    origins = collections.Counter(r["error_origin"] for r in fails)
    p("  failures by origin: " + ", ".join(f"{k or '-'}={v}" for k, v in origins.most_common()))
    skip = collections.Counter(re.sub(r":.*", "", r["error_message"]) for r in rows if r["status"] == "skipped")
    p("  skipped because: " + "; ".join(f"{k or '-'}={v}" for k, v in skip.most_common(8)))
    return {"counts": dict(c), "coverage": cov, "pass_of_attempted": c["pass"] / attempted if attempted else 0.0}


# ----------------------------------------------------------------------------- CLI

def select_ops(op_db: list, names: str | None, limit: int | None, prioritise: bool = True) -> list:
    ops = list(op_db)
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        ops = [op for op in ops if op.name in wanted or full_name(*op_key(op)) in wanted]
        missing = set(wanted) - {op.name for op in ops} - {full_name(*op_key(op)) for op in ops}
        if missing:
            print(f"[opinfo] not in op_db: {', '.join(sorted(missing))}", file=sys.stderr)
    elif prioritise:
        ops = prioritised(ops)
    if limit:
        ops = ops[:limit]
    return ops


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m study.opinfo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated OpInfo names (name or name.variant)")
    ap.add_argument("--limit", type=int, help="run at most N ops (after prioritising)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--timeout", type=float, default=60.0, help="per-op wall-clock limit (s)")
    ap.add_argument("--dtypes", default="float32", help="comma-separated: float32,bfloat16")
    ap.add_argument("--bf16", action="store_true", help="also run bfloat16")
    ap.add_argument("--samples", type=int, default=3, help="sample inputs per op")
    ap.add_argument("--workers", type=int, default=2, help="concurrent forked workers (<= 2 on a shared box)")
    ap.add_argument("--log-dir", type=Path, default=Path("/tmp/opinfo_logs"), help="per-op worker logs")
    ap.add_argument("--cache-dir", default=None, help="Triton/Inductor cache (default: per source fingerprint)")
    ap.add_argument("--summary", action="store_true", help="only print the summary of --out")
    a = ap.parse_args(list(argv) if argv is not None else None)
    if a.summary:
        summarize(a.out)
        return 0

    from study.provenance import source_fingerprint, versions
    sha = source_fingerprint()
    configure(a.cache_dir or f"/tmp/opinfo_cache/{sha}")
    import torch
    dtypes = [getattr(torch, d.strip()) for d in a.dtypes.split(",") if d.strip()]
    if a.bf16 and torch.bfloat16 not in dtypes:
        dtypes.append(torch.bfloat16)
    t0 = time.time()
    warm_up()
    op_db = load_op_db()
    ops = select_ops(op_db, a.ops, a.limit)
    run_meta = {"run_id": f"opinfo-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}", "git_sha": sha,
                "versions": versions()}
    print(f"[opinfo] {len(ops)} ops x {len(dtypes)} dtypes, {a.workers} workers, timeout {a.timeout:g}s, "
          f"git {sha}; set-up {time.time() - t0:.1f}s", file=sys.stderr)
    sweep(ops, dtypes, a.out, a.timeout, a.samples, a.workers, a.log_dir, run_meta)
    print(f"[opinfo] sweep wall time {(time.time() - t0) / 60:.1f} min", file=sys.stderr)
    summarize(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
