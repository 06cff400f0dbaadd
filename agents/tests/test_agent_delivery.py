"""Spool delivery: in protocol order, deleted only after a 2xx, exactly once across outages and resends."""

import pytest
from dossier_agent.client import AgentClient
from dossier_agent.delivery import deliver_all, deliver_attempt, hand_back_interrupted
from dossier_agent.errors import AuthenticationFailed, TransientError
from dossier_agent.spool import Spool, read_json


def _claimed_attempt(server, tmp_path, client):
    job_id = server.state.add_job("inventory")
    claim = client.claim({"job_kinds": ["inventory"]})
    client.start(job_id, claim["job_token"], {"attempt": 1, "started_at": "t", "inventory": {}})
    attempt = Spool(tmp_path / "spool").create_attempt({
        "job_id": job_id, "attempt": claim["attempt"], "job_token": claim["job_token"], "kind": "inventory",
        "spec": {},
    })
    return job_id, attempt


def _fill(attempt, status="succeeded"):
    attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {"message": str(i)}} for i in range(3)])
    attempt.write_event_batch(3, [{"kind": "progress", "ts": "t", "data": {"fraction": 1.0}}])
    record = attempt.write_artifact(b"evidence", "evidence.txt", "text/plain")
    attempt.write_finish({"status": status, "result": {"ok": True}, "artifacts": [record.as_dict()], "error": None,
                          "event_count": 4})
    return record


def test_everything_arrives_once_and_the_spool_empties(server, tmp_path):
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        job_id, attempt = _claimed_attempt(server, tmp_path, client)
        record = _fill(attempt)

        assert deliver_attempt(attempt, client) is True

    job = server.state.jobs[job_id]
    assert sorted(job.current.events) == [0, 1, 2, 3]
    assert job.artifacts[record.sha256]["data"] == b"evidence"
    assert job.current.finish["status"] == "succeeded" and job.current.finish["attempt"] == 1
    assert not attempt.directory.exists()


def test_while_the_server_is_down_nothing_is_deleted_and_later_it_arrives_exactly_once(server, tmp_path):
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        job_id, attempt = _claimed_attempt(server, tmp_path, client)
        _fill(attempt)
        server.stop()

        with pytest.raises(TransientError):
            deliver_attempt(attempt, client)
        assert len(attempt.pending_event_batches()) == 2 and attempt.read_finish() is not None

        server.start()  # same port
        assert deliver_attempt(attempt, client) is True

    assert len(server.state.finished_attempts(job_id)) == 1
    assert sorted(server.state.jobs[job_id].current.events) == [0, 1, 2, 3]


def test_a_lost_reply_means_a_resend_that_changes_nothing(server, tmp_path):
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        job_id, attempt = _claimed_attempt(server, tmp_path, client)
        _fill(attempt)
        finish = read_json(attempt.directory / "finish.json")
        assert deliver_attempt(attempt, client)

        # the agent crashed before deleting: the same spool is replayed
        replayed = Spool(tmp_path / "again").create_attempt(attempt.header)
        _fill(replayed)
        (replayed.directory / "finish.json").write_text(__import__("json").dumps(finish))
        assert deliver_attempt(replayed, client)

    current = server.state.jobs[job_id].current
    assert current.finish_calls == 2  # the second was answered from the stored reply
    assert len(current.events) == 4
    assert server.state.count("POST", "/finish$", 201) == 2


def test_a_permanently_refused_artifact_is_set_aside_and_the_rest_still_goes(server, tmp_path):
    server.state.max_artifact_bytes = 4
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        job_id, attempt = _claimed_attempt(server, tmp_path, client)
        attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}])
        record = attempt.write_artifact(b"far too large", "big.bin", "application/octet-stream")
        attempt.write_finish({"status": "failed", "result": None, "artifacts": [], "error": None, "event_count": 1})

        assert deliver_attempt(attempt, client) is True

    rejected = tmp_path / "spool" / "rejected" / attempt.key
    assert read_json(rejected / f"{record.sha256}.reply.json")["status"] == 413
    assert server.state.jobs[job_id].current.finish["status"] == "failed"


def test_a_401_during_delivery_stops_and_keeps_everything(server, tmp_path):
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        _, attempt = _claimed_attempt(server, tmp_path, client)
        _fill(attempt)
    with AgentClient(server.url, agent_token="dsa_revoked") as revoked, pytest.raises(AuthenticationFailed):
        deliver_attempt(attempt, revoked)
    assert len(attempt.pending_event_batches()) == 2 and attempt.read_finish() is not None


def test_an_attempt_cut_short_by_a_crash_is_handed_back(server, tmp_path):
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        job_id, attempt = _claimed_attempt(server, tmp_path, client)
        attempt.mark_started("2025-01-31T12:00:00.000Z", acknowledged=True)
        attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}] * 2)
        spool = Spool(tmp_path / "spool")

        assert hand_back_interrupted(spool) == [attempt.key]
        assert hand_back_interrupted(spool) == []  # once
        assert deliver_all(spool, client) == 0

    finish = server.state.jobs[job_id].attempts[0].finish
    assert finish["status"] == "handed_back"
    assert finish["error"]["type"] == "AgentRestarted"
    assert finish["event_count"] == 2
    assert server.state.jobs[job_id].status == "queued"  # the server re-queues it at once


def test_an_abandoned_attempt_uploads_its_events_but_never_finishes(server, tmp_path):
    with AgentClient(server.url, agent_token=server.register_agent()) as client:
        job_id, attempt = _claimed_attempt(server, tmp_path, client)
        attempt.write_event_batch(0, [{"kind": "log", "ts": "t", "data": {}}])
        attempt.mark_abandoned("superseded")
        assert deliver_attempt(attempt, client) is True
    assert server.state.jobs[job_id].current.finish is None
    assert len(server.state.jobs[job_id].current.events) == 1
