"""The job-spec parts of the contract: the `operations` job's spec as the agent and the server both parse it, the
operations it needs on a node, and what a job group may set in its ranks' environment."""

import pytest
from dossier_agent.contract import job_specs


def test_recovery_and_required_operations():
    declared = ["kill_worker", "restart", "start", "stop"]
    assert job_specs.resolve_recovery({"name": "kill_worker", "recovery": None}, declared) == "restart"
    assert job_specs.resolve_recovery({"name": "kill_worker", "recovery": None}, ["kill_worker", "start"]) == "start"
    assert job_specs.resolve_recovery({"name": "kill_worker", "recovery": None}, ["kill_worker"]) == "none"
    assert job_specs.resolve_recovery({"name": "restart", "recovery": None}, declared) == "none"
    assert job_specs.resolve_recovery({"name": "kill_worker", "recovery": "none"}, declared) == "none"
    plan = job_specs.parse_operations_spec({"scenarios": ["kill_worker", "stop"], "cold_start": {"repeats": 1}})
    assert job_specs.required_operations(plan, declared) == ["kill_worker", "restart", "start", "stop"]


def test_a_spec_naming_a_command_or_an_unknown_scenario_is_refused():
    with pytest.raises(job_specs.OperationsSpecError, match="scenarios"):
        job_specs.parse_operations_spec({"scenarios": [{"name": "kill_worker", "command": "rm -rf /"}]})
    with pytest.raises(job_specs.OperationsSpecError, match="recovery must be an operation"):
        job_specs.parse_operations_spec({"scenarios": [{"name": "kill_worker", "recovery": "reboot"}]})
    with pytest.raises(job_specs.OperationsSpecError, match="nothing to do"):
        job_specs.parse_operations_spec({})


def test_a_job_group_may_set_interfaces_and_debug_output_but_nothing_that_loads_code():
    assert {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_DEBUG"} <= job_specs.ALLOWED_ENV
    assert not {"LD_PRELOAD", "PATH", "PYTHONPATH", "NCCL_NET_PLUGIN"} & job_specs.ALLOWED_ENV
