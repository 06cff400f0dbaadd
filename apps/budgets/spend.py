"""The committed spend the budgets count: the accepted decision records of a team and cost centre.

Decisions sits above budgets, so budgets never reads a record itself: decisions registers, in its AppConfig.ready(),
the function that lists them (`register_source`), and the check and the finance page ask `committed_records()`. The
arrows between apps stay downward; this registry is the one indirection (like apps/common/page_parts.py).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class CommittedRecord:
    """One accepted record as its snapshot froze it: the chosen option's monthly total in `currency` (None when the
    frozen comparison has none), its commitment months (None: no commitment) and its tags."""

    team_id: int
    cost_centre_id: int
    record_id: int
    reference: str
    title: str
    url: str
    monthly_total: Decimal | None
    currency: str
    commitment_months: Decimal | None = None
    accepted_at: datetime.datetime | None = None
    tags: tuple[str, ...] = ()


#: A source: (team_ids, cost_centre_ids or None for all, record ids to leave out) → the accepted records.
Source = Callable[..., Iterable[CommittedRecord]]

_sources: list[Source] = []


def register_source(source: Source) -> None:
    """Add a source of committed records (once: registering the same function again changes nothing)."""
    if source not in _sources:
        _sources.append(source)


def committed_records(
    *, team_ids: Iterable[int], cost_centre_ids: Iterable[int] | None = None, exclude_record_ids: Iterable[int] = ()
) -> list[CommittedRecord]:
    """Every accepted record of these teams (and cost centres) that a registered source knows, ordered by reference."""
    teams = sorted(set(team_ids))
    centres = None if cost_centre_ids is None else sorted(set(cost_centre_ids))
    excluded = frozenset(exclude_record_ids)
    found = [
        item
        for source in _sources
        for item in source(team_ids=teams, cost_centre_ids=centres, exclude_record_ids=excluded)
        if item.record_id not in excluded
    ]
    return sorted(found, key=lambda item: (item.team_id, item.cost_centre_id, item.record_id))
