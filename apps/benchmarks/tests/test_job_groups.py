"""Job groups (docs/agent-protocol.md §8): dispatched together, one rank per agent, the rendezvous in the claim,
start and lease replies once every rank is claimed, and the whole group re-run when one rank is lost or fails."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.benchmarks import tasks
from apps.benchmarks.models import (
    AttemptStatus,
    Job,
    JobAttempt,
    JobGroup,
    JobGroupStatus,
    JobStatus,
    Result,
)
from apps.benchmarks.plan_spec import PlanSpecError, normalise_plan_spec
from apps.benchmarks.services import PlanError, job_cancel, plan_create, plan_dispatch, plan_request_dispatch
from apps.fleet.models import Agent
from apps.fleet.tests.helpers import AgentApi, register_agent

pytestmark = pytest.mark.django_db

KINDS = ("allreduce",)
SPEC = {"device": "cpu", "sizes_bytes": [4096], "timeout_s": 60}


def _dispatch_group(pool, world_size=2, count=1, env=None) -> JobGroup:
    entry = {"kind": "allreduce", "spec": SPEC, "count": count, "group": {"world_size": world_size}}
    if env is not None:
        entry["group"]["env"] = env
    plan = plan_create(team=pool.team, name="all-reduce", target_pool=pool, spec={"jobs": [entry]})
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    return JobGroup.objects.filter(plan=plan).order_by("pk").first()


def _agents(pool, count):
    apis = []
    for index in range(count):
        _agent, token = register_agent(pool, machine_id=f"rank-node-{index}", job_kinds=KINDS)
        apis.append(AgentApi(token))
    return apis


def test_the_plan_spec_describes_a_group_and_refuses_bad_ones():
    (entry,) = normalise_plan_spec({"jobs": [{"kind": "allreduce", "count": 2,
                                              "group": {"world_size": 3, "env": {"GLOO_SOCKET_IFNAME": "lo"}}}]})
    assert (entry.world_size, entry.count, entry.job_count) == (3, 2, 6)
    assert entry.group_env == {"GLOO_SOCKET_IFNAME": "lo"}
    for bad, where in [
        ({"kind": "inventory", "group": {"world_size": 2}}, "only allreduce"),
        ({"kind": "allreduce", "group": {"world_size": 1}}, "group.world_size"),
        ({"kind": "allreduce", "group": {"world_size": 2, "env": {"lower": "x"}}}, "group.env"),
        ({"kind": "allreduce", "group": {"world_size": 2, "hosts": ["a"]}}, "unknown keys hosts"),
        ({"kind": "allreduce", "group": {"world_size": 64}, "count": 4}, "256 jobs"),
    ]:
        with pytest.raises(PlanSpecError, match=where):
            normalise_plan_spec({"jobs": [bad]})


def test_dispatch_creates_one_job_per_rank_with_the_rank_frozen_in_its_spec(pool):
    group = _dispatch_group(pool, world_size=3, env={"GLOO_SOCKET_IFNAME": "lo"})
    jobs = list(group.jobs.order_by("group_rank"))
    assert [job.group_rank for job in jobs] == [0, 1, 2]
    for rank, job in enumerate(jobs):
        assert job.spec["group"] == {"group_id": group.public_id, "rank": rank, "world_size": 3,
                                     "env": {"GLOO_SOCKET_IFNAME": "lo"}}
        assert job.spec["sizes_bytes"] == [4096] and job.status == JobStatus.QUEUED
    assert 29500 <= group.master_port <= 29999 and group.generation == 1


def test_the_rendezvous_comes_once_every_rank_is_claimed(pool):
    group = _dispatch_group(pool)
    first, second = _agents(pool, 2)
    one = first.claim_job(job_kinds=KINDS)
    assert one.body["group"]["ready"] is False and one.body["group"]["world_size"] == 2
    assert one.body["group"]["poll_s"] >= 1 and "master_addr" not in one.body["group"]
    assert first.start(one).json()["group"]["ready"] is False
    assert first.claim(job_kinds=KINDS).status_code == 204, "one agent never holds two ranks of one group"

    two = second.claim_job(job_kinds=KINDS)
    assert two.body["group"]["ready"] is True
    lease = first.lease(one).json()["group"]
    assert lease["ready"] is True and lease["master_port"] == group.master_port
    rank_zero = one if one.body["group"]["rank"] == 0 else two
    assert lease["master_addr"] == JobAttempt.objects.get(job_id=rank_zero.job_id).client_address == "127.0.0.1"


def test_rank_zero_advertised_address_wins_over_the_address_its_claim_came_from(pool):
    _dispatch_group(pool)
    first, second = _agents(pool, 2)
    one = first.claim_job(job_kinds=KINDS)
    two = second.claim_job(job_kinds=KINDS)
    rank_zero = one if one.body["group"]["rank"] == 0 else two
    Agent.objects.filter(attempts__job_id=rank_zero.job_id).update(advertise_address="10.1.2.3")
    assert first.lease(one).json()["group"]["master_addr"] == "10.1.2.3"


def test_a_failed_rank_re_runs_the_whole_group_as_the_next_generation(pool):
    group = _dispatch_group(pool)
    first, second = _agents(pool, 2)
    one, two = first.claim_job(job_kinds=KINDS), second.claim_job(job_kinds=KINDS)
    first.start(one)
    second.start(two)
    old_port = group.master_port
    assert second.finish(two, status="failed", error={"type": "RuntimeError", "message": "gloo timeout",
                                                      "traceback": ""}).status_code == 201
    group.refresh_from_db()
    assert group.generation == 2 and group.status == JobGroupStatus.WAITING and "ended failed" in group.rerun_reason
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.QUEUED}
    # The other rank's attempt is ended: its next lease renewal tells its agent to drop it.
    response = first.lease(one)
    assert response.status_code == 409 and response.json()["error"] == "attempt_not_running"
    # Every rank runs again, with a new generation; the port is the group's current one.
    again = [first.claim_job(job_kinds=KINDS), second.claim_job(job_kinds=KINDS)]
    assert all(claimed.attempt == 2 and claimed.body["group"]["generation"] == 2 for claimed in again)
    assert again[1].body["group"]["ready"] is True
    group.refresh_from_db()
    assert group.master_port == again[1].body["group"]["master_port"]
    assert old_port != group.master_port or JobGroup.objects.count() == 1
    for api, claimed in zip((first, second), again, strict=True):
        api.start(claimed)
        assert api.finish(claimed, result={"rows": []}).status_code == 201
    group.refresh_from_db()
    assert group.status == JobGroupStatus.SUCCEEDED
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}
    assert Result.objects.filter(job__group=group, canonical=True).count() == 2
    assert Result.objects.filter(job__group=group, canonical=False).count() == 1  # the failed generation's finish


def test_a_success_of_an_abandoned_generation_stops_being_canonical(pool):
    group = _dispatch_group(pool)
    first, second = _agents(pool, 2)
    one, two = first.claim_job(job_kinds=KINDS), second.claim_job(job_kinds=KINDS)
    first.start(one)
    second.start(two)
    first.finish(one, result={"rows": []})
    assert Result.objects.get(job_id=one.job_id).canonical is True
    second.finish(two, status="failed")
    assert Result.objects.get(job_id=one.job_id).canonical is False
    group.refresh_from_db()
    assert group.generation == 2 and Job.objects.get(pk=one.job_id).status == JobStatus.QUEUED


def test_a_lost_rank_re_runs_the_group_and_the_limit_ends_it(pool, settings):
    settings.DOSSIER_JOB_MAX_ATTEMPTS = 2
    group = _dispatch_group(pool)
    first, second = _agents(pool, 2)
    for generation in (1, 2):
        one, two = first.claim_job(job_kinds=KINDS), second.claim_job(job_kinds=KINDS)
        first.start(one)
        JobAttempt.objects.filter(job_id=two.job_id, number=generation).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert tasks.reap_expired_leases() == 1
        group.refresh_from_db()
        assert JobAttempt.objects.get(job_id=one.job_id, number=generation).status == AttemptStatus.CANCELLED
    assert group.status == JobGroupStatus.FAILED and group.generation == 2
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.FAILED}
    assert "agent lost" in Job.objects.filter(group=group).first().failure_reason
    assert first.claim(job_kinds=KINDS).status_code == 204


def test_cancelling_one_rank_cancels_the_group(pool):
    group = _dispatch_group(pool)
    job_cancel(job=group.jobs.first(), reason="changed my mind")
    group.refresh_from_db()
    assert group.status == JobGroupStatus.CANCELLED
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.CANCELLED}


# --- declared operations ---------------------------------------------------------------------------------------------

OPERATIONS_SPEC = {"scenarios": [{"name": "kill_worker", "recovery": "restart"}], "cold_start": {"repeats": 1}}


def test_a_plan_asking_an_agent_for_an_undeclared_operation_is_refused(pool):
    agent, _token = register_agent(pool, machine_id="node-ops", job_kinds=("operations",),
                                   operations=("kill_worker", "restart"))
    with pytest.raises(PlanError, match="did not declare the operations start, stop"):
        plan_create(team=pool.team, name="phase 3", target_pool=pool, target_agent=agent,
                    spec={"jobs": [{"kind": "operations", "spec": OPERATIONS_SPEC}]})
    with pytest.raises(PlanError, match="No agent of the pool"):
        plan_create(team=pool.team, name="phase 3", target_pool=pool,
                    spec={"jobs": [{"kind": "operations", "spec": OPERATIONS_SPEC}]})
    with pytest.raises(PlanError, match="did not declare the operations drain"):
        plan_create(team=pool.team, name="phase 3", target_pool=pool, target_agent=agent,
                    spec={"jobs": [{"kind": "failure", "required_operations": ["drain"]}]})
    with pytest.raises(PlanError, match="spec is not valid"):
        plan_create(team=pool.team, name="phase 3", target_pool=pool, target_agent=agent,
                    spec={"jobs": [{"kind": "operations", "spec": {"scenarios": "kill"}}]})


def test_a_plan_within_the_declared_operations_is_dispatched_with_them_required(pool):
    agent, token = register_agent(pool, machine_id="node-ops", job_kinds=("operations",),
                                  operations=("kill_worker", "restart", "start", "stop"))
    plan = plan_create(team=pool.team, name="phase 3", target_pool=pool, target_agent=agent,
                       spec={"jobs": [{"kind": "operations", "spec": OPERATIONS_SPEC}]})
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    (job,) = plan.jobs.all()
    assert job.required_operations == ["kill_worker", "restart", "start", "stop"]
    api = AgentApi(token)
    assert api.claim(job_kinds=("operations",), operations=("kill_worker", "restart")).status_code == 204
    assert api.claim(job_kinds=("operations",), operations=("kill_worker", "restart", "start", "stop")
                     ).status_code == 200


def test_a_plan_against_the_builtin_mock_needs_no_node_operation(pool):
    agent, _token = register_agent(pool, machine_id="node-none", job_kinds=("operations",))
    plan = plan_create(team=pool.team, name="phase 3 on the mock", target_pool=pool, target_agent=agent,
                       spec={"jobs": [{"kind": "operations", "spec": {**OPERATIONS_SPEC, "target": "builtin_mock"}}]})
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    assert plan.jobs.get().required_operations == []


def test_the_job_page_says_which_rank_of_which_group(pool, client_for, finance_user):
    group = _dispatch_group(pool)
    job = group.jobs.get(group_rank=1)
    page = client_for(finance_user).get(job.get_absolute_url()).content.decode()
    assert "Rank 1 of 2 in group" in page and group.public_id in page and "generation 1" in page


# --- edge cases found in review ----------------------------------------------------------------------------------


def test_a_lost_rank_of_a_cancelled_group_ends_cancelled(pool):
    group = _dispatch_group(pool)
    first, second = _agents(pool, 2)
    one, two = first.claim_job(job_kinds=KINDS), second.claim_job(job_kinds=KINDS)
    first.start(one)
    second.start(two)
    job_cancel(job=Job.objects.get(pk=one.job_id), reason="stop")
    JobAttempt.objects.filter(job_id=two.job_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert tasks.reap_expired_leases() == 1
    assert Job.objects.get(pk=two.job_id).status == JobStatus.CANCELLED
    group.refresh_from_db()
    assert group.status == JobGroupStatus.CANCELLED


def test_a_late_success_of_a_lost_rank_does_not_revive_a_failed_group(pool, settings):
    settings.DOSSIER_JOB_MAX_ATTEMPTS = 1
    group = _dispatch_group(pool)
    first, second = _agents(pool, 2)
    one, two = first.claim_job(job_kinds=KINDS), second.claim_job(job_kinds=KINDS)
    first.start(one)
    second.start(two)
    JobAttempt.objects.filter(job_id=two.job_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    tasks.reap_expired_leases()
    group.refresh_from_db()
    assert group.status == JobGroupStatus.FAILED
    assert second.finish(two, result={"rows": []}).json()["canonical"] is False
    assert Job.objects.get(pk=two.job_id).status == JobStatus.FAILED


def test_plans_that_cannot_meet_or_that_set_the_meeting_point_are_refused(pool):
    agent, _token = register_agent(pool, machine_id="only-one", job_kinds=KINDS)
    group_entry = {"kind": "allreduce", "spec": SPEC, "group": {"world_size": 2}}
    with pytest.raises(PlanError, match="one agent per rank"):
        plan_create(team=pool.team, name="g", target_pool=pool, target_agent=agent, spec={"jobs": [group_entry]})
    with pytest.raises(PlanError, match=r"spec\.group"):
        plan_create(team=pool.team, name="g", target_pool=pool, spec={"jobs": [
            {"kind": "allreduce", "spec": {**SPEC, "group": {"rank": 0, "world_size": 2, "master_addr": "10.9.9.9",
                                                             "master_port": 29500}}}]})
    with pytest.raises(PlanError, match="refused: LD_PRELOAD"):
        plan_create(team=pool.team, name="g", target_pool=pool, spec={"jobs": [
            {**group_entry, "group": {"world_size": 2, "env": {"LD_PRELOAD": "/tmp/x.so"}}}]})


def test_a_malformed_origin_in_a_plan_does_not_break_dispatch(pool):
    plan = plan_create(team=pool.team, name="odd origin", target_pool=pool, spec={"jobs": [
        {"kind": "inventory", "spec": {"origin": {"candidate_id": [1, 2]}}},
        {"kind": "inventory", "spec": {"origin": {"candidate_id": {"a": 1}}}}]})
    plan_request_dispatch(plan=plan)
    assert plan_dispatch(plan_id=plan.pk) == 2
    assert set(plan.jobs.values_list("candidate", flat=True)) == {None}
