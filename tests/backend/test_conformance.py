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


# ============================================================================ elementwise arithmetic

@triton.jit
def _binary_kernel(x_ptr, y_ptr, o_ptr, OP: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "truediv":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "umulhi":
        r = tl.umulhi(x, y)
    elif OP == "scalar_add":  # a runtime scalar operand (broadcast), then a scalar-scalar op
        r = x + tl.load(y_ptr + 3)
    elif OP == "scalar_ops":  # scalar registers only: the scalar engine's semantics
        a = tl.load(x_ptr + 1)
        b = tl.load(y_ptr + 1)
        r = tl.zeros_like(x) + (a // b) + (a % b)
    tl.store(o_ptr + i, r)


INT_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "shl", "shr", "minimum",
           "maximum", "umulhi", "scalar_add"]
FLOAT_OPS = ["add", "sub", "mul", "truediv", "mod", "minimum", "maximum", "scalar_add"]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _binary_result_dtype(op: str, d: str) -> str:
    if op == "truediv" and d in INTS:
        return "float32"
    if op in ("truediv", "mod") and d in ("float16", "bfloat16"):
        return "float32"
    return d


def _binary_inputs(op: str, d: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = values(d, 1), values(d, 2)
    if d in INTS:
        if op in ("shl", "shr"):
            y = (y.astype(np.uint64) % np.uint64(BITS[d])).astype(np_dtype(d))  # shifts below the width
        if op in ("truediv", "floordiv", "mod", "scalar_ops"):
            y = np.where(y == 0, np.array(3, np_dtype(d)), y)
            if d in SINTS:  # INT_MIN / -1 overflows (undefined)
                y = np.where((x == np.iinfo(np_dtype(d)).min) & (y == -1), np.array(5, np_dtype(d)), y)
    return x, y


def ref_binary(op: str, d: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if d in INTS:
        bits = BITS[d]
        mask = (1 << bits) - 1
        a, b = [int(v) for v in x], [int(v) for v in y]
        if op == "truediv":
            return (x.astype(np.float32) / y.astype(np.float32)).astype(np.float64)
        if op == "scalar_add":
            b = [b[3]] * len(a)
            op = "add"
        f = {
            "add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
            "floordiv": _trunc_div if d in SINTS else (lambda p, q: p // q),
            "mod": (lambda p, q: p - _trunc_div(p, q) * q) if d in SINTS else (lambda p, q: p % q),
            "and": lambda p, q: p & q, "or": lambda p, q: p | q, "xor": lambda p, q: p ^ q,
            "shl": lambda p, q: p << q, "shr": lambda p, q: p >> q,  # Python >>: arithmetic on signed
            "minimum": min, "maximum": max,
            "umulhi": lambda p, q: ((p & mask) * (q & mask)) >> bits,
        }[op]
        return wrap([f(p, q) for p, q in zip(a, b)], d)
    out = _binary_result_dtype(op, d)
    if op == "scalar_add":
        y = np.full_like(y, y[3])
        op = "add"
    if out == "float32" and d in ("float16", "bfloat16"):  # / and % of half types run in f32
        x, y, work = x.astype(np.float32), y.astype(np.float32), "float32"
    else:
        work = d
    if work in ("float32", "float64", "float16"):
        x, y = x.astype(work), y.astype(work)  # numpy: correctly rounded IEEE ops in that type
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide, "mod": np.fmod,
         "minimum": np.minimum, "maximum": np.maximum}[op]
    r = f(x, y).astype(np.float64)
    return r if work in ("float32", "float64", "float16") else round_to(r, out)  # bf16 / fp8: exact in f64


def run_binary(op: str, d: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = _binary_result_dtype(op, d)
    o = torch.zeros(N, dtype=TORCH[out])
    _binary_kernel[(1,)](to_torch(x, d), to_torch(y, d), o, OP=op, N=N)
    return to_numpy(o, out)


INT_CASES = [(d, op) for d in INTS for op in INT_OPS if op != "umulhi" or BITS[d] >= 32]  # umulhi: 32/64-bit


@pytest.mark.parametrize("d,op", INT_CASES, ids=[f"{d}-{op}" for d, op in INT_CASES])
def test_int_binary(d, op):
    x, y = _binary_inputs(op, d)
    assert_same(run_binary(op, d, x, y), ref_binary(op, d, x, y), f"{d} {op}")


@pytest.mark.parametrize("op", FLOAT_OPS)
@pytest.mark.parametrize("d", FLOATS + FP8)
def test_float_binary(op, d):
    x, y = _binary_inputs(op, d)
    assert_same(run_binary(op, d, x, y), ref_binary(op, d, x, y), f"{d} {op}")


@pytest.mark.parametrize("d", INTS)
def test_int_scalar_ops(d):
    """Integer division and remainder of scalar registers (the scalar engine)."""
    x, y = _binary_inputs("scalar_ops", d)
    o = torch.zeros(N, dtype=TORCH[d])
    _binary_kernel[(1,)](to_torch(x, d), to_torch(y, d), o, OP="scalar_ops", N=N)
    a, b = int(x[1]), int(y[1])
    q = _trunc_div(a, b) if d in SINTS else a // b
    r = a - _trunc_div(a, b) * b if d in SINTS else a % b
    assert_same(o.numpy(), wrap([q + r] * N, d), d)


@triton.jit
def _unary_kernel(x_ptr, o_ptr, OP: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    if OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "popc":
        r = tl.extra.libdevice.popc(x)
    tl.store(o_ptr + i, r)


@pytest.mark.parametrize("op", ["neg", "invert", "abs"])
@pytest.mark.parametrize("d", INTS)
def test_int_unary(op, d):
    x = values(d, 3)
    o = torch.zeros(N, dtype=TORCH[d])
    _unary_kernel[(1,)](to_torch(x, d), o, OP=op, N=N)
    a = [int(v) for v in x]
    f = {"neg": lambda v: -v, "invert": lambda v: ~v, "abs": (lambda v: abs(v)) if d in SINTS else (lambda v: v)}[op]
    assert_same(o.numpy(), wrap([f(v) for v in a], d), f"{d} {op}")


@pytest.mark.parametrize("op", ["neg", "abs"])
@pytest.mark.parametrize("d", FLOATS + FP8)
def test_float_unary(op, d):
    x = values(d, 3)
    o = torch.zeros(N, dtype=TORCH[d])
    _unary_kernel[(1,)](to_torch(x, d), o, OP=op, N=N)
    assert_same(to_numpy(o, d), -x if op == "neg" else np.abs(x), f"{d} {op}")


# ============================================================================ comparisons

@triton.jit
def _cmp_kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    tl.store(o_ptr + 0 * N + i, x == y)
    tl.store(o_ptr + 1 * N + i, x != y)
    tl.store(o_ptr + 2 * N + i, x < y)
    tl.store(o_ptr + 3 * N + i, x <= y)
    tl.store(o_ptr + 4 * N + i, x > y)
    tl.store(o_ptr + 5 * N + i, x >= y)
    s = tl.load(y_ptr + 5)  # tile against a runtime scalar
    tl.store(o_ptr + 6 * N + i, x < s)
    tl.store(o_ptr + 7 * N + i, x >= s)
    a = tl.load(x_ptr + 7)  # scalar against scalar
    tl.store(o_ptr + 8 * N + i, (i < 0) | (a < s))


@pytest.mark.parametrize("d", ALL)
def test_compare(d):
    x, y = values(d, 4), values(d, 5)
    y[:8] = x[:8]  # equal pairs
    if d not in INTS:
        x[9] = np.nan
        y[10] = np.nan
        if d == "float8e4nv":
            pass  # e4m3fn has NaN (no infinity)
    o = torch.zeros(9 * N, dtype=torch.bool)
    _cmp_kernel[(1,)](to_torch(x, d), to_torch(y, d), o, N=N)
    got = o.numpy().reshape(9, N)
    xs, ys = (x, y) if d in INTS else (to_numpy(to_torch(x, d), d), to_numpy(to_torch(y, d), d))
    s = ys[5]
    want = [xs == ys, xs != ys, xs < ys, xs <= ys, xs > ys, xs >= ys, xs < s, xs >= s,
            np.full(N, bool(xs[7] < s))]
    for k, w in enumerate(want):
        assert_same(got[k], w, f"{d} compare #{k}")


# ============================================================================ casts

@triton.jit
def _cast_kernel(x_ptr, o_ptr, N: tl.constexpr, BITCAST: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(o_ptr + i, x.to(o_ptr.dtype.element_ty, bitcast=BITCAST))


def _cast_applies(s: str, t: str) -> bool:
    # Triton casts fp8 only to and from floating types
    return s != t and not ((s in FP8 and t in INTS) or (s in INTS and t in FP8))


FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.0e38, "float32": 3.0e38, "float64": 1.0e300}


def _cast_source(s: str, t: str) -> np.ndarray:
    x = values(s, 6)
    if s in FLOATS and t in INTS:
        # float -> int is defined for values the integer type holds (truncated toward zero):
        # spread them over its whole range, the upper half of the unsigned ones included
        info = np.iinfo(np_dtype(t))
        lo, hi = max(float(info.min), -FLOAT_MAX[s]), min(float(info.max), FLOAT_MAX[s])
        rng = np.random.default_rng(9)
        x = np.concatenate([x[:16], rng.uniform(lo, hi, size=N - 16)])
        x = to_numpy(to_torch(x, s), s)
        x = np.where((np.trunc(x) >= info.min) & (np.trunc(x) <= float(info.max)) & (x < 2.0 ** BITS[t]), x, 1.5)
        if t in UINTS:
            x = np.abs(x)
    return x


def ref_cast(s: str, t: str, x: np.ndarray) -> np.ndarray:
    if s in INTS and t in INTS:
        return wrap([int(v) for v in x], t)  # sign-extends signed sources, zero-extends unsigned ones
    if s in INTS:
        # int -> float: rounded once, to nearest even (through f64 is exact: f64 has > 2p+2 bits)
        return round_to(np.array([float(int(v)) for v in x]), t)
    if t in INTS:
        return np.array([int(v) for v in np.trunc(x)], dtype=object).astype(np_dtype(t))
    return round_to(x, t)


CAST_PAIRS = [(s, t) for s in ALL for t in ALL if _cast_applies(s, t)]


@pytest.mark.parametrize("s,t", CAST_PAIRS, ids=[f"{s}->{t}" for s, t in CAST_PAIRS])
def test_cast(s, t):
    x = _cast_source(s, t)
    o = torch.zeros(N, dtype=TORCH[t])
    _cast_kernel[(1,)](to_torch(x, s), o, N=N, BITCAST=False)
    assert_same(to_numpy(o, t), ref_cast(s, t, x), f"{s}->{t}")


BITCAST_PAIRS = [(s, t) for s in ALL for t in ALL if s != t and TORCH[s].itemsize == TORCH[t].itemsize]


@pytest.mark.parametrize("s,t", BITCAST_PAIRS, ids=[f"{s}->{t}" for s, t in BITCAST_PAIRS])
def test_bitcast(s, t):
    x = to_torch(values(s, 7), s)
    o = torch.zeros(N, dtype=TORCH[t])
    _cast_kernel[(1,)](x, o, N=N, BITCAST=True)
    assert torch.equal(o.view(torch.uint8), x.view(torch.uint8))


@triton.jit
def _to_bool_kernel(x_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    b = tl.load(x_ptr + i).to(tl.int1)
    tl.store(o_ptr + i, b.to(tl.int8))


@pytest.mark.parametrize("d", INTS + FLOATS)
def test_cast_to_bool(d):
    x = values(d, 8)
    x[5:9] = 0
    o = torch.zeros(N, dtype=torch.int8)
    _to_bool_kernel[(1,)](to_torch(x, d), o, N=N)
    assert_same(o.numpy(), (x != 0).astype(np.int8), d)


@triton.jit
def _scalar_cast_kernel(x_ptr, o_ptr):
    tl.store(o_ptr, tl.load(x_ptr).to(o_ptr.dtype.element_ty))


SCALAR_CAST_PAIRS = [(s, t) for s in INTS + FLOATS for t in INTS + FLOATS
                     if s != t and (s in UINTS or t in UINTS or s in ("int64", "float64"))]


@pytest.mark.parametrize("s,t", SCALAR_CAST_PAIRS, ids=[f"{s}->{t}" for s, t in SCALAR_CAST_PAIRS])
def test_scalar_cast(s, t):
    """A cast of a scalar register (the scalar engine), with a value that has the top bit set."""
    x = _cast_source(s, t)
    if s in UINTS:
        x = x[8:9]  # 2**(bits-1): the top bit alone
    elif s in SINTS:
        x = x[:1]  # the minimum
    else:
        x = x[np.argmax(np.abs(x))][None]
    o = torch.zeros(1, dtype=TORCH[t])
    _scalar_cast_kernel[(1,)](to_torch(x, s), o)
    assert_same(to_numpy(o, t), ref_cast(s, t, x), f"{s}->{t}")
