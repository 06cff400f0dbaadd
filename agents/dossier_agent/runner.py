"""`dossier-agent run`: heartbeat, claim with jitter, execute, deliver — until stopped.

SIGTERM/SIGINT: stop claiming, let the current job finish within the grace period or hand it back; a second signal
stops the job at once. A 401 or 426 stops the agent with a clear message (exit codes 3 and 4).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any

from dossier_agent import __version__
from dossier_agent.client import AgentClient
from dossier_agent.config import AgentConfig
from dossier_agent.delivery import SpoolUploader, deliver_all, deliver_attempt, hand_back_interrupted
from dossier_agent.errors import (
    AgentError,
    AgentTooOld,
    AttemptSuperseded,
    AuthenticationFailed,
    PermanentError,
    TransientError,
)
from dossier_agent.executor import Supervision, build_finish_payload, execute_attempt
from dossier_agent.heartbeat import HeartbeatLoop
from dossier_agent.inventory import collect_inventory, inventory_sha256
from dossier_agent.jobs.registry import JobRegistry
from dossier_agent.lease import LeaseKeeper
from dossier_agent.retry import Backoff, call_with_retries
from dossier_agent.serving_stack import declared_operations
from dossier_agent.spool import AttemptSpool, Spool
from dossier_agent.structured_log import log
from dossier_agent.timeutil import utc_now_iso

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_AUTHENTICATION_FAILED = 3
EXIT_AGENT_TOO_OLD = 4
CLAIM_JITTER = 0.2


def fatal_message(error: PermanentError) -> str:
    if isinstance(error, AgentTooOld):
        minimum = error.body.get("min_agent_version", "?")
        return (f"the server requires agent version {minimum} or newer (this is {__version__}): {error.detail} "
                "— upgrade with `pip install -U ./agents`, then start the agent again")
    return (f"the server refused this agent's token ({error.code}: {error.detail}) — it was revoked or the agent "
            "was deleted; register again with `dossier-agent register --server URL --registration-token dsr_…`")


class AgentRunner:
    def __init__(
        self,
        config: AgentConfig,
        registry: JobRegistry,
        *,
        server_url: str,
        agent_token: str,
        details: dict[str, Any] | None = None,
    ):
        details = details or {}
        self.config = config
        self.registry = registry
        self.server_url = server_url
        self.agent_token = agent_token
        self.claim_interval_s = float(details.get("claim_interval_s", 10.0))
        self.heartbeat_interval_s = float(details.get("heartbeat_interval_s", 30.0))
        self.limits = dict(details.get("limits") or {})
        self.spool = Spool(config.spool_dir)
        self.shutdown = threading.Event()  # stop claiming; stop the running job (grace period)
        self.force = threading.Event()  # second signal: stop the running job now
        self.draining = threading.Event()  # server said "stop": finish the current job, then exit
        self.paused = False
        # A pause takes effect between claims: the heartbeat thread sets `paused` under this lock, which the claim
        # loop holds from its check of `paused` to the claim's reply, so no claim is sent once `paused` is set.
        self._claim_lock = threading.Lock()
        self.fatal_error: PermanentError | None = None
        self.state = "idle"
        self.current_job: dict[str, Any] | None = None
        self.inventory: dict[str, Any] = {}
        self.jobs_run = 0
        self._threads_stop = threading.Event()
        self._started = time.monotonic()
        self._signals = 0
        self._rng = random.Random()
        self._uploader: SpoolUploader | None = None

    # -- plumbing -----------------------------------------------------------------------------------------
    def new_client(self) -> AgentClient:
        return AgentClient(
            self.server_url,
            agent_token=self.agent_token,
            timeout_s=self.config.request_timeout_s,
            verify=self.config.tls_verify,
        )

    def handle_signal(self, signal_number: int, _frame: object = None) -> None:
        self._signals += 1
        if self._signals == 1:
            log(logger, logging.INFO, "stop requested: finishing or handing back the current job",
                signal=signal_number, grace_s=self.config.shutdown_grace_s)
        else:
            log(logger, logging.WARNING, "second stop request: stopping the current job now", signal=signal_number)
            self.force.set()
        self.shutdown.set()

    def fail(self, error: PermanentError) -> None:
        if self.fatal_error is None:
            self.fatal_error = error
            log(logger, logging.ERROR, "agent stopping", reason=fatal_message(error))
        self.shutdown.set()

    def heartbeat_payload(self) -> dict[str, Any]:
        if self.shutdown.is_set() or self.draining.is_set():
            state = "stopping"
        else:
            state = "paused" if self.paused and self.current_job is None else self.state
        return {
            "agent_version": __version__,
            "state": state,
            "current_job": self.current_job,
            "job_kinds": self.registry.offered(),
            "uptime_s": round(time.monotonic() - self._started, 1),
            "spool_pending": self.spool.pending_count(),
            "inventory_sha256": inventory_sha256(self.inventory) if self.inventory else None,
        }

    def on_heartbeat_reply(self, reply: dict[str, Any]) -> None:
        if reply.get("claim_interval_s"):
            self.claim_interval_s = float(reply["claim_interval_s"])
        for command in reply.get("commands") or []:
            name = command.get("command") if isinstance(command, dict) else command
            log(logger, logging.INFO, "server command", command=name)
            if name == "pause":
                with self._claim_lock:
                    self.paused = True
            elif name == "resume":
                self.paused = False
            elif name == "stop":
                self.draining.set()

    def worker_settings(self) -> dict[str, Any]:
        return {
            "telemetry_interval_s": self.config.telemetry_interval_s,
            "operations": self.config.operations,
            "max_artifact_bytes": self.limits.get("max_artifact_bytes"),
            "max_batch_events": min(200, int(self.limits.get("max_events_per_batch", 200))),
        }

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not (self.shutdown.is_set() or self.draining.is_set()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.shutdown.wait(min(remaining, 0.5))

    # -- the loop -----------------------------------------------------------------------------------------
    def run(self) -> int:
        log(logger, logging.INFO, "agent starting", version=__version__, server=self.server_url,
            job_kinds=self.registry.offered(), not_offered=self.registry.unavailable or None)
        self.inventory = collect_inventory()
        hand_back_interrupted(self.spool)
        client = self.new_client()
        self._uploader = SpoolUploader(self.spool, self.new_client(), self._threads_stop, self.fail)
        heartbeat = HeartbeatLoop(
            self.new_client(), payload=self.heartbeat_payload, on_reply=self.on_heartbeat_reply, on_fatal=self.fail,
            stop=self._threads_stop, interval_s=self.heartbeat_interval_s,
        )
        self._uploader.start()
        heartbeat.start()
        try:
            self.claim_loop(client)
        finally:
            self.state = "stopping"
            self._threads_stop.set()
            heartbeat.join(timeout=5)
            self._uploader.join(timeout=5)
            if self.fatal_error is None:
                try:
                    pending = deliver_all(self.spool, client)
                except AgentError as error:
                    pending = self.spool.pending_count()
                    log(logger, logging.WARNING, "spool not fully delivered", error=str(error))
                if pending:
                    log(logger, logging.INFO, "spool kept for the next start", attempts_pending=pending)
            client.close()
        log(logger, logging.INFO, "agent stopped", jobs_run=self.jobs_run)
        if isinstance(self.fatal_error, AgentTooOld):
            return EXIT_AGENT_TOO_OLD
        if isinstance(self.fatal_error, AuthenticationFailed):
            return EXIT_AUTHENTICATION_FAILED
        return EXIT_OK

    def claim_loop(self, client: AgentClient) -> None:
        backoff = Backoff(cap_s=60.0)
        while not (self.shutdown.is_set() or self.draining.is_set()):
            try:
                with self._claim_lock:
                    paused = self.paused
                    claim = None if paused else client.claim({
                        "job_kinds": self.registry.offered(),
                        "operations": declared_operations(self.config.operations),
                        "wait_s": 0,
                    })
            except (AuthenticationFailed, AgentTooOld) as error:
                self.fail(error)
                return
            except (TransientError, PermanentError) as error:
                delay = backoff.next_delay(error.retry_after)
                log(logger, logging.WARNING, "claim failed", status=error.status, error=error.code,
                    detail=error.detail, retry_in_s=round(delay, 1))
                self._sleep(delay)
                continue
            backoff.reset()
            if paused:
                self._sleep(self.claim_interval_s)
                continue
            if claim is None:
                self._sleep(self.claim_interval_s * self._rng.uniform(1 - CLAIM_JITTER, 1 + CLAIM_JITTER))
                continue
            self.run_claimed(client, claim)

    # -- one job ------------------------------------------------------------------------------------------
    def run_claimed(self, client: AgentClient, claim: dict[str, Any]) -> None:
        job = claim["job"]
        job_id, number, job_token = str(job["id"]), int(claim["attempt"]), claim["job_token"]
        attempt = self.spool.create_attempt({
            "job_id": job_id, "attempt": number, "job_token": job_token, "kind": job["kind"],
            "spec": job.get("spec") or {}, "offline_run_id": None,
        })
        self.current_job, self.state = {"id": job_id, "attempt": number}, "busy"
        log(logger, logging.INFO, "job claimed", job=job_id, attempt=number, kind=job["kind"])
        lease: LeaseKeeper | None = None
        try:
            lease = self._start(client, attempt, claim)
            if lease is not None:
                self.jobs_run += 1
                lease.delivering.set()
            self.deliver_now(client, attempt)
        finally:
            if lease is not None:
                lease.stop()
            self.current_job, self.state = None, "idle"
            if self._uploader is not None:
                self._uploader.nudge()

    def _hand_back(self, attempt: AttemptSpool, started_at: str, reason: str) -> None:
        error = {"type": "AgentShutdown", "message": reason, "traceback": ""}
        attempt.write_finish(build_finish_payload(attempt, "handed_back", started_at, None, error, None))

    def _start(self, client: AgentClient, attempt: AttemptSpool, claim: dict[str, Any]) -> LeaseKeeper | None:
        job_id, number, job_token = str(claim["job"]["id"]), int(claim["attempt"]), claim["job_token"]
        started_at = utc_now_iso()
        self.inventory = collect_inventory()
        claim_ttl = float((claim.get("lease") or {}).get("ttl_s", 60))
        try:
            reply = call_with_retries(
                lambda: client.start(job_id, job_token, {
                    "attempt": number, "started_at": started_at, "inventory": self.inventory,
                }),
                stop=self.shutdown,
                deadline=time.monotonic() + claim_ttl,
            )
        except AttemptSuperseded as error:
            attempt.mark_abandoned(f"start refused: {error.code}")
            return None
        except (AuthenticationFailed, AgentTooOld) as error:
            self.fail(error)
            self._hand_back(attempt, started_at, "the agent's token was refused before the job started")
            return None
        except PermanentError as error:
            log(logger, logging.ERROR, "start refused", job=job_id, status=error.status, error=error.code,
                detail=error.detail)
            attempt.mark_abandoned(f"start refused: {error.code}: {error.detail}")
            return None
        except TransientError as error:
            log(logger, logging.WARNING, "could not start the job; handing it back", job=job_id, error=error.code)
            self._hand_back(attempt, started_at, "the job could not be started in time")
            return None
        attempt.mark_started(started_at, acknowledged=True)
        lease = LeaseKeeper(
            self.new_client(), job_id=job_id, attempt=number, job_token=job_token,
            progress=attempt.read_progress, rendezvous_path=attempt.rendezvous_path,
        )
        lease.apply_reply(claim)
        lease.apply_reply(reply)
        job_kind = self.registry.get(attempt.kind)
        if job_kind is None:
            error = {"type": "JobKindUnavailable", "traceback": "",
                     "message": f"job kind {attempt.kind!r} is not offered by this agent: "
                                f"{self.registry.unavailable.get(attempt.kind, 'unknown kind')}"}
            attempt.write_finish(build_finish_payload(attempt, "failed", started_at, None, error, None))
            return lease
        if lease.cancel_requested.is_set():
            error = {"type": "JobCancelled", "message": "cancelled before it started", "traceback": ""}
            attempt.write_finish(build_finish_payload(attempt, "cancelled", started_at, None, error, None))
            return lease
        lease.start()
        execute_attempt(
            attempt, job_kind,
            inventory=self.inventory,
            work_root=self.config.work_dir,
            supervision=Supervision(shutdown=self.shutdown, force=self.force, lease=lease,
                                    grace_s=self.config.shutdown_grace_s),
            started_at=started_at,
            settings=self.worker_settings(),
            log_level=self.config.log_level,
            keep_workdir=self.config.keep_workdirs,
        )
        if lease.fatal.is_set() and lease.fatal_error is not None:
            self.fail(lease.fatal_error)
        return lease

    def deliver_now(self, client: AgentClient, attempt: AttemptSpool) -> None:
        """Upload the attempt before claiming again (the lease is still renewed meanwhile)."""
        budget_s = 10.0 if self.shutdown.is_set() else 120.0

        def deliver_once() -> None:
            with self.spool.lock_for(attempt):
                if not attempt.directory.exists() or deliver_attempt(attempt, client):
                    return
            raise TransientError(0, "not_delivered", "the attempt still has items to upload")

        try:
            call_with_retries(deliver_once, backoff=Backoff(cap_s=15.0), deadline=time.monotonic() + budget_s)
        except TransientError as error:
            log(logger, logging.WARNING, "attempt left in the spool; the uploader keeps trying",
                attempt=attempt.key, error=error.code, detail=error.detail)
        except (AuthenticationFailed, AgentTooOld) as error:
            self.fail(error)
