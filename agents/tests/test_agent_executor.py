"""One attempt in its own job process: results, failures, crashes, cancellation and the grace period."""

import threading
import time

import pytest
from dossier_agent.executor import Supervision, decide_status
from dossier_agent.jobs.registry import discover
from dossier_agent.offline import run_job_offline
from dossier_agent.spool import read_json

from conftest import JOB_MODULES

INVENTORY = {"host": {"hostname": "test"}, "gpus": []}


@pytest.fixture(scope="module")
def registry():
    return discover([JOB_MODULES])


def _run(tmp_path, registry, kind, spec, supervision=None):
    return run_job_offline(
        kind, spec, spool_dir=tmp_path / "spool", work_dir=tmp_path / "work", registry=registry,
        supervision=supervision or Supervision(grace_s=5), settings={"telemetry_interval_s": 0.05},
        inventory=INVENTORY,
    )


def test_a_job_that_returns_succeeds_with_its_events_and_artifacts_spooled(tmp_path, registry):
    outcome, attempt = _run(tmp_path, registry, "test_chatty", {"events": 5})

    assert outcome.status == "succeeded"
    payload = outcome.finish["payload"]
    assert payload["result"]["events"] == 5
    assert payload["result"]["workdir_exists"] is True and payload["result"]["inventory_has_host"] is True
    assert payload["result"]["job_id"].startswith("offline-")
    assert {artifact["name"] for artifact in payload["artifacts"]} == {"requests.jsonl", "blob.bin"}
    events = [event for path in attempt.pending_event_batches() for event in read_json(path)["events"]]
    assert payload["event_count"] == len(events) == 11  # 5 progress + 5 measurement + 1 log
    assert [event["kind"] for event in events[:2]] == ["progress", "measurement"]
    assert events[-1] == {**events[-1], "kind": "log", "data": {"level": "info", "message": "measured",
                                                                 "fields": {"count": 5}}}
    assert not (tmp_path / "work" / attempt.key).exists()  # the work folder goes with the attempt


def test_the_inventory_job_reports_the_node(tmp_path, registry):
    outcome, _ = _run(tmp_path, registry, "inventory", {})

    payload = outcome.finish["payload"]
    assert outcome.status == "succeeded"
    assert payload["result"]["host"]["cpu_cores_logical"] >= 1
    assert "gpu_present" in payload["result"]
    assert [artifact["name"] for artifact in payload["artifacts"]] == ["inventory.json"]


def test_a_job_that_raises_fails_with_its_error_and_traceback(tmp_path, registry):
    outcome, _ = _run(tmp_path, registry, "test_failing", {"mode": "raise"})

    error = outcome.finish["payload"]["error"]
    assert outcome.status == "failed"
    assert (error["type"], error["message"]) == ("RuntimeError", "the device fell over")
    assert "failing.py" in error["traceback"]
    assert outcome.finish["payload"]["event_count"] == 1  # the log line before failing still counts


def test_a_result_that_is_not_a_dict_fails(tmp_path, registry):
    outcome, _ = _run(tmp_path, registry, "test_failing", {"mode": "not_a_dict"})
    assert outcome.status == "failed"
    assert "must return a dict" in outcome.finish["payload"]["error"]["message"]


def test_a_bad_event_kind_fails_the_job_with_the_reason(tmp_path, registry):
    outcome, _ = _run(tmp_path, registry, "test_failing", {"mode": "bad_event"})
    assert outcome.status == "failed"
    assert "event kind must match" in outcome.finish["payload"]["error"]["message"]


def test_a_job_process_that_dies_fails_without_taking_the_agent_down(tmp_path, registry):
    outcome, _ = _run(tmp_path, registry, "test_failing", {"mode": "crash"})

    error = outcome.finish["payload"]["error"]
    assert outcome.status == "failed"
    assert error["type"] == "JobProcessDied" and "exited with code 7" in error["message"]


def test_shutdown_hands_back_a_job_that_stops_when_asked(tmp_path, registry):
    supervision = Supervision(grace_s=10)
    threading.Timer(0.5, supervision.shutdown.set).start()
    began = time.monotonic()

    outcome, _ = _run(tmp_path, registry, "test_sleeper", {"seconds": 30}, supervision)

    assert outcome.status == "handed_back"
    assert outcome.finish["payload"]["result"] is None
    assert time.monotonic() - began < 8


def test_shutdown_lets_a_job_that_completes_within_the_grace_period_succeed(tmp_path, registry):
    supervision = Supervision(grace_s=20)
    threading.Timer(0.2, supervision.shutdown.set).start()

    outcome, _ = _run(tmp_path, registry, "test_stubborn", {"seconds": 1.5}, supervision)

    assert outcome.status == "succeeded"
    assert outcome.finish["payload"]["result"]["done"] is True


def test_a_job_that_ignores_cancellation_is_killed_after_the_grace_period(tmp_path, registry):
    supervision = Supervision(grace_s=0.5)
    threading.Timer(0.3, supervision.shutdown.set).start()
    began = time.monotonic()

    outcome, _ = _run(tmp_path, registry, "test_stubborn", {"seconds": 60}, supervision)

    assert outcome.status == "handed_back"
    assert time.monotonic() - began < 10


@pytest.mark.parametrize(("report", "reason", "killed", "expected"), [
    ({"outcome": "returned", "result": {"a": 1}}, None, False, "succeeded"),
    ({"outcome": "raised", "error": {"message": "x"}}, None, False, "failed"),
    (None, None, False, "failed"),
    ({"outcome": "cancelled", "error": {}}, "cancelled", False, "cancelled"),
    ({"outcome": "returned", "result": {"partial": True}, "cancelled_seen": True}, "cancelled", False, "cancelled"),
    (None, "cancelled", True, "cancelled"),
    ({"outcome": "returned", "result": {}, "cancelled_seen": False}, "shutdown", False, "succeeded"),
    ({"outcome": "returned", "result": {}, "cancelled_seen": True}, "shutdown", False, "succeeded"),
    ({"outcome": "cancelled", "error": {}, "cancelled_seen": True}, "shutdown", False, "handed_back"),
    (None, "shutdown", True, "handed_back"),
    ({"outcome": "returned", "result": {}}, "superseded", False, "superseded"),
])
def test_status_rules(report, reason, killed, expected):
    assert decide_status(report, reason, 0, killed)[0] == expected


def test_a_cancelled_job_keeps_its_partial_result():
    status, result, error = decide_status({"outcome": "returned", "result": {"rows": 3}, "cancelled_seen": True},
                                          "cancelled", 0, False)
    assert (status, result, error["type"]) == ("cancelled", {"rows": 3}, "JobCancelled")
