"""The T4 classifier (study/opinfo.py) on a few ops: pass, pass_partial, pass_no_triton, wrong, errors, resume."""
from __future__ import annotations

import csv

import pytest
import torch

from study import opinfo

opinfo.configure()


@pytest.fixture(autouse=True)
def _t4_settings():
    """T4's Inductor settings before every test: a test of the study's Inductor path that ran
    earlier in this worker (tests/study/conftest.py `chip_aware_inductor`) uninstalls the
    rewrites T4 installs (host_op_lowerings, sort_kernels, special_functions)."""
    opinfo.configure()


def _op(name: str, variant: str = ""):
    for op in opinfo.load_op_db():
        if op.name == name and (op.variant_test_name or "") == variant:
            return op
    raise LookupError(name)


@pytest.mark.parametrize("name", ["add", "sin", "sum"])
def test_passing_op_runs_triton_on_the_simulator(name):
    r = opinfo.run_op(_op(name), torch.float32, n_samples=1)
    assert r.status == "pass", r
    assert r.n_kernels > 0 and r.n_launches > 0
    assert r.n_samples >= 1 and r.max_abs_err is not None and r.max_abs_err <= 1e-4


def test_extern_only_op_is_pass_no_triton():
    # hash_tensor stays an aten fallback (an XOR of FP64 bit patterns; no lowering here): correct,
    # but no Triton kernel is launched
    r = opinfo.run_op(_op("hash_tensor"), torch.float32, n_samples=1)
    assert r.status == "pass_no_triton", r
    assert r.n_kernels == 0
    assert (r.n_graphs, r.fallback_ops, r.no_triton_reason) == (1, "aten.hash_tensor", "fallback")


def test_host_op_lowerings_take_addbmm_onto_the_chip():
    from backend.inductor_cpu import options
    r = opinfo.run_op(_op("addbmm"), torch.float32, n_samples=1)
    assert r.status == "pass" and not r.fallback_ops, r
    options.activate(triton_gemm_templates=True, host_op_lowerings=False)
    try:
        r = opinfo.run_op(_op("addbmm"), torch.float32, n_samples=1)
    finally:
        options.activate(triton_gemm_templates=True)
    assert (r.status, r.fallback_ops, r.no_triton_reason) == ("pass_no_triton", "aten.addbmm", "fallback"), r


@pytest.mark.parametrize("name, reason", [("positive", "no_compute"), ("T", "no_compute"), ("real", "no_compute"),
                                          ("transpose", "no_compute"), ("item", "no_graph"),
                                          ("allclose", "no_graph")])
def test_no_graph_ops_returning_an_input_or_its_view_are_no_compute(name, reason):
    # Dynamo hands Inductor no graph for all of them; those whose every output shares an
    # input's storage computed nothing, the others ran eager code after a graph break
    r = opinfo.run_op(_op(name), torch.float32, n_samples=2)
    assert (r.status, r.no_triton_reason) == ("pass_no_triton", reason), r


def test_no_triton_reason_rule():
    from study.opinfo_op import aliases_inputs, no_triton_reason
    x = torch.randn(3, 4)
    assert aliases_inputs(x, (x,)) and aliases_inputs((x.T, x[1:]), ([x], {}))
    assert aliases_inputs(torch.empty(0)[:0], (torch.empty(0),)) is False  # another storage
    assert not aliases_inputs(x + 1, (x,)) and not aliases_inputs(True, (x,)) and not aliases_inputs((x, x.clone()), (x,))
    # sparse tensors have no storage to compare: new data, never an error
    sp = x.to_sparse()
    assert not aliases_inputs(sp, (x,)) and not aliases_inputs(x.to_sparse_csr(), (sp,)) and aliases_inputs(x, (sp, x))
    assert no_triton_reason(0, [], True) == "no_compute" and no_triton_reason(0, [], False) == "no_graph"
    assert no_triton_reason(1, [], False) == "no_compute" and no_triton_reason(1, ["aten.topk"], True) == "fallback"


