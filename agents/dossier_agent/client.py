"""HTTP client of the agent protocol (docs/agent-protocol.md): one method per endpoint, one request per call.

Each error reply becomes a typed exception (errors.py); retrying is the caller's choice (retry.call_with_retries).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx

from dossier_agent import API_PREFIX, __version__
from dossier_agent.errors import (
    AgentTooOld,
    AttemptSuperseded,
    AuthenticationFailed,
    PermanentError,
    TransientError,
)
from dossier_agent.retry import is_retryable_status, parse_retry_after

_ATTEMPT_GONE = {"attempt_superseded", "attempt_not_running", "attempt_finished"}


def encode_json(value: Any) -> bytes:
    """The exact bytes sent for a JSON body; stable for the same value (finish idempotency compares bytes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


class AgentClient:
    def __init__(
        self,
        server_url: str,
        *,
        agent_token: str | None = None,
        timeout_s: float = 30.0,
        verify: bool | str = True,
        transport: httpx.BaseTransport | None = None,
    ):
        self.server_url = server_url.rstrip("/")
        self.agent_token = agent_token
        self._settings = {"timeout_s": timeout_s, "verify": verify, "transport": transport}
        self._http = httpx.Client(
            base_url=self.server_url + API_PREFIX,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            verify=verify,
            transport=transport,
            headers={"User-Agent": f"dossier-agent/{__version__}", "X-Agent-Version": __version__},
        )

    def close(self) -> None:
        self._http.close()

    def clone(self) -> AgentClient:
        """A new client with the same settings, for another thread (one connection pool per thread)."""
        return AgentClient(self.server_url, agent_token=self.agent_token, **self._settings)

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transport ----------------------------------------------------------------------------------------
    def _headers(self, job_token: str | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {}
        if self.agent_token:
            headers["Authorization"] = f"Bearer {self.agent_token}"
        if job_token:
            headers["X-Job-Token"] = job_token
        headers.update(extra or {})
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> tuple[int, dict[str, Any] | None]:
        all_headers = dict(headers or {})
        if body is not None:
            all_headers.setdefault("Content-Type", content_type)
        try:
            response = self._http.request(method, path, content=body, headers=all_headers, params=params)
        except httpx.TransportError as error:
            raise TransientError(0, "network_error", f"{type(error).__name__}: {error}") from error
        if response.status_code == 204:
            return 204, None
        if 200 <= response.status_code < 300:
            try:
                return response.status_code, response.json()
            except ValueError:
                raise TransientError(
                    response.status_code, "bad_reply", "the server's 2xx reply is not JSON"
                ) from None
        raise self._error(response)

    @staticmethod
    def _error(response: httpx.Response) -> Exception:
        status = response.status_code
        try:
            body = response.json()
            if not isinstance(body, dict):
                body = {}
        except ValueError:
            body = {}
        code = str(body.get("error") or f"http_{status}")
        detail = str(body.get("detail") or response.text[:300] or response.reason_phrase)
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if is_retryable_status(status):
            return TransientError(status, code, detail, body, retry_after)
        if status == 401:
            return AuthenticationFailed(status, code, detail, body)
        if status == 426:
            return AgentTooOld(status, code, detail, body)
        if status == 409 and code in _ATTEMPT_GONE:
            return AttemptSuperseded(status, code, detail, body)
        return PermanentError(status, code, detail, body, retry_after)

    def _post_json(self, path: str, payload: dict[str, Any], **kwargs: Any) -> tuple[int, dict[str, Any] | None]:
        return self._send("POST", path, body=encode_json(payload), **kwargs)

    # -- endpoints ----------------------------------------------------------------------------------------
    def register(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return self._post_json("/register", payload)

    def heartbeat(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self._post_json("/heartbeat", payload, headers=self._headers())[1]

    def claim(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The claimed job (job, attempt, job_token, lease), or None when there is none (204)."""
        return self._post_json("/jobs/claim", payload, headers=self._headers())[1]

    def create_offline_job(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self._post_json("/jobs/offline", payload, headers=self._headers())[1]

    def start(self, job_id: str, job_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self._post_json(f"/jobs/{quote(job_id, safe='')}/start", payload, headers=self._headers(job_token))[1]

    def renew_lease(self, job_id: str, job_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self._post_json(f"/jobs/{quote(job_id, safe='')}/lease", payload, headers=self._headers(job_token))[1]

    def post_events(self, job_id: str, job_token: str, seq: int, payload: dict[str, Any]) -> dict[str, Any]:
        return self._post_json(
            f"/jobs/{quote(job_id, safe='')}/events", payload, headers=self._headers(job_token), params={"seq": seq}
        )[1]

    def put_artifact(
        self, job_id: str, job_token: str, sha256: str, data: bytes, name: str, media_type: str
    ) -> tuple[int, dict[str, Any]]:
        return self._send(
            "PUT",
            f"/jobs/{quote(job_id, safe='')}/artifacts/{sha256}",
            body=data,
            content_type=media_type,
            headers=self._headers(job_token, {"X-Artifact-Name": quote(name, safe="")}),
        )

    def finish(self, job_id: str, job_token: str, idempotency_key: str, body: bytes) -> tuple[int, dict[str, Any]]:
        return self._send(
            "POST",
            f"/jobs/{quote(job_id, safe='')}/finish",
            body=body,
            headers=self._headers(job_token, {"Idempotency-Key": idempotency_key}),
        )
