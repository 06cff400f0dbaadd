"""Reads about plans, jobs, attempts, events, artifacts and results, always scoped to what the user may see."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Prefetch, QuerySet, prefetch_related_objects
from django.shortcuts import get_object_or_404

from apps.benchmarks.models import CANONICAL_RESULTS_ATTRIBUTE, Artifact, BenchmarkPlan, Job, JobEvent, Result


def plans_for_user(user) -> QuerySet[BenchmarkPlan]:
    return BenchmarkPlan.objects.for_user(user).select_related("team", "target_pool", "target_agent")


def plan_get(*, user, pk: int) -> BenchmarkPlan:
    return get_object_or_404(plans_for_user(user), pk=pk)


def jobs_for_user(user) -> QuerySet[Job]:
    return Job.objects.for_user(user).select_related("plan", "target_pool", "target_agent")


def jobs_with_canonical_results(jobs: Iterable[Job]) -> list[Job]:
    """The jobs with their canonical results loaded in one query, so that a list can show each job's verdict
    (`Job.canonical_result` reads them) without one query per job. A queryset is evaluated in place: iterating it
    again yields the same, loaded, jobs."""
    jobs = list(jobs)
    prefetch_related_objects(jobs, Prefetch("results", queryset=Result.objects.filter(canonical=True),
                                            to_attr=CANONICAL_RESULTS_ATTRIBUTE))
    return jobs


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


def cited_job_results(team, job_ids: list[int]) -> list[dict]:
    """The canonical result of each cited job with its acceptance criteria and the artifacts behind it, as a decision
    record freezes them (plain data: the keys are part of every frozen snapshot, never rename them)."""
    if not job_ids:
        return []
    jobs = (
        Job.objects.for_team(team)
        .filter(pk__in=job_ids)
        .prefetch_related("results__artifacts")
        .order_by("pk")
    )
    found = []
    for job in jobs:
        canonical = next((result for result in job.results.all() if result.canonical), None)
        entry = {
            "job_id": job.pk,
            "kind": job.kind,
            "status": job.status,
            "spec_sha256": job.spec_sha256,
            "acceptance_criteria": job.acceptance_criteria,
            "result": None,
        }
        if canonical is not None:
            entry["result"] = {
                "id": canonical.pk,
                "status": canonical.status,
                "summary": canonical.summary,
                "finished_at": canonical.finished_at,
                "spec_sha256": canonical.spec_sha256,
                "acceptance_criteria": canonical.acceptance_criteria,
                "agent_version": canonical.agent_version,
                "artifacts": [
                    {"id": artifact.pk, "sha256": artifact.sha256, "name": artifact.name, "size": artifact.size}
                    for artifact in sorted(canonical.artifacts.all(), key=lambda artifact: artifact.pk)
                ],
            }
        found.append(entry)
    return found
