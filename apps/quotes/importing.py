"""Import quotes from a CSV or XLSX sheet: one quote (and its sourced prices) per row.

All or nothing: every row is checked, every error is reported with its row number and column, and nothing is saved
unless every row is good. Rows are written through the same services as the browser, inside one transaction.
"""

from __future__ import annotations

import csv
import datetime
import io
from dataclasses import dataclass, field
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.catalog.models import GpuModel
from apps.common import money, sheets
from apps.quotes import services
from apps.quotes.models import (
    BillingGranularity,
    CommercialModel,
    PaymentOption,
    PriceComponent,
    PriceUnit,
    SourceKind,
    Vendor,
)

MAX_ROWS = 2000


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # text, integer, decimal, choice, datetime, date, gpu
    required: bool = False
    choices: tuple[str, ...] = ()
    help: str = ""


#: The sheet's columns, in template order. Price columns become PriceVersion rows, the rest are quote terms.
COLUMNS: tuple[Column, ...] = (
    Column(
        "vendor", "text", required=True, help=gettext_lazy("Vendor name; created if the team has none of that name.")
    ),
    Column("title", "text", required=True),
    Column("vendor_reference", "text"),
    Column("sku", "text"),
    Column("region", "text"),
    Column("zone", "text"),
    Column("gpu", "gpu", help=gettext_lazy("Catalog name with variant, e.g. “NVIDIA H200 SXM”.")),
    Column("served_model", "text"),
    Column("form_factor", "text"),
    Column("gpu_memory_gb", "decimal"),
    Column("gpus_per_node", "integer"),
    Column("node_count", "integer"),
    Column("vcpus_per_node", "integer"),
    Column("ram_gb_per_node", "integer"),
    Column("local_nvme_tb_per_node", "decimal"),
    Column("interconnect_intra_node", "text"),
    Column("interconnect_inter_node", "text"),
    Column("storage_bandwidth", "text"),
    Column("network_bandwidth", "text"),
    Column("placement", "text"),
    Column("commercial_model", "choice", required=True, choices=tuple(CommercialModel.values)),
    Column("price_unit", "choice", required=True, choices=tuple(PriceUnit.values)),
    Column("currency", "choice", required=True, choices=money.CURRENCY_CODES),
    Column(
        "billing_granularity_seconds",
        "choice",
        choices=tuple(str(value) for value in BillingGranularity.values),
    ),
    Column("term_months", "integer"),
    Column("committed_hours_per_month", "decimal"),
    Column("payment_option", "choice", choices=tuple(PaymentOption.values)),
    Column("cancellation_terms", "text"),
    Column("support_tier", "text"),
    Column("spot_preemption_rate_per_hour", "decimal"),
    Column("spot_preemption_source", "text"),
    Column("amortisation_months", "integer"),
    Column("amortisation_source", "text"),
    Column("power_kw_per_node", "decimal"),
    Column("power_source", "text"),
    Column("pue", "decimal"),
    Column("pue_source", "text"),
    Column("notes", "text"),
    # Prices: each non-empty one becomes version 1 of that priced item, with the row's source and timestamp.
    *(Column(component, "decimal") for component in PriceComponent.values),
    Column("price_source_kind", "choice", choices=tuple(SourceKind.values)),
    Column("price_source", "text"),
    Column("price_observed_at", "datetime", help=gettext_lazy("ISO 8601, e.g. 2026-11-30T14:00 (team time zone).")),
    Column("price_valid_until", "date"),
)
COLUMN_BY_NAME = {column.name: column for column in COLUMNS}
PRICE_COLUMNS = tuple(PriceComponent.values)
_PRICE_META = ("price_source_kind", "price_source", "price_observed_at", "price_valid_until")
_FIELD_TO_COLUMN = {"source_kind": "price_source_kind", "source_reference": "price_source",
                    "observed_at": "price_observed_at", "valid_until": "price_valid_until", "amount": None}


@dataclass(frozen=True)
class RowError:
    row: int
    column: str
    message: str


@dataclass
class ImportReport:
    errors: list[RowError] = field(default_factory=list)
    created: list = field(default_factory=list)
    rows: int = 0
    headers: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def column_letter(self, column: str) -> str:
        if column in self.headers:
            return _letter(self.headers.index(column) + 1)
        return ""

    def located_errors(self) -> list[tuple[RowError, str]]:
        return [(error, self.column_letter(error.column)) for error in self.errors]


def _letter(index: int) -> str:
    letters = ""
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def template_csv() -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow([column.name for column in COLUMNS])
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# Reading the sheet


class SheetError(Exception):
    """The file as a whole cannot be read (not a CSV/XLSX, no header, too many rows or columns).

    `rows_read` is how many rows the reader had taken from the file when it stopped."""

    def __init__(self, message: str, *, rows_read: int = 0) -> None:
        super().__init__(message)
        self.rows_read = rows_read


