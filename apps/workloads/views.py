"""Browser pages of workload summaries: the filtered list, a version's page (readiness, metric, memory estimate with
its chart, shortlist, capacity-model hint), the form that validates as you go (htmx), and marking a version ready."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.roles import Role, has_role
from apps.common import page_parts
from apps.common.decimals import significant
from apps.common.forms import add_service_errors
from apps.workloads import estimates, progress, readiness, rules
from apps.workloads import shortlist as shortlist_module
from apps.workloads.charts import memory_chart
from apps.workloads.filters import WorkloadSummaryFilterSet
from apps.workloads.forms import SECTIONS, WorkloadSummaryForm
from apps.workloads.memory.breakdown import TERM_LABELS
from apps.workloads.memory.capacity import FitStatus
from apps.workloads.memory.errors import ShapeError
from apps.workloads.models import DecisionMetric, WorkloadSummary
from apps.workloads.selectors import (
    SummaryReport,
    summaries_for_user,
    summary_get,
    summary_report,
    versions_of,
)
from apps.workloads.services import summary_mark_ready, summary_update, workload_create
from apps.workloads.validation import shape_error_message

FIT_BADGES = {FitStatus.FITS: "badge-ok", FitStatus.TIGHT: "badge-warn", FitStatus.DOES_NOT_FIT: "badge-bad"}


def _can_write(user) -> bool:
    return has_role(user, Role.PLATFORM, Role.ADMIN)


def _require_writer(request) -> None:
    """Platform and admin file and edit summaries; finance and product only read them."""
    if not _can_write(request.user):
        raise PermissionDenied


def _field_label(name: str) -> str:
    field = WorkloadSummary._meta.get_field(name)
    return str(field.verbose_name)


def _fit_label(status: FitStatus) -> str:
    return {
        FitStatus.FITS: _("fits"),
        FitStatus.TIGHT: _("tight"),
        FitStatus.DOES_NOT_FIT: _("does not fit"),
    }[status]


def layout_text(layout, kind: str) -> str:
    """One layout in words: "4 replicas × 1 GPU (TP 1, PP 1), 50 sessions each — 4 GPUs" (serving) or
    "8 data-parallel ranks × 1 GPU (TP 1), micro-batch 4 — 8 GPUs" (training)."""
    if layout is None:
        return ""
    per_replica = ngettext("%(n)s GPU", "%(n)s GPUs", layout.gpus_per_replica) % {"n": layout.gpus_per_replica}
    total = ngettext("%(n)s GPU", "%(n)s GPUs", layout.gpus) % {"n": layout.gpus}
    if kind == "training":
        ranks = ngettext("%(n)s data-parallel rank", "%(n)s data-parallel ranks", layout.replicas) % {
            "n": layout.replicas
        }
        return _("%(ranks)s × %(per_rank)s (TP %(tp)s), micro-batch %(batch)s — %(total)s") % {
            "ranks": ranks,
            "per_rank": per_replica,
            "tp": layout.tensor_parallel,
            "batch": layout.sessions_per_replica,
            "total": total,
        }
    replicas = ngettext("%(n)s replica", "%(n)s replicas", layout.replicas) % {"n": layout.replicas}
    sessions = ngettext("%(n)s session each", "%(n)s sessions each", layout.sessions_per_replica) % {
        "n": layout.sessions_per_replica
    }
    return _("%(replicas)s × %(per_replica)s (TP %(tp)s, PP %(pp)s), %(sessions)s — %(total)s") % {
        "replicas": replicas,
        "per_replica": per_replica,
        "tp": layout.tensor_parallel,
        "pp": layout.pipeline_parallel,
        "sessions": sessions,
        "total": total,
    }


def safety_margin_text(gpu: estimates.GpuCapacity) -> str:
    """The calibrated safety margin a GPU's estimate used, with its source; empty when the request's default held."""
    if gpu.safety_margin_fraction is None:
        return ""
    return _("safety margin %(percent)s %% (calibrated: %(source)s)") % {
        "percent": f"{100 * gpu.safety_margin_fraction:g}",
        "source": gpu.safety_margin_source or _("source not stated"),
    }


def missing_rows(missing: list[readiness.MissingField]) -> list[dict]:
    return [
        {"field": item.field, "label": _field_label(item.field), "why": _(item.requirement.why)}
        for item in missing
    ]


def plan_error_text(error) -> str:
    if isinstance(error, estimates.MissingInput):
        return _("The estimate needs: %(fields)s.") % {"fields": ", ".join(_field_label(name) for name in error.fields)}
    if isinstance(error, ShapeError):
        return shape_error_message(error)
    return ""


# --------------------------------------------------------------------------------------------------------------------
# List
# --------------------------------------------------------------------------------------------------------------------


def summary_list(request):
    data = request.GET.copy()
    data.setdefault("latest", "true")
    filterset = WorkloadSummaryFilterSet(data, queryset=summaries_for_user(request.user))
    rows = [{"summary": summary, "missing": len(readiness.missing_fields(summary))} for summary in filterset.qs]
    return render(
        request,
        "workloads/summary_list.html",
        {"filterset": filterset, "rows": rows, "can_write": _can_write(request.user)},
    )


# --------------------------------------------------------------------------------------------------------------------
# Detail
# --------------------------------------------------------------------------------------------------------------------


def _term_rows(breakdown) -> list[dict]:
    return [
        {
            "label": _(TERM_LABELS.get(term.name, term.name)),
            "bytes": term.size_bytes,
            "gib": term.size_gib,
            "formula": term.formula,
            "inputs": list(term.inputs.items()),
        }
        for term in breakdown.terms
    ]


def _gpu_rows(report: SummaryReport) -> list[dict]:
    rows = []
    for item in report.analysis.fits:
        catalog = report.gpus[item.gpu.key]
        rows.append(
            {
                "gpu": catalog.gpu,
                "usable_gib": catalog.usable_memory.gib,
                "usable_bytes": catalog.usable_memory.bytes,
                "basis": catalog.usable_memory.basis_label,
                "source": catalog.usable_memory.source,
                "source_is_url": catalog.usable_memory.source.startswith(("http://", "https://")),
                "as_of": catalog.usable_memory.as_of,
                "status": _fit_label(item.fit.status),
                "status_code": item.fit.status.value,
                "badge": FIT_BADGES[item.fit.status],
                "headroom_gib": item.fit.headroom_gib,
                "headroom_percent": item.fit.headroom_percent,
                "fewest_gpus": item.fewest_gpus,
                "fewest_gpus_zero3": item.fewest_gpus_zero3,
                "largest_concurrency": item.largest_concurrency,
                "concurrency_unbounded": item.concurrency_unbounded,
                "layout": layout_text(item.layout, report.analysis.kind.value),
                "layout_gpus": item.layout.gpus if item.layout else None,
                "safety_margin": safety_margin_text(item.gpu),
            }
        )
    return rows


def _shortlist_context(report: SummaryReport) -> dict | None:
    shortlist = report.shortlist
    if shortlist is None:
        return None
    answer = shortlist.answer
    entries = []
    for entry in shortlist.entries:
        catalog = report.gpus[entry.gpu_fit.gpu.key]
        entries.append(
            {
                "rank": entry.rank,
                "gpu": catalog.gpu,
                "in_direction": entry.in_guide_direction,
                "fits_as_planned": entry.fits_as_planned,
                "gpus_needed": entry.gpus_needed,
                "layout": layout_text(entry.layout, report.analysis.kind.value),
                "status": _fit_label(entry.gpu_fit.fit.status),
                "badge": FIT_BADGES[entry.gpu_fit.fit.status],
                "need_value": entry.need_value,
                "role": _(entry.family.role) if entry.family else "",
                "watch": _(entry.family.watch) if entry.family else "",
                "cost": entry.cost,
                "cost_shown": significant(entry.cost.cost_per_accepted_output, 4) if entry.cost else None,
                "cost_basis": _cost_basis(entry),
            }
        )
    need_units = {
        rules.NEED_INTERCONNECT: (_("NVLink bandwidth"), "GB/s"),
        rules.NEED_TAIL_LATENCY: (_("Memory bandwidth"), "TB/s"),
        rules.NEED_COST_PER_OUTPUT: (_("Usable memory"), "GiB"),
    }
    need_label, need_unit = need_units[shortlist.need]
    return {
        "workload": _(answer.workload),
        "prioritises": _(answer.prioritises),
        "directions": _(answer.directions),
        "watch": _(answer.watch),
        "need": _(rules.NEED_TEXTS[shortlist.need]),
        "need_label": need_label,
        "need_unit": need_unit,
        "families": [
            {
                "label": family.label,
                "role": _(family.role),
                "best_fit": _(family.best_fit),
                "watch": _(family.watch),
            }
            for family in shortlist.families
        ],
        "entries": entries,
        "ranking_basis": _ranking_basis(shortlist),
    }


COST_MISSING_TEXTS = {
    shortlist_module.COST_MISSING_DOES_NOT_FIT: _lazy("does not fit"),
    shortlist_module.COST_MISSING_PREDICTION: _lazy("no roofline prediction (datasheet peaks or model shape missing)"),
    shortlist_module.COST_MISSING_PRICE: _lazy("no known price for this GPU (no quote, no catalog reference price)"),
    shortlist_module.COST_MISSING_CURRENCY: _lazy("priced in another currency than the ranking"),
}


def _cost_basis(entry) -> str:
    """What an entry's predicted cost rests on, or why it has none (shown beside the figure)."""
    cost = entry.cost
    if cost is None:
        return str(COST_MISSING_TEXTS.get(entry.cost_missing, ""))
    prediction = cost.prediction
    price = _("price from %(source)s") % {"source": cost.price.source}
    acceptance = (
        _("acceptance %(share)s (stated)") % {"share": cost.acceptance.normalize()}
        if cost.acceptance_stated
        else _("acceptance 1 (not stated)")
    )
    return _(
        "Predicted: roofline %(rate)s responses/s per replica of %(gpus)s GPU (%(bound)s-bound, B=%(batch)s) × "
        "%(price)s; %(acceptance)s."
    ) % {
        "rate": f"{prediction.requests_per_s_per_replica:.3g}",
        "gpus": cost.gpus,
        "bound": prediction.bound,
        "batch": prediction.concurrency,
        "price": price,
        "acceptance": acceptance,
    }


