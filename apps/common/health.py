"""The checks behind /healthz: the database answers a query, the broker accepts a connection, a worker beats."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import connection

WORKER_HEARTBEAT_KEY = "dossier:worker-heartbeat"


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def check_database() -> CheckResult:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:
        return CheckResult("database", False, f"{type(error).__name__}: {error}")
    return CheckResult("database", True, connection.vendor)


def check_broker(timeout_seconds: float = 2.0) -> CheckResult:
    from kombu import Connection

    url = settings.CELERY_BROKER_URL
    try:
        with Connection(url, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as broker:
            broker.ensure_connection(max_retries=1, timeout=timeout_seconds)
            if url.startswith("filesystem"):
                folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
                probe = f"{folder}/.healthz"
                with open(probe, "w", encoding="utf-8") as handle:
                    handle.write("ok")
    except Exception as error:
        return CheckResult("broker", False, f"{type(error).__name__}: {error}")
    return CheckResult("broker", True, url.split("://", 1)[0])


def record_worker_heartbeat(now: float | None = None) -> None:
    cache.set(WORKER_HEARTBEAT_KEY, now if now is not None else time.time(), timeout=None)


def check_worker(now: float | None = None) -> CheckResult:
    try:
        last = cache.get(WORKER_HEARTBEAT_KEY)
    except Exception as error:
        return CheckResult("worker", False, f"{type(error).__name__}: {error}")
    if last is None:
        return CheckResult("worker", False, "no worker heartbeat recorded yet")
    age = (now if now is not None else time.time()) - float(last)
    limit = settings.WORKER_HEARTBEAT_MAX_AGE_SECONDS
    if age > limit:
        return CheckResult("worker", False, f"last worker heartbeat {age:.0f} s ago (limit {limit} s)")
    return CheckResult("worker", True, f"last heartbeat {age:.0f} s ago")


def run_checks() -> list[CheckResult]:
    return [check_database(), check_broker(), check_worker()]
