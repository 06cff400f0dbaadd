"""Celery tasks of the benchmarks app: thin wrappers that take ids and call a service (DESIGN.md, "Celery").

Every task is safe to run twice: the services guard their state changes with conditional UPDATEs. The queue only
carries nudges; redrive_pending finds whatever a lost message left waiting (the filesystem broker deletes a
message when a worker takes it, so a killed worker loses it).
"""

import logging

from celery import shared_task

from apps.benchmarks import services

logger = logging.getLogger(__name__)


# acks_late: both are safe to run twice, so a message whose worker died is delivered again where the broker can
# (Redis); the filesystem broker cannot, which redrive_pending covers.
@shared_task(name="benchmarks.dispatch_plan", ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def dispatch_plan(plan_id: int) -> int:
    return services.plan_dispatch(plan_id=plan_id)


@shared_task(name="benchmarks.ingest_result", ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def ingest_result(result_id: int) -> bool:
    return services.result_ingest(result_id=result_id)


@shared_task(name="benchmarks.reap_expired_leases", ignore_result=True)
def reap_expired_leases() -> int:
    return services.reap_expired_leases()


@shared_task(name="benchmarks.redrive_pending", ignore_result=True)
def redrive_pending() -> dict[str, int]:
    pending = services.pending_work()
    for plan_id in pending.plan_ids:
        dispatch_plan.delay(plan_id)
    for result_id in pending.result_ids:
        ingest_result.delay(result_id)
    if pending.plan_ids or pending.result_ids:
        logger.info("re-drove %d plans and %d results", len(pending.plan_ids), len(pending.result_ids))
    return {"plans": len(pending.plan_ids), "results": len(pending.result_ids)}


@shared_task(name="benchmarks.purge_expired_artifacts", ignore_result=True)
def purge_expired_artifacts() -> int:
    return services.artifacts_purge_expired()
