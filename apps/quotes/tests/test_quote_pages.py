"""The browser pages: the comparison table, quote detail with its price history, forms, and who may use them."""

import datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.quotes import services
from apps.quotes.models import (
    CommercialModel,
    CostKind,
    PriceComponent,
    PriceUnit,
    PriceVersion,
    Quote,
    SourceKind,
    Vendor,
)

READ_AT = datetime.datetime(2026, 11, 30, 14, 0, tzinfo=datetime.UTC)


def test_the_comparison_table_shows_prices_in_the_reporting_currency(client_for, team, priced_quote, platform_user):
    services.quote_update(actor=platform_user, quote=priced_quote, currency="EUR")
    services.price_record(
        actor=platform_user, quote=priced_quote, component=PriceComponent.CONTRACTED_PRICE, amount="2.40",
        source_kind=SourceKind.EMAIL, source_reference="sales@acme.test", observed_at=READ_AT,
    )
    services.exchange_rate_record(
        actor=platform_user, team=team, from_currency="EUR", to_currency="USD", rate="1.0835",
        source="https://www.ecb.europa.eu/", as_of=datetime.date(2026, 11, 30),
    )
    response = client_for(platform_user).get(reverse("quotes:quote-list"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="data-table sortable"' in html and "<th scope=\"col\" data-sort" in html
    # 2.40 EUR × 1.0835 = 2.60040 USD, shown with six significant digits; the raw value sorts the column.
    assert "2.60040" in html
    assert 'data-sort-value="2.600400"' in html
    assert "3.50000" in html  # the list price, already in USD
    assert "fresh" in html


def test_a_missing_exchange_rate_is_said_not_hidden(client_for, priced_quote, platform_user):
    services.quote_update(actor=platform_user, quote=priced_quote, currency="IDR")
    services.price_record(
        actor=platform_user, quote=priced_quote, component=PriceComponent.CONTRACTED_PRICE, amount="42000",
        source_kind=SourceKind.EMAIL, source_reference="sales@acme.test", observed_at=READ_AT,
    )
    html = client_for(platform_user).get(reverse("quotes:quote-list")).content.decode()
    assert "no IDR rate" in html


def test_the_detail_page_shows_every_price_version_and_links_the_audit_log(client_for, priced_quote, platform_user):
    services.price_record(
        actor=platform_user, quote=priced_quote, component=PriceComponent.LIST_PRICE, amount="3.20",
        source_kind=SourceKind.PRICE_PAGE, source_reference="https://acme.test/pricing?v=2", observed_at=READ_AT,
    )
    response = client_for(platform_user).get(priced_quote.get_absolute_url())
    html = response.content.decode()
    assert "3.20000 USD" in html and "3.50000 USD" in html
    assert "v2" in html and "v1" in html
    assert priced_quote.get_history_url() in html
    history = client_for(platform_user).get(priced_quote.get_history_url()).content.decode()
    assert "3.50" in history and "3.20" in history


def test_a_gpu_quote_without_platform_labor_shows_a_warning(client_for, priced_quote, platform_user):
    html = client_for(platform_user).get(priced_quote.get_absolute_url()).content.decode()
    assert 'id="labor-warning"' in html
    services.cost_line_add(
        actor=platform_user, quote=priced_quote, kind=CostKind.PLATFORM_LABOR, quantity="20", unit="hours",
        rate="90", estimate_reason="on-call and upgrades",
    )
    html = client_for(platform_user).get(priced_quote.get_absolute_url()).content.decode()
    assert 'id="labor-warning"' not in html


def test_platform_creates_a_quote_and_lands_on_its_checklist(client_for, team, vendor, gpu, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:quote-create"),
        {
            "vendor": vendor.pk, "title": "4× H200 spot", "gpu": gpu.pk, "gpus_per_node": 4, "node_count": 1,
            "commercial_model": CommercialModel.SPOT, "price_unit": PriceUnit.GPU_HOUR, "currency": "USD",
            "spot_preemption_rate_per_hour": "0.015", "spot_preemption_source": "provider spot history, 30 days",
        },
    )
    quote = Quote.objects.get(title="4× H200 spot")
    assert response.status_code == 302
    assert response["Location"] == reverse("quotes:quote-checklist", args=[quote.pk])
    assert quote.team == team and quote.created_by == platform_user


def test_the_quote_form_reports_the_service_rules(client_for, vendor, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:quote-create"),
        {"vendor": vendor.pk, "title": "No GPU", "gpus_per_node": 1, "node_count": 1,
         "commercial_model": CommercialModel.ON_DEMAND, "price_unit": PriceUnit.GPU_HOUR, "currency": "USD"},
    )
    assert response.status_code == 200
    assert "Name the GPU from the catalog." in response.content.decode()
    assert not Quote.objects.filter(title="No GPU").exists()


def test_recording_a_price_through_the_form_adds_a_version(client_for, priced_quote, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:price-create", args=[priced_quote.pk]),
        {"component": PriceComponent.LIST_PRICE, "amount": "0.000000123", "currency": "", "source_kind": "api",
         "source_reference": "GET /v1/prices", "observed_at": "2026-12-01T08:00"},
    )
    assert response.status_code == 302
    versions = PriceVersion.objects.filter(quote=priced_quote).order_by("number")
    assert [str(v.amount) for v in versions] == ["3.50", "1.23E-7"]
    assert versions[1].currency == "USD"


def test_a_price_form_without_a_source_saves_nothing(client_for, priced_quote, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:price-create", args=[priced_quote.pk]),
        {"component": PriceComponent.LIST_PRICE, "amount": "3.10", "source_kind": "email", "source_reference": "",
         "observed_at": "2026-12-01T08:00"},
    )
    assert response.status_code == 200
    assert PriceVersion.objects.filter(quote=priced_quote).count() == 1


def test_a_vendor_is_created_in_the_active_team(client_for, team, platform_user):
    response = client_for(platform_user).post(reverse("quotes:vendor-create"), {"name": "Nimbus GPU"})
    assert response.status_code == 302
    assert Vendor.objects.get(name="Nimbus GPU").team == team


def test_a_cost_line_change_replaces_it(client_for, priced_quote, platform_user):
    line = services.cost_line_add(
        actor=platform_user, quote=priced_quote, kind=CostKind.STORAGE, quantity="10", unit="TB-month", rate="20",
        source_reference="https://acme.test/pricing#storage", observed_at=READ_AT,
    )
    response = client_for(platform_user).post(
        reverse("quotes:cost-line-edit", args=[line.pk]),
        {"kind": "storage", "quantity": "12", "unit": "TB-month", "rate": "20", "currency": "USD", "period": "month",
         "source_reference": "https://acme.test/pricing#storage", "observed_at": "2026-11-30T14:00"},
    )
    assert response.status_code == 302
    line.refresh_from_db()
    assert line.replaced_by is not None and str(line.replaced_by.quantity) == "12"


def test_documents_download_only_for_the_team(client_for, priced_quote, platform_user, outsider):
    from django.core.files.uploadedfile import SimpleUploadedFile

    document = services.document_attach(
        actor=platform_user, quote=priced_quote, upload=SimpleUploadedFile("q.pdf", b"%PDF-1.7 test")
    )
    response = client_for(platform_user).get(document.get_absolute_url())
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"%PDF-1.7 test"
    assert client_for(outsider).get(document.get_absolute_url()).status_code == 404


def test_the_stale_prices_page_lists_the_flags(client_for, team, quote, platform_user):
    services.price_record(
        actor=platform_user, quote=quote, component=PriceComponent.LIST_PRICE, amount="3.50",
        source_kind=SourceKind.PRICE_PAGE, source_reference="https://acme.test/pricing",
        observed_at=timezone.now() - datetime.timedelta(days=45),
    )
    services.stale_prices_flag()
    html = client_for(platform_user).get(reverse("quotes:stale-prices")).content.decode()
    assert "8× H200 on-demand" in html and "stale" in html


@pytest.mark.parametrize(
    "name",
    ["quotes:quote-list", "quotes:vendor-list", "quotes:candidate-list", "quotes:rate-list", "quotes:stale-prices"],
)
def test_finance_reads_the_lists(client_for, finance_user, priced_quote, name):
    assert client_for(finance_user).get(reverse(name)).status_code == 200


def test_finance_reads_a_quote_but_cannot_change_it(client_for, finance_user, priced_quote):
    client = client_for(finance_user)
    assert client.get(priced_quote.get_absolute_url()).status_code == 200
    assert client.get(reverse("quotes:quote-checklist", args=[priced_quote.pk])).status_code == 200
    for name in ("quotes:quote-edit", "quotes:price-create", "quotes:cost-line-create", "quotes:document-upload"):
        assert client.get(reverse(name, args=[priced_quote.pk])).status_code == 403
    response = client.post(
        reverse("quotes:price-create", args=[priced_quote.pk]),
        {"component": "list_price", "amount": "1", "source_kind": "email", "source_reference": "x",
         "observed_at": "2026-12-01T08:00"},
    )
    assert response.status_code == 403
    assert client.post(reverse("quotes:quote-checklist", args=[priced_quote.pk])).status_code == 403
    for name in ("quotes:quote-create", "quotes:vendor-create", "quotes:quote-import", "quotes:rate-create",
                 "quotes:candidate-create"):
        assert client.get(reverse(name)).status_code == 403
    assert PriceVersion.objects.filter(quote=priced_quote).count() == 1


def test_product_cannot_change_a_quote_either(client_for, product_user, priced_quote):
    assert client_for(product_user).get(reverse("quotes:quote-edit", args=[priced_quote.pk])).status_code == 403


def test_an_outsider_sees_nothing(client_for, outsider, priced_quote, platform_user):
    client = client_for(outsider)
    for name in ("quotes:quote-detail", "quotes:quote-edit", "quotes:price-create", "quotes:quote-checklist",
                 "quotes:cost-line-create", "quotes:document-upload"):
        assert client.get(reverse(name, args=[priced_quote.pk])).status_code == 404, name
    assert client.get(reverse("quotes:vendor-detail", args=[priced_quote.vendor_id])).status_code == 404
    listing = client.get(reverse("quotes:quote-list")).content.decode()
    assert "8× H200 on-demand" not in listing


def test_a_user_without_a_role_is_refused(client_for, roleless_user, priced_quote):
    assert client_for(roleless_user).get(reverse("quotes:quote-list")).status_code == 403


def test_every_form_page_renders_for_platform(client_for, priced_quote, platform_user):
    client = client_for(platform_user)
    line = services.cost_line_add(
        actor=platform_user, quote=priced_quote, kind=CostKind.STORAGE, quantity="1", unit="TB-month", rate="20",
        estimate_reason="rough guess for the test",
    )
    for url in (
        reverse("quotes:quote-create"), reverse("quotes:vendor-create"), reverse("quotes:rate-create"),
        reverse("quotes:quote-import"), reverse("quotes:candidate-create"),
        reverse("quotes:quote-edit", args=[priced_quote.pk]), reverse("quotes:price-create", args=[priced_quote.pk]),
        reverse("quotes:cost-line-create", args=[priced_quote.pk]),
        reverse("quotes:document-upload", args=[priced_quote.pk]),
        reverse("quotes:cost-line-edit", args=[line.pk]),
        reverse("quotes:vendor-edit", args=[priced_quote.vendor_id]),
        reverse("quotes:vendor-detail", args=[priced_quote.vendor_id]),
        reverse("quotes:quote-checklist", args=[priced_quote.pk]),
    ):
        assert client.get(url).status_code == 200, url
