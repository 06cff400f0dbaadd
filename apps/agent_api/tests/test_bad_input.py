"""Bad input to the agent API is a 4xx naming the field, never a 500 and never half a write (issue 18, item 7).

Each body below parses with Python's json module but holds what PostgreSQL refuses (NUL, a lone surrogate, NaN,
Infinity) or what no column holds (an integer past 64 bits, a count past 2^31 - 1), or nests past 64 levels. The old
code stored it and failed at the INSERT with a 500, on every resend, so the job could never finish; on SQLite some
were stored. Run on SQLite and on PostgreSQL (DATABASE_URL=postgres://…)."""

import hashlib
import json

import pytest
from django.db import IntegrityError

from apps.benchmarks.models import Artifact, Job, JobAttempt, JobEvent, Result
from apps.benchmarks.services import artifact_store
from apps.benchmarks.storage import artifact_storage, artifact_storage_name
from apps.benchmarks.tests.helpers import queue_jobs
from apps.fleet.tests.helpers import AgentApi, register_agent

pytestmark = pytest.mark.django_db

CONTENT = b'{"request": 1}\n' * 10


@pytest.fixture
def started(agent_api, pool):
    queue_jobs(pool, count=1)
    job = agent_api.claim_job()
    assert agent_api.start(job).status_code == 200
    return job


def _deep(levels: int) -> dict:
    value: dict = {}
    for _level in range(levels - 1):
        value = {"a": value}
    return value


def _finish_raw(agent_api, job, result_json: str, **fields) -> bytes:
    body = {"attempt": job.attempt, "status": "succeeded", "finished_at": "2025-01-31T12:03:10.000Z",
            "artifacts": [], "error": None, **fields}
    text = json.dumps(body)
    return (text[:-1] + f', "result": {result_json}}}').encode()


BAD_RESULTS = [
    ('{"note": "a\\u0000b"}', "result.note"),
    ('{"a\\u0000": 1}', "result"),
    ('{"samples": [1.5, NaN]}', "result.samples[1]"),
    ('{"x": Infinity}', "result.x"),
    ('{"x": -Infinity}', "result.x"),
    ('{"x": 1e999}', "result.x"),
    ('{"x": 18446744073709551616}', "result.x"),
    ('{"x": -9223372036854775809}', "result.x"),
    ('{"x": "\\ud800"}', "result.x"),
    (json.dumps(_deep(64)), "result" + ".a" * 63),  # the body is depth 1, the result 2: 65 levels in all
]


@pytest.mark.parametrize(("result_json", "path"), BAD_RESULTS,
                         ids=["nul", "nul-key", "nan", "inf", "-inf", "overflow", "int-2^64", "int-below-int64",
                              "surrogate", "depth-65"])
def test_a_finish_with_a_value_no_database_stores_is_a_400_naming_it_and_the_job_can_still_finish(
        agent_api, started, result_json, path):
    raw = _finish_raw(agent_api, started, result_json)
    response = agent_api.finish(started, raw=raw)
    assert response.status_code == 400, response.content  # old code: 500 on PostgreSQL (stored on SQLite)
    assert response.json()["error"] == "validation_error"
    assert list(response.json()["fields"]) == [path]
    assert not Result.objects.exists()
    assert not JobAttempt.objects.get().finish_idempotency_key

    assert agent_api.finish(started, result={"ok": True}).status_code == 201  # the job still finishes


def test_values_at_the_limits_are_accepted(agent_api, started):
    raw = _finish_raw(agent_api, started, json.dumps(
        {"max": 2**63 - 1, "min": -(2**63), "tiny": 5e-324, "deep": _deep(62), "text": "é\u00a0ü"}))
    assert agent_api.finish(started, raw=raw).status_code == 201
    assert Result.objects.get().result["max"] == 2**63 - 1


def test_nesting_that_breaks_the_parser_is_a_400(agent_api, started):
    raw = _finish_raw(agent_api, started, "[" * 50_000 + "]" * 50_000)
    response = agent_api.finish(started, raw=raw)
    assert response.status_code == 400  # old code: RecursionError, 500
    assert "Nested deeper than 64" in response.json()["detail"]


def test_a_count_past_the_column_is_a_400(agent_api, started):
    response = agent_api.finish(started, event_count=2**31)
    assert response.status_code == 400  # old code: 500 on PostgreSQL (integer out of range)
    assert list(response.json()["fields"]) == ["event_count"]
    assert not Result.objects.exists()


def test_an_event_with_a_nul_is_a_400_naming_it(agent_api, started):
    event = {"kind": "progress", "ts": "2025-01-31T12:00:05.000Z", "data": {"message": "half\u0000way"}}
    response = agent_api.events(started, 0, [event])
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["events[0].data.message"]
    assert not JobEvent.objects.exists()


@pytest.mark.parametrize("seq", ["²", "2147483648", "-1"])
def test_a_sequence_number_that_is_no_column_value_is_a_400(agent_api, started, seq):
    event = {"kind": "progress", "ts": "2025-01-31T12:00:05.000Z", "data": {"fraction": 0.5}}
    response = agent_api.post(f"/jobs/{started.job_id}/events?seq={seq}", {"attempt": 1, "events": [event]},
                              job_token=started.job_token)
    assert response.status_code == 400  # old code: "²" passed isdigit() and int() failed: 500
    assert list(response.json()["fields"]) == ["seq"]


