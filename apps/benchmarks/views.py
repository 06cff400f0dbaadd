"""Browser pages of the benchmarks: plans, jobs with live progress (htmx), events, artifacts; dispatch and cancel."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, has_role
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
from apps.benchmarks.services import PlanError, job_cancel, plan_create, plan_request_dispatch
from apps.benchmarks.storage import artifact_storage
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
    return render(request, "benchmarks/plan_form.html", {"form": form, "team": team}, status=status)


def _plan_is_settled(plan, jobs) -> bool:
    return plan.status == PlanStatus.DISPATCHED and all(job.status in FINAL_JOB_STATUSES for job in jobs)


def plan_detail(request, pk: int):
    plan = plan_get(user=request.user, pk=pk)
    jobs = list(plan.jobs.order_by("position", "pk"))
    context = {
        "plan": plan, "jobs": jobs, "spec_json": _pretty(plan.spec), "poll": not _plan_is_settled(plan, jobs),
        "can_operate": has_role(request.user, *OPERATOR_ROLES),
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
    return {
        "job": job,
        "attempts": attempts,
        "current": current,
        "results": list(job.results.select_related("attempt").order_by("attempt__number")),
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
        "capacity_mib": (round(preview["capacity"]["usable_bytes"] / memory_fit.MIB, 1)
                         if preview.get("capacity") else None),
    }, status=400 if request.method == "POST" else 200)


def memory_fit_residuals_view(request):
    """Phase-1 residuals (measured − predicted) per GPU architecture, precision and component over the user's
    results, with the chart and the safety margin they suggest."""
    from apps.benchmarks import memory_fit, throughput_residuals

    groups = memory_fit.memory_fit_residuals(request.user)
    comparisons = throughput_residuals.capacity_comparisons(request.user)
    return render(request, "benchmarks/memory_fit_residuals.html", {
        "capacity_comparisons": comparisons,
        "capacity_groups": throughput_residuals.group_capacity_residuals(comparisons),
        "groups": groups,
        "margins": memory_fit.suggested_margins(groups),
        "figure": memory_fit.residuals_figure(groups) if groups else None,
        "margin_min_results": memory_fit.MARGIN_MIN_RESULTS,
    })
