"""Heartbeats from their own thread every `heartbeat_interval_s`; the reply's commands go to the run loop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from dossier_agent.client import AgentClient
from dossier_agent.errors import AgentTooOld, AuthenticationFailed, PermanentError, TransientError
from dossier_agent.structured_log import log

logger = logging.getLogger(__name__)


class HeartbeatLoop:
    def __init__(
        self,
        client: AgentClient,
        *,
        payload: Callable[[], dict[str, Any]],
        on_reply: Callable[[dict[str, Any]], None],
        on_fatal: Callable[[PermanentError], None],
        stop: threading.Event,
        interval_s: float = 30.0,
    ):
        self._client = client
        self._payload = payload
        self._on_reply = on_reply
        self._on_fatal = on_fatal
        self._stop = stop
        self.interval_s = interval_s
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def beat(self) -> None:
        reply = self._client.heartbeat(self._payload())
        self.sent += 1
        if reply.get("heartbeat_interval_s"):
            self.interval_s = float(reply["heartbeat_interval_s"])
        self._on_reply(reply)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.beat()
            except (AuthenticationFailed, AgentTooOld) as error:
                self._on_fatal(error)
                return
            except (TransientError, PermanentError) as error:
                log(logger, logging.WARNING, "heartbeat failed", status=error.status, error=error.code,
                    detail=error.detail)
            if self._stop.wait(self.interval_s):
                return
