"""POST /api/agent/v1/register (docs/agent-protocol.md §3.1)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.fleet import protocol
from apps.fleet.models import Agent, InventorySnapshot, RegistrationToken
from apps.fleet.services import pool_set_active, registration_token_create, registration_token_revoke
from apps.fleet.tests.helpers import AgentApi, register_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(pool):
    _row, secret = registration_token_create(pool=pool)
    return secret


def test_register_creates_an_agent_with_a_hashed_token_and_returns_it_once(pool, token):
    response = AgentApi().register(register_body(token))

    assert response.status_code == 201
    body = response.json()
    agent = Agent.objects.get(pk=int(body["agent_id"]))
    assert body["agent_token"].startswith("dsa_") and len(body["agent_token"]) == 47
    assert agent.token_hash == protocol.token_hash(body["agent_token"])
    assert body["agent_token"] not in str(Agent.objects.filter(pk=agent.pk).values().get())
    assert body["pool"] == {"id": str(pool.pk), "name": pool.name}
    assert body["heartbeat_interval_s"] == 30 and body["claim_interval_s"] == 10 and body["lease_interval_s"] == 30
    assert body["limits"]["max_events_per_batch"] == 500
    assert body["server_time"].endswith("Z")
    assert agent.job_kinds == ["inventory"] and agent.version == "0.1.0"
    assert InventorySnapshot.objects.filter(agent=agent, source="register").count() == 1


def test_the_registration_token_is_stored_as_its_hash_with_a_display_prefix(pool):
    row, secret = registration_token_create(pool=pool)
    assert secret.startswith("dsr_") and len(secret) == 47
    assert row.token_hash == protocol.token_hash(secret)
    assert row.token_prefix == secret[:12]
    assert secret not in str(RegistrationToken.objects.filter(pk=row.pk).values().get())


def test_registering_the_same_machine_again_reuses_the_agent_and_replaces_its_token(pool, token):
    first = AgentApi().register(register_body(token)).json()
    again = AgentApi().register(register_body(token))

    assert again.status_code == 200
    assert again.json()["agent_id"] == first["agent_id"]
    assert AgentApi(first["agent_token"]).heartbeat().status_code == 401
    assert AgentApi(again.json()["agent_token"]).heartbeat().status_code == 200
    assert Agent.objects.count() == 1


def test_an_unknown_registration_token_is_refused(pool):
    response = AgentApi().register(register_body("dsr_" + "x" * 43))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_registration_token"
    assert Agent.objects.count() == 0


def test_a_missing_registration_token_is_refused_with_401(pool):
    body = register_body("unused")
    del body["registration_token"]
    response = AgentApi().register(body)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_registration_token"


def test_a_revoked_registration_token_is_refused_and_says_so(pool):
    row, secret = registration_token_create(pool=pool)
    registration_token_revoke(token=row)

    response = AgentApi().register(register_body(secret))

    assert response.status_code == 401
    assert response.json()["error"] == "invalid_registration_token"
    assert "revoked" in response.json()["detail"]
    assert Agent.objects.count() == 0


def test_an_expired_registration_token_is_refused(pool):
    _row, secret = registration_token_create(pool=pool, expires_at=timezone.now() - timedelta(seconds=1))
    response = AgentApi().register(register_body(secret))
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_a_single_use_token_registers_one_agent_only(pool):
    _row, secret = registration_token_create(pool=pool, single_use=True)

    assert AgentApi().register(register_body(secret, machine_id="one")).status_code == 201
    second = AgentApi().register(register_body(secret, machine_id="two"))

    assert second.status_code == 401
    assert "already used" in second.json()["detail"]
    assert list(Agent.objects.values_list("machine_id", flat=True)) == ["one"]


def test_an_agent_below_the_minimum_version_is_refused_with_the_reason(pool, token, settings):
    settings.DOSSIER_MIN_AGENT_VERSION = "0.2.0"

    response = AgentApi(version="0.1.0").register(register_body(token, version="0.1.0"))

    assert response.status_code == 426
    body = response.json()
    assert body["error"] == "agent_too_old"
    assert body["min_agent_version"] == "0.2.0" and body["agent_version"] == "0.1.0"
    assert "older than the minimum 0.2.0" in body["detail"]
    assert Agent.objects.count() == 0
    assert RegistrationToken.objects.get().use_count == 0


def test_a_newer_pre_release_ordering_follows_pep_440(pool, token, settings):
    settings.DOSSIER_MIN_AGENT_VERSION = "0.2.0"
    assert AgentApi(version="0.2.0rc1").register(register_body(token, version="0.2.0rc1")).status_code == 426
    assert AgentApi(version="0.10.0").register(register_body(token, version="0.10.0")).status_code == 201


def test_a_disabled_pool_refuses_registration(pool, token):
    pool_set_active(pool=pool, is_active=False)
    response = AgentApi().register(register_body(token))
    assert response.status_code == 403
    assert response.json()["error"] == "pool_disabled"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda body: body.pop("machine_id"), "machine_id"),
        (lambda body: body.update(job_kinds="inventory"), "job_kinds"),
        (lambda body: body.update(job_kinds=["Not A Kind"]), "job_kinds"),
        (lambda body: body.update(inventory=[1, 2]), "inventory"),
        (lambda body: body.update(protocol_version="one"), "protocol_version"),
        (lambda body: body.update(name="x" * 101), "name"),
    ],
)
def test_malformed_registration_is_a_400_naming_the_field_and_writes_nothing(pool, token, change, field):
    body = register_body(token)
    change(body)
    response = AgentApi().register(body)

    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert any(key.startswith(field) for key in response.json()["fields"])
    assert Agent.objects.count() == 0
    assert RegistrationToken.objects.get().use_count == 0


def test_a_body_that_is_not_json_is_a_400(pool):
    response = AgentApi().post("/register", raw=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


def test_an_oversized_body_is_a_413_and_nothing_is_written(pool, token, settings):
    settings.DOSSIER_AGENT_MAX_BODY_BYTES = 64 * 1024
    body = register_body(token)
    body["inventory"]["padding"] = "x" * (65 * 1024)

    response = AgentApi().register(body)

    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"
    assert Agent.objects.count() == 0


def test_register_refuses_get_without_revealing_anything(client):
    response = client.get("/api/agent/v1/register")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
