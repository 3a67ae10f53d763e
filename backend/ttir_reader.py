"""Read a TTIR module (after Triton's own passes) into the tile IR.

Structure, types and operands come from Triton's IR bindings; what the bindings do not expose
(dense constants, array attributes, source locations of ops without results) is read from the
module's printed text, whose op lines are aligned with the bindings' ops in pre-order.
"""
from __future__ import annotations

import os
import re
from typing import Any

from backend.tile_ir import Function, Op, Region, Type, UnsupportedError, Value, parse_type

_OP_LINE = re.compile(r'^(?:(%[^=]+?)\s=\s)?"?([a-z_][\w]*\.[\w.]+)"?')
_LOC_DEF = re.compile(r"^#(loc\d*) = loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')
_TRITON_DIR = os.path.dirname(os.path.dirname(__import__("triton").__file__))

CMPI_PRED = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF_PRED = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt_f", "uge_f",
             "ult_f", "ule_f", "une", "uno", "true"]


class _Locations:
    """Resolves `loc(...)` expressions to the kernel source line a user wants to see."""

    def __init__(self, text: str):
        self.defs: dict[str, str] = {}
        for line in text.splitlines():
            m = _LOC_DEF.match(line)
            if m:
                self.defs[m.group(1)] = m.group(2)
        self._cache: dict[str, str] = {}

    def expand(self, expr: str, depth: int = 0) -> str:
        if depth > 50:
            return expr
        return re.sub(r"#(loc\d*)", lambda m: self.expand(self.defs.get(m.group(1), "unknown"), depth + 1), expr)

    def resolve(self, expr: str) -> str:
        if expr in self._cache:
            return self._cache[expr]
        full = self.expand(expr)
        frames = _FILE_LOC.findall(full)
        user = [f for f in frames if not os.path.abspath(f[0]).startswith(_TRITON_DIR + os.sep + "triton")]
        pick = user[-1] if user else (frames[-1] if frames else None)
        # callsite(callee at caller): the caller-most user frame is the kernel's own line
        out = f"{pick[0]}:{pick[1]}:{pick[2]}" if pick else ""
        self._cache[expr] = out
        return out


def _loc_of_line(line: str) -> str | None:
    i = line.rfind(" loc(")
    if i < 0:
        return None
    depth, j = 0, i + 4
    for j in range(i + 4, len(line)):
        if line[j] == "(":
            depth += 1
        elif line[j] == ")":
            depth -= 1
            if depth == 0:
                break
    return line[i + 5:j]


class _TextOp:
    def __init__(self, name: str, header: str):
        self.name, self.header, self.loc = name, header, None


def _text_ops(text: str) -> list[_TextOp]:
    """Op lines of the printed module in pre-order, each with the loc of its last line."""
    ops: list[_TextOp] = []
    stack: list[_TextOp] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#loc") or line.startswith("^"):
            continue
        if line.startswith("}"):
            if line.rstrip().endswith("{"):
                continue  # } else {  /  } do {
            if stack:
                top = stack.pop()
                loc = _loc_of_line(line)
                if loc is not None:
                    top.loc = loc
            continue
        if line.startswith("module"):
            t = _TextOp("builtin.module", line)
        else:
            m = _OP_LINE.match(line)
            if not m:
                continue
            t = _TextOp(m.group(2), line)
        ops.append(t)
        if line.endswith("{") or line.endswith("({"):
            stack.append(t)
        else:
            t.loc = _loc_of_line(line)
    return ops


def _parse_array(header: str, key: str) -> list[int] | None:
    m = re.search(key + r"\s*=\s*array<i\d+(?::\s*([-\d,\s]*))?>", header)
    if not m:
        return None
    body = (m.group(1) or "").strip()
    return [int(x) for x in body.split(",")] if body else []


def _parse_number(tok: str, elem: str) -> Any:
    tok = tok.strip()
    if tok in ("true", "false"):
        return tok == "true"
    if tok.startswith("0x") and elem not in ("i8", "i16", "i32", "i64"):
        import torch
        from backend.program import TORCH_DTYPE
        bits = int(tok, 16)
        nbytes = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "f8e4m3": 1, "f8e5m2": 1}[elem]
        raw = bits.to_bytes(nbytes, "little")
        return float(torch.frombuffer(bytearray(raw), dtype=TORCH_DTYPE[elem])[0].item())
    if elem in ("i1",):
        return bool(int(tok))
    if elem.startswith("i"):
        return int(tok, 0)
    if tok in ("inf", "+inf"):
        return float("inf")
    if tok == "-inf":
        return float("-inf")
    if tok == "nan":
        return float("nan")
    return float(tok)