def test_host_computation_rule():
    from study.opinfo_op import VIEW_FALLBACKS, host_ops, pass_status
    # views move no data: a row whose only fallbacks are views passes
    assert host_ops(["aten.permute", "aten.squeeze", "aten.view_as_real", "aten.slice", "aten._conj", "aten.view"]) == []
    assert pass_status(4, ["aten._conj", "aten.view_as_real"]) == "pass"
    # anything that computes or copies is host work, host externs included (no expert GEMM in T4)
    for f in ("aten._fft_r2c", "aten.sort", "aten.scatter_reduce_", "aten.index_put_", "aten.clone", "aten.copy_",
              "aten.constant_pad_nd", "aten._conj_physical", "prims.convert_element_type",
              "aten._linalg_check_errors", "extern.mm", "extern.addmm", "extern.bmm", "extern.convolution",
              "torch_nn._linear_cross_entropy_batch_chunked"):
        assert f not in VIEW_FALLBACKS and host_ops([f, "aten.permute"]) == [f], f
        assert pass_status(3, [f]) == "pass_partial" and pass_status(0, [f]) == "pass_no_triton"
    assert host_ops(["extern.mtia_expert_gemm"]) == []  # the chip's own GEMM, when registered
    assert pass_status(1, []) == "pass" and pass_status(0, []) == "pass_no_triton"


def test_fallback_calls_are_found_in_every_spelling_of_the_wrapper_code():
    from study.opinfo_op import _inductor_summary
    code = """
aten = torch.ops.aten
inductor_ops = torch.ops.inductor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
def call(args):
    # aten.fake_in_a_comment(buf0)
    triton_poi_fused_scatter_reduce_0.run(arg0_1, buf0, 50, stream=stream0)
    aten.scatter_reduce_.two(buf0,0,arg1_1,arg2_1, reduce='amax', include_self=False)
    aten.index_put_(buf1, [arg2_1], arg1_1, False)
    buf2 = torch.ops.aten.sort.default(arg0_1)
    buf3 = aten.view.dtype(buf2, torch.int32)
    extern_kernels.mm(arg0_1, arg1_1, out=buf4)
    buf5 = torch.ops.torch_nn._linear_cross_entropy_batch_chunked.default(arg0_1)
    buf6 = reinterpret_tensor(buf4, (5, 5), (1, 5), 0)
"""
    assert _inductor_summary([code]) == (1, ["aten.index_put_", "aten.scatter_reduce_", "aten.sort", "aten.view",
                                             "extern.mm", "torch_nn._linear_cross_entropy_batch_chunked"])


@pytest.mark.parametrize("name, variant", [("scatter_reduce", "amax"), ("scatter_reduce", "prod")])
def test_scatter_reductions_inductor_leaves_to_aten_are_pass_partial(name, variant):
    # with host_op_lowerings (T4's default) the reduction runs on the chip
    r = opinfo.run_op(_op(name, variant), torch.float32, n_samples=1)
    assert (r.status, r.fallback_ops) == ("pass", ""), r
    r = opinfo.run_op(_op(name, "sum"), torch.float32, n_samples=1)
    assert (r.status, r.fallback_ops) == ("pass", ""), r
    # Inductor lowers scatter_reduce sum to Triton atomics but hands prod / mean / amin / amax
    # to its ScatterFallback (`aten.scatter_reduce_.two(` in the wrapper): without the switch a
    # Triton copy of `self` runs on the chip, the reduction on the host
    from backend.inductor_cpu import options
    options.activate(triton_gemm_templates=True, host_op_lowerings=False)
    try:
        r = opinfo.run_op(_op(name, variant), torch.float32, n_samples=1)
    finally:
        options.activate(triton_gemm_templates=True)
    assert (r.status, r.fallback_ops) == ("pass_partial", "aten.scatter_reduce_"), r
    assert r.n_kernels >= 1


def test_mm_runs_as_inductors_triton_template_on_the_chip():
    opinfo.configure()  # T4 turns the templates on (another test module may have switched them off since)
    r = opinfo.run_op(_op("mm"), torch.float32, n_samples=1)
    assert r.status == "pass" and r.n_kernels >= 1, r


