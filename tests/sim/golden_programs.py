"""The small builder programs whose exact cycle counts test_golden.py pins."""
from __future__ import annotations

import torch
from sim_programs import mm_args, mm_loop

from tools.bench_sim import softmax_program
from backend.sim.builder import ProgramBuilder
from tools.microbench import gemm_grid, gemm_program


def _elementwise():
    b = ProgramBuilder("gelu_like")
    X, Y = b.param_ptr("x", "f32"), b.param_ptr("y", "f32")
    off = b.mul(b.pid(0), 1024)
    x = b.dma_load(X, off, [1024], [1])
    t = b.unary("tanh", x)
    y = b.fma(x, t, x)
    b.dma_store(Y, y, off, [1])
    return b.build()


def _scalar_path():
    b = ProgramBuilder("scalar_path")
    X, Y = b.param_ptr("x", "f32"), b.param_ptr("y", "f32")
    addrs = b.addptr(X, b.iota(64))
    v = b.scalar_load(addrs, "f32")
    b.dma_store(Y, v, 0, [1])
    return b.build()


def cases():
    """name -> (program, grid, args); args rebuilt each call (the kernels write outputs)."""
    g = torch.Generator().manual_seed(0)
    return {
        "mm_loop_single": (mm_loop(4, 1), (2, 1, 1), mm_args(4)),
        "mm_loop_double": (mm_loop(4, 2), (2, 1, 1), mm_args(4)),
        "gemm_512x512x256": (gemm_program(512, 512, 256, workers=4), gemm_grid(512, 512, workers=4),
                             [torch.randn(512, 256, generator=g).bfloat16(), torch.randn(256, 512, generator=g).bfloat16(),
                              torch.zeros(512, 512)]),
        "softmax_64x256": (softmax_program(64, 256, workers=4), (4, 1, 1),
                           [torch.randn(64, 256, generator=g).bfloat16(), torch.zeros(64, 256).bfloat16()]),
        "elementwise_4": (_elementwise(), (4, 1, 1), [torch.randn(4096, generator=g), torch.zeros(4096)]),
        "scalar_path": (_scalar_path(), (1, 1, 1), [torch.randn(64, generator=g), torch.zeros(64)]),
    }
