"""The Celery tasks and their services: dispatch, ingest, the lease reaper and the re-drive of lost messages."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.benchmarks import tasks
from apps.benchmarks.models import AttemptStatus, BenchmarkPlan, Job, JobAttempt, JobStatus, PlanStatus, Result
from apps.benchmarks.services import plan_dispatch, plan_request_dispatch
from apps.benchmarks.tests.helpers import make_plan, queue_jobs
from apps.fleet.models import Agent, AgentStatus, InventorySnapshot
from apps.fleet.tests.helpers import inventory

pytestmark = pytest.mark.django_db


def _expire_all():
    JobAttempt.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))


# --- dispatch -------------------------------------------------------------------------------------------------------


def test_dispatch_expands_the_plan_into_queued_jobs_with_frozen_specs(pool, django_capture_on_commit_callbacks):
    plan = make_plan(pool, count=3, spec={"context": 4096}, acceptance_criteria={"max_p95_s": 2})
    with django_capture_on_commit_callbacks(execute=True):
        assert plan_request_dispatch(plan=plan) is True

    plan.refresh_from_db()
    assert plan.status == PlanStatus.DISPATCHED and plan.dispatched_at is not None
    jobs = list(plan.jobs.order_by("position"))
    assert [job.position for job in jobs] == [0, 1, 2]
    assert all(job.status == JobStatus.QUEUED and job.spec == {"context": 4096} for job in jobs)
    assert all(job.acceptance_criteria == {"max_p95_s": 2} and job.max_attempts == 3 for job in jobs)

    plan.spec["jobs"][0]["spec"]["context"] = 8192
    plan.save()
    assert Job.objects.get(pk=jobs[0].pk).spec == {"context": 4096}


def test_dispatching_twice_creates_the_jobs_once(pool):
    plan = make_plan(pool, count=2)
    plan_request_dispatch(plan=plan)
    assert tasks.dispatch_plan(plan.pk) == 2
    assert tasks.dispatch_plan(plan.pk) == 0
    assert plan_request_dispatch(plan=plan) is False
    assert Job.objects.count() == 2


def test_a_draft_plan_is_not_dispatched_by_the_task(pool):
    plan = make_plan(pool)
    assert tasks.dispatch_plan(plan.pk) == 0
    assert tasks.dispatch_plan(987654) == 0
    assert Job.objects.count() == 0


# --- ingest ---------------------------------------------------------------------------------------------------------


def test_ingest_of_an_inventory_result_stores_the_snapshot_once(agent_api, agent, pool):
    queue_jobs(pool)
    job = agent_api.claim_job()
    reported = inventory(gpus=8, machine_id="machine-a")
    agent_api.finish(job, result=reported, event_count=0)
    result = Result.objects.get()

    assert tasks.ingest_result(result.pk) is True
    assert tasks.ingest_result(result.pk) is False

    result.refresh_from_db()
    assert result.summary["gpu_count"] == 8 and result.summary["gpu_names"] == "NVIDIA H200"
    assert InventorySnapshot.objects.filter(agent=agent, source="job").count() == 1


def test_ingest_notes_events_that_never_arrived(agent_api, pool):
    queue_jobs(pool)
    job = agent_api.claim_job()
    agent_api.finish(job, event_count=5)
    result = Result.objects.get()
    tasks.ingest_result(result.pk)
    result.refresh_from_db()
    assert result.summary["events_complete"] is False
    assert result.summary["events_received"] == 0 and result.summary["events_expected"] == 5


def test_ingest_of_a_vanished_result_does_nothing():
    assert tasks.ingest_result(424242) is False


# --- the reaper -----------------------------------------------------------------------------------------------------


def test_an_expired_lease_is_reaped_and_the_job_queued_again(agent_api, agent, pool):
    queue_jobs(pool)
    agent_api.start(agent_api.claim_job())
    Agent.objects.filter(pk=agent.pk).update(last_heartbeat_at=timezone.now() - timedelta(minutes=10))
    _expire_all()

    assert tasks.reap_expired_leases() == 1

    attempt = JobAttempt.objects.get()
    assert attempt.status == AttemptStatus.AGENT_LOST and attempt.ended_at is not None
    assert Job.objects.get().status == JobStatus.QUEUED
    assert Agent.objects.get(pk=agent.pk).status == AgentStatus.LOST


def test_an_agent_still_heartbeating_is_not_marked_lost(agent_api, agent, pool):
    queue_jobs(pool)
    agent_api.claim_job()
    agent_api.heartbeat(state="busy")
    _expire_all()
    tasks.reap_expired_leases()
    assert Agent.objects.get(pk=agent.pk).status != AgentStatus.LOST


def test_a_live_lease_is_left_alone(agent_api, pool):
    queue_jobs(pool)
    agent_api.claim_job()
    assert tasks.reap_expired_leases() == 0
    assert JobAttempt.objects.get().status == AttemptStatus.CLAIMED


def test_retries_are_bounded_by_the_attempt_limit(agent_api, pool, settings):
    settings.DOSSIER_JOB_MAX_ATTEMPTS = 2
    queue_jobs(pool)
    for _attempt in range(2):
        agent_api.claim_job()
        _expire_all()
        tasks.reap_expired_leases()

    job = Job.objects.get()
    assert job.status == JobStatus.FAILED and job.attempt_count == 2
    assert "attempt limit" in job.failure_reason
    assert agent_api.claim().status_code == 204


def test_reaping_a_job_whose_cancellation_was_requested_cancels_it(agent_api, pool):
    from apps.benchmarks.services import job_cancel

    queue_jobs(pool)
    agent_api.claim_job()
    job_cancel(job=Job.objects.get())
    _expire_all()
    tasks.reap_expired_leases()
    assert Job.objects.get().status == JobStatus.CANCELLED


def test_silent_agents_turn_offline(agent, settings):
    Agent.objects.filter(pk=agent.pk).update(last_heartbeat_at=timezone.now() - timedelta(seconds=91))
    tasks.reap_expired_leases()
    assert Agent.objects.get(pk=agent.pk).status == AgentStatus.OFFLINE


# --- re-drive -------------------------------------------------------------------------------------------------------


def test_redrive_dispatches_a_plan_whose_message_was_lost(pool, settings):
    settings.DOSSIER_REDRIVE_AFTER_S = 60
    plan = make_plan(pool, count=2)
    plan_request_dispatch(plan=plan)  # the on-commit message never runs in this test: as if the broker lost it
    assert tasks.redrive_pending() == {"plans": 0, "results": 0}  # too recent: the first message may still come

    BenchmarkPlan.objects.filter(pk=plan.pk).update(dispatch_requested_at=timezone.now() - timedelta(minutes=5))
    assert tasks.redrive_pending() == {"plans": 1, "results": 0}

    assert Job.objects.filter(plan=plan).count() == 2
    assert tasks.redrive_pending() == {"plans": 0, "results": 0}


def test_redrive_ingests_a_result_whose_message_was_lost_exactly_once(agent_api, pool, settings):
    settings.DOSSIER_REDRIVE_AFTER_S = 0
    queue_jobs(pool)
    job = agent_api.claim_job()
    agent_api.finish(job, result=inventory(gpus=1))  # ingest message lost with the rolled-back test transaction
    Result.objects.update(recorded_at=timezone.now() - timedelta(seconds=1))

    assert tasks.redrive_pending() == {"plans": 0, "results": 1}
    assert tasks.redrive_pending() == {"plans": 0, "results": 0}
    assert Result.objects.get().ingested_at is not None
    assert InventorySnapshot.objects.filter(source="job").count() == 1


def test_the_beat_schedule_runs_the_reaper_and_the_redrive(settings):
    tasks_in_schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"benchmarks.reap_expired_leases", "benchmarks.redrive_pending"} <= tasks_in_schedule


def test_plan_dispatch_service_returns_zero_for_an_unknown_plan():
    assert plan_dispatch(plan_id=123456) == 0
