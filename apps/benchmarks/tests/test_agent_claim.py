"""POST /api/agent/v1/jobs/claim (docs/agent-protocol.md §3.3): who gets which job, and never twice."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.benchmarks.models import Job, JobAttempt, JobStatus
from apps.benchmarks.services import job_cancel
from apps.benchmarks.tests.helpers import queue_jobs
from apps.fleet import protocol
from apps.fleet.models import Agent, AgentStatus
from apps.fleet.tests.helpers import AgentApi, register_agent

pytestmark = pytest.mark.django_db


def test_claim_with_nothing_queued_is_204_with_an_empty_body(agent_api):
    response = agent_api.claim()
    assert response.status_code == 204
    assert response.content == b""


def test_claim_hands_out_the_oldest_job_with_a_job_token_and_a_short_lease(agent_api, agent, pool):
    first, _second = queue_jobs(pool, count=2, spec={"gpus": "all"})

    response = agent_api.claim()

    assert response.status_code == 200
    body = response.json()
    assert body["job"]["id"] == str(first.pk)
    assert body["job"]["kind"] == "inventory"
    assert body["job"]["spec"] == {"gpus": "all"}
    assert body["job"]["spec_sha256"] == protocol.canonical_sha256({"gpus": "all"})
    assert body["attempt"] == 1
    assert body["job_token"].startswith("dsj_") and len(body["job_token"]) == 47
    assert body["lease"]["ttl_s"] == 60 and body["lease"]["renew_every_s"] == 30
    assert body["cancel_requested"] is False
    attempt = JobAttempt.objects.get(job=first)
    assert attempt.agent == agent
    assert attempt.token_hash == protocol.token_hash(body["job_token"])
    assert protocol.parse_timestamp(body["lease"]["expires_at"]) - timezone.now() <= timedelta(seconds=60)
    first.refresh_from_db()
    assert first.status == JobStatus.CLAIMED and first.attempt_count == 1
    assert Agent.objects.get(pk=agent.pk).status == AgentStatus.BUSY


def test_a_claimed_job_is_not_handed_to_a_second_agent(agent_api, second_agent_api, pool):
    queue_jobs(pool)
    assert agent_api.claim().status_code == 200
    assert second_agent_api.claim().status_code == 204


def test_only_kinds_the_agent_runs_are_handed_out(agent_api, pool):
    queue_jobs(pool, kind="memory_fit")
    assert agent_api.claim(job_kinds=["inventory"]).status_code == 204
    assert agent_api.claim(job_kinds=["inventory", "memory_fit"]).status_code == 200


def test_a_job_that_needs_operations_goes_only_to_an_agent_declaring_all_of_them(agent_api, pool):
    register_agent(pool, machine_id="declares-them", operations=["kill_worker", "restart_serving"])
    queue_jobs(pool, kind="failure", required_operations=["kill_worker", "restart_serving"])
    assert agent_api.claim(job_kinds=["failure"], operations=["kill_worker"]).status_code == 204
    response = agent_api.claim(job_kinds=["failure"], operations=["kill_worker", "restart_serving", "bad_deploy"])
    assert response.status_code == 200


def test_a_job_for_one_agent_goes_to_that_agent_only(agent_api, second_agent_api, pool):
    other_agent = Agent.objects.get(machine_id="machine-b")
    queue_jobs(pool, target_agent=other_agent)
    assert agent_api.claim().status_code == 204
    assert second_agent_api.claim().status_code == 200


def test_jobs_of_another_pool_are_never_handed_out(agent_api, other_pool):
    queue_jobs(other_pool)
    assert agent_api.claim().status_code == 204


def test_a_cancelled_job_is_not_handed_out(agent_api, pool):
    (job,) = queue_jobs(pool)
    job_cancel(job=job)
    assert agent_api.claim().status_code == 204


def test_a_job_needing_operations_further_down_the_queue_is_still_found(agent_api, pool):
    register_agent(pool, machine_id="declares-bad-deploy", operations=["bad_deploy"])
    queue_jobs(pool, count=3, kind="failure", required_operations=["bad_deploy"])
    (wanted,) = queue_jobs(pool, kind="failure")
    from apps.benchmarks import services

    claim = services.job_claim(agent=Agent.objects.get(machine_id="machine-a"), job_kinds=["failure"],
                               operations=[], batch=2)
    assert claim is not None and claim.job.pk == wanted.pk


def test_malformed_claim_is_a_400(agent_api):
    response = agent_api.post("/jobs/claim", {"job_kinds": "inventory"})
    assert response.status_code == 400
    assert "job_kinds" in response.json()["fields"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_never_hand_one_job_twice(pool):
    jobs = queue_jobs(pool, count=12)
    tokens = [register_agent(pool, machine_id=f"racer-{number}")[1] for number in range(6)]
    claimed: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(tokens))

    def race(token):
        try:
            api = AgentApi(token)
            start.wait()
            while True:
                response = api.claim()
                if response.status_code == 204:
                    return
                assert response.status_code == 200, response.content
                claimed.append(response.json()["job"]["id"])
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors
    assert sorted(claimed) == sorted(str(job.pk) for job in jobs)
    assert JobAttempt.objects.count() == len(jobs)
    assert set(Job.objects.values_list("attempt_count", flat=True)) == {1}
