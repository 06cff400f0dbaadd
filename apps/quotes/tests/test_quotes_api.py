"""The quotes API: money as strings, prices only ever added, finance read-only, outsiders 404."""

import datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from apps.quotes import services
from apps.quotes.models import ChecklistAnswer, CostKind, CostLine, PriceVersion, Quote

API = "/api/v1/quotes/"


@pytest.fixture
def api():
    def signed_in(user):
        client = APIClient()
        client.force_authenticate(user)
        return client

    return signed_in


def test_a_quote_reads_with_its_prices_freshness_checklist_and_policy(api, priced_quote, platform_user):
    response = api(platform_user).get(f"{API}quotes/{priced_quote.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body["current_prices"]["list_price"]["amount"] == "3.50"
    assert body["current_prices"]["list_price"]["source_reference"] == "https://acme.test/pricing"
    assert body["freshness"] == "fresh"
    # commercial-model and placement (region "eu-west") are answered from the quote's own terms.
    assert body["checklist"] == {"answered": 2, "total": 30}
    assert body["policy"]["met"] is False
    assert {item["question"] for item in body["policy"]["missing"]} >= {"commitment-terms"}


def test_platform_creates_vendor_quote_and_price_through_the_api(api, team, gpu, platform_user):
    client = api(platform_user)
    vendor = client.post(f"{API}vendors/", {"name": "Nimbus"}, format="json")
    assert vendor.status_code == 201, vendor.json()
    quote = client.post(
        f"{API}quotes/",
        {"vendor": vendor.json()["id"], "title": "2× H200", "gpu": gpu.pk, "gpus_per_node": 2,
         "commercial_model": "on_demand", "price_unit": "gpu_hour", "currency": "IDR"},
        format="json",
    )
    assert quote.status_code == 201, quote.json()
    price = client.post(
        f"{API}price-versions/",
        {"quote": quote.json()["id"], "component": "list_price", "amount": "987654321098765432.12",
         "source_kind": "email", "source_reference": "sales@nimbus.test", "observed_at": "2026-11-30T10:00:00Z"},
        format="json",
    )
    assert price.status_code == 201, price.json()
    assert price.json()["amount"] == "987654321098765432.12" and price.json()["number"] == 1
    assert Quote.objects.get(pk=quote.json()["id"]).team == team


def test_money_must_be_sent_as_a_string(api, priced_quote, platform_user):
    response = api(platform_user).post(
        f"{API}price-versions/",
        {"quote": priced_quote.pk, "component": "list_price", "amount": 3.1, "source_kind": "email",
         "source_reference": "x", "observed_at": "2026-11-30T10:00:00Z"},
        format="json",
    )
    assert response.status_code == 400 and "amount" in response.json()


def test_a_refused_quote_names_its_fields_and_the_rest_are_non_field_errors(api, vendor, gpu, platform_user):
    response = api(platform_user).post(
        f"{API}quotes/",
        {"vendor": vendor.pk, "title": "Buy 1 HGX H200", "gpu": gpu.pk, "commercial_model": "purchase",
         "price_unit": "node_purchase", "currency": "USD", "amortisation_months": 48, "pue": "1.3"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "power_kw_per_node": ["A purchase needs this figure (with its source)."],
        "non_field_errors": ["An amortisation period needs its source.", "A PUE needs its source."],
    }
    assert not Quote.objects.exists()


def test_a_price_without_source_or_timestamp_is_refused(api, priced_quote, platform_user):
    client = api(platform_user)
    base = {"quote": priced_quote.pk, "component": "list_price", "amount": "3.10", "source_kind": "email"}
    no_source = client.post(f"{API}price-versions/", {**base, "source_reference": "",
                                                      "observed_at": "2026-11-30T10:00:00Z"}, format="json")
    no_time = client.post(f"{API}price-versions/", {**base, "source_reference": "x", "observed_at": None},
                          format="json")
    assert no_source.status_code == 400 and no_time.status_code == 400
    assert PriceVersion.objects.count() == 1


def test_a_price_version_is_never_changed_or_deleted(api, priced_quote, platform_user):
    version = PriceVersion.objects.get()
    client = api(platform_user)
    assert client.put(f"{API}price-versions/{version.pk}/", {"amount": "1"}, format="json").status_code == 405
    assert client.patch(f"{API}price-versions/{version.pk}/", {"amount": "1"}, format="json").status_code == 405
    assert client.delete(f"{API}price-versions/{version.pk}/").status_code == 405
    version.refresh_from_db()
    assert str(version.amount) == "3.50"


def test_finance_reads_but_cannot_change(api, priced_quote, finance_user):
    client = api(finance_user)
    for path in ("quotes/", f"quotes/{priced_quote.pk}/", "price-versions/", "vendors/", "cost-lines/",
                 "documents/", "checklist-answers/", "exchange-rates/", "candidates/", "stale-prices/",
                 "checklist-questions/", "commitment-tiers/", "comparison/"):
        assert client.get(API + path).status_code == 200, path
    assert client.patch(f"{API}quotes/{priced_quote.pk}/", {"title": "x"}, format="json").status_code == 403
    assert client.post(f"{API}vendors/", {"name": "x"}, format="json").status_code == 403
    price = {"quote": priced_quote.pk, "component": "list_price", "amount": "1", "source_kind": "email",
             "source_reference": "x", "observed_at": "2026-11-30T10:00:00Z"}
    assert client.post(f"{API}price-versions/", price, format="json").status_code == 403
    assert client.post(f"{API}checklist-answers/", {}, format="json").status_code == 403
    assert client.post(f"{API}import/", {}).status_code == 403
    assert Quote.objects.get().title == "8× H200 on-demand"


def test_an_outsider_sees_nothing(api, priced_quote, outsider, platform_user):
    line = services.cost_line_add(
        actor=platform_user, quote=priced_quote, kind=CostKind.STORAGE, quantity="1", unit="TB-month", rate="20",
        estimate_reason="guess",
    )
    document = services.document_attach(
        actor=platform_user, quote=priced_quote, upload=SimpleUploadedFile("q.pdf", b"%PDF-1.7")
    )
    client = api(outsider)
    version = PriceVersion.objects.get()
    for path in (f"quotes/{priced_quote.pk}/", f"vendors/{priced_quote.vendor_id}/",
                 f"price-versions/{version.pk}/", f"cost-lines/{line.pk}/", f"documents/{document.pk}/",
                 f"documents/{document.pk}/download/"):
        assert client.get(API + path).status_code == 404, path
    for path in ("quotes/", "price-versions/", "vendors/", "cost-lines/", "documents/"):
        assert client.get(API + path).json()["count"] == 0, path
    assert client.patch(f"{API}quotes/{priced_quote.pk}/", {"title": "x"}, format="json").status_code == 404
    # Writing into another team's quote is refused as an unknown quote.
    response = client.post(
        f"{API}price-versions/",
        {"quote": priced_quote.pk, "component": "list_price", "amount": "1", "source_kind": "email",
         "source_reference": "x", "observed_at": "2026-11-30T10:00:00Z"},
        format="json",
    )
    assert response.status_code == 400 and "quote" in response.json()
    assert client.get(f"{API}comparison/", {"team": priced_quote.team.slug}).status_code == 404


def test_a_cost_line_put_replaces_it_and_delete_removes_it(api, priced_quote, platform_user):
    client = api(platform_user)
    created = client.post(
        f"{API}cost-lines/",
        {"quote": priced_quote.pk, "kind": "platform_labor", "quantity": "20", "unit": "hours", "rate": "90",
         "estimate_reason": "two SREs"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["amount"] == "1800"
    replaced = client.patch(f"{API}cost-lines/{created.json()['id']}/", {"quantity": "25"}, format="json")
    assert replaced.status_code == 201
    assert replaced.json()["quantity"] == "25" and replaced.json()["id"] != created.json()["id"]
    old = CostLine.objects.get(pk=created.json()["id"])
    assert old.replaced_by_id == replaced.json()["id"]
    assert client.delete(f"{API}cost-lines/{replaced.json()['id']}/").status_code == 204
    assert not CostLine.objects.current().exists() and CostLine.objects.count() == 2


def test_checklist_answers_through_the_api(api, priced_quote, platform_user):
    client = api(platform_user)
    response = client.post(
        f"{API}checklist-answers/",
        {"quote": priced_quote.pk, "question": "interconnect", "status": "answered", "value": "NVLink 4",
         "evidence": "quote.pdf p. 2"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    again = client.post(
        f"{API}checklist-answers/",
        {"quote": priced_quote.pk, "question": "interconnect", "status": "not_provided"},
        format="json",
    )
    assert again.status_code == 201
    assert ChecklistAnswer.objects.get(question__code="interconnect").status == "not_provided"


def test_the_comparison_endpoint_converts_exactly(api, team, priced_quote, platform_user):
    services.quote_update(actor=platform_user, quote=priced_quote, currency="EUR", price_unit="node_hour")
    services.price_record(
        actor=platform_user, quote=priced_quote, component="contracted_price", amount="20.00", source_kind="email",
        source_reference="sales@acme.test", observed_at=datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC),
    )
    services.exchange_rate_record(
        actor=platform_user, team=team, from_currency="EUR", to_currency="USD", rate="1.0835",
        source="https://www.ecb.europa.eu/", as_of=datetime.date(2026, 11, 30),
    )
    rows = api(platform_user).get(f"{API}comparison/").json()
    # 20.00 EUR per node-hour ÷ 8 GPUs = 2.5 EUR per GPU-hour × 1.0835 = 2.70875 USD.
    assert rows[0]["contracted_per_gpu_hour"] == "2.708750"
    assert rows[0]["reporting_currency"] == "USD"
    assert rows[0]["missing_exchange_rates"] == []


def test_the_import_endpoint_reports_rows(api, gpu, platform_user):
    sheet = ("vendor,title,gpu,commercial_model,price_unit,currency,list_price,price_source_kind,price_source,"
             "price_observed_at\nAcme,x,NVIDIA H200 SXM,on_demand,gpu_hour,USD,abc,email,me,2026-11-30T10:00\n")
    response = api(platform_user).post(
        f"{API}import/", {"file": SimpleUploadedFile("q.csv", sheet.encode())}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"row": 2, "column": "list_price", "column_letter": "G", "message": "“abc” is not a number."}
    ]
