"""Reads about plans, jobs, attempts, events, artifacts and results, always scoped to what the user may see."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from apps.benchmarks.models import Artifact, BenchmarkPlan, Job, JobEvent, Result


def plans_for_user(user) -> QuerySet[BenchmarkPlan]:
    return BenchmarkPlan.objects.for_user(user).select_related("team", "target_pool", "target_agent")


def plan_get(*, user, pk: int) -> BenchmarkPlan:
    return get_object_or_404(plans_for_user(user), pk=pk)


def jobs_for_user(user) -> QuerySet[Job]:
    return Job.objects.for_user(user).select_related("plan", "target_pool", "target_agent")


def job_get(*, user, pk: int) -> Job:
    return get_object_or_404(jobs_for_user(user), pk=pk)


def job_events(job: Job) -> QuerySet[JobEvent]:
    return JobEvent.objects.filter(attempt__job=job).select_related("attempt").order_by("attempt__number", "seq")


def artifact_get(*, user, pk: int) -> Artifact:
    return get_object_or_404(Artifact.objects.for_user(user).select_related("job", "attempt"), pk=pk)


def results_for_user(user) -> QuerySet[Result]:
    return Result.objects.for_user(user).select_related("job", "attempt", "attempt__agent")


def job_current_attempt(job: Job):
    return job.attempts.select_related("agent").order_by("-number").first()
