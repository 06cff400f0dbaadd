"""What a job module gets as `ctx`: its identity, spec, a private work folder, and the ways to report back.

Job modules (`dossier_agent/jobs/<kind>.py`) define `KIND: str` and `run(spec: dict, ctx: JobContext) -> dict`.
Everything they report goes to the spool first (events, artifacts); the agent uploads it.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dossier_agent.errors import JobCancelled
from dossier_agent.event_writer import EventWriter
from dossier_agent.spool import AttemptSpool
from dossier_agent.structured_log import log

__all__ = ["JobCancelled", "JobContext"]

_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
logger = logging.getLogger("dossier_agent.job")


class JobContext:
    def __init__(
        self,
        *,
        job_id: str,
        attempt: int,
        kind: str,
        spec: dict[str, Any],
        workdir: Path,
        inventory: dict[str, Any],
        events: EventWriter,
        spool: AttemptSpool,
        is_cancelled: Callable[[], bool],
        operations: dict[str, dict[str, Any]] | None = None,
        max_artifact_bytes: int | None = None,
    ):
        self.job_id = job_id
        self.attempt = attempt
        self.kind = kind
        self.spec = spec
        self.workdir = workdir
        self.inventory = inventory
        self.operations = operations or {}
        self._events = events
        self._spool = spool
        self._is_cancelled = is_cancelled
        self._max_artifact_bytes = max_artifact_bytes
        self.artifacts: list[dict[str, Any]] = []

    def log(self, message: str, **fields: Any) -> None:
        """A `log` event (and a line in the agent's log). `level=` among the fields sets the level (default info)."""
        level = str(fields.pop("level", "info")).lower()
        if level not in _LOG_LEVELS:
            raise ValueError(f"log level must be one of {sorted(_LOG_LEVELS)}, got {level!r}")
        self._events.append("log", {"level": level, "message": str(message), "fields": fields})
        log(logger, _LOG_LEVELS[level], str(message), job=self.job_id, kind=self.kind, **fields)

    def progress(self, fraction: float, message: str = "") -> None:
        fraction = float(fraction)
        if math.isnan(fraction) or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"progress fraction must be between 0 and 1, got {fraction}")
        self._events.append("progress", {"fraction": fraction, "message": str(message)})

    def event(self, kind: str, data: dict[str, Any]) -> None:
        """Any event kind the job documents (e.g. `measurement`); `kind` matches ^[a-z][a-z0-9_]{0,31}$."""
        self._events.append(kind, data)

    def add_artifact(self, data: bytes, name: str, media_type: str) -> str:
        """Spool raw bytes as a content-addressed artifact; returns its SHA-256 (hex)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"artifact data must be bytes, got {type(data).__name__}")
        if not name or "/" in name or "\\" in name or len(name) > 200:
            raise ValueError(f"artifact name must be a file name of 1-200 characters without '/', got {name!r}")
        if not media_type or "/" not in media_type:
            raise ValueError(f"artifact media type must look like 'type/subtype', got {media_type!r}")
        data = bytes(data)
        if self._max_artifact_bytes is not None and len(data) > self._max_artifact_bytes:
            raise ValueError(
                f"artifact {name} is {len(data)} bytes; the server accepts at most {self._max_artifact_bytes}"
            )
        record = self._spool.write_artifact(data, name, media_type)
        self.artifacts.append(record.as_dict())
        return record.sha256

    def wait_rendezvous(self, timeout_s: float, poll_s: float = 0.1) -> dict[str, Any] | None:
        """For a job of a job group: wait until the server says every rank is claimed, then return
        {"master_addr": …, "master_port": …, "generation": …}; None on timeout. Raises JobCancelled when the job is
        cancelled meanwhile. The agent's lease thread writes what the server said (docs/agent-protocol.md §8)."""
        path = self._spool.rendezvous_path
        deadline = time.monotonic() + float(timeout_s)
        while True:
            if path.exists():
                return json.loads(path.read_text())
            self.raise_if_cancelled()
            if time.monotonic() >= deadline:
                return None
            time.sleep(poll_s)

    def cancelled(self) -> bool:
        """True once the server asked to cancel the job or the agent is shutting down: stop soon, then return."""
        return self._is_cancelled()

    def raise_if_cancelled(self) -> None:
        if self.cancelled():
            raise JobCancelled("the job was cancelled")
