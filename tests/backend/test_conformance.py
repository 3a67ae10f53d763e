"""Triton language conformance: each op checked against the language's documented semantics.

References are numpy (every integer dtype, unsigned included, and f16/f32/f64) or exact Python
integers; bf16 and fp8 results are checked against torch's rounding of an f32/f64 result. Test
values exercise the top bit of every integer type. One kernel per op, specialised per dtype by
its arguments' types or a constexpr, so each case is one small compile.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

# ----------------------------------------------------------------------------- dtypes

TL = {
    "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
    "float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32, "float64": tl.float64,
    "float8e5": tl.float8e5, "float8e4nv": tl.float8e4nv,
}
TORCH = {
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
    "float8e5": torch.float8_e5m2, "float8e4nv": torch.float8_e4m3fn,
}
SINTS = ["int8", "int16", "int32", "int64"]
UINTS = ["uint8", "uint16", "uint32", "uint64"]
INTS = SINTS + UINTS
FLOATS = ["float16", "bfloat16", "float32", "float64"]
FP8 = ["float8e5", "float8e4nv"]
ALL = INTS + FLOATS + FP8
BITS = {d: int(d.lstrip("uint").lstrip("float") or 0) for d in INTS}
BITS.update({"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32,
             "uint64": 64})

N = 64  # elements per test tile


def np_dtype(d: str):
    return np.dtype(d)


def to_torch(a: np.ndarray, d: str) -> torch.Tensor:
    """A CPU tensor of dtype d holding the values of a (ints: the bit pattern; floats: rounded)."""
    if d in INTS:
        return torch.from_numpy(np.ascontiguousarray(a.astype(np_dtype(d)))).clone()
    return torch.from_numpy(np.asarray(a, dtype=np.float64)).to(TORCH[d])


def to_numpy(t: torch.Tensor, d: str) -> np.ndarray:
    if d in INTS:
        return t.numpy().copy()
    return t.to(torch.float64).numpy()


def int_values(d: str, rng: np.random.Generator, n: int = N) -> np.ndarray:
    """Values of integer dtype d that cover the top bit, zero, one and the extremes."""
    info = np.iinfo(np_dtype(d))
    edge = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 2, 3]
    if d in UINTS:
        edge += [1 << (BITS[d] - 1), (1 << (BITS[d] - 1)) - 1, (1 << (BITS[d] - 1)) + 1]
    else:
        edge += [-1, -2, 7, -7]
    body = rng.integers(info.min, info.max, size=n - len(edge), dtype=np_dtype(d), endpoint=True)
    return np.concatenate([np.array(edge, dtype=np_dtype(d)), body])


def float_values(d: str, rng: np.random.Generator, n: int = N) -> np.ndarray:
    """Values representable in d (f64 array), positive and negative, never zero."""
    scale = 8.0 if d in FP8 else 100.0
    v = rng.uniform(-scale, scale, size=n)
    v[np.abs(v) < 0.25] = 0.5
    return to_numpy(to_torch(v, d), d)


def values(d: str, seed: int = 0, n: int = N) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return int_values(d, rng, n) if d in INTS else float_values(d, rng, n)


def wrap(x, d: str) -> np.ndarray:
    """Exact Python ints wrapped to the width of integer dtype d."""
    bits = BITS[d]
    out = []
    for v in x:
        v = int(v) & ((1 << bits) - 1)
        if d in SINTS and v >> (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=np_dtype(d))


def round_to(x: np.ndarray, d: str) -> np.ndarray:
    """An f64 array rounded to float dtype d (torch's round-to-nearest-even), back as f64."""
    return to_numpy(to_torch(np.asarray(x, dtype=np.float64), d), d)


def assert_same(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        ok = (got == want) | (np.isnan(got) & np.isnan(want))
    else:
        ok = got == want
    bad = np.nonzero(~ok)[0]
    assert bad.size == 0, f"{what}: {bad.size} wrong, first at {bad[:4].tolist()}: got {got[bad[:4]].tolist()}, " \
                          f"want {want[bad[:4]].tolist()}"


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


# ============================================================================ reinterpreted tensors

@triton.jit
def _copy_kernel(x_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(o_ptr + i, tl.load(x_ptr + i))


@triton.jit
def _halve_kernel(x_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(o_ptr + i, x >> 1)


@pytest.mark.parametrize("d", UINTS)
def test_reinterpret_signed_as_unsigned(d):
    """triton.reinterpret(int tensor, tl.uintN): the kernel sees uintN (logical shift)."""
    sd = d[1:]
    x = to_torch(values(sd), sd)
    o = torch.zeros_like(x)
    k = _halve_kernel[(1,)](triton.reinterpret(x, TL[d]), triton.reinterpret(o, TL[d]), N=N)
    assert k.src.signature["x_ptr"] == f"*u{BITS[d]}"
    want = (x.numpy().view(np_dtype(d)) >> 1).view(np_dtype(sd))
    assert_same(o.numpy(), want, d)


@pytest.mark.parametrize("d,store", [("float8e5", torch.uint8), ("float8e4nv", torch.uint8),
                                     ("float8e5", torch.int8), ("float8e4nv", torch.float8_e5m2)])
def test_reinterpret_fp8_view(d, store):
    """fp8 views over byte tensors: the kernel reads and writes fp8 elements of the same bytes."""
    v = to_torch(values(d), d)
    x = v.view(store)
    o = torch.zeros_like(x)
    k = _copy_kernel[(1,)](triton.reinterpret(x, TL[d]), triton.reinterpret(o, TL[d]), N=N)
    assert k.src.signature["x_ptr"] == {"float8e5": "*fp8e5", "float8e4nv": "*fp8e4nv"}[d]
    assert torch.equal(o.view(torch.uint8), x.view(torch.uint8))


@triton.jit
def _fp8_to_f32_kernel(x_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(o_ptr + i, tl.load(x_ptr + i).to(tl.float32))


@pytest.mark.parametrize("d", FP8)
def test_reinterpret_fp8_values(d):
    v = to_torch(values(d), d)
    o = torch.zeros(N, dtype=torch.float32)
    _fp8_to_f32_kernel[(1,)](triton.reinterpret(v.view(torch.uint8), TL[d]), o, N=N)
    assert_same(o.numpy().astype(np.float64), v.to(torch.float64).numpy(), d)


def test_reinterpret_native_fp8_tensor():
    v = to_torch(values("float8e5"), "float8e5")
    o = torch.zeros(N, dtype=torch.float32)
    _fp8_to_f32_kernel[(1,)](v, o, N=N)
    assert_same(o.numpy().astype(np.float64), v.to(torch.float64).numpy())


def test_reinterpret_mixed_with_plain_tensors():
    x = to_torch(values("int32"), "int32")
    o = torch.zeros(N, dtype=torch.uint32)
    _halve_kernel[(1,)](triton.reinterpret(x, tl.uint32), o, N=N)
    assert_same(o.numpy(), x.numpy().view(np.uint32) >> 1)
