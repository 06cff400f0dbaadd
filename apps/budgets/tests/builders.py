"""Cost centres, budgets and policies built through the services, as finance builds them."""

from __future__ import annotations

import datetime
import itertools

from apps.budgets import services
from tests.factories import UserFactory

_numbers = itertools.count(1)


def finance_member(team, name: str = ""):
    return UserFactory(username=name or f"budget-finance-{next(_numbers)}", roles=["finance"], teams=[team])


def cost_centre(team, actor=None, *, code: str = "", name: str = "GPU serving"):
    actor = actor or finance_member(team)
    return services.cost_centre_create(actor=actor, team=team, code=code or f"CC-{4100 + next(_numbers)}", name=name)


def budget(team, centre=None, actor=None, *, amount: str = "72000.00", period: str = "annual", currency: str = "USD",
           start_date: datetime.date | None = None):
    actor = actor or finance_member(team)
    centre = centre or cost_centre(team, actor)
    return services.budget_create(
        actor=actor, team=team, cost_centre=centre, amount=amount, currency=currency, period=period,
        start_date=start_date or datetime.date(2000, 1, 1), owner=actor,
    )
