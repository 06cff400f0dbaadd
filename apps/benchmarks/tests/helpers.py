"""Test helpers: plans dispatched synchronously (the task body, without Celery)."""

from __future__ import annotations

from apps.benchmarks.models import BenchmarkPlan, Job
from apps.benchmarks.services import plan_create, plan_dispatch, plan_request_dispatch


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
