"""Browser forms of budgets: fields only; the services validate (full_clean) and save."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.budgets.models import Budget, BudgetPolicy, CostCentre
from apps.common import money


class _ServiceModelForm(forms.ModelForm):
    def _post_clean(self):
        # The service builds, validates and saves the instance once, with its own rules.
        return


class _DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, attrs=None):
        super().__init__(attrs=attrs, format="%Y-%m-%d")


class CostCentreForm(_ServiceModelForm):
    class Meta:
        model = CostCentre
        fields = ["code", "name"]


class BudgetForm(_ServiceModelForm):
    amount = forms.CharField(label=_("amount"), max_length=40)

    class Meta:
        model = Budget
        fields = ["cost_centre", "amount", "currency", "period", "start_date", "owner"]
        widgets = {"start_date": _DateInput()}

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["cost_centre"].queryset = CostCentre.objects.filter(team=team)
        self.fields["owner"].queryset = self.fields["owner"].queryset.filter(memberships__team=team).distinct()
        self.fields["owner"].required = False
        self.fields["currency"].initial = team.reporting_currency
        for name in ("cost_centre", "currency", "owner"):
            self.fields[name].widget.attrs["translate"] = "no"

    def clean_amount(self):
        try:
            value = money.to_decimal(self.cleaned_data["amount"])
        except money.MoneyError:
            raise forms.ValidationError(_("Enter a decimal number.")) from None
        if value <= 0:
            raise forms.ValidationError(_("A budget is a positive amount."))
        return value


class PolicyForm(_ServiceModelForm):
    warn_fraction = forms.CharField(
        label=_("warn from"), max_length=10, required=False,
        help_text=_("A share of the budget, e.g. 0.9 warns from 90 %; empty: only a record over it is flagged."),
    )

    class Meta:
        model = BudgetPolicy
        fields = ["mode", "warn_fraction"]

    def clean_warn_fraction(self):
        value = (self.cleaned_data.get("warn_fraction") or "").strip()
        if not value:
            return None
        try:
            fraction = money.to_decimal(value, field="warn_fraction")
        except money.MoneyError:
            raise forms.ValidationError(_("Enter a decimal number.")) from None
        if not 0 < fraction <= 1:
            raise forms.ValidationError(_("Give a share above 0 and at most 1 (0.9 is 90 %)."))
        return fraction
