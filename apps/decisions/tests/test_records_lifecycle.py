"""The lifecycle of a decision record through its services: draft → proposed (snapshot frozen, artifacts pinned) →
platform review, finance, product → accepted or rejected → superseded, by the approval rules (docs/permissions.md)."""

import datetime
import hashlib
import json
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from apps.audit.models import ObjectChange
from apps.comparison.tests.builders import observed_at
from apps.decisions import services
from apps.decisions.models import STAGE_ORDER, ApprovalStage, DecisionRecord, RecordStatus, StageKind, StageStatus
from apps.decisions.tests import records_builders as build
from apps.evidence.services import candidate_figure_set
from apps.quotes import services as quote_services
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PLATFORM, FINANCE, PRODUCT = StageKind.PLATFORM, StageKind.FINANCE, StageKind.PRODUCT


def _stage_statuses(record):
    return {
        stage.kind: stage.status
        for stage in ApprovalStage.objects.filter(record=record, round=record.proposal_round)
    }


def _new_price(quote, actor, amount):
    return quote_services.price_record(
        actor=actor, quote=quote, component="list_price", amount=amount, source_kind="price_page",
        source_reference="https://vendor.example.test/pricing#new", observed_at=observed_at(),
    )


# --- Proposal and the snapshot ----------------------------------------------------------------------------------


def test_proposing_freezes_every_input_and_the_comparison_with_a_content_hash(team):
    setup = build.proposed(team, choose="a")
    record = setup.record
    snapshot = record.snapshot

    assert record.status == RecordStatus.PROPOSED and record.proposal_round == 1
    assert record.snapshot_sha256 == hashlib.sha256(record.snapshot_json.encode("utf-8")).hexdigest()
    assert record.snapshot_matches_hash()
    # Canonical JSON: sorted keys, no spaces, so the same snapshot always hashes the same.
    assert record.snapshot_json == json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    inputs = snapshot["inputs"]
    assert inputs["workload"]["id"] == setup.example.summary.pk and inputs["workload"]["version"] == 1
    prices = {entry["candidate"]["id"]: entry["prices"] for entry in inputs["candidates"]}
    b_price = next(price for price in prices[setup.example.b.pk] if price["component"] == "list_price")
    assert (b_price["amount"], b_price["number"], b_price["currency"]) == ("3.50", 1, "USD")
    assert inputs["acceptance_criteria"]["unit_of_success"] == "accepted_response"
    assert inputs["acceptance_criteria"]["quality_acceptance_rate"] == "1.0000"
    assert {item["metric"] for entry in inputs["candidates"] for item in entry["phase4_inputs"]} >= {
        "capacity_at_slo", "retry_rate",
    }
    assert "exchange_rates" in inputs and "benchmark_results" in inputs

    comparison = snapshot["comparison"]
    unit_costs = {item["label"]: item["row"]["effective_unit_cost"] for item in comparison["results"]}
    assert Decimal(unit_costs["A on-demand H100"]) == Decimal("0.0004245")
    assert Decimal(unit_costs["B reserved H200"]) == Decimal("0.0003515")
    assert Decimal(unit_costs["C API route"]) == Decimal("0.0008325")
    # The record's choice (A, the cheapest hour but not the cheapest output) is passed to "chose by hourly rate".
    assert comparison["chosen_id"] == str(setup.example.a.pk)
    hourly = next(rule for rule in comparison["rules"] if rule["code"] == "chose_by_hourly_rate")
    assert [finding["reason"] for finding in hourly["findings"]] == ["cheapest_hour_not_cheapest_output"]
    assert set(hourly["findings"][0]["message"]) == {"en", "fr", "id"}
    assert [stage.kind for stage in ApprovalStage.objects.filter(record=record).order_by("position")] == [
        PLATFORM, FINANCE, PRODUCT,
    ]


def test_a_proposal_needs_the_choice_the_capacity_model_and_the_rationale(team):
    setup = build.draft(team, chosen_option=None, capacity_model="", rationale="")
    with pytest.raises(ValidationError) as refused:
        services.record_propose(actor=setup.people.author, record=setup.record)
    assert set(refused.value.message_dict) == {"chosen_option", "capacity_model", "rationale"}
    assert DecisionRecord.objects.get(pk=setup.record.pk).status == RecordStatus.DRAFT