def test_wrong_numbers_are_classified_wrong():
    def bad_compile(fn):
        compiled = torch.compile(fn, backend="inductor", fullgraph=False, dynamic=False)
        return lambda *a: compiled(*a) + 1e-2  # kernels still run; the numbers are off
    r = opinfo.run_op(_op("add"), torch.float32, n_samples=1, compile_fn=bad_compile, cpp_control=False)
    assert r.status == "wrong", r
    assert r.n_kernels > 0 and r.max_abs_err == pytest.approx(1e-2, rel=1e-3)


def test_backend_and_simulator_errors_are_classified():
    from backend.tile_ir import UnsupportedError
    from backend.sim.isa import SimulationError
    from torch._inductor.exc import InductorError

    def failing_compile(exc):
        def compile_fn(fn):
            def run(*a):
                raise exc
            return run
        return compile_fn

    inner = UnsupportedError("kernel 'triton_poi_x' at k.py:3: operation 'tt.foo' is not supported by the MTIA backend")
    wrapped = InductorError(inner, None)
    r = opinfo.run_op(_op("add"), torch.float32, n_samples=1, compile_fn=failing_compile(wrapped), cpp_control=False)
    assert (r.status, r.error_type, r.error_origin, r.backend_op) == \
        ("compile_error", "UnsupportedError", "backend", "tt.foo"), r
    assert "is not supported by the MTIA backend" in r.error_message

    sim = SimulationError("triton_poi_x", "k.py:4", "misaligned fp32 access into 'in_ptr0'")
    r = opinfo.run_op(_op("add"), torch.float32, n_samples=1, compile_fn=failing_compile(sim), cpp_control=False)
    assert (r.status, r.error_origin, r.backend_op) == ("runtime_error", "simulator", "misaligned fp32"), r

    missing = AttributeError("module 'backend.language.libdevice' has no attribute 'cyl_bessel_i0'")
    r = opinfo.run_op(_op("add"), torch.float32, n_samples=1, compile_fn=failing_compile(InductorError(missing, None)),
                      cpp_control=False)
    assert (r.status, r.error_origin, r.backend_op) == ("compile_error", "backend", "libdevice.cyl_bessel_i0"), r

    r = opinfo.run_op(_op("add"), torch.float32, n_samples=1, compile_fn=failing_compile(ValueError("boom")),
                      cpp_control=False)
    assert (r.status, r.error_type, r.error_message) == ("runtime_error", "ValueError", "boom")


def test_random_and_unsupported_dtype_are_skipped():
    assert opinfo.run_op(_op("bernoulli"), torch.float32).status == "skipped"
    assert opinfo.run_op(_op("nn.functional.dropout"), torch.float32).status == "skipped"


def test_sweep_writes_rows_and_resumes(tmp_path):
    out = tmp_path / "cov.csv"
    meta = {"run_id": "t", "git_sha": "x", "versions": "v"}
    ops = [_op("neg"), _op("bernoulli")]
    rows = opinfo.sweep(ops, [torch.float32], out, timeout=60, n_samples=1, workers=2, log_dir=None, run_meta=meta)
    assert sorted(r["status"] for r in rows) == ["pass", "skipped"]
    with out.open() as f:
        got = list(csv.DictReader(f))
    assert [c for c in got[0]] == list(opinfo.COLUMNS) and len(got) == 2
    # resumed: nothing left to run
    assert opinfo.sweep(ops, [torch.float32], out, 60, 1, 2, None, meta) == []
    s = opinfo.summarize(out, file=open("/dev/null", "w"))
    assert s["counts"] == {"pass": 1, "skipped": 1} and s["coverage"] == 1.0
    # other code (another source fingerprint): its rows are dropped and measured again
    again = opinfo.sweep(ops[:1], [torch.float32], out, 60, 1, 2, None, dict(meta, git_sha="y"))
    assert [r["op"] for r in again] == ["neg"]
    with out.open() as f:
        assert [(r["op"], r["git_sha"]) for r in csv.DictReader(f)] == [("neg", "y")]


