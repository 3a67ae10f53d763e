"""T4: one OpInfo op at one dtype, through torch.compile (Inductor) and the MTIA backend, in
this process: its status and the columns study/opinfo.py writes.

The first few sample inputs run in eager mode (the reference) and through
`torch.compile(fn, backend="inductor", fullgraph=False, dynamic=False)`; the outputs are compared
with the study's tolerances for compiled code (study/tolerances.py, use "compiled"), loosened to
the OpInfo's own forward-test override where that is looser. A failure is classified by
study/opinfo_errors.py and, when the Triton path failed, run once more through Inductor's own
C++ backend (column inductor_cpp) to tell this backend's failures from Inductor's.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from study.opinfo_errors import _chain, _first_line, classify_exception
from study.tolerances import tolerance

# Ops whose output is not a function of the inputs, beyond what OpInfo marks
# (has_nondeterministic_output) and what the two-seed eager check below catches.
NONDETERMINISTIC = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
                    "bernoulli", "normal", "uniform", "multinomial", "rand_like", "randn_like", "randint_like",
                    "randint", "randn", "rand", "nn.functional.dropout", "nn.functional.dropout2d",
                    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
                    "nn.functional.rrelu", "cauchy", "exponential", "geometric", "log_normal", "torch.empty"}


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
    judged_by: str = ""      # "fp64_ref": passed only against the FP64 result; "ties": only up to the
                             # order of equal elements, which an unstable sort leaves unspecified
    wall_s: float = 0.0
    kernels: list[str] = field(default_factory=list)


def op_key(op) -> tuple[str, str]:
    return op.name, op.variant_test_name or ""


def full_name(name: str, variant: str) -> str:
    return f"{name}.{variant}" if variant else name



# ----------------------------------------------------------------------------- comparing

def tolerances(op, dtype) -> tuple[float, float]:
    """The study's (rtol, atol) for the dtype (study/tolerances.py, use "compiled"), loosened to
    the largest forward-test override the OpInfo declares for that dtype on CPU
    (toleranceOverride in its decorators)."""
    from torch.testing._internal.common_device_type import toleranceOverride
    rtol = atol = tolerance(dtype, use="compiled")
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
        if a.numel() == 0:
            continue
        # sparse layouts (COO, CSR, ...) measured on their dense values
        a, e = (t.to_dense() if t.layout != torch.strided else t for t in (a, e))
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


# dtypes whose rows, where they differ from eager beyond tolerance, are judged against FP64
JUDGED_BY_FP64 = ("bfloat16", "float16", "float32")


def fp64_reference(op, sample):
    """The op's eager result with every floating tensor of the sample (bf16, fp16, fp32) in FP64
    (None where eager fails so, e.g. a dtype argument that pins the precision)."""
    import torch
    import torch.utils._pytree as pytree

    def up(t):
        return t.double() if isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16,
                                                                         torch.float32) else t
    try:
        torch.manual_seed(0)
        return op.op(*pytree.tree_map(up, (sample.input, *sample.args)), **pytree.tree_map(up, sample.kwargs))
    except Exception:  # noqa: BLE001 - no reference in FP64: the row stays judged against eager
        return None


def closer_than_eager(eager, compiled, fp64, tol: float) -> bool:
    """torch._dynamo's accuracy rule (`same` with an FP64 reference, the check of PyTorch's own
    benchmark suites): the compiled result passes when its RMSE to the FP64 result is at most
    3x eager's (bf16 / fp16; 2x for FP32) plus tol / 10. Eager rounds each operation to bf16
    where Inductor keeps FP32 intermediates (a cross product's a*b - c*d, a convolution's bias),
    and eager's own algorithm can be further from the exact value than the tolerance (FP32
    matrix_exp at norm 40: 3.5e-4 relative), so a compiled result can differ from eager by more
    than the tolerance and be nearer the exact value."""
    import torch
    from torch._dynamo.utils import same
    from torch.utils._pytree import tree_leaves
    got, exact = tree_leaves(compiled), tree_leaves(fp64)
    if len(got) != len(exact):
        return False
    for c, f in zip(got, exact):
        # `same` lets a result through where eager's error is NaN (its "reference unable to
        # produce this" case): here NaN and infinity must sit where the FP64 result has them
        if isinstance(c, torch.Tensor) and isinstance(f, torch.Tensor) and c.is_floating_point():
            f = f.to(c.dtype)
            if c.shape != f.shape or not (torch.equal(c.isnan(), f.isnan()) and torch.equal(c.isinf(), f.isinf())):
                return False
    try:
        return bool(same(eager, compiled, fp64, tol=tol, equal_nan=True, log_error=lambda *a, **k: None))
    except Exception:  # noqa: BLE001 - outputs `same` cannot compare: judged against eager alone
        return False


# ops whose choice or order among equal values is unspecified: sort / argsort unless
# stable=True is passed (torch.sort's documentation: "the relative order of equivalent elements"
# is preserved only when stable); topk's pick among values tied at the k-th place and, with
# sorted=False, its order; mode's index, one of the value's positions (eager CPU returns the
# last of its run in an unstable std::sort)
TIE_ORDER_FREE = ("sort", "argsort", "topk", "mode")


def _picks(x, dim: int, idx, vals) -> bool:
    """idx (along dim of x) picks exactly vals, NaN where vals has NaN."""
    import torch
    picked = x.gather(dim, idx.long())
    return torch.equal(picked.isnan(), vals.isnan()) and bool((picked.nan_to_num(0) == vals.nan_to_num(0)).all())


def _given(sample, names: tuple[str, ...]) -> dict:
    args, kwargs = list(sample.args), dict(sample.kwargs)
    return dict(zip(names, args), **{k: kwargs[k] for k in names if k in kwargs})


def same_up_to_ties(name: str, sample, out, ref, rtol: float, atol: float) -> bool:
    """Equal to eager but for the choice among equal values, which the call leaves unspecified:
    - unstable sort / argsort: the sorted values equal eager's, and the indices are a
      permutation along the sorted dimension that picks exactly those values;
    - topk: the values equal eager's (both sorted first where sorted=False), and the indices
      are distinct and pick exactly those values;
    - mode: the values equal eager's, and each index is a position of its row's value."""
    import torch
    x = sample.input
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        return False
    if name == "topk":
        given = _given(sample, ("k", "dim", "largest", "sorted"))
        dim = given.get("dim", -1) % x.dim()
        (vals, idx), (ref_vals, _) = out, ref
        if not given.get("sorted", True):
            vals_cmp, ref_cmp = vals.sort(dim).values, ref_vals.sort(dim).values
        else:
            vals_cmp, ref_cmp = vals, ref_vals
        distinct = idx.numel() == 0 or bool((idx.sort(dim).values.diff(dim=dim) != 0).all())
        return compare(vals_cmp, ref_cmp, rtol, atol) is None and distinct and _picks(x, dim, idx, vals)
    if name == "mode":
        given = _given(sample, ("dim", "keepdim"))
        dim = given.get("dim", -1) % x.dim()
        (vals, idx), (ref_vals, _) = out, ref
        if not given.get("keepdim", False):
            vals, idx, ref_vals = vals.unsqueeze(dim), idx.unsqueeze(dim), ref_vals.unsqueeze(dim)
        return compare(vals, ref_vals, rtol, atol) is None and _picks(x, dim, idx, vals)
    given = _given(sample, ("dim", "descending", "stable"))
    if given.get("stable"):
        return False
    dim = given.get("dim", -1) % x.dim()
    if name == "sort":
        if not (isinstance(out, tuple) and len(out) == 2):
            return False
        (vals, idx), (ref_vals, _) = out, ref
    else:
        idx, vals, ref_vals = out, x.gather(dim, out.long()), x.gather(dim, ref.long())
    if compare(vals, ref_vals, rtol, atol) is not None:
        return False
    idx = idx.long()
    order = torch.arange(x.shape[dim]).reshape([-1 if d == dim else 1 for d in range(x.dim())])
    permutation = torch.equal(idx.sort(dim).values, order.expand_as(idx))
    return permutation and _picks(x, dim, idx, vals)


# ----------------------------------------------------------------------------- one op

def _clone(x):
    import torch
    import torch.utils._pytree as pytree
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, x)


# how many samples past the first n T4 looks through for ones with data (searchsorted's first
# with data is its 33rd, nn.functional.unfold's its 82nd); the eager run is skipped for empty
# samples once n are held
SAMPLE_SCAN = 200


def _samples(op, dtype, n: int, scan: int):
    """Up to n (sample, eager_output) pairs whose eager run works and does not depend on the
    seed (a sample with dropout_p > 0 is left out; an op all of whose samples are random is
    reported random), scanning at most `scan`.

    Samples with data come first: OpInfo generators often open with empty tensors
    (`searchsorted`, `cholesky_solve`, `svd`, `nn.functional.unfold` ...), and an op tried only on
    empty inputs computes nothing, so it would say nothing about the op's kernels. A sample is
    empty when it has tensors and all of them have no elements, or when eager returns tensors
    and all of them have no elements (`eye(0)`, `logspace` with 0 steps: a factory's first
    samples often build nothing, and Inductor then emits no kernel). Samples without tensors
    in or out (factories such as `arange`, ops returning a Python scalar) count as having data.
    Empty samples fill in only where fewer than n samples with data exist in the first `scan`;
    the chosen samples keep their order."""
    import itertools
    import torch
    from torch.utils._pytree import tree_leaves
    full, empty, eager_err, random_seen = [], [], None, False
    torch.manual_seed(0)
    gen = op.sample_inputs("cpu", dtype, requires_grad=False)
    for s in itertools.islice(gen, scan):
        tensors = [t for t in tree_leaves((s.input, s.args, s.kwargs)) if isinstance(t, torch.Tensor)]
        is_empty = bool(tensors) and all(t.numel() == 0 for t in tensors)
        if is_empty and len(empty) >= n:
            continue  # enough fillers: only samples with data are run from here on
        try:
            torch.manual_seed(0)
            ref = op.op(*_clone((s.input, *s.args)), **_clone(s.kwargs))
        except Exception as e:  # noqa: BLE001 - eager failure makes the sample inapplicable
            eager_err = e
            continue
        if _is_random(op, s, ref):
            random_seen = True
            continue  # its output depends on the seed (dropout_p > 0): nothing to compare with
        outs = [t for t in tree_leaves(ref) if isinstance(t, torch.Tensor)]
        is_empty = is_empty or (bool(outs) and all(t.numel() == 0 for t in outs))
        (empty if is_empty else full).append((s, ref))
        if len(full) >= n:
            break
    chosen = full + empty[:max(0, n - len(full))]
    if not chosen and random_seen:
        eager_err = RandomOutput("random: eager output depends on the seed")
    return chosen, eager_err


class RandomOutput(Exception):
    """Every sample's eager output depends on the seed."""


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
        samples, eager_err = _samples(op, dtype, n_samples, scan=n_samples + SAMPLE_SCAN)
    except Exception as e:  # noqa: BLE001
        return done(error_type=type(e).__name__, error_message="sample generation failed: " + _first_line(str(e)))
    if not samples:
        if isinstance(eager_err, RandomOutput):
            return done(error_message=str(eager_err))
        if eager_err is not None:
            return done(error_type=type(eager_err).__name__,
                        error_message="eager failed on every sample: " + _first_line(str(eager_err)))
        return done(error_message="no sample inputs")

    rtol, atol = tolerances(op, dtype)
    res.rtol, res.atol = rtol, atol
    compile_fn = compile_fn or _default_compile
    kernels: set[str] = set()
    codes: list[str] = []
    worst = None
    outputs_alias = True  # every sample's output is an input or a view of one (see no_triton_reason)

    def finish(**kw) -> OpResult:
        n_graphs, fallbacks = _inductor_summary(codes)
        res.n_graphs, res.fallback_ops = n_graphs, ";".join(fallbacks)
        if kw.get("status") == "pass_no_triton":
            res.no_triton_reason = no_triton_reason(n_graphs, fallbacks, outputs_alias)
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
        outputs_alias = outputs_alias and aliases_inputs(out, (inp, args, kwargs))
        err = max_abs_err(out, ref)
        if err is not None:
            worst = err if worst is None else max(worst, err)
        mismatch = compare(out, ref, rtol, atol)
        if mismatch is not None and name in TIE_ORDER_FREE and same_up_to_ties(name, s, out, ref, rtol, atol):
            mismatch, res.judged_by = None, "ties"
        if mismatch is not None and dname in JUDGED_BY_FP64:
            fp64 = fp64_reference(op, s)
            if fp64 is not None and closer_than_eager(ref, out, fp64, atol):
                mismatch, res.judged_by = None, "fp64_ref"
        if mismatch is not None:
            return finish(status="wrong", error_type="AssertionError", error_origin="compare",
                          error_message=f"sample {i}: {mismatch}", n_samples=i + 1)
    torch._dynamo.reset()
    return finish(status=pass_status(res.n_launches, _inductor_summary(codes)[1]), n_samples=len(samples))