def test_the_chosen_option_must_be_a_candidate_of_the_records_workload_version(team):
    setup = build.draft(team)
    other = build.draft(team)
    with pytest.raises(ValidationError):
        services.record_update(actor=setup.people.author, record=setup.record, chosen_option=other.example.a)


def test_pinning_every_benchmark_artifact_the_snapshot_cites(team):
    from apps.benchmarks.models import Artifact, Job, JobAttempt, Result
    from apps.fleet.services import pool_create
    from apps.fleet.tests.helpers import register_agent

    setup = build.draft(team)
    pool = pool_create(team=team, name="trial-h200")
    agent, _token = register_agent(pool, machine_id="machine-records")
    job = Job.objects.create(team=team, kind="throughput", spec={}, spec_sha256="a" * 64, target_pool=pool,
                             acceptance_criteria={"max_p95_ms": 2000}, status="succeeded")
    attempt = JobAttempt.objects.create(job=job, number=1, agent=agent, token_hash="b" * 64,
                                        lease_expires_at=timezone.now(), status="succeeded")
    artifact = Artifact.objects.create(job=job, attempt=attempt, sha256="c" * 64, name="requests.jsonl.gz",
                                       media_type="application/gzip", size=10)
    result = Result.objects.create(job=job, attempt=attempt, status="succeeded", canonical=True,
                                   finished_at=timezone.now(), spec_sha256="a" * 64,
                                   acceptance_criteria={"max_p95_ms": 2000}, summary={"capacity_rps": 9})
    result.artifacts.add(artifact)
    candidate_figure_set(actor=setup.people.author, candidate=setup.example.b, metric="capacity_at_slo", value="9",
                     source="measured", reference=f"job:{job.pk}", capacity_unit="requests_per_second")

    record = services.record_propose(actor=setup.people.author, record=setup.record)

    artifact.refresh_from_db()
    assert artifact.pinned
    cited = record.snapshot["inputs"]["benchmark_results"]
    assert [entry["job_id"] for entry in cited] == [job.pk]
    assert cited[0]["result"]["acceptance_criteria"] == {"max_p95_ms": 2000}
    assert [item["sha256"] for item in record.snapshot["cited_artifacts"]] == ["c" * 64]


# --- The stages ---------------------------------------------------------------------------------------------------


def test_three_stages_signed_in_order_accept_the_record_and_each_step_is_audited(team):
    setup = build.proposed(team)
    build.sign(setup, PLATFORM)
    assert _stage_statuses(setup.record) == {PLATFORM: "approved", FINANCE: "pending", PRODUCT: "pending"}
    build.sign(setup, FINANCE, PRODUCT)

    record = DecisionRecord.objects.get(pk=setup.record.pk)
    assert record.status == RecordStatus.ACCEPTED and record.decided_at is not None
    signed = ApprovalStage.objects.filter(record=record).order_by("position")
    assert [(stage.reviewer, stage.snapshot_sha256) for stage in signed] == [
        (setup.people.reviewer, record.snapshot_sha256),
        (setup.people.finance, record.snapshot_sha256),
        (setup.people.product, record.snapshot_sha256),
    ]
    entries = ObjectChange.objects.for_object(record).order_by("pk")
    assert [(entry.action, entry.actor) for entry in entries] == [
        ("create", setup.people.author),
        ("transition", setup.people.author),  # proposed
        ("transition", setup.people.reviewer),
        ("transition", setup.people.finance),
        ("transition", setup.people.product),  # product approved
        ("transition", setup.people.product),  # accepted
    ]
    assert entries.last().after["status"] == "accepted"


@pytest.mark.parametrize("kind", STAGE_ORDER)
def test_the_author_approves_no_stage_even_holding_every_role(team, kind):
    who = build.people(team)
    who.author = UserFactory(username="author-all-roles", roles=["platform", "finance", "product"], teams=[team])
    setup = build.proposed(team, who)
    build.sign(setup, *STAGE_ORDER[: STAGE_ORDER.index(kind)])  # the stages before it, signed by the others
    with pytest.raises(PermissionDenied, match="author"):
        services.stage_decide(actor=who.author, record=setup.record, kind=kind, approve=True)
    with pytest.raises(PermissionDenied, match="author"):
        services.stage_decide(actor=who.author, record=setup.record, kind=kind, approve=False, comment="no")
    assert _stage_statuses(setup.record)[kind] == StageStatus.PENDING


