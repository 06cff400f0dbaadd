"""The pure budget check (apps/budgets/check.py), with hand-computed figures."""

from decimal import Decimal as D

import pytest

from apps.budgets import check
from apps.budgets.models import Budget, add_months


def _input(monthly="8000", months="12", amount="120000", period="annual", committed=("3000",), mode="block",
           warn=None, problems=()):
    return check.CheckInput(
        spend=check.RecordSpend(D(monthly), D(months) if months else None),
        budget=check.BudgetTerms(D(amount), check.Period(period), "USD"),
        committed=tuple(check.CommittedSpend(f"DR-{n}", D(value)) for n, value in enumerate(committed, 1)),
        policy=check.Policy(check.Mode(mode), D(warn) if warn else None),
        problems=problems,
    )


def test_the_docstring_worked_example_is_over_and_blocks():
    """Annual 120,000 → 10,000 a month. 3,000 committed + 8,000 = 11,000 of 10,000 (1.1); over 12 months
    36,000 + 96,000 = 132,000 of 120,000 (1.1): over the budget, blocked under a blocking policy."""
    result = check.check(_input())
    assert result.outcome is check.Outcome.BLOCK and result.reason is check.Reason.OVER
    assert result.budget_monthly == D(10000)
    assert (result.total_monthly, result.share_monthly) == (D(11000), D("1.1"))
    assert (result.record_committed, result.committed_over_horizon) == (D(96000), D(36000))
    assert (result.total_over_horizon, result.budget_over_horizon) == (D(132000), D(120000))
    assert result.counted == ("DR-1",)


def test_a_warning_policy_warns_where_a_blocking_one_blocks():
    assert check.check(_input(mode="warn")).outcome is check.Outcome.WARN


def test_within_the_budget_and_below_the_threshold_is_within():
    """Quarterly 30,000 → 10,000 a month; 2,000 + 6,000 = 8,000 (0.8) under a 0.9 threshold: within."""
    result = check.check(_input(monthly="6000", period="quarterly", amount="30000", committed=("2000",), warn="0.9"))
    assert (result.outcome, result.share_monthly) == (check.Outcome.WITHIN, D("0.8"))


def test_at_the_warn_threshold_a_record_within_the_budget_warns_even_under_a_blocking_policy():
    """9,000 + 0 of 10,000 a month = 0.9, at the 0.9 threshold: warn (near), not block."""
    result = check.check(_input(monthly="9000", committed=(), warn="0.9"))
    assert (result.outcome, result.reason) == (check.Outcome.WARN, check.Reason.NEAR)


def test_without_a_commitment_the_horizon_is_the_budgets_period():
    """Pay-as-you-go against a quarterly budget of 30,000: H = 3, committed total 4,000 × 3 = 12,000 of 30,000."""
    result = check.check(_input(monthly="4000", months=None, period="quarterly", amount="30000", committed=()))
    assert (result.horizon_months, result.record_committed, result.budget_over_horizon) == (D(3), D(12000), D(30000))


def test_a_check_that_cannot_be_made_takes_the_policys_outcome():
    blocked = check.check(_input(problems=("No exchange rate from EUR to USD.",)))
    assert (blocked.outcome, blocked.reason, blocked.share) == (check.Outcome.BLOCK, check.Reason.UNCHECKED, None)
    no_budget = check.check(check.CheckInput(spend=check.RecordSpend(D(1)), budget=None, problems=("no budget",)))
    assert no_budget.outcome is check.Outcome.WARN  # the default policy warns


@pytest.mark.parametrize("bad", [lambda: check.BudgetTerms(D(0), check.Period.MONTHLY, "USD"),
                                 lambda: check.Policy(check.Mode.WARN, D("1.5")),
                                 lambda: check.RecordSpend(D(-1))])
def test_impossible_inputs_are_refused(bad):
    with pytest.raises(check.CheckError):
        bad()


def test_budget_periods_repeat_from_the_start_date():
    import datetime

    budget = Budget(start_date=datetime.date(2026, 1, 31), period="monthly")
    assert budget.period_containing(datetime.date(2026, 2, 28)) == (datetime.date(2026, 2, 28),
                                                                    datetime.date(2026, 3, 31))
    quarterly = Budget(start_date=datetime.date(2026, 1, 1), period="quarterly")
    assert quarterly.period_containing(datetime.date(2026, 5, 15)) == (datetime.date(2026, 4, 1),
                                                                       datetime.date(2026, 7, 1))
    assert add_months(datetime.date(2026, 12, 15), 1) == datetime.date(2027, 1, 15)
