"""The shape of a benchmark plan's job list, checked without Django.

A plan spec is {"jobs": [{"kind": "inventory", "spec": {…}, "acceptance_criteria": {…},
"required_operations": ["kill_worker"], "count": 1}, …]}. An entry of a kind that runs across nodes may add
"group": {"world_size": 2, "env": {"NCCL_SOCKET_IFNAME": "eth0"}}: it becomes a job group of `world_size` jobs, one per
rank, dispatched together (docs/agent-protocol.md §8); `count` is then the number of groups.
`normalise_plan_spec` returns the job entries with defaults filled in, or raises PlanSpecError listing every problem
("jobs[2].kind: …").

Besides "jobs", a plan may say at its top level which candidate it measures (`"candidate_id": 12`, a candidate of the
plan's team: its jobs' results go to that candidate's phase-4 inputs) and how many GPUs serve the endpoint under test
(`"gpus_per_replica": 8`: a sweep's capacity is divided by it). The plan forms also keep the inputs they were filled
with under `"form"`, so the plan can be edited in the form again; the JSON view shows and edits the same plan.

`contract_problems` checks each throughput job's load spec with the agent's own check (`LoadSpec.from_dict`), so a
spec the agent would refuse is refused when the plan is saved, not after dispatch.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from dossier_agent.contract.job_specs import ALLOWED_ENV
from dossier_agent.contract.load_spec import LoadSpec, SpecError

KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
MAX_JOBS_PER_PLAN = 200
MAX_COUNT_PER_ENTRY = 50
#: Kinds whose jobs may form a group (one job per node, run together), and the largest group.
GROUP_KINDS = frozenset({"allreduce"})
MAX_WORLD_SIZE = 64
ENV_NAME_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


@dataclass(frozen=True)
class JobEntry:
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)
    acceptance_criteria: dict[str, Any] = field(default_factory=dict)
    required_operations: tuple[str, ...] = ()
    count: int = 1
    world_size: int | None = None  # set for a job group: `count` groups of `world_size` jobs
    group_env: dict[str, str] = field(default_factory=dict)

    @property
    def job_count(self) -> int:
        return self.count * (self.world_size or 1)


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
        world_size, group_env = _group_of(raw, kind, where, problems)
        if len(problems) == problems_before:
            entries.append(
                JobEntry(
                    kind=kind,
                    spec=copy.deepcopy(spec),
                    acceptance_criteria=copy.deepcopy(criteria),
                    required_operations=tuple(sorted(set(operations))),
                    count=count,
                    world_size=world_size,
                    group_env=group_env,
                )
            )
    if not plan_spec["jobs"]:
        problems.append("jobs: list at least one job")
    total = sum(entry.job_count for entry in entries)
    if total > MAX_JOBS_PER_PLAN:
        problems.append(f"jobs: {total} jobs in one plan; the limit is {MAX_JOBS_PER_PLAN}")
    if problems:
        raise PlanSpecError(problems)
    return entries


def _allowed_group_env() -> frozenset[str]:
    """The variables the agent lets a group set (network interfaces, debug output): its own list."""
    return ALLOWED_ENV


def _group_of(raw: dict[str, Any], kind: Any, where: str, problems: list[str]) -> tuple[int | None, dict[str, str]]:
    """The entry's group (world size, environment), or (None, {}) when it is a plain job."""
    if isinstance(raw.get("spec"), dict) and "group" in raw["spec"]:
        # The rank, the world and the meeting point come from the server, never from a plan's spec.
        problems.append(f"{where}.spec.group: describe a group with the entry's \"group\", not inside its spec")
    if "group" not in raw:
        return None, {}
    group = raw["group"]
    if not isinstance(group, dict):
        problems.append(f"{where}.group: must be an object")
        return None, {}
    if kind not in GROUP_KINDS:
        problems.append(f"{where}.group: only {', '.join(sorted(GROUP_KINDS))} jobs run as a group")
    unknown = sorted(set(group) - {"world_size", "env"})
    if unknown:
        problems.append(f"{where}.group: unknown keys {', '.join(unknown)}")
    world_size = group.get("world_size")
    if not isinstance(world_size, int) or isinstance(world_size, bool) or not 2 <= world_size <= MAX_WORLD_SIZE:
        problems.append(f"{where}.group.world_size: must be an integer from 2 to {MAX_WORLD_SIZE}")
        world_size = None
    env = group.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(name, str) and ENV_NAME_PATTERN.match(name) and isinstance(value, str) and len(value) <= 200
        for name, value in env.items()
    ):
        problems.append(f"{where}.group.env: must map variable names (A-Z, 0-9, _) to short strings")
        env = {}
    elif refused := sorted(set(env) - _allowed_group_env()):
        problems.append(f"{where}.group.env: the agent accepts only {', '.join(sorted(_allowed_group_env()))}; "
                        f"refused: {', '.join(refused)}")
        env = {}
    return world_size, dict(env)


#: Keys of a throughput job's spec that are the job's, not the load's (the agent's `jobs/throughput._JOB_KEYS`).
THROUGHPUT_JOB_KEYS = ("sweep", "self_check")


def load_spec_problem(spec: dict[str, Any]) -> str | None:
    """What the agent's load-spec check says about a throughput job's spec, or None when it would run it."""
    if spec.get("direct") is not None:
        return None  # the phase-1 proxy's own throughput: checked by the agent's direct module
    load = {key: value for key, value in spec.items() if key not in THROUGHPUT_JOB_KEYS}
    endpoint = load.get("endpoint")
    if isinstance(endpoint, dict) and endpoint.get("url") == "builtin-mock":
        load["endpoint"] = {**endpoint, "url": "http://127.0.0.1:1"}  # the agent starts the mock and fills it in
        load["endpoint"].pop("mock", None)
    try:
        LoadSpec.from_dict(load)
    except SpecError as error:
        return str(error)
    except (TypeError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    sweep = spec.get("sweep")
    if sweep is not None and (not isinstance(sweep, dict) or sweep.get("key", "rate") not in ("rate", "concurrency")):
        return "sweep.key must be rate or concurrency"
    if sweep and not (load.get("slo") or {}).get("target"):
        return "a sweep needs slo.target (the attainment to hold, e.g. 0.99)"
    return None


def contract_problems(entries: list[JobEntry]) -> list[str]:
    """"jobs[i].spec: …" for each throughput job whose load spec the agent would refuse."""
    problems = []
    for index, entry in enumerate(entries):
        if entry.kind == "throughput":
            problem = load_spec_problem(entry.spec)
            if problem:
                problems.append(f"jobs[{index}].spec: {problem}")
    return problems
