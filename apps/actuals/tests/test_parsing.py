"""The actuals sheet and the API's list of days: all or nothing, every error named by row and column (pure module,
no database)."""

from __future__ import annotations

import dataclasses
import datetime
import io
from decimal import Decimal

import openpyxl
import pytest

from apps.actuals import parsing
from apps.actuals.parsing import ActualsInvalid, parse_items, parse_sheet

HEADER = "date,gpu_hours,outputs,accepted_outputs,spend,currency\n"


def _csv(*rows: str) -> bytes:
    return (HEADER + "".join(row + "\n" for row in rows)).encode("utf-8")


def _where(invalid: ActualsInvalid) -> list[tuple[int, str, str]]:
    return [(error.row, error.column, error.code) for error in invalid.errors]


def test_a_good_csv_gives_every_day_exact_and_in_date_order():
    days = parse_sheet("january.csv", _csv(
        "2026-01-02,48,1010000,1000000,439.375,USD",
        "2026-01-01,48,1000000,1000000,351.50,USD",
    ), currency="USD")
    assert [day.date for day in days] == [datetime.date(2026, 1, 1), datetime.date(2026, 1, 2)]
    assert days[1].spend == Decimal("439.375") and isinstance(days[1].spend, Decimal)
    assert days[0].accepted_outputs == Decimal(1000000)


def test_one_bad_row_refuses_the_whole_sheet_and_names_its_row_and_column():
    """Row 3 (the second day; the header is row 1) has a spend that is not a number: nothing is returned."""
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet("january.csv", _csv(
            "2026-01-01,48,1000000,1000000,351.50,USD",
            "2026-01-02,48,1010000,1000000,abc,USD",
            "2026-01-03,48,1000000,1000000,351.50,USD",
        ), currency="USD")
    assert _where(caught.value) == [(3, "spend", "not_a_number")]
    assert "row 3, column spend" in str(caught.value)


def test_every_kind_of_bad_cell_is_reported_at_once():
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet("bad.csv", _csv(
            "2026-02-30,48,10,10,1,USD",       # row 2: no 30 February
            "2026-01-02,-1,10,11,1,EUR",       # row 3: negative hours, accepted > outputs, wrong currency
            "2026-01-02,1,10,10,0.0000001,XYZ",  # row 4: repeated date, 7 decimals, unknown currency
            "2026-01-05,,10,10,1,USD",         # row 5: a required cell left empty
        ), currency="USD", today=datetime.date(2026, 1, 4))
    assert _where(caught.value) == [
        (2, "date", "not_a_date"),
        (3, "gpu_hours", "negative"),
        (3, "accepted_outputs", "accepted_above_outputs"),
        (3, "currency", "wrong_currency"),
        (4, "date", "duplicate_date"),
        (4, "spend", "too_many_decimals"),
        (4, "currency", "not_a_currency"),
        (5, "date", "future_date"),
        (5, "gpu_hours", "required"),
    ]
    assert caught.value.errors[4].params == {"value": "2026-01-02", "first": 3}


def test_the_header_must_hold_exactly_the_formats_columns():
    content = b"date,gpu_hours,outputs,accepted,spend,currency,spend\n2026-01-01,1,1,1,1,USD,1\n"
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet("x.csv", content)
    assert _where(caught.value) == [
        (1, "accepted", "unknown_column"), (1, "accepted_outputs", "missing_column"), (1, "spend", "duplicate_column"),
    ]


def test_an_xlsx_is_read_like_the_csv_with_spreadsheet_dates_and_numbers():
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(list(parsing.COLUMN_NAMES))
    sheet.append([datetime.datetime(2026, 1, 1), 48, 1000000, 999999, 351.5, "USD"])
    sheet.append([datetime.date(2026, 1, 2), 48.25, 1000000, 1000000, "oops", "USD"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet("january.xlsx", buffer.getvalue(), currency="USD")
    assert _where(caught.value) == [(3, "spend", "not_a_number")]
    sheet["E3"] = 0.1  # the float 0.1 is read as its shortest form, exactly 0.1
    buffer = io.BytesIO()
    workbook.save(buffer)
    days = parse_sheet("january.xlsx", buffer.getvalue(), currency="USD")
    assert [(day.date, day.gpu_hours, day.spend) for day in days] == [
        (datetime.date(2026, 1, 1), Decimal(48), Decimal("351.5")),
        (datetime.date(2026, 1, 2), Decimal("48.25"), Decimal("0.1")),
    ]


def test_the_row_limit_stops_the_read(monkeypatch):
    monkeypatch.setattr(parsing, "LIMITS", dataclasses.replace(parsing.LIMITS, max_rows=3, max_empty_rows=3))
    rows = [f"2026-01-0{day},1,1,1,1,USD" for day in range(1, 5)]
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet("long.csv", _csv(*rows))
    assert _where(caught.value) == [(0, "", "too_many_rows")]
    workbook = openpyxl.Workbook()
    for number in range(1, 9):
        workbook.active.append([f"r{number}"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet("long.xlsx", buffer.getvalue())
    assert _where(caught.value) == [(0, "", "declares_too_many_rows")]


@pytest.mark.parametrize(("name", "content", "code"), [
    ("x.txt", b"", "not_csv_or_xlsx"),
    ("x.csv", b"", "empty"),
    ("x.csv", b"\xff\xfe", "not_utf8"),
    ("x.xlsx", b"not a zip", "not_xlsx"),
    ("x.csv", HEADER.encode(), "no_rows"),
])
def test_an_unreadable_file_is_refused_as_a_whole(name, content, code):
    with pytest.raises(ActualsInvalid) as caught:
        parse_sheet(name, content)
    assert [error.code for error in caught.value.errors] == [code]


def test_the_api_list_numbers_its_rows_from_one_and_reads_json_numbers():
    good = {"date": "2026-01-01", "gpu_hours": "48", "outputs": 1000, "accepted_outputs": 990, "spend": 84.1,
            "currency": "USD"}
    days = parse_items([good], currency="USD")
    assert days[0].spend == Decimal("84.1") and days[0].outputs == Decimal(1000)
    with pytest.raises(ActualsInvalid) as caught:
        parse_items([good, {**good, "date": "2026-01-02", "spend": "x", "extra": 1}, "nope"], currency="USD")
    # In row order; within a row, a column outside the format first, then the format's columns in their order.
    assert _where(caught.value) == [(2, "extra", "unknown_column"), (2, "spend", "not_a_number"),
                                    (3, "", "not_an_object")]
    with pytest.raises(ActualsInvalid) as caught:
        parse_items({"days": []})
    assert _where(caught.value) == [(0, "", "not_a_list")]


def test_the_template_is_a_valid_upload():
    days = parse_sheet("template.csv", parsing.template_csv().encode("utf-8"), currency="USD")
    assert len(days) == 1
