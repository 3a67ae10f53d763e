"""Reading and writing results/raw/*.csv: atomic appends, strict reads.

One writer (the parent process of a sweep) appends each row as one complete line with a single
write, then flush and fsync, under an advisory lock, so an interrupted sweep leaves at most
one partial last line and two concurrent sweeps cannot interleave. Reading is strict: a
partial or malformed line is an error naming the file and the line, never skipped, because a
silently dropped row would bias a geometric mean without anyone noticing.

Two kinds of file go through here. Measurement files follow the schema of study/schema.py
(`append_rows`, `read_rows`; keys `row_key`). Tables with columns of their own (T3's model
coverage, T4's OpInfo coverage, the H200 microbenchmarks) are declared as a `Table` and use
`append_table` / `write_table` / `read_table`: the same atomic, locked, checked writes, values
as text. Either kind resumes through `written_keys`.
"""
from __future__ import annotations

import csv
import fcntl
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from study.schema import (COLUMNS, DEFAULT_REGIME, SchemaError, check_header, format_value, parse_row, row_key,
                          validate_row)

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


class CorruptResultsError(ValueError):
    def __init__(self, path: Path, line: int, why: str):
        super().__init__(f"{path}:{line}: {why}")
        self.path, self.line, self.why = path, line, why


def raw_dir(results: Path | None = None) -> Path:
    return (results or RESULTS_DIR) / "raw"


def _csv_line(values: Iterable[str], eol: str = "\n") -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=eol).writerow(list(values))
    return buf.getvalue()


def _sanitise(v: Any) -> Any:
    # a newline inside a field would make line numbers in error reports lie
    return v.replace("\r", " ").replace("\n", " ") if isinstance(v, str) else v


def _append(path: Path, columns: Sequence[str], records: list[list[str]]) -> None:
    """Append complete lines of `columns` fields under the lock; the header first when the
    file is new or empty. An existing file's header may be a prefix of `columns` (a file written
    before columns were added at the end): it is upgraded first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        eol = "\n"
        if size:
            _check_tail(path, fd, size)
            if _upgrade_header(path, columns):
                os.close(fd)  # the file was replaced: append to the new one (still under our lock)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                fcntl.flock(fd, fcntl.LOCK_EX)
            eol = _line_end(path)
        text = "".join(_csv_line(r, eol) for r in records)
        if not size:
            text = _csv_line(columns) + text
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def append_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append complete measurement rows; writes the header first when the file is new or empty."""
    _append(path, COLUMNS, [[format_value(c, _sanitise(r[c])) for c in COLUMNS]
                            for r in (validate_row(r) for r in rows)])


def _line_end(path: Path) -> str:
    """The line ending the file's header uses (a file written by csv's default dialect has
    CRLF): appended lines follow it, so a file never mixes the two."""
    with open(path, "rb") as f:
        return "\r\n" if f.readline().endswith(b"\r\n") else "\n"


def _upgrade_header(path: Path, columns: Sequence[str] = COLUMNS) -> bool:
    """A file written before its columns gained some (at their end) gets the current header,
    its rows the new columns empty (read as their defaults), so rows of both ages stay in one
    file. True when the file was rewritten (atomically: a temporary file renamed over it)."""
    with open(path, encoding="utf-8", newline="") as f:
        first = f.readline()
        header = next(csv.reader([first.rstrip("\r\n")]))
        if header == list(columns):
            return False
        if header != list(columns[:len(header)]):
            raise CorruptResultsError(path, 1, f"header {header} is not a prefix of the columns {list(columns)}; "
                                      "cannot append rows to it")
        eol = "\r\n" if first.endswith("\r\n") else "\n"
        pad = "," * (len(columns) - len(header))
        body = [line.rstrip("\r\n") + pad + eol for line in f]
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(_csv_line(columns, eol) + "".join(body), encoding="utf-8", newline="")
    os.replace(tmp, path)
    return True


def _check_tail(path: Path, fd: int, size: int) -> None:
    """Refuse to append after a partial line: the new row would be glued onto it."""
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) != b"\n":
            n = sum(1 for _ in open(path, "rb"))
            raise CorruptResultsError(path, n, "partial last line (an interrupted write?); "
                                      "inspect it, then rerun with --repair to drop it")


