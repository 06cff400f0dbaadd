"""The one error type of the agent protocol: an HTTP status, a machine-readable code and a sentence.

Services raise it; the agent API turns it into the error body of docs/agent-protocol.md §1.1.
"""

from __future__ import annotations

from typing import Any


class ProtocolError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = str(detail)
        self.fields = fields
        self.extra = extra or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "detail": self.detail}
        if self.fields is not None:
            body["fields"] = self.fields
        body.update(self.extra)
        return body
