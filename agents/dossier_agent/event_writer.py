"""Job events into the spool: numbered from 0 per attempt, buffered briefly, written as batch files.

A batch is written when it reaches `max_batch_events` or `max_batch_bytes`, every `flush_interval_s`, and on close.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from dossier_agent.spool import AttemptSpool
from dossier_agent.timeutil import utc_now_iso

EVENT_KIND = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class EventWriter:
    def __init__(
        self,
        spool: AttemptSpool,
        *,
        max_batch_events: int = 200,
        max_batch_bytes: int = 256 * 1024,
        flush_interval_s: float = 1.0,
    ):
        self._spool = spool
        self._max_batch_events = max_batch_events
        self._max_batch_bytes = max_batch_bytes
        self._flush_interval_s = flush_interval_s
        self._lock = threading.Lock()
        self._buffer: list[dict[str, Any]] = []
        self._buffer_bytes = 0
        self._next_seq = spool.next_seq()
        self._latest_progress: tuple[float, str] | None = None
        self._progress_written: tuple[float, str] | None = None
        self._closed = threading.Event()
        self._flusher = threading.Thread(target=self._flush_periodically, name="event-flusher", daemon=True)
        self._flusher.start()

    @property
    def event_count(self) -> int:
        """Sequence numbers handed out so far (written or still buffered)."""
        with self._lock:
            return self._next_seq + len(self._buffer)

    def append(self, kind: str, data: dict[str, Any]) -> int:
        if not isinstance(kind, str) or not EVENT_KIND.match(kind):
            raise ValueError(f"event kind must match {EVENT_KIND.pattern}, got {kind!r}")
        if not isinstance(data, dict):
            raise TypeError(f"event data must be a dict, got {type(data).__name__}")
        event = {"kind": kind, "ts": utc_now_iso(), "data": data}
        size = len(json.dumps(event, ensure_ascii=False, allow_nan=False))  # raises on data JSON cannot carry
        if size > self._max_batch_bytes:
            raise ValueError(f"one event of {size} bytes exceeds the batch limit of {self._max_batch_bytes} bytes")
        with self._lock:
            if self._closed.is_set():
                raise RuntimeError("the job's event stream is closed")
            if self._buffer_bytes + size > self._max_batch_bytes:
                self._flush_locked()
            seq = self._next_seq + len(self._buffer)
            self._buffer.append(event)
            self._buffer_bytes += size
            if kind == "progress":
                self._latest_progress = (float(data.get("fraction", 0.0)), str(data.get("message", "")))
            if len(self._buffer) >= self._max_batch_events:
                self._flush_locked()
            return seq

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._buffer:
            self._spool.write_event_batch(self._next_seq, self._buffer)
            self._next_seq += len(self._buffer)
            self._buffer = []
            self._buffer_bytes = 0
        if self._latest_progress is not None and self._latest_progress != self._progress_written:
            self._spool.write_progress(*self._latest_progress)
            self._progress_written = self._latest_progress

    def _flush_periodically(self) -> None:
        while not self._closed.wait(self._flush_interval_s):
            self.flush()

    def close(self) -> None:
        with self._lock:
            self._flush_locked()
            self._closed.set()
        self._flusher.join(timeout=self._flush_interval_s + 1)