def no_triton_reason(n_graphs: int, fallbacks: list[str], outputs_alias: bool) -> str:
    """Why a correct row ran no Triton kernel:

    - `fallback`: a graph Inductor compiled computes on the host: an extern kernel or an
      aten/prims fallback other than a pure view (`host_ops`);
    - `no_compute`: nothing needed computing: either Inductor's graphs hold no kernel and no
      host call (views, reshapes, splits, view fallbacks such as aten.view_as_complex), or Dynamo compiled no graph and every tensor the
      op returned, on every sample, is one of its inputs or a view of one (shares an input's
      storage: `positive`, `contiguous` or `float` of a tensor already so, `conj` / `real` /
      `resolve_conj` of a real tensor, `T`, `mT`, `atleast_1d` of a vector ...), which Dynamo
      returns without a graph;
    - `no_graph`: Dynamo compiled no graph and the op returned new data or no tensor (a graph
      break into eager, data-dependent output shapes, a Python scalar such as `item` or
      `allclose`)."""
    if n_graphs == 0:
        return "no_compute" if outputs_alias else "no_graph"
    return "fallback" if host_ops(fallbacks) else "no_compute"


def aliases_inputs(out, inputs) -> bool:
    """Whether `out` holds at least one tensor and every tensor in it shares its storage (the
    same storage object, so views and empty tensors count) with a tensor of `inputs`. Sparse
    layouts have no single storage to compare (`untyped_storage()` raises): a sparse output
    counts as new data, a sparse input as nothing an output can alias."""
    import torch
    from torch.utils._pytree import tree_leaves
    storages = {t.untyped_storage()._cdata for t in tree_leaves(inputs)
                if isinstance(t, torch.Tensor) and t.layout == torch.strided}
    outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
    return bool(outs) and all(t.layout == torch.strided and t.untyped_storage()._cdata in storages for t in outs)


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
# An op the wrapper code calls on the host. Inductor spells it two ways: FallbackKernel as
# `torch.ops.<ns>.<op>.<overload>(` (aten.sort, aten._fft_r2c, prims.convert_element_type ...),
# and the fallbacks with codegen of their own through the wrapper's module aliases
# (`aten = torch.ops.aten`, `inductor_ops = torch.ops.inductor`, `_quantized = torch.ops._quantized`):
# ScatterFallback `aten.scatter_reduce_.two(` / `aten.scatter_.value(` (the scatter reductions
# Inductor does not lower: prod, mean, amin, amax), IndexPutFallback `aten.index_put_(`,
# InplaceCopyFallback `aten.copy_(`, and `aten.view.dtype(`. The lookbehind keeps kernel names
# (`triton_poi_fused_scatter_reduce_0`) and the alias of an already-prefixed call from matching.
_FALLBACK_RE = re.compile(
    r"(?<![\w.])(?:torch\.ops\.(\w+)|(aten|inductor_ops|_quantized))\.(\w+)(?:\.\w+)?\(")
