"""The finance page as CSV and XLSX: committed spend per team and cost centre in the current period of its budget.
Every text cell goes through apps/common/spreadsheet.safe_row (a cost centre named `=HYPERLINK(…)` is written as
text, never run); figures are exact (apps/common/money.exact) in the CSV and numbers in the workbook."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

from django.utils.translation import gettext as _
from openpyxl import Workbook
from openpyxl.styles import Font

from apps.budgets.selectors import FinanceRow
from apps.common import money, spreadsheet


def headers() -> list[str]:
    return [
        _("Team"), _("Cost centre"), _("Name"), _("Budget"), _("Currency"), _("Period"), _("Period start"),
        _("Period end"), _("Owner"), _("Committed per month"), _("Committed in the period"), _("Remaining"),
        _("Share used"), _("Records"), _("Problems"),
    ]


def _exact(value: Decimal | None) -> str:
    return money.exact(value) if value is not None else ""


def row_values(row: FinanceRow, *, exact: bool) -> list:
    figure = _exact if exact else (lambda value: float(value) if value is not None else None)
    budget = row.budget
    return [
        row.team.name,
        row.cost_centre.code,
        row.cost_centre.name,
        figure(budget.amount if budget else None),
        row.currency,
        budget.get_period_display() if budget else "",
        row.period_start.isoformat() if row.period_start else "",
        row.period_end.isoformat() if row.period_end else "",
        budget.owner.get_username() if budget else "",
        figure(row.committed_monthly),
        figure(row.committed_in_period),
        figure(row.remaining),
        figure(row.share),
        " ".join(item.reference for item in row.records),
        " ".join(row.problems),
    ]


def finance_csv(rows: list[FinanceRow]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(spreadsheet.safe_row(headers()))
    for row in rows:
        writer.writerow(spreadsheet.safe_row(row_values(row, exact=True)))
    return buffer.getvalue()


def finance_xlsx(rows: list[FinanceRow]) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = _("Committed spend")[:31]
    sheet.append(spreadsheet.safe_row(headers()))
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for row in rows:
        sheet.append(spreadsheet.safe_row(row_values(row, exact=False)))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
