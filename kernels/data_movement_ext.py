"""MTIA-tuned data-movement kernels (the study's `triton_ext` implementations): the plain
kernels of kernels/data_movement.py launched `persistent=True` (one program per PE looping
over the tiles: a PE's job replacement and prologue paid once, the next tile's loads issued
before this tile's store) on tiles of 8-16K elements instead of 2K. Concat of three inputs is
one launch that copies whole rows of all three (torch.cat's one launch per input pays the
launch three times)."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from backend.language import mtia
from kernels.data_movement import copy_2d_kernel, transpose_kernel


def _tile(M: int, N: int, elems: int, max_n: int) -> tuple[int, int]:
    bn = min(max_n, triton.next_power_of_2(N))
    return max(1, min(elems // bn, triton.next_power_of_2(M))), bn


def transpose(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N = _tile(M, N, 16384 // x.element_size() * 2, 128)
    transpose_kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](
        x, out, M, N, x.stride(0), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, persistent=True)
    return out


@triton.jit
def index_select_ext_kernel(x_ptr, index_ptr, out_ptr, n_index, D, stride_x, stride_o, NCB: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr,
                            EVEN: tl.constexpr):
    """out[i, :] = x[index[i], :] on the PE grid: PE p copies a contiguous range of tiles (row
    block t // NCB, column block t % NCB), loading the next tile's indices before this tile's
    row gather, so the gather never waits for its indices (with the launch hint the next
    tile's gather would be issued right behind its own index load, a DMA latency apart)."""
    pe = mtia.pe_id()
    n_pe = mtia.num_pes()
    n_tiles = tl.cdiv(n_index, BLOCK_M) * NCB
    per = tl.cdiv(n_tiles, n_pe)
    t0 = pe * per
    t1 = tl.minimum(t0 + per, n_tiles)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_D)
    r = (t0 // NCB) * BLOCK_M + rows
    idx = tl.load(index_ptr + r, mask=r < n_index, other=0).to(tl.int64)
    for t in range(t0, t1):
        rn = ((t + 1) // NCB) * BLOCK_M + rows
        idx_n = tl.load(index_ptr + rn, mask=(rn < n_index) & (t + 1 < t1), other=0).to(tl.int64)
        rm = (t // NCB) * BLOCK_M + rows
        cn = (t % NCB) * BLOCK_D + cols
        if EVEN:  # every tile full: no masks, so no per-tile mask tile for the DMAs to wait on
            x = tl.load(x_ptr + idx[:, None] * stride_x + cn[None, :])
            tl.store(out_ptr + rm[:, None] * stride_o + cn[None, :], x)
        else:
            if EVEN_D:  # the gather's mask as a broadcast row mask: no mask tile to compute
                x = tl.load(x_ptr + idx[:, None] * stride_x + cn[None, :], mask=rm[:, None] < n_index)
            else:
                x = tl.load(x_ptr + idx[:, None] * stride_x + cn[None, :],
                            mask=(rm[:, None] < n_index) & (cn[None, :] < D))
            tl.store(out_ptr + rm[:, None] * stride_o + cn[None, :], x,
                     mask=(rm[:, None] < n_index) & (cn[None, :] < D))
        idx = idx_n


def _num_pes() -> int:
    return triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]


def index_select(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x.index_select(0, index) for a 2-D x."""
    x = x.contiguous()
    D = x.shape[1]
    n = index.numel()
    out = torch.empty((n, D), dtype=x.dtype, device=x.device)
    if n == 0:
        return out
    BLOCK_M, BLOCK_D = _tile(n, D, 16384 // x.element_size() * 2, 4096)
    ncb = triton.cdiv(D, BLOCK_D)
    index_select_ext_kernel[(min(_num_pes(), triton.cdiv(n, BLOCK_M) * ncb),)](
        x, index, out, n, D, x.stride(0), out.stride(0), NCB=ncb, BLOCK_M=BLOCK_M, BLOCK_D=BLOCK_D,
        EVEN_D=D % BLOCK_D == 0, EVEN=D % BLOCK_D == 0 and n % BLOCK_M == 0)
    return out


@triton.jit
def concat3_ext_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M, NA, NB, NC, stride_a, stride_b, stride_c, stride_o,
                       BM: tl.constexpr, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    """out[rows, :] = [a | b | c][rows, :] for a block of BM rows: one launch for all three
    inputs, each row block read and written whole (a box-bounded DMA moves only the real
    columns of the power-of-two tiles)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    ca = tl.arange(0, BA)
    cb = tl.arange(0, BB)
    cc = tl.arange(0, BC)
    rmask = rm[:, None] < M
    xa = tl.load(a_ptr + rm[:, None] * stride_a + ca[None, :], mask=rmask & (ca[None, :] < NA))
    xb = tl.load(b_ptr + rm[:, None] * stride_b + cb[None, :], mask=rmask & (cb[None, :] < NB))
    xc = tl.load(c_ptr + rm[:, None] * stride_c + cc[None, :], mask=rmask & (cc[None, :] < NC))
    tl.store(out_ptr + rm[:, None] * stride_o + ca[None, :], xa, mask=rmask & (ca[None, :] < NA))
    tl.store(out_ptr + rm[:, None] * stride_o + NA + cb[None, :], xb, mask=rmask & (cb[None, :] < NB))
    tl.store(out_ptr + rm[:, None] * stride_o + NA + NB + cc[None, :], xc, mask=rmask & (cc[None, :] < NC))


def concat(tensors: list[torch.Tensor], dim: int = 1) -> torch.Tensor:
    """torch.cat of 2-D tensors along dim 0 or 1 (one launch per input, like torch.cat)."""
    tensors = [t.contiguous() for t in tensors]
    M = tensors[0].shape[0] if dim == 1 else sum(t.shape[0] for t in tensors)
    N = sum(t.shape[1] for t in tensors) if dim == 1 else tensors[0].shape[1]
    out = torch.empty((M, N), dtype=tensors[0].dtype, device=tensors[0].device)
    widths = [triton.next_power_of_2(t.shape[1]) for t in tensors]
    if dim == 1 and len(tensors) == 3 and sum(widths) <= 16384:
        # whole rows of all three inputs per block, ~16K elements
        bm = max(1, min(16384 // sum(widths), triton.next_power_of_2(M)))
        bm = 1 << (bm.bit_length() - 1)
        a, b, c = tensors
        concat3_ext_kernel[(triton.cdiv(M, bm),)](
            a, b, c, out, M, a.shape[1], b.shape[1], c.shape[1], a.stride(0), b.stride(0), c.stride(0), out.stride(0),
            BM=bm, BA=widths[0], BB=widths[1], BC=widths[2], persistent=True)
        return out
    pos = 0
    for t in tensors:
        m, n = t.shape
        dst = out[:, pos:pos + n] if dim == 1 else out[pos:pos + m]
        bm, bn = _tile(m, n, 8192, 2048)
        copy_2d_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](
            t, dst, m, n, t.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn, persistent=True)
        pos += n if dim == 1 else m
    return out
