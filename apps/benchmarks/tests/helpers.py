"""Test helpers: plans dispatched synchronously (the task body, without Celery)."""

from __future__ import annotations

import itertools
import uuid

from django.utils import timezone

from apps.benchmarks.measurements import measured_figure_set, result_rehearsal_reasons
from apps.benchmarks.models import (
    AttemptStatus,
    BenchmarkPlan,
    Job,
    JobAttempt,
    JobStatus,
    Result,
    ResultStatus,
)
from apps.benchmarks.services import plan_create, plan_dispatch, plan_request_dispatch
from apps.fleet.models import Agent, AgentPool, InventorySnapshot
from apps.fleet.tests.helpers import AGENT_VERSION, inventory


def make_plan(pool, *, kind: str = "inventory", count: int = 1, spec: dict | None = None,
              acceptance_criteria: dict | None = None, required_operations=(), target_agent=None,
              name: str = "Inventory check") -> BenchmarkPlan:
    return plan_create(
        team=pool.team, name=name, target_pool=pool, target_agent=target_agent,
        spec={"jobs": [{"kind": kind, "spec": spec if spec is not None else {"sample": 1},
                        "acceptance_criteria": acceptance_criteria or {}, "count": count,
                        "required_operations": list(required_operations)}]},
    )


def queue_jobs(pool, **options) -> list[Job]:
    """A plan for `pool`, dispatched at once: its queued jobs, oldest first."""
    plan = make_plan(pool, **options)
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    return list(plan.jobs.order_by("position"))


# --- measured figures, as the ingest writes them ----------------------------------------------------------------------

_serial = itertools.count(1)


def measuring_result(candidate, *, rehearsal: bool = False) -> Result:
    """A canonical, succeeded result of a throughput job that ran on the candidate's node (an agent linked to it,
    reporting the quoted GPU), or on a CPU node against the mock stack when `rehearsal`. One per candidate and kind,
    made with plain creates (fast enough for every builder of the comparison tests)."""
    found = (Result.objects.filter(job__candidate=candidate, job__kind="throughput", job__plan__isnull=True,
                                   canonical=True, rehearsal=rehearsal).first())
    if found is not None:
        return found
    now = timezone.now()
    number = next(_serial)
    pool = AgentPool.objects.create(team=candidate.team, name=f"measuring pool {number}")
    gpu_name = candidate.quote.gpu.name if candidate.quote.gpu_id else "NVIDIA H100"
    agent = Agent.objects.create(pool=pool, name=f"node-{number}", machine_id=f"measuring-{number}",
                                 token_hash=uuid.uuid4().hex, token_prefix="test", version=AGENT_VERSION,
                                 candidate=None if rehearsal else candidate)
    data = inventory(gpus=0 if rehearsal else 1, name=gpu_name, machine_id=agent.machine_id)
    snapshot = InventorySnapshot.objects.create(agent=agent, source="register", sha256=uuid.uuid4().hex, data=data,
                                                gpu_count=len(data["gpus"]))
    spec = ({"endpoint": {"url": "builtin-mock", "api": "chat"}} if rehearsal
            else {"endpoint": {"url": "http://10.0.0.7:8000", "api": "chat"}})
    job = Job.objects.create(team=candidate.team, kind="throughput", spec=spec, spec_sha256="0" * 64,
                             target_pool=pool, candidate=candidate, status=JobStatus.SUCCEEDED, attempt_count=1,
                             finished_at=now)
    attempt = JobAttempt.objects.create(job=job, number=1, agent=agent, token_hash=uuid.uuid4().hex,
                                        status=AttemptStatus.SUCCEEDED, lease_expires_at=now, ended_at=now,
                                        start_inventory=snapshot)
    reasons = result_rehearsal_reasons(spec=spec, result_data={}, attempt=attempt)
    assert bool(reasons) is rehearsal
    return Result.objects.create(job=job, attempt=attempt, status=ResultStatus.SUCCEEDED, canonical=True, result={},
                                 finished_at=now, spec=spec, spec_sha256=job.spec_sha256, rehearsal=bool(reasons),
                                 rehearsal_reasons=reasons)


def measured_figure(candidate, metric: str, value, reference: str = "", *, rehearsal: bool = False,
                    capacity_unit: str = "", actor="ingest_result"):
    """A figure measured by a benchmark result, written and linked the ingest's way (measured_figure_set). The ingest
    writes as nobody ("ingest_result"); a builder may pass its person so that the figure reads as it always did."""
    result = measuring_result(candidate, rehearsal=rehearsal)
    link = measured_figure_set(actor=actor, result=result, candidate=candidate, metric=metric, value=value,
                               reference=reference or f"job:{result.job_id} (measured)", capacity_unit=capacity_unit)
    return link.figure
