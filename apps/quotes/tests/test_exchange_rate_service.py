"""Exchange rates: a rate without a source or a date is refused; conversion uses the newest rate, exactly."""

import datetime
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import ObjectChange
from apps.quotes import services
from apps.quotes.models import ExchangeRate
from apps.quotes.selectors import RateBook

SOURCE = "https://www.ecb.europa.eu/stats/policy_and_exchange_rates/euro_reference_exchange_rates/"


def record(team, user, **overrides):
    values = {
        "from_currency": "EUR",
        "to_currency": "USD",
        "rate": "1.0835",
        "source": SOURCE,
        "as_of": datetime.date(2026, 11, 30),
    }
    values.update(overrides)
    return services.exchange_rate_record(actor=user, team=team, **values)


def test_a_rate_without_a_source_is_refused(team, platform_user):
    with pytest.raises(ValidationError) as error:
        record(team, platform_user, source="  ")
    assert "source" in error.value.message_dict
    assert not ExchangeRate.objects.exists()


def test_a_rate_without_a_date_is_refused(team, platform_user):
    with pytest.raises(ValidationError) as error:
        record(team, platform_user, as_of=None)
    assert "as_of" in error.value.message_dict
    assert not ExchangeRate.objects.exists()


@pytest.mark.parametrize("rate", ["0", "-1.2", "abc"])
def test_a_rate_must_be_a_positive_number(team, platform_user, rate):
    with pytest.raises(ValidationError):
        record(team, platform_user, rate=rate)


def test_a_rate_converts_between_two_different_iso_currencies(team, platform_user):
    with pytest.raises(ValidationError):
        record(team, platform_user, to_currency="EUR")
    with pytest.raises(ValidationError):
        record(team, platform_user, to_currency="XYZ")


def test_recording_a_rate_is_audited(team, platform_user):
    rate = record(team, platform_user)
    entry = ObjectChange.objects.for_object(rate).get()
    assert entry.action == "create"
    assert entry.after["rate"] == "1.0835"
    assert entry.after["source"] == SOURCE


def test_conversion_uses_the_newest_rate_on_or_before_the_day_and_is_exact(team, platform_user):
    record(team, platform_user, rate="1.05", as_of=datetime.date(2026, 11, 1))
    record(team, platform_user, rate="1.0835", as_of=datetime.date(2026, 11, 30))
    record(team, platform_user, rate="9.99", as_of=datetime.date(2026, 12, 24))  # not yet valid on the day below
    book = RateBook(team, on=datetime.date(2026, 12, 2))
    converted = book.convert(Decimal("1234567890123456.78"), "EUR", "USD")
    assert converted.rate.rate == Decimal("1.0835")
    # Exact: the integer product of the digits, scaled by 10^-2 × 10^-4.
    assert converted.amount == Decimal(f"{123456789012345678 * 10835}E-6")
    assert converted.amount == Decimal("1337654308948765.421130")


def test_a_missing_rate_is_reported_not_guessed(team):
    converted = RateBook(team).convert(Decimal("10"), "JPY", "USD")
    assert converted.missing_rate
    assert converted.amount is None


def test_the_same_currency_needs_no_rate(team):
    converted = RateBook(team).convert(Decimal("10.5"), "USD", "USD")
    assert converted.amount == Decimal("10.5")
    assert converted.rate is None
