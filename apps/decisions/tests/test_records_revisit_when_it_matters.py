"""Issue item 9, "Revisit when it matters": a new version of a cited price flags an accepted record as soon as it
commits (not the next morning), a cited price stale by age flags it too, the record lists every benchmark job (and
pins every artifact) its comparison used, and it names its signers and its team as they were when they signed."""

import datetime
import re

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import ObjectChange
from apps.benchmarks.models import Artifact, Job, JobAttempt, Result
from apps.comparison.tests.builders import observed_at
from apps.decisions import services, tasks
from apps.decisions.models import DecisionRecord, Notification, RecordStatus, RevisitFlag
from apps.decisions.tests import records_builders as build
from apps.evidence.services import candidate_figure_set
from apps.fleet.services import pool_create
from apps.fleet.tests.helpers import register_agent
from apps.quotes import services as quote_services

pytestmark = pytest.mark.django_db


def _open_flags(record):
    return list(RevisitFlag.objects.filter(record=record, cleared_at__isnull=True).order_by("reason", "subject"))


def _section(page: str, start: str) -> str:
    """The HTML from the element that opens with `start` to the end of its section or paragraph."""
    found = re.search(re.escape(start) + r".*?</(section|p)>", page, re.DOTALL)
    assert found, f"{start} is not on the page"
    return found.group(0)


# --- 1. A new price version flags the citing record once it commits ---------------------------------------------


def test_a_new_version_of_a_cited_price_flags_the_record_right_after_it_commits(
    team, client, django_capture_on_commit_callbacks
):
    setup = build.accepted(team)
    record = setup.record
    cited = setup.example.b.quote.price_versions.get(component="list_price")
    notified_before = Notification.objects.filter(record=record, event="revisit_flagged").count()

    with django_capture_on_commit_callbacks(execute=True):
        quote_services.price_record(
            actor=setup.people.author, quote=setup.example.b.quote, component="list_price", amount="4.20",
            source_kind="price_page", source_reference="https://vendor.example.test/pricing#2027",
            observed_at=observed_at(),
        )

    # No beat task ran: the commit of the price version did it.
    (flag,) = _open_flags(record)
    assert (flag.reason, flag.subject) == ("price_changed", f"price:{cited.pk}")
    assert flag.details["new_amount"] == "4.20"
    entry = ObjectChange.objects.filter(object_id=str(record.pk), actor_label=services.PRICE_VERSION_ACTOR).get()
    assert entry.after == {"revisit_flags": [f"price_changed:price:{cited.pk}"]}
    assert Notification.objects.filter(record=record, event="revisit_flagged").count() > notified_before

    # The record itself never changed, and the daily task finds nothing more to do.
    fresh = DecisionRecord.objects.get(pk=record.pk)
    assert fresh.status == RecordStatus.ACCEPTED and fresh.snapshot_json == record.snapshot_json
    assert tasks.flag_records_for_revisit() == {"flagged": 0, "cleared": 0, "withdrawn": 0}

    client.force_login(setup.people.finance)
    page = client.get(record.get_absolute_url()).content.decode()
    assert 'id="revisit"' in page and "version 2 costs 4.20 USD" in page


# --- 2. A cited price stale by age flags the record (the daily task) ---------------------------------------------


def test_a_cited_price_stale_by_age_flags_the_record_in_the_daily_task_and_the_page_says_so(team, client):
    setup = build.accepted(team)
    record = setup.record
    cited = setup.example.b.quote.price_versions.get(component="list_price")
    assert tasks.flag_records_for_revisit()["flagged"] == 0

    later = timezone.now() + datetime.timedelta(days=team.stale_price_age_days + 1)
    with time_machine.travel(later):
        tasks.flag_records_for_revisit()
        flags = {flag.subject: flag for flag in _open_flags(record)}
        assert flags[f"price:{cited.pk}"].reason == "price_stale"
        assert flags[f"price:{cited.pk}"].details["stale_after_days"] == team.stale_price_age_days
        assert {flag.reason for flag in flags.values()} == {"price_stale"}

        client.force_login(setup.people.finance)
        page = client.get(record.get_absolute_url()).content.decode()
    assert 'id="revisit"' in page
    assert f"List price of quote #{setup.example.b.quote.pk} cited by the record (version 1) is stale" in page


# --- 3. The record pins and lists every benchmark job its comparison used ----------------------------------------