def _parse_constant(header: str, ty: Type) -> dict:
    body = header.split("arith.constant", 1)[1]
    body = re.sub(r"\s+loc\(.*$", "", body).strip()
    elem = ty.elem
    if body.startswith("dense<"):
        depth, end = 0, 0
        for i, ch in enumerate(body):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        inner = body[len("dense<"):end].strip()
        if inner.startswith('"0x'):
            import torch
            from backend.program import TORCH_DTYPE
            blob = bytes.fromhex(inner.strip('"')[2:])
            t = torch.frombuffer(bytearray(blob), dtype=TORCH_DTYPE[elem]) if elem != "i1" else \
                torch.frombuffer(bytearray(blob), dtype=torch.uint8).bool()
            vals = t.tolist()
            if len(vals) != ty.numel and len(vals) != 1:
                raise UnsupportedError(f"cannot decode dense constant {inner[:40]}")
            return {"values": vals}
        if inner.startswith("["):
            toks = re.findall(r"[^\[\],\s]+", inner)
            return {"values": [_parse_number(t, elem) for t in toks]}
        return {"values": [_parse_number(inner, elem)]}
    val = body.split(":")[0].strip() if ":" in body else body
    return {"value": _parse_number(val, elem)}


def _attrs_for(op: Any, name: str, header: str, results: list[Value]) -> dict:
    a: dict[str, Any] = {}
    gi = op.get_int_attr
    if name == "arith.constant":
        a.update(_parse_constant(header, results[0].type))
    elif name in ("tt.get_program_id", "tt.get_num_programs"):
        a["axis"] = gi("axis")
    elif name == "tt.make_range":
        a["start"], a["end"] = gi("start"), gi("end")
    elif name in ("tt.expand_dims", "tt.reduce", "tt.gather"):
        a["axis"] = gi("axis")
    elif name == "tt.scan":
        a["axis"] = gi("axis")
        a["reverse"] = bool(op.get_bool_attr("reverse"))
    elif name == "arith.cmpi":
        a["pred"] = CMPI_PRED[gi("predicate")]
    elif name == "arith.cmpf":
        a["pred"] = CMPF_PRED[gi("predicate")]
    elif name == "tt.trans":
        a["order"] = _parse_array(header, "order")
    elif name == "tt.dot":
        a["input_precision"] = gi("inputPrecision")
        a["max_num_imprecise_acc"] = gi("maxNumImpreciseAcc")
    elif name in ("tt.load", "tt.store"):
        bc = _parse_array(header, "boundaryCheck")
        a["boundary_check"] = bc or []
        m = re.search(r"padding\s*=\s*(\d+)", header)
        a["padding"] = int(m.group(1)) if m else None
        a["volatile"] = "isVolatile = true" in header
    elif name == "tt.atomic_rmw":
        m = re.search(r"tt\.atomic_rmw\s+(\w+),\s*(\w+),\s*(\w+)", header)
        a["kind"], a["sem"], a["scope"] = m.group(1), m.group(2), m.group(3)
    elif name == "tt.atomic_cas":
        m = re.search(r"tt\.atomic_cas\s+(\w+),\s*(\w+)", header)
        a["sem"], a["scope"] = (m.group(1), m.group(2)) if m else ("acq_rel", "gpu")
    elif name == "tt.assert":
        a["message"] = op.get_str_attr("message")
    elif name == "tt.print":
        a["prefix"] = op.get_str_attr("prefix")
        a["hex"] = bool(op.get_bool_attr("hex"))
    elif name == "tt.extern_elementwise":
        a["symbol"] = op.get_str_attr("symbol")
        a["pure"] = True
    elif name == "tt.reshape":
        a["allow_reorder"] = "allow_reorder" in header
    elif name == "tt.clampf":
        a["propagate_nan"] = "all" in (re.search(r"propagateNan\s*=\s*(\w+)", header) or [None, ""])[1] \
            if "propagateNan" in header else False
    elif name == "tt.fp_to_fp":
        m = re.search(r"rounding\s*=\s*(\w+)", header)
        a["rounding"] = m.group(1) if m else None
    elif name == "tt.histogram":
        pass
    elif name == "tt.make_tensor_ptr":
        a["order"] = _parse_array(header, "order")
    elif name == "tt.call":
        a["callee"] = header
    return a


