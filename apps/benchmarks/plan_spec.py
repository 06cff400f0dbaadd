"""The shape of a benchmark plan's job list, checked without Django.

A plan spec is {"jobs": [{"kind": "inventory", "spec": {…}, "acceptance_criteria": {…},
"required_operations": ["kill_worker"], "count": 1}, …]}. `normalise_plan_spec` returns the job entries with
defaults filled in, or raises PlanSpecError listing every problem ("jobs[2].kind: …").
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
MAX_JOBS_PER_PLAN = 200
MAX_COUNT_PER_ENTRY = 50


@dataclass(frozen=True)
class JobEntry:
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)
    acceptance_criteria: dict[str, Any] = field(default_factory=dict)
    required_operations: tuple[str, ...] = ()
    count: int = 1


class PlanSpecError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_COUNT_PER_ENTRY


def normalise_plan_spec(plan_spec: Any) -> list[JobEntry]:
    if not isinstance(plan_spec, dict) or not isinstance(plan_spec.get("jobs"), list):
        raise PlanSpecError(['the plan must be an object with a "jobs" list'])
    entries: list[JobEntry] = []
    problems: list[str] = []
    for index, raw in enumerate(plan_spec["jobs"]):
        where = f"jobs[{index}]"
        problems_before = len(problems)
        if not isinstance(raw, dict):
            problems.append(f"{where}: must be an object")
            continue
        kind = raw.get("kind")
        spec = raw.get("spec", {})
        criteria = raw.get("acceptance_criteria", {})
        operations = raw.get("required_operations", [])
        count = raw.get("count", 1)
        if not isinstance(kind, str) or not KIND_PATTERN.match(kind):
            problems.append(f"{where}.kind: must match {KIND_PATTERN.pattern}")
        if not isinstance(spec, dict):
            problems.append(f"{where}.spec: must be an object")
        if not isinstance(criteria, dict):
            problems.append(f"{where}.acceptance_criteria: must be an object")
        if not isinstance(operations, list) or not all(
            isinstance(item, str) and KIND_PATTERN.match(item) for item in operations
        ):
            problems.append(f"{where}.required_operations: must be a list of operation names")
        if not _is_count(count):
            problems.append(f"{where}.count: must be an integer from 1 to {MAX_COUNT_PER_ENTRY}")
        if len(problems) == problems_before:
            entries.append(
                JobEntry(
                    kind=kind,
                    spec=copy.deepcopy(spec),
                    acceptance_criteria=copy.deepcopy(criteria),
                    required_operations=tuple(sorted(set(operations))),
                    count=count,
                )
            )
    if not plan_spec["jobs"]:
        problems.append("jobs: list at least one job")
    total = sum(entry.count for entry in entries)
    if total > MAX_JOBS_PER_PLAN:
        problems.append(f"jobs: {total} jobs in one plan; the limit is {MAX_JOBS_PER_PLAN}")
    if problems:
        raise PlanSpecError(problems)
    return entries
