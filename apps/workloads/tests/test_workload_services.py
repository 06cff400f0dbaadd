"""Filing, editing and marking workload summaries ready: versions, the readiness gate, audit entries."""

import pytest
from django.core.exceptions import ValidationError

from apps.audit.models import ObjectChange
from apps.workloads.models import Status, Workload, WorkloadSummary
from apps.workloads.services import summary_mark_ready, summary_update, workload_create
from apps.workloads.tests.factories import REALTIME_READY_FIELDS

pytestmark = pytest.mark.django_db


def test_filing_a_workload_makes_a_draft_version_1_and_audits_it(team, platform_user):
    summary = workload_create(actor=platform_user, team=team, data={"name": "Chat", "workload_type": "notebook"})
    assert (summary.version, summary.status, summary.team) == (1, Status.DRAFT, team)
    assert summary.workload.team == team
    entry = ObjectChange.objects.for_object(summary).get()
    assert entry.action == ObjectChange.Action.CREATE
    assert entry.actor == platform_user and entry.team == team


def test_a_draft_is_edited_in_place(team, platform_user):
    summary = workload_create(actor=platform_user, team=team, data={"name": "Chat"})
    edited = summary_update(actor=platform_user, summary=summary, data={"name": "Support chat", "batch_size": 8})
    assert edited.pk == summary.pk and edited.version == 1
    summary.refresh_from_db()
    assert (summary.name, summary.batch_size) == ("Support chat", 8)
    change = ObjectChange.objects.for_object(summary).filter(action=ObjectChange.Action.UPDATE).get()
    assert change.changes["name"] == ["Chat", "Support chat"]


def test_a_draft_edit_that_changes_nothing_writes_no_entry(team, platform_user):
    summary = workload_create(actor=platform_user, team=team, data={"name": "Chat", "batch_size": 8})
    summary_update(actor=platform_user, summary=summary, data={"name": "Chat", "batch_size": 8, "tools": None})
    assert not ObjectChange.objects.for_object(summary).filter(action=ObjectChange.Action.UPDATE).exists()


def test_a_summary_missing_an_applicable_field_cannot_be_marked_ready(team, platform_user):
    data = {**REALTIME_READY_FIELDS, "num_kv_heads": None, "p99_ttft_ms": None}
    summary = workload_create(actor=platform_user, team=team, data=data)
    with pytest.raises(ValidationError) as raised:
        summary_mark_ready(actor=platform_user, summary=summary)
    assert set(raised.value.message_dict) == {"num_kv_heads", "p99_ttft_ms"}
    assert "grouped-query attention" in raised.value.message_dict["num_kv_heads"][0]
    summary.refresh_from_db()
    assert summary.status == Status.DRAFT and summary.ready_at is None


def test_a_complete_summary_is_marked_ready_and_frozen(team, platform_user):
    summary = workload_create(actor=platform_user, team=team, data=REALTIME_READY_FIELDS)
    ready = summary_mark_ready(actor=platform_user, summary=summary)
    assert ready.is_ready and ready.ready_by == platform_user and ready.ready_at is not None
    entry = ObjectChange.objects.for_object(ready).filter(action=ObjectChange.Action.TRANSITION).get()
    assert entry.changes["status"] == [Status.DRAFT, Status.READY]
    assert entry.message == "Version 1 marked ready: it is now frozen."
    ready.refresh_from_db()
    assert ready.is_ready and ready.ready_by == platform_user
    with pytest.raises(ValidationError):
        summary_mark_ready(actor=platform_user, summary=ready)


def test_editing_a_ready_summary_makes_a_new_version_and_leaves_the_old_intact(team, platform_user):
    ready = summary_mark_ready(
        actor=platform_user, summary=workload_create(actor=platform_user, team=team, data=REALTIME_READY_FIELDS)
    )
    before = WorkloadSummary.objects.values().get(pk=ready.pk)

    successor = summary_update(actor=platform_user, summary=ready, data={"concurrent_sessions_peak": 128})

    assert successor.pk != ready.pk
    assert (successor.workload_id, successor.version, successor.status) == (ready.workload_id, 2, Status.DRAFT)
    assert successor.concurrent_sessions_peak == 128
    assert successor.p95_input_tokens == ready.p95_input_tokens  # everything else carried over
    assert WorkloadSummary.objects.values().get(pk=ready.pk) == before  # version 1 untouched
    assert [version.pk for version in ready.newer_versions()] == [successor.pk]
    assert not ready.is_latest and successor.is_latest
    entry = ObjectChange.objects.for_object(successor).get()
    assert entry.action == ObjectChange.Action.CREATE and "version 1" in entry.message.lower()


def test_only_the_newest_version_can_be_edited(team, platform_user):
    ready = summary_mark_ready(
        actor=platform_user, summary=workload_create(actor=platform_user, team=team, data=REALTIME_READY_FIELDS)
    )
    summary_update(actor=platform_user, summary=ready, data={"batch_size": 4})
    with pytest.raises(ValidationError):
        summary_update(actor=platform_user, summary=ready, data={"batch_size": 8})
    assert WorkloadSummary.objects.filter(workload=ready.workload).count() == 2


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_layers": -4}, "num_layers"),
        ({"hidden_size": 10**9}, "hidden_size"),
        ({"num_kv_heads": 5}, "num_kv_heads"),
        ({"head_dim": 4096}, "head_dim"),
        ({"precision": "fp12"}, "precision"),
        ({"mean_input_tokens": 5000}, "mean_input_tokens"),
        ({"p95_input_tokens": 9000}, "p95_input_tokens"),
        ({"tools": ["vllm", "magic"]}, "tools"),
        ({"decision_metric": "cost_per_image"}, "decision_metric_reason"),
        ({"quality_acceptance_source": ""}, "quality_acceptance_source"),
        ({"architecture": "moe"}, "num_experts"),
        ({"params": 80_000_000_000}, "params"),
    ],
)
def test_bad_input_is_refused_with_the_field_named_and_nothing_saved(team, platform_user, changes, field):
    with pytest.raises(ValidationError) as raised:
        workload_create(actor=platform_user, team=team, data={**REALTIME_READY_FIELDS, **changes})
    assert field in raised.value.message_dict
    assert not Workload.objects.exists() and not WorkloadSummary.objects.exists()
    assert not ObjectChange.objects.exists()


def test_a_changed_metric_with_a_reason_is_kept(team, platform_user):
    data = {
        **REALTIME_READY_FIELDS,
        "decision_metric": "cost_per_record_or_token",
        "decision_metric_reason": "Finance bills this service per token.",
    }
    summary = workload_create(actor=platform_user, team=team, data=data)
    assert summary.proposed_metric == "cost_per_response"
    assert summary.effective_metric == "cost_per_record_or_token"
    assert summary.metric_differs_from_proposal


def test_unknown_fields_are_refused(team, platform_user):
    with pytest.raises(ValidationError):
        workload_create(actor=platform_user, team=team, data={"name": "x", "status": "ready"})
