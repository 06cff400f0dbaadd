"""Objects for the benchmarks' parameterised URLs (see tests/url_registry.py): every one belongs to a team."""

import hashlib
import io
import itertools

from django.utils import timezone

from apps.benchmarks.models import JobAttempt
from apps.benchmarks.services import artifact_store, job_claim, plan_create
from apps.benchmarks.tests.helpers import queue_jobs
from apps.fleet.tests.url_fixtures import make_agent, make_pool

_numbers = itertools.count(1)


def make_plan(team):
    return plan_create(team=team, name=f"url-fixture-plan-{next(_numbers)}", target_pool=make_pool(team),
                       spec={"jobs": [{"kind": "inventory"}]})


def make_job(team):
    (job,) = queue_jobs(make_pool(team))
    return job


def _claimed_attempt(team) -> JobAttempt:
    agent = make_agent(team)
    queue_jobs(agent.pool)
    return job_claim(agent=agent, job_kinds=["inventory"], operations=[]).attempt


#: the same bytes every time: content-addressed storage keeps one file, however often the fixtures run
ARTIFACT_BYTES = b'{"url_fixture": true}\n'


def make_artifact(team):
    """A real artifact, stored through the upload service (so its download answers 200)."""
    attempt = _claimed_attempt(team)
    return artifact_store(
        attempt=attempt, sha256=hashlib.sha256(ARTIFACT_BYTES).hexdigest(), name="fixture.jsonl",
        media_type="application/x-ndjson", stream=io.BytesIO(ARTIFACT_BYTES), declared_size=len(ARTIFACT_BYTES),
    ).artifact


def make_result_job(team):
    from apps.benchmarks.services import attempt_finish

    attempt = _claimed_attempt(team)
    payload = {"attempt": attempt.number, "status": "succeeded", "finished_at": timezone.now(), "result": {},
               "artifacts": [], "error": None, "event_count": 0, "agent_version": "0.1.0"}
    attempt_finish(attempt=attempt, idempotency_key=f"fixture-{attempt.pk}", raw_body=b"{}", payload=payload)
    return attempt.result


def _make_candidate(team):
    from apps.quotes.tests.url_fixtures import make_candidate

    return make_candidate(team)


def make_figure_measurement(team):
    from apps.benchmarks.tests.helpers import measured_figure

    figure = measured_figure(_make_candidate(team), "p95_latency_ms", "850")
    return figure.measurement


URL_FIXTURES = {
    "benchmarks:plan-detail": make_plan,
    "benchmarks:plan-dispatch": make_plan,
    "benchmarks:plan-edit": make_plan,
    "benchmarks:plan-sweep-edit": make_plan,
    "benchmarks:plan-operations-edit": make_plan,
    "benchmarks:plan-acceptance-edit": make_plan,
    "benchmarks:plan-interconnect-edit": make_plan,
    "benchmarks:plan-checkpoint-edit": make_plan,
    "benchmarks:plan-copy": make_plan,
    "benchmarks:run-inventory": lambda team: {"agent_pk": make_agent(team).pk},
    "benchmarks:job-detail": make_job,
    "benchmarks:job-progress": make_job,
    "benchmarks:job-events": make_job,
    "benchmarks:job-cancel": make_job,
    "benchmarks:artifact-download": make_artifact,
    "benchmarks:memory-fit-plan": lambda team: {"candidate_pk": _make_candidate(team).pk},
    "benchmarks-api:plan-detail": make_plan,
    "benchmarks-api:job-detail": make_job,
    "benchmarks-api:job-cancel": make_job,
    "benchmarks-api:job-events": make_job,
    "benchmarks-api:artifact-detail": make_artifact,
    "benchmarks-api:result-detail": make_result_job,
    "benchmarks-api:figure-measurement-detail": make_figure_measurement,
}
