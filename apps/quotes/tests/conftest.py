"""Fixtures of the quotes app's tests: a GPU, a vendor and an on-demand quote of `team`, with a sourced price."""

import datetime

import pytest
from django.utils import timezone

from apps.quotes import services
from apps.quotes.models import CommercialModel, PriceComponent, PriceUnit, SourceKind
from apps.quotes.tests.factories import GpuFactory

# The project's browser fixtures (Debian's Chromium through Playwright), for test_browser_quote_entry.py. The
# autouse ones of that module stay there: only the fixtures named here are shared.
from tests.browser.conftest import _allow_orm_beside_playwright, browser, login, page  # noqa: F401


@pytest.fixture
def gpu(db):
    return GpuFactory()


@pytest.fixture
def vendor(team, platform_user):
    return services.vendor_create(actor=platform_user, team=team, name="Acme GPU Cloud", website="https://acme.test")


@pytest.fixture
def quote(team, vendor, gpu, platform_user):
    return services.quote_create(
        actor=platform_user,
        team=team,
        vendor=vendor,
        title="8× H200 on-demand",
        gpu=gpu,
        gpus_per_node=8,
        commercial_model=CommercialModel.ON_DEMAND,
        price_unit=PriceUnit.GPU_HOUR,
        currency="USD",
        region="eu-west",
    )


@pytest.fixture
def priced_quote(quote, platform_user):
    services.price_record(
        actor=platform_user,
        quote=quote,
        component=PriceComponent.LIST_PRICE,
        amount="3.50",
        source_kind=SourceKind.PRICE_PAGE,
        source_reference="https://acme.test/pricing",
        observed_at=timezone.now() - datetime.timedelta(hours=1),
    )
    return quote


@pytest.fixture(autouse=True)
def _media_in_tmp(settings, tmp_path):
    # Uploaded quote documents go to a folder of the test's own, never to var/media.
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def ready_workload(team):
    from apps.workloads.tests.factories import ready_summary

    return ready_summary(team)


def answer_base_tier(quote, user):
    """Answer every question the default policy's first tier requires (what a pay-as-you-go quote needs)."""
    from apps.quotes.models import ChecklistQuestion, CommitmentTier

    tier = min(CommitmentTier.objects.all(), key=lambda tier: tier.minimum_commitment)
    for question in tier.required_questions.all():
        services.checklist_answer_set(
            actor=user, quote=quote, question=question, status="answered", value="Confirmed by the vendor"
        )
    return ChecklistQuestion.objects.filter(tiers=tier)


@pytest.fixture
def backed_quote(priced_quote, platform_user):
    """A priced on-demand quote whose checklist meets the commitment policy."""
    answer_base_tier(priced_quote, platform_user)
    return priced_quote