def test_sweep_times_out_a_hung_op(tmp_path, monkeypatch):
    import time as _time
    monkeypatch.setattr(opinfo, "run_op", lambda *a, **k: _time.sleep(30))
    rows = opinfo.sweep([_op("neg")], [torch.float32], tmp_path / "c.csv", timeout=1, n_samples=1, workers=1,
                        log_dir=None, run_meta={})
    assert [r["status"] for r in rows] == ["timeout"]


def test_samples_with_data_come_before_empty_ones():
    """searchsorted's generator opens with three empty samples: T4 takes ones with data first,
    and an empty sample only where too few have data."""
    from study.opinfo_op import SAMPLE_SCAN, _samples

    def has_data(s):
        return any(t.numel() > 0 for t in (s.input, *s.args) if isinstance(t, torch.Tensor))

    op = _op("searchsorted")
    first = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:3]
    assert not any(has_data(s) for s in first)
    got, _ = _samples(op, torch.float32, 3, scan=3 + SAMPLE_SCAN)
    assert len(got) == 3 and all(has_data(s) for s, _ in got)
    # only empty samples within the scan: they fill in
    got, _ = _samples(op, torch.float32, 3, scan=3)
    assert len(got) == 3 and not any(has_data(s) for s, _ in got)


def test_samples_whose_output_is_empty_count_as_empty():
    """eye(0) and logspace with 0 steps have no input tensor but build nothing: T4 runs the
    factory on samples whose output has elements, and the row then runs a Triton kernel."""
    from study.opinfo_op import SAMPLE_SCAN, _samples
    for name, variant in (("eye", ""), ("logspace", "tensor_overload")):
        op = _op(name, variant)
        got, _ = _samples(op, torch.float32, 3, scan=3 + SAMPLE_SCAN)
        assert len(got) == 3 and all(ref.numel() > 0 for _, ref in got), name
    r = opinfo.run_op(_op("eye"), torch.float32, n_samples=3, cpp_control=False)
    assert r.status == "pass" and r.n_kernels >= 1, r


def test_low_precision_rows_may_be_judged_against_fp64_but_not_past_nan():
    from study.opinfo_op import closer_than_eager
    exact = torch.tensor([100.3, -0.7], dtype=torch.float64)
    nearer = exact.bfloat16()                                   # rounded once
    eager = torch.tensor([101.0, -0.5], dtype=torch.bfloat16)   # rounded per operation
    assert closer_than_eager(eager, nearer, exact, 0.01)
    assert not closer_than_eager(nearer, eager, exact, 0.01)   # the other way round fails
    # eager and FP64 both NaN (a mean over no elements): a number is not let through
    nan64 = torch.tensor(float("nan"), dtype=torch.float64)
    assert not closer_than_eager(torch.tensor(float("nan")).bfloat16(), torch.tensor(0.0).bfloat16(), nan64, 0.01)


def test_cross_in_bf16_passes_against_fp64_and_says_so():
    """Eager's bf16 cross product rounds a*b and c*d before subtracting; Inductor keeps FP32
    between them. The row passes by the FP64 rule and records it."""
    r = opinfo.run_op(_op("linalg.cross"), torch.bfloat16, n_samples=3)
    assert r.status == "pass" and r.judged_by == "fp64_ref", r


def test_max_abs_err_reads_sparse_layouts_densely():
    from study.opinfo_op import max_abs_err
    a = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    b = a.clone()
    b[1, 0] = 2.5
    assert max_abs_err(a.to_sparse_csr(), b.to_sparse_csr()) == 0.5
    assert max_abs_err(a.to_sparse(), b) == 0.5


def test_random_samples_are_left_out_and_wrapped_ops_compile():
    """sdpa's third sample has dropout_p = 0.5: left out (its output depends on the seed); the
    op, which OpInfo calls through wrapper_set_seed (untraceable by Dynamo), now compiles."""
    from study.opinfo_op import SAMPLE_SCAN, _samples
    op = _op("nn.functional.scaled_dot_product_attention")
    got, _ = _samples(op, torch.float32, 3, scan=3 + SAMPLE_SCAN)
    assert len(got) == 3 and all(s.kwargs.get("dropout_p", 0.0) == 0.0 for s, _ in got)
    r = opinfo.run_op(op, torch.float32, n_samples=1)
    assert r.status == "pass" and r.n_graphs >= 1, r
    r = opinfo.run_op(_op("nn.functional.dropout"), torch.float32, n_samples=1)
    assert r.status == "skipped" and "random" in r.error_message