def _ranking_basis(shortlist) -> str:
    """The line saying the order is a predicted cost ("" when the shortlist is ranked by fit and need only)."""
    if shortlist.cost_currency is None:
        return ""
    return _(
        "Predicted cost per accepted output (%(currency)s): a roofline prediction of each fitting GPU's throughput "
        "from the catalog's memory bandwidth and tensor rate for this model and request mix, times the cheapest "
        "known price per GPU-hour (a quote of this team, else the catalog's reference price). A prediction, not a "
        "measurement; GPUs without a prediction or a price follow in the usual order."
    ) % {"currency": shortlist.cost_currency}


def _chart(report: SummaryReport) -> dict | None:
    if report.analysis is None or not report.analysis.fits:
        return None
    breakdown = report.analysis.breakdown
    return memory_chart(
        terms=[(_(TERM_LABELS.get(term.name, term.name)), term.size_bytes) for term in breakdown.terms],
        gpus=[
            (report.gpus[item.gpu.key].gpu.short_name, item.gpu.capacity.total_bytes) for item in report.analysis.fits
        ],
        title=_("Memory per GPU against each GPU's usable memory"),
        axis_title=_("GiB per GPU"),
        capacity_label=_("Usable memory"),
    )


def _metric_context(summary: WorkloadSummary) -> dict:
    proposed = summary.proposed_metric
    effective = summary.effective_metric
    return {
        "proposed": proposed,
        "proposed_label": DecisionMetric(proposed).label if proposed else "",
        "proposed_text": _(rules.METRICS[proposed]) if proposed else "",
        "effective": effective,
        "effective_label": DecisionMetric(effective).label if effective else "",
        "effective_text": _(rules.METRICS[effective]) if effective else "",
        "changed": summary.metric_differs_from_proposal,
        "reason": summary.decision_metric_reason,
    }


