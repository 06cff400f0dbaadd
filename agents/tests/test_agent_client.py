"""The protocol client against a real HTTP server on loopback (no mocked transport)."""

import hashlib

import pytest
from dossier_agent import __version__
from dossier_agent.client import AgentClient, encode_json
from dossier_agent.errors import AgentTooOld, AttemptSuperseded, AuthenticationFailed, PermanentError


@pytest.fixture
def client(server):
    with AgentClient(server.url, agent_token=server.register_agent()) as running:
        yield running


def _claim(server, client, kind="inventory"):
    job_id = server.state.add_job(kind, {"size": 1})
    claim = client.claim({"job_kinds": [kind], "operations": [], "wait_s": 0})
    assert claim["job"]["id"] == job_id
    return job_id, claim


def test_register_returns_a_token_and_intervals(server):
    with AgentClient(server.url) as anonymous:
        status, reply = anonymous.register({
            "registration_token": server.state.registration_token, "name": "node", "agent_version": __version__,
            "protocol_version": 1, "machine_id": "m", "job_kinds": ["inventory"], "operations": [], "inventory": {},
        })
    assert status == 201
    assert reply["agent_token"].startswith("dsa_")
    assert reply["heartbeat_interval_s"] > 0 and reply["limits"]["max_artifact_bytes"] > 0


def test_a_wrong_registration_token_is_a_401(server):
    with AgentClient(server.url) as anonymous, pytest.raises(AuthenticationFailed) as raised:
        anonymous.register({"registration_token": "dsr_wrong", "agent_version": __version__})
    assert raised.value.code == "invalid_registration_token"


def test_every_call_carries_the_agent_version_and_an_old_agent_gets_426(server, client):
    server.state.min_agent_version = "99.0.0"
    with pytest.raises(AgentTooOld) as raised:
        client.heartbeat({})
    assert raised.value.body["min_agent_version"] == "99.0.0"


def test_a_wrong_agent_token_is_a_401(server):
    with AgentClient(server.url, agent_token="dsa_not-a-token") as stranger, pytest.raises(AuthenticationFailed):
        stranger.claim({"job_kinds": ["inventory"]})


def test_claim_without_work_is_none(client):
    assert client.claim({"job_kinds": ["inventory"], "operations": [], "wait_s": 0}) is None


def test_a_job_goes_through_start_lease_events_artifact_and_finish(server, client):
    job_id, claim = _claim(server, client)
    token, attempt = claim["job_token"], claim["attempt"]
    assert token.startswith("dsj_") and attempt == 1

    started = client.start(job_id, token, {"attempt": 1, "started_at": "t", "inventory": {"gpus": []}})
    assert started["status"] == "running" and started["cancel_requested"] is False
    assert client.renew_lease(job_id, token, {"attempt": 1, "progress": 0.5})["cancel_requested"] is False

    events = [{"kind": "progress", "ts": "t", "data": {"fraction": 0.5, "message": ""}}] * 3
    assert client.post_events(job_id, token, 0, {"attempt": 1, "events": events})["stored"] == 3
    resent = client.post_events(job_id, token, 0, {"attempt": 1, "events": events})
    assert (resent["stored"], resent["duplicates"]) == (0, 3)

    data = b"raw records"
    digest = hashlib.sha256(data).hexdigest()
    assert client.put_artifact(job_id, token, digest, data, "records é.jsonl", "application/x-ndjson")[0] == 201
    assert client.put_artifact(job_id, token, digest, data, "records é.jsonl", "application/x-ndjson")[0] == 200
    assert server.state.jobs[job_id].artifacts[digest]["name"] == "records é.jsonl"

    body = encode_json({"attempt": 1, "status": "succeeded", "result": {"ok": True},
                        "artifacts": [{"sha256": digest, "name": "r", "media_type": "x/y", "size": len(data)}],
                        "error": None, "event_count": 3})
    first = client.finish(job_id, token, "key-1", body)
    again = client.finish(job_id, token, "key-1", body)
    assert first == again == (201, first[1])
    assert first[1]["canonical"] is True
    job = server.state.jobs[job_id]
    assert job.status == "succeeded" and job.current.finish_calls == 2
    assert len(server.state.finished_attempts(job_id)) == 1


def test_the_same_key_with_another_body_is_a_conflict(server, client):
    job_id, claim = _claim(server, client)
    token = claim["job_token"]
    client.start(job_id, token, {"attempt": 1, "started_at": "t", "inventory": {}})
    client.finish(job_id, token, "k", encode_json({"attempt": 1, "status": "failed", "artifacts": []}))

    with pytest.raises(PermanentError) as raised:
        client.finish(job_id, token, "k", encode_json({"attempt": 1, "status": "succeeded", "artifacts": []}))
    assert (raised.value.status, raised.value.code) == (409, "idempotency_key_reused")


def test_a_body_that_does_not_hash_to_its_name_is_refused(server, client):
    job_id, claim = _claim(server, client)
    with pytest.raises(PermanentError) as raised:
        client.put_artifact(job_id, claim["job_token"], "0" * 64, b"data", "x", "application/octet-stream")
    assert (raised.value.status, raised.value.code) == (400, "digest_mismatch")


def test_a_superseded_attempt_gets_409_on_lease(server, client):
    job_id, claim = _claim(server, client)
    client.start(job_id, claim["job_token"], {"attempt": 1, "started_at": "t", "inventory": {}})
    server.state.supersede(job_id)

    with pytest.raises(AttemptSuperseded) as raised:
        client.renew_lease(job_id, claim["job_token"], {"attempt": 1, "progress": None})
    assert raised.value.code == "attempt_superseded"


def test_cancellation_travels_on_the_lease_reply(server, client):
    job_id, claim = _claim(server, client)
    client.start(job_id, claim["job_token"], {"attempt": 1, "started_at": "t", "inventory": {}})
    server.state.cancel(job_id)

    assert client.renew_lease(job_id, claim["job_token"], {"attempt": 1})["cancel_requested"] is True


def test_another_jobs_token_is_a_403_and_another_agents_job_a_404(server, client):
    first_id, first = _claim(server, client)
    _, second = _claim(server, client)
    with pytest.raises(PermanentError) as raised:
        client.start(first_id, second["job_token"], {"attempt": 1, "started_at": "t", "inventory": {}})
    assert (raised.value.status, raised.value.code) == (403, "invalid_job_token")

    with AgentClient(server.url, agent_token=server.register_agent()) as other_agent, \
            pytest.raises(PermanentError) as raised:
        other_agent.start(first_id, first["job_token"], {"attempt": 1, "started_at": "t", "inventory": {}})
    assert raised.value.status == 404
