"""Reading actual usage and cost per day from a CSV or XLSX sheet, or from the API's list of days (docs/actuals.md).

Pure Python (no Django): bytes or plain values in, `ParsedDay`s out. All or nothing: every row and every cell is
checked, and any problem raises `ActualsInvalid` carrying every `CellError` found — each naming the sheet row (the
header is row 1; in the API, the position of the day in the list, from 1) and the column. Nothing is returned, so
nothing can be saved, unless every row is good.

The sheet is read by apps/common/sheets.py, as the quote import reads quotes: the first worksheet of an XLSX,
streamed and bounded, or a UTF-8 CSV; reading stops at the first row past `MAX_ROWS` data rows.

Errors are codes with parameters (`CellError.code`, `.params`) and an English sentence (`.message`); the Django side
(apps/actuals/messages.py) writes them in the reader's language.
"""

from __future__ import annotations

import csv
import datetime
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from apps.common import money, sheets

#: One row per day: at most this many days per upload (five and a half years), so an upload is always a bounded read.
MAX_ROWS = 2000
#: Empty rows tolerated among and after the data rows before the sheet is refused (a formatted tail, say).
MAX_EMPTY_ROWS = MAX_ROWS
#: Columns read from an XLSX (blank-headed helper columns are allowed, and ignored).
MAX_COLUMNS = 50
#: The most a workbook may hold once unpacked (a small upload can unpack to gigabytes).
MAX_UNPACKED_BYTES = 64 * 1024 * 1024
#: Every figure is stored with at most this many decimals and this many digits in all (the models' DecimalFields).
DECIMAL_PLACES = 6
MAX_DIGITS = 24


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # date, decimal, currency


#: The columns of the documented format, in the template's order; every one is required.
COLUMNS: tuple[Column, ...] = (
    Column("date", "date"),
    Column("gpu_hours", "decimal"),
    Column("outputs", "decimal"),
    Column("accepted_outputs", "decimal"),
    Column("spend", "decimal"),
    Column("currency", "currency"),
)
COLUMN_NAMES: tuple[str, ...] = tuple(column.name for column in COLUMNS)
COLUMN_BY_NAME: dict[str, Column] = {column.name: column for column in COLUMNS}


@dataclass(frozen=True)
class ParsedDay:
    """One day of actual usage and cost. `outputs` are the requests or outputs produced (the decision's unit),
    `accepted_outputs` those that passed acceptance; `spend` is everything paid for that day, in `currency`."""

    date: datetime.date
    gpu_hours: Decimal
    outputs: Decimal
    accepted_outputs: Decimal
    spend: Decimal
    currency: str


#: English sentences of the error codes (the Django side translates the same codes).
MESSAGES: dict[str, str] = {
    "required": "This column is required.",
    "missing_column": "This column is missing.",
    "unknown_column": "Unknown column (the format has: %(columns)s).",
    "duplicate_column": "This column appears twice.",
    "not_a_date": "“%(value)s” is not a date (2026-01-31).",
    "not_a_number": "“%(value)s” is not a number.",
    "negative": "A negative value is not allowed here.",
    "too_many_decimals": "At most %(places)s decimals.",
    "too_large": "The number is too large.",
    "not_a_currency": "“%(value)s” is not an ISO 4217 currency code.",
    "wrong_currency": "The decision's figures are in %(expected)s; this row is in %(value)s.",
    "duplicate_date": "%(value)s appears twice (first on row %(first)s): one row per day.",
    "future_date": "%(value)s is in the future.",
    "accepted_above_outputs": "Accepted outputs (%(accepted)s) are more than the outputs (%(outputs)s).",
    "nul": "This cell holds a NUL character (code 0); remove it.",
    "no_rows": "The sheet has no data rows.",
    "not_a_list": "Send a list of days.",
    "not_an_object": "Each day is an object with the format's columns.",
    "not_csv_or_xlsx": "Upload a .csv or .xlsx file.",
    "empty": "The file is empty.",
    "not_utf8": "The CSV file is not UTF-8 text.",
    "not_csv": "The file is not a readable CSV file.",
    "not_xlsx": "The file is not a readable XLSX workbook.",
    "no_worksheet": "The workbook has no worksheet.",
    "too_big_unpacked": "The workbook is over %(size)s MB once unpacked; split it.",
    "too_many_rows": "At most %(max)s days per upload.",
    "too_long": "The sheet goes on past row %(row)s (empty rows included); at most %(max)s days per upload.",
    "declares_too_many_rows": "The sheet declares %(rows)s rows; at most %(max)s days per upload.",
    "declares_too_many_columns": "The sheet declares %(columns)s columns; at most %(max)s are read.",
    "cells_past_columns": "Row %(row)s has cells past column %(max)s.",
}


