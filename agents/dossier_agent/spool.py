"""The local spool: everything the agent uploads is written here first and deleted only after a 2xx reply.

One directory per attempt:

    <spool>/attempts/<key>/
        attempt.json            job id, attempt, job token, kind, spec (or the offline run id) — mode 0600
        server.json             offline runs only: the job id/attempt/token the server gave at replay
        started.json            when the job started (and whether the server acknowledged `start`)
        events/<seq>.json       one event batch: {"seq": N, "events": [...]}
        next_seq.json           the next event sequence number (the writer's high-water mark)
        artifacts/<sha256>      raw bytes; artifacts/<sha256>.json its name, media type and size
        artifacts.jsonl         every artifact ever added (the finish payload lists them all)
        finish.json             {"idempotency_key": ..., "payload": {...}} — the key is made once, kept forever
        abandoned.json          the attempt was superseded: upload what is left, never finish
        worker/                 files shared with the job process (cancel flag, report, progress)
    <spool>/rejected/<key>/...  items the server refused for good (4xx), with its reply beside them
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dossier_agent.timeutil import utc_now_iso

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write to a temporary file, fsync, rename over `path`: readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".tmp-{path.name}-{uuid.uuid4().hex}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def write_json(path: Path, value: Any) -> None:
    atomic_write(path, json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False).encode())


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def safe_name(text: str) -> str:
    return _UNSAFE.sub("_", text)[:80]


@dataclass(frozen=True)
class ArtifactRecord:
    sha256: str
    name: str
    media_type: str
    size: int

    def as_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "name": self.name, "media_type": self.media_type, "size": self.size}


class AttemptSpool:
    def __init__(self, directory: Path):
        self.directory = directory
        self._header: dict[str, Any] | None = None
        self._manifest_lock = threading.Lock()

    @property
    def rendezvous_path(self) -> Path:
        """Where the lease thread writes a job group's rendezvous for the job process (docs/agent-protocol.md §8)."""
        return self.directory / "rendezvous.json"

    # -- identity -----------------------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.directory.name

    @property
    def header(self) -> dict[str, Any]:
        if self._header is None:
            self._header = read_json(self.directory / "attempt.json")
        return self._header

    @property
    def kind(self) -> str:
        return self.header["kind"]

    @property
    def spec(self) -> dict[str, Any]:
        return self.header["spec"]

    @property
    def offline_run_id(self) -> str | None:
        return self.header.get("offline_run_id")

    def server_identity(self) -> dict[str, Any] | None:
        """{"job_id", "attempt", "job_token"} once known: from the claim, or from the server at replay."""
        if self.header.get("job_id") is not None:
            return {key: self.header[key] for key in ("job_id", "attempt", "job_token")}
        path = self.directory / "server.json"
        return read_json(path) if path.exists() else None

    def set_server_identity(self, job_id: str, attempt: int, job_token: str) -> None:
        write_json(self.directory / "server.json", {"job_id": job_id, "attempt": attempt, "job_token": job_token})

    @property
    def display_job_id(self) -> str:
        identity = self.server_identity()
        if identity is not None:
            return str(identity["job_id"])
        return f"offline-{self.offline_run_id}"

    # -- start --------------------------------------------------------------------------------------------
    def mark_started(self, started_at: str, acknowledged: bool) -> None:
        write_json(self.directory / "started.json", {"started_at": started_at, "acknowledged": acknowledged})

    def started(self) -> dict[str, Any] | None:
        path = self.directory / "started.json"
        return read_json(path) if path.exists() else None

    # -- events -------------------------------------------------------------------------------------------
    @property
    def events_directory(self) -> Path:
        return self.directory / "events"

    def write_event_batch(self, first_seq: int, events: list[dict[str, Any]]) -> Path:
        path = self.events_directory / f"{first_seq:012d}.json"
        atomic_write(path, json.dumps({"seq": first_seq, "events": events}, ensure_ascii=False).encode())
        write_json(self.directory / "next_seq.json", {"next_seq": first_seq + len(events)})
        return path

    def pending_event_batches(self) -> list[Path]:
        if not self.events_directory.exists():
            return []
        return sorted(path for path in self.events_directory.glob("*.json") if not path.name.startswith("."))

    def next_seq(self) -> int:
        """The next free sequence number, also after a crash between writing a batch and the high-water mark."""
        recorded = 0
        path = self.directory / "next_seq.json"
        if path.exists():
            recorded = read_json(path)["next_seq"]
        for batch_path in self.pending_event_batches():
            batch = read_json(batch_path)
            recorded = max(recorded, batch["seq"] + len(batch["events"]))
        return recorded

    # -- artifacts ----------------------------------------------------------------------------------------
    @property
    def artifacts_directory(self) -> Path:
        return self.directory / "artifacts"

    def write_artifact(self, data: bytes, name: str, media_type: str) -> ArtifactRecord:
        digest = hashlib.sha256(data).hexdigest()
        record = ArtifactRecord(sha256=digest, name=name, media_type=media_type, size=len(data))
        atomic_write(self.artifacts_directory / digest, data)
        write_json(self.artifacts_directory / f"{digest}.json", record.as_dict())
        with self._manifest_lock:
            if digest not in {item.sha256 for item in self.artifact_manifest()}:
                with (self.directory / "artifacts.jsonl").open("a") as handle:
                    handle.write(json.dumps(record.as_dict()) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
        return record

    def artifact_manifest(self) -> list[ArtifactRecord]:
        path = self.directory / "artifacts.jsonl"
        if not path.exists():
            return []
        records = []
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    records.append(ArtifactRecord(**json.loads(line)))
                except (ValueError, TypeError):
                    continue  # a line cut short by a crash: its artifact was never acknowledged by add_artifact
        return records

    def pending_artifacts(self) -> list[ArtifactRecord]:
        if not self.artifacts_directory.exists():
            return []
        pending = []
        for meta_path in sorted(self.artifacts_directory.glob("*.json")):
            if meta_path.name.startswith("."):
                continue
            data_path = meta_path.with_suffix("")
            if not data_path.exists():
                meta_path.unlink(missing_ok=True)  # uploaded; the crash came between the two deletions
                continue
            pending.append(ArtifactRecord(**read_json(meta_path)))
        return pending

    def artifact_path(self, sha256: str) -> Path:
        return self.artifacts_directory / sha256

    def artifact_delivered(self, sha256: str) -> None:
        self.artifact_path(sha256).unlink(missing_ok=True)
        (self.artifacts_directory / f"{sha256}.json").unlink(missing_ok=True)

    # -- finish -------------------------------------------------------------------------------------------
    def write_finish(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Spool the finish payload under a fresh idempotency key; an existing finish is kept as it is."""
        existing = self.read_finish()
        if existing is not None:
            return existing
        finish = {"idempotency_key": uuid.uuid4().hex, "payload": payload, "written_at": utc_now_iso()}
        write_json(self.directory / "finish.json", finish)
        return finish

    def read_finish(self) -> dict[str, Any] | None:
        path = self.directory / "finish.json"
        return read_json(path) if path.exists() else None

    # -- abandon / reject / remove ------------------------------------------------------------------------
    def mark_abandoned(self, reason: str) -> None:
        write_json(self.directory / "abandoned.json", {"reason": reason, "at": utc_now_iso()})

    def is_abandoned(self) -> bool:
        return (self.directory / "abandoned.json").exists()

    def reject(self, path: Path, reply: dict[str, Any]) -> Path:
        """Move an item the server refused for good out of the upload queue, with the reply beside it."""
        destination = self.directory.parent.parent / "rejected" / self.key
        destination.mkdir(parents=True, exist_ok=True)
        target = destination / path.name
        if path.exists():
            shutil.move(str(path), target)
        if path.parent == self.artifacts_directory:
            meta = path.with_name(path.name + ".json")
            if meta.exists():
                shutil.move(str(meta), destination / meta.name)
        write_json(destination / f"{path.name}.reply.json", reply)
        context = {key: value for key, value in self.header.items() if key != "job_token"}
        write_json(destination / "attempt.json", context)
        return target

    def has_pending_uploads(self) -> bool:
        return bool(self.pending_event_batches() or self.pending_artifacts())

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- files shared with the job process ----------------------------------------------------------------
    @property
    def worker_directory(self) -> Path:
        return self.directory / "worker"

    def request_cancel(self, reason: str) -> None:
        write_json(self.worker_directory / "cancel.json", {"reason": reason, "at": utc_now_iso()})

    def cancel_requested(self) -> bool:
        return (self.worker_directory / "cancel.json").exists()

    def write_worker_report(self, report: dict[str, Any]) -> None:
        write_json(self.worker_directory / "report.json", report)

    def read_worker_report(self) -> dict[str, Any] | None:
        path = self.worker_directory / "report.json"
        return read_json(path) if path.exists() else None

    def write_progress(self, fraction: float, message: str) -> None:
        write_json(self.worker_directory / "progress.json", {"fraction": fraction, "message": message})

    def read_progress(self) -> float | None:
        path = self.worker_directory / "progress.json"
        try:
            return read_json(path)["fraction"]
        except (OSError, ValueError, KeyError):
            return None


class Spool:
    def __init__(self, root: Path):
        self.root = root
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    @property
    def attempts_directory(self) -> Path:
        return self.root / "attempts"

    def lock_for(self, attempt: AttemptSpool) -> threading.Lock:
        """One uploader at a time per attempt (the run loop and the background uploader may meet there)."""
        with self._locks_guard:
            return self._locks.setdefault(attempt.key, threading.Lock())

    def create_attempt(self, header: dict[str, Any]) -> AttemptSpool:
        if header.get("job_id") is not None:
            key = f"job-{safe_name(str(header['job_id']))}-attempt-{int(header['attempt'])}"
        else:
            key = f"offline-{safe_name(header['offline_run_id'])}"
        directory = self.attempts_directory / key
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        write_json(directory / "attempt.json", {**header, "created_at": utc_now_iso()})
        return AttemptSpool(directory)

    def attempts(self) -> list[AttemptSpool]:
        if not self.attempts_directory.exists():
            return []
        return [
            AttemptSpool(directory)
            for directory in sorted(self.attempts_directory.iterdir())
            if (directory / "attempt.json").exists()
        ]

    def pending_count(self) -> int:
        total = 0
        for attempt in self.attempts():
            total += len(attempt.pending_event_batches()) + len(attempt.pending_artifacts())
            total += 1 if attempt.read_finish() is not None else 0
        return total
