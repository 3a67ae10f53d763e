from __future__ import annotations

import pytest

from study.schema import COLUMNS, KEY_COLUMNS, STUDY_COLUMNS, SchemaError, check_header, parse_row, validate_row


def _row(**kw):
    base = dict(run_id="r", git_sha="abc", suite="quick", workload="w", impl="triton", shape="n4", dtype="f32",
                chip="mtia2i", correct=True, device="mtia-sim", cycles=10, time_us=0.5)
    base.update(kw)
    return base


def test_study_columns_come_first_in_study_md_order():
    assert COLUMNS[:len(STUDY_COLUMNS)] == STUDY_COLUMNS
    assert STUDY_COLUMNS[0] == "run_id" and STUDY_COLUMNS[-1] == "notes" and len(STUDY_COLUMNS) == 23
    assert set(KEY_COLUMNS) <= set(COLUMNS)


def test_validate_fills_defaults_and_orders():
    r = validate_row(_row())
    assert list(r) == list(COLUMNS) and r["options"] == "default" and r["config"] == ""


@pytest.mark.parametrize("bad", [dict(workload=""), dict(cycles="many"), dict(bogus=1), dict(correct=None)])
def test_validate_rejects(bad):
    with pytest.raises(SchemaError):
        validate_row(_row(**bad))


def test_parse_row_types_and_field_count():
    hdr = ["cycles", "time_us", "correct", "notes"]
    assert parse_row(hdr, ["12", "0.25", "False", ""]) == {"cycles": 12, "time_us": 0.25, "correct": False, "notes": None}
    with pytest.raises(SchemaError):
        parse_row(hdr, ["12", "0.25", "False"])
    with pytest.raises(SchemaError):
        parse_row(hdr, ["12", "0.25", "maybe", ""])


def test_header_must_hold_study_columns():
    check_header(list(COLUMNS))
    with pytest.raises(SchemaError):
        check_header([c for c in COLUMNS if c != "cycles"])
