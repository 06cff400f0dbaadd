"""CSV/XLSX import (all rows or none, errors by row and column) and exports that carry the raw values."""

import csv
import io
from decimal import Decimal

import openpyxl
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.quotes import importing
from apps.quotes.models import PriceVersion, Quote, Vendor

HEADER = [
    "vendor", "title", "gpu", "gpus_per_node", "commercial_model", "price_unit", "currency", "list_price",
    "input_tokens", "output_tokens", "price_source_kind", "price_source", "price_observed_at", "price_valid_until",
]
GOOD_ROWS = [
    ["Acme GPU Cloud", "8× H200 on-demand", "NVIDIA H200 SXM", "8", "on_demand", "gpu_hour", "USD", "3.50",
     "", "", "price_page", "https://acme.test/pricing", "2026-11-30T14:00", "2026-12-31"],
    ["Nusantara Cloud", "H200 node, Jakarta", "H200 SXM", "8", "reserved", "node_hour", "IDR",
     "987654321098765432.12", "", "", "email", "sales@nusantara.test, 29 Nov", "2026-11-29 09:00", ""],
    ["Route AI", "Llama 3.1 70B route", "", "", "model_api", "million_tokens", "USD", "", "0.40", "1.60",
     "api", "GET https://route.test/v1/prices", "2026-11-30T10:00", ""],
]


def csv_upload(rows, header=HEADER, name="quotes.csv"):
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return SimpleUploadedFile(name, buffer.getvalue().encode("utf-8"), content_type="text/csv")


def xlsx_upload(rows, header=HEADER):
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return SimpleUploadedFile("quotes.xlsx", buffer.getvalue())


def test_a_good_csv_imports_every_row_with_sourced_prices(team, gpu, platform_user):
    report = importing.import_quotes(actor=platform_user, team=team, upload=csv_upload(GOOD_ROWS))
    assert report.ok, report.errors
    assert Quote.objects.filter(team=team).count() == 3
    idr = PriceVersion.objects.get(quote__title="H200 node, Jakarta")
    assert idr.amount == Decimal("987654321098765432.12") and idr.currency == "IDR"
    route = Quote.objects.get(title="Llama 3.1 70B route")
    assert {v.component: v.amount for v in route.price_versions.all()} == {
        "input_tokens": Decimal("0.40"), "output_tokens": Decimal("1.60"),
    }
    assert Vendor.objects.filter(team=team).count() == 3


def test_one_bad_row_saves_nothing_and_names_its_row_and_column(team, gpu, platform_user):
    rows = [list(row) for row in GOOD_ROWS]
    rows[1][7] = "9.8.7"  # list_price of the second data row: spreadsheet row 3
    report = importing.import_quotes(actor=platform_user, team=team, upload=csv_upload(rows))
    assert not report.ok
    assert [(error.row, error.column) for error in report.errors] == [(3, "list_price")]
    assert report.column_letter("list_price") == "H"
    assert not Quote.objects.exists() and not Vendor.objects.exists() and not PriceVersion.objects.exists()


def test_a_row_the_services_refuse_rolls_back_the_rows_before_it(team, gpu, platform_user):
    rows = [list(row) for row in GOOD_ROWS]
    rows[2][2] = ""
    rows[2][4] = "on_demand"  # an on-demand quote priced per token and without a GPU: refused by the model
    report = importing.import_quotes(actor=platform_user, team=team, upload=csv_upload(rows))
    assert not report.ok
    assert {error.row for error in report.errors} == {4}
    assert {error.column for error in report.errors} <= {"price_unit", "gpu"}
    assert not Quote.objects.exists() and not Vendor.objects.exists()


def test_a_price_without_its_source_is_reported(team, gpu, platform_user):
    rows = [list(GOOD_ROWS[0])]
    rows[0][11] = ""
    report = importing.import_quotes(actor=platform_user, team=team, upload=csv_upload(rows))
    assert [(error.row, error.column) for error in report.errors] == [(2, "price_source")]


def test_unknown_and_missing_columns_are_reported(team, platform_user):
    report = importing.import_quotes(
        actor=platform_user, team=team, upload=csv_upload([["x"]], header=["vendr"])
    )
    columns = {error.column for error in report.errors}
    assert "vendr" in columns and {"vendor", "title", "commercial_model", "price_unit", "currency"} <= columns


def test_an_xlsx_imports_the_same_way_and_reports_its_cells(team, gpu, platform_user):
    rows = [list(row) for row in GOOD_ROWS]
    rows[0][3] = 8  # numbers as spreadsheet numbers
    rows[0][7] = 3.5
    report = importing.import_quotes(actor=platform_user, team=team, upload=xlsx_upload(rows))
    assert report.ok, report.errors
    assert PriceVersion.objects.get(quote__title="8× H200 on-demand").amount == Decimal("3.5")
    Quote.objects.all().delete()
    rows[2][6] = "ZZZ"
    PriceVersion.objects.all().delete()
    bad = importing.import_quotes(actor=platform_user, team=team, upload=xlsx_upload(rows))
    located = [(error.row, error.column, bad.column_letter(error.column)) for error in bad.errors]
    assert located == [(4, "currency", "G")]


def test_the_import_page_shows_the_report_and_saves_nothing(client_for, gpu, platform_user):
    rows = [list(row) for row in GOOD_ROWS]
    rows[0][12] = "yesterday"
    response = client_for(platform_user).post(reverse("quotes:quote-import"), {"file": csv_upload(rows)})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="import-errors"' in html and "price_observed_at (M)" in html and ">2<" in html
    assert not Quote.objects.exists()


def test_the_import_page_imports_a_good_file(client_for, gpu, platform_user):
    response = client_for(platform_user).post(reverse("quotes:quote-import"), {"file": csv_upload(GOOD_ROWS)})
    assert response.status_code == 302
    assert Quote.objects.count() == 3


def test_the_template_lists_every_column(client_for, platform_user):
    response = client_for(platform_user).get(reverse("quotes:import-template"))
    assert response.content.decode().strip().split(",") == [column.name for column in importing.COLUMNS]


def test_exports_carry_the_raw_values(client_for, team, gpu, platform_user, finance_user):
    importing.import_quotes(actor=platform_user, team=team, upload=csv_upload(GOOD_ROWS))
    response = client_for(finance_user).get(reverse("quotes:export-csv"))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_title = {row["title"]: row for row in rows}
    assert by_title["H200 node, Jakarta"]["list_price"] == "987654321098765432.12"
    assert by_title["Llama 3.1 70B route"]["input_tokens_per_million"] == "0.40"
    assert by_title["8× H200 on-demand"]["list_per_gpu_hour_reporting"] == "3.50"

    workbook = openpyxl.load_workbook(io.BytesIO(client_for(finance_user).get(reverse("quotes:export-xlsx")).content))
    sheet = workbook.active
    header = [cell.value for cell in sheet[1]]
    values = {row[header.index("title")]: row for row in sheet.iter_rows(min_row=2, values_only=True)}
    jakarta = values["H200 node, Jakarta"]
    assert jakarta[header.index("list_price")] == "987654321098765432.12"  # too many digits for a double: exact text
    assert values["8× H200 on-demand"][header.index("list_price")] == 3.5  # a plain number where that is exact
