"""Browser pages of budgets: the finance page (committed spend per team and cost centre against the budget, with
its CSV and XLSX exports) and the forms for cost centres, budgets and the team's policy.

Every role of the team reads; the finance and admin roles write. Rows come from `for_user` querysets, so another
team's budget answers 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from apps.budgets import exports, selectors, services
from apps.budgets.forms import BudgetForm, CostCentreForm, PolicyForm
from apps.budgets.models import BudgetPolicy
from apps.common.forms import add_service_errors


def _active_team(request):
    team = getattr(request, "active_team", None)
    if not team:
        raise PermissionDenied(_("You belong to no team yet: ask an admin."))
    return team


def _require_manager(request) -> None:
    if not services.may_manage(request.user):
        raise PermissionDenied(_("Only the finance and admin roles may change budgets."))


def _rows(request):
    return selectors.finance_rows(request.user, team=getattr(request, "active_team", None) or None)


@require_safe
def finance(request):
    team = getattr(request, "active_team", None)
    policy = BudgetPolicy.objects.for_user(request.user).filter(team=team).first() if team else None
    return render(
        request,
        "budgets/finance.html",
        {
            "rows": _rows(request),
            "team": team,
            "policy": policy,
            "can_manage": services.may_manage(request.user),
            "today": timezone.localdate(),
        },
    )


def _filename(extension: str) -> str:
    return f"committed-spend-{timezone.localdate():%Y-%m-%d}.{extension}"


@require_safe
def export_csv(request):
    response = HttpResponse(exports.finance_csv(_rows(request)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename("csv")}"'
    return response


@require_safe
def export_xlsx(request):
    response = HttpResponse(
        exports.finance_xlsx(_rows(request)),
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    response["Content-Disposition"] = f'attachment; filename="{_filename("xlsx")}"'
    return response


def _form_page(request, form, heading: str):
    return render(request, "budgets/form.html", {"form": form, "heading": heading},
                  status=400 if form.errors else 200)


def cost_centre_create(request):
    _require_manager(request)
    team = _active_team(request)
    form = CostCentreForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.cost_centre_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Cost centre saved."))
            return redirect("budgets:finance")
    return _form_page(request, form, _("New cost centre"))


def budget_create(request):
    _require_manager(request)
    team = _active_team(request)
    form = BudgetForm(request.POST or None, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            services.budget_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Budget saved."))
            return redirect("budgets:finance")
    return _form_page(request, form, _("New budget"))


def budget_edit(request, pk: int):
    budget = get_object_or_404(selectors.budgets_for(request.user), pk=pk)
    _require_manager(request)
    form = BudgetForm(request.POST or None, instance=budget, team=budget.team)
    if request.method == "POST" and form.is_valid():
        values = dict(form.cleaned_data)
        values["owner"] = values.get("owner") or budget.owner
        try:
            services.budget_update(actor=request.user, budget=budget, **values)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Budget saved."))
            return redirect("budgets:finance")
    return _form_page(request, form, _("Edit the budget"))


def policy_edit(request):
    _require_manager(request)
    team = _active_team(request)
    policy = BudgetPolicy.objects.filter(team=team).first()
    form = PolicyForm(request.POST or None, instance=policy)
    if request.method == "POST" and form.is_valid():
        try:
            services.policy_set(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Budget policy saved."))
            return redirect("budgets:finance")
    return _form_page(request, form, _("Budget policy"))
