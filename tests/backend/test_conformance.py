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
    return torch.from_numpy(np.array(a, dtype=np.float64)).to(TORCH[d])  # a copy: never aliases a


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
    body = rng.integers(info.min, info.max, size=max(n - len(edge), 0), dtype=np_dtype(d), endpoint=True)
    return np.concatenate([np.array(edge, dtype=np_dtype(d)), body])[:n]


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


def xfail(reason: str, raises=None):
    return pytest.mark.xfail(strict=True, reason=reason, raises=raises)


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
    elif OP == "scalar_add":  # a tile and a runtime scalar operand (broadcast)
        r = x + tl.load(y_ptr + 9)
    elif OP == "scalar_floordiv":
        r = x // tl.load(y_ptr + 9)
    elif OP == "scalar_mod":
        r = x % tl.load(y_ptr + 9)
    elif OP == "scalar_shr":
        r = x >> tl.load(y_ptr + 9)
    elif OP == "scalar_maximum":
        r = tl.maximum(x, tl.load(y_ptr + 9))
    tl.store(o_ptr + i, r)


@triton.jit
def _scalar_binary_kernel(x_ptr, y_ptr, o_ptr, HI: tl.constexpr):
    """Integer ops on scalar registers (the scalar engine), one result per slot."""
    a = tl.load(x_ptr)
    b = tl.load(y_ptr)
    sh = tl.load(y_ptr + 1)
    tl.store(o_ptr + 0, a + b)
    tl.store(o_ptr + 1, a - b)
    tl.store(o_ptr + 2, a * b)
    tl.store(o_ptr + 3, a // b)
    tl.store(o_ptr + 4, a % b)
    tl.store(o_ptr + 5, a >> sh)
    tl.store(o_ptr + 6, a << sh)
    tl.store(o_ptr + 7, tl.maximum(a, b))
    tl.store(o_ptr + 8, tl.minimum(a, b))
    tl.store(o_ptr + 9, (a < b).to(o_ptr.dtype.element_ty))
    tl.store(o_ptr + 10, (a >= b).to(o_ptr.dtype.element_ty))
    tl.store(o_ptr + 11, -a)
    if HI:
        tl.store(o_ptr + 12, tl.umulhi(a, b))


INT_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "shl", "shr", "minimum",
           "maximum", "umulhi", "scalar_add", "scalar_floordiv", "scalar_mod", "scalar_shr", "scalar_maximum"]
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
        if op in ("shl", "shr", "scalar_shr"):
            y = (y.astype(np.uint64) % np.uint64(BITS[d])).astype(np_dtype(d))  # shifts below the width
        if op in ("truediv", "floordiv", "mod", "scalar_floordiv", "scalar_mod"):
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
        if op.startswith("scalar_"):
            b = [b[9]] * len(a)
            op = op[len("scalar_"):]
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
        y = np.full_like(y, y[9])
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


def _scalar_pairs(d: str) -> list[tuple[int, int]]:
    info = np.iinfo(np_dtype(d))
    top = 1 << (BITS[d] - 1)
    big = [(int(info.max), 3), (int(info.max) - 5, int(info.max) - 2), (top + 7, 5), (int(info.min), 7),
           (int(info.min) + 3, -2 if d in SINTS else top + 1)]
    return big + [(-7 if d in SINTS else 9, 2)]


@pytest.mark.parametrize("d", INTS)
def test_int_scalar_ops(d):
    bits, hi = BITS[d], BITS[d] >= 32
    mask = (1 << bits) - 1
    for a, b in _scalar_pairs(d):
        a, b = wrap([a], d)[0].item(), wrap([b], d)[0].item()
        sh = (a ^ b) % bits
        o = torch.zeros(13, dtype=TORCH[d])
        _scalar_binary_kernel[(1,)](to_torch(np.array([a], np_dtype(d)), d), to_torch(np.array([b, sh], np_dtype(d)), d),
                                    o, HI=hi)
        q = _trunc_div(a, b) if d in SINTS else a // b
        want = [a + b, a - b, a * b, q, a - q * b, a >> sh, a << sh, max(a, b), min(a, b), int(a < b),
                int(a >= b), -a, ((a & mask) * (b & mask)) >> bits if hi else 0]
        assert_same(o.numpy(), wrap(want, d), f"{d} a={a} b={b}")


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


