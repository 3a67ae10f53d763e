"""The tabulate pass (backend/passes/tabulate.py): an elementwise chain of a small-range integer
becomes a K-entry table computed once per program and a gather. Pinned on small kernels: which
chains are tabulated (printed tile IR), the numbers bit for bit against the untabulated
kernel and torch, and the SIMD work it saves."""
from __future__ import annotations

import re

import torch
import triton
import triton.language as tl

from backend.driver import record_launches


@triton.jit
def _fp4_decode(packed_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # the high nibble of each byte, decoded as an E2M1 value the way Inductor spells it
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    code = (tl.load(packed_ptr + offs, mask=m, other=0).to(tl.int32) >> 4) & 15
    e = (code >> 1) & 3
    man = (code & 1).to(tl.float32)
    mag = tl.where(e == 0, 0.5 * man, tl.exp2((e - 1).to(tl.float32)) * (1.0 + 0.5 * man))
    tl.store(out_ptr + offs, tl.where((code & 8) != 0, -mag, mag), mask=m)


def _fp4_reference(packed: torch.Tensor) -> torch.Tensor:
    code = packed.to(torch.int32) >> 4
    e = (code >> 1) & 3
    man = (code & 1).float()
    mag = torch.where(e == 0, 0.5 * man, torch.pow(2.0, (e - 1).float()) * (1.0 + 0.5 * man))
    return torch.where((code & 8) != 0, -mag, mag)


@triton.jit
def _signed_chain(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # int8 values (-128..127): the table is offset by -128; the scale is a scalar argument
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0).to(tl.int32)
    y = ((x * 3 - 7).to(tl.float32) * 0.25 + 1.0) / (x.to(tl.float32) + 0.5)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def _unbounded_chain(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # an int32 load: nothing bounds it, no table
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = ((x >> 1) & 3).to(tl.float32) * 0.5 + (x & 1).to(tl.float32)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def _divided_chain(x_ptr, d_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # a chain that divides by a value of the chain: an entry for a value that never occurs
    # could divide by zero, so it stays elementwise
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    code = tl.load(x_ptr + offs, mask=m, other=0).to(tl.int32) & 15
    y = 100 // (code - 3)
    tl.store(out_ptr + offs, (y * 2 + 1).to(tl.float32) * 0.5, mask=m)


def _run(kernel, args, n, block, **options):
    with record_launches() as recs:
        k = kernel[(triton.cdiv(n, block),)](*args, n, BLOCK=block, **options)
    return k, recs[0]


def _gathers(k) -> list[str]:
    return re.findall(r"tt\.gather .*", k.asm["tile"])


def test_an_fp4_decode_becomes_a_16_entry_table_and_one_gather():
    g = torch.Generator().manual_seed(0)
    n, block = 3000, 1024
    packed = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g)
    out, plain = torch.empty(n), torch.empty(n)
    k, rec = _run(_fp4_decode, (packed, out), n, block)
    k0, rec0 = _run(_fp4_decode, (packed, plain), n, block, tabulate=False)
    tile = k.asm["tile"]
    assert len(_gathers(k)) == 1 and "tile<1024xf32>" in _gathers(k)[0]
    assert re.search(r"tt\.make_range\s+\{start = 0, end = 16\} : tile<16xi32>", tile)
    assert not _gathers(k0) and "tt.make_range  {start = 0, end = 16}" not in k0.asm["tile"]
    assert torch.equal(out, plain) and torch.equal(out, _fp4_reference(packed))
    # the chain's 14 full-width ops are gone: a third of the SIMD work or less is left
    assert rec.timing.engine_busy["SIMD"] * 3 < rec0.timing.engine_busy["SIMD"]
    assert rec.cycles < rec0.cycles


def test_a_signed_range_offsets_and_clamps_the_table_and_keeps_every_bit():
    g = torch.Generator().manual_seed(1)
    n, block = 5000, 4096
    x = torch.randint(-128, 128, (n,), dtype=torch.int8, generator=g)
    out, plain = torch.empty(n), torch.empty(n)
    k, _ = _run(_signed_chain, (x, out), n, block)
    _run(_signed_chain, (x, plain), n, block, tabulate=False)
    assert len(_gathers(k)) == 1
    assert "end = 256" in k.asm["tile"]
    xi = x.to(torch.int32)
    ref = ((xi * 3 - 7).float() * 0.25 + 1.0) / (xi.float() + 0.5)
    assert torch.equal(out, plain)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)


def test_a_nibble_that_never_reaches_its_bound_still_matches():
    # & 15 bounds the value to 0..15; the data holds only 0..9 (entries 10..15 computed, never read)
    n, block = 2048, 2048
    packed = (torch.arange(n) % 10).to(torch.uint8) << 4
    out = torch.empty(n)
    k, _ = _run(_fp4_decode, (packed, out), n, block)
    assert _gathers(k)
    assert torch.equal(out, _fp4_reference(packed))


def test_no_table_for_an_unbounded_integer_or_a_division_by_the_chain():
    n, block = 2048, 1024
    x = torch.randint(-1000, 1000, (n,), dtype=torch.int32)
    out = torch.empty(n)
    k, _ = _run(_unbounded_chain, (x, out), n, block)
    assert not _gathers(k)
    assert torch.equal(out, ((x >> 1) & 3).float() * 0.5 + (x & 1).float())
    code = (torch.arange(n) % 16).to(torch.uint8)
    code[code == 3] = 4  # the kernel never divides by zero; a table over 0..15 would
    out2 = torch.empty(n)
    k2, _ = _run(_divided_chain, (code, torch.empty(1), out2), n, block)
    assert "arith.divsi" in k2.asm["tile"]
    c = code.to(torch.int32)
    q = torch.div(torch.full_like(c, 100), c - 3, rounding_mode="trunc")
    assert torch.equal(out2, (q * 2 + 1).float() * 0.5)


@triton.jit
def _parity_mask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # a chain of a bounded integer that ends in a load's mask: left to pointer and mask analysis
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    code = tl.load(x_ptr + offs, mask=offs < n, other=0).to(tl.int32) & 7
    keep = ((code * 3 + 1) % 5 > 1) & ((code ^ 5) != 2) & (offs < n)
    tl.store(out_ptr + offs, code.to(tl.float32) * 2.0, mask=keep)


def test_no_table_for_a_chain_that_feeds_a_mask():
    n, block = 4096, 4096
    x = (torch.arange(n) % 8).to(torch.uint8)
    out = torch.zeros(n)
    k, _ = _run(_parity_mask, (x, out), n, block)
    assert not _gathers(k)
    c = x.to(torch.int32)
    keep = ((c * 3 + 1) % 5 > 1) & ((c ^ 5) != 2)
    assert torch.equal(out, torch.where(keep, c.float() * 2.0, 0.0))