@dataclass(frozen=True)
class CellError:
    """What is wrong, where: `row` is the sheet's row number (1 is the header; 0: the file as a whole), `column`
    the column's name ("" when the problem is not one column's)."""

    row: int
    column: str
    code: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return MESSAGES[self.code] % dict(self.params)

    def __str__(self) -> str:
        where = f"row {self.row}" + (f", column {self.column}" if self.column else "")
        return f"{where}: {self.message}"


class ActualsInvalid(Exception):
    """The upload is refused as a whole; `errors` lists every problem found, in row order."""

    def __init__(self, errors: Iterable[CellError]):
        self.errors = sorted(errors, key=lambda error: (error.row, COLUMN_NAMES.index(error.column)
                                                        if error.column in COLUMN_NAMES else -1))
        super().__init__("; ".join(str(error) for error in self.errors))


def _sheet_error(code: str, **params: Any) -> ActualsInvalid:
    return ActualsInvalid([CellError(0, "", code, params)])


def template_csv() -> str:
    """The header row of the format, and one example day (docs/actuals.md explains each column)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMN_NAMES)
    writer.writerow(["2026-01-01", "72", "1500000", "1480000", "252.00", "USD"])
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# Reading the sheet (streamed, bounded: apps/common/sheets.py)

LIMITS = sheets.SheetLimits(max_rows=MAX_ROWS, max_columns=MAX_COLUMNS, max_empty_rows=MAX_EMPTY_ROWS,
                            max_unpacked_bytes=MAX_UNPACKED_BYTES)


def read_sheet(name: str, content: bytes) -> tuple[list[str], list[tuple[int, dict]]]:
    """(headers, [(sheet row number, {header: cell})]) of the non-empty data rows of a .csv or .xlsx file."""
    try:
        return sheets.read_sheet(name, content, LIMITS)
    except sheets.SheetUnreadable as unreadable:
        raise _sheet_error(unreadable.code, **unreadable.params) from None


# ---------------------------------------------------------------------------------------------------------------
# Checking the cells

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class _Cell(Exception):
    def __init__(self, code: str, **params: Any):
        self.code = code
        self.params = params


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, float) else str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _date(value: Any) -> datetime.date:
    if isinstance(value, datetime.datetime):
        if value.time() != datetime.time(0):
            raise _Cell("not_a_date", value=_shown(value))
        return value.date()
    if isinstance(value, datetime.date):
        return value
    text = str(value).strip()
    if not _ISO_DATE.match(text):
        raise _Cell("not_a_date", value=_shown(value))
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise _Cell("not_a_date", value=_shown(value)) from None


def _decimal(value: Any) -> Decimal:
    if isinstance(value, bool):
        raise _Cell("not_a_number", value=_shown(value))
    if isinstance(value, float):
        # A spreadsheet number, read through its shortest decimal form (what the spreadsheet shows).
        value = repr(value)
    if isinstance(value, int | Decimal):
        number = Decimal(value)
    else:
        try:
            number = Decimal(str(value).strip().replace(" ", ""))
        except InvalidOperation:
            raise _Cell("not_a_number", value=_shown(value)) from None
    if not number.is_finite():
        raise _Cell("not_a_number", value=_shown(value))
    if number < 0:
        raise _Cell("negative")
    number = number.normalize() if number != 0 else Decimal(0)
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -DECIMAL_PLACES:
        raise _Cell("too_many_decimals", places=DECIMAL_PLACES)
    if number >= Decimal(10) ** (MAX_DIGITS - DECIMAL_PLACES):
        raise _Cell("too_large")
    return number


def _currency(value: Any, expected: str | None) -> str:
    code = str(value).strip().upper()
    if code not in money.MINOR_UNITS:
        raise _Cell("not_a_currency", value=_shown(value))
    if expected is not None and code != expected:
        raise _Cell("wrong_currency", value=code, expected=expected)
    return code


def _cell(column: Column, value: Any, currency: str | None) -> Any:
    if isinstance(value, str):
        if "\x00" in value:
            raise _Cell("nul")
        value = value.strip()
    if value is None or value == "":
        raise _Cell("required")
    if column.kind == "date":
        return _date(value)
    if column.kind == "decimal":
        return _decimal(value)
    return _currency(value, currency)


def check_headers(headers: Iterable[str]) -> list[CellError]:
    """Problems of the header row (row 1): unknown, repeated and missing columns."""
    errors = []
    seen: set[str] = set()
    for header in headers:
        if not header:
            continue
        if header not in COLUMN_BY_NAME:
            errors.append(CellError(1, header, "unknown_column", {"columns": ", ".join(COLUMN_NAMES)}))
        elif header in seen:
            errors.append(CellError(1, header, "duplicate_column"))
        seen.add(header)
    errors.extend(CellError(1, name, "missing_column") for name in COLUMN_NAMES if name not in seen)
    return errors


def parse_rows(
    rows: Iterable[tuple[int, Mapping[str, Any]]], *, currency: str | None = None, today: datetime.date | None = None
) -> list[ParsedDay]:
    """Every row checked; the days in date order, or ActualsInvalid naming each bad row and column.

    `currency`: the currency every row must be in (the decision's); `today`: no day may come after it."""
    errors: list[CellError] = []
    days: list[ParsedDay] = []
    first_row_of: dict[datetime.date, int] = {}
    count = 0
    for number, cells in rows:
        count += 1
        values: dict[str, Any] = {}
        for column in COLUMNS:
            try:
                values[column.name] = _cell(column, cells.get(column.name), currency)
            except _Cell as problem:
                errors.append(CellError(number, column.name, problem.code, problem.params))
        day = values.get("date")
        if day is not None:
            if day in first_row_of:
                errors.append(CellError(number, "date", "duplicate_date",
                                        {"value": day.isoformat(), "first": first_row_of[day]}))
            else:
                first_row_of[day] = number
            if today is not None and day > today:
                errors.append(CellError(number, "date", "future_date", {"value": day.isoformat()}))
        outputs, accepted = values.get("outputs"), values.get("accepted_outputs")
        if outputs is not None and accepted is not None and accepted > outputs:
            errors.append(CellError(number, "accepted_outputs", "accepted_above_outputs",
                                    {"accepted": str(accepted), "outputs": str(outputs)}))
        if len(values) == len(COLUMNS):
            days.append(ParsedDay(**values))
    if count == 0:
        errors.append(CellError(2, "", "no_rows"))
    if errors:
        raise ActualsInvalid(errors)
    return sorted(days, key=lambda item: item.date)


def parse_sheet(
    name: str, content: bytes, *, currency: str | None = None, today: datetime.date | None = None
) -> list[ParsedDay]:
    """The days of a .csv or .xlsx file in the documented format, or ActualsInvalid."""
    headers, rows = read_sheet(name, content)
    header_errors = check_headers(headers)
    if header_errors:
        raise ActualsInvalid(header_errors)
    return parse_rows(rows, currency=currency, today=today)


def parse_items(
    items: Any, *, currency: str | None = None, today: datetime.date | None = None
) -> list[ParsedDay]:
    """The days of the API's JSON list (each an object with the format's columns); row N is the N-th item."""
    if not isinstance(items, list):
        raise _sheet_error("not_a_list")
    if len(items) > MAX_ROWS:
        raise _sheet_error("too_many_rows", max=MAX_ROWS)
    errors: list[CellError] = []
    rows = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            errors.append(CellError(number, "", "not_an_object"))
            continue
        errors.extend(CellError(number, str(key), "unknown_column", {"columns": ", ".join(COLUMN_NAMES)})
                      for key in item if key not in COLUMN_BY_NAME)
        rows.append((number, item))
    try:
        days = parse_rows(rows, currency=currency, today=today) if rows or not errors else []
    except ActualsInvalid as invalid:
        errors.extend(error for error in invalid.errors if not (error.code == "no_rows" and errors))
    if errors:
        raise ActualsInvalid(errors)
    return days