def _capacity_context(report: SummaryReport) -> dict:
    hints = [
        {"situation": _(rule.situation), "starting_point": _(rule.starting_point)}
        for rule in report.capacity_hints
    ]
    empty = [_field_label(name) for name in rules.CAPACITY_FIELDS if readiness.is_empty(getattr(report.summary, name))]
    return {"hints": hints, "empty_fields": empty}


def _fact_rows(summary: WorkloadSummary) -> list[dict]:
    """Every stated field, in form order, with its display value."""
    rows = []
    for key, title, names in SECTIONS:
        facts = []
        for name in names:
            value = getattr(summary, name)
            if readiness.is_empty(value) or (name == "tied_embeddings" and not value):
                continue
            display_method = getattr(summary, f"get_{name}_display", None)
            if name == "tools":
                display = ", ".join(summary.get_tools_display())
            elif display_method is not None:
                display = display_method()
            elif isinstance(value, bool):
                display = _("yes") if value else _("no")
            else:
                display = value
            facts.append({"name": name, "label": _field_label(name), "value": display})
        if facts:
            rows.append({"key": key, "title": title, "facts": facts})
    return rows


def detail_context(request, summary: WorkloadSummary, report: SummaryReport | None = None) -> dict:
    report = report or summary_report(summary)
    analysis = report.analysis
    return {
        "summary": summary,
        "report": report,
        # What higher apps show on this page (the cheapest fitting quote, the measured memory fit).
        "parts": {
            slot: page_parts.render(f"workloads.summary.{slot}", request, summary=summary, report=report)
            for slot in ("lowest_hourly", "memory_fit")
        },
        # Summary → quotes → … → record: each step's state from the app that owns it (apps/workloads/progress.py).
        "progress": progress.render_strip(request, summary),
        "missing": missing_rows(report.missing),
        "metric": _metric_context(summary),
        "facts": _fact_rows(summary),
        "versions": versions_of(summary),
        "newer": summary.newer_versions().last(),
        "can_write": _can_write(request.user),
        "plan_error": plan_error_text(report.plan_error),
        "derivation": sorted(report.plan.derivation.items()) if report.plan else [],
        "terms": _term_rows(analysis.breakdown) if analysis else [],
        "total_gib": analysis.breakdown.total_gib if analysis else None,
        "total_bytes": analysis.breakdown.total_bytes if analysis else None,
        "gpus_in_plan": analysis.breakdown.gpus if analysis else None,
        "gpu_rows": _gpu_rows(report) if analysis else [],
        "smallest": report.gpus[analysis.smallest_fitting.gpu.key].gpu
        if analysis and analysis.smallest_fitting
        else None,
        "shortlist": _shortlist_context(report),
        "capacity": _capacity_context(report),
        "chart": _chart(report),
        "shape_extras": sorted((summary.shape_extras or {}).items()),
    }


