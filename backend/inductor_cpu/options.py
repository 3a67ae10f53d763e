"""Switches of the chip-aware Inductor path (cpu_backend="triton" onto the simulated MTIA).

Each enhancement can be turned off alone, to measure what it buys:

    MTIA_INDUCTOR="split_reductions=0,extern_gemm=0"   # environment, read by activate()
    compile_for_mtia(model, x, split_reductions=False)  # per compile (study/compile_mtia.py)

- `persistent_reductions`: rows that fit a PE's local memory are reduced persistently (one
  read of the input) instead of in Inductor's GPU-sized loops (heuristics.py): up to 8K
  elements, 16K for a kernel with few row buffers (softmax: `heuristics.row_tiles`); a row per
  program is then a fixed XBLOCK of 1, Inductor's `no_x_dim` form, with no select on the row
  mask.
- `reduction_rows`: a persistent reduction's program takes several whole rows, as many as fit
  local memory with a program left for every PE, so row-invariant operands (a norm's weight and
  bias) are loaded once per program instead of once per row (heuristics.py). Short rows get it
  only when every row operand is a broadcast over a large grid (small_bucketize's kernel);
  other short rows keep Inductor's autotuning.
- `split_reductions`: reductions with fewer outputs than PEs are split in two phases so they
  spread over the 64 PEs instead of running on one or a few programs (heuristics.py).
- `nd_tiling`: pointwise kernels over a broadcast or a concatenation are tiled in 2-D (Inductor's
  `triton.prefer_nd_tiling`), so a row broadcast reads one contiguous run per tile row instead
  of a gather through `index % n` (which the backend's address analysis cannot structure).
- `pointwise_blocks`: pointwise kernels get one block size chosen for the chip (heuristics.py:
  tiles as large as local memory allows, whole rows where they fit, at least one program per
  PE) instead of Inductor's GPU-sized candidates (at most 1024 elements per program, autotuned).
- `pointwise_cat`: a concatenation or stack consumed by pointwise code is fused into it (a
  select per element) instead of materialised by a ConcatKernel, which Inductor always picks on
  a `cpu` device (cat.py; MX4 dequantisation's stack of two nibbles otherwise writes an
  intermediate with stores of stride 2). A narrowing cast of a cat is first moved into the
  cat's inputs (a rule of splice.py's pass), so an FP32 cat written at bf16 (RoPE's two halves)
  is computed half by half into the bf16 output, not as a select computing both per element.
- `small_bucketize`: bucketize against at most 64 sorted integer boundaries (the segment of
  each position: the table of each index of a table-batched embedding bag) is computed as a
  compare-and-count reduction instead of Inductor's binary search, whose every step is a
  one-element-per-run gather (bucketize.py).
- `persistent_invariant`: a kernel whose programs load the same bytes in every program (a
  norm's weight and bias: at least a quarter of what a program loads and at least 8 KB, and no
  tensor loaded twice by a program; backend/passes/pipeline.py) is compiled persistent,
  one program per PE looping over the program ids with those loads hoisted, so they are read
  once per PE instead of once per program (backend/passes/pipeline.py; the `persistent` hint of
  the hand-written kernels, chosen by the compiler here).
- `extern_gemm`: aten.mm / addmm / bmm, which Inductor leaves to aten, run as the expert GEMM
  program on the simulated chip (extern.py; the study registers the program), so their time is
  simulated.
- `triton_gemm_templates` (off by default; T4 turns it on): mm / addmm / bmm / baddbmm (and what decomposes to them: matmul,
  addbmm, linear) compile to Inductor's own Triton GEMM templates (max_autotune_gemm with the
  TRITON backend; the kernels go through this backend like any other), with candidate tiles
  sized for a PE's local memory and the PE grid, timed in simulated time (gemm_templates.py).
  With `extern_gemm` on too, the expert GEMM is one more candidate of the same autotuning
  (mm / bmm of row-major operands; addmm becomes mm + bias add) and the faster one on the
  simulated chip runs; off, `extern_gemm` alone routes every eligible GEMM to the expert.
  Measured side by side (mtia2i, cycles, template / expert): bf16 256^3 3,879 / 3,966,
  512^3 9,675 / 9,667, 1024x1024x512 18,525 / 18,261, bmm 8x256^3 17,128 / 16,969 (a tie:
  both are DMA- and DPE-bound alike); fp32 256^3 11,620 / 34,911, 512^3 70,814 / 262,016,
  1024x1024x512 269,859 / 1,040,004 (the backend forms an FP32 dot on the SIMD engine, which
  the model rates above the DPE's FP32 rate that the expert program uses). Off by default: on the
  study's rows the expert stays the choice, and an epilogue fused after autotuning can overflow a
  PE's local memory (the paper-shape decoder did; docs/inductor.md).
- `extern_sdpa`: scaled_dot_product_attention runs as a Triton flash-attention kernel with an
  additive mask (attention.py).
- `extern_embedding_bag`: embedding bags (sum / mean, include_last_offset) run as the Triton
  embedding-bag kernel of kernels/recommendation_ext.py (registered by the study, as the GEMM).
- `special_functions`: special functions Inductor has no Triton code for (digamma, polygamma,
  zeta, i0e / i1e, K0 / K1 and their scaled forms, spherical j0, Airy Ai, ndtri, igamma /
  igammac, the Chebyshev, Hermite, Laguerre and Legendre polynomials), which it otherwise
  leaves to aten on the host, are lowered as pointwise code calling Triton functions of
  special_math.py (special.py).
- `host_op_lowerings`: ops Inductor has no lowering for and leaves to aten on the host (histc,
  index_reduce prod / amin / amax, segment_reduce, cdist, pdist, addbmm, scatter_reduce prod /
  mean / amax / amin, scatter multiply, GEMMs with an empty dimension, bilinear, 1-3-D
  convolutions and transposed ones, 16-bit index_add, adaptive_avg_pool3d, avg_pool2d with
  large windows, boolean-mask index_put, grid_sampler_3d, var_mean over nothing; through
  splice.py also embedding bags the Triton kernel does not take and linear_cross_entropy's
  chunked ops) are rewritten, in
  Inductor's decomposition table, into ops it lowers to Triton: pointwise bin indices and
  index_put with accumulation (Triton atomics), masked reductions, broadcast-and-reduce
  distances, one mm (host_ops.py, which lists each rewrite's cost and limits).
- `sort_kernels`: sort / argsort / msort, kthvalue, topk, mode, median and nanmedian run as Inductor's own
  Triton sort kernel (a bitonic network in one program) when the sorted dimension fits a PE
  (up to sort.SORT_LIMIT elements), where Inductor sorts in Triton only up to 512 and leaves
  the others to aten (Inductor's `triton.decompose_sort_ops`, set per call; median and nanmedian as a sort and a gather that keep eager's NaN rules; topk and mode pick the first of tied values, where eager's choice is its selection algorithm's own; sort.py).

- `segment_reductions`: index_add, accumulating index_put and scatter_reduce (sum, amax, amin,
  mean) whose index is searchsorted(sorted boundaries, arange(n)), the segment id of jagged
  code, run as one segment reduction (a Triton kernel, one program per segment and column block,
  rows read in order, FP32, no atomics) where Inductor scatters with atomics or leaves the op to
  aten on the host (segments.py).
- `dft_lowerings`: the FFT ops (aten._fft_r2c / c2c / c2r, behind torch.fft and stft), which
  Inductor leaves to pocketfft on the host, become discrete Fourier transforms: one matmul with
  a twiddle table per transformed dimension, up to fft.DFT_LIMIT points (fft.py).
- `linalg_kernels`: torch.linalg's LU, Cholesky and triangular-solve families (lu_factor, lu,
  lu_solve, solve, inv, det, slogdet, cholesky, cholesky_solve / inverse, triangular solves),
  which Inductor leaves to LAPACK on the host, run as Triton kernels of linalg_kernels.py, one
  matrix of at most 64 x 64 per program, with the ops Inductor lowers itself around them
  (linalg.py).
- `constant_tables`: tril_indices / triu_indices, whose arguments are all numbers, are folded
  to constant tables at compile time instead of computed on every call by kernels of their own
  (DLRM's pairwise-interaction gather: two launches fewer; tables.py).
A switch is read when a graph is compiled; Inductor's on-disk graph cache is off on this path
(study/inductor.py) so a change is never served a graph compiled under another setting.
"""
from __future__ import annotations