def test_a_batch_numbered_past_the_column_is_a_400(agent_api, started):
    event = {"kind": "progress", "ts": "2025-01-31T12:00:05.000Z", "data": {"fraction": 0.5}}
    response = agent_api.events(started, 2**31 - 1, [event, event])
    assert response.status_code == 400 and list(response.json()["fields"]) == ["seq"]


def test_a_job_id_with_a_unicode_digit_is_a_404(agent_api, started):
    response = agent_api.lease(type(started)("²", 1, started.job_token))
    assert response.status_code == 404  # old code: 500


def test_an_offline_spec_with_a_nul_is_a_400(agent_api):
    body = {"offline_run_id": "run-1", "kind": "inventory", "spec": {"probe": "x\u0000"}}
    response = agent_api.post("/jobs/offline", body)
    assert response.status_code == 400 and list(response.json()["fields"]) == ["spec.probe"]
    assert not Job.objects.exists()


# --- artifacts ---------------------------------------------------------------------------------------------------


def _stored_files(storage) -> list[str]:
    found = []

    def walk(folder):
        folders, files = storage.listdir(folder)
        found.extend(files)
        for child in folders:
            walk(f"{folder}/{child}" if folder else child)

    if storage.exists(""):
        walk("")
    return found


@pytest.mark.parametrize("name", ["run%00.jsonl", "run%0A.jsonl", "%7F"])
def test_an_artifact_name_with_a_control_character_is_refused_before_anything_is_stored(agent_api, started, name):
    response = agent_api.put_artifact(started, CONTENT, name=name)
    assert response.status_code == 400  # old code: 201 on SQLite; on PostgreSQL a 500 and the file left behind
    assert list(response.json()["fields"]) == ["X-Artifact-Name"]
    assert not Artifact.objects.exists() and _stored_files(artifact_storage()) == []


def test_a_failure_after_the_file_was_stored_removes_it(agent_api, started):
    """A row the database refuses (here: no name, NOT NULL) after the file went to storage: no orphan file."""
    attempt = JobAttempt.objects.get()
    digest = hashlib.sha256(CONTENT).hexdigest()

    class Body:
        def __init__(self):
            self.sent = False

        def read(self, _size):
            if self.sent:
                return b""
            self.sent = True
            return CONTENT

    with pytest.raises(IntegrityError):
        artifact_store(attempt=attempt, sha256=digest, name=None, media_type="text/plain", stream=Body(),
                       declared_size=len(CONTENT))
    assert not Artifact.objects.exists()
    assert not artifact_storage().exists(artifact_storage_name(digest))  # old code: the file stayed


def test_a_finished_attempt_takes_no_more_artifacts(agent_api, started):
    assert agent_api.finish(started).status_code == 201
    response = agent_api.put_artifact(started, CONTENT)
    assert response.status_code == 409  # old code: 201
    assert response.json()["error"] == "attempt_finished"
    assert not Artifact.objects.exists() and _stored_files(artifact_storage()) == []


def test_an_artifact_sent_before_the_finish_is_still_taken(agent_api, started):
    assert agent_api.put_artifact(started, CONTENT).status_code == 201
    digest = hashlib.sha256(CONTENT).hexdigest()
    finish = agent_api.finish(started, artifacts=[{"sha256": digest, "name": "requests.jsonl.gz"}])
    assert finish.status_code == 201


# --- offline jobs of undeclared kinds or operations --------------------------------------------------------------

OPERATIONS_SPEC = {"scenarios": [{"name": "kill_worker", "recovery": "restart"}], "cold_start": {"repeats": 1}}


def test_an_offline_job_of_a_kind_the_agent_never_declared_is_refused(agent_api):
    body = {"offline_run_id": "run-2", "kind": "throughput", "spec": {}}
    response = agent_api.post("/jobs/offline", body)
    assert response.status_code == 400  # old code: 201, a throughput job the agent never declared
    assert list(response.json()["fields"]) == ["kind"]
    assert not Job.objects.exists()


def test_an_offline_job_needing_operations_the_agent_never_declared_is_refused(pool):
    _agent, token = register_agent(pool, machine_id="machine-ops", job_kinds=("inventory", "operations"),
                                   operations=("kill_worker",))
    body = {"offline_run_id": "run-3", "kind": "operations", "spec": OPERATIONS_SPEC}
    response = AgentApi(token).post("/jobs/offline", body)
    assert response.status_code == 400  # old code: 201
    assert list(response.json()["fields"]) == ["spec"]
    assert "restart, start, stop" in response.json()["fields"]["spec"][0]
    assert not Job.objects.exists()


def test_an_offline_job_the_agent_declared_everything_for_is_created(pool):
    _agent, token = register_agent(pool, machine_id="machine-ops", job_kinds=("inventory", "operations"),
                                   operations=("kill_worker", "restart", "stop", "start"))
    body = {"offline_run_id": "run-4", "kind": "operations", "spec": OPERATIONS_SPEC}
    response = AgentApi(token).post("/jobs/offline", body)
    assert response.status_code == 201, response.content
    assert Job.objects.get().required_operations == ["kill_worker", "restart", "start", "stop"]
