"""The notebook sources are jupytext percent-format scripts, and each has its executed copy.

Cheap checks only: nothing here executes a notebook (`make reproduce` does)."""
from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.formats import guess_format

from study.reproduce import NOTEBOOK_DIR, executed_path, notebook_sources

SOURCES = notebook_sources()


def test_every_table_and_figure_has_a_source():
    ids = sorted(p.stem.split("_", 1)[0] for p in SOURCES)
    assert ids == sorted([f"F{i}" for i in range(1, 11)] + [f"T{i}" for i in range(1, 5)])


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_source_is_jupytext_percent(source: Path):
    text = source.read_text()
    assert guess_format(text, ".py")[0] == "percent", f"{source.name}: not in jupytext percent format"
    nb = jupytext.reads(text, fmt="py:percent")
    assert nb.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    first, code = nb.cells[0], [c for c in nb.cells if c.cell_type == "code"]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {source.stem.split('_', 1)[0]}:"), \
        f"{source.name}: the first cell must be the markdown that says what the notebook shows"
    assert code, f"{source.name}: no code cells"
    for i, cell in enumerate(code):
        try:
            ast.parse(cell.source)
        except SyntaxError as e:
            pytest.fail(f"{source.name}, code cell {i}: {e}")
    # the script the notebook is made from is the script `python notebooks/<name>.py` runs
    assert jupytext.writes(nb, fmt="py:percent") == text, f"{source.name}: does not round-trip through jupytext"


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_executed_copy_exists(source: Path):
    path = executed_path(source)
    assert path.exists(), f"{path.relative_to(NOTEBOOK_DIR.parent)} is missing: run make reproduce"
    nb = nbformat.read(path, as_version=4)
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path.name} has no outputs"


def test_no_executed_copy_without_a_source():
    stems = {p.stem for p in SOURCES}
    orphans = [p.name for p in (NOTEBOOK_DIR / "executed").glob("*.ipynb") if p.stem not in stems]
    assert not orphans, f"executed notebooks without a source in notebooks/: {orphans}"
    assert not list(NOTEBOOK_DIR.glob("*.ipynb")), "notebooks/*.ipynb: the sources are the .py files"


def test_executing_a_notebook_leaves_no_kernel_sockets_behind(tmp_path, monkeypatch):
    """The kernel's local sockets live in a temporary directory, not in the working directory
    (the repository root under `make reproduce`)."""
    from study.reproduce import execute_notebook
    src = tmp_path / "nb" / "F0_tiny.py"
    src.parent.mkdir()
    src.write_text("# %% [markdown]\n# F0: tiny\n\n# %%\nprint(6 * 7)\n")
    monkeypatch.chdir(tmp_path)
    out = execute_notebook(src, tmp_path / "results")
    nb = nbformat.read(out, as_version=4)
    assert nb.cells[1].outputs[0]["text"].strip() == "42"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb"]


def test_background_models_report_their_rows_output_and_run_time(tmp_path, capsys):
    """reproduce's background step (PaperModels): output to files, rows counted, its own wall time."""
    import sys

    from study.reproduce import PaperModels
    out = tmp_path / "raw" / "model_coverage_paper.csv"
    out.parent.mkdir()
    script = (f"import time; time.sleep(1.0); open({str(out)!r}, 'w').write('model,us\\ndecoder,1\\nmoe,2\\n'); "
              "print('# decoder: 1 us'); print('table')")
    m = PaperModels(tmp_path, cmd=[sys.executable, "-c", script])
    assert m.wait() == 2 and 1.0 <= m.wall_s < 30
    shown = capsys.readouterr().out
    assert "  decoder: 1 us" in shown and "table" not in shown
    failing = PaperModels(tmp_path / "none", cmd=[sys.executable, "-c", "import sys; sys.exit('no model ran')"])
    assert failing.wait() == -1 and "no model ran" in capsys.readouterr().err
