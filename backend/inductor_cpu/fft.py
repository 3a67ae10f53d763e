"""`dft_lowerings`: the FFT ops, which Inductor leaves to aten (pocketfft on the host), as
discrete Fourier transforms in Triton code: each transformed dimension is one matrix product
with a table of twiddle factors computed on the chip.

Inductor has no lowering for aten._fft_r2c, _fft_c2c and _fft_c2r (torch.fft.* and stft reduce
to them). With the switch on, an entry of Inductor's decomposition table rewrites each call on
the cpu -> MTIA path, for transformed lengths of at most DFT_LIMIT, into real arithmetic:

- a complex operand is read through `view_as_real` (a view), its real and imaginary parts as
  two real tensors; a complex result is `view_as_complex` of a stacked (re, im) pair (a view
  of what the last kernel wrote);
- the twiddles of a length-n dimension are cos and sin of 2 pi (j k mod n) / n, j, k < n: the
  product j k is reduced modulo n in integers first, so the angle's argument stays below
  2 pi and FP32 keeps its accuracy whatever n is; one small pointwise kernel;
- each dimension of `dim` is one real matmul per part (Inductor's GEMM templates or the
  expert GEMM, as any mm): forward Y = X e^{-i theta}, inverse e^{+i theta}; r2c with
  `onesided` keeps the first n // 2 + 1 outputs of its last dimension; c2r extends the half
  spectrum Hermitian-wise (weights 1, 2, ..., 2, 1; the imaginary parts of the DC and Nyquist
  terms multiply sin 0 = sin(pi t) = 0 and are ignored, as pocketfft ignores them);
- `normalization` 1 (1 / sqrt(n)) and 2 (1 / n), n the product of the transformed lengths,
  scale the result.

What it costs against pocketfft: a length-n transform is an O(n^2) product where the FFT is
O(n log n). For the short transforms it takes (at most DFT_LIMIT = 512 points per dimension;
OpInfo's are 2 to 10) the product runs on the DPE at its matrix rate, which is how a DFT of
this size is done on a matrix engine; longer ones stay on the host. Rounding: each output is
a dot product of n terms in FP32 (pocketfft's butterflies add log2 n rounding steps per
output, the product n), within T4's tolerances for the lengths above.

Only FP32 / complex64 (FP64 stays on the host: the chip has no FP64); a call with an empty
dimension or a longer one returns NotImplemented and stays with aten.
"""
from __future__ import annotations

import math
from typing import Any, Callable

DFT_LIMIT = 512

_ORIGINAL: dict[Any, Callable | None] = {}


def _twiddles(rows: int, cols: int, n: int, like):
    """(cos, sin) of 2 pi (j k mod n) / n for j < rows, k < cols, FP32."""
    import torch
    j = torch.arange(rows, device=like.device, dtype=torch.int64)
    k = torch.arange(cols, device=like.device, dtype=torch.int64)
    angle = ((j[:, None] * k[None, :]) % n).to(torch.float32) * (2 * math.pi / n)
    return torch.cos(angle), torch.sin(angle)


def _along(x, d: int, w):
    """x (real) times w over dimension d: sum_j x[..., j, ...] w[j, k]."""
    return (x.movedim(d, -1) @ w).movedim(-1, d)


def _c2c_dim(re, im, d: int, forward: bool):
    n = re.shape[d]
    c, s = _twiddles(n, n, n, re)
    if forward:   # (re + i im)(c - i s)
        return _along(re, d, c) + _along(im, d, s), _along(im, d, c) - _along(re, d, s)
    return _along(re, d, c) - _along(im, d, s), _along(im, d, c) + _along(re, d, s)


def _factor(sizes: list[int], normalization: int) -> float | None:
    """aten's normalization: 0 none, 1 by 1 / sqrt(n), 2 by 1 / n (n: the transformed lengths' product)."""
    n = math.prod(sizes)
    return {1: 1.0 / math.sqrt(n), 2: 1.0 / n}.get(normalization)


def _scale(re, im, sizes: list[int], normalization: int):
    f = _factor(sizes, normalization)
    return (re, im) if f is None else (re * f, im * f)


def _complex(re, im):
    import torch
    return torch.view_as_complex(torch.stack((re, im), -1))


def _parts(x):
    """(re, im) of a complex tensor as real views; a lazily conjugated one (conj bit set) is read
    through its unconjugated view, the imaginary part negated."""
    import torch
    if x.is_conj():
        r = torch.view_as_real(x.conj())
        return r[..., 0], -r[..., 1]
    r = torch.view_as_real(x)
    return r[..., 0], r[..., 1]


# complex64 data movement around the transforms (torch.fft pads or trims its input, hfft
# conjugates it), which Inductor would otherwise leave to aten: each on the (re, im) pair
def _constant_pad_nd(x, pad, value=0):
    import torch
    if x.dtype != torch.complex64 or complex(value) != 0:
        return NotImplemented
    re, im = _parts(x)
    return _complex(torch.constant_pad_nd(re, pad, 0.0), torch.constant_pad_nd(im, pad, 0.0))


