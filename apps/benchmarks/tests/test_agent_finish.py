"""POST /api/agent/v1/jobs/{id}/finish (docs/agent-protocol.md §3.8) and what it does to the job."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.benchmarks.models import AttemptStatus, Job, JobAttempt, JobStatus, Result
from apps.benchmarks.services import job_cancel, reap_expired_leases
from apps.benchmarks.tests.helpers import queue_jobs
from apps.fleet.models import Agent, AgentStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def claimed(agent_api, pool):
    queue_jobs(pool, spec={"probe": "nvml"}, acceptance_criteria={"gpu_count": 8})
    job = agent_api.claim_job()
    agent_api.start(job)
    return job


def _reap(job):
    JobAttempt.objects.filter(job_id=int(job.job_id), number=job.attempt).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    reap_expired_leases()


def test_finish_stores_the_canonical_result_with_the_frozen_spec(agent_api, claimed, agent):
    response = agent_api.finish(claimed, result={"gpus": []}, event_count=0)

    assert response.status_code == 201
    body = response.json()
    assert body["job_id"] == claimed.job_id and body["attempt"] == 1
    assert body["status"] == "succeeded" and body["canonical"] is True
    assert body["recorded_at"].endswith("Z")
    result = Result.objects.get()
    assert result.canonical and result.result == {"gpus": []}
    assert result.spec == {"probe": "nvml"} and result.acceptance_criteria == {"gpu_count": 8}
    job = Job.objects.get()
    assert job.status == JobStatus.SUCCEEDED and job.finished_at is not None
    assert JobAttempt.objects.get().status == AttemptStatus.SUCCEEDED
    assert Agent.objects.get(pk=agent.pk).status == AgentStatus.ONLINE


def test_the_same_finish_twice_stores_one_result_and_replays_the_reply(agent_api, claimed):
    first = agent_api.finish(claimed, key="key-1")
    again = agent_api.finish(claimed, key="key-1")

    assert again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Result.objects.count() == 1


def test_the_same_key_with_another_body_is_409(agent_api, claimed):
    agent_api.finish(claimed, key="key-1", result={"a": 1})
    response = agent_api.finish(claimed, key="key-1", result={"a": 2})
    assert response.status_code == 409
    assert response.json()["error"] == "idempotency_key_reused"
    assert Result.objects.get().result == {"a": 1}


def test_another_key_for_a_finished_attempt_is_409(agent_api, claimed):
    agent_api.finish(claimed, key="key-1")
    response = agent_api.finish(claimed, key="key-2")
    assert response.status_code == 409
    assert response.json()["error"] == "attempt_finished"
    assert Result.objects.count() == 1


def test_listing_an_artifact_never_uploaded_is_a_400_and_nothing_is_stored(agent_api, claimed):
    uploaded = agent_api.put_artifact(claimed, b"data").json()["sha256"]
    missing = "f" * 64
    response = agent_api.finish(claimed, artifacts=[
        {"sha256": uploaded, "name": "data.bin", "media_type": "application/octet-stream", "size": 4},
        {"sha256": missing, "name": "lost.bin", "media_type": "application/octet-stream", "size": 9},
    ])
    assert response.status_code == 400
    assert response.json()["error"] == "artifacts_missing" and response.json()["missing"] == [missing]
    assert Result.objects.count() == 0
    assert Job.objects.get().status == JobStatus.RUNNING
    assert JobAttempt.objects.get().finish_idempotency_key == ""


def test_finish_links_the_listed_artifacts(agent_api, claimed):
    digest = agent_api.put_artifact(claimed, b"data").json()["sha256"]
    agent_api.finish(claimed, artifacts=[{"sha256": digest, "name": "data.bin", "media_type": "x/y", "size": 4}])
    assert [artifact.sha256 for artifact in Result.objects.get().artifacts.all()] == [digest]


@pytest.mark.parametrize(
    "change",
    [
        {"status": "exploded"},
        {"finished_at": "tomorrow"},
        {"result": [1, 2]},
        {"event_count": -1},
        {"artifacts": [{"sha256": "nope", "name": "x"}]},
    ],
)
def test_a_malformed_finish_is_a_400_and_nothing_is_stored(agent_api, claimed, change):
    response = agent_api.finish(claimed, **change)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert Result.objects.count() == 0


def test_finish_without_an_idempotency_key_is_a_400(agent_api, claimed):
    response = agent_api.post(f"/jobs/{claimed.job_id}/finish", {"attempt": 1}, job_token=claimed.job_token)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["fields"]


def test_an_oversized_finish_is_a_413_and_nothing_is_stored(agent_api, claimed, settings):
    settings.DOSSIER_AGENT_MAX_BODY_BYTES = 64 * 1024
    response = agent_api.finish(claimed, result={"blob": "x" * (70 * 1024)})
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"
    assert Result.objects.count() == 0


def test_a_finish_naming_another_attempt_is_a_400(agent_api, claimed):
    raw = json.dumps({"attempt": 5, "status": "succeeded", "finished_at": "2025-01-31T12:00:00Z"}).encode()
    response = agent_api.finish(claimed, raw=raw)
    assert response.status_code == 400
    assert response.json()["error"] == "attempt_mismatch"


def test_a_failed_attempt_is_retried_while_the_limit_allows(agent_api, claimed):
    response = agent_api.finish(claimed, status="failed", error={"type": "RuntimeError", "message": "boom"})

    assert response.json()["canonical"] is False
    job = Job.objects.get()
    assert job.status == JobStatus.QUEUED
    retry = agent_api.claim_job()
    assert retry.attempt == 2


def test_the_last_allowed_failure_is_the_canonical_result(agent_api, pool, settings):
    settings.DOSSIER_JOB_MAX_ATTEMPTS = 1
    queue_jobs(pool)
    job = agent_api.claim_job()
    response = agent_api.finish(job, status="failed", error={"type": "OutOfMemoryError", "message": "OOM at batch 8"})
    assert response.json()["canonical"] is True
    failed = Job.objects.get()
    assert failed.status == JobStatus.FAILED and failed.failure_reason == "OOM at batch 8"


def test_a_cancelled_finish_ends_the_job_without_a_new_attempt(agent_api, claimed):
    job_cancel(job=Job.objects.get())
    response = agent_api.finish(claimed, status="cancelled", result={"partial": True})
    assert response.json()["canonical"] is True
    assert Job.objects.get().status == JobStatus.CANCELLED
    assert agent_api.claim().status_code == 204


def test_a_handed_back_job_is_queued_again_at_once(agent_api, second_agent_api, claimed):
    response = agent_api.finish(claimed, status="handed_back", result=None, error={"message": "SIGTERM"})
    assert response.status_code == 201 and response.json()["canonical"] is False
    assert Job.objects.get().status == JobStatus.QUEUED
    assert JobAttempt.objects.get().status == AttemptStatus.HANDED_BACK
    assert second_agent_api.claim_job().attempt == 2


def test_a_late_success_stops_the_rerun_already_claimed(agent_api, second_agent_api, claimed):
    """The reaper gave attempt 1 up and another agent claimed attempt 2; attempt 1's success then arrives (its agent
    could not reach the server, it was not dead): the work is done, attempt 2 is stopped and its finish is kept, not
    canonical."""
    _reap(claimed)
    newer = second_agent_api.claim_job()
    second_agent_api.start(newer)

    late = agent_api.finish(claimed, result={"from": "attempt 1"})
    assert late.status_code == 201 and late.json()["canonical"] is True
    assert Job.objects.get().status == JobStatus.SUCCEEDED
    assert JobAttempt.objects.get(number=2).status == AttemptStatus.CANCELLED

    renewal = second_agent_api.lease(newer)
    assert renewal.status_code == 409 and renewal.json()["error"] == "attempt_not_running"
    current = second_agent_api.finish(newer, result={"from": "attempt 2"})
    assert current.status_code == 201 and current.json()["canonical"] is False
    assert Job.objects.get().canonical_result().result == {"from": "attempt 1"}
    assert JobAttempt.objects.get(number=1).status == AttemptStatus.AGENT_LOST


def test_a_late_success_while_the_job_waits_for_its_next_attempt_ends_the_job(agent_api, second_agent_api, claimed):
    _reap(claimed)
    assert Job.objects.get().status == JobStatus.QUEUED
    response = agent_api.finish(claimed)
    assert response.json()["canonical"] is True
    assert Job.objects.get().status == JobStatus.SUCCEEDED
    assert second_agent_api.claim().status_code == 204, "nothing is left to re-run"


def test_a_late_failure_of_a_reaped_attempt_changes_nothing(agent_api, claimed):
    _reap(claimed)
    response = agent_api.finish(claimed, status="failed", result=None, error={"message": "OOM"})
    assert response.json()["canonical"] is False
    assert Job.objects.get().status == JobStatus.QUEUED


def test_a_newer_success_wins_over_a_later_late_one(agent_api, second_agent_api, claimed):
    _reap(claimed)
    newer = second_agent_api.claim_job()
    second_agent_api.start(newer)
    assert second_agent_api.finish(newer, result={"from": "attempt 2"}).json()["canonical"] is True
    late = agent_api.finish(claimed, result={"from": "attempt 1"})
    assert late.status_code == 201 and late.json()["canonical"] is False
    assert Job.objects.get().canonical_result().result == {"from": "attempt 2"}


def test_a_late_finish_after_the_last_attempt_was_lost_becomes_the_result(agent_api, pool, settings):
    settings.DOSSIER_JOB_MAX_ATTEMPTS = 1
    queue_jobs(pool)
    job = agent_api.claim_job()
    _reap(job)
    assert Job.objects.get().status == JobStatus.FAILED

    response = agent_api.finish(job, result={"late": True})

    assert response.json()["canonical"] is True
    assert Job.objects.get().status == JobStatus.SUCCEEDED


def test_finish_queues_ingest_when_the_transaction_commits(agent_api, claimed, django_capture_on_commit_callbacks):
    agent_api.events(claimed, 0, [
        {"kind": "telemetry", "ts": "2025-01-31T12:00:06Z",
         "data": {"gpus": [{"index": 0, "memory_used_mib": 1000, "power_w": 300.0}]}},
        {"kind": "telemetry", "ts": "2025-01-31T12:00:07Z",
         "data": {"gpus": [{"index": 0, "memory_used_mib": 3000, "power_w": 500.0}]}},
    ])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        agent_api.finish(claimed, event_count=2)

    assert len(callbacks) == 1
    result = Result.objects.get()
    assert result.ingested_at is not None
    assert result.summary["events_complete"] is True
    assert result.summary["telemetry"]["0"]["peak_memory_used_mib"] == 3000
    assert result.summary["telemetry"]["0"]["mean_power_w"] == 400.0
