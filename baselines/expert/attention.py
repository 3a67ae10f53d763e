"""Expert attention: flash-attention forward (prefill, causal or not) and split-KV decode.

Prefill (FlashAttention-2 on one PE per (batch, head, 128-query block)): Q stays resident;
64-row K blocks are DMA'd (double-buffered) and transposed by the MLU, S = Q K^T and O += P V run on
the DPE, the online softmax on RE (row max / sum), SIMD (scale, mask, rescale, cast) and SFU
(exp). The kv loop is unrolled by two and software-pipelined: S of block j+1 is computed
before the softmax of block j, so the DPE never waits for the softmax chain. Causal: query
block i visits kv blocks 0..i only, and programs alternate light and heavy query blocks
(zigzag) so every PE gets the same work. Ragged lengths and the causal diagonal are one
compare + select per block (skipped when no block needs it).

Decode: work = (batch, head, kv split); each program streams its K / V range in 256-row
blocks (double-buffered, DRAM-bound), s = K q on the DPE (no transpose needed), online
softmax over the block, o += p^T V. With more than one split a second small launch merges the
partial (o, log-sum-exp) pairs.
"""
from __future__ import annotations

import math

import torch

from baselines.expert.common import ProgramBuilder
from baselines.expert.common import (DT, cached, cdiv, cmp, first_fit, launch, n_pes, partition, pid64, s64,
                                      smin)

NEG_INF = float("-inf")


def _select(b, cond, x, y, out):
    b.emit("simd.select", [out], {"cond": cond, "a": x, "b": y}, {"dtype": out.dtype})
    return out


# [BQ, BK] blocks from the MTIA 2i choice down: the first whose buffers fit the local memory
_FLASH_BLOCKS = [(128, 64), (128, 32), (64, 64), (64, 32), (32, 32), (32, 16), (16, 16)]


@cached
def flash_program(B: int, H: int, S: int, D: int, causal: bool, dtype: str = "bf16", BQ: int = 0, BK: int = 0):
    return first_fit(lambda c: _flash_program(B, H, S, D, causal, dtype, *c),
                     [(BQ, BK)] if BQ else _FLASH_BLOCKS)


