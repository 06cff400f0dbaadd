"""Runs one attempt: starts the job process, watches for cancellation, supersession and shutdown, enforces the
grace period, and spools the finish payload (docs/agent-protocol.md §3.8).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dossier_agent
from dossier_agent.jobs.registry import JobKind
from dossier_agent.spool import AttemptSpool, write_json
from dossier_agent.structured_log import log
from dossier_agent.timeutil import utc_now_iso

logger = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.1


@dataclass
class Supervision:
    """What can stop a running job: the lease keeper's news, the agent's shutdown (second signal = force)."""

    shutdown: threading.Event = field(default_factory=threading.Event)
    force: threading.Event = field(default_factory=threading.Event)
    lease: Any = None  # a LeaseKeeper, or None offline
    grace_s: float = 60.0

    def stop_reason(self) -> str | None:
        lease = self.lease
        if lease is not None and lease.superseded.is_set():
            return "superseded"
        if lease is not None and lease.fatal.is_set():
            return "shutdown"
        if lease is not None and lease.cancel_requested.is_set():
            return "cancelled"
        if self.shutdown.is_set():
            return "shutdown"
        return None


@dataclass
class AttemptOutcome:
    status: str  # succeeded | failed | cancelled | handed_back | superseded
    finish: dict[str, Any] | None
    stop_reason: str | None = None


def _worker_environment(log_level: str) -> dict[str, str]:
    environment = dict(os.environ)
    package_parent = str(Path(dossier_agent.__file__).resolve().parent.parent)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = package_parent + (os.pathsep + existing if existing else "")
    environment["DOSSIER_AGENT_LOG_LEVEL"] = log_level
    return environment


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _error(error_type: str, message: str) -> dict[str, Any]:
    return {"type": error_type, "message": message, "traceback": ""}


def decide_status(
    report: dict[str, Any] | None, stop_reason: str | None, returncode: int, killed: bool
) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """(status, result, error) from what the job process reported and why the agent asked it to stop."""
    if stop_reason == "superseded":
        return "superseded", None, None
    if stop_reason == "shutdown":
        if report is not None and report["outcome"] == "returned":
            # run() returned: the result is complete (a job that stops early raises JobCancelled instead)
            return "succeeded", report["result"], None
        return "handed_back", None, _error("AgentShutdown", "the agent is stopping; the job is handed back")
    if stop_reason == "cancelled":
        partial = report.get("result") if report is not None else None
        if killed:
            return "cancelled", None, _error("JobKilled", "the job did not stop within the grace period after cancel")
        return "cancelled", partial, _error("JobCancelled", "cancelled on the server's request")
    if report is None:
        how = _describe_exit(returncode)
        return "failed", None, _error("JobProcessDied", f"the job process {how} before reporting; see the agent log")
    if report["outcome"] == "returned":
        return "succeeded", report["result"], None
    return "failed", None, report["error"]


def execute_attempt(
    attempt: AttemptSpool,
    job: JobKind,
    *,
    inventory: dict[str, Any],
    work_root: Path,
    supervision: Supervision,
    started_at: str,
    settings: dict[str, Any] | None = None,
    log_level: str = "info",
    keep_workdir: bool = False,
) -> AttemptOutcome:
    """Run the job process to its end and spool the finish payload (none when the attempt was superseded)."""
    workdir = work_root / attempt.key
    write_json(attempt.directory / "inventory.json", inventory)
    write_json(attempt.worker_directory / "settings.json", {
        **(settings or {}),
        "parent_pid": os.getpid(),
        "job": job.as_dict(),
        "workdir": str(workdir),
    })
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module, the spool path we created
        [sys.executable, "-m", "dossier_agent.job_worker", str(attempt.directory)],
        env=_worker_environment(log_level),
        stdin=subprocess.DEVNULL,
        stdout=2,  # a job's prints go to the log stream, never into a command's JSON on stdout
        start_new_session=True,  # a terminal's Ctrl-C reaches the agent, which relays it as a cancel
    )
    log(logger, logging.INFO, "job started", job=attempt.display_job_id, kind=job.kind, pid=process.pid)
    stop_reason, deadline, killed = None, None, False
    while process.poll() is None:
        reason = supervision.stop_reason()
        if stop_reason is None and reason is not None:
            stop_reason = reason
            attempt.request_cancel(reason)
            deadline = time.monotonic() + supervision.grace_s
            log(logger, logging.INFO, "job asked to stop", job=attempt.display_job_id, reason=reason,
                grace_s=supervision.grace_s)
        if deadline is not None and (supervision.force.is_set() or time.monotonic() >= deadline):
            process.kill()
            process.wait()
            killed = True
            log(logger, logging.WARNING, "job killed", job=attempt.display_job_id, reason=stop_reason)
            break
        time.sleep(POLL_INTERVAL_S)
    report = attempt.read_worker_report()
    status, result, error = decide_status(report, stop_reason, process.returncode, killed)
    if not keep_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    log(logger, logging.INFO, "job ended", job=attempt.display_job_id, kind=job.kind, status=status,
        error=(error or {}).get("message"))
    if status == "superseded":
        attempt.mark_abandoned("superseded: a newer attempt of this job exists")
        return AttemptOutcome(status=status, finish=None, stop_reason=stop_reason)
    finish = attempt.write_finish(build_finish_payload(attempt, status, started_at, result, error, report))
    return AttemptOutcome(status=status, finish=finish, stop_reason=stop_reason)


def build_finish_payload(
    attempt: AttemptSpool,
    status: str,
    started_at: str,
    result: dict[str, Any] | None,
    error: dict[str, Any] | None,
    report: dict[str, Any] | None,
) -> dict[str, Any]:
    event_count = report["event_count"] if report is not None else attempt.next_seq()
    return {
        "status": status,
        "started_at": started_at,
        "finished_at": utc_now_iso(),
        "result": result,
        "artifacts": [record.as_dict() for record in attempt.artifact_manifest()],
        "error": error,
        "event_count": max(event_count, attempt.next_seq()),
        "agent_version": dossier_agent.__version__,
    }
