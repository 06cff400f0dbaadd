"""Objects for the fleet's parameterised URLs (see tests/url_registry.py): every one belongs to a team."""

import itertools

from apps.fleet.services import pool_create, registration_token_create
from apps.fleet.tests.helpers import register_agent

_numbers = itertools.count(1)


def make_pool(team):
    return pool_create(team=team, name=f"url-fixture-pool-{next(_numbers)}")


def make_agent(team):
    agent, _token = register_agent(make_pool(team), machine_id=f"url-fixture-{next(_numbers)}")
    return agent


def make_registration_token(team):
    token, _secret = registration_token_create(pool=make_pool(team))
    return token


URL_FIXTURES = {
    "fleet:pool-detail": make_pool,
    "fleet:pool-toggle": make_pool,
    "fleet:token-create": make_pool,
    "fleet:token-revoke": make_registration_token,
    "fleet:agent-detail": make_agent,
    "fleet:agent-command": make_agent,
    "fleet:agent-revoke": make_agent,
    "fleet:agent-candidate": make_agent,
    "fleet-api:pool-detail": make_pool,
    "fleet-api:agent-detail": make_agent,
}
