"""What people do to pools, tokens and agents is in the audit log, with the pool's team and without the secrets."""

from apps.audit.models import ObjectChange
from apps.fleet.models import AgentCommand, AgentStatus
from apps.fleet.services import agent_request_command, agent_revoke, pool_set_active, registration_token_revoke


def test_revoking_an_agent_is_a_transition_of_the_pools_team(agent, platform_user):
    agent_revoke(agent=agent, actor=platform_user)
    entry = ObjectChange.objects.for_object(agent).filter(action="transition").get()
    assert entry.message == "agent revoked" and entry.team == agent.pool.team
    assert entry.changes["status"] == [AgentStatus.ONLINE, AgentStatus.OFFLINE]
    assert "token_hash" not in entry.after


def test_revoking_a_registration_token_keeps_its_hash_out_of_the_log(agent, platform_user):
    token = agent.registration_token
    registration_token_revoke(token=token, actor=platform_user)
    entry = ObjectChange.objects.for_object(token).filter(action="transition").get()
    assert set(entry.changes) == {"revoked_at"} and "token_hash" not in entry.after


def test_a_command_is_audited_and_asking_for_the_same_state_again_writes_nothing(agent, pool, platform_user):
    agent_request_command(agent=agent, command=AgentCommand.PAUSE, actor=platform_user)
    entry = ObjectChange.objects.for_object(agent).filter(action="update").get()
    assert entry.changes == {"pending_command": ["", "pause"]}
    pool_set_active(pool=pool, is_active=True, actor=platform_user)
    assert not ObjectChange.objects.for_object(pool).filter(action="update").exists()