def _flash_program(B: int, H: int, S: int, D: int, causal: bool, dtype: str, BQ: int, BK: int):
    assert BQ % BK == 0
    nq, nk = cdiv(S, BQ), cdiv(S, BK)
    items = B * H * nq
    P = min(n_pes(), items)
    per = cdiv(items, P)
    scale = 1.0 / math.sqrt(D)
    need_mask = causal or S % BK != 0 or nk % 2 != 0
    b = ProgramBuilder(f"expert_flash_{'causal_' if causal else ''}{B}x{H}x{S}x{D}")
    Q, K, V, O = (b.param_ptr(n, dtype) for n in ("q", "k", "v", "o"))
    w = pid64(b)
    kv_iota = b.reshape(b.iota(BK), [1, BK])
    q_iota = b.reshape(b.iota(BQ), [BQ, 1])
    zero = b.zeros([1, 1], "f32")
    s_regs = [b.tile([BQ, BK], "f32", name="s") for _ in range(2)]
    pb = b.tile([BQ, BK], dtype, copies=2, name="pb")
    kt = b.tile([D, BK], dtype, copies=2, name="kt")
    acc = b.tile([BQ, D], "f32", name="acc")
    res = b.tile([BQ, D], dtype, copies=2, name="res")
    msk = b.tile([BQ, BK], "i1", name="mask") if need_mask else None
    m = b.tile([BQ, 1], "f32", name="m")
    l = b.tile([BQ, 1], "f32", name="l")
    mnew = b.tile([BQ, 1], "f32", name="mnew")
    negm = b.tile([BQ, 1], "f32", name="negm")
    alpha = b.tile([BQ, 1], "f32", name="alpha")
    kpos = b.tile([1, BK], "i32", name="kpos")
    state = {"kraw": None, "v": None}
    ragged = items % P != 0  # a program's last item may be past the end: its K / V loads are masked off

    def _kv_rows(kb):
        rows = s64(b, "sub", S, kb)
        return s64(b, "mul", rows, state["live"]) if ragged else rows

    def qk(s_reg, kv_off, kb):
        """S = Q @ K[kb]^T (K block DMA'd, transposed on the MLU)."""
        rows = _kv_rows(kb)
        state["kraw"] = b.dma_load(K, s64(b, "add", kv_off, s64(b, "mul", kb, D)), [BK, D], [D, 1], copies=2,
                                   hi=[rows, D], out=state["kraw"])
        b.transpose(state["kraw"], out=kt)
        b.matmul(qt, kt, zero, out=s_reg)

    def softmax_pv(s_reg, kv_off, kb, qlim):
        rows = _kv_rows(kb)
        state["v"] = b.dma_load(V, s64(b, "add", kv_off, s64(b, "mul", kb, D)), [BK, D], [D, 1], copies=2,
                                hi=[rows, D], out=state["v"])
        if need_mask:
            b.add(kv_iota, b.scalar("add", kb, 0, "i32"), out=kpos)
            cmp(b, "slt", kpos, qlim, out=msk)
            _select(b, msk, s_reg, NEG_INF, out=s_reg)
        mx = b.reshape(b.reduce(s_reg, 1, "max"), [BQ, 1])
        b.maximum(m, b.mul(mx, scale), out=mnew)
        b.mul(mnew, -1.0, out=negm)
        # engine order keeps the S -> P -> PV chain short: alpha's tiny exp goes to the SFU before
        # the big one, the accumulator rescale runs on SIMD while the SFU computes P
        b.exp(b.add(m, negm), out=alpha)
        b.fma(s_reg, scale, negm, out=s_reg)  # P overwrites S in place
        b.exp(s_reg, out=s_reg)
        b.mul(acc, alpha, out=acc)
        b.cast(s_reg, dtype, out=pb)
        b.fma(l, alpha, b.reshape(b.reduce(s_reg, 1, "sum"), [BQ, 1]), out=l)
        b.matmul(pb, state["v"], acc)
        b.add(mnew, 0.0, out=m)

    with b.loop(0, per, 1, name="item") as j:
        t = s64(b, "add", w, s64(b, "mul", j, P))
        live = smin(b, s64(b, "sub", items, t), 1)
        if ragged:
            state["live"] = s64(b, "smax", live, 0)
        bh = s64(b, "sdiv", t, nq)
        qb = s64(b, "srem", t, nq)
        if causal:  # zigzag: odd items of a program take the mirrored query block
            # (by j only when P is a multiple of nq: all blocks of a head then share j's parity,
            # so the mirroring is a bijection; otherwise mirror whole heads: bh odd)
            par = s64(b, "srem", j, 2) if P % nq == 0 else s64(b, "srem", bh, 2)
            qb = s64(b, "add", qb, s64(b, "mul", par, s64(b, "sub", nq - 1, s64(b, "mul", qb, 2))))
        q0 = s64(b, "mul", qb, BQ)
        kv_off = s64(b, "mul", bh, S * D)
        q_rows = smin(b, s64(b, "sub", S, q0), s64(b, "mul", live, BQ))
        qt = b.dma_load(Q, s64(b, "add", kv_off, s64(b, "mul", q0, D)), [BQ, D], [D, 1], hi=[q_rows, D])
        qlim = None
        if need_mask:
            if causal:
                qlim = b.add(q_iota, b.scalar("add", q0, 1, "i32"))
                qlim = b.minimum(qlim, S)
            else:
                qlim = b.splat(S, [BQ, 1], "i32")
        b.splat(NEG_INF, [BQ, 1], "f32", out=m)
        b.zeros([BQ, 1], "f32", out=l)
        b.zeros([BQ, D], "f32", out=acc)
        nblocks = s64(b, "mul", s64(b, "add", qb, 1), BQ // BK) if causal else nk
        npairs = s64(b, "sdiv", s64(b, "add", nblocks, 1), 2) if causal else cdiv(nk, 2)
        qk(s_regs[0], kv_off, 0)
        with b.loop(0, npairs, 1, name="pair") as i:
            kb0 = s64(b, "mul", i, 2 * BK)
            kb1 = s64(b, "add", kb0, BK)
            qk(s_regs[1], kv_off, kb1)
            softmax_pv(s_regs[0], kv_off, kb0, qlim)
            qk(s_regs[0], kv_off, s64(b, "add", kb1, BK))
            softmax_pv(s_regs[1], kv_off, kb1, qlim)
        inv = b.unary("recip", l)
        b.mul(acc, inv, out=acc)
        b.cast(acc, dtype, out=res)
        b.dma_store(O, res, s64(b, "add", kv_off, s64(b, "mul", q0, D)), [D, 1], hi=[q_rows, D])
    prog = b.build()
    prog.meta["grid"] = P
    return prog


def flash_attention(q, k, v, causal: bool = False):
    B, H, S, D = q.shape
    prog = flash_program(B, H, S, D, causal, DT[q.dtype])
    o = torch.empty_like(q)
    launch(prog, prog.meta["grid"], [q.contiguous(), k.contiguous(), v.contiguous(), o])
    return o


# ----------------------------------------------------------------------------- decode

@cached
def decode_program(B: int, H: int, L: int, D: int, splits: int, dtype: str = "bf16", BK: int = 256):
    items = B * H * splits
    grid, per = partition(items)
    chunk = cdiv(cdiv(L, splits), BK) * BK
    nblk = chunk // BK
    scale = 1.0 / math.sqrt(D)
    final = splits == 1
    b = ProgramBuilder(f"expert_decode_{B}x{H}x{L}x{D}_s{splits}")
    Q, K, V = (b.param_ptr(n, dtype) for n in ("q", "k", "v"))
    O = b.param_ptr("o", dtype if final else "f32")
    LSE = b.param_ptr("lse", "f32")
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), items)
    zero = b.zeros([1, 1], "f32")
    kv_iota = b.reshape(b.iota(BK), [BK, 1])
    s = b.tile([BK, 1], "f32", name="s")
    p = b.tile([BK, 1], "f32", name="p")
    pb = b.tile([1, BK], dtype, copies=2, name="pb")
    acc = b.tile([1, D], "f32", name="acc")
    res = b.tile([1, D], dtype if final else "f32", copies=2, name="res")
    msk = b.tile([BK, 1], "i1", name="mask")
    kpos = b.tile([BK, 1], "i32", name="kpos")
    m, l, mnew, negm, alpha = (b.tile([1, 1], "f32", name=n) for n in ("m", "l", "mnew", "negm", "alpha"))
    kt = vt = None
    with b.loop(first, last, 1, name="item") as t:
        bh = s64(b, "sdiv", t, splits)
        sp = s64(b, "srem", t, splits)
        k0 = s64(b, "mul", sp, chunk)
        kend = smin(b, s64(b, "add", k0, chunk), L)
        qc = b.dma_load(Q, s64(b, "mul", bh, D), [D, 1], [1, 0], copies=2)
        b.splat(NEG_INF, [1, 1], "f32", out=m)
        b.zeros([1, 1], "f32", out=l)
        b.zeros([1, D], "f32", out=acc)
        base = s64(b, "mul", bh, L * D)
        with b.loop(0, nblk, 1, name="blk") as i:
            kb = s64(b, "add", k0, s64(b, "mul", i, BK))
            rows = s64(b, "sub", kend, kb)
            off = s64(b, "add", base, s64(b, "mul", kb, D))
            kt = b.dma_load(K, off, [BK, D], [D, 1], copies=2, hi=[rows, D], out=kt)
            vt = b.dma_load(V, off, [BK, D], [D, 1], copies=2, hi=[rows, D], out=vt)
            b.matmul(kt, qc, zero, out=s)
            b.add(kv_iota, b.scalar("add", kb, 0, "i32"), out=kpos)
            cmp(b, "slt", kpos, b.scalar("add", kend, 0, "i32"), out=msk)
            _select(b, msk, s, NEG_INF, out=s)
            mx = b.reshape(b.reduce(s, 0, "max"), [1, 1])
            b.maximum(m, b.mul(mx, scale), out=mnew)
            b.mul(mnew, -1.0, out=negm)
            b.fma(s, scale, negm, out=p)
            b.exp(p, out=p)
            b.exp(b.add(m, negm), out=alpha)
            b.fma(l, alpha, b.reshape(b.reduce(p, 0, "sum"), [1, 1]), out=l)
            b.mul(acc, alpha, out=acc)
            b.cast(b.reshape(p, [1, BK]), dtype, out=pb)
            b.matmul(pb, vt, acc)
            b.add(mnew, 0.0, out=m)
        b.mul(acc, b.unary("recip", l), out=acc)
        b.cast(acc, res.dtype, out=res) if res.dtype != "f32" else b.add(acc, 0.0, out=res)
        b.dma_store(O, res, s64(b, "mul", t, D), [D, 1])
        if not final:
            b.dma_store(LSE, b.add(m, b.unary("log", l)), t, [1, 1])
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


