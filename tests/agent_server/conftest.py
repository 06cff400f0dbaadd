"""The agent ⇄ server tests: a real agent job (on the CPU) produces a result that the server's ingest reads through the
agent API. They live outside apps/ because they import the agent package beyond its contract; the server's own code
imports only `dossier_agent.contract` (tests/test_agent_contract_boundary.py). Same fixtures as the benchmarks tests."""

from apps.benchmarks.tests.conftest import (  # noqa: F401  (fixtures)
    _artifacts_in_a_temporary_folder,
    _tasks_run_inline,
    agent,
    agent_api,
    other_pool,
    pool,
    registered,
    second_agent_api,
)
