"""Freshness is computed on read: a price turns stale at exactly the team's age, and expires after valid-until."""

import datetime

import time_machine

from apps.quotes import selectors, services
from apps.quotes.freshness import FreshnessStatus, price_freshness
from apps.quotes.models import PriceComponent, SourceKind, StalePriceFlag
from apps.quotes.tasks import flag_stale_prices

OBSERVED = datetime.datetime(2026, 11, 1, 9, 30, tzinfo=datetime.UTC)


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


def test_the_pure_rule_turns_stale_at_exactly_the_age():
    at = OBSERVED + datetime.timedelta(days=30)
    before = price_freshness(
        observed_at=OBSERVED, valid_until=None, now=at - datetime.timedelta(microseconds=1), today=at.date(),
        stale_after_days=30,
    )
    exactly = price_freshness(observed_at=OBSERVED, valid_until=None, now=at, today=at.date(), stale_after_days=30)
    assert before.status is FreshnessStatus.FRESH
    assert exactly.status is FreshnessStatus.STALE
    assert exactly.stale_at == at


def test_a_price_turns_stale_at_exactly_the_team_stale_age(team, quote, platform_user):
    team.stale_price_age_days = 14
    team.save(update_fields=["stale_price_age_days"])
    with time_machine.travel(OBSERVED + datetime.timedelta(days=1), tick=False):
        price = record(quote, platform_user)
    stale_at = OBSERVED + datetime.timedelta(days=14)
    with time_machine.travel(stale_at - datetime.timedelta(seconds=1), tick=False):
        assert selectors.freshness_of(price, stale_after_days=14).status is FreshnessStatus.FRESH
        assert selectors.quote_freshness(selectors.quote_get(platform_user, quote.pk)).is_fresh
    with time_machine.travel(stale_at, tick=False):
        assert selectors.freshness_of(price, stale_after_days=14).status is FreshnessStatus.STALE
        assert selectors.quote_freshness(selectors.quote_get(platform_user, quote.pk)).status is FreshnessStatus.STALE


def test_a_price_past_its_valid_until_date_is_expired(quote, platform_user):
    with time_machine.travel(OBSERVED, tick=False):
        price = record(quote, platform_user, valid_until=datetime.date(2026, 11, 5))
    with time_machine.travel(datetime.datetime(2026, 11, 5, 23, 59, tzinfo=datetime.UTC), tick=False):
        assert selectors.freshness_of(price, stale_after_days=30).status is FreshnessStatus.FRESH
    with time_machine.travel(datetime.datetime(2026, 11, 6, 0, 0, tzinfo=datetime.UTC), tick=False):
        assert selectors.freshness_of(price, stale_after_days=30).status is FreshnessStatus.EXPIRED


def test_a_quote_without_its_required_price_is_missing(quote):
    assert selectors.quote_freshness(quote).status is FreshnessStatus.MISSING


def test_a_new_version_makes_the_quote_fresh_again(team, quote, platform_user):
    with time_machine.travel(OBSERVED, tick=False):
        record(quote, platform_user)
    with time_machine.travel(OBSERVED + datetime.timedelta(days=40), tick=False):
        assert selectors.quote_freshness(selectors.quote_get(platform_user, quote.pk)).status is FreshnessStatus.STALE
        record(quote, platform_user, observed_at=OBSERVED + datetime.timedelta(days=39))
        assert selectors.quote_freshness(selectors.quote_get(platform_user, quote.pk)).is_fresh


def test_the_beat_task_flags_stale_prices_once_and_clears_them_when_superseded(team, quote, platform_user):
    with time_machine.travel(OBSERVED, tick=False):
        old = record(quote, platform_user)
    with time_machine.travel(OBSERVED + datetime.timedelta(days=29, hours=23), tick=False):
        assert flag_stale_prices() == {"flagged": 0, "cleared": 0, "open": 0}
    with time_machine.travel(OBSERVED + datetime.timedelta(days=30), tick=False):
        assert flag_stale_prices() == {"flagged": 1, "cleared": 0, "open": 1}
        assert flag_stale_prices() == {"flagged": 0, "cleared": 0, "open": 1}  # idempotent
        flag = StalePriceFlag.objects.get()
        assert (flag.price, flag.team, flag.reason) == (old, team, "stale")
        record(quote, platform_user, observed_at=OBSERVED + datetime.timedelta(days=30))
        assert flag_stale_prices() == {"flagged": 0, "cleared": 1, "open": 0}
    flag.refresh_from_db()
    assert flag.cleared_at is not None


def test_the_task_is_on_the_beat_schedule(settings):
    entries = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert "quotes.flag_stale_prices" in entries
