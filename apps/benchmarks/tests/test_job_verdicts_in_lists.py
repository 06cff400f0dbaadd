"""The job list and a plan's job table show each job's verdict, as the job page does (issue 17, item 5): a probe that
timed out or a run marked invalid reads "inconclusive" with its reason, never "succeeded"; and the verdicts of a long
list are read in a constant number of queries, not one per job."""

import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.benchmarks.models import AttemptStatus, Job, JobAttempt, JobStatus, Result, ResultStatus
from apps.benchmarks.services import job_cancel
from apps.benchmarks.tests.helpers import make_plan, queue_jobs
from apps.benchmarks.tests.test_verdicts import _fail, _timed_out_at_target
from tests.agent_server.memory_fit_support import tiny_candidate

pytestmark = pytest.mark.django_db

INVALID = "send-lag p99 0.2 s over 0.05 s"


def _verdict_cells(page: str) -> list[tuple[str, str]]:
    """(outcome, badge and reason text) of every job row."""
    cells = re.findall(r'<span class="job-verdict" data-outcome="([a-z_]+)"[^>]*>(.*?)</span>\s*</span>'
                       r'(?:\s*<small class="job-verdict-reason" translate="no">(.*?)</small>)?', page, flags=re.DOTALL)
    return [(outcome, reason) for outcome, _badge, reason in cells]


def _page(client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _invalid_throughput_jobs(plan, agent, count: int) -> list[Job]:
    """`count` finished throughput jobs of `plan` whose canonical result the ingest marked invalid."""
    now = timezone.now()
    jobs = Job.objects.bulk_create(
        Job(team=plan.team, plan=plan, position=position, kind="throughput", spec={}, spec_sha256="0" * 64,
            target_pool=plan.target_pool, status=JobStatus.SUCCEEDED, attempt_count=1, finished_at=now)
        for position in range(count))
    attempts = JobAttempt.objects.bulk_create(
        JobAttempt(job=job, number=1, agent=agent, token_hash=uuid.uuid4().hex, status=AttemptStatus.SUCCEEDED,
                   lease_expires_at=now, ended_at=now) for job in jobs)
    Result.objects.bulk_create(
        Result(job=job, attempt=attempt, status=ResultStatus.SUCCEEDED, canonical=True, result={}, finished_at=now,
               spec={}, spec_sha256="0" * 64, ingested_at=now,
               summary={"phase2": {"mode": "run", "valid": False, "invalid_reasons": [INVALID]}})
        for job, attempt in zip(jobs, attempts, strict=True))
    return jobs


def test_a_timed_out_probe_reads_inconclusive_with_its_reason_in_the_job_list(team, pool, agent, client,
                                                                                platform_user):
    """Old code: the row read "succeeded" (the agent's status) though the job page said inconclusive."""
    result = _timed_out_at_target(tiny_candidate(team), pool, agent)
    assert result.job.status == JobStatus.SUCCEEDED
    page = _page(client, platform_user, reverse("benchmarks:job-list"))
    [(outcome, reason)] = _verdict_cells(page)
    assert outcome == "inconclusive" and "timed out" in reason and "concurrent_sessions = 2" in reason
    assert 'badge badge-ok">succeeded' not in page


def test_the_plan_job_table_shows_each_jobs_verdict(team, pool, agent, agent_api, client, platform_user):
    timed_out = _timed_out_at_target(tiny_candidate(team), pool, agent)
    page = _page(client, platform_user, timed_out.job.plan.get_absolute_url())
    [(outcome, reason)] = _verdict_cells(page)
    assert outcome == "inconclusive" and "timed out" in reason
    assert f'title="{reason}"' in page

    queued, = queue_jobs(pool)
    assert _verdict_cells(_page(client, platform_user, queued.plan.get_absolute_url())) == [("queued", "")]
    boom = {"type": "RuntimeError", "message": "CUDA error: out of memory"}
    _fail(agent_api, boom)
    _fail(agent_api, boom)
    [(outcome, reason)] = _verdict_cells(_page(client, platform_user, queued.plan.get_absolute_url()))
    assert outcome == "failed" and "RuntimeError: CUDA error: out of memory" in reason


def test_a_cancelled_job_reads_cancelled_with_its_reason(pool, client, platform_user):
    job, = queue_jobs(pool)
    job_cancel(job=job, reason="wrong pool", actor=platform_user)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert _verdict_cells(_page(client, platform_user, reverse("benchmarks:job-list"))) == [("cancelled",
                                                                                              "wrong pool")]


def test_a_succeeded_job_reads_succeeded_without_a_reason(team, pool, agent, client, platform_user):
    plan = make_plan(pool, name="Throughput runs")
    job, = _invalid_throughput_jobs(plan, agent, 1)
    Result.objects.filter(job=job).update(summary={"phase2": {"mode": "run", "valid": True}})
    assert _verdict_cells(_page(client, platform_user, plan.get_absolute_url())) == [("succeeded", "")]


def test_two_hundred_jobs_read_their_verdicts_in_a_constant_number_of_queries(
        pool, agent, client, platform_user, django_assert_max_num_queries):
    plan = make_plan(pool, name="Throughput sweep")
    _invalid_throughput_jobs(plan, agent, 2)
    client.force_login(platform_user)
    urls = (plan.get_absolute_url(), reverse("benchmarks:job-list"))
    baselines = []
    for url in urls:
        with CaptureQueriesContext(connection) as few:
            assert client.get(url).status_code == 200
        baselines.append(len(few))

    Job.objects.filter(plan=plan).delete()
    _invalid_throughput_jobs(plan, agent, 200)
    for url, baseline in zip(urls, baselines, strict=True):
        with django_assert_max_num_queries(baseline):
            page = client.get(url).content.decode()
        cells = _verdict_cells(page)
        assert len(cells) == (200 if url == plan.get_absolute_url() else 50)
        assert all(outcome == "inconclusive" and INVALID in reason for outcome, reason in cells)
