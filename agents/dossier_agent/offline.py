"""Offline mode, first half: `run-job SPEC --spool DIR` runs one job from a spec file into a spool folder, on a
node that cannot reach the server. It needs neither httpx nor psutil. `replay.py` uploads the spool later.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from pathlib import Path
from typing import Any

from dossier_agent import __version__
from dossier_agent.errors import ConfigError
from dossier_agent.executor import AttemptOutcome, Supervision, execute_attempt
from dossier_agent.inventory import collect_inventory
from dossier_agent.jobs.registry import JobRegistry
from dossier_agent.spool import AttemptSpool, Spool
from dossier_agent.timeutil import utc_now_iso

logger = logging.getLogger(__name__)


def read_job_spec(path: Path) -> tuple[str, dict[str, Any]]:
    """A spec file is {"kind": ..., "spec": {...}}; a saved claim reply ({"job": {...}}) works too."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read the job spec {path}: {error}") from None
    job = document.get("job", document) if isinstance(document, dict) else None
    if not isinstance(job, dict) or not isinstance(job.get("kind"), str):
        raise ConfigError(f"{path} must hold a JSON object with \"kind\" and \"spec\"")
    spec = job.get("spec", {})
    if not isinstance(spec, dict):
        raise ConfigError(f"\"spec\" in {path} must be a JSON object")
    return job["kind"], spec


def run_job_offline(
    kind: str,
    spec: dict[str, Any],
    *,
    spool_dir: Path,
    work_dir: Path,
    registry: JobRegistry,
    supervision: Supervision,
    settings: dict[str, Any] | None = None,
    log_level: str = "info",
    keep_workdir: bool = False,
    inventory: dict[str, Any] | None = None,
) -> tuple[AttemptOutcome, AttemptSpool]:
    job_kind = registry.get(kind)
    if job_kind is None:
        reason = registry.unavailable.get(kind, "no such job kind")
        raise ConfigError(f"job kind {kind!r} is not available on this agent: {reason} "
                          f"(offered: {', '.join(registry.offered()) or 'none'})")
    attempt = Spool(spool_dir).create_attempt({
        "job_id": None, "attempt": None, "job_token": None, "kind": kind, "spec": spec,
        "offline_run_id": uuid.uuid4().hex, "agent_version": __version__,
    })
    started_at = utc_now_iso()
    attempt.mark_started(started_at, acknowledged=False)
    outcome = execute_attempt(
        attempt, job_kind,
        inventory=inventory if inventory is not None else collect_inventory(),
        work_root=work_dir,
        supervision=supervision,
        started_at=started_at,
        settings=settings,
        log_level=log_level,
        keep_workdir=keep_workdir,
    )
    return outcome, attempt


def offline_supervision(grace_s: float) -> Supervision:
    return Supervision(shutdown=threading.Event(), force=threading.Event(), lease=None, grace_s=grace_s)
