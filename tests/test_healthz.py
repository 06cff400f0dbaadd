"""/healthz: 200 when the database, the broker and a worker all answer; 503 naming whatever does not. Public."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from apps.common.health import WORKER_HEARTBEAT_KEY, record_worker_heartbeat

pytestmark = pytest.mark.django_db

# Nothing listens on port 1: a connection there is refused at once.
DEAD_REDIS = "redis://127.0.0.1:1/0"
NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def healthz(client):
    def get():
        return client.get(reverse("healthz"))

    return get


@pytest.fixture
def dead_broker(settings):
    settings.CELERY_BROKER_URL = DEAD_REDIS
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}


@pytest.fixture
def no_heartbeat():
    from django.core.cache import cache

    cache.delete(WORKER_HEARTBEAT_KEY)


def test_healthy_with_a_live_worker_heartbeat_and_the_configured_broker(healthz):
    # The configured broker is real: the filesystem transport by default, CI's Redis in the PostgreSQL run.
    record_worker_heartbeat()
    response = healthz()
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ok"
    assert body["failing"] == []
    assert set(body["checks"]) == {"database", "broker", "worker"}
    assert all(check["ok"] for check in body["checks"].values())


def test_a_dead_broker_gives_503_naming_the_broker(healthz, dead_broker):
    record_worker_heartbeat()
    response = healthz()
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failing"
    assert body["failing"] == ["broker"]
    assert "127.0.0.1:1" in body["checks"]["broker"]["detail"]
    assert body["checks"]["database"]["ok"] is True


def test_an_old_worker_heartbeat_gives_503_naming_the_worker(healthz, settings):
    limit = settings.WORKER_HEARTBEAT_MAX_AGE_SECONDS
    with time_machine.travel(NOON, tick=False):
        record_worker_heartbeat()
    with time_machine.travel(NOON + timedelta(seconds=limit - 1), tick=False):
        assert healthz().status_code == 200
    with time_machine.travel(NOON + timedelta(seconds=limit + 1), tick=False):
        response = healthz()
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["worker"]
    assert f"limit {limit} s" in body["checks"]["worker"]["detail"]


def test_no_worker_heartbeat_at_all_gives_503_naming_the_worker(healthz, no_heartbeat):
    response = healthz()
    assert response.status_code == 503
    assert response.json()["failing"] == ["worker"]


def test_every_failing_part_is_named(healthz, dead_broker, no_heartbeat):
    response = healthz()
    assert response.status_code == 503
    assert response.json()["failing"] == ["broker", "worker"]


def test_healthz_is_public_and_never_cached(client, roleless_user):
    record_worker_heartbeat()
    anonymous = client.get(reverse("healthz"))
    assert anonymous.status_code == 200
    assert "no-cache" in anonymous["Cache-Control"]
    client.force_login(roleless_user)
    assert client.get(reverse("healthz")).status_code == 200
