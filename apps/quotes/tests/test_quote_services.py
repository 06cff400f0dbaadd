"""Quote terms: validated, audited, and consistent with the commercial model."""

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import ObjectChange
from apps.quotes import services
from apps.quotes.models import CommercialModel, PriceUnit, Quote
from tests.factories import TeamFactory


def test_creating_a_quote_is_audited(quote, platform_user):
    entry = ObjectChange.objects.for_object(quote).get()
    assert entry.action == "create"
    assert entry.after["title"] == "8× H200 on-demand"
    assert entry.team == quote.team


def test_an_update_records_before_and_after(quote, platform_user):
    services.quote_update(actor=platform_user, quote=quote, region="ap-southeast-3")
    entry = ObjectChange.objects.for_object(quote).filter(action="update").get()
    assert entry.changes["region"] == ["eu-west", "ap-southeast-3"]


def test_an_update_stores_the_new_updated_at(quote, platform_user):
    stored = Quote.objects.get(pk=quote.pk).updated_at
    services.quote_update(actor=platform_user, quote=Quote.objects.get(pk=quote.pk), region="ap-southeast-3")
    assert Quote.objects.get(pk=quote.pk).updated_at > stored


def test_an_update_that_changes_nothing_writes_no_entry(quote, platform_user):
    services.quote_update(actor=platform_user, quote=quote, region="eu-west", title="8× H200 on-demand")
    assert not ObjectChange.objects.for_object(quote).filter(action="update").exists()


def test_a_vendor_update_is_audited_and_refuses_what_it_does_not_change(vendor, other_team, platform_user):
    services.vendor_update(actor=platform_user, vendor=vendor, name="Acme Cloud", contact="sales@acme.test")
    entry = ObjectChange.objects.for_object(vendor).filter(action="update").get()
    assert entry.changes == {"name": ["Acme GPU Cloud", "Acme Cloud"], "contact": ["", "sales@acme.test"]}
    with pytest.raises(TypeError):
        services.vendor_update(actor=platform_user, vendor=vendor, team=other_team)


def test_a_gpu_quote_names_its_gpu(team, vendor, platform_user):
    with pytest.raises(ValidationError) as error:
        services.quote_create(
            actor=platform_user, team=team, vendor=vendor, title="No GPU", commercial_model=CommercialModel.ON_DEMAND,
            price_unit=PriceUnit.GPU_HOUR, currency="USD",
        )
    assert "gpu" in error.value.message_dict


def test_a_model_api_route_needs_no_gpu_but_a_per_token_price_unit(team, vendor, platform_user):
    route = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Llama 3.1 70B via API",
        commercial_model=CommercialModel.MODEL_API, price_unit=PriceUnit.MILLION_TOKENS, currency="USD",
        served_model="llama-3.1-70b-instruct",
    )
    assert route.is_api_route and route.billing_model == "api"
    with pytest.raises(ValidationError) as error:
        services.quote_create(
            actor=platform_user, team=team, vendor=vendor, title="API by the hour",
            commercial_model=CommercialModel.MODEL_API, price_unit=PriceUnit.GPU_HOUR, currency="USD",
        )
    assert "price_unit" in error.value.message_dict


def test_a_purchase_is_priced_per_node_with_sourced_owning_figures(team, vendor, gpu, platform_user):
    with pytest.raises(ValidationError) as error:
        services.quote_create(
            actor=platform_user, team=team, vendor=vendor, title="Buy 1 HGX H200", gpu=gpu,
            commercial_model=CommercialModel.PURCHASE, price_unit=PriceUnit.NODE_PURCHASE, currency="USD",
            amortisation_months=48, power_kw_per_node="10.2", pue="1.3",
        )
    # Each owning figure needs its source.
    assert {"__all__"} <= set(error.value.message_dict) or "amortisation_source" in str(error.value)
    purchase = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Buy 1 HGX H200", gpu=gpu,
        commercial_model=CommercialModel.PURCHASE, price_unit=PriceUnit.NODE_PURCHASE, currency="USD",
        amortisation_months=48, amortisation_source="Finance policy FP-12: servers over 4 years",
        power_kw_per_node="10.2", power_source="https://vendor.test/hgx-h200-datasheet.pdf, max system power",
        pue="1.3", pue_source="Colo contract, annex B",
    )
    assert purchase.billing_model == "purchase"


def test_a_purchase_needs_its_owning_figures(team, vendor, gpu, platform_user):
    with pytest.raises(ValidationError) as error:
        services.quote_create(
            actor=platform_user, team=team, vendor=vendor, title="Buy", gpu=gpu,
            commercial_model=CommercialModel.PURCHASE, price_unit=PriceUnit.NODE_PURCHASE, currency="USD",
        )
    assert {"amortisation_months", "power_kw_per_node", "pue"} <= set(error.value.message_dict)


def test_only_a_purchase_is_priced_per_node_bought(team, vendor, gpu, platform_user):
    with pytest.raises(ValidationError):
        services.quote_create(
            actor=platform_user, team=team, vendor=vendor, title="Odd", gpu=gpu,
            commercial_model=CommercialModel.ON_DEMAND, price_unit=PriceUnit.NODE_PURCHASE, currency="USD",
        )


def test_a_spot_preemption_rate_needs_its_source(team, vendor, gpu, platform_user):
    with pytest.raises(ValidationError):
        services.quote_create(
            actor=platform_user, team=team, vendor=vendor, title="Spot", gpu=gpu,
            commercial_model=CommercialModel.SPOT, price_unit=PriceUnit.GPU_HOUR, currency="USD",
            spot_preemption_rate_per_hour="0.02",
        )
    spot = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Spot", gpu=gpu,
        commercial_model=CommercialModel.SPOT, price_unit=PriceUnit.GPU_HOUR, currency="USD",
        spot_preemption_rate_per_hour="0.02", spot_preemption_source="Provider's spot advisor, 30-day history",
    )
    assert spot.billing_model == "spot"


def test_a_quote_cannot_use_another_teams_vendor(platform_user, vendor, gpu):
    other = TeamFactory(slug="elsewhere")
    with pytest.raises(ValidationError):
        services.quote_create(
            actor=platform_user, team=other, vendor=vendor, title="x", gpu=gpu,
            commercial_model=CommercialModel.ON_DEMAND, price_unit=PriceUnit.GPU_HOUR, currency="USD",
        )
    assert not Quote.objects.filter(team=other).exists()


def test_reserved_with_committed_hours_is_billed_as_reserved(quote, platform_user):
    services.quote_update(
        actor=platform_user, quote=quote, commercial_model=CommercialModel.RESERVED, committed_hours_per_month="730",
        term_months=12,
    )
    assert quote.billing_model == "reserved"
    with pytest.raises(ValidationError):
        services.quote_update(actor=platform_user, quote=quote, committed_hours_per_month="800")
