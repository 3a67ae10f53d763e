"""T4: what an OpInfo failure is, and where it came from (study/opinfo.py's error columns).

`classify_exception` turns the exception of a compiled run into (status, error_type,
error_origin, backend_op, error_message, error_where); `error_pattern` groups failing rows for
the summary by blanking kernel names, locations, numbers and quoted names.
"""
from __future__ import annotations

import os
import re
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _first_line(s: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in str(s).strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line[:limit]


_WRAPPERS = ("InductorError", "BackendCompilerFailed", "CompilationError", "TorchRuntimeError")


def _chain(e: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first: Dynamo/Inductor's inner_exception, then
    __cause__; __context__ only out of a wrapper (never into an unrelated handled error)."""
    out, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.append(e)
        nxt = getattr(e, "inner_exception", None) or e.__cause__
        if nxt is None and type(e).__name__ in _WRAPPERS and not e.__suppress_context__:
            nxt = e.__context__
        e = nxt
    return out


def _short_path(path: str) -> str:
    path = str(path)
    for prefix in ("site-packages/", str(REPO) + "/"):
        if prefix in path:
            return path.split(prefix, 1)[1]
    return os.path.basename(path)


def _where(e: BaseException) -> str:
    """The innermost frame in backend/ that the exception passed through, else its innermost frame."""
    frames = traceback.extract_tb(e.__traceback__) if e.__traceback__ else []
    mine = [f for f in frames if f.filename.startswith(str(REPO / "backend"))]
    f = (mine or frames or [None])[-1]
    return f"{_short_path(f.filename)}:{f.lineno}:{f.name}" if f else ""


def _clean_message(root: BaseException) -> str:
    text = str(root)
    if type(root).__name__ == "CompilationError":  # "at L:C:" + source + caret + the error, last
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        text = lines[-1] if lines else text
    msg = _first_line(text) or type(root).__name__
    return re.sub(r"(?:/[^\s:']+/)([^/\s:']+\.py)", r"\1", msg)  # generated-module paths -> file name


_BACKEND_OP_PATTERNS = [
    (re.compile(r"operation '([^']+)'"), "{0}"),
    (re.compile(r"libdevice\.(\w+) is not available"), "libdevice.{0}"),
    (re.compile(r"extern function '([^']+)'"), "extern {0}"),
    (re.compile(r"libdevice' has no attribute '(\w+)'"), "libdevice.{0}"),
    (re.compile(r"type (\S+) is not supported"), "type {0}"),
    (re.compile(r"comparison predicate '([^']+)'"), "cmp {0}"),
    (re.compile(r"atomic '([^']+)'"), "atomic {0}"),
    (re.compile(r"(?:does not fit|local memory)", re.I), "local memory"),
    (re.compile(r"misaligned (\S+) access"), "misaligned {0}"),
    (re.compile(r"(out of bounds|outside)", re.I), "out of bounds"),
    (re.compile(r"unknown instruction (\S+)"), "instr {0}"),
    (re.compile(r"cannot decode dense constant"), "dense constant"),
    (re.compile(r"not structured by pointer analysis"), "pointer analysis"),
]


def classify_exception(e: BaseException) -> tuple[str, str, str, str, str, str]:
    """(status, error_type, error_origin, backend_op, message, where) for an exception of the
    compiled run. The root is the innermost cause; its origin is the backend when the backend
    raised it (its type or its innermost frame is in backend/, or Triton found no such
    function in the backend's libdevice), the simulator or driver when raised while running a
    kernel (backend/sim, backend/driver.py), else Triton's front end, Inductor, Dynamo or torch.
    Backend and Triton/Inductor/Dynamo failures are compile errors; simulator, driver and
    other failures at run time are runtime errors."""
    from backend.sim.isa import SimulationError
    from backend.tile_ir import UnsupportedError
    chain = _chain(e)
    names = {type(x).__name__ for x in chain}
    root = chain[-1]
    where = _where(root)
    text = str(root)
    mod = type(root).__module__ or ""
    if isinstance(root, SimulationError) or where.startswith("backend/sim/"):
        origin = "simulator"
    elif where.startswith("backend/driver.py"):
        origin = "driver"
    elif isinstance(root, UnsupportedError) or mod.startswith("backend") or where.startswith("backend/") \
            or "backend.language.libdevice" in text:
        origin = "backend"
    elif mod.startswith("triton") or "CompilationError" in names:
        origin = "triton"
    elif mod.startswith("torch._inductor") or "InductorError" in names or "BackendCompilerFailed" in names:
        origin = "inductor"
    elif mod.startswith(("torch._dynamo", "torch.fx")) or "TorchRuntimeError" in names:
        origin = "dynamo"
    else:
        origin = "torch"
    if origin in ("simulator", "driver"):
        status = "runtime_error"
    elif origin in ("backend", "triton", "inductor", "dynamo"):
        status = "compile_error"
    else:
        status = "runtime_error"
    msg = _clean_message(root)
    backend_op = ""
    if origin in ("backend", "simulator", "driver"):
        for pat, fmt in _BACKEND_OP_PATTERNS:
            m = pat.search(text)
            if m:
                backend_op = fmt.format(*m.groups())
                break
        backend_op = backend_op or f"{type(root).__name__} in {where.rsplit(':', 1)[-1] or '?'}"
    return status, type(root).__name__, origin, backend_op, msg, where


def error_pattern(row: dict) -> str:
    """A grouping key for failures: the backend op when the backend names one, else the
    message with kernel names, locations, numbers and quoted names blanked."""
    if row.get("backend_op"):
        msg = row.get("error_message", "")
        msg = re.sub(r"^kernel '[^']*' at [^:]*(:\d+)*:\s*", "", msg)
        msg = re.sub(r"'[^']*'", "'X'", msg)
        msg = re.sub(r"\d+", "N", msg)
        return f"[{row.get('error_origin')}] {row['backend_op']}: {msg[:100]}"
    msg = row.get("error_message", "")
    msg = re.sub(r"kernel '[^']*' at [^:]*(:\d+)*:\s*", "", msg)
    msg = re.sub(r"'[^']*'", "'X'", msg)
    msg = re.sub(r"\[[^\]]*\]", "[..]", msg)
    msg = re.sub(r"\d+", "N", msg)
    return f"[{row.get('error_origin') or row.get('status')}] {row.get('error_type')}: {msg[:100]}"
