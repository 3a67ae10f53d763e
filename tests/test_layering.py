"""The project's layering, checked on the source: every import statement of every module
(function-level imports included) is parsed with `ast` and must go in an allowed direction.

Between the top-level folders (docs/architecture.md, "Layers"):
  kernels/    plain Triton: imports nothing of ours but kernels/; a kernels/<family>_ext.py may
              also use the MTIA language extensions (backend.language)
  baselines/  imports backend/ and baselines/ only (never study/)
  backend/    imports none of study/, kernels/, baselines/, tools/
  tools/      imports backend/, kernels/, baselines/, tools/; never study/ (study/ may use tools/)

Inside backend/, the program format (backend/program.py) is the one contract between the
compiler and the simulator:
  format      backend.program: nothing of ours
  data        backend.configs, backend.regimes: nothing of ours
  compiler    backend.compiler, tile_ir, ttir_reader, passes/, pe_program, lowering, language/:
              format, data and compiler modules; of the simulator only its cost model
              (COST_MODEL: backend.sim.cost); no runtime, no Inductor glue
  simulator   backend.sim.*: format, data and simulator modules
  runtime     backend.driver: format, data, simulator (it loads a program's bytes itself)
  inductor    backend.inductor_cpu.*: anything of backend/ but the simulator
Level 1 (tile_ir, ttir_reader, passes/) imports no level-3 module (backend.lowering). A private
name (`_x`) is imported only from a module of the same folder. backend/ has no import cycles.
Each module imports a name from the module that defines it (no re-exports, no shims).

Workload families: study/workloads/<family>.py declares the workloads of one family, with the
kernels of kernels/<family>*.py and the expert programs of baselines/expert/<family>*.py.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("backend", "kernels", "baselines", "study", "tools")

# The compiler's cost-driven choices (DPE or SIMD for a dot, the scheduler's op estimates) call
# the timing model's cost rules (ChipModel), so the package holding them is the one part of the
# simulator the compiler may import.
COST_MODEL = ("backend.sim.cost",)
# Known exceptions to the private-name rule, each with its reason.
PRIVATE_EXCEPTIONS: dict[tuple[str, str, str], str] = {}

FORMAT = frozenset({"backend.program"})
DATA = frozenset({"backend.configs", "backend.regimes"})
RUNTIME = frozenset({"backend.driver"})
LEVEL_1 = ("backend.tile_ir", "backend.ttir_reader", "backend.passes")
LEVEL_3 = ("backend.lowering",)
COMPILER = ("backend.compiler", "backend.pe_program") + LEVEL_1 + LEVEL_3 + ("backend.language",)
SIMULATOR = ("backend.sim",)
INDUCTOR = ("backend.inductor_cpu",)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str          # the module imported (a submodule when `from pkg import submodule`)
    names: tuple         # names taken from `target` (empty for `import x` and submodule imports)
    line: int

    def __str__(self) -> str:
        what = f"{self.target}:{','.join(self.names)}" if self.names else self.target
        return f"{MODULES[self.importer].relative_to(ROOT)}:{self.line} imports {what}"


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def imports_of(module: str, source: str | None = None) -> list[Import]:
    """Every import of `module` of one of our modules, lazy ones included."""
    tree = ast.parse(source if source is not None else MODULES[module].read_text())
    package = module if MODULES.get(module, Path()).name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [Import(module, a.name, (), node.lineno) for a in node.names if _ours(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            if not _ours(base):
                continue
            names = []
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    out.append(Import(module, f"{base}.{a.name}", (), node.lineno))
                else:
                    names.append(a.name)
            if names:
                out.append(Import(module, base, tuple(names), node.lineno))
    return out


IMPORTS = [i for m in MODULES for i in imports_of(m)]


def _in(module: str, *groups) -> bool:
    return any(module == g or module.startswith(g + ".") for grp in groups for g in grp)


def _violations(imports: list[Import]) -> list[str]:
    bad = []
    for i in imports:
        src, dst = i.importer, i.target
        top, dtop = src.split(".")[0], dst.split(".")[0]
        why = None
        if top == "kernels":
            ext = src.rpartition(".")[2].endswith("_ext")
            if dtop != "kernels" and not (ext and _in(dst, ("backend.language",))):
                why = "kernels/ imports only kernels/ (and backend.language from a *_ext kernel)"
        elif top == "baselines" and dtop not in ("backend", "baselines"):
            why = "baselines/ imports only backend/ and baselines/"
        elif top == "backend" and dtop != "backend":
            why = "backend/ imports no study/, kernels/, baselines/ or tools/"
        elif top == "tools" and dtop == "study":
            why = "tools/ never import study/"
        elif top == "backend":
            if src in FORMAT | DATA:
                why = f"{src} imports nothing of ours"
            elif _in(src, COMPILER):
                if not (dst in FORMAT | DATA or _in(dst, COMPILER, COST_MODEL)):
                    why = "the compiler imports the program format, chip data and itself (not the simulator)"
                elif _in(src, LEVEL_1) and _in(dst, LEVEL_3):
                    why = "level 1 imports no level-3 module"
            elif _in(src, SIMULATOR) and not (dst in FORMAT | DATA or _in(dst, SIMULATOR)):
                why = "the simulator imports the program format, chip data and itself (not the compiler)"
            elif src in RUNTIME and not (dst in FORMAT | DATA or _in(dst, SIMULATOR)):
                why = "the driver imports the program format, chip data and the simulator"
            elif _in(src, INDUCTOR) and _in(dst, SIMULATOR):
                why = "the Inductor glue does not reach into the simulator"
        if why is None:
            private = [n for n in i.names if n.startswith("_") and not n.startswith("__")
                       and (src, dst, n) not in PRIVATE_EXCEPTIONS]
            if private and src.rpartition(".")[0] != dst.rpartition(".")[0]:
                why = f"private {', '.join(private)} imported from another folder"
        if why:
            bad.append(f"{i}: {why}")
    return bad


def test_imports_go_in_the_allowed_directions():
    bad = _violations(IMPORTS)
    assert not bad, "layering violations:\n" + "\n".join(bad)


@pytest.mark.parametrize("module,source,rule", [
    ("backend.sim.timing", "from kernels.gemm import matmul", "backend/ imports no"),
    ("backend.passes.schedule", "from backend.lowering import IMMEDIATE_USERS", "level 1"),
    ("backend.passes.schedule", "def f():\n    from backend.sim.isa import BINARY", "not the simulator"),
    ("backend.sim.executor", "from backend import lowering", "not the compiler"),
    ("backend.driver", "from backend.compiler import MTIABackend", "the driver imports"),
    ("baselines.expert.common", "from study.registry import WORKLOADS", "baselines/ imports only"),
    ("kernels.gemm", "from backend.language import mtia", "kernels/ imports only"),
    ("tools.bench_sim", "import study.registry", "tools/ never"),
    ("study.runner", "from backend.sim.memory import _descriptor_plan", "private _descriptor_plan"),
])
def test_a_violation_is_caught(module, source, rule):
    """The checker itself: each rule fails on a made-up import (the test above would too)."""
    bad = _violations(imports_of(module, source))
    assert len(bad) == 1 and rule in bad[0], bad


def _defined_names(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def test_names_are_imported_from_their_definition():
    """No re-exports: a name comes from the module that defines it (a package's __init__ may
    re-export its own API)."""
    bad = []
    for i in IMPORTS:
        if i.target not in MODULES or MODULES[i.target].name == "__init__.py":
            continue
        missing = [n for n in i.names if n != "*" and n not in _defined_names(i.target)]
        if missing:
            bad.append(f"{i}: {', '.join(missing)} not defined in {i.target}")
    assert not bad, "\n".join(bad)


def test_backend_has_no_import_cycles():
    graph: dict[str, set[str]] = {}
    for i in IMPORTS:
        if i.importer.startswith("backend") and i.target.startswith("backend") and i.target in MODULES \
                and MODULES[i.target].name != "__init__.py":
            graph.setdefault(i.importer, set()).add(i.target)
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles in backend/:\n" + "\n".join(cycles)


HELPERS = {"kernels": set(), "baselines.expert": {"common", "streaming"}, "study.workloads": {"tensors"}}


def _family_of(module: str, families: set[str]) -> str | None:
    """The family a module's name says: <family> or <family>_<part> (the longest match)."""
    name = module.rpartition(".")[2]
    found = [f for f in families if name == f or name.startswith(f + "_")]
    return max(found, key=len) if found else None


