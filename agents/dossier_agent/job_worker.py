"""The job process: `python -m dossier_agent.job_worker ATTEMPT_DIR` runs one job module and reports back.

Each job runs in its own process so that its CUDA context, torch import and memory end with it, a crash (segfault,
OOM kill) cannot take the agent down, and a job that ignores cancellation can be stopped for sure. It reads
`attempt.json` and `worker/settings.json`, writes events and artifacts to the attempt's spool, and ends with
`worker/report.json`. SIGTERM/SIGINT, the parent's cancel flag and the parent's death all set `ctx.cancelled()`.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from dossier_agent import structured_log
from dossier_agent.context import JobContext
from dossier_agent.errors import JobCancelled
from dossier_agent.event_writer import EventWriter
from dossier_agent.jobs.registry import JobKind
from dossier_agent.spool import AttemptSpool, read_json
from dossier_agent.telemetry import TelemetrySampler
from dossier_agent.timeutil import utc_now_iso

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: the kernel kills this process when the agent dies, so a SIGKILLed agent leaves no job behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class CancellationFlag:
    def __init__(self, spool: AttemptSpool, parent_pid: int):
        self._spool = spool
        self._parent_pid = parent_pid
        self._set = threading.Event()

    def set(self) -> None:
        self._set.set()

    def __call__(self) -> bool:
        if not self._set.is_set() and (self._spool.cancel_requested() or os.getppid() != self._parent_pid):
            self._set.set()
        return self._set.is_set()


def _error(exception: BaseException) -> dict[str, Any]:
    return {
        "type": type(exception).__name__,
        "message": str(exception),
        "traceback": "".join(traceback.format_exception(exception))[-20000:],
    }


def run_job(spool: AttemptSpool, settings: dict[str, Any], is_cancelled: CancellationFlag) -> dict[str, Any]:
    identity = spool.server_identity() or {}
    workdir = Path(settings["workdir"])
    workdir.mkdir(parents=True, exist_ok=True)
    inventory_path = spool.directory / "inventory.json"
    events = EventWriter(spool, max_batch_events=settings.get("max_batch_events", 200))
    context = JobContext(
        job_id=spool.display_job_id,
        attempt=int(identity.get("attempt", 1)),
        kind=spool.kind,
        spec=spool.spec,
        workdir=workdir,
        inventory=read_json(inventory_path) if inventory_path.exists() else {},
        events=events,
        spool=spool,
        is_cancelled=is_cancelled,
        operations=settings.get("operations", {}),
        max_artifact_bytes=settings.get("max_artifact_bytes"),
    )
    sampler = TelemetrySampler(lambda data: events.append("telemetry", data), settings.get("telemetry_interval_s", 1.0))
    report: dict[str, Any] = {"result": None, "error": None}
    sampler.start()
    try:
        module = JobKind.from_dict(settings["job"]).load()
        result = module.run(spool.spec, context)
        if not isinstance(result, dict):
            raise TypeError(f"job {spool.kind} returned {type(result).__name__}; run() must return a dict")
        report.update(outcome="returned", result=result)
    except JobCancelled as cancelled:
        report.update(outcome="cancelled", error=_error(cancelled))
    except BaseException as exception:
        report.update(outcome="raised", error=_error(exception))
    finally:
        sampler.stop()
        events.close()
    report.update(
        cancelled_seen=is_cancelled(),
        event_count=events.event_count,
        telemetry_samples=sampler.samples_emitted,
        telemetry_unavailable=sampler.unavailable_reason,
        finished_at=utc_now_iso(),
    )
    return report


def main(argv: list[str]) -> int:
    die_with_parent()
    faulthandler.enable()
    structured_log.configure(os.environ.get("DOSSIER_AGENT_LOG_LEVEL", "info"))
    spool = AttemptSpool(Path(argv[0]))
    settings = read_json(spool.worker_directory / "settings.json")
    is_cancelled = CancellationFlag(spool, int(settings["parent_pid"]))
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda *_: is_cancelled.set())
    report = run_job(spool, settings, is_cancelled)
    try:
        spool.write_worker_report(report)
    except (TypeError, ValueError) as error:  # the result holds something JSON cannot carry
        report.update(outcome="raised", result=None, error=_error(error))
        spool.write_worker_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
