"""End to end: the live test server, a real Celery worker and real `dossier-agent` processes on this machine.

register → dispatch → claim → inventory job → finish → ingest → result on the job page; then what breaks:
an agent SIGKILLed mid-job, the server unreachable while the agent finishes, a worker SIGKILLed mid-ingest.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from django.db import connection
from django.urls import reverse

from apps.benchmarks.models import AttemptStatus, Job, JobAttempt, JobEvent, JobStatus, Result
from apps.benchmarks.services import plan_create, plan_request_dispatch
from apps.fleet.models import Agent, AgentStatus, InventorySnapshot
from apps.fleet.services import pool_create, registration_token_create
from tests.e2e.conftest import FAST_TIMINGS
from tests.e2e.processes import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pool(team):
    return pool_create(team=team, name="e2e-pool")


@pytest.fixture
def registration_token(pool):
    _row, secret = registration_token_create(pool=pool)
    return secret


def dispatch(pool, *, kind: str, spec: dict, agent: Agent | None = None):
    """A plan of one job, dispatched the way the page does it: the message goes through the broker to the worker."""
    plan = plan_create(team=pool.team, name=f"e2e {kind}", target_pool=pool, target_agent=agent,
                       spec={"jobs": [{"kind": kind, "spec": spec}]})
    plan_request_dispatch(plan=plan)
    return plan


def attempt_status(job: Job, number: int) -> str | None:
    return JobAttempt.objects.filter(job=job, number=number).values_list("status", flat=True).first()


# --- the road, once --------------------------------------------------------------------------------------------------


def test_register_dispatch_claim_inventory_finish_and_the_result_is_on_the_job_page(
    e2e, pool, registration_token, client, platform_user
):
    e2e.start_worker()
    state_dir = e2e.register_agent(registration_token)
    agent = Agent.objects.get(pool=pool)
    assert agent.name == "e2e-agent" and "inventory" in agent.job_kinds
    assert InventorySnapshot.objects.filter(agent=agent, source="register").exists()
    e2e.start_agent(state_dir)
    e2e.wait_for(lambda: Agent.objects.get(pk=agent.pk).reported_state == "idle", what="the agent's heartbeat")

    client.force_login(platform_user)
    response = client.post(reverse("benchmarks:run-inventory", args=[agent.pk]))
    assert response.status_code == 302

    job = e2e.wait_for(lambda: Job.objects.filter(target_agent=agent).first(), what="dispatch_plan to queue the job")
    result = e2e.wait_for(lambda: Result.objects.filter(job=job, ingested_at__isnull=False).first(), timeout=90,
                          what="the inventory result to be finished and ingested")

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert result.canonical and result.status == "succeeded"
    inventory = result.result
    assert inventory["host"]["cpu_model"] and inventory["software"]["agent_version"]
    assert result.summary["gpu_count"] == len(inventory["gpus"])
    assert result.events_received == result.event_count > 0
    assert [artifact.name for artifact in result.artifacts.all()] == ["inventory.json"]
    assert InventorySnapshot.objects.filter(agent=agent, source="job").count() == 1

    page = client.get(job.get_absolute_url()).content.decode()
    assert 'data-canonical="true"' in page and "inventory.json" in page
    agent_page = client.get(agent.get_absolute_url()).content.decode()
    assert inventory["host"]["cpu_model"] in agent_page


def test_cancel_from_the_browser_stops_the_running_job_within_a_lease_interval(
    e2e, pool, registration_token, client, platform_user
):
    e2e.start_worker()
    e2e.start_agent(e2e.register_agent(registration_token))
    dispatch(pool, kind="test_sleeper", spec={"seconds": 120})
    job = e2e.wait_for(lambda: Job.objects.filter(target_pool=pool).first(), what="the job to be dispatched")
    e2e.wait_for(lambda: attempt_status(job, 1) == AttemptStatus.RUNNING, what="attempt 1 to start")

    client.force_login(platform_user)
    asked = time.monotonic()
    client.post(reverse("benchmarks:job-cancel", args=[job.pk]), {"reason": "wrong node"})
    e2e.wait_for(lambda: Job.objects.get(pk=job.pk).status == JobStatus.CANCELLED, timeout=30,
                 what="the agent to stop the job and finish it as cancelled")

    renew_every = e2e.timings["DOSSIER_JOB_LEASE_RENEW_S"]
    assert time.monotonic() - asked < renew_every + 10  # one lease interval, plus the agent's own start-up of finish
    result = Result.objects.get(job=job)
    assert result.canonical and result.status == "cancelled"
    assert JobAttempt.objects.filter(job=job).count() == 1


# --- an agent killed in the middle of a job --------------------------------------------------------------------------


def test_an_agent_killed_mid_job_is_reaped_and_the_rerun_gives_one_canonical_result(e2e, pool, registration_token):
    e2e.start_worker()
    state_dir = e2e.register_agent(registration_token)
    first = e2e.start_agent(state_dir, label="agent-before-kill")
    agent = Agent.objects.get(pool=pool)
    dispatch(pool, kind="test_sleeper", spec={"seconds": 6})
    job = e2e.wait_for(lambda: Job.objects.filter(target_pool=pool).first(), what="the job to be dispatched")
    e2e.wait_for(lambda: attempt_status(job, 1) == AttemptStatus.RUNNING, what="attempt 1 to start")

    first.kill()

    e2e.wait_for(lambda: attempt_status(job, 1) == AttemptStatus.AGENT_LOST, timeout=30,
                 what="the reaper to mark attempt 1 agent_lost")
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED
    e2e.wait_for(lambda: Agent.objects.get(pk=agent.pk).status == AgentStatus.LOST, timeout=15,
                 what="the silent agent to be marked lost")

    e2e.start_agent(state_dir, label="agent-restarted")
    e2e.wait_for(lambda: Job.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED, timeout=90,
                 what="the re-run to succeed")
    # The restarted agent hands back the attempt it was running when it died: stored, never canonical.
    e2e.wait_for(lambda: Result.objects.filter(attempt__job=job, attempt__number=1).exists(), timeout=30,
                 what="the interrupted attempt's hand-back to arrive")

    canonical = list(Result.objects.filter(job=job, canonical=True))
    assert len(canonical) == 1 and canonical[0].attempt.number == 2 and canonical[0].result["slept_s"] == 6
    late = Result.objects.get(attempt__job=job, attempt__number=1)
    assert late.canonical is False and late.status == "handed_back"
    assert JobAttempt.objects.get(job=job, number=1).status == AttemptStatus.AGENT_LOST


# --- the server unreachable while the agent finishes -----------------------------------------------------------------

LONG_LEASES = {**FAST_TIMINGS, "DOSSIER_JOB_CLAIM_LEASE_S": 120, "DOSSIER_JOB_LEASE_TTL_S": 120,
               "DOSSIER_AGENT_OFFLINE_AFTER_S": 120}


def _spooled_finishes(state_dir: Path) -> list[Path]:
    return list((state_dir / "spool" / "attempts").glob("*/finish.json"))


@pytest.mark.parametrize("e2e_timings", [LONG_LEASES], indirect=True, ids=["long-leases"])
def test_a_finish_made_while_the_server_is_down_is_delivered_later_exactly_once(e2e, pool, registration_token):
    live = urlsplit(e2e.live_url)
    proxy = TcpProxy(live.hostname, live.port)
    proxy.up()
    e2e.start_worker()
    state_dir = e2e.register_agent(registration_token, server_url=proxy.url)
    agent = e2e.start_agent(state_dir)
    dispatch(pool, kind="test_sleeper", spec={"seconds": 3})
    job = e2e.wait_for(lambda: Job.objects.filter(target_pool=pool).first(), what="the job to be dispatched")
    e2e.wait_for(lambda: attempt_status(job, 1) == AttemptStatus.RUNNING, what="attempt 1 to start")
    # The server has recorded the start; wait until the agent has its reply too (else the cut below can swallow the
    # reply, and the agent keeps asking to start instead of running the job).
    e2e.wait_for(lambda: 'event="job started"' in agent.log_text(), what="the agent to start the job process")

    proxy.down()
    e2e.wait_for(lambda: _spooled_finishes(state_dir), timeout=30, what="the agent to spool its finish")
    time.sleep(3)  # the agent's uploads fail meanwhile
    assert not Result.objects.filter(job=job).exists()

    proxy.up()
    result = e2e.wait_for(lambda: Result.objects.filter(job=job, ingested_at__isnull=False).first(), timeout=120,
                          what="the spooled finish to be delivered and ingested")
    e2e.wait_for(lambda: not _spooled_finishes(state_dir), timeout=30, what="the agent to clear its spool")

    assert Result.objects.filter(job=job).count() == 1
    assert result.canonical and result.result["slept_s"] == 3
    assert Job.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED
    events = list(JobEvent.objects.filter(attempt=result.attempt).values_list("seq", flat=True))
    assert len(events) == len(set(events)) == result.event_count


# --- a worker killed in the middle of an ingest ----------------------------------------------------------------------


class HttpAgent:
    """The agent protocol spoken by hand over HTTP, to control exactly when the finish happens."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=f"{base_url}/api/agent/v1", timeout=30,
                                 headers={"X-Agent-Version": "0.1.0"})

    def register(self, token: str) -> None:
        inventory = {"schema": 1, "gpu_present": False, "gpu_error": "no GPU in this test", "gpus": [],
                     "host": {"hostname": "e2e-http", "machine_id": uuid.uuid4().hex, "cpu_model": "test CPU"},
                     "software": {"agent_version": "0.1.0"}}
        reply = self.http.post("/register", json={
            "registration_token": token, "name": "e2e-http", "agent_version": "0.1.0", "protocol_version": 1,
            "machine_id": inventory["host"]["machine_id"], "job_kinds": ["inventory"], "operations": [],
            "inventory": inventory,
        })
        assert reply.status_code == 201, reply.text
        self.http.headers["Authorization"] = f"Bearer {reply.json()['agent_token']}"
        self.inventory = inventory

    def run_and_finish(self) -> dict:
        claim = self.http.post("/jobs/claim", json={"job_kinds": ["inventory"], "operations": []})
        assert claim.status_code == 200, claim.text
        body = claim.json()
        job_id, attempt, headers = body["job"]["id"], body["attempt"], {"X-Job-Token": body["job_token"]}
        assert self.http.post(f"/jobs/{job_id}/start", json={"attempt": attempt}, headers=headers).status_code == 200
        sample = {"kind": "telemetry", "ts": "2025-01-31T12:00:06.000Z",
                  "data": {"gpus": [{"index": 0, "memory_used_mib": 1234, "power_w": 99.5}]}}
        events = self.http.post(f"/jobs/{job_id}/events", params={"seq": 0}, headers=headers,
                                json={"attempt": attempt, "events": [sample]})
        assert events.status_code == 200, events.text
        finish = self.http.post(f"/jobs/{job_id}/finish", headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
                                content=json.dumps({
                                    "attempt": attempt, "status": "succeeded", "finished_at": "2025-01-31T12:00:09Z",
                                    # taken later than the registration's: the ingest stores it as a new snapshot
                                    "result": {**self.inventory, "collected_at": "2025-01-31T12:00:08.000Z"},
                                    "artifacts": [], "error": None, "event_count": 1,
                                }))
        assert finish.status_code == 201, finish.text
        return finish.json()


