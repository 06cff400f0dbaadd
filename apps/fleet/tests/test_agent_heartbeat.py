"""POST /api/agent/v1/heartbeat and agent-token authentication (docs/agent-protocol.md §2, §3.2)."""

import pytest

from apps.fleet.models import Agent, AgentCommand, AgentStatus
from apps.fleet.services import agent_request_command, agent_revoke, pool_set_active
from apps.fleet.tests.helpers import AgentApi

pytestmark = pytest.mark.django_db


def test_heartbeat_marks_the_agent_online_and_returns_server_time_and_intervals(agent_api, agent):
    Agent.objects.filter(pk=agent.pk).update(status=AgentStatus.LOST, last_heartbeat_at=None)

    response = agent_api.heartbeat(uptime_s=99.0, spool_pending=3)

    assert response.status_code == 200
    body = response.json()
    assert body["commands"] == []
    assert body["heartbeat_interval_s"] == 30 and body["claim_interval_s"] == 10
    assert body["server_time"].endswith("Z")
    agent.refresh_from_db()
    assert agent.status == AgentStatus.ONLINE
    assert agent.last_heartbeat_at is not None
    assert agent.uptime_s == 99.0 and agent.spool_pending == 3


def test_a_busy_heartbeat_marks_the_agent_busy(agent_api, agent):
    agent_api.heartbeat(state="busy", current_job={"id": "4", "attempt": 1})
    agent.refresh_from_db()
    assert agent.status == AgentStatus.BUSY


def test_a_pending_command_is_delivered_once(agent_api, agent):
    agent_request_command(agent=agent, command=AgentCommand.PAUSE)

    assert agent_api.heartbeat().json()["commands"] == [{"command": "pause"}]
    assert agent_api.heartbeat().json()["commands"] == []


def test_without_a_token_the_heartbeat_is_a_401_with_a_bearer_challenge(pool):
    response = AgentApi(None).heartbeat()
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_agent_token"
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer dsa_" + "x" * 43, "Bearer ", "Token dsa_abc", "Bearer dsr_" + "x" * 43])
def test_a_wrong_agent_token_is_refused(agent_api, header):
    response = agent_api.client.generic(
        "POST", "/api/agent/v1/heartbeat", b"{}", content_type="application/json",
        HTTP_AUTHORIZATION=header, HTTP_X_AGENT_VERSION="0.1.0",
    )
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_agent_token"


def test_a_revoked_agent_is_refused(agent_api, agent):
    agent_revoke(agent=agent)
    assert agent_api.heartbeat().status_code == 401


def test_a_user_session_is_not_an_agent(client, platform_user, agent):
    client.force_login(platform_user)
    response = client.post("/api/agent/v1/heartbeat", data="{}", content_type="application/json",
                           HTTP_X_AGENT_VERSION="0.1.0")
    assert response.status_code == 401


def test_an_agent_below_the_minimum_version_is_refused_on_every_call(agent_api, settings):
    settings.DOSSIER_MIN_AGENT_VERSION = "1.0.0"
    response = agent_api.heartbeat()
    assert response.status_code == 426
    assert response.json()["min_agent_version"] == "1.0.0"
    assert agent_api.claim().status_code == 426


def test_a_missing_version_header_is_a_400(agent_api):
    agent_api.version = None
    response = agent_api.post("/heartbeat", {"agent_version": "0.1.0", "state": "idle", "job_kinds": []})
    assert response.status_code == 400
    assert "X-Agent-Version" in response.json()["fields"]


def test_a_disabled_pool_refuses_its_agents(agent_api, pool):
    pool_set_active(pool=pool, is_active=False)
    response = agent_api.heartbeat()
    assert response.status_code == 403
    assert response.json()["error"] == "pool_disabled"


def test_a_malformed_heartbeat_is_a_400(agent_api):
    response = agent_api.heartbeat(state="dancing")
    assert response.status_code == 400
    assert "state" in response.json()["fields"]


def test_an_unknown_path_is_a_json_404_for_an_agent_and_a_401_for_anyone_else(agent_api, client):
    response = agent_api.post("/no/such/call", {})
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert client.get("/api/agent/v1/no/such/call").status_code == 401


def test_a_busy_database_is_a_503_with_retry_after(agent_api, monkeypatch):
    from django.db import OperationalError

    from apps.agent_api import node_views as agent_views

    def locked(**kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(agent_views, "agent_heartbeat", locked)
    response = agent_api.heartbeat()
    assert response.status_code == 503
    assert response["Retry-After"] == "2" and response.json()["error"] == "unavailable"


def test_a_wrong_method_is_a_405_with_the_error_body(agent_api):
    response = agent_api.client.get("/api/agent/v1/heartbeat", HTTP_AUTHORIZATION=f"Bearer {agent_api.token}",
                                    HTTP_X_AGENT_VERSION="0.1.0")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
