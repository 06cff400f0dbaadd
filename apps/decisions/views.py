"""Browser pages of the phase-4 comparison: the comparison of one workload version (screen and print), its CSV and
XLSX exports, and the phase-4 inputs of a candidate.

Every role of the owning team reads (finance included); platform and admin enter inputs. Objects are fetched through
`for_user` querysets, so another team's workload or candidate answers 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, has_role
from apps.decisions import display, exports, services
from apps.decisions.comparison import MODE_OF_WORKLOAD, comparison_for, phase4_inputs_for, summary_get
from apps.decisions.forms import Phase4InputForm
from apps.decisions.models import metrics_for
from apps.decisions.normalize import Mode
from apps.quotes.forms import add_service_errors
from apps.quotes.models import CandidateKind
from apps.quotes.selectors import candidates_for


def can_write(user) -> bool:
    return has_role(user, Role.PLATFORM, Role.ADMIN)


def _require_writer(request) -> None:
    if not can_write(request.user):
        raise PermissionDenied(_("Only the platform and admin roles may enter phase-4 inputs."))


def _comparison_context(request, pk: int) -> dict:
    summary = summary_get(request.user, pk)
    chosen = request.GET.get("chosen") or None
    focus = request.GET.get("focus") or None
    comparison = comparison_for(request.user, summary, chosen_id=chosen, focus_id=focus)
    return {
        "summary": summary,
        "comparison": comparison,
        "rows": display.table_rows(comparison),
        "training_rows": display.training_table_rows(comparison),
        "charts": display.chart_list(comparison),
        "can_write": can_write(request.user),
    }


def comparison_page(request, pk: int):
    return render(request, "decisions/comparison.html", _comparison_context(request, pk))


def comparison_print(request, pk: int):
    return render(request, "decisions/comparison_print.html", _comparison_context(request, pk))


def _filename(summary, extension: str) -> str:
    return f"dossier-comparison-{summary.workload_id}-v{summary.version}.{extension}"


def comparison_csv(request, pk: int):
    summary = summary_get(request.user, pk)
    comparison = comparison_for(request.user, summary, chosen_id=request.GET.get("chosen") or None)
    response = HttpResponse(exports.comparison_csv(comparison), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(summary, "csv")}"'
    return response


def comparison_xlsx(request, pk: int):
    summary = summary_get(request.user, pk)
    comparison = comparison_for(request.user, summary)
    response = HttpResponse(
        exports.comparison_xlsx(comparison),
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    response["Content-Disposition"] = f'attachment; filename="{_filename(summary, "xlsx")}"'
    return response


# ---------------------------------------------------------------------------------------------------------------
# Phase-4 inputs of a candidate


def _input_values(form: Phase4InputForm, metric: str) -> dict:
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
    training = MODE_OF_WORKLOAD.get(candidate.workload_summary.workload_type) is Mode.TRAINING
    return metrics_for(training=training, api_route=candidate.kind == CandidateKind.API)


def candidate_inputs(request, pk: int):
    candidate = get_object_or_404(candidates_for(request.user), pk=pk)
    relevant = _relevant_metrics(candidate)
    form = None
    if can_write(request.user):
        form = Phase4InputForm(request.POST or None, initial={"metric": request.GET.get("metric", "")},
                               metric_choices=relevant)
    if request.method == "POST":
        _require_writer(request)
        if form.is_valid():
            try:
                services.phase4_input_set(
                    actor=request.user, candidate=candidate, **_input_values(form, form.cleaned_data["metric"])
                )
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request, _("Phase-4 input saved."))
                return redirect("decisions:candidate-inputs", pk=candidate.pk)
    inputs = list(phase4_inputs_for(request.user).filter(candidate=candidate).order_by("metric"))
    quote_url = candidate.quote.get_absolute_url()
    entered = {item.metric for item in inputs}
    return render(
        request,
        "decisions/candidate_inputs.html",
        {
            "candidate": candidate,
            "inputs": [(item, display.input_badge(item, quote_url)) for item in inputs],
            "missing": [label for value, label in relevant if value not in entered],
            "form": form,
            "can_write": can_write(request.user),
        },
        status=400 if request.method == "POST" else 200,
    )


def input_edit(request, pk: int):
    _require_writer(request)
    item = get_object_or_404(phase4_inputs_for(request.user), pk=pk)
    initial = {
        "metric": item.metric, "value": item.value, "capacity_unit": item.capacity_unit, "source": item.source,
        "reference": item.reference, "estimated_by": item.estimated_by, "estimate_reason": item.estimate_reason,
    }
    form = Phase4InputForm(request.POST or None, initial=initial, metric_fixed=True)
    if request.method == "POST" and form.is_valid():
        try:
            services.phase4_input_set(
                actor=request.user, candidate=item.candidate, **_input_values(form, item.metric)
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, _("Phase-4 input saved."))
            return redirect("decisions:candidate-inputs", pk=item.candidate_id)
    return render(
        request, "decisions/input_form.html", {"item": item, "form": form},
        status=400 if request.method == "POST" else 200,
    )


@require_POST
def input_remove(request, pk: int):
    _require_writer(request)
    item = get_object_or_404(phase4_inputs_for(request.user), pk=pk)
    candidate_id = item.candidate_id
    services.phase4_input_remove(actor=request.user, item=item)
    messages.success(request, _("Phase-4 input removed."))
    return redirect(reverse("decisions:candidate-inputs", args=[candidate_id]))
