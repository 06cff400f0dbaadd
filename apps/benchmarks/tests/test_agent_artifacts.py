"""PUT /api/agent/v1/jobs/{id}/artifacts/{sha256} (docs/agent-protocol.md §3.7)."""

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.benchmarks.models import Artifact
from apps.benchmarks.services import artifact_set_pinned, artifacts_purge_expired
from apps.benchmarks.storage import artifact_storage, artifact_storage_name
from apps.benchmarks.tests.helpers import queue_jobs

pytestmark = pytest.mark.django_db

CONTENT = b'{"request": 1, "ttft_s": 0.12}\n' * 100


@pytest.fixture
def claimed(agent_api, pool):
    queue_jobs(pool, count=2)
    return agent_api.claim_job()


def _stored_files() -> list[str]:
    storage = artifact_storage()
    found = []

    def walk(folder):
        folders, files = storage.listdir(folder)
        found.extend(f"{folder}/{name}" if folder else name for name in files)
        for child in folders:
            walk(f"{folder}/{child}" if folder else child)

    if storage.exists(""):
        walk("")
    return found


def test_an_artifact_is_stored_under_its_digest(agent_api, claimed):
    response = agent_api.put_artifact(claimed, CONTENT, name="requests%20run%201.jsonl")

    digest = hashlib.sha256(CONTENT).hexdigest()
    assert response.status_code == 201
    assert response.json() == {"sha256": digest, "size": len(CONTENT), "created": True}
    artifact = Artifact.objects.get()
    assert artifact.name == "requests run 1.jsonl" and artifact.media_type == "application/gzip"
    assert artifact.storage_name == artifact_storage_name(digest)
    with artifact_storage().open(artifact.storage_name) as stored:
        assert stored.read() == CONTENT


def test_a_resent_artifact_changes_nothing(agent_api, claimed):
    agent_api.put_artifact(claimed, CONTENT)
    again = agent_api.put_artifact(claimed, CONTENT)
    assert again.status_code == 200 and again.json()["created"] is False
    assert Artifact.objects.count() == 1


def test_the_same_bytes_from_two_jobs_are_stored_once(agent_api, claimed):
    other = agent_api.claim_job()
    agent_api.put_artifact(claimed, CONTENT)
    agent_api.put_artifact(other, CONTENT)
    assert Artifact.objects.count() == 2
    assert len(_stored_files()) == 1


def test_a_body_that_does_not_hash_to_its_name_is_refused_and_nothing_is_stored(agent_api, claimed):
    response = agent_api.put_artifact(claimed, CONTENT, sha256=hashlib.sha256(b"other").hexdigest())
    assert response.status_code == 400
    assert response.json()["error"] == "digest_mismatch"
    assert Artifact.objects.count() == 0
    assert _stored_files() == []


def test_an_artifact_over_the_size_limit_is_a_413(agent_api, claimed, settings):
    settings.DOSSIER_ARTIFACT_MAX_BYTES = 1000
    response = agent_api.put_artifact(claimed, CONTENT)
    assert response.status_code == 413
    assert response.json()["error"] == "artifact_too_large"
    assert Artifact.objects.count() == 0 and _stored_files() == []


def test_artifacts_of_one_job_over_the_job_quota_are_a_413(agent_api, claimed, settings):
    settings.DOSSIER_JOB_ARTIFACT_MAX_BYTES = len(CONTENT) + 10
    assert agent_api.put_artifact(claimed, CONTENT).status_code == 201
    response = agent_api.put_artifact(claimed, CONTENT + b"more")
    assert response.status_code == 413
    assert response.json()["error"] == "job_artifact_quota_exceeded"
    assert Artifact.objects.count() == 1


@pytest.mark.parametrize("name", ["", "a/b.txt", "x" * 201, "%FF%FE"])
def test_a_bad_artifact_name_is_a_400(agent_api, claimed, name):
    response = agent_api.put_artifact(claimed, CONTENT, name=name)
    assert response.status_code == 400
    assert "X-Artifact-Name" in response.json()["fields"]
    assert Artifact.objects.count() == 0


@pytest.mark.parametrize("sha256", ["abc", "G" * 64, "A" * 64])
def test_a_malformed_digest_is_a_400(agent_api, claimed, sha256):
    response = agent_api.put_artifact(claimed, CONTENT, sha256=sha256)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


def test_retention_purges_old_unpinned_artifacts_but_never_a_pinned_one(agent_api, claimed, settings):
    settings.DOSSIER_ARTIFACT_RETENTION_DAYS = 30
    agent_api.put_artifact(claimed, CONTENT, name="old.jsonl")
    agent_api.put_artifact(claimed, b"pinned bytes", name="cited.jsonl")
    agent_api.put_artifact(claimed, b"fresh bytes", name="fresh.jsonl")
    old_time = timezone.now() - timedelta(days=31)
    Artifact.objects.exclude(name="fresh.jsonl").update(created_at=old_time)
    artifact_set_pinned(artifact=Artifact.objects.get(name="cited.jsonl"), pinned=True)

    assert artifacts_purge_expired() == 1

    purged = Artifact.objects.get(name="old.jsonl")
    assert purged.purged_at is not None
    assert Artifact.objects.get(name="cited.jsonl").purged_at is None
    assert Artifact.objects.get(name="fresh.jsonl").purged_at is None


def test_purging_deletes_the_file_once_the_transaction_commits(agent_api, claimed, settings,
                                                               django_capture_on_commit_callbacks):
    settings.DOSSIER_ARTIFACT_RETENTION_DAYS = 1
    agent_api.put_artifact(claimed, CONTENT)
    Artifact.objects.update(created_at=timezone.now() - timedelta(days=2))
    with django_capture_on_commit_callbacks(execute=True):
        artifacts_purge_expired()
    assert _stored_files() == []


def test_retention_zero_keeps_everything(agent_api, claimed, settings):
    settings.DOSSIER_ARTIFACT_RETENTION_DAYS = 0
    agent_api.put_artifact(claimed, CONTENT)
    Artifact.objects.update(created_at=timezone.now() - timedelta(days=3650))
    assert artifacts_purge_expired() == 0
