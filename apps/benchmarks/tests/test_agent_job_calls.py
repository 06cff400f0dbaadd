"""start, lease and events (docs/agent-protocol.md §3.4–3.6), and who may call them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.benchmarks.models import AttemptStatus, JobAttempt, JobEvent, JobStatus
from apps.benchmarks.services import job_cancel, reap_expired_leases
from apps.benchmarks.tests.helpers import queue_jobs
from apps.fleet import protocol
from apps.fleet.models import InventorySnapshot
from apps.fleet.tests.helpers import AgentApi, ClaimedJob, inventory, progress_event, register_agent, telemetry_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def claimed(agent_api, pool):
    queue_jobs(pool)
    return agent_api.claim_job()


def _expire(job: ClaimedJob):
    JobAttempt.objects.filter(job_id=int(job.job_id), number=job.attempt).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


# --- start --------------------------------------------------------------------------------------------------------


def test_start_switches_the_attempt_to_running_with_the_long_lease(agent_api, claimed):
    response = agent_api.start(claimed, inventory_body=inventory(gpus=2))

    assert response.status_code == 200
    body = response.json()
    assert body == {"job_id": claimed.job_id, "attempt": 1, "status": "running", "lease": body["lease"],
                    "cancel_requested": False}
    assert body["lease"]["ttl_s"] == 90
    attempt = JobAttempt.objects.get(job_id=int(claimed.job_id))
    assert attempt.status == AttemptStatus.RUNNING and attempt.job.status == JobStatus.RUNNING
    assert attempt.start_inventory.source == "start" and attempt.start_inventory.gpu_count == 2


def test_start_is_idempotent(agent_api, claimed):
    first = agent_api.start(claimed)
    again = agent_api.start(claimed)
    assert again.status_code == 200
    assert again.json() == first.json()


def test_start_naming_another_attempt_than_the_token_is_a_400(agent_api, claimed):
    response = agent_api.start(claimed, attempt=2)
    assert response.status_code == 400
    assert response.json()["error"] == "attempt_mismatch"
    assert JobAttempt.objects.get().status == AttemptStatus.CLAIMED


def test_start_after_finish_is_409_attempt_finished(agent_api, claimed):
    agent_api.start(claimed)
    agent_api.finish(claimed)
    response = agent_api.start(claimed)
    assert response.status_code == 409
    assert response.json()["error"] == "attempt_finished"


def test_start_of_a_superseded_attempt_is_409(agent_api, claimed):
    _expire(claimed)
    reap_expired_leases()
    newer = agent_api.claim_job()
    assert newer.attempt == 2

    response = agent_api.start(claimed)

    assert response.status_code == 409
    assert response.json()["error"] == "attempt_superseded"


# --- lease ----------------------------------------------------------------------------------------------------------


def test_lease_renewal_extends_the_lease_and_records_progress(agent_api, claimed):
    agent_api.start(claimed)
    _expire(claimed)  # expired but not reaped yet: the renewal still wins

    response = agent_api.lease(claimed, progress=0.4)

    assert response.status_code == 200
    body = response.json()
    assert body["cancel_requested"] is False and body["cancel_reason"] == ""
    assert protocol.parse_timestamp(body["lease"]["expires_at"]) > timezone.now() + timedelta(seconds=80)
    attempt = JobAttempt.objects.get()
    assert attempt.progress == 0.4 and attempt.lease_expires_at > timezone.now()


def test_cancellation_reaches_the_agent_on_the_next_lease(agent_api, claimed, platform_user):
    agent_api.start(claimed)
    job_cancel(job=JobAttempt.objects.get().job, actor=platform_user, reason="wrong node")

    body = agent_api.lease(claimed).json()

    assert body["cancel_requested"] is True and body["cancel_reason"] == "wrong node"


def test_a_reaped_attempt_gets_409_on_its_next_lease(agent_api, claimed):
    agent_api.start(claimed)
    _expire(claimed)
    reap_expired_leases()

    response = agent_api.lease(claimed)

    assert response.status_code == 409
    assert response.json()["error"] == "attempt_not_running"


def test_a_stale_attempt_gets_409_superseded_once_a_newer_attempt_runs(agent_api, second_agent_api, claimed):
    agent_api.start(claimed)
    _expire(claimed)
    reap_expired_leases()
    newer = second_agent_api.claim_job()

    response = agent_api.lease(claimed)

    assert response.status_code == 409
    assert response.json()["error"] == "attempt_superseded"
    assert second_agent_api.lease(newer).status_code == 200


# --- events ---------------------------------------------------------------------------------------------------------


def test_events_are_stored_in_sequence_and_a_resend_changes_nothing(agent_api, claimed):
    batch = [progress_event(0.25, "weights built"), telemetry_event(70213, 512.5),
             {"kind": "log", "ts": "2025-01-31T12:00:07Z", "data": {"level": "info", "message": "ok", "fields": {}}}]

    first = agent_api.events(claimed, 0, batch)
    again = agent_api.events(claimed, 0, batch)

    assert first.status_code == 200 and first.json() == {"stored": 3, "duplicates": 0, "next_seq": 3}
    assert again.json() == {"stored": 0, "duplicates": 3, "next_seq": 3}
    assert list(JobEvent.objects.values_list("seq", "kind")) == [(0, "progress"), (1, "telemetry"), (2, "log")]
    attempt = JobAttempt.objects.get()
    assert attempt.progress == 0.25 and attempt.progress_message == "weights built"


def test_a_partly_repeated_batch_stores_only_the_new_events_first_write_wins(agent_api, claimed):
    agent_api.events(claimed, 0, [progress_event(0.1, "first")])
    response = agent_api.events(claimed, 0, [progress_event(0.9, "rewritten"), progress_event(0.2, "second")])
    assert response.json() == {"stored": 1, "duplicates": 1, "next_seq": 2}
    assert JobEvent.objects.get(seq=0).data["message"] == "first"


def test_event_batches_may_arrive_out_of_order_with_gaps(agent_api, claimed):
    assert agent_api.events(claimed, 10, [progress_event(0.5)]).json()["next_seq"] == 11
    assert agent_api.events(claimed, 0, [progress_event(0.1)]).json()["stored"] == 1
    assert list(JobEvent.objects.values_list("seq", flat=True)) == [0, 10]


def test_too_many_events_in_one_batch_is_a_413_and_nothing_is_stored(agent_api, claimed, settings):
    settings.DOSSIER_AGENT_MAX_EVENTS_PER_BATCH = 3
    response = agent_api.events(claimed, 0, [progress_event(0.1)] * 4)
    assert response.status_code == 413
    assert response.json()["error"] == "too_many_events"
    assert JobEvent.objects.count() == 0


def test_one_malformed_event_refuses_the_whole_batch_naming_it(agent_api, claimed):
    batch = [progress_event(0.1), {"kind": "Bad Kind", "ts": "yesterday", "data": []}]
    response = agent_api.events(claimed, 0, batch)
    assert response.status_code == 400
    fields = response.json()["fields"]
    assert {"events[1].kind", "events[1].ts", "events[1].data"} <= set(fields)
    assert JobEvent.objects.count() == 0


@pytest.mark.parametrize("query", ["", "?seq=-1", "?seq=abc"])
def test_events_need_a_non_negative_seq(agent_api, claimed, query):
    response = agent_api.post(f"/jobs/{claimed.job_id}/events{query}", {"attempt": 1, "events": [progress_event(0)]},
                              job_token=claimed.job_token)
    assert response.status_code == 400
    assert "seq" in response.json()["fields"]


def test_an_empty_batch_is_a_400(agent_api, claimed):
    assert agent_api.events(claimed, 0, []).status_code == 400


def test_events_of_a_superseded_attempt_are_kept_against_that_attempt(agent_api, claimed):
    _expire(claimed)
    reap_expired_leases()
    agent_api.claim_job()

    response = agent_api.events(claimed, 0, [progress_event(0.9, "late")])

    assert response.status_code == 200
    assert JobEvent.objects.get().attempt.number == 1


# --- who may call -------------------------------------------------------------------------------------------------

JOB_CALLS = ["start", "lease", "events", "artifact", "finish"]


def _call(api: AgentApi, name: str, job: ClaimedJob):
    if name == "start":
        return api.start(job)
    if name == "lease":
        return api.lease(job)
    if name == "events":
        return api.events(job, 0, [progress_event(0.5)])
    if name == "artifact":
        return api.put_artifact(job, b"raw bytes")
    return api.finish(job)


@pytest.mark.parametrize("call", JOB_CALLS)
def test_one_agent_cannot_read_or_write_another_agents_job(second_agent_api, claimed, call):
    response = _call(second_agent_api, call, claimed)  # even holding the right job token
    assert response.status_code == 404
    assert response.json()["error"] == "job_not_found"
    assert JobEvent.objects.count() == 0
    assert JobAttempt.objects.get().status == AttemptStatus.CLAIMED


@pytest.mark.parametrize("call", JOB_CALLS)
def test_a_job_token_of_another_job_is_refused_with_403(agent_api, pool, call):
    queue_jobs(pool, count=2)
    first, second = agent_api.claim_job(), agent_api.claim_job()
    crossed = ClaimedJob(first.job_id, first.attempt, second.job_token)

    response = _call(agent_api, call, crossed)

    assert response.status_code == 403
    assert response.json()["error"] == "invalid_job_token"


@pytest.mark.parametrize("call", JOB_CALLS)
def test_a_missing_or_unknown_job_token_is_refused_with_403(agent_api, claimed, call):
    for token in ["", "dsj_" + "x" * 43]:
        response = _call(agent_api, call, ClaimedJob(claimed.job_id, claimed.attempt, token))
        assert response.status_code == 403


@pytest.mark.parametrize("job_id", ["999999", "abc", "-1"])
def test_an_unknown_job_is_404(agent_api, claimed, job_id):
    response = agent_api.lease(ClaimedJob(job_id, 1, claimed.job_token))
    assert response.status_code == 404


def test_a_wrong_agent_token_on_a_job_call_is_401(claimed):
    response = AgentApi("dsa_" + "y" * 43).lease(claimed)
    assert response.status_code == 401


def test_an_agent_registered_in_another_team_cannot_see_the_job(claimed, other_pool):
    _agent, token = register_agent(other_pool, machine_id="elsewhere")
    assert AgentApi(token).lease(claimed).status_code == 404
    assert InventorySnapshot.objects.filter(agent__pool=other_pool).count() == 1


# --- what the server decides where the protocol leaves it open (docs/agent-protocol.md, "Server notes") ----------


def test_start_of_a_reaped_attempt_without_a_newer_one_is_409_attempt_not_running(agent_api, claimed):
    _expire(claimed)
    reap_expired_leases()
    response = agent_api.start(claimed)
    assert response.status_code == 409
    assert response.json()["error"] == "attempt_not_running"


def test_events_after_the_finish_are_still_stored(agent_api, claimed):
    agent_api.finish(claimed, event_count=0)
    assert agent_api.events(claimed, 0, [progress_event(1.0, "late line")]).json()["stored"] == 1


def test_an_artifact_without_content_length_is_411(agent_api, claimed):
    response = agent_api.client.generic(
        "PUT", f"/api/agent/v1/jobs/{claimed.job_id}/artifacts/{'a' * 64}", b"", content_type="application/gzip",
        CONTENT_LENGTH="", **agent_api._headers(claimed.job_token, {"HTTP_X_ARTIFACT_NAME": "x.gz"}),
    )
    assert response.status_code == 411
    assert response.json()["error"] == "length_required"