#: Columns read from an XLSX (the template has fewer; blank-headed helper columns are allowed, and ignored).
MAX_COLUMNS = 200
#: Empty rows tolerated among and after the data rows before the sheet is refused (a formatted tail, say).
MAX_EMPTY_ROWS = MAX_ROWS
#: The most a workbook may hold once unpacked (the zip's own sizes; a 64 KB upload can unpack to gigabytes).
MAX_UNPACKED_BYTES = 64 * 1024 * 1024
LIMITS = sheets.SheetLimits(max_rows=MAX_ROWS, max_columns=MAX_COLUMNS, max_empty_rows=MAX_EMPTY_ROWS,
                            max_unpacked_bytes=MAX_UNPACKED_BYTES)

#: The reader's codes (apps/common/sheets.py) in the importer's words.
SHEET_MESSAGES = {
    "not_csv_or_xlsx": gettext_lazy("Upload a .csv or .xlsx file."),
    "empty": gettext_lazy("The file is empty."),
    "not_utf8": gettext_lazy("The CSV file is not UTF-8 text."),
    "not_csv": gettext_lazy("The file is not a readable CSV file."),
    "not_xlsx": gettext_lazy("The file is not a readable XLSX workbook."),
    "no_worksheet": gettext_lazy("The workbook has no worksheet."),
    "too_big_unpacked": gettext_lazy("The workbook is over %(size)s MB once unpacked; split it."),
    "too_many_rows": gettext_lazy("At most %(max)s rows per import."),
    "too_long": gettext_lazy("The sheet goes on past row %(row)s (empty rows included); at most %(max)s rows per "
                             "import. Delete the rows below your data."),
    "declares_too_many_rows": gettext_lazy("The sheet declares %(rows)s rows; at most %(max)s rows per import."),
    "declares_too_many_columns": gettext_lazy("The sheet declares %(columns)s columns; at most %(max)s are read."),
    "cells_past_columns": gettext_lazy("Row %(row)s has cells past column %(max)s."),
}


def read_sheet(name: str, content: bytes) -> tuple[list[str], list[tuple[int, dict]]]:
    """(headers, [(row number, {header: cell})]) from a CSV or XLSX file; row numbers are the sheet's own.

    The row limit is checked while the file streams: reading stops, with a SheetError, at the first row past
    MAX_ROWS data rows (or past MAX_ROWS + MAX_EMPTY_ROWS rows in all), never after reading the whole file."""
    try:
        return sheets.read_sheet(name, content, LIMITS)
    except sheets.SheetUnreadable as unreadable:
        message = str(SHEET_MESSAGES[unreadable.code]) % unreadable.params
        raise SheetError(message, rows_read=unreadable.rows_read) from None


# ---------------------------------------------------------------------------------------------------------------
# Checking one cell


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value).removesuffix(".0")
    return str(value).strip()


def parse_cell(column: Column, value, gpus: dict[str, GpuModel]):
    """The typed value of one cell, or ValueError with a message for the report."""
    if isinstance(value, str):
        if "\x00" in value:  # PostgreSQL cannot store it; refused here, as a cell error, never a 500
            raise ValueError(_("This cell holds a NUL character (code 0), which cannot be stored; remove it."))
        value = value.strip()
    if value in (None, ""):
        if column.required:
            raise ValueError(_("This column is required."))
        return None
    if column.kind == "text":
        return _text(value)
    if column.kind == "decimal":
        if isinstance(value, bool):
            raise ValueError(_("Enter a number."))
        if isinstance(value, float):
            # A spreadsheet number: read it through its shortest decimal form (what the spreadsheet shows). Amounts
            # with more than 15 significant digits must be typed as text to survive a spreadsheet.
            value = repr(value)
        try:
            number = money.to_decimal(value if isinstance(value, int | Decimal) else str(value).replace(" ", ""))
        except money.MoneyError:
            raise ValueError(_("“%(value)s” is not a number.") % {"value": value}) from None
        if number < 0:
            raise ValueError(_("A negative value is not allowed here."))
        return number
    if column.kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            number = int(str(value))
        except ValueError:
            raise ValueError(_("“%(value)s” is not a whole number.") % {"value": value}) from None
        if number < 0:
            raise ValueError(_("A negative value is not allowed here."))
        return number
    if column.kind == "choice":
        text = _text(value)
        if text not in column.choices:
            raise ValueError(
                _("“%(value)s” is not one of: %(choices)s.") % {"value": text, "choices": ", ".join(column.choices)}
            )
        return int(text) if column.name == "billing_granularity_seconds" else text
    if column.kind == "datetime":
        if isinstance(value, datetime.datetime):
            moment = value
        else:
            moment = parse_datetime(_text(value))
            if moment is None:
                raise ValueError(_("“%(value)s” is not a date and time (2026-11-30T14:00).") % {"value": value})
        return timezone.make_aware(moment) if timezone.is_naive(moment) else moment
    if column.kind == "date":
        if isinstance(value, datetime.datetime):
            return value.date()
        if isinstance(value, datetime.date):
            return value
        day = parse_date(_text(value))
        if day is None:
            raise ValueError(_("“%(value)s” is not a date (2026-12-31).") % {"value": value})
        return day
    if column.kind == "gpu":
        gpu = gpus.get(_text(value).casefold())
        if gpu is None:
            raise ValueError(_("“%(value)s” is not in the GPU catalog.") % {"value": value})
        return gpu
    raise AssertionError(column.kind)


