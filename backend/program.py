"""The intrinsic program format: the one contract between the compiler and the simulator.

The compiler's last level (backend/lowering.py) emits a `Program`; the `mtiabin` stage is its
JSON (`to_bytes`), which the driver loads (`from_bytes`) and the simulator (backend/sim/)
executes and prices. The expert library writes the same format with backend/sim/builder.py.
This module holds only the format: the data classes, operand helpers, the dtype names and
tables both sides read, the engine each op prefix runs on, the functions that run on the SFU,
the JSON encoding and the printer (`kernel.asm["mtiasm"]`). What an instruction does and what
it costs are the simulator's (backend/sim/isa.py, backend/sim/timing.py); the compiler imports
this module, never the simulator's.

A program is plain data: parameters, each tile register's buffer in local memory, the peak
local memory, and an ordered instruction list. Each instruction names its op (the prefix before
the first "." gives its engine), its destination registers, its operands (registers "%name",
numbers, bools, None, or lists of them), attributes, its source location and the registers it
waits for. Loops and branches stay structured: an instruction with bodies.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import torch

# ----------------------------------------------------------------------------- engines

ENGINES = ("CTRL", "SCALAR", "DMA_IN", "DMA_OUT", "DPE", "SIMD", "SFU", "RE", "MLU")

# op prefix ("dma_in" of "dma_in.load") -> the engine that runs it
ENGINE_OF_PREFIX = {
    "ctl": "CTRL", "scalar": "SCALAR", "dma_in": "DMA_IN", "dma_out": "DMA_OUT",
    "dpe": "DPE", "simd": "SIMD", "sfu": "SFU", "re": "RE", "mlu": "MLU",
}

# The elementwise functions (the `fn` attribute of unary / binary instructions) that run on the
# SFU's lookup tables; every other function is plain SIMD ALU work. The compiler selects the
# engine from it, the simulator computes low-precision inputs of these in f32.
SFU_FUNCTIONS = frozenset({
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
    "tanh", "erf", "sigmoid", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "erfc", "lgamma", "pow", "atan2", "recip", "hypot", "erfinv", "erfcx", "i0", "i1", "j0", "j1", "y0", "y1",
    "nextafter",
})

# ----------------------------------------------------------------------------- dtypes

# dtype names of registers, buffers and parameters -> the torch dtype that holds their values
TORCH_DTYPE = {
    "i1": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
    "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
    "f64": torch.float64, "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2,
    "ptr": torch.int64,
}
ITEMSIZE = {k: (1 if k == "i1" else torch.empty(0, dtype=v).element_size()) for k, v in TORCH_DTYPE.items()}
INT_BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "ptr": 64, "u8": 8}

# ----------------------------------------------------------------------------- program format

Operand = Any  # "%name" register, a number, a bool, None, or a list of operands


@dataclass
class Block:
    params: list[str]
    instrs: list["Instr"]
    results: list[Operand] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"params": self.params, "instrs": [i.to_json() for i in self.instrs], "results": self.results}

    @staticmethod
    def from_json(d: dict) -> "Block":
        return Block(d["params"], [Instr.from_json(i) for i in d["instrs"]], d["results"])


@dataclass
class Instr:
    op: str
    dst: list[str]
    args: dict[str, Operand]
    attrs: dict[str, Any] = field(default_factory=dict)
    loc: str = ""
    bodies: list[Block] = field(default_factory=list)
    waits: list[str] = field(default_factory=list)  # registers whose producers this waits for

    @property
    def engine(self) -> str:
        return ENGINE_OF_PREFIX[self.op.split(".", 1)[0]]

    def to_json(self) -> dict:
        d = {"op": self.op, "engine": self.engine, "dst": self.dst, "args": self.args, "waits": self.waits}
        if self.attrs:
            d["attrs"] = self.attrs
        if self.loc:
            d["loc"] = self.loc
        if self.bodies:
            d["bodies"] = [b.to_json() for b in self.bodies]
        return d

    @staticmethod
    def from_json(d: dict) -> "Instr":
        return Instr(d["op"], d["dst"], d["args"], d.get("attrs", {}), d.get("loc", ""),
                     [Block.from_json(b) for b in d.get("bodies", [])], d.get("waits", []))


@dataclass
class Buffer:
    """A tile's home in local memory: `copies` > 1 when DMA into it is multi-buffered."""
    shape: list[int]
    dtype: str
    offset: int
    nbytes: int
    copies: int = 1


@dataclass
class Program:
    name: str
    params: list[dict]          # {"name", "kind": "ptr"|"int"|"float", "dtype", "reg"}
    body: Block
    buffers: dict[str, Buffer]  # tile register -> local-memory buffer
    local_mem_bytes: int        # peak local memory the program needs on one PE
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "params": self.params, "body": self.body.to_json(),
                "buffers": {k: vars(v) for k, v in self.buffers.items()},
                "local_mem_bytes": self.local_mem_bytes, "meta": self.meta}

    @staticmethod
    def from_json(d: dict) -> "Program":
        return Program(d["name"], d["params"], Block.from_json(d["body"]),
                       {k: Buffer(**v) for k, v in d["buffers"].items()}, d["local_mem_bytes"], d.get("meta", {}))


def registers_in(operand: Operand) -> list[str]:
    """The registers an operand names (a list operand names those of its items)."""
    if isinstance(operand, str) and operand.startswith("%"):
        return [operand]
    if isinstance(operand, (list, tuple)):
        return [r for o in operand for r in registers_in(o)]
    return []


# ----------------------------------------------------------------------------- encoding

def to_bytes(program: Program) -> bytes:
    """The `mtiabin` encoding: the program's JSON, compact."""
    return json.dumps(program.to_json(), separators=(",", ":")).encode()


def from_bytes(binary: bytes) -> Program:
    """The program an `mtiabin` encodes (what the driver loads)."""
    return Program.from_json(json.loads(binary))


# ----------------------------------------------------------------------------- printer

def print_program(p: Program) -> str:
    """The `mtiasm` text: one instruction a line, each with its engine; bodies indented."""
    out = [f"mtia.program @{p.name}  // local memory {p.local_mem_bytes} B of one PE"]
    for prm in p.params:
        out.append(f"  param {prm['reg']}: {prm['kind']} {prm.get('dtype', '')}")
    for r, b in sorted(p.buffers.items(), key=lambda kv: kv[1].offset):
        cp = f" x{b.copies}" if b.copies > 1 else ""
        out.append(f"  buffer {r}: {b.dtype}{list(b.shape)} @local+{b.offset} ({b.nbytes} B{cp})")
    _print_block(p.body, 1, out)
    return "\n".join(out) + "\n"


def _print_block(b: Block, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    for ins in b.instrs:
        dst = ", ".join(ins.dst)
        lhs = f"{dst} = " if dst else ""
        args = ", ".join(f"{k}={v}" for k, v in ins.args.items() if v is not None and v != [])
        attrs = ", ".join(f"{k}={v}" for k, v in ins.attrs.items())
        out.append(f"{pad}{lhs}[{ins.engine}] {ins.op} {args}" + (f" {{{attrs}}}" if attrs else ""))
        for i, body in enumerate(ins.bodies):
            out.append(f"{pad}  ^body{i}({', '.join(body.params)}):")
            _print_block(body, depth + 2, out)
            if body.results:
                out.append(f"{pad}    yield {', '.join(map(str, body.results))}")