def _job_with_artifact(team, pool, agent, *, name: str, digit: str):
    job = Job.objects.create(team=team, kind="throughput", spec={}, spec_sha256=digit * 64, target_pool=pool,
                             acceptance_criteria={"max_p95_ms": 2000}, status="succeeded")
    attempt = JobAttempt.objects.create(job=job, number=1, agent=agent, token_hash=f"{digit}b".ljust(64, "0"),
                                        lease_expires_at=timezone.now(), status="succeeded")
    artifact = Artifact.objects.create(job=job, attempt=attempt, sha256=f"{digit}c".ljust(64, "0"), name=name,
                                       media_type="application/gzip", size=10)
    result = Result.objects.create(job=job, attempt=attempt, status="succeeded", canonical=True,
                                   finished_at=timezone.now(), spec_sha256=digit * 64,
                                   acceptance_criteria={"max_p95_ms": 2000}, summary={"capacity_rps": 9})
    result.artifacts.add(artifact)
    return job, artifact


def test_an_accepted_record_pins_and_lists_every_job_its_measured_figures_came_from(team, client):
    who = build.people(team)
    setup = build.draft(team, who)
    pool = pool_create(team=team, name="trial-h200")
    agent, _token = register_agent(pool, machine_id="machine-revisit")
    job_a, artifact_a = _job_with_artifact(team, pool, agent, name="requests-a.jsonl.gz", digit="1")
    job_b, artifact_b = _job_with_artifact(team, pool, agent, name="requests-b.jsonl.gz", digit="2")
    # References as the benchmark ingest writes them: the job first, then what was measured.
    candidate_figure_set(actor=who.author, candidate=setup.example.b, metric="p95_latency_ms", value="900",
                         source="measured", reference=f"job:{job_a.pk} (measured): end-to-end p95")
    candidate_figure_set(actor=who.author, candidate=setup.example.a, metric="p95_latency_ms", value="950",
                         source="measured",
                         reference=f"job:{job_b.pk} (measured, phase 3 failover): end-to-end p95")

    setup.record = services.record_propose(actor=who.author, record=setup.record)
    build.sign(setup, "platform", "finance", "product")
    record = setup.record
    assert record.status == RecordStatus.ACCEPTED

    for artifact in (artifact_a, artifact_b):
        artifact.refresh_from_db()
        assert artifact.pinned
    assert [entry["job_id"] for entry in record.snapshot["inputs"]["benchmark_results"]] == [job_a.pk, job_b.pk]
    assert sorted(item["name"] for item in record.snapshot["cited_artifacts"]) == [
        "requests-a.jsonl.gz", "requests-b.jsonl.gz"
    ]

    client.force_login(who.finance)
    page = client.get(record.get_absolute_url()).content.decode()
    jobs = _section(page, '<dd id="cited-jobs">')
    for job, artifact in ((job_a, artifact_a), (job_b, artifact_b)):
        item = re.search(rf'<li data-job="{job.pk}">.*?</li>', jobs).group(0)
        assert artifact.name in item and "no artifact pinned" not in item


# --- 4. Signers and team as they were at signing ------------------------------------------------------------------


def test_renaming_the_signers_and_the_team_after_signing_leaves_the_record_page_as_it_was(team, client):
    who = build.people(team, prefix="rn-")
    who.finance.first_name, who.finance.last_name = "Fatima", "Ng"
    who.finance.save()
    setup = build.accepted(team, who)
    record = setup.record

    who.finance.username, who.finance.first_name, who.finance.last_name = "renamed-finance", "Someone", "Else"
    who.finance.save()
    who.product.username = "renamed-product"
    who.product.save()
    team.name = "Renamed Team"
    team.save()

    client.force_login(who.reviewer)
    page = client.get(record.get_absolute_url()).content.decode()
    approvals = _section(page, '<section id="approvals"')
    assert "Fatima Ng" in approvals and "rn-finance" in approvals and "rn-product" in approvals
    assert "rn-reviewer" in approvals
    assert "renamed-" not in approvals and "Someone Else" not in approvals
    links = _section(page, '<p class="record-links">')
    assert "Platform Team" in links and "Renamed Team" not in links

    # The API names them as the page does.
    stages = client.get(reverse("records-api:record-detail", args=[record.pk])).json()["stages"]
    assert [(stage["reviewer"], stage["team_name"]) for stage in stages] == [
        ("rn-reviewer", "Platform Team"), ("rn-finance", "Platform Team"), ("rn-product", "Platform Team")
    ]
    assert stages[1]["reviewer_name"] == "Fatima Ng"
