"""Small builder programs and a run-and-price helper shared by the simulator tests."""
from __future__ import annotations

import torch

from backend.configs import load_chip
from backend.sim.builder import ProgramBuilder
from backend.sim.executor import execute
from backend.sim.cost import ChipModel
from backend.sim.timing import price_launch

CHIP = load_chip("mtia2i")
MODEL = ChipModel(CHIP)


def price(prog, grid, args, chip=CHIP, mode="functional", **kw):
    return price_launch(prog, execute(prog, grid, args, mode=mode), chip, **kw)


def mm_loop(iters: int, copies: int, m: int = 128, n: int = 128, k: int = 128, stride_pe: int = 0):
    """Each iteration DMAs a fresh [k, n] B tile and multiplies a resident A by it."""
    b = ProgramBuilder(f"mm_loop_c{copies}")
    A, B = b.param_ptr("a", "bf16"), b.param_ptr("b", "bf16")
    ta = b.dma_load(A, 0, [m, k], [k, 1])
    acc = b.zeros([m, n], "f32")
    with b.loop(0, iters, 1) as i:
        tb = b.dma_load(B, b.mul(i, k * n), [k, n], [n, 1], copies=copies)
        b.matmul(ta, tb, acc)
    return b.build()


def mm_args(iters: int, m: int = 128, n: int = 128, k: int = 128):
    return [torch.randn(m, k).bfloat16(), torch.randn(iters * k, n).bfloat16()]
