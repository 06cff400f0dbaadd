"""Job discovery: modules that import are offered, the others are not, and the reason is kept."""

from dossier_agent.jobs.registry import discover

from conftest import JOB_MODULES


def test_the_builtin_inventory_job_is_offered():
    registry = discover()
    assert "inventory" in registry.offered()
    assert registry.get("inventory").module_name == "dossier_agent.jobs.inventory"


def test_extra_job_folders_are_scanned_and_failures_are_not_offered():
    registry = discover([JOB_MODULES])

    offered = registry.offered()
    assert {"inventory", "test_sleeper", "test_chatty", "test_failing", "test_stubborn"} <= set(offered)
    assert "test_broken" not in offered
    assert "module_that_does_not_exist" in registry.unavailable["broken_import"]
    assert "test_needs_missing" not in offered
    assert registry.unavailable["test_needs_missing"] == "missing another_module_that_does_not_exist"
    assert "shared_helpers" not in registry.unavailable and "shared_helpers" not in offered  # helpers are skipped
    assert registry.get("test_sleeper").self_test_spec == {"seconds": 0.1}


def test_the_operator_can_restrict_the_offered_kinds():
    registry = discover([JOB_MODULES], only=["inventory"])
    assert registry.offered() == ["inventory"]
    assert registry.unavailable["test_sleeper"] == "not in this agent's job_kinds setting"


def test_a_kind_can_be_loaded_again_from_its_description():
    kind = discover([JOB_MODULES]).get("test_chatty")
    module = type(kind).from_dict(kind.as_dict()).load()
    assert module.KIND == "test_chatty"
