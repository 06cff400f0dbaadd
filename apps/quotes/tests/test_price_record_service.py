"""Prices are never edited in place: a new price is a new version, every version has a source and a timestamp."""

import datetime
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.audit.models import ObjectChange
from apps.quotes import selectors, services
from apps.quotes.models import PriceComponent, PriceVersion, SourceKind

OBSERVED = datetime.datetime(2026, 11, 30, 14, 0, tzinfo=datetime.UTC)


def record(quote, user, **overrides):
    values = {
        "component": PriceComponent.LIST_PRICE,
        "amount": "3.50",
        "source_kind": SourceKind.PRICE_PAGE,
        "source_reference": "https://acme.test/pricing",
        "observed_at": OBSERVED,
    }
    values.update(overrides)
    return services.price_record(actor=user, quote=quote, **values)


def test_a_new_price_is_a_new_version_and_the_old_one_stays(quote, platform_user):
    first = record(quote, platform_user, amount="3.50")
    second = record(quote, platform_user, amount="3.20", observed_at=OBSERVED + datetime.timedelta(hours=20))
    assert (first.number, second.number) == (1, 2)
    first.refresh_from_db()
    assert first.amount == Decimal("3.50")  # untouched
    current = selectors.current_prices(selectors.quote_get(platform_user, quote.pk))
    assert current[PriceComponent.LIST_PRICE].pk == second.pk
    history = dict(selectors.price_history(quote))
    assert [version.number for version in history[PriceComponent.LIST_PRICE.label]] == [2, 1]


def test_each_priced_item_has_its_own_versions(quote, platform_user):
    record(quote, platform_user)
    contracted = record(quote, platform_user, component=PriceComponent.CONTRACTED_PRICE, amount="2.90")
    assert contracted.number == 1
    assert set(selectors.current_prices(quote)) == {PriceComponent.LIST_PRICE, PriceComponent.CONTRACTED_PRICE}


def test_a_price_change_is_in_the_quote_audit_log_with_old_and_new_values(quote, platform_user):
    record(quote, platform_user, amount="3.50")
    record(quote, platform_user, amount="3.20")
    entry = ObjectChange.objects.for_object(quote).filter(action="update").first()
    assert entry.before["list_price"]["amount"] == "3.50"
    assert entry.after["list_price"]["amount"] == "3.20"
    assert entry.after["list_price"]["version"] == 2
    assert entry.actor == platform_user


def test_a_price_without_a_source_is_refused(quote, platform_user):
    with pytest.raises(ValidationError) as error:
        record(quote, platform_user, source_reference="   ", source_kind=SourceKind.EMAIL)
    assert "source_reference" in error.value.message_dict
    assert not PriceVersion.objects.exists()


def test_a_price_without_a_timestamp_is_refused(quote, platform_user):
    with pytest.raises(ValidationError) as error:
        record(quote, platform_user, observed_at=None)
    assert "observed_at" in error.value.message_dict
    assert not PriceVersion.objects.exists()


def test_a_price_page_is_cited_by_its_url(quote, platform_user):
    with pytest.raises(ValidationError) as error:
        record(quote, platform_user, source_reference="the website")
    assert "source_reference" in error.value.message_dict


def test_a_vendor_quote_file_must_be_attached(quote, platform_user):
    with pytest.raises(ValidationError) as error:
        record(quote, platform_user, source_kind=SourceKind.VENDOR_QUOTE_FILE, source_reference="quote.pdf p. 2")
    assert "document" in error.value.message_dict
    document = services.document_attach(
        actor=platform_user,
        quote=quote,
        upload=SimpleUploadedFile("quote.pdf", b"%PDF-1.7\n1 0 obj\n", content_type="application/pdf"),
    )
    version = record(
        quote, platform_user, source_kind=SourceKind.VENDOR_QUOTE_FILE, source_reference="quote.pdf p. 2",
        document=document,
    )
    assert version.document == document


def test_a_price_cannot_be_observed_in_the_future(quote, platform_user):
    with pytest.raises(ValidationError):
        record(quote, platform_user, observed_at=timezone.now() + datetime.timedelta(days=1))


def test_a_negative_or_non_numeric_price_is_refused(quote, platform_user):
    with pytest.raises(ValidationError):
        record(quote, platform_user, amount="-1")
    with pytest.raises(ValidationError):
        record(quote, platform_user, amount="three")


def test_a_price_keeps_the_currency_it_was_quoted_in(quote, platform_user):
    version = record(quote, platform_user)
    services.quote_update(actor=platform_user, quote=quote, currency="EUR")
    version.refresh_from_db()
    assert version.currency == "USD"
    assert record(quote, platform_user, amount="3.10").currency == "EUR"


def test_a_version_records_who_entered_it_and_when(quote, platform_user):
    before = timezone.now()
    version = record(quote, platform_user)
    assert version.entered_by == platform_user
    assert version.entered_at >= before
