"""The budget check of a decision record: its monthly and committed totals against its team's budget for one cost
centre, and the outcome (within, warn or block) with the figures and a reason.

Pure Python (no Django): frozen dataclasses in, a frozen dataclass out; every amount is an exact Decimal in the
budget's currency (the caller converts with the team's exchange rates and names what it could not convert in
`problems`).

The rule (docs/budgets.md states the same):

* **The budget per month and over the commitment.** A budget of `amount` per period of P months (monthly 1,
  quarterly 3, annual 12) allows `amount ÷ P` per month; over the record's commitment horizon of H months it allows
  `amount ÷ P × H`.
* **The record.** Its monthly total is the chosen option's total cost per month in the frozen comparison (the row's
  total per period × 730 ÷ the period's hours; a 730-hour month is one month). Its commitment horizon H is the
  chosen option's commitment months (the reservation term or the purchase's amortisation); an option with no
  commitment (pay-as-you-go, an API route) is checked over the budget's own period (H = P). Its committed total is
  the monthly total × H.
* **What is already committed.** The accepted records of the same team and cost centre (not superseded, not the
  record this one supersedes) count with their frozen monthly totals: a run rate per month, and that run rate × H
  over the horizon.
* **The two tests.** Monthly: already committed per month + the record's monthly total against the budget per month.
  Committed: already committed over H + the record's committed total against the budget over H. The share used is
  each total ÷ its limit; the larger share decides.
* **The outcome.** Over the budget (a share above 1), or a check that cannot be made (no budget in force, no
  monthly cost for the chosen option, a missing exchange rate): `block` under a blocking policy, `warn` under a
  warning one. Within the budget but at or above the policy's warn threshold (a fraction, 0.9 = 90 %): `warn`.
  Otherwise `within`.

Worked example: an annual budget of 120,000.00 allows 10,000.00 a month. Accepted records already commit 3,000.00 a
month. A 12-month reservation costing 8,000.00 a month: monthly 3,000 + 8,000 = 11,000 of 10,000 (share 1.1); over
its 12 months 36,000 + 96,000 = 132,000 of 120,000 (share 1.1): over, so `block` under a blocking policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

ZERO = Decimal(0)
ONE = Decimal(1)


class Period(StrEnum):
    MONTHLY = "monthly"
    QUARTERLY = "quarterly"
    ANNUAL = "annual"


#: How many months each budget period spans.
PERIOD_MONTHS: Mapping[Period, int] = {Period.MONTHLY: 1, Period.QUARTERLY: 3, Period.ANNUAL: 12}


class Mode(StrEnum):
    """What a team's policy does with a record over its budget."""

    WARN = "warn"
    BLOCK = "block"


class Outcome(StrEnum):
    WITHIN = "within"
    WARN = "warn"
    BLOCK = "block"


class Reason(StrEnum):
    WITHIN = "within"  # within the budget (and below the warn threshold)
    NEAR = "near"  # within the budget, at or above the warn threshold
    OVER = "over"  # over the budget
    UNCHECKED = "unchecked"  # the check could not be made: see `problems`


class CheckError(ValueError):
    """An input the check cannot use (a negative amount, an unknown period)."""


@dataclass(frozen=True)
class Policy:
    mode: Mode = Mode.WARN
    #: Warn from this share of the budget on (0.9 = 90 %); None: only a record over the budget is flagged.
    warn_fraction: Decimal | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))
        if self.warn_fraction is not None and not ZERO < self.warn_fraction <= ONE:
            raise CheckError("the warn threshold is a fraction above 0 and at most 1")


@dataclass(frozen=True)
class BudgetTerms:
    """A budget: `amount` of `currency` per `period`."""

    amount: Decimal
    period: Period
    currency: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "period", Period(self.period))
        if self.amount <= ZERO:
            raise CheckError("a budget is a positive amount")

    @property
    def period_months(self) -> int:
        return PERIOD_MONTHS[self.period]

    @property
    def monthly(self) -> Decimal:
        return self.amount / self.period_months

    def over(self, months: Decimal) -> Decimal:
        """What the budget allows over `months` months."""
        return self.amount * months / self.period_months


@dataclass(frozen=True)
class RecordSpend:
    """The record's monthly total (in the budget's currency) and its commitment months (None: no commitment)."""

    monthly_total: Decimal
    commitment_months: Decimal | None = None

    def __post_init__(self) -> None:
        if self.monthly_total < ZERO:
            raise CheckError("a monthly total cannot be negative")
        if self.commitment_months is not None and self.commitment_months <= ZERO:
            raise CheckError("a commitment lasts a positive number of months")


