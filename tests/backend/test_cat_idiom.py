"""Inductor's cat / stack spelling (backend/passes/idioms.py, option `cat_idiom`): the selects it
repeats are dropped and two loads of the same bytes under complementary halves of a mask
become one. Pinned on a kernel written the way Inductor writes `torch.stack([p & 15, p >> 4])`:
the tile IR, the numbers against torch, the work saved."""
from __future__ import annotations

import re

import torch
import triton
import triton.language as tl

from backend.driver import record_launches


@triton.jit
def _stack_nibbles(p_ptr, out_ptr, n_rows, YBLOCK: tl.constexpr, XBLOCK: tl.constexpr):
    y = tl.program_id(0) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    x = tl.arange(0, XBLOCK)[None, :]
    rows = y < n_rows
    left = (x % 2) < 1
    right = (x % 2) >= 1
    lo = tl.load(p_ptr + (16 * y + x // 2), left & rows, other=0).to(tl.int32) & 15
    a = tl.where(left, lo, 0)
    hi = tl.load(p_ptr + (16 * y + x // 2), right & rows, other=0).to(tl.int32) >> 4
    b = tl.where(right, hi, 0)
    tl.store(out_ptr + 32 * y + x, tl.where(left, a, b), rows)


@triton.jit
def _cat_two(a_ptr, b_ptr, out_ptr, n_rows, YBLOCK: tl.constexpr):
    # cat of two different tensors: the selects go, both loads stay
    y = tl.program_id(0) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    x = tl.arange(0, 32)[None, :]
    rows = y < n_rows
    left = x < 16
    right = x >= 16
    a = tl.where(left, tl.load(a_ptr + 16 * y + x, left & rows, other=0.0) * 2.0, 0.0)
    b = tl.where(right, tl.load(b_ptr + 16 * y + (x - 16), right & rows, other=0.0) + 1.0, 0.0)
    tl.store(out_ptr + 32 * y + x, tl.where(left, a, b), rows)


def _launch(kernel, args, n_rows, block, **kw):
    with record_launches() as recs:
        k = kernel[(triton.cdiv(n_rows, block),)](*args, n_rows, YBLOCK=block, **kw)
    return k, recs[0]


def test_a_stack_of_two_nibbles_loads_its_bytes_once():
    g = torch.Generator().manual_seed(0)
    n = 300
    p = torch.randint(0, 256, (n, 16), dtype=torch.uint8, generator=g)
    out, plain = torch.empty(n, 32, dtype=torch.int32), torch.empty(n, 32, dtype=torch.int32)
    k, rec = _launch(_stack_nibbles, (p, out), n, 64, XBLOCK=32)
    k0, rec0 = _launch(_stack_nibbles, (p, plain), n, 64, XBLOCK=32, cat_idiom=False)
    loads = re.findall(r"mtia\.dma_load %p_ptr.*", k.asm["tile"])
    assert len(loads) == 1 and 'path = "dma"' in loads[0]  # one load, bounded by the rows alone
    assert len(re.findall(r"mtia\.dma_load %p_ptr", k0.asm["tile"])) == 2
    pi = p.to(torch.int32)
    ref = torch.stack([pi & 15, pi >> 4], dim=2).reshape(n, 32)
    assert torch.equal(out, ref) and torch.equal(plain, ref)
    assert rec.timing.engine_busy["DMA_IN"] < rec0.timing.engine_busy["DMA_IN"]
    assert rec.timing.engine_busy["SIMD"] < rec0.timing.engine_busy["SIMD"]


def test_a_cat_of_two_tensors_drops_the_inner_selects_only():
    g = torch.Generator().manual_seed(1)
    n = 200
    a, b = torch.randn(n, 16, generator=g), torch.randn(n, 16, generator=g)
    out, plain = torch.empty(n, 32), torch.empty(n, 32)
    k, rec = _launch(_cat_two, (a, b, out), n, 64)
    k0, _ = _launch(_cat_two, (a, b, plain), n, 64, cat_idiom=False)
    selects = len(re.findall(r"arith\.select", k.asm["tile"]))
    assert selects < len(re.findall(r"arith\.select", k0.asm["tile"]))
    assert re.search(r"mtia\.dma_load %a_ptr", k.asm["tile"]) and re.search(r"mtia\.dma_load %b_ptr", k.asm["tile"])
    assert torch.equal(out, torch.cat([a * 2.0, b + 1.0], dim=1)) and torch.equal(out, plain)
