"""Offline mode, second half: `replay DIR --server URL` announces each spooled run to the server
(`POST /jobs/offline`, docs/agent-protocol.md §3.9) and uploads it through the ordinary start, events, artifacts and
finish calls, so offline results take the same ingest path. DIR may also be a .tar / .tar.gz of a spool folder.
"""

from __future__ import annotations

import logging
import tarfile
import time
from pathlib import Path
from typing import Any

from dossier_agent import __version__
from dossier_agent.client import AgentClient
from dossier_agent.delivery import deliver_attempt, hand_back_interrupted
from dossier_agent.errors import ConfigError, TransientError
from dossier_agent.lease import LeaseKeeper
from dossier_agent.retry import Backoff, call_with_retries
from dossier_agent.spool import AttemptSpool, Spool, read_json
from dossier_agent.structured_log import log
from dossier_agent.timeutil import utc_now_iso

logger = logging.getLogger(__name__)


def _extract_safely(archive: tarfile.TarFile, target: Path) -> None:
    """Only plain files and folders, inside `target` (Python < 3.11.4 lacks tarfile's "data" filter)."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(target, filter="data")
        return
    members = []
    for member in archive.getmembers():
        destination = (target / member.name).resolve()
        if not (member.isfile() or member.isdir()) or not destination.is_relative_to(target.resolve()):
            raise ConfigError(f"refusing to unpack {member.name!r}: not a plain file inside the archive folder")
        members.append(member)
    archive.extractall(target, members=members)  # noqa: S202 - every member checked above


def open_spool_folder(path: Path) -> Path:
    """The spool root inside `path`; a tar file is unpacked once beside itself (`<name>.replay/`)."""
    if path.is_file():
        if not tarfile.is_tarfile(path):
            raise ConfigError(f"{path} is neither a spool folder nor a tar file")
        target = path.with_name(path.name + ".replay")
        if not target.exists():
            with tarfile.open(path) as archive:
                _extract_safely(archive, target)
        path = target
    if not path.is_dir():
        raise ConfigError(f"no spool folder at {path}")
    candidates = [path, *sorted(folder.parent for folder in path.rglob("attempts") if folder.is_dir())]
    for candidate in candidates:
        if (candidate / "attempts").is_dir():
            return candidate
    raise ConfigError(f"{path} holds no spool (no attempts/ folder)")


def _announce(attempt: AttemptSpool, client: AgentClient, deadline: float) -> None:
    """Create the server-side job and attempt for an offline run and mark it started (both idempotent)."""
    started = attempt.started() or {"started_at": utc_now_iso(), "acknowledged": False}
    if attempt.server_identity() is None:
        reply = call_with_retries(lambda: client.create_offline_job({
            "offline_run_id": attempt.offline_run_id,
            "kind": attempt.kind,
            "spec": attempt.spec,
            "started_at": started["started_at"],
            "agent_version": attempt.header.get("agent_version", __version__),
        }), backoff=Backoff(cap_s=30.0), deadline=deadline)
        attempt.set_server_identity(str(reply["job"]["id"]), int(reply["attempt"]), reply["job_token"])
    if not started.get("acknowledged"):
        identity = attempt.server_identity()
        inventory_path = attempt.directory / "inventory.json"
        call_with_retries(lambda: client.start(str(identity["job_id"]), identity["job_token"], {
            "attempt": identity["attempt"],
            "started_at": started["started_at"],
            "inventory": read_json(inventory_path) if inventory_path.exists() else {},
        }), backoff=Backoff(cap_s=30.0), deadline=deadline)
        attempt.mark_started(started["started_at"], acknowledged=True)


def replay(spool_root: Path, client: AgentClient, *, budget_s: float = 300.0) -> list[dict[str, Any]]:
    """Upload every finished run in the spool, giving up after `budget_s` seconds of trying (the spool is kept).
    Returns one line of outcome per attempt."""
    deadline = time.monotonic() + budget_s
    spool = Spool(spool_root)
    hand_back_interrupted(spool)  # a copied `run` spool may hold attempts cut short by a crash
    summary = []
    for attempt in spool.attempts():
        entry = {"attempt": attempt.key, "kind": attempt.kind}
        if attempt.read_finish() is None and not attempt.is_abandoned():
            summary.append({**entry, "outcome": "incomplete", "detail": "the run never finished; not uploaded"})
            continue
        lease = None
        if attempt.offline_run_id is not None:
            try:
                _announce(attempt, client, deadline)
            except TransientError as error:
                summary.append({**entry, "outcome": "pending", "detail": error.detail})
                continue
            identity = attempt.server_identity()
            lease = LeaseKeeper(client.clone(), job_id=str(identity["job_id"]), attempt=int(identity["attempt"]),
                                job_token=identity["job_token"])
            lease.start()
        job_id = attempt.display_job_id
        try:
            def deliver_once(attempt: AttemptSpool = attempt) -> None:
                if not deliver_attempt(attempt, client):
                    raise TransientError(0, "not_delivered", "items left to upload")

            call_with_retries(deliver_once, backoff=Backoff(cap_s=30.0), deadline=deadline)
            summary.append({**entry, "job_id": job_id, "outcome": "delivered"})
            log(logger, logging.INFO, "run replayed", attempt=entry["attempt"], job=job_id)
        except TransientError as error:
            summary.append({**entry, "job_id": job_id, "outcome": "pending", "detail": error.detail})
        finally:
            if lease is not None:
                lease.stop()
    return summary
