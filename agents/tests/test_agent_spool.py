"""The spool: events numbered once, artifacts by content, one idempotency key per finish, nothing half-written."""

import hashlib
import json

from dossier_agent.event_writer import EventWriter
from dossier_agent.spool import Spool, read_json


def _attempt(tmp_path, job_id="42"):
    return Spool(tmp_path / "spool").create_attempt(
        {"job_id": job_id, "attempt": 1, "job_token": "dsj_x", "kind": "inventory", "spec": {}}
    )


def test_events_are_numbered_from_zero_in_batches(tmp_path):
    attempt = _attempt(tmp_path)
    writer = EventWriter(attempt, max_batch_events=3, flush_interval_s=60)
    for index in range(7):
        assert writer.append("log", {"level": "info", "message": str(index), "fields": {}}) == index
    writer.close()

    batches = [read_json(path) for path in attempt.pending_event_batches()]
    assert [batch["seq"] for batch in batches] == [0, 3, 6]
    assert [event["data"]["message"] for batch in batches for event in batch["events"]] == list("0123456")
    assert attempt.next_seq() == 7 == writer.event_count


def test_numbering_continues_after_a_crash_between_batch_and_high_water_mark(tmp_path):
    attempt = _attempt(tmp_path)
    attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}] * 4)
    (attempt.directory / "next_seq.json").write_text(json.dumps({"next_seq": 0}))  # the crash lost this write

    writer = EventWriter(attempt, flush_interval_s=60)
    assert writer.append("progress", {"fraction": 0.5, "message": ""}) == 4
    writer.close()


def test_the_high_water_mark_survives_delivery_of_every_batch(tmp_path):
    attempt = _attempt(tmp_path)
    attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}] * 5)
    for path in attempt.pending_event_batches():
        path.unlink()  # delivered

    assert attempt.next_seq() == 5


def test_events_that_json_cannot_carry_are_refused_at_once(tmp_path):
    writer = EventWriter(_attempt(tmp_path), flush_interval_s=60)
    for bad in ({"value": float("nan")}, {"value": object()}):
        try:
            writer.append("measurement", bad)
        except (ValueError, TypeError):
            pass
        else:
            raise AssertionError(f"accepted {bad}")
    writer.close()
    assert writer.event_count == 0


def test_the_writer_flushes_on_its_own_after_the_interval(tmp_path):
    attempt = _attempt(tmp_path)
    writer = EventWriter(attempt, flush_interval_s=0.05)
    writer.append("log", {"level": "info", "message": "m", "fields": {}})
    import time

    deadline = time.monotonic() + 5
    while not attempt.pending_event_batches() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(attempt.pending_event_batches()) == 1
    writer.close()


def test_artifacts_are_content_addressed_and_listed_once(tmp_path):
    attempt = _attempt(tmp_path)
    data = b"per-request records\n"

    first = attempt.write_artifact(data, "requests.jsonl", "application/x-ndjson")
    again = attempt.write_artifact(data, "requests.jsonl", "application/x-ndjson")

    assert first.sha256 == again.sha256 == hashlib.sha256(data).hexdigest()
    assert attempt.artifact_path(first.sha256).read_bytes() == data
    assert [record.sha256 for record in attempt.artifact_manifest()] == [first.sha256]
    attempt.artifact_delivered(first.sha256)
    assert attempt.pending_artifacts() == []
    assert [record.name for record in attempt.artifact_manifest()] == ["requests.jsonl"]  # still in the finish list


def test_an_artifact_whose_bytes_were_deleted_counts_as_delivered(tmp_path):
    attempt = _attempt(tmp_path)
    record = attempt.write_artifact(b"x", "x.bin", "application/octet-stream")
    attempt.artifact_path(record.sha256).unlink()  # crash between deleting the bytes and the metadata

    assert attempt.pending_artifacts() == []
    assert not (attempt.artifacts_directory / f"{record.sha256}.json").exists()


def test_the_finish_keeps_its_first_idempotency_key(tmp_path):
    attempt = _attempt(tmp_path)
    first = attempt.write_finish({"status": "succeeded", "result": {"a": 1}})
    second = attempt.write_finish({"status": "failed", "result": None})

    assert second == first
    assert attempt.read_finish()["payload"]["status"] == "succeeded"
    assert len(first["idempotency_key"]) == 32


def test_writes_leave_no_temporary_files_and_secrets_are_private(tmp_path):
    attempt = _attempt(tmp_path)
    attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}])
    attempt.write_artifact(b"x", "x.bin", "application/octet-stream")
    attempt.write_finish({"status": "succeeded"})

    assert not [path for path in attempt.directory.rglob(".tmp-*")]
    assert (attempt.directory / "attempt.json").stat().st_mode & 0o777 == 0o600  # holds the job token
    assert attempt.directory.stat().st_mode & 0o777 == 0o700


def test_a_refused_item_moves_to_rejected_with_the_reply_and_without_the_token(tmp_path):
    spool = Spool(tmp_path / "spool")
    attempt = _attempt(tmp_path)
    record = attempt.write_artifact(b"too big", "big.bin", "application/octet-stream")

    attempt.reject(attempt.artifact_path(record.sha256), {"status": 413, "error": "artifact_too_large"})

    assert attempt.pending_artifacts() == []
    rejected = spool.root / "rejected" / attempt.key
    assert (rejected / record.sha256).read_bytes() == b"too big"
    assert read_json(rejected / f"{record.sha256}.reply.json")["error"] == "artifact_too_large"
    assert "job_token" not in read_json(rejected / "attempt.json")


def test_the_spool_lists_attempts_and_counts_pending_items(tmp_path):
    spool = Spool(tmp_path / "spool")
    first = spool.create_attempt({"job_id": "1", "attempt": 1, "job_token": "t", "kind": "k", "spec": {}})
    spool.create_attempt({"job_id": None, "attempt": None, "job_token": None, "kind": "k", "spec": {},
                          "offline_run_id": "abc"})
    first.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}])
    first.write_finish({"status": "succeeded"})

    assert sorted(attempt.key for attempt in spool.attempts()) == ["job-1-attempt-1", "offline-abc"]
    assert spool.pending_count() == 2
