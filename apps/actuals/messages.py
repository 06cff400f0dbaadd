"""The parser's error codes (apps/actuals/parsing.py, pure) in the reader's language."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from apps.actuals.parsing import MESSAGES, CellError

#: The same sentences as parsing.MESSAGES, translatable (tests check that both name the same codes).
TEXTS = {
    "required": _("This column is required."),
    "missing_column": _("This column is missing."),
    "unknown_column": _("Unknown column (the format has: %(columns)s)."),
    "duplicate_column": _("This column appears twice."),
    "not_a_date": _("“%(value)s” is not a date (2026-01-31)."),
    "not_a_number": _("“%(value)s” is not a number."),
    "negative": _("A negative value is not allowed here."),
    "too_many_decimals": _("At most %(places)s decimals."),
    "too_large": _("The number is too large."),
    "not_a_currency": _("“%(value)s” is not an ISO 4217 currency code."),
    "wrong_currency": _("The decision's figures are in %(expected)s; this row is in %(value)s."),
    "duplicate_date": _("%(value)s appears twice (first on row %(first)s): one row per day."),
    "future_date": _("%(value)s is in the future."),
    "accepted_above_outputs": _("Accepted outputs (%(accepted)s) are more than the outputs (%(outputs)s)."),
    "nul": _("This cell holds a NUL character (code 0); remove it."),
    "no_rows": _("The sheet has no data rows."),
    "not_a_list": _("Send a list of days."),
    "not_an_object": _("Each day is an object with the format's columns."),
    "not_csv_or_xlsx": _("Upload a .csv or .xlsx file."),
    "empty": _("The file is empty."),
    "not_utf8": _("The CSV file is not UTF-8 text."),
    "not_csv": _("The file is not a readable CSV file."),
    "not_xlsx": _("The file is not a readable XLSX workbook."),
    "no_worksheet": _("The workbook has no worksheet."),
    "too_big_unpacked": _("The workbook is over %(size)s MB once unpacked; split it."),
    "too_many_rows": _("At most %(max)s days per upload."),
    "too_long": _("The sheet goes on past row %(row)s (empty rows included); at most %(max)s days per upload."),
    "declares_too_many_rows": _("The sheet declares %(rows)s rows; at most %(max)s days per upload."),
    "declares_too_many_columns": _("The sheet declares %(columns)s columns; at most %(max)s are read."),
    "cells_past_columns": _("Row %(row)s has cells past column %(max)s."),
}
assert set(TEXTS) == set(MESSAGES), "parsing.MESSAGES and messages.TEXTS must name the same codes"


def error_text(error: CellError) -> str:
    """What is wrong, in the active language (without the place: see located_text)."""
    template = TEXTS.get(error.code)
    return str(template) % dict(error.params) if template is not None else error.message


def located_text(error: CellError) -> str:
    """"Row 4, column spend: “abc” is not a number." in the active language."""
    if error.row and error.column:
        where = _("Row %(row)s, column %(column)s") % {"row": error.row, "column": error.column}
    elif error.row:
        where = _("Row %(row)s") % {"row": error.row}
    else:
        where = _("The file")
    return f"{where}: {error_text(error)}"
