"""End to end, phase 3 interconnect: a job group of two `allreduce` ranks dispatched by a real Celery worker, claimed
by two real `dossier-agent` processes, which meet at the rendezvous the live server hands out in its lease replies
and run a gloo all-reduce between them on the CPU; both results are ingested and the group succeeds."""

from __future__ import annotations

import pytest

from apps.benchmarks.models import JobGroup, JobGroupStatus, JobStatus, Result
from apps.benchmarks.services import plan_create, plan_request_dispatch
from apps.fleet.models import Agent
from apps.fleet.services import pool_create, registration_token_create
from tests.e2e.conftest import FAST_TIMINGS
from tests.e2e.processes import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

#: One rendezvous port, free on this machine when the test starts (the server hands out ports from this range).
_PORT = free_port()
GROUP_TIMINGS = {**FAST_TIMINGS, "DOSSIER_GROUP_PORT_MIN": _PORT, "DOSSIER_GROUP_PORT_MAX": _PORT,
                 "DOSSIER_GROUP_POLL_S": 1}
SPEC = {"device": "cpu", "cpu_threads": 1, "sizes_bytes": [4096, 262144], "warmup": 1, "target_s": 0.01,
        "max_iterations": 20, "timeout_s": 60}


@pytest.mark.parametrize("e2e_timings", [GROUP_TIMINGS], indirect=True)
def test_two_agents_run_a_gloo_all_reduce_through_the_server(e2e, team):
    pool = pool_create(team=team, name="e2e-allreduce")
    _row, token = registration_token_create(pool=pool)
    e2e.start_worker()
    states = [e2e.register_agent(token, name=f"rank-node-{index}", machine_id=f"e2e-rank-node-{index}")
              for index in range(2)]
    assert all("allreduce" in agent.job_kinds for agent in Agent.objects.filter(pool=pool))
    for index, state in enumerate(states):
        e2e.start_agent(state, label=f"rank-node-{index}")

    plan = plan_create(team=team, name="two-node all-reduce", target_pool=pool, spec={"jobs": [{
        "kind": "allreduce", "spec": SPEC, "group": {"world_size": 2, "env": {"GLOO_SOCKET_IFNAME": "lo"}}}]})
    plan_request_dispatch(plan=plan)

    group = e2e.wait_for(lambda: JobGroup.objects.filter(plan=plan).first(), what="dispatch_plan to create the group")
    e2e.wait_for(lambda: Result.objects.filter(job__group=group, ingested_at__isnull=False).count() == 2,
                 timeout=120, what="both ranks to finish and be ingested")
    group.refresh_from_db()
    results = {result.job.group_rank: result for result in Result.objects.filter(job__group=group, canonical=True)
               .select_related("job", "attempt")}
    assert group.status == JobGroupStatus.SUCCEEDED, [r.error for r in results.values()]
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}
    assert results[0].attempt.agent_id != results[1].attempt.agent_id, "each agent ran one rank"
    for rank, result in results.items():
        measured = result.result
        assert measured["mode"] == "group" and measured["node_rank"] == rank and measured["world_size"] == 2
        assert measured["rendezvous"] == {"master_addr": "127.0.0.1", "master_port": _PORT}
        assert measured["group_id"] == group.public_id and measured["correct"] is True
        sizes = [row["size_bytes"] for row in measured["rows"]]
        assert sizes == [4096, 262144]
        assert all(row["busbw_gbps"] > 0 for row in measured["rows"])
    # Both ranks report the slowest rank's time: the same table.
    assert [row["time_us"] for row in results[0].result["rows"]] == [row["time_us"] for row in
                                                                      results[1].result["rows"]]