def read_module(mod: Any, kernel_arg_names: list[str]) -> Function:
    """Build the tile IR of the single public kernel function of `mod`."""
    text = mod.str()
    locs = _Locations(text)
    text_ops = _text_ops(text)

    raw: list[Any] = []
    mod.walk(lambda o: raw.append(o))
    values: dict[int, Value] = {}

    def val(v: Any) -> Value:
        key = v.id()
        if key not in values:
            values[key] = Value(parse_type(str(v.get_type())), f"%{len(values)}")
        return values[key]

    # rebuild nesting: post-order walk -> children grouped by the region that holds them
    by_region: dict[int, list[Any]] = {}
    for o in raw:
        b = o.get_block()
        if b is not None:
            by_region.setdefault(b.get_parent().id(), []).append(o)

    func_raw = [o for o in raw if o.get_name() == "tt.func"]
    if len(func_raw) != 1:
        # a noinline device function survives the inliner as a tt.call: name it and its call site
        calls = [t for t in text_ops if t.name == "tt.call"]
        kernel = next((f.get_str_attr("sym_name") for f in func_raw
                       if "public" in next((t.header for t in text_ops if t.name == "tt.func"
                                            and f"@{f.get_str_attr('sym_name')}(" in t.header), "")), "?")
        if calls:
            m = re.search(r"tt\.call\s+@([\w$.]+)", calls[0].header)
            callee = m.group(1) if m else "?"
            where = locs.resolve(calls[0].loc) if calls[0].loc else "<unknown location>"
            raise UnsupportedError(f"kernel '{kernel}' at {where}: operation 'tt.call' of device function "
                                   f"'{callee}' is not supported by the MTIA backend (device functions marked "
                                   "noinline=True are not supported; drop noinline so Triton inlines it)")
        raise UnsupportedError(f"expected one kernel function after inlining, found {len(func_raw)} "
                               "(device functions marked noinline are not supported)")

    preorder: list[tuple[Any, Op | None]] = []

    def build_region(op_raw: Any, idx: int) -> Region:
        reg = op_raw.get_region(idx)
        ops_raw = by_region.get(reg.id(), [])
        blk = ops_raw[0].get_block() if ops_raw else None
        args = [val(blk.get_argument(i)) for i in range(blk.get_num_arguments())] if blk else []
        region = Region(args, [])
        for o in ops_raw:
            region.ops.append(build_op(o))
        return region

    def build_op(o: Any) -> Op:
        name = o.get_name()
        results = [val(o.get_result(i)) for i in range(o.get_num_results())]
        operands = [val(o.get_operand(i)) for i in range(o.get_num_operands())]
        op = Op(name, operands, results)
        preorder.append((o, op))
        op.regions = [build_region(o, i) for i in range(o.get_num_regions())]
        return op

    fraw = func_raw[0]
    body = build_region(fraw, 0)
    fn = Function(name=fraw.get_str_attr("sym_name") or mod.get_entry_func_name(), args=body.args,
                  arg_names=kernel_arg_names, body=body)
    for a, n in zip(fn.args, kernel_arg_names):
        a.name = f"%{n}"

    # align text ops (pre-order, terminators sometimes elided) with binding ops
    tops = [t for t in text_ops if t.name not in ("builtin.module", "tt.func")]
    ti = 0
    for o, op in preorder:
        if ti < len(tops) and tops[ti].name == op.name:
            t = tops[ti]
            ti += 1
            op.attrs = _attrs_for(o, op.name, t.header, op.results)
            op.loc = locs.resolve(t.loc) if t.loc else ""
        elif op.name in ("scf.yield",):
            op.attrs = {}
        else:
            raise UnsupportedError(f"internal: could not align TTIR text with op {op.name} "
                                   f"(text has {tops[ti].name if ti < len(tops) else 'nothing'})")
    return fn
