"""The shape of a plan's job list."""

import pytest

from apps.benchmarks.plan_spec import MAX_JOBS_PER_PLAN, PlanSpecError, normalise_plan_spec


def test_defaults_are_filled_in_and_operations_sorted():
    (entry,) = normalise_plan_spec({"jobs": [{"kind": "failure", "required_operations": ["b", "a", "a"]}]})
    assert entry.kind == "failure" and entry.spec == {} and entry.acceptance_criteria == {}
    assert entry.required_operations == ("a", "b") and entry.count == 1


def test_the_entries_are_copies_of_the_plan():
    plan = {"jobs": [{"kind": "inventory", "spec": {"nested": {"x": 1}}}]}
    (entry,) = normalise_plan_spec(plan)
    plan["jobs"][0]["spec"]["nested"]["x"] = 2
    assert entry.spec == {"nested": {"x": 1}}


@pytest.mark.parametrize(
    ("plan", "problem"),
    [
        (None, 'the plan must be an object with a "jobs" list'),
        ({"jobs": []}, "jobs: list at least one job"),
        ({"jobs": ["inventory"]}, "jobs[0]: must be an object"),
        ({"jobs": [{"kind": "Memory Fit"}]}, "jobs[0].kind"),
        ({"jobs": [{"kind": "x", "spec": [1]}]}, "jobs[0].spec"),
        ({"jobs": [{"kind": "x", "acceptance_criteria": "fast"}]}, "jobs[0].acceptance_criteria"),
        ({"jobs": [{"kind": "x", "required_operations": ["Kill Worker"]}]}, "jobs[0].required_operations"),
        ({"jobs": [{"kind": "x", "count": 0}]}, "jobs[0].count"),
        ({"jobs": [{"kind": "x", "count": True}]}, "jobs[0].count"),
    ],
)
def test_each_problem_is_named_with_its_place(plan, problem):
    with pytest.raises(PlanSpecError) as raised:
        normalise_plan_spec(plan)
    assert any(message.startswith(problem) for message in raised.value.problems)


def test_problems_of_every_entry_are_reported_together():
    with pytest.raises(PlanSpecError) as raised:
        normalise_plan_spec({"jobs": [{"kind": "ok"}, {"kind": "BAD"}, {"kind": "x", "count": 99}]})
    assert [message.split(":")[0] for message in raised.value.problems] == ["jobs[1].kind", "jobs[2].count"]


def test_a_plan_is_limited_in_size():
    with pytest.raises(PlanSpecError, match="limit"):
        normalise_plan_spec({"jobs": [{"kind": "x", "count": 50}] * (MAX_JOBS_PER_PLAN // 50 + 1)})