import os
from typing import Any

DEFAULTS: dict[str, bool] = {"persistent_reductions": True, "reduction_rows": True, "split_reductions": True, "nd_tiling": True,
                             "pointwise_blocks": True, "pointwise_cat": True, "small_bucketize": True,
                             "persistent_invariant": True,
                             "extern_gemm": True, "extern_sdpa": True,
                             "extern_embedding_bag": True, "triton_gemm_templates": False,
                             "special_functions": True, "host_op_lowerings": True, "sort_kernels": True,
                             "dft_lowerings": True, "linalg_kernels": True,
                             "segment_reductions": True, "constant_tables": True}
_ACTIVE: dict[str, bool] = {}


def _parse(text: str) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        k, _, v = item.partition("=")
        if k not in DEFAULTS:
            raise ValueError(f"MTIA_INDUCTOR: unknown switch {k!r}; known: {', '.join(DEFAULTS)}")
        out[k] = v.strip().lower() not in ("0", "false", "off", "no")
    return out


def parse_env() -> dict[str, bool]:
    """The switches MTIA_INDUCTOR sets (only those it names)."""
    return _parse(os.environ.get("MTIA_INDUCTOR", ""))


def activate(**overrides: Any) -> dict[str, bool]:
    """The switches in effect: defaults, then MTIA_INDUCTOR, then `overrides`."""
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)}; known: {', '.join(DEFAULTS)}")
    before = dict(_ACTIVE)
    _ACTIVE.clear()
    _ACTIVE.update(DEFAULTS)
    _ACTIVE.update(_parse(os.environ.get("MTIA_INDUCTOR", "")))
    _ACTIVE.update({k: bool(v) for k, v in overrides.items()})
    _apply_config(_ACTIVE)
    if before and before != _ACTIVE:
        forget_compiled_kernels()
    return dict(_ACTIVE)