def _clone(x, *, memory_format=None):
    import torch
    if x.dtype != torch.complex64:
        return NotImplemented
    re, im = _parts(x)
    return _complex(re, im)


def _conj_physical(x):
    import torch
    if x.dtype != torch.complex64:
        return NotImplemented
    re, im = _parts(x)
    return _complex(re, -im)


def _fits(x, dims: list[int]) -> bool:
    return x.numel() > 0 and all(0 < x.shape[d] <= DFT_LIMIT for d in dims)


def _dims(x, dim) -> list[int]:
    return [d % x.dim() for d in dim]


def _fft_r2c(x, dim, normalization, onesided):
    import torch
    dims = _dims(x, dim)
    if x.dtype != torch.float32 or not _fits(x, dims):
        return NotImplemented
    sizes = [x.shape[d] for d in dims]
    last = dims[-1]
    n = x.shape[last]
    m = n // 2 + 1 if onesided else n
    c, s = _twiddles(n, m, n, x)
    re, im = _along(x, last, c), -_along(x, last, s)
    for d in dims[:-1]:
        re, im = _c2c_dim(re, im, d, forward=True)
    return _complex(*_scale(re, im, sizes, normalization))


def _fft_c2c(x, dim, normalization, forward):
    import torch
    dims = _dims(x, dim)
    if x.dtype != torch.complex64 or not _fits(x, dims):
        return NotImplemented
    sizes = [x.shape[d] for d in dims]
    re, im = _parts(x)
    for d in dims:
        re, im = _c2c_dim(re, im, d, forward)
    return _complex(*_scale(re, im, sizes, normalization))


def _fft_c2r(x, dim, normalization, last_dim_size):
    import torch
    dims = _dims(x, dim)
    n = int(last_dim_size)
    last = dims[-1]
    if x.dtype != torch.complex64 or not _fits(x, dims[:-1]) or not 0 < n <= DFT_LIMIT or x.numel() == 0:
        return NotImplemented
    m = n // 2 + 1
    if x.shape[last] != m:
        return NotImplemented  # torch.fft pads or trims to n // 2 + 1 before calling
    sizes = [x.shape[d] for d in dims[:-1]] + [n]
    re, im = _parts(x)
    for d in dims[:-1]:
        re, im = _c2c_dim(re, im, d, forward=False)
    # x[t] = sum_k w_k (re_k cos(2 pi k t / n) - im_k sin(2 pi k t / n)), k < m
    k = torch.arange(m, device=x.device)
    w = torch.where((k == 0) | (2 * k == n), 1.0, 2.0).to(torch.float32)[:, None]
    c, s = _twiddles(m, n, n, x)
    c, s = c * w, s * w
    out = _along(re, last, c) - _along(im, last, s)
    f = _factor(sizes, normalization)
    return out if f is None else out * f


def _make_complex(real, imag):
    """torch.complex(real, imag) and torch.polar's result for FP32 parts (aten.complex, which
    Inductor leaves to aten): a stacked pair viewed as complex64."""
    import torch
    if real.dtype != torch.float32 or imag.dtype != torch.float32:
        return NotImplemented
    real, imag = torch.broadcast_tensors(real, imag)
    return _complex(real, imag)


def _polar(magnitude, angle):
    import torch
    if magnitude.dtype != torch.float32 or angle.dtype != torch.float32:
        return NotImplemented
    magnitude, angle = torch.broadcast_tensors(magnitude, angle)
    return _complex(magnitude * torch.cos(angle), magnitude * torch.sin(angle))


def _to_complex(x, dtype):
    """A real tensor converted to complex64 or complex32 (`Tensor.cfloat()`, `chalf()`): the
    values in the part's precision (FP32, FP16) with a zero imaginary part. complex128 stays
    with aten (no FP64 on the chip)."""
    import torch
    part = {torch.complex64: torch.float32, torch.complex32: torch.float16}.get(dtype)
    if part is None or x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return NotImplemented
    re = x.to(part)
    return _complex(re, torch.zeros_like(re))


def _decomps() -> dict[Any, Callable]:
    import torch
    aten = torch.ops.aten
    return {aten._fft_r2c.default: _fft_r2c, aten._fft_c2c.default: _fft_c2c, aten._fft_c2r.default: _fft_c2r,
            aten.constant_pad_nd.default: _constant_pad_nd, aten.clone.default: _clone,
            aten._conj_physical.default: _conj_physical, aten.conj_physical.default: _conj_physical,
            aten.complex.default: _make_complex, aten.polar.default: _polar,
            torch.ops.prims.convert_element_type.default: _to_complex}


def install() -> None:
    """Add the DFT decompositions to Inductor's table (idempotent)."""
    from backend.inductor_cpu import host_ops
    host_ops.install_decompositions(_decomps(), _ORIGINAL, "dft_lowerings")


def uninstall() -> None:
    from backend.inductor_cpu import host_ops
    host_ops.uninstall_decompositions(_ORIGINAL)
