"""The program builder: programs it writes compute the right numbers and fit local memory."""
from __future__ import annotations

import pytest
import torch

from backend.sim.builder import LocalMemoryOverflow, ProgramBuilder
from backend.sim.executor import execute
from backend.program import Program
from tools.microbench import gemm_grid, gemm_program


def test_expert_gemm_is_correct():
    M, N, K = 512, 256, 128
    prog = gemm_program(M, N, K, workers=4)
    a, b = torch.randn(M, K).bfloat16(), torch.randn(K, N).bfloat16()
    c = torch.zeros(M, N)
    execute(prog, gemm_grid(M, N, workers=4), [a, b, c])
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-3)
    assert prog.local_mem_bytes <= 384 * 1024
    assert prog.buffers["%acc_0"].copies == 2


def test_softmax_builder_program_is_correct():
    from tools.bench_sim import softmax_program
    x = torch.randn(64, 256).bfloat16()
    y = torch.zeros_like(x)
    execute(softmax_program(64, 256, workers=4), (4, 1, 1), [x, y])
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), 1), atol=1e-2, rtol=1e-2)


def test_local_memory_overflow_is_a_clear_error():
    b = ProgramBuilder("too_big")
    src = b.param_ptr("src", "f32")
    b.dma_load(src, 0, [256, 256], [256, 1], copies=1)       # 256 KB
    with pytest.raises(LocalMemoryOverflow, match=r"too_big.*384 KB"):
        b.dma_load(src, 0, [128, 256], [256, 1], copies=2)   # + 256 KB


def test_registers_are_named_and_serialisable():
    b = ProgramBuilder("named")
    x = b.param_ptr("x", "f32")
    with b.loop(0, 4, 1) as i:
        t = b.dma_load(x, b.mul(i, 8), [8], [1], copies=2)
        b.dma_store(x, b.add(t, 1.0), b.mul(i, 8), [1])
    prog = b.build()
    assert str(t).startswith("%ld_") and prog.buffers[str(t)].copies == 2
    again = Program.from_json(prog.to_json())
    data = torch.zeros(32)
    execute(again, (1, 1, 1), [data])
    assert torch.equal(data, torch.ones(32))


def test_build_inside_loop_is_an_error():
    b = ProgramBuilder("open")
    with pytest.raises(ValueError, match="open loop"):
        with b.loop(0, 2, 1):
            b.build()
