"""The functional DPE's integer products: exact, whichever path computes them."""
from __future__ import annotations

import torch

from backend.sim.isa import _int_matmul


def test_int8_products_through_float64_equal_the_int64_product_at_the_largest_sums():
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (33, 4096), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (4096, 17), generator=g, dtype=torch.int8)
    a[0], b[:, 0] = -128, -128  # the largest partial sums: 4096 * 2**14
    got = _int_matmul(a, b)
    assert got.dtype == torch.int64
    assert torch.equal(got, a.to(torch.int64) @ b.to(torch.int64))


def test_int32_operands_take_the_int64_product():
    # 2**30 * 2**30 * 3 is past 2**53: a float64 sum would round
    x = torch.full((2, 3), 2 ** 30, dtype=torch.int32)
    y = x.T.contiguous()
    assert torch.equal(_int_matmul(x, y), x.to(torch.int64) @ y.to(torch.int64))
    assert int(_int_matmul(x, y)[0, 0]) == 3 * 2 ** 60
