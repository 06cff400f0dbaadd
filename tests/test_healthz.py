"""/healthz: 200 when the database, the broker and a worker all answer; 503 naming whatever does not. Public, but
each check's detail (the database engine, the broker, the errors) only for staff or the DOSSIER_HEALTH_TOKEN."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from apps.common.health import WORKER_HEARTBEAT_KEY, record_worker_heartbeat

pytestmark = pytest.mark.django_db

# Nothing listens on port 1: a connection there is refused at once.
DEAD_REDIS = "redis://127.0.0.1:1/0"
NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HEALTH_TOKEN = "health-token-for-the-tests"


@pytest.fixture
def healthz(client, settings):
    """GET /healthz as the monitoring does: with the health token, so the details are in the body."""
    settings.DOSSIER_HEALTH_TOKEN = HEALTH_TOKEN

    def get():
        return client.get(reverse("healthz"), headers={"X-Dossier-Health-Token": HEALTH_TOKEN})

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


def test_anonymous_callers_get_the_status_without_details(client, settings):
    """Before, anyone read the database engine (`sqlite`/`postgresql`), the broker's transport and error texts."""
    settings.DOSSIER_HEALTH_TOKEN = HEALTH_TOKEN
    record_worker_heartbeat()
    for headers in ({}, {"X-Dossier-Health-Token": "wrong"}, {"X-Dossier-Health-Token": ""}):
        response = client.get(reverse("healthz"), headers=headers)
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "failing": []}
        assert "sqlite" not in response.content.decode() and "postgresql" not in response.content.decode()


def test_no_token_configured_means_no_details_for_anyone_anonymous(client, settings):
    settings.DOSSIER_HEALTH_TOKEN = None
    record_worker_heartbeat()
    assert "checks" not in client.get(reverse("healthz"), headers={"X-Dossier-Health-Token": ""}).json()


def test_a_failing_part_is_named_but_not_detailed_to_anonymous_callers(client, dead_broker):
    record_worker_heartbeat()
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json() == {"status": "failing", "failing": ["broker"]}
    assert "127.0.0.1" not in response.content.decode()


def test_staff_read_the_details_and_other_users_do_not(client, roleless_user, admin_user):
    record_worker_heartbeat()
    client.force_login(roleless_user)
    assert "checks" not in client.get(reverse("healthz")).json()
    client.force_login(admin_user)  # is_staff
    checks = client.get(reverse("healthz")).json()["checks"]
    assert checks["database"]["detail"] in ("sqlite", "postgresql")
