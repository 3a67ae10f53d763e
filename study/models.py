"""Model workloads for T3 (model coverage): four models built in the project with random weights.

Each model has two sizes. "test" is tiny (seconds, for tests). "study" is the docs/study.md shape
scaled down so that one functional simulation of the whole model takes under about two minutes
on a 2-core host: the structure (layers, ops, their order, dtype) is identical, only batch,
sequence, hidden width and table sizes shrink. docs/study.md's shapes are listed beside each
"study" size as `paper`, and the factor is written into the CSV's notes.

| model    | docs/study.md shape                                   | "study" size here (scaling)                   |
|----------|--------------------------------------------------|-----------------------------------------------|
| decoder  | batch 16, seq 2048, hidden 4096, 32 heads, BF16  | batch 4, seq 256, hidden 512, 4 heads (hd 128), ffn 1376: batch /4, seq /8, hidden, heads, ffn /8 |
| dlrm     | tens of tables, 1e5-1e6 rows, dim 64-128, batch 512-4096 | the smallest docs/study.md shape: batch 512, 26 tables x 1e5 rows, dim 64; bags 1-16; MLPs 13-512-256-64, 512-256-1 |
| moe      | tokens 4096, hidden 4096, top-2 of 8             | tokens 512, hidden 512, ffn 1024, top-2 of 8: tokens, hidden /8 |
| jagged   | batch 512, history lengths 1-1024                | batch 64, lengths 1-128, item dim 64: batch, lengths /8 (Inductor's autotuning of the scatter kernels is slow to simulate) |

All models run in BF16 (docs/study.md: the decoder is BF16; the others follow it); correctness is
checked against eager at the BF16 tolerance (1e-2).

A third size, "paper", is docs/study.md's shape itself (`PAPER_SIZES`; not in `SIZES`, which
T3's functional run iterates): decoder batch 16, seq 2048, hidden 4096, 32 heads, ffn 11008;
MoE 4096 tokens, hidden 4096, ffn 8192 (2 x hidden, as the study size), top-2 of 8; jagged
batch 512, lengths 1-1024, item dim 64; DLRM its study shape (already the smallest docs shape).
It is simulated in timing mode only (study/model_paper.py): too large for the functional
simulator and for an eager reference on this host.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = torch.bfloat16
SIZES = ("test", "study")
PAPER_SIZES = ("paper",)


# ----------------------------------------------------------------------------- decoder block

class DecoderBlock(nn.Module):
    """LayerNorm -> Q, K, V (no bias) -> QK^T / sqrt(d) + mask -> softmax -> x V -> heads
    recombined -> output projection -> + residual; then RMSNorm -> SwiGLU MLP -> + residual."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.ln = nn.LayerNorm(hidden)
        self.wq = nn.Linear(hidden, hidden, bias=False)
        self.wk = nn.Linear(hidden, hidden, bias=False)
        self.wv = nn.Linear(hidden, hidden, bias=False)
        self.wo = nn.Linear(hidden, hidden, bias=False)
        self.rms = nn.RMSNorm(hidden, eps=1e-6)
        self.w_gate = nn.Linear(hidden, ffn, bias=False)
        self.w_up = nn.Linear(hidden, ffn, bias=False)
        self.w_down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        y = self.ln(x)
        q = self.wq(y).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(y).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.wv(y).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + mask
        p = torch.softmax(scores, dim=-1)
        o = (p @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.wo(o)
        z = self.rms(x)
        return x + self.w_down(F.silu(self.w_gate(z)) * self.w_up(z))


# ----------------------------------------------------------------------------- DLRM

def _mlp(dims: list[int], last_act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if last_act or i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """Dense features -> bottom MLP; sparse features -> one table-batched embedding bag (all
    tables concatenated row-wise, sum pooling, variable bag sizes, FBGEMM TBE layout: bags
    table-major, indices already offset into the batched table); pairwise dot interaction
    (strict upper triangle of Z Z^T); top MLP -> sigmoid."""

    def __init__(self, dense_in: int, n_tables: int, rows: int, dim: int, bottom: list[int], top: list[int]):
        super().__init__()
        self.n_tables, self.dim = n_tables, dim
        self.bottom = _mlp([dense_in, *bottom, dim])
        self.tables = nn.Parameter(torch.randn(n_tables * rows, dim) * 0.1)
        f = n_tables + 1
        li, lj = torch.triu_indices(f, f, offset=1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        self.top = _mlp([dim + f * (f - 1) // 2, *top, 1], last_act=False)

    def forward(self, dense: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        b = dense.shape[0]
        x = self.bottom(dense)                                                  # (B, D)
        e = F.embedding_bag(indices, self.tables, offsets, mode="sum", include_last_offset=True)
        e = e.view(self.n_tables, b, self.dim).transpose(0, 1)                  # (B, T, D)
        z = torch.cat([x.unsqueeze(1), e], dim=1)                               # (B, T+1, D)
        zz = torch.bmm(z, z.transpose(1, 2))                                    # (B, T+1, T+1)
        inter = zz[:, self.li, self.lj]                                         # (B, (T+1)T/2)
        return torch.sigmoid(self.top(torch.cat([x, inter], dim=1)))


# ----------------------------------------------------------------------------- MoE FFN

class MoEFFN(nn.Module):
    """Router (softmax, top-2 of 8, renormalised), per-expert SwiGLU, weighted combine.

    Tokens are dispatched with static shapes (GShard-style capacity): each (token, choice)
    gets its slot in its expert's buffer from a cumulative count, the buffer (E, C, H) goes
    through batched per-expert SwiGLU GEMMs, and outputs are gathered back and combined with
    the router weights. Capacity C = tokens * k / E * 2, so for random routing no token is
    dropped in practice (a dropped choice contributes zero, in eager and compiled alike)."""

    def __init__(self, hidden: int, ffn: int, experts: int = 8, top_k: int = 2, capacity_factor: float = 2.0,
                 param_dtype: torch.dtype = torch.float32):
        super().__init__()
        self.e, self.k, self.cf = experts, top_k, capacity_factor
        self.router = nn.Linear(hidden, experts, bias=False)
        # param_dtype: the paper size draws its expert weights in BF16 directly (three FP32
        # copies of 8 x 4096 x 8192 would need 3 GB more)
        self.w_gate = nn.Parameter(torch.randn(experts, hidden, ffn, dtype=param_dtype) / math.sqrt(hidden))
        self.w_up = nn.Parameter(torch.randn(experts, hidden, ffn, dtype=param_dtype) / math.sqrt(hidden))
        self.w_down = nn.Parameter(torch.randn(experts, ffn, hidden, dtype=param_dtype) / math.sqrt(ffn))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, h = x.shape
        cap = int(math.ceil(t * self.k / self.e * self.cf))
        probs = torch.softmax(self.router(x).float(), dim=-1)
        w, idx = torch.topk(probs, self.k, dim=-1)                            # (T, k)
        w = w / w.sum(-1, keepdim=True)
        onehot = F.one_hot(idx.reshape(-1), self.e)                           # (T*k, E)
        pos = ((torch.cumsum(onehot, dim=0) - 1) * onehot).sum(-1)            # slot within expert
        keep = pos < cap
        slot = torch.where(keep, idx.reshape(-1) * cap + pos, self.e * cap)  # overflow -> spare row
        tok = torch.arange(t, device=x.device).repeat_interleave(self.k)
        buf = x.new_zeros(self.e * cap + 1, h).index_copy(0, slot, x[tok])
        xe = buf[:-1].view(self.e, cap, h)
        he = F.silu(torch.bmm(xe, self.w_gate)) * torch.bmm(xe, self.w_up)
        ye = torch.bmm(he, self.w_down).reshape(self.e * cap, h)
        ye = torch.cat([ye, ye.new_zeros(1, h)], dim=0)
        # combine in fp32 (as MoE layers usually do): a bf16 sum of k products would round twice
        cw = w.float().reshape(-1, 1) * keep.unsqueeze(1)
        return (ye[slot].float() * cw).view(t, self.k, h).sum(1).to(x.dtype)


# ----------------------------------------------------------------------------- jagged block

class JaggedBlock(nn.Module):
    """Variable-length user histories as a jagged tensor (values (N, D) + offsets (B+1)):
    per-item projection, jagged attention pooling against a per-user query (segment softmax:
    segment max, exp, segment sum), jagged mean pooling, then an MLP on [attn, mean, user]."""

    def __init__(self, dim: int, user_in: int, hidden: list[int]):
        super().__init__()
        self.item = nn.Linear(dim, dim)
        self.query = nn.Linear(user_in, dim)
        self.mlp = _mlp([2 * dim + user_in, *hidden, 1], last_act=False)
        self.dim = dim

    def forward(self, values: torch.Tensor, offsets: torch.Tensor, user: torch.Tensor) -> torch.Tensor:
        b, n = user.shape[0], values.shape[0]
        seg = torch.searchsorted(offsets[1:], torch.arange(n, device=values.device), right=True)  # (N,)
        lengths = (offsets[1:] - offsets[:-1]).clamp(min=1)
        v = torch.relu(self.item(values))                                       # (N, D)
        q = self.query(user)                                                    # (B, D)
        s = ((v * q[seg]).sum(-1) / math.sqrt(self.dim)).float()                # (N,)
        smax = s.new_full((b,), float("-inf")).scatter_reduce(0, seg, s, "amax", include_self=True)
        p = torch.exp(s - smax[seg])
        denom = s.new_zeros(b).index_add(0, seg, p)
        a = (p / denom[seg]).to(v.dtype).unsqueeze(1)
        attn = v.new_zeros(b, self.dim).index_add(0, seg, a * v)
        mean = v.new_zeros(b, self.dim).index_add(0, seg, v) / lengths.unsqueeze(1).to(v.dtype)
        return torch.sigmoid(self.mlp(torch.cat([attn, mean, user], dim=1)))


# ----------------------------------------------------------------------------- registry

@dataclass
class ModelCase:
    name: str
    size: str
    module: nn.Module
    inputs: tuple
    shape: str            # what this size is, in the model's own terms
    paper: str            # docs/study.md's shape, for the notes
    scaling: str          # how "study" relates to the paper shape
    extra: dict[str, Any] = field(default_factory=dict)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _decoder(size: str) -> ModelCase:
    b, s, h, nh, ffn = {"test": (1, 32, 64, 2, 128), "study": (4, 256, 512, 4, 1376),
                        "paper": (16, 2048, 4096, 32, 11008)}[size]
    torch.manual_seed(0)
    m = DecoderBlock(h, nh, ffn)
    x = torch.randn(b, s, h, generator=_gen(1))
    mask = torch.full((s, s), float("-inf")).triu(1)
    paper = "batch 16, seq 2048, hidden 4096, 32 heads (hd 128), ffn 11008, BF16"
    return ModelCase("decoder", size, m, (x, mask), f"batch {b}, seq {s}, hidden {h}, {nh} heads (hd {h // nh}), "
                     f"ffn {ffn}", paper, "none: the docs/study.md shape" if size == "paper" else
                     "batch /4, seq /8, hidden /8, heads /8 (head_dim 128 kept), ffn /8")


def _dlrm(size: str) -> ModelCase:
    study = dict(b=512, t=26, rows=100_000, d=64, dense=13, bottom=[512, 256], top=[512, 256], maxbag=16)
    cfg = {"test": dict(b=16, t=3, rows=64, d=16, dense=8, bottom=[32, 16], top=[32, 16], maxbag=4),
           "study": study, "paper": study}[size]
    torch.manual_seed(0)
    m = DLRM(cfg["dense"], cfg["t"], cfg["rows"], cfg["d"], cfg["bottom"], cfg["top"])
    g = _gen(1)
    b, t = cfg["b"], cfg["t"]
    dense = torch.randn(b, cfg["dense"], generator=g)
    lengths = torch.randint(1, cfg["maxbag"] + 1, (t * b,), generator=g)   # bags table-major
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    table_of_bag = torch.arange(t).repeat_interleave(b)
    base = (table_of_bag * cfg["rows"]).repeat_interleave(lengths)
    indices = torch.randint(0, cfg["rows"], (int(lengths.sum()),), generator=g) + base
    paper = "tens of tables, 1e5-1e6 rows each, dim 64-128, batch 512-4096"
    return ModelCase("dlrm", size, m, (dense, indices, offsets),
                     f"batch {b}, {t} tables x {cfg['rows']} rows, dim {cfg['d']}, bags 1-{cfg['maxbag']}, "
                     f"bottom {cfg['bottom']}, top {cfg['top']}", paper,
                     "none needed: the smallest docs/study.md shape (batch 512, 26 tables x 1e5 rows, dim 64), bags 1-16, Criteo-style MLPs 13-512-256-64 and 512-256-1")


def _moe(size: str) -> ModelCase:
    t, h, ffn = {"test": (32, 32, 64), "study": (512, 512, 1024), "paper": (4096, 4096, 8192)}[size]
    torch.manual_seed(0)
    m = MoEFFN(h, ffn, param_dtype=DTYPE if size == "paper" else torch.float32)
    x = torch.randn(t, h, generator=_gen(1))
    paper = "tokens 4096, hidden 4096, top-2 of 8 experts"
    return ModelCase("moe", size, m, (x,), f"tokens {t}, hidden {h}, ffn {ffn}, top-2 of 8, capacity x2", paper,
                     "none: the docs/study.md shape, ffn = 2 x hidden" if size == "paper" else
                     "tokens /8, hidden /8, ffn = 2 x hidden, experts 8 and top-2 kept")


def _jagged(size: str) -> ModelCase:
    b, maxlen, d, u, hid = {"test": (8, 16, 16, 8, [32, 16]), "study": (64, 128, 64, 32, [256, 128]),
                            "paper": (512, 1024, 64, 32, [256, 128])}[size]
    torch.manual_seed(0)
    m = JaggedBlock(d, u, hid)
    g = _gen(1)
    lengths = torch.randint(1, maxlen + 1, (b,), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    values = torch.randn(int(lengths.sum()), d, generator=g)
    user = torch.randn(b, u, generator=g)
    paper = "batch 512, history lengths 1-1024"
    return ModelCase("jagged", size, m, (values, offsets, user),
                     f"batch {b}, lengths 1-{maxlen} (total {int(lengths.sum())}), dim {d}, mlp {hid}", paper,
                     "none: the docs/study.md shape, item dim 64" if size == "paper" else
                     "batch /8, max history length /8, item dim 64")


BUILDERS: dict[str, Callable[[str], ModelCase]] = {"decoder": _decoder, "dlrm": _dlrm, "moe": _moe,
                                                   "jagged": _jagged}
MODELS = tuple(BUILDERS)


def build(name: str, size: str, dtype: torch.dtype = DTYPE) -> ModelCase:
    """The model in eval mode with its inputs; floating-point weights and inputs in `dtype`."""
    if size not in SIZES + PAPER_SIZES:
        raise ValueError(f"size must be one of {SIZES + PAPER_SIZES}, got {size!r}")
    case = BUILDERS[name](size)
    case.module = case.module.to(dtype).eval()
    case.inputs = tuple(a.to(dtype) if a.is_floating_point() else a for a in case.inputs)
    return case
