"""The Triton compiler backend for MTIA: stages ttir -> tile -> pe -> mtiasm -> mtiabin.

- ttir:    Triton's own TTIR passes (inline, canonicalise, combine, tensor descriptors to
           pointers, loop unroll).
- tile:    level 1, the tile IR; pointer and mask analysis turn memory ops into structured
           DMA, index-driven gathers, or the scalar path (visible in the printed stage).
- pe:      level 2, tiles placed in one PE's local memory, DMA multi-buffered in loops.
- mtiasm:  level 3, engine-sized intrinsics (DMA, DPE, SIMD/SFU, RE, MLU, scalar), as text.
- mtiabin: the same program serialised as JSON bytes: the binary the driver loads.

`kernel.asm` holds exactly these stages (STAGES). GPU stages (ttgir, llir, ptx, cubin, amdgcn)
do not exist here; `kernel.asm["ttgir"]` raises Triton's own KeyError("Unknown key: 'ttgir'").
A clearer message would need a hook that Triton does not offer a backend: CompiledKernel builds
its AsmDict (whose __missing__ knows only "sass") from the stage files alone, and no backend or
driver method sees the CompiledKernel, so it is left to Triton rather than patched.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, fields
from types import ModuleType
from typing import Any

from triton._C.libtriton import ir, passes
from triton.backends.compiler import BaseBackend, GPUTarget

from backend import lowering, pe_program
from backend.configs import load_chip
from backend.passes import pipeline
from backend.passes.persistent import PERSISTENT_PARAMS
from backend.program import Program, print_program, to_bytes
from backend.tile_ir import Function, print_function
from backend.ttir_reader import read_module

BACKEND_VERSION = "0.1.0"
STAGES = ("ttir", "tile", "pe", "mtiasm", "mtiabin")  # the keys of kernel.asm
MAX_RESIDENT_PROGRAMS = 4  # programs in flight on one PE (bounded by the engines' queue depth)


def _source_digest() -> str:
    """Hash of the backend's own sources: editing a pass invalidates Triton's kernel cache."""
    import pathlib
    h = hashlib.sha256()
    root = pathlib.Path(__file__).parent
    for p in sorted(root.rglob("*")):
        if p.suffix in (".py", ".toml"):
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


SOURCE_DIGEST = _source_digest()


@dataclass(frozen=True)
class MTIAOptions:
    # Triton's generic launch options (num_warps has no meaning on a PE; kept for portability)
    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = 2
    debug: bool = False
    sanitize_overflow: bool = False
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    instrumentation_mode: str = ""
    extern_libs: Any = None
    arch: str = "mtia2i"
    backend_name: str = "mtia"
    supported_fp8_dtypes: tuple = ("fp8e5", "fp8e4nv")
    deprecated_fp8_dot_operand_dtypes: tuple = ()
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple = ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: int = 0
    # MTIA compiler knobs (each can be switched off for the ablation study)
    structured_dma: bool = True         # pointer/mask analysis -> descriptor DMA
    use_reduction_engine: bool = True   # builtin reductions on the RE
    index_dma: bool = True              # unstructured offsets -> index-driven DMA, else scalar path
    transposed_dma: bool = True         # a box whose contiguous dim is not the tile's last: DMA + MLU permute
    dense_strided_dma: bool = True      # a load with last-dim stride 2 or 4: the dense span + MLU split
    repeat_dma: bool = True             # a load at index // k along the last dim: k times fewer elements + MLU repeat
    table_dma: bool = True              # a gather bounded by asserts to a small span: the dense span + MLU gather
    pipeline_programs: bool = True      # overlap consecutive programs on a PE when buffers fit twice
    software_pipeline: bool = True      # rotate loops (next GEMM before this softmax), order ops by earliest start
    minmax_idiom: bool = True           # compare-and-select NaN-propagating min/max -> one op (backend/passes/idioms.py)
    round_idiom: bool = True            # where(y >= 0, floor(y + .5), ceil(y - .5)) -> trunc(y + copysign(.5, y)) (idioms.py)
    cat_idiom: bool = True              # Inductor's cat / stack: redundant selects, one load for both halves (idioms.py)
    tabulate: bool = True               # elementwise chains of a small-range integer -> table + gather (passes/tabulate.py)
    # compiler hints (off by default; a kernel opts in per launch, see backend/passes/persistent.py)
    persistent: bool = False            # at most one program per PE, looping over the grid's program ids
    # compiler choice (Inductor's path turns it on): persistent where invariant loads are a
    # large share of a program's loads (backend/passes/pipeline.py)
    persistent_invariant: bool = False

    def hash(self) -> str:
        key = "_".join(f"{f.name}-{getattr(self, f.name)}" for f in fields(self))
        return hashlib.sha256(key.encode()).hexdigest()


def env_options() -> dict:
    """Overrides from MTIA_OPTIONS="structured_dma=0,num_stages=1": how the study's ablation
    switches compiler features off for every kernel, Inductor's included."""
    raw = os.environ.get("MTIA_OPTIONS", "").strip()
    if not raw:
        return {}
    kinds = {f.name: f.type for f in fields(MTIAOptions)}
    out: dict = {}
    for item in raw.split(","):
        key, _, val = item.partition("=")
        key = key.strip()
        if key not in kinds:
            raise ValueError(f"MTIA_OPTIONS: unknown option '{key}'; known: {', '.join(sorted(kinds))}")
        kind = kinds[key]
        if kind in ("bool", bool):
            out[key] = val.strip().lower() in ("1", "true", "yes", "on")
        elif kind in ("int", int):
            out[key] = int(val)
        else:
            out[key] = val.strip()
    return out


