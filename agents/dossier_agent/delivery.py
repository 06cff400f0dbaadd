"""Uploads an attempt's spool in protocol order — event batches, artifacts, then finish — deleting each item only
after a 2xx. A 4xx that a retry cannot fix moves the item to the spool's `rejected/` folder; transient failures and
fatal ones (401, 426) propagate to the caller.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from dossier_agent.client import AgentClient, encode_json
from dossier_agent.errors import AgentTooOld, AuthenticationFailed, PermanentError, TransientError
from dossier_agent.executor import build_finish_payload
from dossier_agent.retry import Backoff
from dossier_agent.spool import AttemptSpool, Spool, read_json
from dossier_agent.structured_log import log
from dossier_agent.timeutil import utc_now_iso

logger = logging.getLogger(__name__)


def _reply_of(error: PermanentError) -> dict[str, Any]:
    return {
        "status": error.status, "error": error.code, "detail": error.detail, "body": error.body, "at": utc_now_iso(),
    }


def _is_fatal(error: PermanentError) -> bool:
    return isinstance(error, (AuthenticationFailed, AgentTooOld))


def finish_body(finish: dict[str, Any], attempt_number: int) -> bytes:
    """The same bytes for every resend of one finish: the server compares them under the Idempotency-Key."""
    return encode_json({**finish["payload"], "attempt": attempt_number})


def deliver_attempt(attempt: AttemptSpool, client: AgentClient) -> bool:
    """Upload what is spooled. True when the attempt is fully delivered and its folder removed."""
    identity = attempt.server_identity()
    if identity is None:
        return False  # an offline run not yet announced to the server: `replay` does that first
    job_id, number, token = str(identity["job_id"]), int(identity["attempt"]), identity["job_token"]
    for batch_path in attempt.pending_event_batches():
        batch = read_json(batch_path)
        try:
            reply = client.post_events(job_id, token, batch["seq"], {"attempt": number, "events": batch["events"]})
        except PermanentError as error:
            if _is_fatal(error):
                raise
            attempt.reject(batch_path, _reply_of(error))
            log(logger, logging.ERROR, "event batch refused", job=job_id, seq=batch["seq"], error=error.code,
                detail=error.detail)
            continue
        batch_path.unlink(missing_ok=True)
        log(logger, logging.DEBUG, "events delivered", job=job_id, seq=batch["seq"], stored=reply.get("stored"))
    for record in attempt.pending_artifacts():
        path = attempt.artifact_path(record.sha256)
        try:
            client.put_artifact(job_id, token, record.sha256, path.read_bytes(), record.name, record.media_type)
        except PermanentError as error:
            if _is_fatal(error):
                raise
            attempt.reject(path, _reply_of(error))
            log(logger, logging.ERROR, "artifact refused", job=job_id, sha256=record.sha256, error=error.code,
                detail=error.detail)
            continue
        attempt.artifact_delivered(record.sha256)
        log(logger, logging.INFO, "artifact delivered", job=job_id, name=record.name, size=record.size)
    if attempt.has_pending_uploads():
        return False  # the job is still producing
    finish = attempt.read_finish()
    if finish is not None:
        try:
            status, reply = client.finish(job_id, token, finish["idempotency_key"], finish_body(finish, number))
        except PermanentError as error:
            if _is_fatal(error):
                raise
            attempt.reject(attempt.directory / "finish.json", _reply_of(error))
            log(logger, logging.ERROR, "finish refused", job=job_id, attempt=number, error=error.code,
                detail=error.detail)
            attempt.remove()
            return True
        log(logger, logging.INFO, "finish delivered", job=job_id, attempt=number,
            status=finish["payload"]["status"], canonical=reply.get("canonical"), http_status=status)
        attempt.remove()
        return True
    if attempt.is_abandoned():
        attempt.remove()
        return True
    return False


def deliver_all(spool: Spool, client: AgentClient) -> int:
    """One pass over every attempt in the spool. Returns how many attempts are still pending."""
    pending = 0
    for attempt in spool.attempts():
        with spool.lock_for(attempt):
            if not attempt.directory.exists():
                continue
            if not deliver_attempt(attempt, client):
                pending += 1
    return pending


def hand_back_interrupted(spool: Spool, running_keys: set[str] = frozenset()) -> list[str]:
    """After a crash: an attempt that was running (no finish, not abandoned) is finished as handed back."""
    handed_back = []
    for attempt in spool.attempts():
        if attempt.key in running_keys or attempt.read_finish() is not None or attempt.is_abandoned():
            continue
        if attempt.server_identity() is None:
            continue  # an offline run that never finished: nothing to hand back to
        started = attempt.started() or {}
        error = {"type": "AgentRestarted", "message": "the agent stopped while this attempt ran; it is handed back",
                 "traceback": ""}
        attempt.write_finish(
            build_finish_payload(attempt, "handed_back", started.get("started_at", utc_now_iso()), None, error, None)
        )
        handed_back.append(attempt.key)
        log(logger, logging.WARNING, "interrupted attempt handed back", attempt=attempt.key)
    return handed_back


class SpoolUploader:
    """Background thread: keeps delivering the spool, backing off while the server is unreachable."""

    def __init__(self, spool: Spool, client: AgentClient, stop: threading.Event, on_fatal):
        self._spool = spool
        self._client = client
        self._stop = stop
        self._on_fatal = on_fatal
        self._nudge = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spool-uploader", daemon=True)
        self.pending = 0

    def start(self) -> None:
        self._thread.start()

    def nudge(self) -> None:
        self._nudge.set()

    def join(self, timeout: float | None = None) -> None:
        self._nudge.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        backoff = Backoff()
        while not self._stop.is_set():
            delay = 1.0
            try:
                self.pending = deliver_all(self._spool, self._client)
                backoff.reset()
            except TransientError as error:
                delay = backoff.next_delay(error.retry_after)
                log(logger, logging.WARNING, "spool upload postponed", error=error.code, detail=error.detail,
                    retry_in_s=round(delay, 1))
            except PermanentError as error:  # 401/426: the agent must stop
                self._on_fatal(error)
                return
            self._nudge.wait(delay)
            self._nudge.clear()