def test_family_names_match_across_kernels_baselines_and_workloads():
    import triton  # noqa: F401  - before backend.driver (Triton's backend discovery imports it)

    from study.measure import _py_function
    from study.registry import load_all
    workloads = load_all()
    families = {w.family for w in workloads.values()}
    bad = []
    for pkg, helpers in HELPERS.items():
        for m in MODULES:
            if m.rpartition(".")[0] == pkg and m.rpartition(".")[2] not in helpers | {"__init__"} \
                    and MODULES[m].name != "__init__.py" and _family_of(m, families) is None:
                bad.append(f"{m}: not named after a workload family ({sorted(families)})")
    for w in workloads.values():
        decl = _py_function(w.make_inputs).__module__
        if decl != f"study.workloads.{w.family}":
            bad.append(f"{w.name} (family {w.family}) is declared in {decl}")
        for impl, srcs in w.source.items():
            want = {"triton": "kernels", "triton_ext": "kernels", "expert": "baselines.expert"}.get(impl)
            for src in srcs if isinstance(srcs, tuple) else (srcs,):  # a tuple: one kernel per launch
                mod = _py_function(src).__module__
                if want and (mod.rpartition(".")[0] != want or _family_of(mod, {w.family}) != w.family):
                    bad.append(f"{w.name}/{impl}: source in {mod}, not {want}.{w.family}*")
    assert not bad, "\n".join(bad)


def test_the_compiler_may_read_the_cost_model():
    ok = "from backend.sim.cost import ChipModel\nfrom backend.program import Program"
    assert not _violations(imports_of("backend.passes.schedule", ok))
    bad = _violations(imports_of("backend.lowering", "from backend.sim.timing import price_launch"))
    assert len(bad) == 1 and "not the simulator" in bad[0], bad