# compiler hints and switches and the values each accepts (checked, so a typo is an error, not a
# no-op): every MTIA knob of MTIAOptions, from structured_dma on, is a boolean
_NAMES = [f.name for f in fields(MTIAOptions)]
HINTS: dict[str, tuple] = {name: (True, False) for name in _NAMES[_NAMES.index("structured_dma"):]}


def _check_hints(args: dict) -> None:
    """Reject hint values that mean nothing (`persistent="yes"`, `persistent=2`), naming the
    hint and the value; unknown launch options are already rejected by Triton's launcher."""
    for name, allowed in HINTS.items():
        if name in args:
            v = args[name]
            if not isinstance(v, (bool, int)) or isinstance(v, int) and not isinstance(v, bool) and v not in (0, 1):
                raise ValueError(f"MTIA hint {name}={v!r} is not valid; expected one of "
                                 f"{', '.join(map(repr, allowed))}")
            args[name] = bool(v)


class TileModule:
    """Output of the tile stage: the tile IR after the analysis passes."""

    def __init__(self, fn: Function, report: dict):
        self.fn, self.report = fn, report

    def __str__(self) -> str:
        lines = [f"// memory ops: {json.dumps(self.report, sort_keys=True)}"]
        return "\n".join(lines) + "\n" + print_function(self.fn)


class PEModule:
    """Output of the pe stage: the tile IR plus each tile's local-memory buffer."""

    def __init__(self, tile: TileModule, buffers: dict, peak: int, capacity: int, stages: int,
                 asked_stages: int | None = None):
        self.tile, self.buffers, self.peak, self.capacity, self.stages = tile, buffers, peak, capacity, stages
        self.asked_stages = stages if asked_stages is None else asked_stages

    def __str__(self) -> str:
        refit = "" if self.stages == self.asked_stages else \
            f" (num_stages={self.asked_stages} does not fit local memory: reduced to {self.stages})"
        out = [f"// PE program: {self.peak} of {self.capacity} bytes of local memory, "
               f"DMA in loops buffered x{self.stages}{refit}"]
        for name, b in sorted(self.buffers.items(), key=lambda kv: kv[1].offset):
            cp = f" x{b.copies}" if b.copies > 1 else ""
            out.append(f"// buffer {name}: {b.dtype}{b.shape} at local+{b.offset} ({b.nbytes} B{cp})")
        return "\n".join(out) + "\n" + print_function(self.tile.fn)


class ProgramText:
    """Output of the mtiasm stage: the intrinsic program, printed one instruction a line."""

    def __init__(self, program: Program):
        self.program = program

    def __str__(self) -> str:
        return print_program(self.program)


def _arg_names(text: str) -> list[str]:
    m = re.search(r"tt\.func\s+(?:public\s+|private\s+)?@[\w$.]+\((.*)\)\s*(?:attributes|\{)", text)
    if not m:
        return []
    return re.findall(r"%([\w$.-]+):", m.group(1))


