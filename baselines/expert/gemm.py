"""Expert GEMMs: BF16 GEMM (+ fused bias/GELU epilogue), INT8 GEMM (INT32 out), batched GEMM.

One persistent program per PE walks output tiles w, w + P, ... (row-block, column-block,
batch); K is the inner loop with A and B tiles multi-buffered (the DMA of step k+1 overlaps the
matmul of step k), the first K step multiplies into a broadcast [1,1] zero so no SIMD pass
clears the accumulator, and the result tile is double-buffered so its store overlaps the next
tile. The tile shape is tuned per problem on the chip: a cost estimate (DPE time vs per-PE
SRAM share and PE-grid waves, from the timing model's figures in backend/sim/cost) ranks the
configs, and the first few that fit in local memory are simulated (gemm_program). Generalises tools/microbench.gemm_program (which needs divisible
shapes) to any M, N, K, batch.
"""
from __future__ import annotations

import math

import torch

from backend.configs import load_chip
from backend.program import TORCH_DTYPE
from backend.sim.builder import LocalMemoryOverflow
from backend.sim.cost import ENGINE_INDEX, ChipModel
from baselines.expert.common import ProgramBuilder, current_chip
from baselines.expert.common import ACTS, DT, cached, cdiv, first_fit, launch, n_pes, pid64, s64, smin

_CANDIDATES = [(256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64),
               (32, 128), (128, 32), (32, 64), (32, 32)]


def _estimate(cm: ChipModel, batch: int, M: int, N: int, K: int, BM: int, BN: int, BK: int, in_dtype: str) -> float:
    """Cycles of the GEMM with BM x BN tiles: per K step the larger of the tile's DPE time
    (unpadded, plus the DPE's setup) and its A and B tiles' DMA at a PE's SRAM share (plus the
    DMA's setup), per wave of tiles over the PE grid, plus a fixed cost per tile."""
    isz = 1 if in_dtype == "i8" else 2
    sram_share = cm.shares(cm.n_pe)[0]
    tiles = batch * cdiv(M, BM) * cdiv(N, BN)
    waves = cdiv(tiles, cm.n_pe)
    steps = cdiv(K, BK)
    dpe = cm.dpe_time(2 * BM * BN * BK, in_dtype) + cm.fixed[ENGINE_INDEX["DPE"]]
    dma = (BM * BK + BK * BN) * isz / sram_share + cm.fixed[ENGINE_INDEX["DMA_IN"]]
    return waves * (steps * max(dpe, dma) + 2000)


@cached
def gemm_program(batch: int, M: int, N: int, K: int, in_dtype: str, out_dtype: str,
                 epilogue: str | None = None, BM: int = 0, BN: int = 0, trans_b: bool = False,
                 gram: bool = False):
    """C[b] = epilogue(A[b] @ B[b] (+ bias)) for A [batch, M, K], B [batch, K, N] row-major.
    `trans_b`: B is given as its transpose, [batch, N, K] row-major (a linear layer's weight,
    x @ x^T): each [BN, BK] tile is read in its own row-major order (runs along K) and the MLU
    transposes it in local memory. `gram`: B is A itself (x @ x^T, a Gram matrix per batch: DLRM's
    pairwise interactions): where one tile covers a whole matrix, the A tile loaded is also B's,
    transposed by the MLU, and B is not read (trans_b, M == N).

    With no tile given, the expert tunes on the chip: the TUNE_TOP tile shapes the cost
    estimate ranks first, each with both K steps, are timed on the simulator (`_time`, in
    every memory regime the study reports) and the fastest (geomean) is kept. The estimate
    alone misses what the LPDDR does with short DMA runs: at 512 x 4096 x 4096 it ranks
    256 x 128 first, while 128 x 256 is 11% faster cold."""
    cm = ChipModel(load_chip(current_chip()))
    k0 = _K_STEPS[in_dtype][0]
    if BM:
        return _fit(batch, M, N, K, in_dtype, out_dtype, epilogue, BM, BN, k0, trans_b, gram)
    ranked = sorted(_CANDIDATES, key=lambda c: _estimate(cm, batch, M, N, K, c[0], c[1], k0, in_dtype))
    progs = []
    for bm, bn in ranked[:TUNE_TOP]:
        for bk in _K_STEPS[in_dtype]:
            try:
                progs.append(_fit(batch, M, N, K, in_dtype, out_dtype, epilogue, bm, bn, bk, trans_b, gram))
            except LocalMemoryOverflow:
                pass
    if in_dtype == "f32" and out_dtype == "f32" and not epilogue and M * N <= SIMD_MAX_MN:
        progs += _simd_candidates(batch, M, N, K, trans_b, gram)
    if not progs:  # none of the first ranked fits: the first of the rest that does
        return first_fit(lambda c: _fit(batch, M, N, K, in_dtype, out_dtype, epilogue, c[0], c[1], k0, trans_b, gram),
                         ranked[TUNE_TOP:])
    if len(progs) == 1:
        return progs[0]
    args = _placeholders(batch, M, N, K, in_dtype, out_dtype, epilogue, trans_b)
    if gram:
        args[1] = args[0]
    times = [_time(p, args) for p in progs]
    best = min(range(len(progs)), key=lambda i: (times[i], i))  # ties: the better-ranked
    progs[best].meta["tuned"] = {"x".join(map(str, p.meta["tile"])): round(t) for p, t in zip(progs, times)}
    return progs[best]