@dataclass(frozen=True)
class CommittedSpend:
    """One accepted record already counted against the budget: its reference and monthly total (budget currency)."""

    reference: str
    monthly_total: Decimal


@dataclass(frozen=True)
class CheckInput:
    """Everything the check reads. `spend` or `budget` is None when it is unknown (the check then cannot be made:
    `problems` says why)."""

    spend: RecordSpend | None
    budget: BudgetTerms | None
    committed: tuple[CommittedSpend, ...] = ()
    policy: Policy = field(default_factory=Policy)
    problems: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "committed", tuple(self.committed))
        object.__setattr__(self, "problems", tuple(self.problems))


@dataclass(frozen=True)
class BudgetCheck:
    """The outcome with every figure it rests on (None where the check could not be made)."""

    outcome: Outcome
    reason: Reason
    mode: Mode
    warn_fraction: Decimal | None
    currency: str | None
    budget_amount: Decimal | None
    period: Period | None
    budget_monthly: Decimal | None
    horizon_months: Decimal | None
    budget_over_horizon: Decimal | None
    record_monthly: Decimal | None
    record_committed: Decimal | None
    committed_monthly: Decimal
    committed_over_horizon: Decimal | None
    total_monthly: Decimal | None
    total_over_horizon: Decimal | None
    share_monthly: Decimal | None
    share_over_horizon: Decimal | None
    counted: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def share(self) -> Decimal | None:
        """The larger share used (the one that decides)."""
        shares = [share for share in (self.share_monthly, self.share_over_horizon) if share is not None]
        return max(shares) if shares else None

    @property
    def blocks(self) -> bool:
        return self.outcome is Outcome.BLOCK

    @property
    def warns(self) -> bool:
        return self.outcome is Outcome.WARN


def horizon_months(spend: RecordSpend, budget: BudgetTerms) -> Decimal:
    """The months the committed test covers: the record's commitment, else the budget's own period."""
    return spend.commitment_months if spend.commitment_months is not None else Decimal(budget.period_months)


def _flagged(policy: Policy) -> Outcome:
    return Outcome.BLOCK if policy.mode is Mode.BLOCK else Outcome.WARN


def check(data: CheckInput) -> BudgetCheck:
    """The outcome of the budget check (the rule is in the module's docstring)."""
    policy, budget, spend = data.policy, data.budget, data.spend
    committed_monthly = sum((item.monthly_total for item in data.committed), ZERO)
    counted = tuple(item.reference for item in data.committed)
    base: dict[str, Any] = {
        "mode": policy.mode,
        "warn_fraction": policy.warn_fraction,
        "currency": budget.currency if budget else None,
        "budget_amount": budget.amount if budget else None,
        "period": budget.period if budget else None,
        "budget_monthly": budget.monthly if budget else None,
        "record_monthly": spend.monthly_total if spend else None,
        "committed_monthly": committed_monthly,
        "counted": counted,
        "problems": data.problems,
    }
    if budget is None or spend is None or data.problems:
        return BudgetCheck(
            outcome=_flagged(policy), reason=Reason.UNCHECKED, horizon_months=None, budget_over_horizon=None,
            record_committed=None, committed_over_horizon=None, total_monthly=None, total_over_horizon=None,
            share_monthly=None, share_over_horizon=None, **base,
        )
    horizon = horizon_months(spend, budget)
    record_committed = spend.monthly_total * horizon
    committed_over_horizon = committed_monthly * horizon
    total_monthly = committed_monthly + spend.monthly_total
    total_over_horizon = committed_over_horizon + record_committed
    budget_over_horizon = budget.over(horizon)
    share_monthly = total_monthly / budget.monthly
    share_over_horizon = total_over_horizon / budget_over_horizon
    share = max(share_monthly, share_over_horizon)
    if share > ONE:
        outcome, reason = _flagged(policy), Reason.OVER
    elif policy.warn_fraction is not None and share >= policy.warn_fraction:
        outcome, reason = Outcome.WARN, Reason.NEAR
    else:
        outcome, reason = Outcome.WITHIN, Reason.WITHIN
    return BudgetCheck(
        outcome=outcome, reason=reason, horizon_months=horizon, budget_over_horizon=budget_over_horizon,
        record_committed=record_committed, committed_over_horizon=committed_over_horizon,
        total_monthly=total_monthly, total_over_horizon=total_over_horizon, share_monthly=share_monthly,
        share_over_horizon=share_over_horizon, **base,
    )