# ============================================================================ reductions and scans

RM, RN = 8, 16  # reductions: [RM, RN] tiles


@triton.jit
def _reduce_kernel(x_ptr, o_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :])
    if OP == "sum":
        tl.store(o_ptr + rows, tl.sum(x, axis=1))
    elif OP == "max":
        tl.store(o_ptr + rows, tl.max(x, axis=1))
    elif OP == "min":
        tl.store(o_ptr + rows, tl.min(x, axis=1))
    elif OP == "argmax":
        tl.store(o_ptr + rows, tl.argmax(x, axis=1))
    elif OP == "argmin":
        tl.store(o_ptr + rows, tl.argmin(x, axis=1))
    elif OP == "sum0":  # along the other axis
        tl.store(o_ptr + tl.arange(0, N), tl.sum(x, axis=0))
    elif OP == "max_all":  # to a scalar
        tl.store(o_ptr, tl.max(x))
    elif OP == "cumsum":
        tl.store(o_ptr + rows[:, None] * N + tl.arange(0, N)[None, :], tl.cumsum(x, axis=1))


def _sum_dtype(d: str, scan: bool = False) -> str:
    if d in SINTS and BITS[d] < 32:
        return "int32"
    if d in UINTS and BITS[d] < 32:
        return "uint32"
    if scan and d == "bfloat16":  # tl.cumsum promotes bf16 to f32
        return "float32"
    return d