TUNE_TOP = 4                                     # tile shapes (by the estimate) timed on the chip
# FP32 has no DPE path (the DPE rule prices it at the vector core's 1.4 TFLOPS); small FP32
# matrices are also tried whole on the SIMD engine (products) and the reduction engine (sums over
# K), 32 MACs per cycle per PE, as the expert dot interaction computes x x^T: up to this many
# output elements per matrix ([S, M, N, KC] products must fit beside their double buffer)
SIMD_MAX_MN = 64 * 64
_SIMD_TILES = ((4, 32), (2, 32), (1, 32), (1, 16), (1, 8))   # (matrices per step S, K chunk KC)
_K_STEPS = {"f32": (32, 64), "bf16": (32, 64), "f16": (32, 64), "i8": (64, 128)}


def _fit(batch, M, N, K, in_dtype, out_dtype, epilogue, bm, bn, bk, trans_b, gram=False):
    """The program with the deepest pipeline (stages, accumulator copies) that fits."""
    last = None
    for stages in (3, 2):
        for acc_copies in (2, 1):
            try:
                return _build(batch, M, N, K, in_dtype, out_dtype, epilogue, bm, bn, bk, stages, acc_copies,
                              trans_b, gram)
            except LocalMemoryOverflow as e:
                last = e
    raise last


def _simd_candidates(batch, M, N, K, trans_b, gram=False) -> list:
    """The SIMD/RE programs of the (S, KC) tiles that fit (the two largest), for the tuner."""
    out = []
    for S, kc in _SIMD_TILES:
        if S > 1 and S > batch:
            continue
        try:
            out.append(_build_simd(batch, M, N, K, S, min(kc, K), trans_b, gram))
        except LocalMemoryOverflow:
            continue
        if len(out) == 2:
            break
    return out


def _build_simd(batch, M, N, K, S, KC, trans_b=False, gram=False):
    """FP32 C[b] = A[b] @ B[b] on the SIMD engine and the reduction engine: each PE walks blocks of
    S whole matrices; per K chunk of KC, the SIMD engine forms the [S, M, N, KC] products of A's
    rows and B's columns (B's [KC, N] tile transposed by the MLU unless `trans_b`) and the RE sums
    them over K into an [S, M, N] partial, added to the accumulator. Loads are double-buffered
    (the DMA of the next chunk overlaps this chunk's products). `gram`: B is A (trans_b, M == N),
    the A tile serves as B's."""
    gram = gram and trans_b and M == N
    items = cdiv(batch, S)
    P = min(n_pes(), items)
    per = cdiv(items, P)
    b = ProgramBuilder(f"expert_gemm{'_gram' if gram else '_nt' if trans_b else ''}_{batch}x{M}x{N}x{K}_f32_simd_S{S}xK{KC}")
    A, B = b.param_ptr("a", "f32"), b.param_ptr("b", "f32")
    C = b.param_ptr("c", "f32")
    w = pid64(b)
    prod = b.tile([S, M, N, KC], "f32", copies=2, name="prod")
    part = b.tile([S, M, N], "f32", copies=2, name="part")
    acc = b.tile([S, M, N], "f32", copies=2, name="acc")
    ta = b.tile([S, M, KC], "f32", copies=2, name="a")
    tb = ta if gram else b.tile([S, N, KC] if trans_b else [S, KC, N], "f32", copies=2, name="b")
    tbt = tb if trans_b else b.tile([S, N, KC], "f32", copies=2, name="bt")

    def chunk(s0, live, k, into):
        kr = s64(b, "sub", K, k)
        a_off = s64(b, "add", s64(b, "mul", s0, M * K), k)
        b.dma_load(A, a_off, [S, M, KC], [M * K, K, 1], hi=[live, M, kr], other=0.0, out=ta)
        if gram:
            pass  # B's tile is A's
        elif trans_b:
            b.dma_load(B, s64(b, "add", s64(b, "mul", s0, N * K), k), [S, N, KC], [N * K, K, 1],
                       hi=[live, N, kr], other=0.0, out=tb)
        else:
            b.dma_load(B, s64(b, "add", s64(b, "mul", s0, K * N), s64(b, "mul", k, N)), [S, KC, N], [K * N, N, 1],
                       hi=[live, kr, N], other=0.0, out=tb)
            b.transpose(tb, [0, 2, 1], out=tbt)
        b.mul(b.reshape(ta, [S, M, 1, KC]), b.reshape(tbt, [S, 1, N, KC]), out=prod)
        b.reduce(prod, 3, "sum", out=into)

    with b.loop(0, per, 1, name="blk") as j:
        s0 = s64(b, "mul", s64(b, "add", w, s64(b, "mul", j, P)), S)
        live = smin(b, s64(b, "sub", batch, s0), S)          # matrices of this block (<= 0: none)
        chunk(s0, live, 0, acc)
        with b.loop(KC, K, KC, name="k") as k:
            chunk(s0, live, k, part)
            b.add(acc, part, out=acc)
        b.dma_store(C, acc, s64(b, "mul", s0, M * N), [M * N, N, 1], hi=[live, M, N])
    prog = b.build()
    prog.meta.update(grid=P, tile=("simd", S, KC))
    return prog


