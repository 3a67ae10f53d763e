"""Reading and writing results/raw/*.csv: atomic appends, strict reads.

One writer (the runner's parent process) appends each row as one complete line with a single
write, then flush and fsync, under an advisory lock, so an interrupted sweep leaves at most
one partial last line and two concurrent sweeps cannot interleave. Reading is strict: a
partial or malformed line is an error naming the file and the line, never skipped, because a
silently dropped row would bias a geometric mean without anyone noticing.
"""
from __future__ import annotations

import csv
import fcntl
import io
import os
from pathlib import Path
from typing import Any, Iterable

from study.schema import COLUMNS, SchemaError, check_header, format_value, parse_row, validate_row

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


class CorruptResultsError(ValueError):
    def __init__(self, path: Path, line: int, why: str):
        super().__init__(f"{path}:{line}: {why}")
        self.path, self.line, self.why = path, line, why


def raw_dir(results: Path | None = None) -> Path:
    return (results or RESULTS_DIR) / "raw"


def _csv_line(values: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(list(values))
    return buf.getvalue()


def _sanitise(v: Any) -> Any:
    # a newline inside a field would make line numbers in error reports lie
    return v.replace("\r", " ").replace("\n", " ") if isinstance(v, str) else v


def append_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append complete rows; writes the header first when the file is new or empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(_csv_line(format_value(c, _sanitise(r[c])) for c in COLUMNS)
                   for r in (validate_row(r) for r in rows))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size == 0:
            text = _csv_line(COLUMNS) + text
        else:
            _check_tail(path, fd, size)
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _check_tail(path: Path, fd: int, size: int) -> None:
    """Refuse to append after a partial line: the new row would be glued onto it."""
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) != b"\n":
            n = sum(1 for _ in open(path, "rb"))
            raise CorruptResultsError(path, n, "partial last line (an interrupted write?); "
                                      "inspect it, then rerun with --repair to drop it")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of one raw file, typed; raises CorruptResultsError on anything malformed."""
    path = Path(path)
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
    lines = lines[:-1]
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
        rows.append(row)
    return rows


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


# Tables in results/raw with schemas of their own (T1 microbenchmarks, T4 OpInfo coverage,
# the simulator's host speed from `python -m backend.sim.bench --csv`), read by their own
# notebooks or by people; every other raw file must follow the measurement schema.
OTHER_TABLES = ("microbench_*.csv", "opinfo_*.csv", "model_coverage*.csv", "sim_speed*.csv")


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
