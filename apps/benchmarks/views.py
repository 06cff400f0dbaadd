"""Browser pages of the benchmarks: plans, jobs with live progress (htmx), events, artifacts; dispatch and cancel."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, has_role
from apps.benchmarks import job_plan_forms
from apps.benchmarks.filters import JobFilterSet, PlanFilterSet
from apps.benchmarks.forms import CancelForm, PlanForm
from apps.benchmarks.models import FINAL_JOB_STATUSES, PlanStatus
from apps.benchmarks.selectors import (
    artifact_get,
    job_events,
    job_get,
    jobs_for_user,
    plan_get,
    plans_for_user,
)
from apps.benchmarks.services import (
    PlanError,
    job_cancel,
    plan_copy,
    plan_create,
    plan_request_dispatch,
    plan_update,
)
from apps.benchmarks.storage import artifact_storage
from apps.benchmarks.verdicts import job_verdict, result_verdict
from apps.fleet.selectors import agent_get
from apps.quotes.selectors import candidates_for

OPERATOR_ROLES = (Role.PLATFORM, Role.ADMIN)
POLL_EVERY = "2s"


def require_role(request, *roles: str) -> None:
    if not has_role(request.user, *roles):
        raise PermissionDenied


def _pretty(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def plan_list(request):
    filterset = PlanFilterSet(request.GET or None, queryset=plans_for_user(request.user), request=request)
    return render(request, "benchmarks/plan_list.html", {
        "filterset": filterset, "plans": filterset.qs[:200], "can_operate": has_role(request.user, *OPERATOR_ROLES),
        "plan_form_links": job_plan_forms.plan_form_links(),
    })


def plan_create_view(request):
    require_role(request, *OPERATOR_ROLES)
    team = request.active_team
    if team is None:
        raise PermissionDenied
    form = PlanForm(request.POST or None, team=team)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            plan = plan_create(team=team, name=data["name"], description=data["description"], spec=data["jobs"],
                               target_pool=data["target_pool"], target_agent=data["target_agent"],
                               actor=request.user)
        except PlanError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, _("Plan %(plan)s saved; dispatch it when it is ready.") % {"plan": plan.name})
            return redirect(plan)
    status = 400 if request.method == "POST" else 200
    return render(request, "benchmarks/plan_form.html", {
        "form": form, "team": team, "plan_form_links": job_plan_forms.plan_form_links()}, status=status)


def _operable_plan(request, pk: int):
    """A plan of the active team that the user may edit (when a draft) or copy."""
    require_role(request, *OPERATOR_ROLES)
    plan = plan_get(user=request.user, pk=pk)
    if request.active_team is None or plan.team_id != request.active_team.pk:
        raise PermissionDenied
    return plan


def plan_edit_view(request, pk: int):
    """The JSON ("advanced") view of a draft plan: the same plan the forms make."""
    plan = _operable_plan(request, pk)
    if plan.status != PlanStatus.DRAFT:
        return render(request, "benchmarks/plan_not_draft.html", {"plan": plan}, status=409)
    initial = {"name": plan.name, "description": plan.description, "jobs": _pretty(plan.spec),
               "target_pool": plan.target_pool_id, "target_agent": plan.target_agent_id}
    form = PlanForm(request.POST or None, team=plan.team, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            plan_update(plan=plan, name=data["name"], description=data["description"], spec=data["jobs"],
                        target_pool=data["target_pool"], target_agent=data["target_agent"], actor=request.user)
        except PlanError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, _("Plan %(plan)s saved; dispatch it when it is ready.") % {"plan": plan.name})
            return redirect(plan)
    return render(request, "benchmarks/plan_form.html", {
        "form": form, "team": plan.team, "plan": plan, **_made_by_form(plan),
    }, status=400 if request.method == "POST" else 200)


def _made_by_form(plan) -> dict:
    """The form that made the plan and its edit page (none for a plan written as JSON)."""
    made_by = job_plan_forms.form_of_plan(plan)
    return {"made_by_form": made_by,
            "made_by_form_url": reverse(f"benchmarks:plan-{made_by.slug}-edit", args=[plan.pk]) if made_by else None}


def _plan_form_page(request, form, *, plan=None, candidate=None):
    return render(request, "benchmarks/plan_job_form.html", {
        "form": form, "form_class": type(form), "team": form.team, "plan": plan, "candidate": candidate,
        "create_url": reverse(f"benchmarks:plan-{type(form).slug}-create"),
    }, status=400 if request.method == "POST" else 200)


def _save_form_plan(request, form, plan=None):
    data = form.cleaned_data
    fields = {"name": data["name"], "description": data["description"], "spec": form.plan_spec,
              "target_pool": data["target_pool"], "target_agent": data["target_agent"], "actor": request.user}
    if plan is None:
        return plan_create(team=form.team, **fields)
    return plan_update(plan=plan, **fields)


def plan_form_create_view(request, form_kind: str):
    """A plan of one job kind from its form, prefilled with the candidate (`?candidate=`) and its workload."""
    require_role(request, *OPERATOR_ROLES)
    team = request.active_team
    if team is None:
        raise PermissionDenied
    form_class = job_plan_forms.PLAN_FORMS[form_kind]
    candidate = None
    initial = {}
    if request.GET.get("candidate", "").isdigit():
        candidate = get_object_or_404(candidates_for(request.user).filter(team=team), pk=int(request.GET["candidate"]))
        initial = form_class.initial_from_candidate(candidate)
    form = form_class(request.POST or None, team=team, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            plan = _save_form_plan(request, form)
        except PlanError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, _("Plan %(plan)s saved; dispatch it when it is ready.") % {"plan": plan.name})
            return redirect(plan)
    return _plan_form_page(request, form, candidate=candidate)


def plan_form_edit_view(request, pk: int, form_kind: str):
    """A draft made by a form, in that form again; saving rebuilds its job from the inputs."""
    plan = _operable_plan(request, pk)
    if plan.status != PlanStatus.DRAFT:
        return render(request, "benchmarks/plan_not_draft.html", {"plan": plan}, status=409)
    made_by = job_plan_forms.form_of_plan(plan)
    if made_by is None:
        return redirect("benchmarks:plan-edit", pk=plan.pk)
    if made_by.form_kind != form_kind:
        return redirect(f"benchmarks:plan-{made_by.slug}-edit", pk=plan.pk)
    form = made_by(request.POST or None, team=plan.team, initial=made_by.initial_from_plan(plan))
    if request.method == "POST" and form.is_valid():
        try:
            _save_form_plan(request, form, plan)
        except PlanError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, _("Plan %(plan)s saved; dispatch it when it is ready.") % {"plan": plan.name})
            return redirect(plan)
    return _plan_form_page(request, form, plan=plan)


@require_POST
def plan_copy_view(request, pk: int):
    """Copy any plan of the active team as a new draft, then edit it before dispatch."""
    plan = _operable_plan(request, pk)
    copied = plan_copy(plan=plan, actor=request.user)
    messages.success(request, _("Plan %(plan)s copied as a new draft: edit it, then dispatch it.")
                     % {"plan": plan.name})
    made_by = job_plan_forms.form_of_plan(copied)
    if made_by is not None:
        return redirect(f"benchmarks:plan-{made_by.slug}-edit", pk=copied.pk)
    return redirect("benchmarks:plan-edit", pk=copied.pk)


def _plan_is_settled(plan, jobs) -> bool:
    return plan.status == PlanStatus.DISPATCHED and all(job.status in FINAL_JOB_STATUSES for job in jobs)


def plan_detail(request, pk: int):
    plan = plan_get(user=request.user, pk=pk)
    jobs = list(plan.jobs.order_by("position", "pk"))
    context = {
        "plan": plan, "jobs": jobs, "spec_json": _pretty(plan.spec), "poll": not _plan_is_settled(plan, jobs),
        "can_operate": has_role(request.user, *OPERATOR_ROLES),
        **_made_by_form(plan),
    }
    if request.htmx:
        return render(request, "benchmarks/partials/plan_jobs.html", context)
    return render(request, "benchmarks/plan_detail.html", context)


@require_POST
def plan_dispatch_view(request, pk: int):
    require_role(request, *OPERATOR_ROLES)
    plan = plan_get(user=request.user, pk=pk)
    if plan_request_dispatch(plan=plan, actor=request.user):
        messages.success(request, _("Plan %(plan)s is being dispatched.") % {"plan": plan.name})
    else:
        messages.info(request, _("Plan %(plan)s was already dispatched.") % {"plan": plan.name})
    return redirect(plan)


@require_POST
def run_inventory(request, agent_pk: int):
    """One inventory job for one agent: a plan of its own, dispatched at once."""
    require_role(request, *OPERATOR_ROLES)
    agent = agent_get(user=request.user, pk=agent_pk)
    plan = plan_create(
        team=agent.pool.team, name=_("Inventory of %(agent)s") % {"agent": agent.name},
        spec={"jobs": [{"kind": "inventory", "spec": {}}]}, target_pool=agent.pool, target_agent=agent,
        actor=request.user,
    )
    plan_request_dispatch(plan=plan, actor=request.user)
    messages.success(request, _("An inventory job is on its way to %(agent)s.") % {"agent": agent.name})
    return redirect(plan)


def job_list(request):
    filterset = JobFilterSet(request.GET or None, queryset=jobs_for_user(request.user), request=request)
    page = Paginator(filterset.qs, 50).get_page(request.GET.get("page"))
    return render(request, "benchmarks/job_list.html", {"filterset": filterset, "page": page})


def _job_context(request, job) -> dict:
    attempts = list(job.attempts.select_related("agent").order_by("number"))
    current = attempts[-1] if attempts else None
    results = list(job.results.select_related("attempt", "job").order_by("attempt__number"))
    for result in results:
        result.verdict = result_verdict(result)
    return {
        "job": job,
        "attempts": attempts,
        "current": current,
        "results": results,
        "verdict": job_verdict(job),
        "artifacts": list(job.artifacts.select_related("attempt").order_by("created_at", "pk")),
        "recent_events": list(job_events(job).order_by("-received_at", "-pk")[:15]),
        "poll": not job.is_final,
        "poll_every": POLL_EVERY,
        "can_operate": has_role(request.user, *OPERATOR_ROLES),
        "cancel_form": CancelForm(),
    }


def job_detail(request, pk: int):
    job = job_get(user=request.user, pk=pk)
    context = _job_context(request, job)
    context.update(spec_json=_pretty(job.spec), criteria_json=_pretty(job.acceptance_criteria))
    return render(request, "benchmarks/job_detail.html", context)


def job_progress(request, pk: int):
    """The live part of the job page, polled by htmx every 2 s until the job is final."""
    job = job_get(user=request.user, pk=pk)
    return render(request, "benchmarks/partials/job_progress.html", _job_context(request, job))


def job_events_view(request, pk: int):
    job = job_get(user=request.user, pk=pk)
    page = Paginator(job_events(job), 100).get_page(request.GET.get("page"))
    for event in page.object_list:
        event.data_json = json.dumps(event.data, sort_keys=True, ensure_ascii=False)
    return render(request, "benchmarks/job_events.html", {"job": job, "page": page})


@require_POST
def job_cancel_view(request, pk: int):
    require_role(request, *OPERATOR_ROLES)
    job = job_get(user=request.user, pk=pk)
    form = CancelForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    job = job_cancel(job=job, actor=request.user, reason=reason)
    if job.is_final:
        messages.info(request, _("Job #%(job)d is %(status)s.") % {"job": job.pk, "status": job.get_status_display()})
    else:
        messages.success(request, _("Cancellation requested: the agent stops the job at its next lease renewal."))
    return redirect(job)


def artifact_download(request, pk: int):
    artifact = artifact_get(user=request.user, pk=pk)
    if artifact.purged_at is not None:
        return render(request, "benchmarks/artifact_purged.html", {"artifact": artifact}, status=410)
    handle = artifact_storage().open(artifact.storage_name, "rb")
    return FileResponse(handle, as_attachment=True, filename=artifact.name, content_type=artifact.media_type)


def memory_fit_plan_create_view(request, candidate_pk: int):
    """Phase 1 planned from the candidate's workload version: the derived target, editable, then a plan."""
    from apps.benchmarks import memory_fit

    require_role(request, *OPERATOR_ROLES)
    candidate = get_object_or_404(candidates_for(request.user), pk=candidate_pk)
    try:
        estimate = memory_fit.candidate_estimate_plan(candidate)
        defaults = memory_fit.default_settings(estimate)
        preview = memory_fit.candidate_spec(candidate, defaults)
    except memory_fit.Phase1Error as error:
        return render(request, "benchmarks/partials/memory_fit_plan_page.html",
                      {"candidate": candidate, "problem": str(error)}, status=409)
    form = memory_fit.MemoryFitPlanForm(request.POST or None, team=candidate.team,
                                    initial={"tokens": defaults.tokens, "concurrency": defaults.concurrency})
    if request.method == "POST" and form.is_valid():
        try:
            plan = memory_fit.memory_fit_plan_create(
                candidate=candidate, settings=form.settings(), target_pool=form.cleaned_data["target_pool"],
                target_agent=form.cleaned_data["target_agent"], actor=request.user,
            )
        except (memory_fit.Phase1Error, PlanError) as error:
            form.add_error(None, str(error))
        else:
            if form.cleaned_data["dispatch"]:
                plan_request_dispatch(plan=plan, actor=request.user)
                messages.success(request, _("Plan %(plan)s is being dispatched.") % {"plan": plan.name})
            else:
                messages.success(request, _("Plan %(plan)s saved; dispatch it when it is ready.") % {"plan": plan.name})
            return redirect(plan)
    return render(request, "benchmarks/partials/memory_fit_plan_page.html", {
        "candidate": candidate, "form": form, "training": memory_fit.is_training(estimate),
        "predicted_total_mib": round(preview["predicted"]["total_bytes"] / memory_fit.MIB, 1),
        "capacity": preview.get("capacity"),
        "safety_margin": preview.get("safety_margin"),
        "capacity_mib": (round(preview["capacity"]["usable_bytes"] / memory_fit.MIB, 1)
                         if preview.get("capacity") else None),
    }, status=400 if request.method == "POST" else 200)


def memory_fit_residuals_view(request):
    """Phase-1 residuals (measured − predicted) per GPU architecture, precision and component over the user's
    results, with the chart, the safety margin they suggest and the margin estimates now use per calibration group."""
    from apps.benchmarks import memory_fit, throughput_residuals

    groups = memory_fit.memory_fit_residuals(request.user)
    comparisons = throughput_residuals.capacity_comparisons(request.user)
    return render(request, "benchmarks/memory_fit_residuals.html", {
        "capacity_comparisons": comparisons,
        "capacity_groups": throughput_residuals.group_capacity_residuals(comparisons),
        "groups": groups,
        "margins": memory_fit.suggested_margins(groups),
        "margins_in_use": memory_fit.margins_in_use(request.user),
        "margin_cushion_pct": memory_fit.percent_text(memory_fit.calibration.CUSHION),
        "margin_cap_pct": memory_fit.percent_text(memory_fit.calibration.MAX_MARGIN),
        "figure": memory_fit.residuals_figure(groups) if groups else None,
        "margin_min_results": memory_fit.MARGIN_MIN_RESULTS,
    })
