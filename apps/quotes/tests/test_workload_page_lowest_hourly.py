"""The workload page names the fitting candidate with the lowest hourly price, labelled as an hourly price."""

import datetime

import pytest
from django.core.management import call_command

from apps.catalog.models import GpuModel
from apps.quotes import services
from apps.quotes.models import CommercialModel, PriceUnit
from apps.quotes.tests.conftest import answer_base_tier
from apps.workloads.tests.factories import ready_summary

READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture
def catalog(db):
    call_command("load_catalog", verbosity=0)


def priced_candidate(*, team, vendor, user, summary, gpu, gpus_per_node, hourly):
    quote = services.quote_create(
        actor=user, team=team, vendor=vendor, title=f"{gpu.display_name} × {gpus_per_node}", gpu=gpu,
        gpus_per_node=gpus_per_node, commercial_model=CommercialModel.ON_DEMAND, price_unit=PriceUnit.GPU_HOUR,
        currency="USD",
    )
    services.price_record(
        actor=user, quote=quote, component="list_price", amount=hourly, source_kind="price_page",
        source_reference="https://cloud.example.test/pricing", observed_at=READ_AT,
    )
    answer_base_tier(quote, user)
    return services.candidate_create(actor=user, team=team, quote=quote, workload_summary=summary)


def test_the_cheapest_hour_that_fits_is_named_and_a_cheaper_one_that_does_not_fit_is_not(
    catalog, client_for, team, vendor, platform_user
):
    summary = ready_summary(team)  # an 8B model in bf16, 64 sessions at an 8k context: needs more than 24 GB
    small = GpuModel.objects.get(name="NVIDIA RTX 4090")
    large = GpuModel.objects.get(name="NVIDIA H200", variant="SXM")
    priced_candidate(
        team=team, vendor=vendor, user=platform_user, summary=summary, gpu=small, gpus_per_node=1, hourly="0.50"
    )
    fitting = priced_candidate(
        team=team, vendor=vendor, user=platform_user, summary=summary, gpu=large, gpus_per_node=8, hourly="3.50"
    )

    page = client_for(platform_user).get(summary.get_absolute_url()).content.decode()

    line = page[page.index('id="lowest-hourly"') :].split("</li>", 1)[0]
    assert fitting.label in line
    assert "3.50" in line
    assert "not the cost per accepted output" in line


def test_without_candidates_the_page_says_quotes_are_needed(catalog, client_for, team, platform_user):
    summary = ready_summary(team)
    page = client_for(platform_user).get(summary.get_absolute_url()).content.decode()
    assert "needs quotes" in page[page.index('id="lowest-hourly"') :].split("</li>", 1)[0]