def _reduce_inputs(d: str) -> np.ndarray:
    if d in INTS:
        x = values(d, 11, RM * RN).reshape(RM, RN)
        x[1, 9] = x[1].max()  # ties: argmax/argmin take the first
        x[2, 11] = x[2].min()
        return x
    # floats: small integers, so that every order of summation is exact (fp8: |partial sums| <= 8)
    rng = np.random.default_rng(11)
    hi = 1 if d in FP8 else 8
    x = rng.integers(-hi, hi, size=(RM, RN), endpoint=True).astype(np.float64)
    if d in FP8:
        x[:, RN // 2:] = -x[:, :RN // 2]
    x[3, 4] = x[3].max()
    return x


def ref_reduce(op: str, d: str, x: np.ndarray) -> tuple[np.ndarray, str]:
    if op in ("sum", "sum0", "cumsum"):
        out = _sum_dtype(d, op == "cumsum")
        xs = x if op != "sum0" else x.T
        if d in INTS:
            rows = [[int(v) for v in r] for r in xs]
            if op == "cumsum":
                return np.stack([wrap(np.cumsum(np.array(r, dtype=object)), out) for r in rows]), out
            return wrap([sum(r) for r in rows], out), out
        return (np.cumsum(xs, axis=1) if op == "cumsum" else xs.sum(axis=1)), out
    if op in ("argmax", "argmin"):
        return (x.argmax(axis=1) if op == "argmax" else x.argmin(axis=1)).astype(np.int32), "int32"
    if op == "max_all":
        return np.array([x.max()]), d
    return (x.max(axis=1) if op == "max" else x.min(axis=1)), d


REDUCE_OPS = ["sum", "max", "min", "argmax", "argmin", "sum0", "max_all", "cumsum"]


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("d", ALL)
def test_reduce(op, d):
    x = _reduce_inputs(d)
    want, out = ref_reduce(op, d, x)
    o = torch.zeros(want.size, dtype=TORCH[out])
    _reduce_kernel[(1,)](to_torch(x.reshape(-1), d), o, OP=op, M=RM, N=RN)
    assert_same(to_numpy(o, out), want.reshape(-1), f"{d} {op}")


# ============================================================================ where / masks / other

@triton.jit
def _where_kernel(c_ptr, x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    c = tl.load(c_ptr + i) != 0
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    tl.store(o_ptr + i, tl.where(c, x, y))
    s = tl.load(y_ptr + 2)
    tl.store(o_ptr + N + i, tl.where(c, x, s))  # a scalar branch
    cs = tl.load(c_ptr + 1) != 0
    tl.store(o_ptr + 2 * N + i, tl.where(cs, x, y))  # a scalar condition


@pytest.mark.parametrize("d", ALL)
def test_where(d):
    c = (np.arange(N) % 3 == 0).astype(np.int8)
    x, y = values(d, 12), values(d, 13)
    o = torch.zeros(3 * N, dtype=TORCH[d])
    _where_kernel[(1,)](torch.from_numpy(c), to_torch(x, d), to_torch(y, d), o, N=N)
    want = np.concatenate([np.where(c != 0, x, y), np.where(c != 0, x, y[2]), x if c[1] else y])
    assert_same(to_numpy(o, d), want, d)


@triton.jit
def _masked_kernel(x_ptr, idx_ptr, o_ptr, n, OTHER: tl.constexpr, GATHER: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    if GATHER:
        j = tl.load(idx_ptr + i)  # data-dependent offsets: index-driven DMA
    else:
        j = i
    x = tl.load(x_ptr + j, mask=j < n, other=OTHER)
    tl.store(o_ptr + i, x, mask=(i % 3) != 0)


def _other_value(d: str):
    if d in UINTS:
        return 1 << (BITS[d] - 1)  # the top bit
    if d in SINTS:
        return -3
    return -2.5


@pytest.mark.parametrize("path", ["dma", "gather", "scalar"])
@pytest.mark.parametrize("d", ALL)
def test_masked_load_store(d, path):
    x, sentinel = values(d, 14), values(d, 15)
    perm = np.random.default_rng(16).permutation(N).astype(np.int32)
    n = 45
    o = to_torch(sentinel, d)
    opts = dict(structured_dma=False, index_dma=False) if path == "scalar" else {}
    _masked_kernel[(1,)](to_torch(x, d), torch.from_numpy(perm), o, n, OTHER=_other_value(d),
                         GATHER=path != "dma", N=N, **opts)
    j = perm if path != "dma" else np.arange(N)
    other = np.array([_other_value(d)], dtype=np_dtype(d) if d in INTS else np.float64)
    loaded = np.where(j < n, x[np.minimum(j, N - 1)], other[0])
    want = np.where(np.arange(N) % 3 != 0, loaded, sentinel)
    assert_same(to_numpy(o, d), want.astype(x.dtype), f"{d} {path}")


# ============================================================================ atomics

@triton.jit
def _atomic_kernel(p_ptr, v_ptr, old_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    i = tl.arange(0, N)
    v = tl.load(v_ptr + pid * N + i)
    dst = p_ptr + (i % M)
    if OP == "add":
        old = tl.atomic_add(dst, v)
    elif OP == "max":
        old = tl.atomic_max(dst, v)
    elif OP == "min":
        old = tl.atomic_min(dst, v)
    elif OP == "xchg":
        old = tl.atomic_xchg(dst, v)
    elif OP == "and":
        old = tl.atomic_and(dst, v)
    elif OP == "or":
        old = tl.atomic_or(dst, v)
    elif OP == "xor":
        old = tl.atomic_xor(dst, v)
    elif OP == "cas":  # swap in v where memory holds what this element expects (its own value's twin)
        old = tl.atomic_cas(dst, tl.load(v_ptr + ((pid * N + i) ^ 1)), v)
    tl.store(old_ptr + pid * N + i, old)


ATOMIC_DTYPES = {  # the element types Triton accepts for each atomic
    "add": ["int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"],
    "max": ["int32", "uint32", "int64", "uint64", "float32", "float64"],
    "min": ["int32", "uint32", "int64", "uint64", "float32", "float64"],
    "xchg": ["int32", "uint32", "int64", "uint64", "float32", "float64"],
    "and": ["int32", "uint32", "int64", "uint64"],
    "or": ["int32", "uint32", "int64", "uint64"],
    "xor": ["int32", "uint32", "int64", "uint64"],
}
ATOMIC_CASES = [(op, d) for op, ds in ATOMIC_DTYPES.items() for d in ds]


def _atomic_values(op: str, d: str, n: int) -> np.ndarray:
    if d in INTS:
        return values(d, 17, n)
    rng = np.random.default_rng(17)
    if op == "add":  # small integers: exact whatever the order
        return rng.integers(-8, 8, size=n, endpoint=True).astype(np.float64)
    v = rng.uniform(-100, 100, size=n)
    v[::7] = -0.0
    return to_numpy(to_torch(v, d), d)


def _atomic_apply(op: str, d: str, cur, v):
    if op == "add":
        return int(cur) + int(v) if d in INTS else cur + v
    if op == "max":
        return max(cur, v)
    if op == "min":
        return min(cur, v)
    return {"and": lambda p, q: int(p) & int(q), "or": lambda p, q: int(p) | int(q),
            "xor": lambda p, q: int(p) ^ int(q)}[op](cur, v)


@pytest.mark.parametrize("op,d", ATOMIC_CASES, ids=[f"{op}-{d}" for op, d in ATOMIC_CASES])
def test_atomic_unique_addresses(op, d):
    """One program, distinct addresses: each old value is the initial one."""
    init, v = _atomic_values(op, d, N), _atomic_values(op, d, 2 * N)[N:]
    p, old = to_torch(init, d), torch.zeros(N, dtype=TORCH[d])
    _atomic_kernel[(1,)](p, to_torch(v, d), old, OP=op, M=N, N=N)
    assert_same(to_numpy(old, d), init, f"{op} {d} old")
    if op == "xchg":
        want = v
    else:
        want = [_atomic_apply(op, d, a, b) for a, b in zip(init.tolist(), v.tolist())]
        want = wrap(want, d) if d in INTS else np.array(want, dtype=np.float64)
    got = to_numpy(p, d)
    if op in ("max", "min") and d in FLOATS:  # max(-0.0, 0.0) may be either zero
        got, want = np.where(got == 0, 0.0, got), np.where(np.asarray(want) == 0, 0.0, want)
    assert_same(got, np.asarray(want), f"{op} {d}")


@pytest.mark.parametrize("op,d", ATOMIC_CASES, ids=[f"{op}-{d}" for op, d in ATOMIC_CASES])
def test_atomic_contended(op, d):
    """Four programs, every address updated by eight elements: the final value is the same in
    any order (xchg: the old values and the final one are the initial one and the written ones)."""
    progs, m = 4, 8
    init, v = _atomic_values(op, d, m), _atomic_values(op, d, progs * N + m)[m:]
    p, old = to_torch(init, d), torch.zeros(progs * N, dtype=TORCH[d])
    _atomic_kernel[(progs,)](p, to_torch(v, d), old, OP=op, M=m, N=N)
    got, olds = to_numpy(p, d), to_numpy(old, d)
    addr = np.arange(progs * N) % N % m
    for a in range(m):
        vs = v[addr == a]
        if op == "xchg":
            assert sorted(np.append(olds[addr == a], got[a]).tolist()) == sorted(np.append(vs, init[a]).tolist())
            continue
        acc = init[a].item()
        for w in vs.tolist():
            acc = _atomic_apply(op, d, acc, w)
        want = wrap([acc], d)[0] if d in INTS else acc
        assert got[a] == want or (want == 0 and got[a] == 0), (op, d, a, got[a], want)


CAS_DTYPES = ["int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32", "int64", "uint64", "float64"]


@pytest.mark.parametrize("d", CAS_DTYPES)
def test_atomic_cas_tile(d):
    """Element k compares with v[k ^ 1]: the even half of memory holds what it expects."""
    v = values(d, 18, N)
    init = v.copy()
    init[0::2] = v[1::2]  # memory at even k holds v[k ^ 1]: those swap
    if d not in INTS:  # the compare is bitwise: -0.0 is not 0.0, and NaN is NaN
        v[4], v[5], init[4] = 1.0, -0.0, 0.0
        v[6], v[7], init[6] = 2.0, np.nan, np.nan
    p, old = to_torch(init, d), torch.zeros(N, dtype=TORCH[d])
    _atomic_kernel[(1,)](p, to_torch(v, d), old, OP="cas", M=N, N=N)
    bits = lambda a: to_torch(a, d).view(torch.uint8).numpy().reshape(N, -1)  # noqa: E731
    swapped = np.all(bits(init) == bits(v[np.arange(N) ^ 1]), axis=1)
    assert swapped[0::2].sum() >= N // 2 - 1
    if d not in INTS:
        assert not swapped[4] and swapped[6]
    assert np.array_equal(old.view(torch.uint8).numpy().reshape(N, -1), bits(init))
    want = np.where(swapped[:, None], bits(v), bits(init))
    assert np.array_equal(p.view(torch.uint8).numpy().reshape(N, -1), want)


@triton.jit
def _spin_lock_kernel(lock_ptr, count_ptr, log_ptr):
    pid = tl.program_id(0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    c = tl.load(count_ptr)
    tl.store(log_ptr + pid, c)
    tl.store(count_ptr, c + 1)
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock():
    lock, count, log = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), torch.full((6,), -1)
    _spin_lock_kernel[(6,)](lock, count, log.to(torch.int32))  # warm: the lock is released
    log = torch.full((6,), -1, dtype=torch.int32)
    _spin_lock_kernel[(6,)](lock, count, log)
    assert int(lock) == 0 and int(count) == 12
    assert sorted(log.tolist()) == list(range(6, 12))


@triton.jit
def _locked_accumulate_kernel(lock_ptr, acc_ptr, x_ptr, N: tl.constexpr):
    """Split-K style: each program adds its tile to a shared one under a scalar spin lock."""
    i = tl.arange(0, N)
    y = tl.load(x_ptr + tl.program_id(0) * N + i)
    while tl.atomic_cas(lock_ptr, 0, 1) != 0:
        pass
    tl.store(acc_ptr + i, tl.load(acc_ptr + i) + y)
    tl.atomic_xchg(lock_ptr, 0)


@pytest.mark.parametrize("d", ["int32", "uint32", "float32"])
def test_locked_tile_accumulate(d):
    progs = 5
    x = _loop_values(d, progs)
    lock, acc = torch.zeros(1, dtype=torch.int32), torch.zeros(N, dtype=TORCH[d])
    _locked_accumulate_kernel[(progs,)](lock, acc, to_torch(x.reshape(-1), d), N=N)
    want = wrap([sum(int(v) for v in col) for col in x.T], d) if d in INTS else x.sum(axis=0)
    assert_same(to_numpy(acc, d), want)
    assert int(lock) == 0


@triton.jit
def _cas_tile_loop_kernel(p_ptr, o_ptr, N: tl.constexpr):
    """A CAS loop on a tile of flags whose condition is a reduction of the old values."""
    i = tl.arange(0, N)
    got = tl.atomic_cas(p_ptr + i, tl.zeros([N], tl.int32), tl.full([N], 1, tl.int32))
    tries = 1
    while tl.max(got) == 1:
        got = tl.atomic_cas(p_ptr + i, tl.full([N], 1, tl.int32), tl.full([N], 2, tl.int32)) * 0
        tries += 1
    tl.store(o_ptr + i, got + tries)


def test_cas_tile_loop():
    p = torch.zeros(N, dtype=torch.int32)
    p[3] = 1  # one flag already taken: a second round swaps 1 -> 2 everywhere it is 1
    o = torch.zeros(N, dtype=torch.int32)
    _cas_tile_loop_kernel[(1,)](p, o, N=N)
    assert o.tolist() == [2] * N
    assert p.tolist() == [2] * N


@triton.jit
def _cas_mixed_kernel(p_ptr, o_ptr, MIX: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    if MIX == "tile_ptr_scalar_values":
        old = tl.atomic_cas(p_ptr + i, 0, 1)
    else:  # scalar pointer, tile values
        old = tl.atomic_cas(p_ptr, tl.zeros([N], tl.int32), tl.full([N], 1, tl.int32))
    tl.store(o_ptr + i, old)


@pytest.mark.parametrize("mix", [
    pytest.param(m, marks=xfail("Triton's frontend does not broadcast atomic_cas operands (unlike the other "
                                "atomics): MLIR's verifier prints \"'tt.atomic_cas' op failed to verify that ptr "
                                "type matches cmp type\" at the kernel's line and raises RuntimeError('error "
                                "encountered during parsing') before the backend sees the kernel", RuntimeError))
    for m in ["tile_ptr_scalar_values", "scalar_ptr_tile_values"]])
def test_cas_scalar_tile_mix(mix):
    p, o = torch.zeros(N, dtype=torch.int32), torch.full((N,), -1, dtype=torch.int32)
    _cas_mixed_kernel[(1,)](p, o, MIX=mix, N=N)
    assert o.tolist()[:1] == [0]


@triton.jit
def _scalar_cas_kernel(p_ptr, o_ptr, cmp, val):
    ty = p_ptr.dtype.element_ty  # atomic_cas takes cmp and val of the pointee's type
    old = tl.atomic_cas(p_ptr + 1, cmp.to(ty), val.to(ty))
    tl.store(o_ptr, old)
    old2 = tl.atomic_cas(p_ptr + 1, val.to(ty), old + 1)  # a value read back from a CAS
    tl.store(o_ptr + 1, old2)


@pytest.mark.parametrize("d", ["int32", "uint32", "int64", "uint64"])
def test_atomic_cas_scalar(d):
    top = (1 << (BITS[d] - 1)) if d in UINTS else -5
    p = to_torch(np.array([7, top, 9], np_dtype(d)), d)
    o = torch.zeros(2, dtype=TORCH[d])
    _scalar_cas_kernel[(1,)](p, o, top, 11)
    assert_same(to_numpy(o, d), wrap([top, 11], d))
    assert_same(to_numpy(p, d), wrap([7, top + 1, 9], d))


# ============================================================================ control flow

@triton.jit
def _loop_kernel(x_ptr, o_ptr, K, MODE: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    acc = tl.zeros((N,), dtype=o_ptr.dtype.element_ty)
    if MODE == "for":
        for k in range(K):
            acc += tl.load(x_ptr + k * N + i)
    elif MODE == "static":
        for k in tl.static_range(4):
            acc += tl.load(x_ptr + k * N + i)
    elif MODE == "while":
        k = 0
        while k < K:
            acc += tl.load(x_ptr + k * N + i)
            k += 1
    elif MODE == "scalar":  # a scalar loop-carried value, then broadcast
        s = tl.load(x_ptr).to(o_ptr.dtype.element_ty) * 0
        for k in range(K):
            s += tl.load(x_ptr + k * N + 5)
        acc += s
    tl.store(o_ptr + i, acc)


def _loop_values(d: str, k: int) -> np.ndarray:
    if d in INTS:
        return values(d, 19, k * N).reshape(k, N)
    rng = np.random.default_rng(19)
    return rng.integers(-2, 2, size=(k, N), endpoint=True).astype(np.float64)  # exact in any order


@pytest.mark.parametrize("mode", ["for", "static", "while", "scalar"])
@pytest.mark.parametrize("d", ALL)
def test_loops(d, mode):
    k = 4
    x = _loop_values(d, k)
    o = torch.zeros(N, dtype=TORCH[d])
    _loop_kernel[(1,)](to_torch(x.reshape(-1), d), o, k, MODE=mode, N=N)
    cols = x if mode != "scalar" else np.repeat(x[:, 5:6], N, axis=1)
    if d in INTS:
        want = wrap([sum(int(v) for v in col) for col in cols.T], d)
    else:
        want = cols.sum(axis=0)
    assert_same(to_numpy(o, d), want, f"{d} {mode}")


@triton.jit
def _constexpr_branch_kernel(x_ptr, o_ptr, FLAG: tl.constexpr, SCALE: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    if FLAG:
        x = x * SCALE
    else:
        x = x + SCALE
    if x_ptr.dtype.element_ty.is_int_unsigned():  # a branch on the argument's type
        x = x >> 1
    tl.store(o_ptr + i, x)


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("d", INTS + FLOATS)
def test_constexpr_branch(d, flag):
    x = values(d, 20)
    o = torch.zeros(N, dtype=TORCH[d])
    _constexpr_branch_kernel[(1,)](to_torch(x, d), o, FLAG=flag, SCALE=3, N=N)
    if d in INTS:
        want = wrap([int(v) * 3 if flag else int(v) + 3 for v in x], d)
        if d in UINTS:
            want = want >> 1
    else:
        want = round_to(x * 3 if flag else x + 3, d)
    assert_same(to_numpy(o, d), want, f"{d} {flag}")


# ============================================================================ compiled stages

def test_asm_has_the_backend_stages():
    from backend.compiler import STAGES
    x = torch.zeros(N)
    k = _copy_kernel[(1,)](x, x.clone(), N=N)
    assert sorted(k.asm) == sorted(STAGES + ("source",))  # Triton also keeps the kernel's source
    for stage in STAGES:
        assert len(k.asm[stage]) > 0
    with pytest.raises(KeyError, match="ttgir"):
        k.asm["ttgir"]


@xfail("Triton's AsmDict raises KeyError(\"Unknown key: 'ttgir'\") and gives a backend no hook to list "
       "its stages (see backend/compiler.py)", AssertionError)
def test_asm_gpu_stage_error_lists_backend_stages():
    x = torch.zeros(N)
    k = _copy_kernel[(1,)](x, x.clone(), N=N)
    with pytest.raises(KeyError, match="mtiasm"):
        k.asm["ttgir"]


# ============================================================================ immediate constants

@triton.jit
def _immediate_kernel(x_ptr, o_ptr, C: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(o_ptr + 0 * N + i, (x > C).to(x.dtype))
    tl.store(o_ptr + 1 * N + i, x // C)
    tl.store(o_ptr + 2 * N + i, x % C)
    tl.store(o_ptr + 3 * N + i, tl.maximum(x, C))
    tl.store(o_ptr + 4 * N + i, x + C)
    tl.store(o_ptr + 5 * N + i, x ^ C)
    s = tl.load(x_ptr + 9)
    tl.store(o_ptr + 6 * N + i, tl.zeros_like(x) + s // C)  # scalar register and immediate


@pytest.mark.parametrize("d", INTS)
def test_immediate_constants(d):
    """Constexpr operands (immediates) with the top bit set keep their unsigned meaning."""
    c = (1 << (BITS[d] - 1)) + 3 if d in UINTS else -3
    x = values(d, 21)
    o = torch.zeros(7 * N, dtype=TORCH[d])
    _immediate_kernel[(1,)](to_torch(x, d), o, C=c, N=N)
    a = [int(v) for v in x]
    div = (lambda p: p // c) if d in UINTS else (lambda p: _trunc_div(p, c))
    want = [[int(p > c) for p in a], [div(p) for p in a], [p - div(p) * c for p in a], [max(p, c) for p in a],
            [p + c for p in a], [p ^ c for p in a], [div(a[9])] * N]
    for k, w in enumerate(want):
        assert_same(o.numpy()[k * N:(k + 1) * N], wrap(w, d), f"{d} slot {k}")


# ============================================================================ fused and ternary float ops

@triton.jit
def _ternary_kernel(x_ptr, y_ptr, z_ptr, o_ptr, OP: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    z = tl.load(z_ptr + i)
    if OP == "mul_add":  # contracted to an fma (enable_fp_fusion)
        r = x * y + z
    elif OP == "fma":
        r = tl.fma(x, y, z)
    elif OP == "clamp":
        r = tl.clamp(x, tl.minimum(y, z), tl.maximum(y, z))
    tl.store(o_ptr + i, r)


def _ternary_values(d: str):
    rng = np.random.default_rng(22)
    # small integers: products and sums exact in every format, so fused and unfused agree
    hi = 2 if d in FP8 else 3
    return [rng.integers(-hi, hi, size=N, endpoint=True).astype(np.float64) for _ in range(3)]


TERNARY_CASES = [(d, op) for d in FLOATS + FP8 for op in ["mul_add", "fma", "clamp"]]


@pytest.mark.parametrize("d,op", TERNARY_CASES, ids=[f"{d}-{op}" for d, op in TERNARY_CASES])
def test_float_ternary(d, op):
    x, y, z = _ternary_values(d)
    o = torch.zeros(N, dtype=TORCH[d])
    _ternary_kernel[(1,)](to_torch(x, d), to_torch(y, d), to_torch(z, d), o, OP=op, N=N)
    want = np.clip(x, np.minimum(y, z), np.maximum(y, z)) if op == "clamp" else x * y + z
    assert_same(to_numpy(o, d), want, f"{d} {op}")
