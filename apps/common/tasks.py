"""Celery tasks of the common app: the worker heartbeat that /healthz reads."""

from celery import shared_task
from celery.signals import worker_ready

from apps.common.health import record_worker_heartbeat


@shared_task(name="common.worker_heartbeat", ignore_result=True)
def worker_heartbeat() -> None:
    record_worker_heartbeat()


@worker_ready.connect
def _heartbeat_when_ready(**kwargs) -> None:
    record_worker_heartbeat()
