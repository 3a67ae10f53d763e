"""Every workload's "triton" implementation against its "torch" reference on the "test" shapes,
and the memory-op lowering of the kernels that must get structured DMA."""
from __future__ import annotations

import pytest
import torch
import triton

from study.registry import load_all
from study.tolerances import tolerance

WORKLOADS = load_all()
# families whose kernels are affine tile loops: every load and store must become structured DMA
STRUCTURED_FAMILIES = ("elementwise", "normalisation", "gemm")


def _cases() -> list:
    return [pytest.param(w, s, dt, id=f"{w.name}-{s.name}-{dt}")
            for w in WORKLOADS.values() for s in w.shapes_tagged("test") for dt in w.dtypes]


def _outputs(x) -> list[torch.Tensor]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def assert_close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    if not got.dtype.is_floating_point:
        assert not want.dtype.is_floating_point, f"{what}: integer output against a float reference"
        bad = (got.to(torch.int64) != want.to(torch.int64)).sum().item()
        assert bad == 0, f"{what}: {bad} of {got.numel()} integer elements differ"
        return
    tol = tolerance(got.dtype)  # a low-precision output is held to its own tolerance against fp32
    g, w = got.float(), want.float()
    err = (g - w).abs()
    limit = tol + tol * w.abs()
    bad = ~(err <= limit)
    assert not bad.any(), (f"{what}: {bad.sum().item()} of {got.numel()} elements beyond rtol=atol={tol}; "
                           f"max abs err {err.max().item():.3g}, max rel err {(err / w.abs().clamp_min(1e-30)).max().item():.3g}")


@pytest.mark.parametrize("w, shape, dtype", _cases())
def test_triton_matches_torch(w, shape, dtype) -> None:
    inputs = w.make(shape, dtype, seed=0)
    want = _outputs(w.impls["torch"](**inputs))
    got = _outputs(w.impls["triton"](**inputs))
    assert len(got) == len(want)
    for i, (g, r) in enumerate(zip(got, want)):
        assert_close(g, r, f"{w.name}[{shape.name}, {dtype}] output {i}")


def compiled_tiles(kernel: triton.runtime.JITFunction) -> list[str]:
    """The tile stage of every compiled specialisation of `kernel` held in its JIT cache."""
    return [ck.asm["tile"] for cache, *_ in kernel.device_caches.values() for ck in cache.values()]


def _jit(src):
    """The @triton.jit function behind a source (an autotuner wraps one)."""
    return src.fn if isinstance(src, triton.runtime.Autotuner) else src


@pytest.mark.parametrize("w", [w for w in WORKLOADS.values()], ids=lambda w: w.name)
def test_triton_source_is_a_kernel(w) -> None:
    assert isinstance(_jit(w.source.get("triton")), triton.runtime.JITFunction), \
        f"{w.name}: impl('triton', source=...) must name the @triton.jit kernel"


@pytest.mark.parametrize("w", [w for w in WORKLOADS.values() if w.family in STRUCTURED_FAMILIES],
                         ids=lambda w: w.name)
def test_structured_dma_only(w) -> None:
    kernel = _jit(w.source["triton"])
    shape = w.shapes_tagged("test")[0]
    for dtype in w.dtypes:
        w.impls["triton"](**w.make(shape, dtype))
    tiles = compiled_tiles(kernel)
    assert tiles, f"{w.name}: no compiled specialisation of {kernel.fn.__name__} found"
    for tile in tiles:
        assert 'path = "scalar"' not in tile, f"{w.name}: scalar-path memory op in\n{tile}"
        assert 'path = "gather"' not in tile, f"{w.name}: index-driven DMA in an affine kernel\n{tile}"
