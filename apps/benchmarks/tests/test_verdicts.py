"""One verdict per result (apps/benchmarks/verdicts.py): a run that ended without settling anything reads
"inconclusive" with its reason on the job page, the candidate page and the results API; and a job that fails twice in
a row with the same error stops retrying and says so."""

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.benchmarks import verdicts
from apps.benchmarks.models import Job, JobStatus, Result
from apps.benchmarks.tests.helpers import queue_jobs
from apps.benchmarks.tests.test_memory_fit_results import _finish
from tests.agent_server.memory_fit_support import MIB, probe_report, tiny_candidate

pytestmark = pytest.mark.django_db

COMMON = {"weights": 80 * MIB, "kv_per_request": 10 * MIB, "activation": 20 * MIB}


def _timed_out_at_target(candidate, pool, agent):
    """The plan's target is concurrency 2 (`_finish`); its probe timed out, the bisection's n = 1 fitted."""
    return _finish(candidate, pool, agent, "cpu",
                   [probe_report(2, outcome="timeout", **COMMON), probe_report(1, **COMMON)])


# --- memory fit -------------------------------------------------------------------------------------------------------


def test_a_probe_that_timed_out_at_the_target_is_inconclusive_with_its_reason(team, pool, agent):
    """Old code: the job and its result read "succeeded" and the panel "Fits at the target: no"."""
    result = _timed_out_at_target(tiny_candidate(team), pool, agent)
    assert result.status == "succeeded" and result.result["fits_at_target"] is False
    verdict = verdicts.result_verdict(result)
    assert verdict.outcome == "inconclusive"
    assert "timed out" in verdict.reason and "concurrent_sessions = 2" in verdict.reason
    assert verdicts.job_verdict(result.job).outcome == "inconclusive"


def test_a_target_that_ran_out_of_memory_is_a_conclusive_no(team, pool, agent):
    result = _finish(tiny_candidate(team), pool, agent, "cpu",
                     [probe_report(2, outcome="oom", **COMMON), probe_report(1, **COMMON)])
    assert verdicts.result_verdict(result) == verdicts.Verdict("succeeded")


def test_the_job_page_says_inconclusive_never_succeeded(team, pool, agent, client, platform_user):
    result = _timed_out_at_target(tiny_candidate(team), pool, agent)
    client.force_login(platform_user)
    page = client.get(reverse("benchmarks:job-detail", args=[result.job_id])).content.decode()
    assert 'id="job-verdict" data-outcome="inconclusive"' in page
    assert 'id="job-verdict-reason"' in page and "timed out" in page
    assert 'badge badge-ok">succeeded' not in page


def test_the_candidate_page_shows_inconclusive_and_no_empty_chart(team, pool, agent, client, platform_user):
    candidate = tiny_candidate(team)
    _timed_out_at_target(candidate, pool, agent)
    client.force_login(platform_user)
    page = client.get(candidate.get_absolute_url()).content.decode()
    assert 'id="memory-fit-verdict" data-outcome="inconclusive"' in page
    assert 'id="memory-fit-fits">unknown (inconclusive)' in page
    assert "data-memory-chart=" not in page


def test_the_results_api_carries_the_verdict(team, pool, agent, client, platform_user):
    result = _timed_out_at_target(tiny_candidate(team), pool, agent)
    client.force_login(platform_user)
    body = client.get(reverse("benchmarks-api:result-detail", args=[result.pk])).json()
    assert body["status"] == "succeeded"
    assert body["verdict"]["outcome"] == "inconclusive" and "timed out" in body["verdict"]["reason"]


# --- throughput and the other kinds -------------------------------------------------------------------------------


def _throughput_result(summary, *, status="succeeded", error=None):
    return Result(job=Job(kind="throughput"), status=status, summary=summary, error=error,
                  ingested_at=timezone.now())