def _gpu_index() -> dict[str, GpuModel]:
    index = {}
    for gpu in GpuModel.objects.all():
        index[gpu.display_name.casefold()] = gpu
        index[f"{gpu.short_name}".casefold()] = gpu
    return index


# ---------------------------------------------------------------------------------------------------------------
# The import


class _Rollback(Exception):
    pass


def import_quotes(*, actor, team, upload) -> ImportReport:
    report = ImportReport()
    try:
        headers, rows = read_sheet(upload.name, upload.read())
    except SheetError as error:
        report.errors.append(RowError(row=1, column="", message=str(error)))
        return report
    report.headers = headers
    report.rows = len(rows)
    unknown = [header for header in headers if header and header not in COLUMN_BY_NAME]
    for header in unknown:
        report.errors.append(RowError(1, header, _("Unknown column (see the template).")))
    for column in COLUMNS:
        if column.required and column.name not in headers:
            report.errors.append(RowError(1, column.name, _("This column is missing.")))
    if not rows:
        report.errors.append(RowError(2, "", _("The sheet has no data rows.")))
    if report.errors:
        return report

    gpus = _gpu_index()
    parsed: list[tuple[int, dict]] = []
    for number, cells in rows:
        values = {}
        for column in COLUMNS:
            if column.name not in cells:
                continue
            try:
                values[column.name] = parse_cell(column, cells[column.name], gpus)
            except ValueError as error:
                report.errors.append(RowError(number, column.name, str(error)))
        if any(values.get(name) is not None for name in PRICE_COLUMNS):
            for name in ("price_source_kind", "price_source", "price_observed_at"):
                if values.get(name) is None:
                    report.errors.append(RowError(number, name, _("A price needs its source kind, source and time.")))
        parsed.append((number, values))
    if report.errors:
        return report

    try:
        with transaction.atomic():
            for number, values in parsed:
                _import_row(actor=actor, team=team, number=number, values=values, report=report)
            if report.errors:
                raise _Rollback
    except _Rollback:
        report.created = []
    return report


def _import_row(*, actor, team, number: int, values: dict, report: ImportReport) -> None:
    try:
        with transaction.atomic():
            vendor = Vendor.objects.for_team(team).filter(name=values["vendor"]).first()
            if vendor is None:
                vendor = services.vendor_create(actor=actor, team=team, name=values["vendor"])
            terms = {
                name: value
                for name, value in values.items()
                if name in services.QUOTE_TERM_FIELDS and name != "vendor" and value is not None
            }
            quote = services.quote_create(actor=actor, team=team, vendor=vendor, **terms)
            for component in PRICE_COLUMNS:
                amount = values.get(component)
                if amount is None:
                    continue
                try:
                    services.price_record(
                        actor=actor,
                        quote=quote,
                        component=component,
                        amount=amount,
                        source_kind=values["price_source_kind"],
                        source_reference=values["price_source"],
                        observed_at=values["price_observed_at"],
                        valid_until=values.get("price_valid_until"),
                    )
                except ValidationError as error:
                    _report(report, number, error, price_column=component)
                    raise
            report.created.append(quote)
    except ValidationError as error:
        if not any(existing.row == number for existing in report.errors):
            _report(report, number, error)


def _report(report: ImportReport, number: int, error: ValidationError, price_column: str | None = None) -> None:
    if hasattr(error, "error_dict"):
        for field_name, messages in error.message_dict.items():
            if price_column is not None:
                column = _FIELD_TO_COLUMN.get(field_name, field_name) or price_column
            else:
                column = field_name if field_name in COLUMN_BY_NAME else ""
            if field_name == "__all__":
                column = price_column or ""
            for message in messages:
                report.errors.append(RowError(number, column, message))
    else:
        for message in error.messages:
            report.errors.append(RowError(number, price_column or "", message))
