"""Bad inputs (negative prices, zero capacity, acceptance above 1, a missing exchange rate) give a clear error naming
the candidate and the field, on the page and in the API — never a server error, a division by zero or a NaN.

The forms and services refuse these values, so the tests put them in the database the way an import script or an
admin edit could, and check that the comparison still explains itself.
"""

import datetime
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.comparison.tests.builders import gpu_candidate
from apps.evidence.models import CandidateFigure
from apps.quotes.models import Candidate, PriceVersion
from apps.workloads.models import WorkloadSummary

pytestmark = pytest.mark.django_db


def _page(client, user, summary):
    client.force_login(user)
    response = client.get(reverse("comparison:comparison", args=[summary.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _api_errors(client, user, summary):
    client.force_login(user)
    response = client.get(reverse("comparison-api:comparison", args=[summary.pk]))
    assert response.status_code == 200
    data = response.json()
    assert "NaN" not in response.content.decode() and "Infinity" not in response.content.decode()
    return data, {(error["candidate_id"], error["field"]): error for error in data["errors"]}


def _problem_html(page, candidate_id, field):
    marker = f'data-candidate="{candidate_id}" data-field="{field}"'
    assert marker in page, f"no problem shown for candidate {candidate_id}, field {field}"
    return page.split(marker)[1].split("</li>")[0]


def _check_other_rows_still_shown(page, data, example, bad):
    for candidate in (example.a, example.b, example.c):
        if candidate.pk == bad.pk:
            assert f'id="candidate-{candidate.pk}"' not in page
        else:
            assert f'id="candidate-{candidate.pk}"' in page
    computed = {item["candidate_id"] for item in data["candidates"] if item["row"]}
    assert computed == {c.pk for c in (example.a, example.b, example.c)} - {bad.pk}
    assert "NaN" not in page and "Infinity" not in page


def test_negative_price_names_the_candidate_and_the_price(client, platform_user, example):
    PriceVersion.objects.filter(quote=example.a.quote, component="list_price").update(amount=Decimal("-3.00"))
    page = _page(client, platform_user, example.summary)
    html = _problem_html(page, example.a.pk, "unit_price")
    assert "A on-demand H100" in html and "price per hour (quote)" in html and "must not be negative" in html
    data, errors = _api_errors(client, platform_user, example.summary)
    error = errors[(example.a.pk, "unit_price")]
    assert error["candidate"] == "A on-demand H100" and "negative" in error["message"]
    _check_other_rows_still_shown(page, data, example, example.a)


def test_zero_capacity_names_the_candidate_and_the_capacity(client, platform_user, example):
    CandidateFigure.objects.filter(candidate=example.b, metric="capacity_at_slo").update(value=Decimal(0))
    page = _page(client, platform_user, example.summary)
    html = _problem_html(page, example.b.pk, "capacity_at_slo_per_gpu")
    assert "B reserved H200" in html and "capacity at the SLO" in html and "greater than zero" in html
    data, errors = _api_errors(client, platform_user, example.summary)
    assert (example.b.pk, "capacity_at_slo_per_gpu") in errors
    _check_other_rows_still_shown(page, data, example, example.b)


def test_acceptance_above_one_names_the_candidate_and_the_acceptance(client, platform_user, example):
    Candidate.objects.filter(pk=example.c.pk).update(
        quality_acceptance=Decimal("1.2"), quality_acceptance_source="vendor's claim"
    )
    page = _page(client, platform_user, example.summary)
    html = _problem_html(page, example.c.pk, "quality_acceptance")
    assert "C API route" in html and "must not be above 1" in html
    data, errors = _api_errors(client, platform_user, example.summary)
    assert (example.c.pk, "quality_acceptance") in errors
    _check_other_rows_still_shown(page, data, example, example.c)


def test_missing_exchange_rate_names_the_candidate_and_the_currency(client, team, platform_user, example):
    euro = gpu_candidate(team, platform_user, example.summary, label="D euro H100", price="2.80", capacity="5",
                         currency="EUR")
    page = _page(client, platform_user, example.summary)
    html = _problem_html(page, euro.pk, "currency")
    assert "D euro H100" in html and "no exchange rate from EUR to USD" in html
    data, errors = _api_errors(client, platform_user, example.summary)
    assert errors[(euro.pk, "currency")]["field_label"] == "currency (exchange rate)"
    assert len([item for item in data["candidates"] if item["row"]]) == 3


def test_exchange_rate_converts_the_candidate_when_it_exists(client, team, platform_user, example):
    from apps.quotes.services import exchange_rate_record

    euro = gpu_candidate(team, platform_user, example.summary, label="D euro H100", price="2.80", capacity="5",
                         currency="EUR")
    rate = exchange_rate_record(actor=platform_user, team=team, from_currency="EUR", to_currency="USD",
                                rate="1.10", source="https://www.ecb.europa.eu/", as_of=datetime.date(2026, 1, 5))
    data, errors = _api_errors(client, platform_user, example.summary)
    assert errors == {}
    row = next(item for item in data["candidates"] if item["candidate_id"] == euro.pk)["row"]
    # 3 GPUs × 730 h × 2.80 EUR × 1.10 = 6,745.20 USD billed; converted figures cite the rate.
    assert Decimal(row["billed_compute"]) == Decimal("6745.20")
    references = {item["reference"] for item in row["provenance"]["gpu_cost"]}
    assert f"exchange-rate:{rate.pk}" in references


def test_workload_without_a_peak_rate_names_the_workload_field(client, platform_user, example):
    WorkloadSummary.objects.filter(pk=example.summary.pk).update(arrival_rate_peak=None)
    page = _page(client, platform_user, example.summary)
    assert 'data-field="arrival_rate_peak"' in page
    assert "arrival rate, peak (requests/s)" in page
    assert 'id="candidate-' not in page
    data, errors = _api_errors(client, platform_user, example.summary)
    assert (None, "arrival_rate_peak") in errors
    assert all(item["row"] is None for item in data["candidates"])
