"""The T4 classifier (study/opinfo.py) on a few ops: pass, pass_no_triton, wrong, errors, resume."""
from __future__ import annotations

import csv

import pytest
import torch

from study import opinfo

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
    # kthvalue stays an aten fallback (no lowering takes it): correct, but no Triton kernel is
    # launched
    r = opinfo.run_op(_op("kthvalue"), torch.float32, n_samples=1)
    assert r.status == "pass_no_triton", r
    assert r.n_kernels == 0
    assert (r.n_graphs, r.fallback_ops, r.no_triton_reason) == (1, "aten.kthvalue", "fallback")


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
    assert no_triton_reason(0, [], True) == "no_compute" and no_triton_reason(0, [], False) == "no_graph"
    assert no_triton_reason(1, [], False) == "no_compute" and no_triton_reason(1, ["aten.topk"], True) == "fallback"


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
