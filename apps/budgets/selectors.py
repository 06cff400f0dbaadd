"""Reads of budgets: the scoped querysets, the budget in force, a record's spend read from its comparison, the
check's input assembled from the database (budget, policy, accepted records, exchange rates), its message, and the
finance page's rows."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.budgets import check, spend
from apps.budgets.models import Budget, BudgetPolicy, CostCentre, Period
from apps.common import money
from apps.comparison import cost_model
from apps.comparison import selectors as comparison_selectors
from apps.quotes.selectors import RateBook

MONEY = money.FigureKind.MONEY

# ---------------------------------------------------------------------------------------------------------------
# Scoped querysets


def cost_centres_for(user) -> QuerySet[CostCentre]:
    return CostCentre.objects.for_user(user).select_related("team")


def budgets_for(user) -> QuerySet[Budget]:
    return Budget.objects.for_user(user).select_related("team", "cost_centre", "owner")


def policies_for(user) -> QuerySet[BudgetPolicy]:
    return BudgetPolicy.objects.for_user(user).select_related("team")


def budget_in_force(team, cost_centre: CostCentre, on: datetime.date) -> Budget | None:
    """The budget of the cost centre with the latest start on or before `on`."""
    return (
        Budget.objects.filter(team=team, cost_centre=cost_centre, start_date__lte=on)
        .select_related("cost_centre", "owner")
        .order_by("-start_date", "-pk")
        .first()
    )


def policy_of(team) -> check.Policy:
    """The team's policy (no row: warn, no threshold)."""
    policy = BudgetPolicy.objects.filter(team=team).first()
    return policy.rules() if policy is not None else check.Policy()


def cost_centre_required(team) -> bool:
    """Whether a proposal of this team must name a cost centre: its policy blocks records over their budget (so a
    record cannot pass by naming none). Under a warning policy a record without one is proposed unchecked."""
    return BudgetPolicy.objects.filter(team=team, mode=check.Mode.BLOCK).exists()


# ---------------------------------------------------------------------------------------------------------------
# A record's spend, from its comparison


@dataclass(frozen=True)
class SpendFigures:
    """The chosen option's monthly total in `currency` and its commitment months, or why there is none."""

    monthly_total: Decimal | None
    commitment_months: Decimal | None
    currency: str
    problem: str = ""


def monthly(row: cost_model.Row, demand: cost_model.Demand | None) -> Decimal:
    """The row's total per month: its total per period × 730 ÷ the period's hours (a 730-hour month is 1 month)."""
    period_hours = demand.period_hours if demand is not None else cost_model.HOURS_PER_MONTH
    if period_hours == cost_model.HOURS_PER_MONTH:
        return row.total_cost
    return row.total_cost * cost_model.HOURS_PER_MONTH / period_hours


def record_spend(comparison: comparison_selectors.Comparison) -> SpendFigures:
    """The monthly total and the commitment of the comparison's chosen option (a live or a frozen comparison)."""
    chosen = next((result for result in comparison.results if result.id == comparison.chosen_id), None)
    if chosen is None:
        return SpendFigures(None, None, comparison.currency, _("No option is chosen."))
    months = None
    if chosen.facts is not None and chosen.facts.commitment_months is not None:
        months = chosen.facts.commitment_months
    elif chosen.candidate_input is not None and chosen.candidate_input.commitment_months is not None:
        months = chosen.candidate_input.commitment_months
    if chosen.row is None:
        reason = chosen.problem.text if chosen.problem is not None else _("it has no cost per month")
        return SpendFigures(
            None, months, comparison.currency,
            _("The chosen option %(option)s has no monthly total: %(reason)s") % {"option": chosen.label,
                                                                                  "reason": reason},
        )
    return SpendFigures(monthly(chosen.row, comparison.demand), months, chosen.row.currency or comparison.currency)


# ---------------------------------------------------------------------------------------------------------------
# The check of one record


