"""Differential tests: the MTIA backend against Triton's own interpreter on identical inputs.

The interpreter needs TRITON_INTERPRET=1 before triton is imported, so it runs once per test
session in a subprocess (interp_runner.py) over every case in corpus.DIFF_CASES; under xdist
the workers share that one run through a file lock.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from filelock import FileLock

import corpus

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 1234


@pytest.fixture(scope="module")
def interp_dir(tmp_path_factory, worker_id) -> str:
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # shared by all xdist workers of this session
    out = root / "interp_outputs"
    with FileLock(str(root / "interp_outputs.lock")):
        if not (out / "DONE").exists():
            out.mkdir(exist_ok=True)
            env = dict(os.environ, TRITON_INTERPRET="1")
            proc = subprocess.run([sys.executable, os.path.join(HERE, "interp_runner.py"), str(out), str(SEED),
                                   *corpus.DIFF_CASES], env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stderr[-3000:]
            (out / "DONE").write_text("ok")
    return str(out)


@pytest.mark.parametrize("name", corpus.DIFF_CASES)
def test_matches_interpreter(name: str, interp_dir: str) -> None:
    case = corpus.by_name(name)
    ref = torch.load(os.path.join(interp_dir, f"{name}.pt"))
    assert "error" not in ref, f"interpreter failed on {name}:\n{ref.get('error')}"
    args = case.make(corpus.gen(SEED))
    for k, v in ref["inputs"].items():  # identical inputs in both processes
        assert torch.equal(args[k], v), f"{name}: input {k} differs between processes"
    case.kernel[case.grid_of(args)](**args, **case.kwargs)
    got = {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}
    corpus.assert_matches(case, got, ref["outputs"])
