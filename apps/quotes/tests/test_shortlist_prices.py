"""The quotes' price source for the workload shortlist (registered in QuotesConfig.ready): the team's cheapest
current price per GPU-hour per GPU model, and the workload page ranking by predicted cost per accepted output."""

import datetime
from decimal import Decimal

import pytest
from django.core.management import call_command

from apps.catalog.models import GpuModel
from apps.quotes import services
from apps.quotes.models import CommercialModel, PriceUnit
from apps.quotes.selectors import cheapest_gpu_hour_prices
from apps.workloads import price_sources
from apps.workloads.tests.factories import ready_summary
from tests.factories import TeamFactory

READ_AT = datetime.datetime(2026, 1, 15, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture
def catalog(db):
    call_command("load_catalog", verbosity=0)


def priced_quote(*, team, vendor, user, gpu, amount, unit=PriceUnit.GPU_HOUR, gpus_per_node=8, currency="USD",
                 valid_until=None, commercial_model=CommercialModel.ON_DEMAND, title=None):
    quote = services.quote_create(
        actor=user, team=team, vendor=vendor, title=title or f"{gpu.display_name} {amount}", gpu=gpu,
        gpus_per_node=gpus_per_node, commercial_model=commercial_model, price_unit=unit, currency=currency,
    )
    services.price_record(
        actor=user, quote=quote, component="list_price", amount=amount, source_kind="price_page",
        source_reference="https://cloud.example.test/pricing", observed_at=READ_AT, valid_until=valid_until,
    )
    return quote


def test_the_cheapest_current_gpu_hour_per_gpu_model_with_node_hours_shared_by_the_node(
    catalog, team, vendor, platform_user
):
    """H100: 3.10/GPU-h vs a node of 8 at 22.00/node-h = 2.75/GPU-h → 2.75 wins. H200: 2.00/GPU-h expired yesterday
    is left out, 4.00 stays. Another team's cheaper quote is never seen."""
    h100 = GpuModel.objects.get(name="NVIDIA H100", variant="SXM")
    h200 = GpuModel.objects.get(name="NVIDIA H200", variant="SXM")
    priced_quote(team=team, vendor=vendor, user=platform_user, gpu=h100, amount="3.10")
    node = priced_quote(team=team, vendor=vendor, user=platform_user, gpu=h100, amount="22.00",
                        unit=PriceUnit.NODE_HOUR)
    priced_quote(team=team, vendor=vendor, user=platform_user, gpu=h200, amount="2.00",
                 valid_until=datetime.date.today() - datetime.timedelta(days=1))
    priced_quote(team=team, vendor=vendor, user=platform_user, gpu=h200, amount="4.00")
    other = TeamFactory()
    other_vendor = services.vendor_create(actor=platform_user, team=other, name="Elsewhere")
    priced_quote(team=other, vendor=other_vendor, user=platform_user, gpu=h100, amount="0.10")

    prices = cheapest_gpu_hour_prices(team, [h100.pk, h200.pk])

    assert prices[h100.pk].amount == 22 / Decimal(8) and prices[h100.pk].kind == "quote"
    assert f"quote #{node.pk}" in prices[h100.pk].source and "Acme GPU Cloud" in prices[h100.pk].source
    assert prices[h200.pk].amount == 4
    assert prices[h100.pk].currency == "USD"


def test_a_price_in_another_currency_is_converted_or_left_out(catalog, team, vendor, platform_user):
    """1.00 EUR/GPU-h with a rate of 1.10 USD per EUR → 1.10 USD; without a rate the quote is left out."""
    h100 = GpuModel.objects.get(name="NVIDIA H100", variant="SXM")
    priced_quote(team=team, vendor=vendor, user=platform_user, gpu=h100, amount="1.00", currency="EUR")
    assert cheapest_gpu_hour_prices(team, [h100.pk]) == {}
    services.exchange_rate_record(actor=platform_user, team=team, from_currency="EUR", to_currency="USD",
                                  rate="1.10", source="https://ecb.example.test/rates", as_of=READ_AT.date())
    price = cheapest_gpu_hour_prices(team, [h100.pk])[h100.pk]
    assert price.amount == Decimal("1.10") and "converted at 1.1" in price.source


def test_the_quotes_provider_is_registered_for_the_shortlist():
    assert price_sources.providers()["quotes-cheapest-gpu-hour"] is cheapest_gpu_hour_prices
    assert price_sources.providers()["catalog-reference"] is price_sources.catalog_reference_prices


def test_the_workload_page_ranks_by_predicted_cost_with_a_quote_and_says_so(
    catalog, client_for, team, vendor, platform_user
):
    """With a quote only for the H100 SXM, it is the one costed GPU: ranked first with its prediction, price source
    and acceptance; the B200 (first by bandwidth before) follows without a price."""
    h100 = GpuModel.objects.get(name="NVIDIA H100", variant="SXM")
    quote = priced_quote(team=team, vendor=vendor, user=platform_user, gpu=h100, amount="2.50")
    summary = ready_summary(team)

    response = client_for(platform_user).get(summary.get_absolute_url())
    page = response.content.decode()

    shortlist = response.context["shortlist"]
    assert shortlist["ranking_basis"].startswith("Predicted cost per accepted output (USD)")
    assert 'id="shortlist-ranking-basis"' in page
    first = shortlist["entries"][0]
    assert first["gpu"] == h100 and first["cost"] is not None
    assert f"quote #{quote.pk}" in first["cost_basis"] and "acceptance 0.95 (stated)" in first["cost_basis"]
    assert "Predicted: roofline" in first["cost_basis"]
    b200 = next(entry for entry in shortlist["entries"] if entry["gpu"].name == "NVIDIA B200")
    assert b200["cost"] is None and "no known price" in b200["cost_basis"]
    assert "Predicted cost per accepted output" in page and "(prediction)" in page


def test_without_any_price_the_workload_page_keeps_the_fit_and_need_ranking(catalog, client_for, team, platform_user):
    summary = ready_summary(team)
    response = client_for(platform_user).get(summary.get_absolute_url())
    shortlist = response.context["shortlist"]
    assert shortlist["ranking_basis"] == ""
    assert shortlist["entries"][0]["gpu"].name == "NVIDIA B200"
    assert 'id="shortlist-ranking-basis"' not in response.content.decode()