class DatabaseLock:
    """Holds the lock the ingest needs (the whole database on SQLite, the result's row on PostgreSQL)."""

    def __init__(self, result_id: int) -> None:
        params = connection.settings_dict
        if connection.vendor == "sqlite":
            self.handle = sqlite3.connect(params["NAME"], timeout=30, isolation_level=None)
            self.handle.execute("BEGIN IMMEDIATE")
        else:
            import psycopg

            self.handle = psycopg.connect(host=params["HOST"] or "127.0.0.1", port=params["PORT"] or 5432,
                                          user=params["USER"], password=params["PASSWORD"], dbname=params["NAME"])
            self.handle.execute("SELECT id FROM benchmarks_result WHERE id = %s FOR UPDATE", [result_id])

    def release(self) -> None:
        self.handle.rollback() if connection.vendor != "sqlite" else self.handle.execute("ROLLBACK")
        self.handle.close()


def test_a_worker_killed_mid_ingest_loses_the_message_and_the_redrive_ingests_exactly_once(
    e2e, pool, registration_token
):
    first_worker = e2e.start_worker(beat=False)
    http_agent = HttpAgent(e2e.live_url)
    e2e.closing.append(http_agent.http.close)  # a kept-alive connection would keep a server thread's session open
    http_agent.register(registration_token)
    dispatch(pool, kind="inventory", spec={})
    job = e2e.wait_for(lambda: Job.objects.filter(target_pool=pool).first(), what="the job to be dispatched")

    first_worker.signal_group(signal.SIGSTOP)  # holds the ingest message in the broker until the lock is taken
    reply = http_agent.run_and_finish()
    assert reply["canonical"] is True
    result = Result.objects.get(job=job)
    if e2e.broker.queue_folder is not None:
        # Still waiting in the queue. (On Redis the stopped worker's pending BRPOP may already hold it, unseen.)
        assert e2e.broker.queued_messages() == 1

    lock = DatabaseLock(result.pk)
    try:
        first_worker.signal_group(signal.SIGCONT)
        e2e.wait_for(lambda: "benchmarks.ingest_result[" in first_worker.log_text()
                     and e2e.broker.queued_messages() == 0, what="the worker to take the ingest message")
        time.sleep(1)  # inside ingest_result, waiting for the lock
        assert Result.objects.get(pk=result.pk).ingested_at is None
        first_worker.kill()
    finally:
        lock.release()

    assert Result.objects.get(pk=result.pk).ingested_at is None
    # The message died with the worker: gone (filesystem), or unacknowledged until Redis's visibility timeout.
    assert e2e.broker.queued_messages() == 0
    if e2e.broker.queue_folder is None:
        assert e2e.broker.unacknowledged_messages() == 1  # acks_late: Redis would hand it out again, an hour later

    e2e.start_worker(beat=True)
    e2e.wait_for(lambda: Result.objects.get(pk=result.pk).ingested_at is not None, timeout=60,
                 what="redrive_pending to ingest the result")
    first_ingest = Result.objects.get(pk=result.pk).ingested_at
    time.sleep(4)  # several more beats of the re-drive: nothing happens twice

    result.refresh_from_db()
    assert result.ingested_at == first_ingest
    assert Result.objects.filter(job=job).count() == 1
    assert InventorySnapshot.objects.filter(agent__pool=pool, source="job").count() == 1
    assert result.summary["telemetry"]["0"]["peak_memory_used_mib"] == 1234


