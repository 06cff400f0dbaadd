"""Budgets: a team's cost centres, a budget per cost centre (amount, currency, period, owner) and the team's policy
for a decision record over its budget (warn or block). The check itself is pure (apps/budgets/check.py).
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from apps.accounts.scoping import TeamScopedQuerySet
from apps.budgets import check
from apps.common import money
from apps.common.fields import ExactDecimalField
from apps.common.models import TeamOwnedModel, team_foreign_key

CURRENCY_CHOICES = [(code, code) for code in money.CURRENCY_CODES]


class Period(models.TextChoices):
    MONTHLY = check.Period.MONTHLY.value, _("Monthly")
    QUARTERLY = check.Period.QUARTERLY.value, _("Quarterly")
    ANNUAL = check.Period.ANNUAL.value, _("Annual")


class PolicyMode(models.TextChoices):
    WARN = check.Mode.WARN.value, _("Warn: propose and show the warning")
    BLOCK = check.Mode.BLOCK.value, _("Block: refuse the proposal")


def add_months(day: datetime.date, months: int) -> datetime.date:
    """`day` moved by whole months, on the same day of the month or the month's last day when it has fewer."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    following = datetime.date(year + (month == 12), month % 12 + 1, 1)
    last_day = (following - datetime.timedelta(days=1)).day
    return datetime.date(year, month, min(day.day, last_day))


class CostCentre(TeamOwnedModel):
    """Where a team's spend is booked: a code finance knows ("CC-4100") and a name."""

    team = team_foreign_key("cost_centres")
    code = models.CharField(_("code"), max_length=40)
    name = models.CharField(_("name"), max_length=200)

    class Meta:
        ordering = ["team", "code"]
        verbose_name = _("cost centre")
        verbose_name_plural = _("cost centres")
        constraints = [
            models.UniqueConstraint(fields=["team", "code"], name="budgets_cost_centre_unique_code"),
            models.CheckConstraint(
                condition=~Q(code=""), name="budgets_cost_centre_has_code",
                violation_error_message=_("A cost centre needs its code."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("budgets:finance") + f"#cost-centre-{self.pk}"


class Budget(TeamOwnedModel):
    """`amount` of `currency` per `period` for one cost centre of the team, from `start_date` on (periods follow each
    other from that day). The budget in force on a day is the one with the latest start on or before it."""

    team = team_foreign_key("budgets")
    cost_centre = models.ForeignKey(
        CostCentre, on_delete=models.PROTECT, related_name="budgets", verbose_name=_("cost centre")
    )
    amount = ExactDecimalField(_("amount"), max_digits=24, decimal_places=2)
    currency = models.CharField(_("currency"), max_length=3, choices=CURRENCY_CHOICES, default="USD")
    period = models.CharField(_("period"), max_length=10, choices=Period.choices, default=Period.MONTHLY)
    start_date = models.DateField(_("start date"))
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("owner")
    )

    class Meta:
        ordering = ["team", "cost_centre", "-start_date"]
        verbose_name = _("budget")
        verbose_name_plural = _("budgets")
        constraints = [
            models.UniqueConstraint(
                fields=["team", "cost_centre", "start_date"], name="budgets_budget_one_per_start",
                violation_error_message=_("This cost centre already has a budget starting that day."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cost_centre.code} · {self.amount} {self.currency} {self.get_period_display().lower()}"

    def get_absolute_url(self) -> str:
        return reverse("budgets:finance") + f"#budget-{self.pk}"

    def clean(self):
        errors = {}
        if self.amount is not None and self.amount <= 0:
            errors["amount"] = _("A budget is a positive amount.")
        if self.cost_centre_id and self.team_id and self.cost_centre.team_id != self.team_id:
            errors["cost_centre"] = _("This cost centre belongs to another team.")
        if self.owner_id and self.team_id and not self.owner.memberships.filter(team_id=self.team_id).exists():
            errors["owner"] = _("The owner must be a member of the team.")
        if errors:
            raise ValidationError(errors)

    @property
    def period_months(self) -> int:
        return check.PERIOD_MONTHS[check.Period(self.period)]

    def terms(self) -> check.BudgetTerms:
        return check.BudgetTerms(amount=self.amount, period=check.Period(self.period), currency=self.currency)

    def period_containing(self, day: datetime.date) -> tuple[datetime.date, datetime.date]:
        """[start, end) of the budget period that contains `day` (periods repeat from the start date; a day before
        the start falls in the first period)."""
        months = self.period_months
        index = max(0, ((day.year - self.start_date.year) * 12 + day.month - self.start_date.month) // months)
        while index > 0 and add_months(self.start_date, index * months) > day:
            index -= 1
        while add_months(self.start_date, (index + 1) * months) <= day:
            index += 1
        return add_months(self.start_date, index * months), add_months(self.start_date, (index + 1) * months)


class BudgetPolicy(models.Model):
    """What proposing a record over its budget does for one team (no row: warn, with no threshold)."""

    team = models.OneToOneField(
        "accounts.Team", on_delete=models.CASCADE, related_name="budget_policy", verbose_name=_("team")
    )
    mode = models.CharField(_("over the budget"), max_length=10, choices=PolicyMode.choices, default=PolicyMode.WARN)
    warn_fraction = ExactDecimalField(
        _("warn from"), max_digits=6, decimal_places=4, null=True, blank=True,
        help_text=_("A share of the budget, e.g. 0.9 warns from 90 %; empty: only a record over it is flagged."),
    )
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("budget policy")
        verbose_name_plural = _("budget policies")

    def __str__(self) -> str:
        return f"{self.team} · {self.get_mode_display()}"

    def get_absolute_url(self) -> str:
        return reverse("budgets:finance") + "#policy"

    def get_history_url(self) -> str:
        return reverse("audit:object-history", args=[self._meta.app_label, self._meta.model_name, self.pk])

    def clean(self):
        if self.warn_fraction is not None and not 0 < self.warn_fraction <= 1:
            raise ValidationError({"warn_fraction": _("Give a share above 0 and at most 1 (0.9 is 90 %).")})

    def rules(self) -> check.Policy:
        return check.Policy(mode=check.Mode(self.mode), warn_fraction=self.warn_fraction)
