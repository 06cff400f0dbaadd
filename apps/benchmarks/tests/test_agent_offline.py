"""POST /api/agent/v1/jobs/offline (docs/agent-protocol.md §3.9): an offline run takes the ordinary ingest path."""

import pytest

from apps.benchmarks.models import Job, JobStatus, Result
from apps.fleet.tests.helpers import ClaimedJob

pytestmark = pytest.mark.django_db

BODY = {"offline_run_id": "5f0c3a8e9b8d4c0e9f51b3c2a1d0e7f6", "kind": "inventory", "spec": {"probe": 1},
        "started_at": "2025-01-30T08:00:00.000Z", "agent_version": "0.1.0"}


def test_an_offline_run_becomes_a_job_of_this_agent_and_finishes_like_any_other(agent_api, agent):
    response = agent_api.post("/jobs/offline", BODY)

    assert response.status_code == 201
    body = response.json()
    assert body["offline"] is True and body["attempt"] == 1 and body["job"]["spec"] == {"probe": 1}
    job = Job.objects.get()
    assert job.target_agent == agent and job.max_attempts == 1 and job.status == JobStatus.CLAIMED
    claimed = ClaimedJob(body["job"]["id"], 1, body["job_token"])
    assert agent_api.start(claimed).status_code == 200
    assert agent_api.finish(claimed, result={"offline": True}).json()["canonical"] is True
    assert Result.objects.get().result == {"offline": True}


def test_resending_an_offline_run_gives_the_same_job_and_a_new_token(agent_api):
    first = agent_api.post("/jobs/offline", BODY).json()
    again = agent_api.post("/jobs/offline", BODY)

    assert again.status_code == 200
    assert again.json()["job"]["id"] == first["job"]["id"]
    assert again.json()["job_token"] != first["job_token"]
    old = ClaimedJob(first["job"]["id"], 1, first["job_token"])
    assert agent_api.lease(old).status_code == 403
    assert Job.objects.count() == 1


def test_an_offline_job_is_never_handed_to_another_agent(agent_api, second_agent_api):
    agent_api.post("/jobs/offline", BODY)
    assert second_agent_api.claim().status_code == 204


def test_the_same_offline_run_id_from_two_agents_makes_two_jobs(agent_api, second_agent_api):
    agent_api.post("/jobs/offline", BODY)
    assert second_agent_api.post("/jobs/offline", BODY).status_code == 201
    assert Job.objects.count() == 2


def test_a_malformed_offline_run_is_a_400(agent_api):
    response = agent_api.post("/jobs/offline", {**BODY, "offline_run_id": "has spaces", "spec": "x"})
    assert response.status_code == 400
    assert {"offline_run_id", "spec"} <= set(response.json()["fields"])
    assert Job.objects.count() == 0


def test_an_offline_run_measures_the_candidate_of_the_agents_node(agent_api, agent, team):
    from apps.fleet.services import agent_link_candidate
    from apps.quotes.tests.url_fixtures import make_candidate

    candidate = make_candidate(team)
    agent_link_candidate(agent=agent, candidate=candidate)
    agent_api.post("/jobs/offline", BODY)
    assert Job.objects.get().candidate == candidate


def test_a_dispatched_job_measures_the_candidate_its_plan_names_else_its_agents(agent_api, agent, pool, team,
                                                                                  other_team):
    from apps.benchmarks.services import plan_create, plan_dispatch, plan_request_dispatch
    from apps.fleet.services import agent_link_candidate
    from apps.quotes.tests.url_fixtures import make_candidate

    named, nodes, foreign = make_candidate(team), make_candidate(team), make_candidate(other_team)
    agent_link_candidate(agent=agent, candidate=nodes)

    def dispatched(spec, target_agent=None):
        plan = plan_create(team=team, name="p", target_pool=pool, target_agent=target_agent, spec=spec)
        plan_request_dispatch(plan=plan)
        plan_dispatch(plan_id=plan.pk)
        return plan.jobs.get()

    assert dispatched({"candidate_id": named.pk, "jobs": [{"kind": "inventory"}]}).candidate == named
    assert dispatched({"jobs": [{"kind": "inventory", "spec": {"origin": {"candidate_id": named.pk}}}]}
                      ).candidate == named
    assert dispatched({"jobs": [{"kind": "inventory"}]}, target_agent=agent).candidate == nodes
    assert dispatched({"jobs": [{"kind": "inventory"}]}).candidate is None
    # another team's candidate is never linked, whatever the plan says
    assert dispatched({"candidate_id": foreign.pk, "jobs": [{"kind": "inventory"}]}).candidate is None
