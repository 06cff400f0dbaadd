"""Browser pages of a candidate's figures (capacity, latency, failure rates…): list, enter, edit, remove.

Every role of the owning team reads; platform and admin enter figures. Objects are fetched through `for_user`
querysets, so another team's candidate answers 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, has_role
from apps.common import page_parts
from apps.common.forms import add_service_errors
from apps.evidence import services
from apps.evidence.display import input_badge
from apps.evidence.forms import CandidateFigureForm
from apps.evidence.models import metrics_for
from apps.evidence.selectors import figures_for
from apps.quotes.models import CandidateKind
from apps.quotes.selectors import candidates_for
from apps.workloads import rules


def can_write(user) -> bool:
    return has_role(user, Role.PLATFORM, Role.ADMIN)


def _require_writer(request) -> None:
    if not can_write(request.user):
        raise PermissionDenied(_("Only the platform and admin roles may enter phase-4 inputs."))




def _input_values(form: CandidateFigureForm, metric: str) -> dict:
    data = form.cleaned_data
    return {
        "metric": metric,
        "value": data["value"],
        "source": data["source"],
        "reference": data["reference"],
        "estimated_by": data["estimated_by"],
        "estimate_reason": data["estimate_reason"],
        "capacity_unit": data["capacity_unit"],
    }


def _relevant_metrics(candidate) -> list[tuple[str, str]]:
    training = candidate.workload_summary.workload_type in rules.TRAINS
    return metrics_for(training=training, api_route=candidate.kind == CandidateKind.API)


def candidate_figures(request, pk: int):
    candidate = get_object_or_404(candidates_for(request.user), pk=pk)
    relevant = _relevant_metrics(candidate)
    form = None
    if can_write(request.user):
        form = CandidateFigureForm(request.POST or None, initial={"metric": request.GET.get("metric", "")},
                                   metric_choices=relevant)
    if request.method == "POST":
        _require_writer(request)
        if form.is_valid():
            try:
                services.candidate_figure_enter(
                    actor=request.user, candidate=candidate, **_input_values(form, form.cleaned_data["metric"])
                )
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request, _("Phase-4 input saved."))
                return redirect("evidence:candidate-figures", pk=candidate.pk)
    inputs = list(figures_for(request.user).filter(candidate=candidate).order_by("metric"))
    quote_url = candidate.quote.get_absolute_url()
    entered = {item.metric for item in inputs}
    return render(
        request,
        "evidence/candidate_figures.html",
        {
            "candidate": candidate,
            # The benchmarks app says what links a measured figure to its result (or labels a rehearsal's) in the
            # slot "evidence.figure.measurement"; it is above evidence, so it fills the slot, evidence never asks it.
            "inputs": [(item, input_badge(item, quote_url),
                        page_parts.render("evidence.figure.measurement", request, figure=item)) for item in inputs],
            "missing": [label for value, label in relevant if value not in entered],
            "form": form,
            "can_write": can_write(request.user),
        },
        status=400 if request.method == "POST" else 200,
    )


def figure_edit(request, pk: int):
    _require_writer(request)
    item = get_object_or_404(figures_for(request.user), pk=pk)
    initial = {
        "metric": item.metric, "value": item.value, "capacity_unit": item.capacity_unit, "source": item.source,
        "reference": item.reference, "estimated_by": item.estimated_by, "estimate_reason": item.estimate_reason,
    }
    form = CandidateFigureForm(request.POST or None, initial=initial, metric_fixed=True)
    if request.method == "POST" and form.is_valid():
        try:
            services.candidate_figure_enter(
                actor=request.user, candidate=item.candidate, **_input_values(form, item.metric)
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Phase-4 input saved."))
            return redirect("evidence:candidate-figures", pk=item.candidate_id)
    return render(
        request, "evidence/figure_form.html",
        {"item": item, "form": form,
         "measurement": page_parts.render("evidence.figure.measurement", request, figure=item)},
        status=400 if request.method == "POST" else 200,
    )


@require_POST
def figure_remove(request, pk: int):
    _require_writer(request)
    item = get_object_or_404(figures_for(request.user), pk=pk)
    candidate_id = item.candidate_id
    services.candidate_figure_remove(actor=request.user, item=item)
    messages.success(request, _("Phase-4 input removed."))
    return redirect(reverse("evidence:candidate-figures", args=[candidate_id]))