def summary_detail(request, pk: int):
    summary = summary_get(user=request.user, pk=pk)
    return render(request, "workloads/summary_detail.html", detail_context(request, summary))


@require_POST
def summary_mark_ready_view(request, pk: int):
    _require_writer(request)
    summary = summary_get(user=request.user, pk=pk)
    try:
        summary = summary_mark_ready(actor=request.user, summary=summary)
    except ValidationError as error:
        context = detail_context(request, summary)
        context["ready_refused"] = True
        # Missing fields are listed with their reasons under "Readiness"; other refusals are shown as they are.
        context["ready_errors"] = [] if context["missing"] else error.messages
        return render(request, "workloads/summary_detail.html", context, status=400)
    messages.success(
        request,
        _("Version %(version)s is ready and frozen; edits now make a new version.") % {"version": summary.version},
    )
    return redirect(summary)


# --------------------------------------------------------------------------------------------------------------------
# Create, edit, validate as you go
# --------------------------------------------------------------------------------------------------------------------


def _form_sections(form: WorkloadSummaryForm) -> list[dict]:
    workload_type = form.instance.workload_type
    needed = readiness.applicable_fields(workload_type)
    sections = []
    for key, title, names in SECTIONS:
        fields = [form[name] for name in names]
        sections.append(
            {
                "key": key,
                "title": title,
                "fields": fields,
                "needed": needed,
                "applies": key in ("workload", "model", "metric") or any(name in needed for name in names),
            }
        )
    return sections


