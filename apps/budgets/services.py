"""Writes of budgets: cost centres, budgets and the team's policy, by the finance and admin roles of the team. Every
write is validated (full_clean) and audited through apps/audit/services.model_create / model_update."""

from __future__ import annotations

import datetime
from decimal import Decimal

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from apps.accounts.roles import Role, has_role
from apps.audit.services import model_create, model_update
from apps.budgets.models import Budget, BudgetPolicy, CostCentre
from apps.common import money

COST_CENTRE_FIELDS = ("code", "name")
BUDGET_FIELDS = ("cost_centre", "amount", "currency", "period", "start_date", "owner")
POLICY_FIELDS = ("mode", "warn_fraction")


def may_manage(user) -> bool:
    """Cost centres, budgets and the policy are set by the finance and admin roles."""
    return has_role(user, Role.FINANCE, Role.ADMIN)


def _require_manager(actor, team) -> None:
    if not may_manage(actor):
        raise PermissionDenied(_("Only the finance and admin roles may change budgets."))
    if not (actor.is_superuser or actor.memberships.filter(team=team).exists()):
        raise PermissionDenied(_("You are not a member of this team."))


def _decimal(value, field: str) -> Decimal | None:
    if value in (None, ""):
        return None
    try:
        return money.to_decimal(value, field=field)
    except money.MoneyError:
        raise ValidationError({field: _("Enter a decimal number.")}) from None


def _duplicate_code(team, code: str, exclude_pk=None) -> None:
    duplicates = CostCentre.objects.filter(team=team, code=code)
    if exclude_pk is not None:
        duplicates = duplicates.exclude(pk=exclude_pk)
    if duplicates.exists():
        raise ValidationError({"code": _("The team already has a cost centre with this code.")})


@transaction.atomic
def cost_centre_create(*, actor, team, code: str, name: str) -> CostCentre:
    _require_manager(actor, team)
    code = (code or "").strip()
    _duplicate_code(team, code)
    centre = CostCentre(team=team, code=code, name=(name or "").strip(), created_by=actor)
    return model_create(instance=centre, actor=actor)


@transaction.atomic
def cost_centre_update(*, actor, cost_centre: CostCentre, **values) -> CostCentre:
    _require_manager(actor, cost_centre.team)
    values = {name: (value or "").strip() for name, value in values.items()}
    if "code" in values:
        _duplicate_code(cost_centre.team, values["code"], exclude_pk=cost_centre.pk)
    centre, _changed = model_update(instance=cost_centre, actor=actor, data=values, fields=COST_CENTRE_FIELDS)
    return centre


@transaction.atomic
def budget_create(
    *,
    actor,
    team,
    cost_centre: CostCentre,
    amount,
    currency: str,
    period: str,
    start_date: datetime.date | None,
    owner=None,
) -> Budget:
    """A budget of `amount` `currency` per `period` from `start_date` for one cost centre (owner: the actor)."""
    _require_manager(actor, team)
    budget = Budget(
        team=team, cost_centre=cost_centre, amount=_decimal(amount, "amount"), currency=currency, period=period,
        start_date=start_date, owner=owner or actor, created_by=actor,
    )
    return model_create(instance=budget, actor=actor)


@transaction.atomic
def budget_update(*, actor, budget: Budget, **values) -> Budget:
    _require_manager(actor, budget.team)
    if "amount" in values:
        values["amount"] = _decimal(values["amount"], "amount")
    budget, _changed = model_update(instance=budget, actor=actor, data=values, fields=BUDGET_FIELDS)
    return budget


@transaction.atomic
def policy_set(*, actor, team, mode: str, warn_fraction=None) -> BudgetPolicy:
    """The team's policy for a record over its budget: warn or block, and optionally warn from a share of it."""
    _require_manager(actor, team)
    fraction = _decimal(warn_fraction, "warn_fraction")
    policy = BudgetPolicy.objects.select_for_update().filter(team=team).first()
    if policy is None:
        return model_create(instance=BudgetPolicy(team=team, mode=mode, warn_fraction=fraction), actor=actor)
    policy, _changed = model_update(
        instance=policy, actor=actor, data={"mode": mode, "warn_fraction": fraction}, fields=POLICY_FIELDS
    )
    return policy
