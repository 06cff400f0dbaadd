"""Test helpers for the agent protocol: an agent speaking through DRF's test client, and sample payloads."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from rest_framework.test import APIClient

from apps.fleet.models import AgentPool
from apps.fleet.services import agent_register, registration_token_create

AGENT_VERSION = "0.1.0"
PREFIX = "/api/agent/v1"


def inventory(*, gpus: int = 1, name: str = "NVIDIA H200", memory_mib: int = 143771, nvlink: int = 18,
              machine_id: str = "machine-0") -> dict[str, Any]:
    """An inventory object as docs/agent-protocol.md §6 describes it."""
    return {
        "schema": 1,
        "collected_at": "2025-01-31T12:00:00.000Z",
        "gpu_present": gpus > 0,
        "gpu_error": None if gpus else "NVML Shared Library Not Found",
        "driver_version": "550.54.15" if gpus else None,
        "gpus": [
            {"index": index, "name": name, "uuid": f"GPU-{index}", "memory_total_mib": memory_mib,
             "nvlink_active_links": nvlink, "pcie_generation_current": 5, "pcie_width_current": 16}
            for index in range(gpus)
        ],
        "host": {"hostname": "gpu-node-07", "machine_id": machine_id, "cpu_model": "Xeon", "cpu_cores_logical": 8},
        "software": {"agent_version": AGENT_VERSION, "torch_version": None, "torch_error": "not installed"},
    }


def register_body(token: str, *, machine_id: str = "machine-0", version: str = AGENT_VERSION,
                  job_kinds=("inventory",), operations=()) -> dict[str, Any]:
    return {
        "registration_token": token,
        "name": f"node-{machine_id}",
        "agent_version": version,
        "protocol_version": 1,
        "machine_id": machine_id,
        "job_kinds": list(job_kinds),
        "operations": list(operations),
        "inventory": inventory(machine_id=machine_id),
    }


def register_agent(pool: AgentPool, *, machine_id: str = "machine-0", job_kinds=("inventory",), operations=()):
    """Register an agent through the service: (agent, agent token)."""
    _token, secret = registration_token_create(pool=pool)
    registration = agent_register(
        registration_token=secret, name=f"node-{machine_id}", agent_version=AGENT_VERSION, protocol_version=1,
        machine_id=machine_id, job_kinds=list(job_kinds), operations=list(operations),
        inventory=inventory(machine_id=machine_id),
    )
    return registration.agent, registration.agent_token


@dataclass
class ClaimedJob:
    job_id: str
    attempt: int
    job_token: str
    body: dict[str, Any] = field(default_factory=dict)


class AgentApi:
    """One agent's view of the server, through DRF's test client (no network)."""

    def __init__(self, token: str | None = None, *, version: str | None = AGENT_VERSION) -> None:
        self.client = APIClient()
        self.token = token
        self.version = version

    def _headers(self, job_token: str | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {}
        if self.token is not None:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {self.token}"
        if self.version is not None:
            headers["HTTP_X_AGENT_VERSION"] = self.version
        if job_token is not None:
            headers["HTTP_X_JOB_TOKEN"] = job_token
        headers.update(extra or {})
        return headers

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None, job_token: str | None = None,
             headers: dict[str, str] | None = None):
        data = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
        return self.client.generic("POST", PREFIX + path, data, content_type="application/json",
                                   **self._headers(job_token, headers))

    def register(self, body: dict[str, Any]):
        return self.post("/register", body)

    def heartbeat(self, **overrides):
        body = {"agent_version": self.version or AGENT_VERSION, "state": "idle", "current_job": None,
                "job_kinds": ["inventory"], "uptime_s": 12.5, "spool_pending": 0, "inventory_sha256": "a" * 64}
        body.update(overrides)
        return self.post("/heartbeat", body)

    def claim(self, job_kinds=("inventory",), operations=()):
        return self.post("/jobs/claim", {"job_kinds": list(job_kinds), "operations": list(operations), "wait_s": 0})

    def claim_job(self, job_kinds=("inventory",), operations=()) -> ClaimedJob:
        response = self.claim(job_kinds, operations)
        assert response.status_code == 200, (response.status_code, response.content)
        body = response.json()
        return ClaimedJob(body["job"]["id"], body["attempt"], body["job_token"], body)

    def start(self, job: ClaimedJob, *, attempt: int | None = None, inventory_body: dict | None = None):
        body = {"attempt": attempt or job.attempt, "started_at": "2025-01-31T12:00:01.000Z"}
        if inventory_body is not None:
            body["inventory"] = inventory_body
        return self.post(f"/jobs/{job.job_id}/start", body, job_token=job.job_token)

    def lease(self, job: ClaimedJob, *, progress: float | None = None):
        return self.post(f"/jobs/{job.job_id}/lease", {"attempt": job.attempt, "progress": progress},
                         job_token=job.job_token)

    def events(self, job: ClaimedJob, seq: int, events: list[dict[str, Any]]):
        return self.post(f"/jobs/{job.job_id}/events?seq={seq}", {"attempt": job.attempt, "events": events},
                         job_token=job.job_token)

    def put_artifact(self, job: ClaimedJob, content: bytes, *, name: str = "requests.jsonl.gz",
                     sha256: str | None = None, media_type: str = "application/gzip"):
        digest = sha256 or hashlib.sha256(content).hexdigest()
        return self.client.generic(
            "PUT", f"{PREFIX}/jobs/{job.job_id}/artifacts/{digest}", content, content_type=media_type,
            **self._headers(job.job_token, {"HTTP_X_ARTIFACT_NAME": name}),
        )

    def finish(self, job: ClaimedJob, *, status: str = "succeeded", result: dict | None = None,
               key: str | None = None, artifacts: list[dict] | None = None, event_count: int = 0,
               raw: bytes | None = None, **fields):
        body = {
            "attempt": job.attempt,
            "status": status,
            "started_at": "2025-01-31T12:00:01.000Z",
            "finished_at": "2025-01-31T12:03:10.000Z",
            "result": result if result is not None else ({"ok": True} if status == "succeeded" else None),
            "artifacts": artifacts or [],
            "error": None,
            "event_count": event_count,
            "agent_version": self.version or AGENT_VERSION,
            **fields,
        }
        data = raw if raw is not None else json.dumps(body, sort_keys=True).encode()
        return self.post(f"/jobs/{job.job_id}/finish", raw=data, job_token=job.job_token,
                         headers={"HTTP_IDEMPOTENCY_KEY": key or uuid.uuid4().hex})


def progress_event(fraction: float, message: str = "", ts: str = "2025-01-31T12:00:05.000Z") -> dict[str, Any]:
    return {"kind": "progress", "ts": ts, "data": {"fraction": fraction, "message": message}}


def telemetry_event(memory_used_mib: int, power_w: float, ts: str = "2025-01-31T12:00:06.000Z") -> dict[str, Any]:
    return {"kind": "telemetry", "ts": ts,
            "data": {"gpus": [{"index": 0, "memory_used_mib": memory_used_mib, "power_w": power_w}]}}