def test_a_stage_is_signed_by_its_own_role_only(team):
    setup = build.proposed(team)
    with pytest.raises(PermissionDenied):
        services.stage_decide(actor=setup.people.finance, record=setup.record, kind=PLATFORM, approve=True)
    with pytest.raises(PermissionDenied):
        services.stage_decide(actor=setup.people.reviewer, record=setup.record, kind=FINANCE, approve=True)
    admin = UserFactory(username="admin-only", roles=["admin"], teams=[team])
    with pytest.raises(PermissionDenied):
        services.stage_decide(actor=admin, record=setup.record, kind=PLATFORM, approve=True)


def test_stages_are_signed_in_order(team):
    setup = build.proposed(team)
    with pytest.raises(services.RecordConflict):
        services.stage_decide(actor=setup.people.finance, record=setup.record, kind=FINANCE, approve=True)
    assert _stage_statuses(setup.record)[FINANCE] == StageStatus.PENDING


def test_one_person_signs_one_stage_of_a_proposal(team):
    setup = build.proposed(team)
    both = UserFactory(username="platform-and-finance", roles=["platform", "finance"], teams=[team])
    services.stage_decide(actor=both, record=setup.record, kind=PLATFORM, approve=True)
    with pytest.raises(PermissionDenied, match="another stage"):
        services.stage_decide(actor=both, record=setup.record, kind=FINANCE, approve=True)


def test_a_signed_stage_cannot_be_signed_again(team):
    setup = build.proposed(team)
    build.sign(setup, PLATFORM)
    other_reviewer = UserFactory(username="second-reviewer", roles=["platform"], teams=[team])
    with pytest.raises(services.RecordConflict):
        services.stage_decide(actor=other_reviewer, record=setup.record, kind=PLATFORM, approve=True)


def test_a_rejection_needs_its_reason_and_ends_the_proposal(team):
    setup = build.proposed(team)
    build.sign(setup, PLATFORM)
    with pytest.raises(ValidationError):
        services.stage_decide(actor=setup.people.finance, record=setup.record, kind=FINANCE, approve=False)
    assert DecisionRecord.objects.get(pk=setup.record.pk).status == RecordStatus.PROPOSED

    build.sign(setup, FINANCE, approve=False, comment="The reservation outlives the model.")
    record = DecisionRecord.objects.get(pk=setup.record.pk)
    assert record.status == RecordStatus.REJECTED
    assert _stage_statuses(record) == {PLATFORM: "approved", FINANCE: "rejected", PRODUCT: "withdrawn"}
    assert ApprovalStage.objects.get(record=record, kind=FINANCE).comment == "The reservation outlives the model."
    last = ObjectChange.objects.for_object(record).order_by("pk").last()
    assert last.after == {"status": "rejected", "reason": "The reservation outlives the model."}
    assert last.actor == setup.people.finance


# --- A changed input after the proposal ---------------------------------------------------------------------------


def test_a_new_price_version_after_the_proposal_withdraws_the_approvals_given(team):
    setup = build.proposed(team)
    build.sign(setup, PLATFORM)
    _new_price(setup.example.b.quote, setup.people.author, "3.60")

    with pytest.raises(services.InputsChanged):
        services.stage_decide(actor=setup.people.finance, record=setup.record, kind=FINANCE, approve=True)

    record = DecisionRecord.objects.get(pk=setup.record.pk)
    assert record.status == RecordStatus.PROPOSED and record.inputs_changed_at is not None
    assert _stage_statuses(record) == {PLATFORM: "withdrawn", FINANCE: "withdrawn", PRODUCT: "withdrawn"}
    with pytest.raises(services.InputsChanged):
        services.stage_decide(actor=setup.people.finance, record=record, kind=FINANCE, approve=True)

    # Proposed again: the new price is frozen and every stage starts over.
    record = services.record_propose(actor=setup.people.author, record=record)
    assert record.proposal_round == 2 and record.inputs_changed_at is None
    assert _stage_statuses(record) == {PLATFORM: "pending", FINANCE: "pending", PRODUCT: "pending"}
    b_prices = next(entry["prices"] for entry in record.snapshot["inputs"]["candidates"]
                    if entry["candidate"]["id"] == setup.example.b.pk)
    assert [(price["number"], price["amount"]) for price in b_prices if price["component"] == "list_price"] == [
        (2, "3.60")
    ]