def test_an_invalid_throughput_run_is_inconclusive_with_the_ingests_reasons():
    result = _throughput_result({"phase2": {"mode": "run", "valid": False,
                                            "invalid_reasons": ["send-lag p99 0.2 s over 0.05 s"]}})
    verdict = verdicts.result_verdict(result)
    assert verdict.outcome == "inconclusive" and "send-lag p99 0.2 s over 0.05 s" in verdict.reason


def test_a_throughput_run_the_ingest_could_not_summarise_is_inconclusive():
    verdict = verdicts.result_verdict(_throughput_result({"phase2": {"mode": "none",
                                                                     "problem": "records.npz was not uploaded"}}))
    assert verdict.outcome == "inconclusive" and "records.npz was not uploaded" in verdict.reason


def test_a_valid_throughput_run_succeeds_and_a_failure_names_its_error():
    assert verdicts.result_verdict(_throughput_result({"phase2": {"mode": "run", "valid": True}})).outcome \
        == "succeeded"
    failed = verdicts.result_verdict(_throughput_result(None, status="failed",
                                                        error={"type": "ValueError", "message": "bad spec"}))
    assert failed == verdicts.Verdict("failed", "ValueError: bad spec")


def test_a_result_not_ingested_yet_is_pending():
    result = _throughput_result(None)
    result.ingested_at = None
    assert verdicts.result_verdict(result).outcome == "pending"


# --- retrying the same failure --------------------------------------------------------------------------------------


def _fail(agent_api, error, *, status="failed"):
    job = agent_api.claim_job()
    agent_api.start(job)
    return agent_api.finish(job, status=status, result=None, error=error)


def test_two_identical_consecutive_failures_stop_the_retries(agent_api, pool):
    """Attempt limit 3 (the default); old code queued a third attempt after the second identical failure."""
    queue_jobs(pool)
    boom = {"type": "RuntimeError", "message": "CUDA error: out of memory"}
    assert _fail(agent_api, boom).json()["canonical"] is False
    assert Job.objects.get().status == JobStatus.QUEUED
    reply = _fail(agent_api, dict(boom))
    job = Job.objects.get()
    assert reply.json()["canonical"] is True
    assert job.status == JobStatus.FAILED and job.attempt_count == 2 < job.max_attempts
    assert job.failure_reason == "failed twice with the same error: RuntimeError: CUDA error: out of memory"
    assert agent_api.claim().status_code == 204


def test_different_errors_keep_retrying(agent_api, pool):
    queue_jobs(pool)
    _fail(agent_api, {"type": "RuntimeError", "message": "boom"})
    _fail(agent_api, {"type": "RuntimeError", "message": "another boom"})
    assert Job.objects.get().status == JobStatus.QUEUED


def test_a_hand_back_in_between_breaks_the_run_of_failures(agent_api, pool, settings):
    settings.DOSSIER_JOB_MAX_ATTEMPTS = 4
    queue_jobs(pool)
    boom = {"type": "RuntimeError", "message": "boom"}
    _fail(agent_api, boom)
    _fail(agent_api, {"message": "SIGTERM"}, status="handed_back")
    _fail(agent_api, boom)
    assert Job.objects.get().status == JobStatus.QUEUED
    _fail(agent_api, boom)
    assert Job.objects.get().failure_reason == "failed twice with the same error: RuntimeError: boom"


def test_a_cpu_memory_fit_on_the_candidate_page_is_labelled_a_rehearsal(team, pool, agent, client, platform_user):
    """Like the throughput and resilience panels: a CPU result is a rehearsal, never a GPU measurement."""
    candidate = tiny_candidate(team)
    result = _finish(candidate, pool, agent, "cpu", [probe_report(2, **COMMON), probe_report(1, **COMMON)])
    assert result.rehearsal
    client.force_login(platform_user)
    page = client.get(candidate.get_absolute_url()).content.decode()
    panel = page[page.index('id="memory-fit"'):page.index('id="memory-fit-verdict"')]
    assert 'class="warning-box rehearsal-label" data-rehearsal="true"' in panel