@dataclass
class RecordCheck:
    """The check of one record: what it read (`context`: the cost centre, the budget, the records counted, the
    rates) and its outcome. `data()` is what a snapshot freezes."""

    input: check.CheckInput
    result: check.BudgetCheck
    context: dict[str, Any] = field(default_factory=dict)

    def data(self) -> dict:
        return {"input": _plain(self.input), "result": _plain(self.result), "context": _plain(self.context),
                "message": message(self.result, self.context)}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: _plain(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _converted(book: RateBook, amount: Decimal, source: str, target: str, problems: list[str], rates: dict):
    converted = book.convert(amount, source, target)
    if converted.missing_rate:
        problem = _("No exchange rate from %(from)s to %(to)s.") % {"from": source, "to": target}
        if problem not in problems:
            problems.append(problem)
        return None
    if converted.rate is not None:
        rates[f"{source}->{target}"] = {"rate": converted.rate.rate, "as_of": converted.rate.as_of,
                                        "source": converted.rate.source}
    return converted.amount


def record_check(
    *,
    team,
    cost_centre: CostCentre,
    figures: SpendFigures,
    on: datetime.date | None = None,
    exclude_record_ids: Iterable[int] = (),
) -> RecordCheck:
    """The budget check of a record of `team` booked on `cost_centre`: the budget in force on `on` (default today),
    the team's policy, and the accepted records of the same cost centre (less `exclude_record_ids`: the record
    itself, the record it supersedes), each converted to the budget's currency with the team's newest rates."""
    on = on or timezone.localdate()
    budget = budget_in_force(team, cost_centre, on)
    policy = policy_of(team)
    problems: list[str] = []
    rates: dict[str, dict] = {}
    context: dict[str, Any] = {
        "on": on,
        "cost_centre": {"id": cost_centre.pk, "code": cost_centre.code, "name": cost_centre.name},
        "budget": None,
        "record": {"monthly_total": figures.monthly_total, "currency": figures.currency,
                   "commitment_months": figures.commitment_months},
        "counted": [],
        "rates": rates,
    }
    if figures.problem:
        problems.append(figures.problem)
    if budget is None:
        problems.append(
            _("The cost centre %(code)s has no budget in force on %(day)s.") % {"code": cost_centre.code,
                                                                                "day": on.isoformat()}
        )
        return _finish(check.CheckInput(None, None, (), policy, tuple(problems)), context)
    start, end = budget.period_containing(on)
    context["budget"] = {
        "id": budget.pk, "amount": budget.amount, "currency": budget.currency, "period": budget.period,
        "start_date": budget.start_date, "period_start": start, "period_end": end,
        "owner": budget.owner.get_username(),
    }
    book = RateBook(team, on=on)
    record_spend_value = None
    if figures.monthly_total is not None:
        amount = _converted(book, figures.monthly_total, figures.currency, budget.currency, problems, rates)
        if amount is not None:
            record_spend_value = check.RecordSpend(amount, figures.commitment_months)
    committed = []
    for item in spend.committed_records(
        team_ids=[team.pk], cost_centre_ids=[cost_centre.pk], exclude_record_ids=exclude_record_ids
    ):
        entry = {"id": item.record_id, "reference": item.reference, "monthly_total": item.monthly_total,
                 "currency": item.currency}
        context["counted"].append(entry)
        if item.monthly_total is None:
            problems.append(_("%(record)s has no frozen monthly total.") % {"record": item.reference})
            continue
        amount = _converted(book, item.monthly_total, item.currency, budget.currency, problems, rates)
        if amount is not None:
            committed.append(check.CommittedSpend(item.reference, amount))
    data = check.CheckInput(record_spend_value, budget.terms(), tuple(committed), policy, tuple(problems))
    return _finish(data, context)


def _finish(data: check.CheckInput, context: dict) -> RecordCheck:
    return RecordCheck(input=data, result=check.check(data), context=context)


def _money(value: Decimal | str | None, currency: str | None) -> str:
    return f"{money.shown(Decimal(value), MONEY, currency)} {currency}" if value is not None else "—"


def outcome_label(outcome: str) -> str:
    return {check.Outcome.WITHIN: _("within the budget"), check.Outcome.WARN: _("warning"),
            check.Outcome.BLOCK: _("blocked")}[check.Outcome(outcome)]


def message(result: check.BudgetCheck, context: dict) -> str:
    """The check in a sentence that names the budget and the figures (in the active language)."""
    centre = context.get("cost_centre") or {}
    budget = context.get("budget") or {}
    if result.reason is check.Reason.UNCHECKED:
        return _("Budget check of %(code)s not possible: %(problems)s") % {
            "code": centre.get("code", ""), "problems": " ".join(result.problems)}
    currency = result.currency
    params = {
        "code": centre.get("code", ""),
        "budget": _money(result.budget_amount, currency),
        "period": str(dict(_period_labels()).get(str(result.period), result.period)),
        "total_monthly": _money(result.total_monthly, currency),
        "budget_monthly": _money(result.budget_monthly, currency),
        "share": money.percent(result.share_monthly),
        "total_horizon": _money(result.total_over_horizon, currency),
        "budget_horizon": _money(result.budget_over_horizon, currency),
        "months": money.shown(result.horizon_months, money.FigureKind.QUANTITY),
        "record_monthly": _money(result.record_monthly, currency),
        "committed_monthly": _money(result.committed_monthly, currency),
        "owner": budget.get("owner", ""),
    }
    if result.reason is check.Reason.OVER:
        text = _(
            "Over the budget of %(code)s (%(budget)s %(period)s, owner %(owner)s): %(record_monthly)s a month on top "
            "of %(committed_monthly)s already committed makes %(total_monthly)s of %(budget_monthly)s a month "
            "(%(share)s %%), %(total_horizon)s of %(budget_horizon)s over %(months)s months."
        )
    elif result.reason is check.Reason.NEAR:
        text = _(
            "Near the budget of %(code)s (%(budget)s %(period)s, owner %(owner)s): %(total_monthly)s of "
            "%(budget_monthly)s a month (%(share)s %%), %(total_horizon)s of %(budget_horizon)s over %(months)s months."
        )
    else:
        text = _(
            "Within the budget of %(code)s (%(budget)s %(period)s): %(total_monthly)s of %(budget_monthly)s a month "
            "(%(share)s %%), %(total_horizon)s of %(budget_horizon)s over %(months)s months."
        )
    return text % params


def _period_labels():
    return [(value, str(label).lower()) for value, label in Period.choices]


# ---------------------------------------------------------------------------------------------------------------
# The finance page


@dataclass
class FinanceRow:
    """Committed spend of one cost centre in the current period of its budget, against the budget."""

    team: Any
    cost_centre: CostCentre
    budget: Budget | None
    period_start: datetime.date | None
    period_end: datetime.date | None
    records: list[spend.CommittedRecord]
    committed_monthly: Decimal | None
    committed_in_period: Decimal | None
    remaining: Decimal | None
    share: Decimal | None
    problems: list[str]

    @property
    def currency(self) -> str:
        return self.budget.currency if self.budget else ""

    @property
    def share_percent(self) -> Decimal | None:
        return money.percent(self.share) if self.share is not None else None

    @property
    def over(self) -> bool:
        return self.share is not None and self.share > 1


def finance_rows(user, *, team=None, on: datetime.date | None = None) -> list[FinanceRow]:
    """One row per cost centre of the user's teams (or of `team`): the budget in force, the accepted records booked
    on it and their committed spend in the budget's current period (monthly totals × the period's months, each
    converted to the budget's currency), the remainder and the share used."""
    on = on or timezone.localdate()
    centres = cost_centres_for(user)
    if team is not None:
        centres = centres.filter(team=team)
    centres = list(centres.order_by("team__name", "code"))
    records = spend.committed_records(
        team_ids={centre.team_id for centre in centres}, cost_centre_ids=[centre.pk for centre in centres]
    )
    books: dict[int, RateBook] = {}
    rows = []
    for centre in centres:
        mine = [item for item in records if item.cost_centre_id == centre.pk]
        budget = budget_in_force(centre.team, centre, on)
        problems: list[str] = []
        if budget is None:
            rows.append(FinanceRow(centre.team, centre, None, None, None, mine, None, None, None, None,
                                   [_("No budget in force.")]))
            continue
        book = books.setdefault(centre.team_id, RateBook(centre.team, on=on))
        monthly_sum = Decimal(0)
        for item in mine:
            if item.monthly_total is None:
                problems.append(_("%(record)s has no frozen monthly total.") % {"record": item.reference})
                continue
            amount = _converted(book, item.monthly_total, item.currency, budget.currency, problems, {})
            if amount is not None:
                monthly_sum += amount
        start, end = budget.period_containing(on)
        in_period = monthly_sum * budget.period_months
        rows.append(FinanceRow(
            centre.team, centre, budget, start, end, mine, monthly_sum, in_period, budget.amount - in_period,
            in_period / budget.amount, problems,
        ))
    return rows
