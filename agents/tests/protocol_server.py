"""An in-process HTTP server that speaks enough of docs/agent-protocol.md to test the agent against real HTTP.

State lives in memory; tests queue jobs, cancel or supersede attempts, inject failures, and read what arrived.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

PREFIX = "/api/agent/v1"


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@dataclass
class Attempt:
    number: int
    token: str
    agent_id: str
    state: str = "claimed"  # claimed | running | finished | superseded
    events: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: dict[str, Any] | None = None
    finish_key: str | None = None
    finish_body_sha256: str | None = None
    finish_reply: tuple[int, dict[str, Any]] | None = None
    finish_calls: int = 0
    lease_renewals: int = 0
    started_inventory: dict[str, Any] | None = None


@dataclass
class Job:
    id: str
    kind: str
    spec: dict[str, Any]
    status: str = "queued"
    cancel_requested: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    offline_run_id: str | None = None

    @property
    def current(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None


@dataclass
class Fault:
    method: str
    path_pattern: str
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    remaining: int


class ProtocolState:
    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.registration_tokens = {"dsr_" + secrets.token_urlsafe(32)}
        self.agents: dict[str, dict[str, Any]] = {}  # agent token → agent
        self.jobs: dict[str, Job] = {}
        self.job_tokens: dict[str, tuple[str, int]] = {}  # job token → (job id, attempt)
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, int]] = []
        self.heartbeats: list[dict[str, Any]] = []
        self.min_agent_version = "0.0.1"
        self.max_artifact_bytes = 1024 * 1024
        self.lease_renew_every_s = 30.0
        self.heartbeat_interval_s = 30.0
        self.claim_interval_s = 0.2
        self.commands: list[dict[str, str]] = []
        self._next_id = 100

    @property
    def registration_token(self) -> str:
        return next(iter(self.registration_tokens))

    def add_job(self, kind: str, spec: dict[str, Any] | None = None) -> str:
        with self.lock:
            self._next_id += 1
            job = Job(id=str(self._next_id), kind=kind, spec=spec or {})
            self.jobs[job.id] = job
            return job.id

    def new_attempt(self, job: Job, agent_id: str) -> Attempt:
        token = "dsj_" + secrets.token_urlsafe(32)
        if job.current is not None and job.current.state in {"claimed", "running"}:
            job.current.state = "superseded"
        attempt = Attempt(number=len(job.attempts) + 1, token=token, agent_id=agent_id)
        job.attempts.append(attempt)
        self.job_tokens[token] = (job.id, attempt.number)
        return attempt

    def supersede(self, job_id: str) -> None:
        """What the reaper does: the current attempt is lost, the job goes back to the queue."""
        with self.lock:
            job = self.jobs[job_id]
            job.current.state = "superseded"
            job.status = "queued"

    def cancel(self, job_id: str) -> None:
        with self.lock:
            self.jobs[job_id].cancel_requested = True

    def inject(self, method: str, path_pattern: str, status: int, *, times: int = 1,
               headers: dict[str, str] | None = None, error: str = "injected") -> None:
        with self.lock:
            self.faults.append(Fault(method, path_pattern, status, headers or {},
                                     {"error": error, "detail": f"injected {status}"}, times))

    def wait_for(self, predicate, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self.lock:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.lock.wait(remaining)
            return True

    def finished_attempts(self, job_id: str) -> list[Attempt]:
        return [attempt for attempt in self.jobs[job_id].attempts if attempt.finish is not None]

    def count(self, method: str, pattern: str, status: int | None = None) -> int:
        return sum(1 for m, p, s in self.requests if m == method and re.search(pattern, p)
                   and (status is None or s == status))


class Reply(Exception):
    def __init__(self, status: int, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None):
        self.status, self.body, self.headers = status, body, headers or {}


def _error(status: int, code: str, detail: str, **extra: Any) -> Reply:
    return Reply(status, {"error": code, "detail": detail, **extra})


class Handler(BaseHTTPRequestHandler):
    server: ProtocolHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        return

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        super().finish()

    @property
    def state(self) -> ProtocolState:
        return self.server.state

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            with self.state.lock:
                self._apply_faults(method, path)
                self._route(method, path, query, raw)
        except Reply as reply:
            self._send(path, method, reply)
            with self.state.lock:
                self.state.lock.notify_all()

    def _apply_faults(self, method: str, path: str) -> None:
        for fault in self.state.faults:
            if fault.method == method and re.search(fault.path_pattern, path) and fault.remaining > 0:
                fault.remaining -= 1
                raise Reply(fault.status, fault.body, fault.headers)

    def _send(self, path: str, method: str, reply: Reply) -> None:
        self.state.requests.append((method, path, reply.status))
        body = b"" if reply.status == 204 or reply.body is None else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.status != 204:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # -- helpers ---------------------------------------------------------------------------------------------
    def _json(self, raw: bytes) -> dict[str, Any]:
        try:
            value = json.loads(raw)
        except ValueError:
            raise _error(400, "validation_error", "body is not JSON") from None
        if not isinstance(value, dict):
            raise _error(400, "validation_error", "body must be an object")
        return value

    def _check_version(self, version: str | None) -> None:
        if version is None or _version_tuple(version) < _version_tuple(self.state.min_agent_version):
            raise _error(426, "agent_too_old", f"Agent {version} is older than the minimum "
                         f"{self.state.min_agent_version}.", min_agent_version=self.state.min_agent_version,
                         agent_version=version)

    def _agent(self) -> dict[str, Any]:
        header = self.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip()
        agent = self.state.agents.get(token)
        if not header.startswith("Bearer ") or agent is None:
            raise _error(401, "invalid_agent_token", "unknown or revoked agent token")
        self._check_version(self.headers.get("X-Agent-Version"))
        return agent

    def _job_attempt(self, job_id: str, agent: dict[str, Any], body_attempt: int | None) -> tuple[Job, Attempt]:
        job = self.state.jobs.get(job_id)
        if job is None or not any(attempt.agent_id == agent["id"] for attempt in job.attempts):
            raise _error(404, "job_not_found", "no such job for this agent")
        found = self.state.job_tokens.get(self.headers.get("X-Job-Token", ""))
        if found is None or found[0] != job_id:
            raise _error(403, "invalid_job_token", "the job token does not belong to this job")
        attempt = job.attempts[found[1] - 1]
        if body_attempt is not None and body_attempt != attempt.number:
            raise _error(400, "attempt_mismatch", "attempt differs from the job token's attempt")
        return job, attempt

    def _claim_reply(self, job: Job, attempt: Attempt) -> dict[str, Any]:
        return {
            "job": {"id": job.id, "kind": job.kind, "spec": job.spec, "spec_sha256": "0" * 64,
                    "created_at": "2025-01-31T12:00:00.000Z"},
            "attempt": attempt.number, "job_token": attempt.token,
            "lease": self._lease_times(self.state.lease_renew_every_s, 60), "cancel_requested": job.cancel_requested,
        }

    # -- routes ----------------------------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict[str, list[str]], raw: bytes) -> None:
        if not path.startswith(PREFIX):
            raise _error(404, "not_found", "unknown path")
        path = path[len(PREFIX):]
        if method == "POST" and path == "/register":
            self._register(self._json(raw))
        agent = self._agent()
        if method == "POST" and path == "/heartbeat":
            self.state.heartbeats.append(self._json(raw))
            commands, self.state.commands = self.state.commands, []
            raise Reply(200, {"server_time": "2025-01-31T12:00:00.000Z", "commands": commands,
                              "heartbeat_interval_s": self.state.heartbeat_interval_s,
                              "claim_interval_s": self.state.claim_interval_s})
        if method == "POST" and path == "/jobs/claim":
            self._claim(agent, self._json(raw))
        if method == "POST" and path == "/jobs/offline":
            self._offline(agent, self._json(raw))
        match = re.fullmatch(r"/jobs/([^/]+)/(start|lease|events|finish)", path)
        if method == "POST" and match:
            job_id, action = unquote(match.group(1)), match.group(2)
            if action == "finish":
                self._finish(agent, job_id, raw)
            body = self._json(raw)
            job, attempt = self._job_attempt(job_id, agent, body.get("attempt"))
            getattr(self, f"_{action}")(job, attempt, body, query)
        match = re.fullmatch(r"/jobs/([^/]+)/artifacts/([^/]+)", path)
        if method == "PUT" and match:
            self._artifact(agent, unquote(match.group(1)), match.group(2), raw)
        raise _error(404, "not_found", "unknown path")

    def _register(self, body: dict[str, Any]) -> None:
        if body.get("registration_token") not in self.state.registration_tokens:
            raise _error(401, "invalid_registration_token", "unknown or revoked registration token")
        self._check_version(body.get("agent_version"))
        for key in ("name", "agent_version", "machine_id", "job_kinds", "operations", "inventory"):
            if key not in body:
                raise _error(400, "validation_error", f"{key} is required", fields={key: ["required"]})
        token = "dsa_" + secrets.token_urlsafe(32)
        agent = {"id": str(len(self.state.agents) + 1), "registration": body}
        self.state.agents[token] = agent
        raise Reply(201, {
            "agent_id": agent["id"], "agent_token": token, "pool": {"id": "1", "name": "test-pool"},
            "heartbeat_interval_s": self.state.heartbeat_interval_s, "claim_interval_s": self.state.claim_interval_s,
            "lease_interval_s": self.state.lease_renew_every_s, "min_agent_version": self.state.min_agent_version,
            "server_time": "2025-01-31T12:00:00.000Z",
            "limits": {"max_body_bytes": 1048576, "max_events_per_batch": 500,
                       "max_artifact_bytes": self.state.max_artifact_bytes, "max_job_artifact_bytes": 10485760},
        })

    def _claim(self, agent: dict[str, Any], body: dict[str, Any]) -> None:
        for job in self.state.jobs.values():
            if job.status == "queued" and job.kind in body.get("job_kinds", []) and job.offline_run_id is None:
                job.status = "claimed"
                attempt = self.state.new_attempt(job, agent["id"])
                raise Reply(200, self._claim_reply(job, attempt))
        raise Reply(204)

    def _offline(self, agent: dict[str, Any], body: dict[str, Any]) -> None:
        for job in self.state.jobs.values():
            if job.offline_run_id == body["offline_run_id"]:
                attempt = job.current
                del self.state.job_tokens[attempt.token]
                attempt.token = "dsj_" + secrets.token_urlsafe(32)
                self.state.job_tokens[attempt.token] = (job.id, attempt.number)
                raise Reply(200, {**self._claim_reply(job, attempt), "offline": True})
        job_id = self.state.add_job(body["kind"], body["spec"])
        job = self.state.jobs[job_id]
        job.offline_run_id, job.status = body["offline_run_id"], "claimed"
        attempt = self.state.new_attempt(job, agent["id"])
        raise Reply(201, {**self._claim_reply(job, attempt), "offline": True})

    def _gone(self, job: Job, attempt: Attempt) -> None:
        if attempt is not job.current or attempt.state == "superseded":
            raise _error(409, "attempt_superseded", f"attempt {attempt.number} of job {job.id} was superseded")
        if attempt.state == "finished":
            raise _error(409, "attempt_finished", "attempt already finished")

    def _start(self, job: Job, attempt: Attempt, body: dict[str, Any], query: Any) -> None:
        self._gone(job, attempt)
        attempt.state, job.status = "running", "running"
        attempt.started_inventory = body.get("inventory")
        raise Reply(200, {"job_id": job.id, "attempt": attempt.number, "status": "running",
                          "lease": self._lease_times(self.state.lease_renew_every_s, 90),
                          "cancel_requested": job.cancel_requested})

    def _lease(self, job: Job, attempt: Attempt, body: dict[str, Any], query: Any) -> None:
        self._gone(job, attempt)
        attempt.lease_renewals += 1
        raise Reply(200, {"lease": self._lease_times(self.state.lease_renew_every_s, 90),
                          "cancel_requested": job.cancel_requested, "cancel_reason": "test"})

    @staticmethod
    def _lease_times(renew_every_s: float, ttl_s: float) -> dict[str, Any]:
        return {"expires_at": "2030-01-01T00:00:00.000Z", "ttl_s": ttl_s, "renew_every_s": renew_every_s}

    def _events(self, job: Job, attempt: Attempt, body: dict[str, Any], query: dict[str, list[str]]) -> None:
        try:
            seq = int(query["seq"][0])
        except (KeyError, ValueError):
            raise _error(400, "validation_error", "seq is required") from None
        events = body.get("events")
        if not isinstance(events, list) or not events:
            raise _error(400, "validation_error", "events must be a non-empty list")
        stored = duplicates = 0
        for offset, event in enumerate(events):
            if seq + offset in attempt.events:
                duplicates += 1
            else:
                attempt.events[seq + offset] = event
                stored += 1
        raise Reply(200, {"stored": stored, "duplicates": duplicates, "next_seq": seq + len(events)})

    def _artifact(self, agent: dict[str, Any], job_id: str, sha256: str, raw: bytes) -> None:
        job, attempt = self._job_attempt(job_id, agent, None)
        if len(raw) > self.state.max_artifact_bytes:
            raise _error(413, "artifact_too_large", "artifact over the size limit")
        if hashlib.sha256(raw).hexdigest() != sha256:
            raise _error(400, "digest_mismatch", "the body does not hash to its name")
        created = sha256 not in job.artifacts
        job.artifacts.setdefault(sha256, {
            "data": raw, "name": unquote(self.headers.get("X-Artifact-Name", "")),
            "media_type": self.headers.get("Content-Type"), "attempt": attempt.number,
        })
        raise Reply(201 if created else 200, {"sha256": sha256, "size": len(raw), "created": created})

    def _finish(self, agent: dict[str, Any], job_id: str, raw: bytes) -> None:
        body = self._json(raw)
        job, attempt = self._job_attempt(job_id, agent, body.get("attempt"))
        key = self.headers.get("Idempotency-Key")
        if not key:
            raise _error(400, "validation_error", "Idempotency-Key is required")
        attempt.finish_calls += 1
        digest = hashlib.sha256(raw).hexdigest()
        if attempt.finish_key is not None:
            if key != attempt.finish_key:
                raise _error(409, "attempt_finished", "this attempt already finished under another key")
            if digest != attempt.finish_body_sha256:
                raise _error(409, "idempotency_key_reused", "same key, different body")
            status, reply = attempt.finish_reply
            raise Reply(status, reply, {"Idempotent-Replayed": "true"})
        missing = [item["sha256"] for item in body.get("artifacts", []) if item["sha256"] not in job.artifacts]
        if missing:
            raise _error(400, "artifacts_missing", "listed artifacts were never uploaded", missing=missing)
        canonical = attempt is job.current and attempt.state != "superseded"
        attempt.finish, attempt.finish_key, attempt.finish_body_sha256 = body, key, digest
        if canonical:
            attempt.state = "finished"
            job.status = "queued" if body["status"] == "handed_back" else body["status"]
        reply = {"job_id": job.id, "attempt": attempt.number, "status": body["status"], "canonical": canonical,
                 "recorded_at": "2025-01-31T12:00:00.000Z"}
        attempt.finish_reply = (201, reply)
        raise Reply(201, reply)


class ProtocolHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: ProtocolState, port: int = 0):
        self.connections: set[socket.socket] = set()
        super().__init__(("127.0.0.1", port), Handler)
        self.state = state

    def drop_connections(self) -> None:
        """A stopped server also ends kept-alive connections, as a real outage would."""
        for connection in list(self.connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class ProtocolServer:
    """`with ProtocolServer() as server:` — server.url, server.state; server.stop()/restart() to simulate outages."""

    def __init__(self) -> None:
        self.state = ProtocolState()
        self._httpd: ProtocolHTTPServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ProtocolServer:
        self._httpd = ProtocolHTTPServer(self.state, self.port)
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd.drop_connections()
            self._httpd = None

    def register_agent(self) -> str:
        """An agent token, as if `register` had run."""
        token = "dsa_" + secrets.token_urlsafe(32)
        with self.state.lock:
            self.state.agents[token] = {"id": str(len(self.state.agents) + 1), "registration": {}}
        return token

    def __enter__(self) -> ProtocolServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