_ALIAS_NS = {"inductor_ops": "inductor"}


def _inductor_summary(codes: list[str]) -> tuple[int, list[str]]:
    """(graphs compiled, distinct extern / aten-fallback calls in their wrapper code)."""
    found: set[str] = set()
    for code in codes:
        for line in code.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "assert_", "from ", "import ")):
                continue
            found.update(f"extern.{m}" for m in _EXTERN_RE.findall(line))
            found.update(f"{ns or _ALIAS_NS.get(alias, alias)}.{name}" for ns, alias, name in _FALLBACK_RE.findall(line))
    return len(codes), sorted(found)


# `fallback_ops` entries that compute nothing and move no data: aten view ops, whose schema
# returns an alias of the input (`Tensor(a)`), so the call only writes a new size / stride /
# offset / dtype or conj bit over the same storage. Inductor leaves a view as a fallback call
# where it cannot fold it into a buffer reinterpretation (complex tensors, the conj bit). Every
# other entry, a copy (aten.clone, aten.copy_, aten.constant_pad_nd), a cast
# (prims.convert_element_type) or a check that reads data (aten._linalg_check_errors)
# included, is computation on the host.
VIEW_FALLBACKS = {
    "aten._conj": "lazy conjugation: sets the conj bit of a view; materialising it is aten._conj_physical or a kernel",
    "aten.alias": "the same tensor under another name",
    "aten.as_strided": "new sizes and strides over the same storage",
    "aten.diagonal": "a strided view of the diagonal",
    "aten.expand": "stride-0 broadcast view",
    "aten.permute": "reordered strides",
    "aten.select": "a view at one index (offset and strides)",
    "aten.slice": "a view of a range (offset and strides)",
    "aten.squeeze": "size-1 dimensions dropped",
    "aten.t": "transposed strides",
    "aten.transpose": "transposed strides",
    "aten.unfold": "overlapping windows as strides",
    "aten.unsqueeze": "a size-1 dimension added",
    "aten.view": "view.default (new shape) and view.dtype (the bits reinterpreted), same storage",
    "aten.view_as_complex": "float pairs read as complex, same storage",
    "aten.view_as_real": "complex read as float pairs, same storage",
}
# Extern kernels that run on the simulated chip rather than on the host: the expert GEMM
# (backend/inductor_cpu/gemm_templates.py, through the registered mtia_sim.gemm). T4 does not
# register it (study/opinfo.configure), so there extern.mm / addmm / bmm / convolution are aten
# on the host.
CHIP_EXTERNS = {"extern.mtia_expert_gemm"}


def host_ops(fallbacks: list[str]) -> list[str]:
    """The `fallback_ops` entries that are computation on the host: every extern kernel but
    the chip's own and every aten / prims / custom-op call but the pure views of VIEW_FALLBACKS."""
    return [f for f in fallbacks if f not in VIEW_FALLBACKS and f not in CHIP_EXTERNS]


def pass_status(n_launches: int, fallbacks: list[str]) -> str:
    """The status of a row whose every sample matched eager:

    - `pass`: Triton kernels ran on the simulated chip and nothing computed on the host;
    - `pass_partial`: Triton kernels ran, but part of the op stayed on the host (an aten
      fallback or a host extern kernel, `host_ops`), e.g. fft.fft's aten._fft_r2c beside a
      Triton copy;
    - `pass_no_triton`: no Triton kernel ran."""
    if n_launches == 0:
        return "pass_no_triton"
    return "pass_partial" if host_ops(fallbacks) else "pass"


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

