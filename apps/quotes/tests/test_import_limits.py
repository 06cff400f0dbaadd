"""An import refuses an oversized sheet while it streams (never after reading it all), and refuses a NUL character
as a cell error, never a 500: nothing is saved either way. Runs on SQLite and PostgreSQL (NUL is what PostgreSQL
cannot store)."""

import csv
import io
import zipfile

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from apps.quotes import importing
from apps.quotes.models import Quote, Vendor
from apps.quotes.tests.test_import_export import GOOD_ROWS, HEADER, csv_upload

pytestmark = pytest.mark.django_db

MANY = 200_000  # the file: 200,000 rows in a few dozen KB


def _package(sheet_data: str, *, dimension: str | None = None) -> bytes:
    """An XLSX whose first sheet holds `sheet_data` (the <row> elements), declaring `dimension` as its size (None:
    no declaration). Written as XML directly: openpyxl would take a minute to write 200,000 rows."""
    template = io.BytesIO()
    openpyxl.Workbook().save(template)
    declared = f'<dimension ref="{dimension}"/>' if dimension else ""
    sheet = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
             '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
             f'{declared}<sheetData>{sheet_data}</sheetData></worksheet>')
    out = io.BytesIO()
    with zipfile.ZipFile(template) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = sheet.encode() if item.filename == "xl/worksheets/sheet1.xml" else source.read(item.filename)
            target.writestr(item.filename, data)
    return out.getvalue()


def _row(number: int, *texts: str) -> str:
    return f'<row r="{number}">' + "".join(
        f'<c r="{chr(65 + index)}{number}" t="inlineStr"><is><t>{text}</t></is></c>' for index, text in enumerate(texts)
    ) + "</row>"


def _xlsx(rows: int, *, dimension: str | None) -> bytes:
    """A header (vendor, title) and `rows` data rows."""
    data = "".join(_row(number, f"Vendor {number}", f"Quote {number}") for number in range(2, rows + 2))
    return _package(_row(1, "vendor", "title") + data, dimension=dimension)


def test_an_xlsx_that_declares_too_many_rows_is_refused_before_a_row_is_read():
    with pytest.raises(importing.SheetError) as refused:
        importing.read_sheet("big.xlsx", _xlsx(MANY, dimension=f"A1:B{MANY + 1}"))
    assert refused.value.rows_read == 0
    assert "at most 2000 rows" in str(refused.value)


@pytest.mark.parametrize("dimension", [None, "A1:B2"], ids=["undeclared", "declared-too-small"])
def test_an_xlsx_that_hides_its_size_is_refused_while_streaming(dimension):
    """Row 2,001 of data is the last one read: 2,001 rows taken, not 200,000. (Old code: every row was read before
    the limit was checked; with a too-small declaration openpyxl stopped at it and dropped the rest silently.)"""
    with pytest.raises(importing.SheetError) as refused:
        importing.read_sheet("big.xlsx", _xlsx(MANY, dimension=dimension))
    assert refused.value.rows_read == importing.MAX_ROWS + 1
    assert str(refused.value) == "At most 2000 rows per import."


def test_a_long_csv_is_refused_while_streaming():
    text = "vendor,title\n" + "".join(f"Vendor {number},Quote {number}\n" for number in range(MANY))
    with pytest.raises(importing.SheetError) as refused:
        importing.read_sheet("big.csv", text.encode())
    assert refused.value.rows_read == importing.MAX_ROWS + 1


def test_empty_rows_far_below_the_data_cannot_keep_the_reader_busy():
    """A row 1,000,000 under a short sheet: refused at row 4,002 (2,000 rows + 2,000 empty ones + the header)."""
    content = _package(_row(1, "vendor", "title") + _row(2, "Acme", "H200") + _row(1_000_000, "x"))
    with pytest.raises(importing.SheetError) as refused:
        importing.read_sheet("far.xlsx", content)
    assert refused.value.rows_read == importing.MAX_ROWS + importing.MAX_EMPTY_ROWS + 1
    assert "past row 4001" in str(refused.value)


def test_a_workbook_that_unpacks_to_too_much_is_refused_unread():
    content = _package(_row(1, "vendor", "title") + _row(2, "x" * (importing.MAX_UNPACKED_BYTES + 1), "y"))
    assert len(content) < 1024 * 1024  # the upload itself is small
    with pytest.raises(importing.SheetError) as refused:
        importing.read_sheet("bomb.xlsx", content)
    assert "once unpacked" in str(refused.value) and refused.value.rows_read == 0


def test_the_import_page_refuses_a_huge_xlsx_and_saves_nothing(client_for, platform_user):
    upload = SimpleUploadedFile("big.xlsx", _xlsx(MANY, dimension=None))
    response = client_for(platform_user).post(reverse("quotes:quote-import"), {"file": upload})
    assert response.status_code == 400
    assert "At most 2000 rows per import." in response.content.decode()
    assert not Quote.objects.exists() and not Vendor.objects.exists()


def _with_nul() -> list[list[str]]:
    rows = [list(row) for row in GOOD_ROWS]
    rows[1][0] = "Nusantara\x00Cloud"
    return rows


def test_a_nul_in_a_csv_is_a_form_error_on_the_page(client_for, gpu, platform_user):
    response = client_for(platform_user).post(reverse("quotes:quote-import"), {"file": csv_upload(_with_nul())})
    assert response.status_code == 400  # old code, on PostgreSQL: 500 (a string literal cannot contain NUL)
    assert "NUL character" in response.content.decode()
    assert not Quote.objects.exists() and not Vendor.objects.exists()


def test_a_nul_in_a_csv_is_a_400_on_the_api(team, gpu, platform_user):
    api = APIClient()
    api.force_authenticate(platform_user)
    response = api.post(reverse("quotes-api:import"), {"file": csv_upload(_with_nul()), "team": team.slug},
                        format="multipart")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [(error["row"], error["column"]) for error in errors] == [(3, "vendor")]
    assert not Quote.objects.exists() and not Vendor.objects.exists()


def test_an_xlsx_with_a_nul_is_refused_as_unreadable(team, platform_user):
    """XML cannot carry a NUL (&#0; is not well-formed): the report says the file is unreadable, no 500."""
    content = _package(_row(1, "vendor", "title") + _row(2, "Acme&#0;", "H200"))
    report = importing.import_quotes(actor=platform_user, team=team,
                                     upload=SimpleUploadedFile("quotes.xlsx", content))
    assert [error.message for error in report.errors] == ["The file is not a readable XLSX workbook."]
    assert not Quote.objects.exists()


def test_a_good_file_under_the_limits_still_imports(team, gpu, platform_user):
    buffer = io.StringIO()
    csv.writer(buffer).writerows([HEADER, *GOOD_ROWS])
    report = importing.import_quotes(actor=platform_user, team=team,
                                     upload=SimpleUploadedFile("q.csv", buffer.getvalue().encode()))
    assert report.ok and len(report.created) == 3