# --- the web tier unreachable for longer than the lease -------------------------------------------------------------


def test_a_success_finished_while_the_server_was_unreachable_past_its_lease_is_kept_and_not_rerun(
    e2e, pool, registration_token
):
    """The server is unreachable for twice the lease (4 s) while the agent finishes: the reaper, which cannot tell a
    cut-off agent from a dead one, gives the attempt up; when the agent gets through, its success is the job's
    canonical result and the job is not run again (docs/agent-protocol.md, "A late success")."""
    live = urlsplit(e2e.live_url)
    proxy = TcpProxy(live.hostname, live.port)
    proxy.up()
    e2e.start_worker()
    state_dir = e2e.register_agent(registration_token, server_url=proxy.url)
    agent = e2e.start_agent(state_dir)
    dispatch(pool, kind="test_sleeper", spec={"seconds": 2})
    job = e2e.wait_for(lambda: Job.objects.filter(target_pool=pool).first(), what="the job to be dispatched")
    e2e.wait_for(lambda: attempt_status(job, 1) == AttemptStatus.RUNNING, what="attempt 1 to start")
    e2e.wait_for(lambda: 'event="job started"' in agent.log_text(), what="the agent to start the job process")

    proxy.down()
    e2e.wait_for(lambda: attempt_status(job, 1) == AttemptStatus.AGENT_LOST, timeout=30,
                 what="the reaper to give attempt 1 up while the server is unreachable")
    e2e.wait_for(lambda: _spooled_finishes(state_dir), timeout=30, what="the agent to spool its finish")
    time.sleep(2 * FAST_TIMINGS["DOSSIER_JOB_LEASE_TTL_S"])
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED

    proxy.up()
    result = e2e.wait_for(lambda: Result.objects.filter(job=job, ingested_at__isnull=False).first(), timeout=120,
                          what="the spooled finish to be delivered and ingested")
    assert result.canonical and result.attempt.number == 1 and result.result["slept_s"] == 2
    assert Job.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED
    time.sleep(3)  # a claim loop that would re-run the job has had its chance
    assert JobAttempt.objects.filter(job=job).count() == 1, "the job was not run again"
