"""The fleet's pages: pools with registration instructions and tokens, agents with their inventory."""

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.fleet import protocol
from apps.fleet.models import Agent, AgentPool, RegistrationToken
from apps.fleet.services import agent_revoke, registration_token_create
from apps.fleet.tests.helpers import AgentApi, register_body

pytestmark = pytest.mark.django_db


def test_the_pool_list_shows_only_the_users_teams(client_for, platform_user, pool, other_pool):
    page = client_for(platform_user).get(reverse("fleet:pool-list")).content.decode()
    assert pool.name in page and other_pool.name not in page


def test_the_pool_page_shows_a_copyable_register_command(client_for, platform_user, pool):
    page = client_for(platform_user).get(pool.get_absolute_url()).content.decode()
    assert "dossier-agent register --server http://testserver --registration-token dsr_…" in page
    assert 'data-copy-target="register-command"' in page


def test_issuing_a_token_shows_it_once_with_the_full_command(client_for, platform_user, pool):
    response = client_for(platform_user).post(reverse("fleet:token-create", args=[pool.pk]),
                                              {"description": "vendor trial", "single_use": "on",
                                               "expires_in_days": "7"})
    assert response.status_code == 200
    secret = response.context["secret"]
    token = RegistrationToken.objects.get()
    assert token.token_hash == protocol.token_hash(secret) and token.single_use and token.expires_at
    page = response.content.decode()
    assert f"dossier-agent register --server http://testserver --registration-token {secret}" in page
    assert f'<code id="registration-token" translate="no">{secret}</code>' in page  # fleet/_registration_token.html
    pool_page = client_for(platform_user).get(pool.get_absolute_url()).content.decode()
    assert secret not in pool_page and token.token_prefix in pool_page
    assert ObjectChange.objects.filter(object_repr__startswith=token.token_prefix, action="create").exists()


def test_the_issued_token_registers_an_agent(client_for, platform_user, pool):
    secret = client_for(platform_user).post(reverse("fleet:token-create", args=[pool.pk]), {}).context["secret"]
    assert AgentApi().register(register_body(secret)).status_code == 201


def test_revoking_a_token_stops_registration(client_for, platform_user, pool):
    token, secret = registration_token_create(pool=pool)
    response = client_for(platform_user).post(reverse("fleet:token-revoke", args=[token.pk]))
    assert response.status_code == 302
    assert AgentApi().register(register_body(secret)).status_code == 401


@pytest.mark.parametrize("url_name", ["fleet:token-create", "fleet:pool-toggle"])
def test_finance_cannot_issue_tokens_or_toggle_pools(client_for, finance_user, pool, url_name):
    response = client_for(finance_user).post(reverse(url_name, args=[pool.pk]))
    assert response.status_code == 403
    assert not RegistrationToken.objects.exists()


def test_an_outsider_gets_404_for_another_teams_pool(client_for, outsider, pool):
    client = client_for(outsider)
    assert client.get(pool.get_absolute_url()).status_code == 404
    assert client.post(reverse("fleet:token-create", args=[pool.pk])).status_code == 404


def test_only_admins_create_pools_in_their_active_team(client_for, admin_user, platform_user, team):
    assert client_for(platform_user).post(reverse("fleet:pool-create"), {"name": "x"}).status_code == 403
    response = client_for(admin_user).post(reverse("fleet:pool-create"), {"name": "h100-trial", "description": ""})
    assert response.status_code == 302
    assert AgentPool.objects.get(name="h100-trial").team == team


def test_a_duplicate_pool_name_is_a_form_error(client_for, admin_user, pool):
    response = client_for(admin_user).post(reverse("fleet:pool-create"), {"name": pool.name})
    assert response.status_code == 400
    assert "already exists" in response.content.decode()


def test_disabling_a_pool_refuses_its_agents(client_for, admin_user, pool, agent_api):
    client_for(admin_user).post(reverse("fleet:pool-toggle", args=[pool.pk]))
    assert agent_api.heartbeat().status_code == 403


def test_the_agent_page_shows_status_version_heartbeat_and_inventory(client_for, product_user, agent):
    page = client_for(product_user).get(agent.get_absolute_url()).content.decode()
    assert agent.name in page and "0.1.0" in page
    assert "NVIDIA H200" in page and "143771" in page
    assert "online" in page


def test_an_agent_without_gpu_says_so(client_for, product_user, pool):
    body = register_body(registration_token_create(pool=pool)[1], machine_id="cpu-only")
    body["inventory"]["gpus"], body["inventory"]["gpu_present"] = [], False
    body["inventory"]["gpu_error"] = "NVML Shared Library Not Found"
    AgentApi().register(body)
    page = client_for(product_user).get(Agent.objects.get(machine_id="cpu-only").get_absolute_url()).content.decode()
    assert "No GPU found on this node." in page and "NVML Shared Library Not Found" in page


def test_a_platform_user_pauses_an_agent_through_its_next_heartbeat(client_for, platform_user, agent, agent_api):
    client_for(platform_user).post(reverse("fleet:agent-command", args=[agent.pk]), {"command": "pause"})
    assert agent_api.heartbeat().json()["commands"] == [{"command": "pause"}]


def test_revoking_an_agent_refuses_its_token(client_for, platform_user, agent, agent_api):
    client_for(platform_user).post(reverse("fleet:agent-revoke", args=[agent.pk]))
    assert agent_api.heartbeat().status_code == 401


def test_the_agent_list_filters_by_status(client_for, platform_user, agent, pool):
    from apps.fleet.tests.helpers import register_agent

    other, _token = register_agent(pool, machine_id="gone")
    agent_revoke(agent=other)
    client = client_for(platform_user)
    page = client.get(reverse("fleet:agent-list"), {"status": "offline"}).content.decode()
    assert other.name in page and agent.name not in page


def test_the_agents_api_lists_the_teams_agents_with_their_inventory(client_for, finance_user, agent, other_pool):
    from apps.fleet.tests.helpers import register_agent

    register_agent(other_pool, machine_id="someone-else")
    body = client_for(finance_user).get("/api/v1/fleet/agents/").json()
    assert [item["name"] for item in body["results"]] == [agent.name]
    assert body["results"][0]["status"] == "online"
    assert body["results"][0]["inventory"]["gpu_count"] == 1
