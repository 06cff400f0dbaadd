"""Helpers of the phase-3 tests: the agent's jobs run in this process with an in-memory job context, and their
results finished through the agent API on a real job (the way phase 2's tests do it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from apps.benchmarks import tasks
from apps.benchmarks.models import Result
from apps.benchmarks.services import plan_dispatch, plan_request_dispatch
from apps.benchmarks.tests.helpers import make_plan
from apps.fleet.tests.helpers import AgentApi, register_agent

PHASE3_KINDS = ("operations", "acceptance", "checkpoint", "allreduce")
#: what an operator may declare on a serving stack (dossier_agent.contract.operation_names.OPERATIONS)
DECLARED_OPERATIONS = ("start", "stop", "restart", "kill_worker", "bad_deploy", "drain")


class Collect:
    """The job context the agent's jobs need, keeping artifacts in memory."""

    def __init__(self, workdir: Path) -> None:
        self.artifacts: dict[str, tuple[str, bytes, str]] = {}
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.inventory: dict[str, Any] = {"host": {"cpu_model": "test CPU"}, "gpus": []}
        self.operations = None
        self.events: list[tuple[str, dict[str, Any]]] = []

    def log(self, message: str, **fields: Any) -> None:
        pass

    def progress(self, fraction: float, message: str = "") -> None:
        pass

    def event(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, data))

    def add_artifact(self, data: bytes, name: str, media_type: str) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self.artifacts[name] = (digest, bytes(data), media_type)
        return digest

    def cancelled(self) -> bool:
        return False

    def raise_if_cancelled(self) -> None:
        pass


def agent_api(pool, machine_id: str = "node-phase3") -> AgentApi:
    _agent, token = register_agent(pool, machine_id=machine_id, job_kinds=PHASE3_KINDS,
                                   operations=DECLARED_OPERATIONS)
    return AgentApi(token)


def finish(api: AgentApi, pool, kind: str, spec: dict[str, Any], result: Any,
           artifacts: dict[str, tuple[str, bytes, str]] | None = None, *, candidate=None,
           ingest: bool = True) -> Result:
    """Queue one job of `kind` (measuring `candidate`), claim it, upload the artifacts, finish with `result`, ingest."""
    plan = make_plan(pool, kind=kind, spec=spec, name=f"Phase 3 {kind}")
    if candidate is not None:
        plan.spec = {**plan.spec, "candidate_id": candidate.pk}
        plan.save(update_fields=["spec"])
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    claimed = api.claim_job(job_kinds=PHASE3_KINDS, operations=DECLARED_OPERATIONS)
    listed = []
    for name, (digest, data, media_type) in (artifacts or {}).items():
        response = api.put_artifact(claimed, data, name=name, media_type=media_type)
        assert response.status_code in (200, 201), response.content
        listed.append({"sha256": digest, "name": name, "media_type": media_type, "size": len(data)})
    response = api.finish(claimed, result=json.loads(json.dumps(result)), artifacts=listed)
    assert response.status_code == 201, response.content
    stored = Result.objects.get(job_id=int(claimed.job_id))
    if ingest:
        assert tasks.ingest_result(stored.pk) is True
        stored.refresh_from_db()
    return stored
