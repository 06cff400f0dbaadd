"""The benchmark pages and user API: plans, dispatch, jobs with live progress, events, artifacts, cancel."""

import json

import pytest
from django.urls import reverse

from apps.benchmarks.models import Artifact, BenchmarkPlan, Job, JobStatus, PlanStatus
from apps.benchmarks.tests.helpers import make_plan, queue_jobs
from apps.fleet.tests.helpers import progress_event

pytestmark = pytest.mark.django_db


def test_a_platform_user_creates_and_dispatches_a_plan(client_for, platform_user, pool,
                                                      django_capture_on_commit_callbacks):
    client = client_for(platform_user)
    spec = {"jobs": [{"kind": "inventory", "count": 2, "acceptance_criteria": {"gpu_count": 8}}]}
    response = client.post(reverse("benchmarks:plan-create"), {
        "name": "H200 inventory", "target_pool": pool.pk, "jobs": json.dumps(spec),
    })
    plan = BenchmarkPlan.objects.get()
    assert response.status_code == 302 and plan.status == PlanStatus.DRAFT

    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmarks:plan-dispatch", args=[plan.pk]))

    plan.refresh_from_db()
    assert plan.status == PlanStatus.DISPATCHED
    assert [job.acceptance_criteria for job in plan.jobs.all()] == [{"gpu_count": 8}] * 2


def test_a_plan_with_a_bad_job_list_is_refused_naming_the_problem(client_for, platform_user, pool):
    response = client_for(platform_user).post(reverse("benchmarks:plan-create"), {
        "name": "broken", "target_pool": pool.pk, "jobs": json.dumps({"jobs": [{"kind": "Bad Kind"}]}),
    })
    assert response.status_code == 400
    assert "jobs[0].kind" in response.content.decode()
    assert not BenchmarkPlan.objects.exists()


def test_a_plan_cannot_target_another_teams_pool(client_for, platform_user, other_pool):
    response = client_for(platform_user).post(reverse("benchmarks:plan-create"), {
        "name": "sneaky", "target_pool": other_pool.pk, "jobs": json.dumps({"jobs": [{"kind": "inventory"}]}),
    })
    assert response.status_code == 400
    assert not BenchmarkPlan.objects.exists()


@pytest.mark.parametrize("user_fixture", ["finance_user", "product_user"])
def test_finance_and_product_cannot_create_dispatch_or_cancel(client_for, request, pool, user_fixture):
    client = client_for(request.getfixturevalue(user_fixture))
    plan = make_plan(pool)
    (job,) = queue_jobs(pool)
    assert client.get(reverse("benchmarks:plan-create")).status_code == 403
    assert client.post(reverse("benchmarks:plan-dispatch", args=[plan.pk])).status_code == 403
    assert client.post(reverse("benchmarks:job-cancel", args=[job.pk])).status_code == 403
    assert client.post(f"/api/v1/benchmarks/jobs/{job.pk}/cancel/", {}, content_type="application/json"
                       ).status_code == 403
    assert Job.objects.get(pk=job.pk).cancel_requested is False


