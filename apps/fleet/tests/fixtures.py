"""pytest fixtures shared by the fleet and benchmarks tests (imported by both apps' conftest.py)."""

import pytest

from apps.fleet.services import pool_create
from apps.fleet.tests.helpers import AgentApi, register_agent


@pytest.fixture(autouse=True)
def _tasks_run_inline():
    """Unit tests never publish to a broker: .delay() runs the task in the test's own process."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = previous


@pytest.fixture
def pool(team):
    return pool_create(team=team, name="vendor-trial-h200")


@pytest.fixture
def other_pool(other_team):
    return pool_create(team=other_team, name="other-vendor")


@pytest.fixture
def registered(pool):
    """(agent, agent token) of an agent registered into `pool` that runs inventory jobs."""
    return register_agent(pool, machine_id="machine-a")


@pytest.fixture
def agent(registered):
    return registered[0]


@pytest.fixture
def agent_api(registered):
    return AgentApi(registered[1])


@pytest.fixture
def second_agent_api(pool):
    _agent, token = register_agent(pool, machine_id="machine-b")
    return AgentApi(token)
