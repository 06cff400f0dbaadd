"""A decision record's exports (page and API) neutralise a formula-like candidate label like the comparison's."""

import csv
import io

import openpyxl
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.comparison.exports import COLUMN
from apps.decisions import services
from apps.decisions.tests import records_builders as build
from apps.quotes.models import Candidate

pytestmark = pytest.mark.django_db

EVIL = "@SUM(1+1)*cmd|' /C calc'!A0"


def _evil_record(team):
    """A draft whose candidate A is labelled with a formula, then proposed: the snapshot carries the label."""
    setup = build.draft(team)
    Candidate.objects.filter(pk=setup.example.a.pk).update(label=EVIL)
    setup.record = services.record_propose(actor=setup.people.author, record=setup.record)
    return setup


def _check_csv(text: str) -> None:
    labels = {row["label"] for row in csv.DictReader(io.StringIO(text))}
    assert "'" + EVIL in labels and EVIL not in labels


def _check_xlsx(content: bytes) -> None:
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Comparison"]
    cells = [sheet[f"{COLUMN['label']}{row}"] for row in range(2, sheet.max_row + 1)]
    evil = next(cell for cell in cells if "SUM" in str(cell.value))
    assert (evil.data_type, evil.value) == ("s", "'" + EVIL)
    assert sheet[f"{COLUMN['unit_cost']}{evil.row}"].data_type == "f"  # its own formula still live


def test_the_record_exports_on_the_page_quote_a_formula_like_label(team, client):
    setup = _evil_record(team)
    client.force_login(setup.people.finance)
    _check_csv(client.get(reverse("records:export-csv", args=[setup.record.pk])).content.decode())
    _check_xlsx(client.get(reverse("records:export-xlsx", args=[setup.record.pk])).content)


def test_the_record_exports_of_the_api_quote_a_formula_like_label(team):
    setup = _evil_record(team)
    api = APIClient()
    api.force_authenticate(setup.people.finance)
    url = "records-api:record-export"
    _check_csv(api.get(reverse(url, kwargs={"pk": setup.record.pk, "kind": "csv"})).content.decode())
    _check_xlsx(api.get(reverse(url, kwargs={"pk": setup.record.pk, "kind": "xlsx"})).content)
