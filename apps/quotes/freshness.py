"""When a price stops being trustworthy. Pure Python: computed on every read, never stored as a flag of the price.

A price is *expired* once the day after its valid-until date has begun, and *stale* once it is as old as the team's
stale age (at exactly that age, not a second later). Expired wins over stale because it is the stronger reason.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from enum import StrEnum


class FreshnessStatus(StrEnum):
    FRESH = "fresh"
    STALE = "stale"
    EXPIRED = "expired"
    MISSING = "missing"  # no price at all: as bad as a stale one for a decision

    @property
    def is_usable(self) -> bool:
        return self is FreshnessStatus.FRESH


#: The order from best to worst, for the freshness of a quote made of several prices.
SEVERITY = {
    FreshnessStatus.FRESH: 0,
    FreshnessStatus.STALE: 1,
    FreshnessStatus.EXPIRED: 2,
    FreshnessStatus.MISSING: 3,
}


@dataclass(frozen=True)
class Freshness:
    status: FreshnessStatus
    stale_at: datetime.datetime | None = None  # when the price turns (or turned) stale by age
    valid_until: datetime.date | None = None
    age: datetime.timedelta | None = None

    @property
    def is_fresh(self) -> bool:
        return self.status is FreshnessStatus.FRESH


def price_freshness(
    *,
    observed_at: datetime.datetime,
    valid_until: datetime.date | None,
    now: datetime.datetime,
    today: datetime.date,
    stale_after_days: int,
) -> Freshness:
    """The freshness of one price observed at `observed_at`; `today` is `now`'s date in the team's time zone."""
    if stale_after_days < 1:
        raise ValueError(f"stale_after_days must be at least 1, not {stale_after_days}")
    stale_at = observed_at + datetime.timedelta(days=stale_after_days)
    age = now - observed_at
    if valid_until is not None and today > valid_until:
        status = FreshnessStatus.EXPIRED
    elif now >= stale_at:
        status = FreshnessStatus.STALE
    else:
        status = FreshnessStatus.FRESH
    return Freshness(status=status, stale_at=stale_at, valid_until=valid_until, age=age)


def worst(freshnesses: list[Freshness]) -> Freshness:
    """The freshness of a whole quote: its worst price (MISSING when it has none)."""
    if not freshnesses:
        return Freshness(status=FreshnessStatus.MISSING)
    return max(freshnesses, key=lambda freshness: SEVERITY[freshness.status])