@pytest.mark.parametrize("variant", ["chunked", "chunked_none"])
def test_linear_cross_entropy_chunked_ops_run_on_chip(variant):
    """The chunked custom ops' loss (their gradients unread) as linear + cross_entropy (splice.py)."""
    from study.opinfo_op import host_ops
    r = opinfo.run_op(_op("nn.functional.linear_cross_entropy", variant), torch.float32, n_samples=2)
    assert r.status == "pass" and not host_ops([f for f in r.fallback_ops.split(";") if f]), r


def test_unstable_sorts_are_compared_up_to_the_order_of_ties():
    from types import SimpleNamespace

    from study.opinfo_op import same_up_to_ties
    x = torch.tensor([[2.0, 1.0, 2.0, 0.0]])
    ref = torch.sort(x, dim=1)
    swapped = (ref.values, ref.indices[:, [0, 1, 3, 2]])          # the two 2.0s the other way round
    sample = SimpleNamespace(input=x, args=(1,), kwargs={})
    assert same_up_to_ties("sort", sample, swapped, ref, 0.0, 0.0)
    bad = (ref.values, torch.tensor([[3, 1, 0, 0]]))                 # not a permutation
    assert not same_up_to_ties("sort", sample, bad, ref, 0.0, 0.0)
    assert same_up_to_ties("argsort", sample, swapped[1], ref.indices, 0.0, 0.0)
    assert not same_up_to_ties("argsort", sample, torch.tensor([[1, 3, 0, 2]]), ref.indices, 0.0, 0.0)
    stable = SimpleNamespace(input=x, args=(), kwargs={"dim": 1, "stable": True})
    assert not same_up_to_ties("sort", stable, swapped, ref, 0.0, 0.0)  # stable: ties have an order


def test_topk_and_mode_are_compared_up_to_the_choice_among_ties():
    from types import SimpleNamespace

    from study.opinfo_op import same_up_to_ties
    x = torch.tensor([[2.0, 1.0, 2.0, 0.0, 2.0]])
    ref = torch.topk(x, 2, dim=1)
    other = (ref.values, torch.tensor([[4, 2]]))                      # two other 2.0s
    sample = SimpleNamespace(input=x, args=(2, 1), kwargs={})
    assert same_up_to_ties("topk", sample, other, ref, 0.0, 0.0)
    assert not same_up_to_ties("topk", sample, (ref.values, torch.tensor([[2, 2]])), ref, 0.0, 0.0)  # one twice
    assert not same_up_to_ties("topk", sample, (ref.values, torch.tensor([[0, 1]])), ref, 0.0, 0.0)  # 1.0 picked
    assert not same_up_to_ties("topk", sample, (torch.tensor([[2.0, 1.0]]), torch.tensor([[0, 1]])), ref, 0.0, 0.0)
    unsorted = SimpleNamespace(input=x, args=(3, 1, False, False), kwargs={})   # smallest 3, any order
    ref3 = torch.topk(x, 3, dim=1, largest=False, sorted=False)
    assert same_up_to_ties("topk", unsorted, (torch.tensor([[2.0, 0.0, 1.0]]), torch.tensor([[4, 3, 1]])), ref3, 0.0, 0.0)
    m = torch.tensor([[3.0, 1.0, 3.0, 1.0, 3.0]])
    mref = torch.mode(m, 1)
    msample = SimpleNamespace(input=m, args=(1,), kwargs={})
    assert same_up_to_ties("mode", msample, (mref.values, torch.tensor([0])), mref, 0.0, 0.0)
    assert not same_up_to_ties("mode", msample, (mref.values, torch.tensor([1])), mref, 0.0, 0.0)
    assert not same_up_to_ties("mode", msample, (torch.tensor([1.0]), torch.tensor([1])), mref, 0.0, 0.0)