def test_a_changed_phase4_input_after_the_proposal_withdraws_the_approvals(team):
    setup = build.proposed(team)
    build.sign(setup, PLATFORM, FINANCE)
    candidate_figure_set(actor=setup.people.author, candidate=setup.example.b, metric="retry_rate", value="0.03",
                     source="measured", reference="job:9")
    with pytest.raises(services.InputsChanged):
        services.stage_decide(actor=setup.people.product, record=setup.record, kind=PRODUCT, approve=True)
    assert DecisionRecord.objects.get(pk=setup.record.pk).status == RecordStatus.PROPOSED
    assert set(_stage_statuses(setup.record).values()) == {"withdrawn"}


def test_a_new_workload_version_after_the_proposal_withdraws_the_approvals(team):
    from apps.workloads import services as workload_services

    setup = build.proposed(team)
    build.sign(setup, PLATFORM)
    workload_services.summary_update(actor=setup.people.author, summary=setup.example.summary,
                                     data={"arrival_rate_peak": Decimal(20)})
    with pytest.raises(services.InputsChanged):
        services.stage_decide(actor=setup.people.finance, record=setup.record, kind=FINANCE, approve=True)
    assert _stage_statuses(setup.record)[PLATFORM] == StageStatus.WITHDRAWN


def test_unchanged_inputs_keep_the_frozen_inputs_hash(team):
    setup = build.proposed(team)
    # Saving a figure with the same value and source is not a change of input.
    candidate_figure_set(actor=setup.people.author, candidate=setup.example.b, metric="retry_rate", value="0.01",
                     source="measured", reference=f"job:{setup.example.b.pk}02")
    assert not services.inputs_changed(setup.record)
    build.sign(setup, PLATFORM)
    assert _stage_statuses(setup.record)[PLATFORM] == StageStatus.APPROVED


# --- Withdraw, supersede ------------------------------------------------------------------------------------------


def test_withdrawing_a_proposal_makes_it_a_draft_again(team):
    setup = build.proposed(team)
    record = services.record_withdraw(actor=setup.people.author, record=setup.record)
    assert record.status == RecordStatus.DRAFT and record.snapshot_json == "" and not record.is_frozen
    assert set(_stage_statuses(record).values()) == {"withdrawn"}
    services.record_update(actor=setup.people.author, record=record, rationale="Changed after review.")


def test_a_superseding_record_flips_the_old_one_only_when_it_is_accepted(team):
    setup = build.accepted(team)
    old = setup.record
    draft = services.record_start_superseding_draft(actor=setup.people.author, record=old)
    assert draft.status == RecordStatus.DRAFT and draft.supersedes == old
    assert (draft.title, draft.rationale, draft.chosen_option) == (old.title, old.rationale, old.chosen_option)
    assert services.record_start_superseding_draft(actor=setup.people.author, record=old) == draft

    new = build.Setup(team, setup.people, setup.example, services.record_propose(actor=setup.people.author,
                                                                                  record=draft))
    build.sign(new, PLATFORM, FINANCE)
    old.refresh_from_db()
    assert old.status == RecordStatus.ACCEPTED and old.superseded_by is None

    build.sign(new, PRODUCT)
    old.refresh_from_db()
    assert new.record.status == RecordStatus.ACCEPTED
    assert old.status == RecordStatus.SUPERSEDED
    assert old.superseded_by == new.record and new.record.supersedes == old
    assert old.snapshot_matches_hash()
    assert ObjectChange.objects.for_object(old).order_by("pk").last().after == {
        "status": "superseded", "superseded_by": new.record.pk,
    }


def test_only_an_accepted_record_can_be_superseded(team):
    setup = build.proposed(team)
    with pytest.raises(services.RecordConflict):
        services.record_start_superseding_draft(actor=setup.people.author, record=setup.record)


def test_finance_and_product_cannot_draft_or_propose(team):
    setup = build.draft(team)
    for person in (setup.people.finance, setup.people.product):
        with pytest.raises(PermissionDenied):
            services.record_update(actor=person, record=setup.record, rationale="edited by finance")
        with pytest.raises(PermissionDenied):
            services.record_propose(actor=person, record=setup.record)
        with pytest.raises(PermissionDenied):
            services.record_create(actor=person, team=team, workload_summary=setup.example.summary, title="x")


def test_record_numbers_count_per_team(team, other_team):
    first = build.draft(team).record
    second = services.record_create(actor=first.author, team=team, workload_summary=first.workload_summary,
                                    title="Second look")
    assert (first.number, second.number) == (1, 2)
    assert str(second) == "DR-2 Second look"
    assert timezone.now() - second.created_at < datetime.timedelta(minutes=5)
