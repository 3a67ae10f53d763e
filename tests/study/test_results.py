from __future__ import annotations

import pytest

from study.results import CorruptResultsError, append_rows, read_rows, repair_partial_tail
from study.schema import COLUMNS


def _row(i: int) -> dict:
    return dict(run_id="r", git_sha="abc", suite="quick", workload="w", impl="triton", shape=f"n{i}", dtype="f32",
                chip="mtia2i", correct=True, device="mtia-sim", cycles=i, time_us=i / 1.35e3, notes="a, \"quoted\"\nnote")


def test_round_trip_is_exact(tmp_path):
    p = tmp_path / "raw" / "s.csv"
    append_rows(p, [_row(1), _row(2)])
    append_rows(p, [_row(3)])
    rows = read_rows(p)
    assert [r["cycles"] for r in rows] == [1, 2, 3]
    assert rows[0]["time_us"] == 1 / 1.35e3  # floats survive exactly
    assert rows[0]["notes"] == 'a, "quoted" note'  # newline flattened: line numbers stay true
    assert p.read_text().splitlines()[0] == ",".join(COLUMNS)


def test_partial_last_line_is_reported_with_line_and_refused(tmp_path):
    p = tmp_path / "s.csv"
    append_rows(p, [_row(1), _row(2)])
    with p.open("a") as f:
        f.write("r,abc,quick,w,triton,n3,f3")  # a write cut short
    with pytest.raises(CorruptResultsError) as e:
        read_rows(p)
    assert e.value.line == 4 and str(p) in str(e.value)
    with pytest.raises(CorruptResultsError):
        append_rows(p, [_row(3)])  # never glue a row onto a torn one
    assert repair_partial_tail(p) == 4
    append_rows(p, [_row(3)])
    assert [r["cycles"] for r in read_rows(p)] == [1, 2, 3]


@pytest.mark.parametrize("damage,line", [
    (lambda t: t.replace(",True,", ",Yes,", 1), 2),
    (lambda t: t + "\n", 4),
    (lambda t: "\n".join(t.split("\n")[:2] + ["x,y"] + t.split("\n")[2:]), 3),
    (lambda t: t.replace("cycles", "cycle", 1), 1),
])
def test_malformed_lines_are_reported(tmp_path, damage, line):
    p = tmp_path / "s.csv"
    append_rows(p, [_row(1), _row(2)])
    p.write_text(damage(p.read_text()))
    with pytest.raises(CorruptResultsError) as e:
        read_rows(p)
    assert e.value.line == line


def test_rows_without_a_regime_read_as_cold_and_the_file_takes_new_rows(tmp_path):
    old = [c for c in COLUMNS if c != "regime"]
    assert COLUMNS[-1] == "regime"  # added at the end: an older header is a prefix
    p = tmp_path / "old.csv"
    r = dict(_row(0), notes="")
    p.write_text(",".join(old) + "\n" + ",".join("" if r.get(c) is None else str(r[c]) for c in old) + "\n")
    assert read_rows(p)[0]["regime"] == "cold"
    append_rows(p, [dict(_row(1), regime="resident")])
    rows = read_rows(p)
    assert [x["regime"] for x in rows] == ["cold", "resident"]
    assert p.read_text().splitlines()[0].split(",") == list(COLUMNS)


# ----------------------------------------------------------------------------- tables of their own

from study.results import Table, append_table, read_table, write_table, written_keys  # noqa: E402

T = Table("t", ("run", "name", "value", "ok"), key=("run", "name"))


def test_table_rows_append_resume_and_read_strictly(tmp_path):
    p = tmp_path / "t.csv"
    append_table(p, T, [{"run": "a", "name": "x", "value": 0.1, "ok": True}])
    append_table(p, T, [{"run": "a", "name": "y", "value": None, "ok": False}])
    assert p.read_text() == "run,name,value,ok\na,x,0.1,True\na,y,,False\n"
    assert written_keys(p, T) == {("a", "x"), ("a", "y")} and written_keys(tmp_path / "none.csv", T) == set()
    assert read_table(p, T)[1] == {"run": "a", "name": "y", "value": "", "ok": "False"}
    with pytest.raises(Exception, match="not in the table"):
        append_table(p, T, [{"run": "a", "other": 1}])
    with p.open("a") as f:
        f.write("a,z,1")  # torn
    with pytest.raises(CorruptResultsError):
        read_table(p, T)
    with pytest.raises(CorruptResultsError):
        append_table(p, T, [{"run": "a", "name": "w"}])


def test_table_float_format_crlf_files_and_older_headers(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"run,name,value\r\na,x,1\r\n")  # csv's default dialect, before the column ok existed
    append_table(p, Table("t", T.columns, T.key, float_format=".3g"), [{"run": "b", "name": "x", "value": 1 / 3}])
    assert p.read_bytes() == b"run,name,value,ok\r\na,x,1,\r\nb,x,0.333,\r\n"  # one line ending, one header
    assert [r["value"] for r in read_table(p, T)] == ["1", "0.333"]
    write_table(p, T, [{"run": "c"}])
    assert p.read_text() == "run,name,value,ok\nc,,,\n"


def test_measurement_keys_by_chosen_columns(tmp_path):
    p = tmp_path / "s.csv"
    append_rows(p, [_row(1), _row(2)])
    assert written_keys(p, key=("workload", "shape")) == {("w", "n1"), ("w", "n2")}
    assert len(written_keys(p)) == 2