def _lines(path: Path) -> list[str]:
    """The file's complete lines without their endings (LF or CRLF); strict about the rest."""
    data = path.read_bytes()
    if not data:
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise CorruptResultsError(path, line, "not UTF-8 text") from None
    lines = text.split("\n")
    if lines[-1] != "":
        raise CorruptResultsError(path, len(lines), "partial last line (no newline: an interrupted write?)")
    return [ln.removesuffix("\r") for ln in lines[:-1]]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of one raw file, typed; raises CorruptResultsError on anything malformed."""
    path = Path(path)
    lines = _lines(path)
    if not lines:
        return []
    try:
        header = next(csv.reader([lines[0]]))
        check_header(header)
    except (SchemaError, StopIteration) as e:
        raise CorruptResultsError(path, 1, f"bad header: {e}") from None
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        if line == "":
            raise CorruptResultsError(path, i, "empty line")
        try:
            fields = next(csv.reader([line]))
            row = parse_row(header, fields)
        except (SchemaError, csv.Error) as e:
            raise CorruptResultsError(path, i, str(e)) from None
        for c in COLUMNS:
            row.setdefault(c, None)
        if row["regime"] is None:  # written before the regime column: priced cold
            row["regime"] = DEFAULT_REGIME
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- tables of their own

@dataclass(frozen=True)
class Table:
    """A raw file whose rows are not measurements of the schema: its columns, in order, and the
    columns that identify a row (a resumed run skips keys already written). Values are written
    as text: None as empty, floats with repr (or `float_format`), booleans as True/False."""
    name: str                     # results/raw/<name>.csv by default
    columns: tuple[str, ...]
    key: tuple[str, ...]
    float_format: str | None = None

    def path(self, results: Path | None = None) -> Path:
        return raw_dir(results) / f"{self.name}.csv"

    def format(self, col: str, v: Any) -> str:
        if isinstance(v, float) and not isinstance(v, bool) and self.float_format is not None:
            return format(v, self.float_format)
        return format_value(col, _sanitise(v))

    def record(self, row: dict[str, Any]) -> list[str]:
        unknown = set(row) - set(self.columns)
        if unknown:
            raise SchemaError(f"{self.name}: row has columns not in the table: {sorted(unknown)}")
        return [self.format(c, row.get(c)) for c in self.columns]


def append_table(path: Path, table: Table, rows: list[dict[str, Any]]) -> None:
    """Append complete rows of `table` (missing columns empty), atomically as append_rows does."""
    _append(Path(path), table.columns, [table.record(r) for r in rows])


def write_table(path: Path, table: Table, rows: list[dict[str, Any]]) -> None:
    """Replace the file with these rows (a snapshot measured as a whole), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(_csv_line(table.columns) + "".join(_csv_line(table.record(r)) for r in rows), encoding="utf-8")
    os.replace(tmp, path)


def read_table(path: Path, table: Table) -> list[dict[str, str]]:
    """Every row of a table file, values as text; a header that is a prefix of the table's
    columns reads the missing ones as empty. Strict like read_rows."""
    path = Path(path)
    lines = _lines(path)
    if not lines:
        return []
    header = next(csv.reader([lines[0]]))
    if header != list(table.columns[:len(header)]):
        raise CorruptResultsError(path, 1, f"bad header: {header} is not a prefix of {table.name}'s columns")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        try:
            fields = next(csv.reader([line])) if line else []
        except csv.Error as e:
            raise CorruptResultsError(path, i, str(e)) from None
        if len(fields) != len(header):
            raise CorruptResultsError(path, i, f"{len(fields)} fields, the header has {len(header)}")
        rows.append(dict(zip(table.columns, fields + [""] * (len(table.columns) - len(header)))))
    return rows


def written_keys(path: Path, table: Table | None = None, key: Sequence[str] | None = None) -> set[tuple]:
    """The keys of the rows already in `path` (none when it does not exist), as text: a table's
    key columns, or for a measurement file the `key` columns given, by default its row_key."""
    path = Path(path)
    if not path.exists():
        return set()
    if table is not None:
        return {tuple(r[c] for c in (key or table.key)) for r in read_table(path, table)}
    rows = read_rows(path)
    if key is None:
        return {row_key(r) for r in rows}
    return {tuple("" if r[c] is None else str(r[c]) for c in key) for r in rows}


def repair_partial_tail(path: Path) -> int | None:
    """Drop a partial last line left by an interrupted write; returns its line number, if any."""
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return None
    cut = data.rfind(b"\n") + 1
    line = data[:cut].count(b"\n") + 1
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data[:cut])
    os.replace(tmp, path)
    return line


# Tables in results/raw with schemas of their own (T1 microbenchmarks, T4 OpInfo coverage, F10
# simulator speed and reproduce wall times, the H200 microbenchmarks behind the h200 config),
# read by their own notebooks; every other raw file must follow the measurement schema.
OTHER_TABLES = ("microbench_*.csv", "opinfo_*.csv", "model_coverage*.csv", "reproduce_wall.csv", "sim_speed*.csv",
                "gpu_microbench*.csv")


def raw_files(results: Path | None = None) -> list[Path]:
    """The measurement files (one row per measurement) in results/raw."""
    return sorted(p for p in raw_dir(results).glob("*.csv") if not any(p.match(g) for g in OTHER_TABLES))


def load_raw(results: Path | None = None, suites: Iterable[str] | None = None) -> "Any":
    """All raw rows as one pandas DataFrame (what the notebooks read); strict like read_rows."""
    import pandas as pd
    files = raw_files(results)
    if suites is not None:
        wanted = set(suites)
        files = [f for f in files if f.stem in wanted]
    if not files:
        raise FileNotFoundError(f"no raw results in {raw_dir(results)}"
                                + (f" for suites {sorted(suites)}" if suites is not None else ""))
    rows = [r for f in files for r in read_rows(f)]
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    return df
