"""Lease renewal from its own thread, so a busy job cannot starve it (docs/agent-protocol.md §3.5).

The reply's `cancel_requested` sets `cancel_requested`; a 409 sets `superseded` (abort without finishing);
a 401/426 sets `fatal` (the agent stops). For a job of a job group (§8), the reply's `group` says whether every rank
is claimed: until then the lease is renewed every `group.poll_s`; once ready, the rendezvous (rank 0's address and
port) is written to `rendezvous_path`, where the job process reads it (`JobContext.wait_rendezvous`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dossier_agent.client import AgentClient
from dossier_agent.errors import AgentTooOld, AttemptSuperseded, AuthenticationFailed, PermanentError, TransientError
from dossier_agent.retry import Backoff, call_with_retries
from dossier_agent.structured_log import log

logger = logging.getLogger(__name__)
# The 409 codes a renewal gets once the attempt has ended on the server (its finish arrived).
FINISHED_CODES = frozenset({"attempt_not_running", "attempt_finished"})


class LeaseKeeper:
    def __init__(
        self,
        client: AgentClient,
        *,
        job_id: str,
        attempt: int,
        job_token: str,
        renew_every_s: float = 30.0,
        progress: Callable[[], float | None] = lambda: None,
        backoff: Backoff | None = None,
        rendezvous_path: Path | None = None,
    ):
        self._client = client
        self._job_id = job_id
        self._attempt = attempt
        self._job_token = job_token
        self.renew_every_s = renew_every_s
        self._progress = progress
        self._backoff = backoff or Backoff(base_s=1.0, cap_s=10.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{job_id}", daemon=True)
        self.cancel_requested = threading.Event()
        self.superseded = threading.Event()
        self.delivering = threading.Event()  # the job process has ended; its finish may reach the server first
        self.fatal = threading.Event()
        self.fatal_error: PermanentError | None = None
        self.cancel_reason = ""
        self.renewals = 0
        self.last_reply: dict[str, Any] | None = None
        self._rendezvous_path = rendezvous_path
        self._wake = threading.Event()
        self.rendezvous: dict[str, Any] | None = None

    def apply_reply(self, reply: dict[str, Any]) -> None:
        """Take the intervals and the cancel flag from a start or lease reply."""
        self.last_reply = reply
        lease = reply.get("lease") or {}
        if lease.get("renew_every_s"):
            self.renew_every_s = float(lease["renew_every_s"])
        if reply.get("cancel_requested") and not self.cancel_requested.is_set():
            self.cancel_reason = str(reply.get("cancel_reason") or "")
            self.cancel_requested.set()
            log(logger, logging.INFO, "cancel requested", job=self._job_id, reason=self.cancel_reason)
        group = reply.get("group")
        if isinstance(group, dict):
            self._apply_group(group)

    def _apply_group(self, group: dict[str, Any]) -> None:
        if group.get("ready") and group.get("master_addr") and group.get("master_port"):
            rendezvous = {key: group[key] for key in ("group_id", "generation", "master_addr", "master_port")
                          if key in group}
            if rendezvous != self.rendezvous:
                self.rendezvous = rendezvous
                log(logger, logging.INFO, "group ready", job=self._job_id, **rendezvous)
                if self._rendezvous_path is not None:
                    temporary = self._rendezvous_path.with_name(self._rendezvous_path.name + ".tmp")
                    temporary.write_text(json.dumps(rendezvous))
                    os.replace(temporary, self._rendezvous_path)  # the job never reads half a file
        elif group.get("poll_s"):
            # Not every rank is claimed yet: ask again soon, so the rendezvous reaches this rank within seconds.
            self.renew_every_s = min(self.renew_every_s, float(group["poll_s"]))
            self._wake.set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def renew_once(self) -> None:
        deadline = time.monotonic() + self.renew_every_s
        reply = call_with_retries(
            lambda: self._client.renew_lease(
                self._job_id, self._job_token, {"attempt": self._attempt, "progress": self._progress()}
            ),
            backoff=self._backoff,
            stop=self._stop,
            deadline=deadline,
        )
        self._backoff.reset()
        self.renewals += 1
        self.apply_reply(reply)

    def _wait(self) -> bool:
        """Sleep one renewal interval (cut short when the interval shrinks); True when asked to stop."""
        started = time.monotonic()
        while not self._stop.is_set():
            remaining = started + self.renew_every_s - time.monotonic()
            if remaining <= 0:
                return False
            self._wake.wait(remaining)
            self._wake.clear()
        return True

    def _run(self) -> None:
        while not self._wait():
            try:
                self.renew_once()
            except AttemptSuperseded as error:
                # While the finish is being delivered, a renewal answered "not running"/"finished" only means the
                # finish got there first: the normal end of a lease, not a warning.
                finished_first = self.delivering.is_set() and error.code in FINISHED_CODES
                log(logger, logging.INFO if finished_first else logging.WARNING,
                    "attempt already finished" if finished_first else "attempt superseded",
                    job=self._job_id, attempt=self._attempt, error=error.code, detail=error.detail)
                self.superseded.set()
                return
            except (AuthenticationFailed, AgentTooOld) as error:
                self.fatal_error = error
                self.fatal.set()
                return
            except PermanentError as error:  # 403/404: this attempt is not ours any more
                log(logger, logging.ERROR, "lease refused", job=self._job_id, status=error.status, error=error.code,
                    detail=error.detail)
                self.superseded.set()
                return
            except TransientError as error:
                log(logger, logging.WARNING, "lease renewal failed; will retry", job=self._job_id, error=error.code,
                    detail=error.detail)
