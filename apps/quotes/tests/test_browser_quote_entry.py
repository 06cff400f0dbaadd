"""A platform user enters a quote, its price and its checklist in real Chromium (the checklist on one form)."""

import re

import pytest
from django.apps import apps as django_apps

from apps.quotes import checklist_data as checklist
from apps.quotes.models import ChecklistAnswer, PriceVersion, Quote
from apps.quotes.tests.factories import GpuFactory

pytestmark = pytest.mark.browser


def label(text: str) -> re.Pattern:
    """A form label exactly, with or without Django's label suffix (":")."""
    return re.compile(rf"^{re.escape(text)}:?$")


@pytest.fixture
def checklist_data(transactional_db):
    # A transactional test may start after another one flushed the tables: load the checklist data again.
    checklist.load(django_apps, None)


def test_platform_enters_a_quote_with_its_price_and_checklist(page, login, platform_user, vendor, checklist_data):
    gpu = GpuFactory()
    login(page, platform_user)

    page.goto("/quotes/new/")
    page.get_by_label(label("Vendor")).select_option(label=vendor.name)
    page.get_by_label(label("Title")).fill("8× H200 reserved, Jakarta")
    page.get_by_label(label("GPU")).select_option(label=gpu.display_name)
    page.get_by_label(label("GPUs per node")).fill("8")
    page.get_by_label(label("Commercial model")).select_option("reserved")
    page.get_by_label(label("Price unit")).select_option("gpu_hour")
    page.get_by_label(label("Currency")).select_option("USD")
    page.get_by_label(label("Committed hours per month")).fill("730")
    page.get_by_label(label("Term (months)")).fill("1")
    page.get_by_role("button", name="Save and continue to the checklist").click()
    page.wait_for_url("**/checklist/")
    quote = Quote.objects.get(title="8× H200 reserved, Jakarta")
    # commercial-model is answered from the quote's own commercial model, marked so.
    assert page.locator("#checklist-progress").inner_text().startswith("1 of 30")
    assert "From the quote" in page.locator("#question-commercial-model").inner_text()

    # Answer two hardware questions and save the whole checklist in one go (one form, one transaction).
    section = page.locator("#section-hardware")
    section.locator('select[name="gpu-model-memory-node-status"]').select_option("answered")
    section.locator('textarea[name="gpu-model-memory-node-value"]').fill("8× H200 SXM 141 GB on HGX")
    section.locator('input[name="gpu-model-memory-node-evidence"]').fill("quote PDF, page 1")
    section.locator('select[name="failed-hardware-replacement-status"]').select_option("not_provided")
    page.get_by_role("button", name="Save the checklist").click()
    page.get_by_text("Checklist saved.").wait_for()
    assert page.locator("#checklist-progress").inner_text().startswith("3 of 30")
    assert set(ChecklistAnswer.objects.filter(quote=quote).values_list("question__code", "status", "origin")) == {
        ("gpu-model-memory-node", "answered", "person"),
        ("failed-hardware-replacement", "not_provided", "person"),
        ("commercial-model", "answered", "quote"),
    }
    # Still below the policy: the missing answers are named on the page.
    assert "idle capacity is billed" in page.locator("#policy-status").inner_text()

    # Record the contracted price with its source and timestamp.
    page.goto(f"/quotes/{quote.pk}/prices/new/")
    page.get_by_label(label("Priced item")).select_option("contracted_price")
    page.get_by_label(label("Amount")).fill("2.85")
    page.get_by_label(label("Source kind")).select_option("email")
    page.get_by_label(label("Source")).fill("sales@acme.test, “H200 reserved”, 30 Nov")
    page.get_by_label(label("Observed at")).fill("2026-11-30T14:00")
    page.get_by_role("button", name="Save this version").click()
    page.wait_for_url(f"**/quotes/{quote.pk}/")
    assert "2.85000 USD" in page.locator("main").inner_text()
    assert PriceVersion.objects.get(quote=quote).source_reference == "sales@acme.test, “H200 reserved”, 30 Nov"