def forget_compiled_kernels() -> None:
    """Drop the Triton kernels Inductor compiled in this process. Inductor keeps them in memory
    keyed by their source (the kernels, and the generated modules that hold them); a switch
    that reaches the backend's options and not the source (`persistent_invariant`) would
    otherwise be served the kernel compiled under the old value."""
    import sys
    ac = sys.modules.get("torch._inductor.async_compile")
    if ac is not None:
        ac.CompiledTritonKernels.cache_clear()
    cc = sys.modules.get("torch._inductor.codecache")
    if cc is not None:
        cc.PyCodeCache.cache_clear()


def _apply_config(active: dict[str, bool]) -> None:
    """Switches that are Inductor config keys are set here (read when a graph is compiled)."""
    import torch._inductor.config as ic
    ic.triton.prefer_nd_tiling = active["nd_tiling"]
    apply_template_config(active["triton_gemm_templates"])


def activate_current() -> dict[str, bool]:
    """The switches in effect (activating the defaults and MTIA_INDUCTOR if none were)."""
    if not _ACTIVE:
        activate()
    return dict(_ACTIVE)


def enabled(name: str) -> bool:
    if not _ACTIVE:
        activate()
    return _ACTIVE[name]


_SAVED: dict[str, Any] = {}
_KEYS = ("max_autotune_gemm", "max_autotune_gemm_backends", "benchmark_epilogue_fusion", "max_autotune_conv_backends")


def apply_template_config(on: bool) -> None:
    """Inductor config for `triton_gemm_templates` (gemm_templates.py): max_autotune_gemm on with the TRITON backend allowed
    (ATEN too, for what no template takes: dropped where one does), epilogues fused without
    benchmarking. Off, the values found before the first switch-on come back."""
    import torch._inductor.config as ic
    if on:
        if not _SAVED:
            _SAVED.update({k: getattr(ic, k) for k in _KEYS})
        ic.max_autotune_gemm = True
        ic.max_autotune_gemm_backends = "ATEN,TRITON"
        # an epilogue (bias, activation) is fused into the chosen template unmeasured: Inductor's
        # harness for timing the fused kernel against template + separate epilogue writes a module
        # that does not import on a CPU device (IndentationError: its imports come indented)
        ic.benchmark_epilogue_fusion = False
        # convolutions stay aten: max_autotune_gemm also turns on Inductor's convolution
        # templates, whose CPU paths fail to compile (conv2d: a placeholder's name called with a
        # stream argument; conv3d: conv1x1_via_mm called with an extra argument)
        ic.max_autotune_conv_backends = "ATEN"
    elif _SAVED:
        for k, v in _SAVED.items():
            setattr(ic, k, v)
        _SAVED.clear()