class MTIABackend(BaseBackend):
    binary_ext = "mtiabin"

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == "mtia"

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)

    def hash(self) -> str:
        return f"mtia-{BACKEND_VERSION}-{SOURCE_DIGEST}-{self.target.arch}"

    def parse_options(self, opts: dict) -> MTIAOptions:
        names = {f.name for f in fields(MTIAOptions)}
        # MTIA_OPTIONS overrides launch options: it is how an ablation switches a feature off
        # for every kernel, including kernels that pass their own num_stages
        args = {**{k: v for k, v in opts.items() if k in names and v is not None}, **env_options()}
        _check_hints(args)
        if "num_stages" in args and int(args["num_stages"]) < 1:
            raise ValueError(f"num_stages must be >= 1 on MTIA, got {args['num_stages']}")
        args.setdefault("arch", str(self.target.arch))
        if isinstance(args.get("extern_libs"), dict):
            args["extern_libs"] = tuple(args["extern_libs"].items())
        for k in ("supported_fp8_dtypes", "allowed_dot_input_precisions", "deprecated_fp8_dot_operand_dtypes"):
            if k in args:
                args[k] = tuple(args[k])
        return MTIAOptions(**args)

    def pack_metadata(self, metadata: Any) -> tuple:
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def get_codegen_implementation(self, options: MTIAOptions) -> dict:
        from triton.language.extra.cuda import convert_custom_float8_sm80
        return {"convert_custom_types": convert_custom_float8_sm80, "min_dot_size": lambda *_: (1, 1, 1)}

    def get_module_map(self) -> dict[str, ModuleType]:
        from backend.language import libdevice
        return {"triton.language.extra.libdevice": libdevice}

    def load_dialects(self, context: Any) -> None:
        pass

    # ---------------------------------------------------------------- stages

    @staticmethod
    def make_ttir(mod: Any, metadata: dict, options: MTIAOptions) -> Any:
        pm = ir.pass_manager(mod.context)
        pm.enable_debug()
        passes.common.add_inliner(pm)
        passes.ttir.add_rewrite_tensor_descriptor_to_pointer(pm)
        passes.common.add_canonicalizer(pm)
        passes.ttir.add_combine(pm)
        passes.ttir.add_reorder_broadcast(pm)
        passes.common.add_cse(pm)
        passes.common.add_symbol_dce(pm)
        passes.ttir.add_loop_unroll(pm)
        pm.run(mod, "make_ttir")
        return mod

    @staticmethod
    def make_tile(mod: Any, metadata: dict, options: MTIAOptions) -> TileModule:
        text = mod.str()
        fn = read_module(mod, _arg_names(text))
        metadata["name"] = fn.name
        report = pipeline.run(fn, options)
        return TileModule(fn, report)

    @staticmethod
    def make_pe(tile: TileModule, metadata: dict, options: MTIAOptions) -> PEModule:
        chip = load_chip(options.arch)
        capacity = int(chip["local_memory"]["bytes"])
        buffers, peak, stages = pe_program.allocate_fitting(tile.fn, capacity, options.num_stages)
        metadata["shared"] = peak
        return PEModule(tile, buffers, peak, capacity, stages, options.num_stages)

    @staticmethod
    def make_mtiasm(pe: PEModule, metadata: dict, options: MTIAOptions) -> "ProgramText":
        fn = pe.tile.fn
        params = []
        for a, name in zip(fn.args, fn.arg_names or [a.name.lstrip("%") for a in fn.args]):
            kind = "ptr" if a.type.is_ptr else ("float" if a.type.elem.startswith(("f", "bf")) else "int")
            params.append({"name": name, "kind": kind, "dtype": str(a.type), "reg": a.name})
        # level 2 also decides how programs share a PE: as many programs as their buffers fit
        # local memory (up to MAX_RESIDENT_PROGRAMS) are resident at once, so the next
        # programs' DMA overlaps this one's compute and stores
        pipeline = max(1, min(MAX_RESIDENT_PROGRAMS, pe.capacity // max(pe.peak, 1))) \
            if options.pipeline_programs else 1
        meta = {"chip": options.arch, "num_stages": pe.stages, "memory_ops": pe.tile.report,
                "program_pipeline": pipeline, "program_overlap": bool(options.pipeline_programs)}
        if PERSISTENT_PARAMS[0] in (fn.arg_names or []):
            # one program per PE looping over the grid: the driver launches (P, 1, 1) and
            # appends the grid as the hidden parameters (backend/passes/persistent.py)
            meta.update(persistent=True, program_pipeline=1, program_overlap=False)
            if pe.tile.report.get("pe_queries"):
                meta["pe_queries"] = True
        return ProgramText(lowering.select(fn, options, pe.buffers, pe.peak, params, meta))

    @staticmethod
    def make_mtiabin(asm: "ProgramText", metadata: dict, options: MTIAOptions) -> bytes:
        return to_bytes(asm.program)

    def add_stages(self, stages: dict, options: MTIAOptions, language: Any = None) -> None:
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options)
        stages["tile"] = lambda src, metadata: self.make_tile(src, metadata, options)
        stages["pe"] = lambda src, metadata: self.make_pe(src, metadata, options)
        stages["mtiasm"] = lambda src, metadata: self.make_mtiasm(src, metadata, options)
        stages["mtiabin"] = lambda src, metadata: self.make_mtiabin(src, metadata, options)