def test_run_inventory_from_the_agent_page_sends_one_job_to_that_agent(client_for, platform_user, agent,
                                                                       agent_api, second_agent_api,
                                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(platform_user).post(reverse("benchmarks:run-inventory", args=[agent.pk]))
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.kind == "inventory" and job.target_agent == agent
    assert second_agent_api.claim().status_code == 204
    assert agent_api.claim().status_code == 200


def test_the_job_page_shows_progress_events_artifacts_and_the_result(client_for, finance_user, pool, agent_api):
    (job,) = queue_jobs(pool)
    claimed = agent_api.claim_job()
    agent_api.start(claimed)
    agent_api.events(claimed, 0, [progress_event(0.5, "half way there")])
    client = client_for(finance_user)

    live = client.get(reverse("benchmarks:job-progress", args=[job.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in live and "half way there" in live and "0.500" in live

    digest = agent_api.put_artifact(claimed, b"line\n", name="requests.jsonl").json()["sha256"]
    agent_api.finish(claimed, result={"ok": True}, event_count=1,
                     artifacts=[{"sha256": digest, "name": "requests.jsonl", "media_type": "x", "size": 5}])

    page = client.get(job.get_absolute_url()).content.decode()
    assert 'data-canonical="true"' in page and "requests.jsonl" in page
    assert "hx-trigger" not in page  # final: the page stops polling
    events = client.get(reverse("benchmarks:job-events", args=[job.pk])).content.decode()
    assert "half way there" in events


def test_an_artifact_downloads_with_its_name(client_for, product_user, pool, agent_api):
    queue_jobs(pool)
    claimed = agent_api.claim_job()
    agent_api.put_artifact(claimed, b'{"a": 1}\n', name="raw.jsonl", media_type="application/x-ndjson")
    artifact = Artifact.objects.get()

    response = client_for(product_user).get(reverse("benchmarks:artifact-download", args=[artifact.pk]))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b'{"a": 1}\n'
    assert 'filename="raw.jsonl"' in response["Content-Disposition"]


def test_an_outsider_cannot_see_a_teams_job_or_artifact(client_for, outsider, pool, agent_api):
    (job,) = queue_jobs(pool)
    claimed = agent_api.claim_job()
    agent_api.put_artifact(claimed, b"secret")
    client = client_for(outsider)
    assert client.get(job.get_absolute_url()).status_code == 404
    assert client.get(reverse("benchmarks:artifact-download", args=[Artifact.objects.get().pk])).status_code == 404
    assert client.get(f"/api/v1/benchmarks/jobs/{job.pk}/").status_code == 404
    assert client.get("/api/v1/benchmarks/jobs/").json()["results"] == []


def test_cancel_from_the_browser_reaches_the_agent_on_its_next_lease(client_for, platform_user, pool, agent_api):
    (job,) = queue_jobs(pool)
    claimed = agent_api.claim_job()
    agent_api.start(claimed)

    client_for(platform_user).post(reverse("benchmarks:job-cancel", args=[job.pk]), {"reason": "wrong node"})

    lease = agent_api.lease(claimed).json()
    assert lease["cancel_requested"] is True and lease["cancel_reason"] == "wrong node"
    agent_api.finish(claimed, status="cancelled")
    assert Job.objects.get().status == JobStatus.CANCELLED


def test_cancelling_a_queued_job_through_the_api_cancels_it_at_once(client_for, platform_user, pool):
    (job,) = queue_jobs(pool)
    response = client_for(platform_user).post(f"/api/v1/benchmarks/jobs/{job.pk}/cancel/", {"reason": "not needed"},
                                              content_type="application/json")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled" and response.json()["cancel_reason"] == "not needed"


def test_the_api_lists_jobs_events_and_results(client_for, finance_user, pool, agent_api):
    (job,) = queue_jobs(pool)
    claimed = agent_api.claim_job()
    agent_api.events(claimed, 0, [progress_event(0.2, "warming up")])
    agent_api.finish(claimed, result={"gpus": 0})
    client = client_for(finance_user)

    jobs = client.get("/api/v1/benchmarks/jobs/", {"status": "succeeded"}).json()["results"]
    assert [item["id"] for item in jobs] == [job.pk]
    assert jobs[0]["attempts"][0]["status"] == "succeeded"
    events = client.get(f"/api/v1/benchmarks/jobs/{job.pk}/events/").json()["results"]
    assert events[0]["data"]["message"] == "warming up"
    results = client.get("/api/v1/benchmarks/results/").json()["results"]
    assert results[0]["canonical"] is True and results[0]["result"] == {"gpus": 0}


def test_the_plan_page_polls_until_every_job_is_final(client_for, platform_user, pool, agent_api):
    (job,) = queue_jobs(pool)
    client = client_for(platform_user)
    assert 'hx-trigger="every 2s"' in client.get(job.plan.get_absolute_url()).content.decode()
    agent_api.finish(agent_api.claim_job())
    assert "hx-trigger" not in client.get(job.plan.get_absolute_url()).content.decode()


def test_a_purged_artifact_answers_410_with_its_record(client_for, product_user, pool, agent_api):
    from django.utils import timezone

    queue_jobs(pool)
    claimed = agent_api.claim_job()
    agent_api.put_artifact(claimed, b"old bytes", name="old.jsonl")
    Artifact.objects.update(purged_at=timezone.now())

    response = client_for(product_user).get(reverse("benchmarks:artifact-download", args=[Artifact.objects.get().pk]))

    assert response.status_code == 410
    assert "old.jsonl" in response.content.decode()