def _estimate_preview(summary: WorkloadSummary) -> dict:
    plan, error = estimates.safe_plan(summary)
    if plan is None:
        return {"error": plan_error_text(error)}
    try:
        breakdown = plan.breakdown()
    except ShapeError as shape_error:
        return {"error": shape_error_message(shape_error)}
    return {"total_gib": breakdown.total_gib, "gpus": breakdown.gpus}


def _form_context(request, form: WorkloadSummaryForm, summary: WorkloadSummary | None) -> dict:
    instance = form.instance
    metric_texts = {code: _(text) for code, text in rules.METRICS.items()}
    proposed = instance.proposed_metric
    return {
        "form": form,
        "summary": summary,
        "sections": _form_sections(form),
        "missing": missing_rows(readiness.missing_fields(instance)),
        "proposed_metric": DecisionMetric(proposed).label if proposed else "",
        "proposed_metric_text": metric_texts.get(proposed, ""),
        "preview": _estimate_preview(instance),
        "makes_new_version": summary is not None and summary.is_ready,
    }


def _active_team(request):
    team = getattr(request, "active_team", None)
    if team is None:
        raise PermissionDenied
    return team


@require_http_methods(["GET", "POST"])
def summary_create(request):
    _require_writer(request)
    team = _active_team(request)
    if request.method == "POST":
        form = WorkloadSummaryForm(request.POST, request.FILES, instance=WorkloadSummary(team=team))
        if form.is_valid():
            try:
                summary = workload_create(actor=request.user, team=team, data=form.summary_data())
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                messages.success(request, _("Workload filed as a draft (version 1)."))
                return redirect(summary)
        status = 400
    else:
        form = WorkloadSummaryForm(instance=WorkloadSummary(team=team))
        status = 200
    return render(request, "workloads/summary_form.html", _form_context(request, form, None), status=status)


@require_http_methods(["GET", "POST"])
def summary_edit(request, pk: int):
    _require_writer(request)
    summary = summary_get(user=request.user, pk=pk)
    latest = summary.latest_version()
    if latest.pk != summary.pk:
        messages.info(
            request,
            _("Only the newest version can be edited; this is version %(version)s.") % {"version": latest.version},
        )
        return redirect("workloads:edit", pk=latest.pk)
    if request.method == "POST":
        form = WorkloadSummaryForm(request.POST, request.FILES, instance=summary_get(user=request.user, pk=pk))
        if form.is_valid():
            try:
                saved = summary_update(actor=request.user, summary=summary, data=form.summary_data())
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                if saved.pk != summary.pk:
                    message = _("Version %(old)s stays frozen; your edit is version %(new)s, a draft.") % {
                        "old": summary.version,
                        "new": saved.version,
                    }
                else:
                    message = _("Draft saved.")
                messages.success(request, message)
                return redirect(saved)
        status = 400
    else:
        form = WorkloadSummaryForm(instance=summary)
        status = 200
    return render(request, "workloads/summary_form.html", _form_context(request, form, summary), status=status)


# A change of these fields changes which sections apply or fills many fields at once: the whole form is re-rendered.
FULL_RENDER_FIELDS = frozenset({"workload_type", "config_json_text", "config_json_file", "discard_shape_extras"})


@require_POST
def summary_validate(request, pk: int | None = None):
    """htmx: the errors, the readiness list and the estimate for what is filled in so far. Nothing is saved.

    Usually only the messages, the readiness panel and each field's errors are swapped, never the inputs (what the
    user types meanwhile stays); a change of workload type or a config.json re-renders the whole form."""
    _require_writer(request)
    if pk is None:
        summary = None
        instance = WorkloadSummary(team=_active_team(request))
    else:
        summary = summary_get(user=request.user, pk=pk)
        instance = summary_get(user=request.user, pk=pk)
    form = WorkloadSummaryForm(request.POST, request.FILES, instance=instance)
    form.is_valid()
    form.drop_required_errors()
    context = _form_context(request, form, summary)
    if request.htmx and request.POST.get("changed") not in FULL_RENDER_FIELDS and not form.config_applied:
        return render(request, "workloads/_validation.html", context)
    response = render(request, "workloads/_form_body.html", context)
    if request.htmx:
        response["HX-Retarget"] = "#workload-form-body"
        response["HX-Reswap"] = "outerHTML"
    return response
