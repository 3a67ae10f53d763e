"""PyTorch eager references: the numerical truth every implementation is checked against.

Floating-point references compute in fp32 (inputs upcast) and return fp32, so a kernel that
stores bf16/fp16 is compared with the exact-as-possible answer at the low-precision tolerance.
Integer outputs (INT8 GEMM, quantised codes) are computed with exactly the kernel's arithmetic,
so they compare bit for bit.
"""
from __future__ import annotations


import torch
import torch.nn.functional as F


def _f32(*xs: torch.Tensor) -> list[torch.Tensor]:
    return [x.float() for x in xs]


# ------------------------------------------------------------------------------ elementwise

def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = _f32(x, y)
    return x + y


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return F.gelu(x.float(), approximate=approximate)


def silu_mul(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.float().chunk(2, dim=-1)
    return F.silu(gate) * up


def bias_act(x: torch.Tensor, bias: torch.Tensor, activation: str = "gelu_tanh") -> torch.Tensor:
    y = x.float() + bias.float()
    if activation == "gelu_tanh":
        return F.gelu(y, approximate="tanh")
    if activation == "gelu":
        return F.gelu(y)
    if activation == "silu":
        return F.silu(y)
    if activation == "relu":
        return F.relu(y)
    raise ValueError(f"unknown activation {activation!r}")


# ------------------------------------------------------------------------------ normalisation

def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    x, weight, bias = _f32(x, weight, bias)
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x, weight = _f32(x, weight)
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


# ------------------------------------------------------------------------------ GEMM

def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = _f32(a, b)
    return a @ b


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    a, b, bias = _f32(a, b, bias)
    return F.gelu(a @ b + bias, approximate="tanh")


def int8_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # float64 products and sums are exact integers while K * 128 * 128 < 2**53 (every partial sum
    # of int8 products stays below 2**53): BLAS speed (an int64 matmul has no BLAS path and does
    # not vectorise without AVX-512: minutes at 2048^3), then a checked narrowing to int32
    K = a.shape[-1]
    if K * 128 * 128 >= 2**53:
        raise ValueError(f"int8_matmul reference: K={K} is too large for an exact float64 sum")
    c = a.to(torch.float64) @ b.to(torch.float64)
    assert c.abs().max() < 2**31, "int32 accumulator would overflow"
    return c.to(torch.int32)


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = _f32(a, b)
    return torch.bmm(a, b)


# ------------------------------------------------------------------------------ attention

def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    q, k, v = _f32(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    q, k, v = _f32(q, k, v)
    return F.scaled_dot_product_attention(q[:, :, None, :], k, v)[:, :, 0, :]


# ------------------------------------------------------------------------------ recommendation

def embedding_bag(weights: torch.Tensor, table_offsets: torch.Tensor, indices: torch.Tensor,
                  offsets: torch.Tensor, num_tables: int, mode: str = "sum") -> torch.Tensor:
    w = weights.float()
    B = (offsets.numel() - 1) // num_tables
    per_table = offsets.view(-1)[:-1].view(num_tables, B)
    outs = []
    for t in range(num_tables):
        lo = int(per_table[t, 0])
        hi = int(offsets[(t + 1) * B])
        idx = indices[lo:hi].long() + table_offsets[t].long()
        outs.append(F.embedding_bag(idx, w, per_table[t].long() - lo, mode=mode))
    return torch.cat(outs, dim=1)


def _segment_ids(offsets: torch.Tensor) -> torch.Tensor:
    lengths = (offsets[1:] - offsets[:-1]).long()
    return torch.repeat_interleave(torch.arange(lengths.numel()), lengths)


def jagged_to_padded_dense(values: torch.Tensor, offsets: torch.Tensor, max_len: int,
                           padding_value: float = 0.0) -> torch.Tensor:
    B, D = offsets.numel() - 1, values.shape[1]
    out = torch.full((B, max_len, D), padding_value, dtype=torch.float32)
    seg = _segment_ids(offsets)
    pos = torch.arange(values.shape[0]) - offsets[:-1].long()[seg]
    keep = pos < max_len
    out[seg[keep], pos[keep]] = values.float()[keep]
    return out


def jagged_sum(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    B, D = offsets.numel() - 1, values.shape[1]
    out = torch.zeros((B, D), dtype=torch.float32)
    return out.index_add_(0, _segment_ids(offsets), values.float())


def jagged_softmax(values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    out = torch.empty(values.shape, dtype=torch.float32)
    bounds = offsets.tolist()
    for b in range(len(bounds) - 1):
        lo, hi = bounds[b], bounds[b + 1]
        if hi > lo:
            out[lo:hi] = torch.softmax(values[lo:hi].float(), dim=0)
    return out


def dot_interaction(x: torch.Tensor) -> torch.Tensor:
    x = x.float()
    B, F_, D = x.shape
    z = torch.bmm(x, x.transpose(1, 2))
    i, j = torch.tril_indices(F_, F_, offset=-1)
    return torch.cat([x[:, 0, :], z[:, i, j]], dim=1)


# ------------------------------------------------------------------------------ data movement

def transpose(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()


def index_select(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return x.index_select(0, index.long())


def concat(tensors: list[torch.Tensor], dim: int = 1) -> torch.Tensor:
    return torch.cat(tensors, dim=dim)


# ------------------------------------------------------------------------------ quantisation

def quantize_int8_rowwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row INT8: q = round_half_away(x * 127 / max|x|), scale = max|x| / 127.
    Written with the kernel's exact fp32 operations so the codes compare bit for bit."""
    x = x.float()
    amax = torch.clamp(x.abs().amax(dim=1), min=1e-12)
    inv = torch.tensor(127.0) / amax
    y = x * inv[:, None]
    q = torch.clamp(torch.where(y >= 0, torch.floor(y + 0.5), torch.ceil(y - 0.5)), -127, 127)
    return q.to(torch.int8), amax / 127.0


def dequantize_int8_rowwise(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.float() * scale.float()[:, None]


MX4_GROUP = 32


def _mx4_split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    g = x.float().reshape(-1, MX4_GROUP)
    amax = g.abs().amax(dim=1)
    # floor(log2(amax)) read from the fp32 exponent field (exact); E2M1's largest exponent is 2
    e = ((amax.view(torch.int32) >> 23) & 0xFF) - 127
    shared = torch.clamp(e - 2, -127, 127)
    return g, shared


def mx4_quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """OCP MX FP4: per group of 32, a shared power-of-two scale 2^(floor(log2 max|x|) - 2) and 4-bit
    E2M1 codes (s e1 e0 m: 0, .5, 1, 1.5, 2, 3, 4, 6), round half away from zero, saturating at 6.
    Returns (codes packed two per byte, low nibble first [N/2] uint8, biased exponents [N/32] uint8)."""
    g, shared = _mx4_split(x)
    scale = torch.pow(2.0, shared.float())
    a = (g / scale[:, None]).abs()
    step = torch.where(a < 2.0, 0.5, torch.where(a < 4.0, 1.0, 2.0))
    a = torch.clamp(torch.floor(a / step + 0.5) * step, max=6.0)
    mag = torch.where(a < 2.0, a * 2.0, torch.where(a < 4.0, a + 2.0, a * 0.5 + 4.0)).to(torch.int32)
    code = (mag | torch.where(g < 0, 8, 0)).reshape(-1, 2)
    packed = (code[:, 0] | (code[:, 1] << 4)).to(torch.uint8)
    return packed, (shared + 127).to(torch.uint8)


def mx4_dequantize(packed: torch.Tensor, exponents: torch.Tensor) -> torch.Tensor:
    p = packed.to(torch.int32)
    code = torch.stack([p & 0xF, p >> 4], dim=1).reshape(-1, MX4_GROUP)
    e = (code >> 1) & 3
    m = (code & 1).float()
    mag = torch.where(e == 0, 0.5 * m, torch.pow(2.0, (e - 1).float()) * (1.0 + 0.5 * m))
    val = torch.where((code & 8) != 0, -mag, mag)
    scale = torch.pow(2.0, exponents.to(torch.int32).float() - 127.0)
    return (val * scale[:, None]).reshape(-1)


# ------------------------------------------------------------------------------ other

def jagged_offsets(lengths: torch.Tensor) -> torch.Tensor:
    """Exclusive cumsum with the total appended: [0, l0, l0+l1, ...] (B + 1 entries)."""
    out = torch.zeros(lengths.numel() + 1, dtype=lengths.dtype)
    out[1:] = torch.cumsum(lengths, dim=0)
    return out


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE (Llama/NeoX): x [B, S, H, D]; cos, sin [S, D/2]."""
    x = x.float()
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c = cos.float()[None, :, None, :]
    s = sin.float()[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