def _placeholders(batch, M, N, K, in_dtype, out_dtype, epilogue, trans_b) -> list[torch.Tensor]:
    """Uninitialised operands of the GEMM's shape: a GEMM's events do not depend on its data."""
    a = torch.empty((batch, M, K), dtype=TORCH_DTYPE[in_dtype])
    b = torch.empty((batch, N, K) if trans_b else (batch, K, N), dtype=TORCH_DTYPE[in_dtype])
    c = torch.empty((batch, M, N), dtype=TORCH_DTYPE[out_dtype])
    return [a, b, c] + ([torch.empty(N, dtype=TORCH_DTYPE[in_dtype])] if epilogue else [])


def _time(prog, args: list[torch.Tensor]) -> float:
    """Geomean cycles of one launch of `prog` over the memory regimes (backend/regimes.py),
    simulated in timing mode, outside any launch record and the device clock."""
    from backend.driver import price
    from backend.regimes import REGIMES
    from backend.sim.executor import execute
    traces = execute(prog, (prog.meta["grid"], 1, 1), args, mode="timing")
    chip = load_chip(current_chip())
    cycles = [price(prog, traces, chip, r).cycles for r in REGIMES]
    return math.exp(sum(math.log(c) for c in cycles) / len(cycles))


def _build(batch, M, N, K, in_dtype, out_dtype, epilogue, BM, BN, BK, stages, acc_copies, trans_b=False,
           gram=False):
    acc_dt = "i32" if in_dtype == "i8" else "f32"
    tm, tn = cdiv(M, BM), cdiv(N, BN)
    gram = gram and trans_b and M == N and BM == BN and tm == tn == 1  # one tile is the whole matrix
    n_tiles = batch * tm * tn
    P = min(n_pes(), n_tiles)
    per = cdiv(n_tiles, P)
    b = ProgramBuilder(f"expert_gemm{'_gram' if gram else '_nt' if trans_b else ''}_{batch}x{M}x{N}x{K}_{in_dtype}_{epilogue or 'plain'}"
                       f"_{BM}x{BN}")
    A, B = b.param_ptr("a", in_dtype), b.param_ptr("b", in_dtype)
    C = b.param_ptr("c", out_dtype)
    bias = b.param_ptr("bias", in_dtype) if epilogue else None
    w = pid64(b)
    zero = b.zeros([1, 1], acc_dt)
    acc = b.tile([BM, BN], acc_dt, copies=acc_copies, name="acc")
    direct = out_dtype == acc_dt and not epilogue
    res = acc if direct else b.tile([BM, BN], out_dtype, copies=2, name="res")
    if epilogue:
        tmp = [b.tile([BM, BN], "f32", name="ep") for _ in range(2)]
        bias_f = b.tile([1, BN], "f32", name="bias_f")
    with b.loop(0, per, 1, name="t") as j:
        t = s64(b, "add", w, s64(b, "mul", j, P))
        live = smin(b, s64(b, "sub", n_tiles, t), 1)            # <= 0 for a padding tile
        bi = s64(b, "sdiv", t, tm * tn)
        rem = s64(b, "srem", t, tm * tn)
        row = s64(b, "mul", s64(b, "sdiv", rem, tn), BM)
        col = s64(b, "mul", s64(b, "srem", rem, tn), BN)
        hi_m = smin(b, s64(b, "sub", M, row), s64(b, "mul", live, BM))   # a padding tile reads and
        hi_n = smin(b, s64(b, "sub", N, col), s64(b, "mul", live, BN))   # writes nothing
        a_off = s64(b, "add", s64(b, "mul", bi, M * K), s64(b, "mul", row, K))
        b_off = s64(b, "add", s64(b, "mul", bi, K * N), s64(b, "mul", col, K) if trans_b else col)

        def load_b(k, kr, ta, out=(None, None)):
            """B's tile at K offset k (None: the first): (the tile loaded, the [BK, BN] operand)."""
            if gram:  # the A tile is B's: transposed, not loaded again
                return ta, b.transpose(ta, [1, 0], out=out[1])
            if not trans_b:
                off = s64(b, "add", b_off, s64(b, "mul", k, N)) if k is not None else b_off
                t = b.dma_load(B, off, [BK, BN], [N, 1], copies=stages, hi=[kr, hi_n], out=out[0])
                return t, t
            off = s64(b, "add", b_off, k) if k is not None else b_off
            t = b.dma_load(B, off, [BN, BK], [K, 1], copies=stages, hi=[hi_n, kr], out=out[0])
            return t, b.transpose(t, [1, 0], out=out[1])

        ta = b.dma_load(A, a_off, [BM, BK], [K, 1], copies=stages, hi=[hi_m, K])
        tb = load_b(None, K, ta)
        b.matmul(ta, tb[1], zero, out=acc)
        with b.loop(BK, K, BK, name="k") as k:
            kr = s64(b, "sub", K, k)
            b.dma_load(A, s64(b, "add", a_off, k), [BM, BK], [K, 1], copies=stages, hi=[hi_m, kr], out=ta)
            load_b(k, kr, ta, tb)
            b.matmul(ta, tb[1], acc)
        if epilogue:
            tbias = b.dma_load(bias, col, [1, BN], [0, 1], copies=2, hi=[1, hi_n])
            b.cast(tbias, "f32", out=bias_f)
            b.add(acc, bias_f, out=tmp[0])
            ACTS[epilogue](b, tmp[0], [tmp[1], acc], out=tmp[0])
            b.cast(tmp[0], out_dtype, out=res)
        elif not direct:
            b.cast(acc, out_dtype, out=res)
        c_off = s64(b, "add", s64(b, "mul", bi, M * N), s64(b, "add", s64(b, "mul", row, N), col))
        b.dma_store(C, res, c_off, [N, 1], hi=[hi_m, hi_n])
    prog = b.build()
    prog.meta.update(grid=P, tile=(BM, BN, BK), stages=stages, acc_copies=acc_copies)
    return prog