@cached
def decode_combine_program(BH: int, splits: int, D: int, dtype: str = "bf16"):
    """out[bh] = sum_s w_s o_s / sum_s w_s with w_s = exp(lse_s - max lse): one program per PE,
    [rows, splits, D] blocks."""
    R = max(1, min(BH, 16384 // (splits * D)))
    grid, per = partition(cdiv(BH, R))
    b = ProgramBuilder(f"expert_decode_combine_{BH}x{splits}x{D}")
    Op, LSE, OUT = b.param_ptr("o_part", "f32"), b.param_ptr("lse", "f32"), b.param_ptr("out", dtype)
    w = pid64(b)
    first = s64(b, "mul", w, per)
    last = smin(b, s64(b, "add", first, per), cdiv(BH, R))
    o = lse = None
    res = b.tile([R, D], dtype, copies=2, name="res")
    with b.loop(first, last, 1, name="blk") as t:
        r0 = s64(b, "mul", t, R)
        hr = s64(b, "sub", BH, r0)
        o = b.dma_load(Op, s64(b, "mul", r0, splits * D), [R, splits, D], [splits * D, D, 1], copies=2,
                       hi=[hr, splits, D], out=o)
        lse = b.dma_load(LSE, s64(b, "mul", r0, splits), [R, splits, 1], [splits, 1, 0], copies=2,
                         hi=[hr, splits, 1], out=lse)
        mx = b.reshape(b.reduce(lse, 1, "max"), [R, 1, 1])
        wts = b.exp(b.sub(lse, mx))
        den = b.reduce(wts, 1, "sum")  # [R, 1]
        num = b.reduce(b.mul(o, wts), 1, "sum")  # [R, D]
        b.cast(b.mul(num, b.unary("recip", den)), dtype, out=res)
        b.dma_store(OUT, res, s64(b, "mul", r0, D), [D, 1], hi=[hr, D])
    prog = b.build()
    prog.meta["grid"] = grid
    return prog


def decode_attention(q, k, v):
    B, H, L, D = k.shape
    BH = B * H
    splits = max(1, min(cdiv(n_pes(), BH), cdiv(L, 256)))
    prog = decode_program(B, H, L, D, splits, DT[q.dtype])
    out = torch.empty((B, H, D), dtype=q.dtype)
    if splits == 1:
        launch(prog, prog.meta["grid"], [q.contiguous(), k.contiguous(), v.contiguous(), out,
                                         torch.empty(1, dtype=torch.float32)])
        return out
    o_part = torch.empty((BH * splits, D), dtype=torch.float32)
    lse = torch.empty(BH * splits, dtype=torch.float32)
    launch(prog, prog.meta["grid"], [q.contiguous(), k.contiguous(), v.contiguous(), o_part, lse])
    comb = decode_combine_program(BH, splits, D, DT[q.dtype])
    launch(comb, comb.meta["grid"], [o_part, lse, out])
    return out
