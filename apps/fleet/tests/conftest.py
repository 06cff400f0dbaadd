from apps.fleet.tests.fixtures import (  # noqa: F401  (fixtures)
    _tasks_run_inline,
    agent,
    agent_api,
    other_pool,
    pool,
    registered,
    second_agent_api,
)
