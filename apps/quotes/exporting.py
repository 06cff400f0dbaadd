"""CSV and XLSX exports of the quote comparison. Exports carry raw, unrounded values (rounding is for screens)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

from apps.common import money, spreadsheet
from apps.quotes.models import PriceComponent
from apps.quotes.selectors import ComparisonRow, Converted

HEADERS = (
    "quote_id",
    "vendor",
    "title",
    "gpu",
    "served_model",
    "commercial_model",
    "billing_model",
    "price_unit",
    "gpus_per_node",
    "node_count",
    "quote_currency",
    "list_price",
    "contracted_price",
    "input_tokens_per_million",
    "output_tokens_per_million",
    "reporting_currency",
    "list_per_gpu_hour_reporting",
    "contracted_per_gpu_hour_reporting",
    "input_per_million_reporting",
    "output_per_million_reporting",
    "exchange_rate",
    "exchange_rate_source",
    "exchange_rate_as_of",
    "checklist_answered",
    "checklist_total",
    "policy_met",
    "missing_answers",
    "freshness",
    "price_observed_at",
    "price_source",
)


def _amount(converted: Converted | None) -> Decimal | None:
    return converted.amount if converted is not None else None


def _rate_of(row: ComparisonRow):
    for converted in (row.contracted_per_gpu_hour, row.list_per_gpu_hour, row.input_per_million,
                      row.capital_per_node):
        if converted is not None and converted.rate is not None:
            return converted.rate
    return None


def row_values(row: ComparisonRow, team) -> list:
    quote = row.quote
    prices = row.prices
    rate = _rate_of(row)
    reference = prices.get(PriceComponent.CONTRACTED_PRICE) or prices.get(PriceComponent.LIST_PRICE) or next(
        iter(prices.values()), None
    )

    def price(component):
        version = prices.get(component)
        return version.amount if version is not None else None

    return [
        quote.pk,
        quote.vendor.name,
        quote.title,
        quote.gpu.display_name if quote.gpu else "",
        quote.served_model,
        quote.commercial_model,
        quote.billing_model,
        quote.price_unit,
        quote.gpus_per_node,
        quote.node_count,
        reference.currency if reference else quote.currency,
        price(PriceComponent.LIST_PRICE),
        price(PriceComponent.CONTRACTED_PRICE),
        price(PriceComponent.INPUT_TOKENS),
        price(PriceComponent.OUTPUT_TOKENS),
        team.reporting_currency,
        _amount(row.list_per_gpu_hour),
        _amount(row.contracted_per_gpu_hour),
        _amount(row.input_per_million),
        _amount(row.output_per_million),
        rate.rate if rate else None,
        rate.source if rate else "",
        rate.as_of.isoformat() if rate else "",
        row.progress.answered,
        row.progress.total,
        "yes" if row.policy.ok else "no",
        "; ".join(missing.question.code for missing in row.policy.missing),
        row.freshness.status.value,
        reference.observed_at.isoformat() if reference else "",
        reference.source_reference if reference else "",
    ]


def _csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return money.canonical(value)
    if isinstance(value, str):
        return spreadsheet.safe_text(value)  # a vendor's `=…` is text, never a formula
    return str(value)


def comparison_csv(rows: list[ComparisonRow], team) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HEADERS)
    for row in rows:
        writer.writerow([_csv_cell(value) for value in row_values(row, team)])
    return buffer.getvalue()


def xlsx_cell(value):
    """A spreadsheet holds numbers as binary doubles: an amount that a double holds exactly (the digits come back
    unchanged) is written as a number; any other (more than 15 significant digits) as exact text, so no digit is
    lost on the way to finance."""
    if isinstance(value, Decimal):
        as_float = float(value)
        if Decimal(repr(as_float)) == value:
            return as_float
        return money.canonical(value)
    return spreadsheet.safe_cell(value)  # a vendor's `=…` is text, never a formula


def comparison_xlsx(rows: list[ComparisonRow], team) -> bytes:
    """An XLSX with one row per quote and the raw (unrounded) values."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "quotes"
    sheet.append(list(HEADERS))
    for row in rows:
        sheet.append([xlsx_cell(value) for value in row_values(row, team)])
    sheet.freeze_panes = "A2"
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
