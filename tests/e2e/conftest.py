"""Fixtures of the end-to-end tests: the live test server, a real Celery worker and real agent processes.

The worker is another process, so it must reach the live server's database: on SQLite the test database is a file
(config/settings.py sets DATABASES["default"]["TEST"]["NAME"]), on PostgreSQL the worker connects to the test
database pytest-django created. The broker is a folder of this test's own (filesystem transport), or the configured
Redis when CELERY_BROKER_URL says redis, so no other worker on the machine takes these messages.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings as django_settings
from django.db import connection

from tests.e2e.processes import (
    ManagedProcess,
    Processes,
    agent_command,
    celery_worker_command,
    clean_environment,
    wait_for,
)

#: Short intervals so a lost agent is reaped in seconds; the live server (this process) and the worker share them.
FAST_TIMINGS = {
    "DOSSIER_AGENT_HEARTBEAT_INTERVAL_S": 1,
    "DOSSIER_AGENT_CLAIM_INTERVAL_S": 1,
    "DOSSIER_AGENT_OFFLINE_AFTER_S": 3,
    "DOSSIER_JOB_CLAIM_LEASE_S": 6,
    "DOSSIER_JOB_LEASE_TTL_S": 4,
    "DOSSIER_JOB_LEASE_RENEW_S": 1,
    "DOSSIER_JOB_MAX_ATTEMPTS": 3,
    "DOSSIER_REAPER_INTERVAL_S": 1,
    "DOSSIER_REDRIVE_INTERVAL_S": 1,
    "DOSSIER_REDRIVE_AFTER_S": 2,
}


#: PostgreSQL: the worker's sessions carry this name, so the test can wait for them to end.
WORKER_APPLICATION_NAME = "dossier-e2e-worker"


def worker_database_url() -> str:
    """The URL of the database this test runs on, for another process."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        name = str(params["NAME"])
        assert "memory" not in name and name.startswith("/"), f"the test database must be a file, not {name!r}"
        return f"sqlite:///{name}"
    user = quote(params.get("USER") or "", safe="")
    password = quote(params.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = f"{params.get('HOST') or '127.0.0.1'}:{params.get('PORT') or 5432}"
    return f"postgres://{credentials}{host}/{params['NAME']}?application_name={WORKER_APPLICATION_NAME}"


@dataclass
class Broker:
    url: str
    queue_folder: Path | None  # filesystem transport only

    def queued_messages(self) -> int:
        """Messages waiting in the default queue, taken by no worker yet."""
        if self.queue_folder is not None:
            return len(list(self.queue_folder.glob("*.msg")))
        import redis

        return redis.Redis.from_url(self.url).llen("celery")

    def unacknowledged_messages(self) -> int:
        """Redis: messages a worker took and has not acknowledged (the filesystem transport has no such state)."""
        if self.queue_folder is not None:
            return 0
        import redis

        return redis.Redis.from_url(self.url).hlen("unacked")


@pytest.fixture
def broker(tmp_path):
    """Point this process's Celery app at a broker of the test's own; restore the configured one afterwards."""
    from config.celery import app

    configured_url = django_settings.CELERY_BROKER_URL
    saved = {key: app.conf[key] for key in ("broker_url", "broker_transport_options", "task_always_eager")}
    if configured_url.startswith("redis"):
        broker = Broker(url=configured_url, queue_folder=None)
        options = dict(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS)
        import redis

        # Leftovers of an earlier, interrupted run.
        redis.Redis.from_url(configured_url).delete("celery", "unacked", "unacked_index")
    else:
        folder = tmp_path / "var" / "broker"
        for part in ("queue", "control", "processed"):
            (folder / part).mkdir(parents=True, exist_ok=True)
        broker = Broker(url="filesystem://", queue_folder=folder / "queue")
        options = {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
                   "control_folder": str(folder / "control"), "processed_folder": str(folder / "processed"),
                   "store_processed": False}

    def reset_pools():
        # The producer pools (the app's and kombu's registry, keyed by connection) hold the broker used before.
        from kombu import pools

        app._pool = None
        if "amqp" in app.__dict__:
            app.amqp._producer_pool = None
        pools.reset()

    reset_pools()
    app.conf.update(broker_url=broker.url, broker_transport_options=options, task_always_eager=False)
    yield broker
    reset_pools()
    app.conf.update(saved)


@dataclass
class EndToEnd:
    tmp_path: Path
    live_url: str
    broker: Broker
    timings: dict[str, int]
    processes: Processes = field(default_factory=Processes)
    closing: list = field(default_factory=list)

    def worker_environment(self) -> dict[str, str]:
        return clean_environment({
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": worker_database_url(),
            "DOSSIER_VAR_DIR": str(self.tmp_path / "var"),
            "DOSSIER_MEDIA_ROOT": str(self.tmp_path / "media"),
            "CELERY_BROKER_URL": self.broker.url if self.broker.queue_folder is None else "filesystem://",
            **{name: str(value) for name, value in self.timings.items()},
        })

    def start_worker(self, *, beat: bool = True) -> ManagedProcess:
        name = f"e2e-{uuid.uuid4().hex[:8]}"
        worker = self.processes.add(ManagedProcess(
            name, celery_worker_command(name, beat=beat), env=self.worker_environment(),
            log_path=self.tmp_path / f"{name}.log",
        ))
        wait_for(lambda: "ready." in worker.log_text() or not worker.alive(), timeout=90,
                 what=f"Celery worker {name} to start", processes=self.processes)
        assert worker.alive(), f"the worker exited:\n{worker.tail()}"
        return worker

    def agent_environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        empty_config = self.tmp_path / "agent.toml"
        empty_config.touch()
        return clean_environment({"DOSSIER_AGENT_CONFIG": str(empty_config), **(extra or {})})

    def register_agent(self, token: str, *, server_url: str | None = None, name: str = "e2e-agent",
                       machine_id: str | None = None) -> Path:
        """Register an agent; several agents on this one host need a `machine_id` each (else they are one agent)."""
        state_dir = self.tmp_path / f"agent-{name}"
        completed = subprocess.run(
            agent_command("register", "--server", server_url or self.live_url, "--registration-token", token,
                          "--name", name, "--state-dir", str(state_dir), "--job-dir", str(_agent_test_jobs())),
            env=self.agent_environment({"DOSSIER_AGENT_MACHINE_ID": machine_id} if machine_id else None),
            capture_output=True, text=True, timeout=120, check=False,
        )
        assert completed.returncode == 0, f"register failed:\n{completed.stdout}\n{completed.stderr}"
        return state_dir

    def start_agent(self, state_dir: Path, *, label: str = "agent") -> ManagedProcess:
        return self.processes.add(ManagedProcess(
            label,
            agent_command("run", "--state-dir", str(state_dir), "--job-dir", str(_agent_test_jobs()),
                          "--telemetry-interval-s", "0.5", "--log-level", "debug"),
            env=self.agent_environment(), log_path=self.tmp_path / f"{label}-{uuid.uuid4().hex[:6]}.log",
        ))

    def wait_for(self, predicate, *, timeout: float = 60, what: str):
        return wait_for(predicate, timeout=timeout, what=what, processes=self.processes)


def _agent_test_jobs() -> Path:
    from tests.e2e.processes import AGENT_TEST_JOBS

    return AGENT_TEST_JOBS


def agent_details(state_dir: Path) -> dict:
    return json.loads((state_dir / "agent-token.json").read_text())


@pytest.fixture
def e2e_timings(request):
    """The timings of a test: FAST_TIMINGS, or a dict given with parametrize("e2e_timings", [...], indirect=True)."""
    return dict(getattr(request, "param", FAST_TIMINGS))


@pytest.fixture
def e2e(live_server, broker, settings, tmp_path, e2e_timings):
    for name, value in e2e_timings.items():
        setattr(settings, name, value)
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                      "OPTIONS": {"location": str(tmp_path / "media" / "artifacts")}},
    }
    environment = EndToEnd(tmp_path=tmp_path, live_url=live_server.url, broker=broker, timings=e2e_timings)
    yield environment
    for close in environment.closing:
        close()
    environment.processes.stop_all()
    _wait_for_worker_sessions_to_end()


def _wait_for_worker_sessions_to_end(timeout: float = 20) -> None:
    """PostgreSQL: a killed worker's server session ends a moment after it; the test database is dropped later."""
    if connection.vendor != "postgresql":
        return
    wait_for(lambda: _worker_sessions() == 0, timeout=timeout, what="the worker's database sessions to end")


def _worker_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
            [WORKER_APPLICATION_NAME],
        )
        return cursor.fetchone()[0]