def _run(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, epilogue: str | None = None,
         out_dtype: torch.dtype | None = None, trans_b: bool = False) -> torch.Tensor:
    batched = a.dim() == 3
    A = a if batched else a[None]
    Bm = b if batched else b[None]
    bs, M, K = A.shape
    N = Bm.shape[1] if trans_b else Bm.shape[2]
    ind = DT[a.dtype]
    odt = out_dtype or (torch.int32 if ind == "i8" else a.dtype)
    A, Bm = A.contiguous(), Bm.contiguous()
    # x @ x^T: the same operand twice (same storage, offset, shape and strides)
    gram = trans_b and A.data_ptr() == Bm.data_ptr() and A.shape == Bm.shape and A.stride() == Bm.stride()
    prog = gemm_program(bs, M, N, K, ind, DT[odt], epilogue, trans_b=trans_b, gram=gram)
    c = torch.empty((bs, M, N), dtype=odt)
    args = [A, Bm, c] + ([bias.contiguous()] if epilogue else [])
    launch(prog, prog.meta["grid"], args)
    return c if batched else c[0]


def matmul(a, b):
    return _run(a, b)


def matmul_bias_gelu(a, b, bias):
    return _run(a, b, bias, epilogue="gelu_tanh")


def int8_matmul(a, b):
    return _run(a, b)


def bmm(a, b):
    return _run(a, b)


def matmul_nt(a, bt):
    """a @ bt^T for bt [N, K] (or batched [B, N, K]) row-major: no transposed copy of bt."""
    return _run(a, bt, trans_b=True)
