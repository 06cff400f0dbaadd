"""A job's verdict in a list of jobs (the job list, a plan's job table), the way the job page shows it: a job that
ran to its end reads succeeded, inconclusive (with the reason), failed or cancelled, never just the agent's status."""

from __future__ import annotations

from django import template

from apps.benchmarks.selectors import jobs_with_canonical_results
from apps.benchmarks.verdicts import job_verdict

register = template.Library()


@register.simple_tag
def jobs_with_verdicts(jobs):
    """The jobs, each with its `verdict`: their canonical results are read in one query for the whole list."""
    loaded = jobs_with_canonical_results(jobs)
    for job in loaded:
        job.verdict = job_verdict(job)
    return loaded


@register.inclusion_tag("benchmarks/partials/job_verdict.html")
def job_verdict_badge(job):
    """A final job's verdict (its reason as the badge's title and beneath it); a job still queued or running shows
    its status."""
    verdict = getattr(job, "verdict", None) or job_verdict(job)
    return {"job": job, "verdict": verdict}
