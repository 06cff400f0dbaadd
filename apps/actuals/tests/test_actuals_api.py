"""The actuals API: a JSON list of days or a sheet, all or nothing with each bad row and column named, and the
current actuals with the comparison. Figures as in test_actuals_uploads.py (choice B decided at 0.0003515 USD per
accepted request, 48 billed GPU-hours a day)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.actuals.models import ActualDay, ActualsUpload
from apps.decisions.models import RevisitFlag
from apps.decisions.tests.records_builders import accepted

pytestmark = pytest.mark.django_db


def _day(date: str, spend: str, accepted_outputs: str = "1000000") -> dict:
    return {"date": date, "gpu_hours": "48", "outputs": "1000000", "accepted_outputs": accepted_outputs,
            "spend": spend, "currency": "USD"}


def test_days_sent_as_json_become_a_version_and_the_get_shows_planned_against_actual(team, client):
    """Two days at 351.50 USD for 1,000,000 accepted each: 0.0003515 per request, drift 0. GPU-hours 96 of the 96
    planned (1,460 × 24 × 2 ÷ 730): ratio 1."""
    setup = accepted(team)
    url = reverse("actuals-api:record-actuals", args=[setup.record.pk])
    client.force_login(setup.people.finance)

    bad = [_day("2026-01-01", "351.50"), _day("2026-01-02", "-3"), {**_day("2026-01-03", "1"), "currency": "usd!"}]
    response = client.post(url, {"source": "billing export", "days": bad}, content_type="application/json")
    assert response.status_code == 400
    assert [(item["row"], item["column"], item["code"]) for item in response.json()["errors"]] == [
        (2, "spend", "negative"), (3, "currency", "not_a_currency")]
    assert response.json()["days"][0] == "Row 2, column spend: A negative value is not allowed here."
    assert not ActualsUpload.objects.exists() and not ActualDay.objects.exists()

    good = [_day("2026-01-01", "351.50"), _day("2026-01-02", "351.50")]
    response = client.post(url, {"source": "billing export", "days": good}, content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["current"]["version"] == 1 and body["current"]["channel"] == "api"
    assert [day["spend"] for day in body["current"]["days"]] == ["351.5", "351.5"]
    comparison = body["comparison"]
    assert comparison["planned_cost_per_accepted_output"] == "0.0003515"
    assert comparison["actual_cost_per_accepted_output"] == "0.0003515"
    assert comparison["drift"] == "0" and comparison["beyond_threshold"] is False
    assert comparison["planned_gpu_hours_for_days"] == "96" and comparison["gpu_hours_ratio"] == "1"
    assert body["planned"]["unit"] == "request" and body["planned"]["currency"] == "USD"

    # The product role reads, and may not send.
    client.force_login(setup.people.product)
    assert client.get(url).json()["comparison"]["version"] == 1
    response = client.post(url, {"source": "x", "days": good}, content_type="application/json")
    assert response.status_code == 403


def test_a_sheet_sent_as_multipart_is_a_new_version_and_drift_flags_the_record(team, client):
    """351.50 + 439.375 USD for 2,000,000 accepted: 0.0003954375 each, +12.5 % against 0.0003515 (> 10 %)."""
    setup = accepted(team)
    url = reverse("actuals-api:record-actuals", args=[setup.record.pk])
    client.force_login(setup.people.author)
    sheet = ("date,gpu_hours,outputs,accepted_outputs,spend,currency\n"
             "2026-01-01,48,1000000,1000000,351.50,USD\n2026-01-02,48,1000000,1000000,439.375,USD\n")
    response = client.post(url, {"source": "Prometheus query", "file": SimpleUploadedFile("jan.csv", sheet.encode())})
    assert response.status_code == 201, response.content
    comparison = response.json()["comparison"]
    assert comparison["actual_cost_per_accepted_output"] == "0.0003954375"
    assert comparison["drift"] == "0.125" and comparison["beyond_threshold"] is True
    assert RevisitFlag.objects.filter(record=setup.record, reason="actual_drift", cleared_at__isnull=True).exists()
    assert response.json()["versions"][0]["file_name"] == "jan.csv"

    response = client.post(url, {"source": "x"}, content_type="application/json")
    assert response.status_code == 400 and "days" in response.json()
