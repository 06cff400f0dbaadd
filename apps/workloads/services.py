"""Writes of workload summaries: file one, edit it (a ready version is never changed: editing it makes version N+1),
and mark it ready once the readiness gate passes. Every write is validated with full_clean() and audited."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.audit.models import ObjectChange
from apps.audit.services import model_snapshot, model_update, record_change
from apps.workloads import readiness
from apps.workloads.models import Status, Workload, WorkloadSummary

#: The fields of step 1 by section, in the order the summary form shows them.
MODEL_SHAPE_FIELDS = (
    "model_name",
    "architecture",
    "params",
    "active_params",
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "ffn_size",
    "vocab_size",
    "tied_embeddings",
    "num_experts",
    "num_experts_per_token",
    "expert_ffn_size",
    "sliding_window",
    "sliding_window_layers",
    "precision",
    "kv_cache_precision",
    "max_context_tokens",
    "modality",
    "tokenizer",
    "model_change_cadence",
)
REQUEST_SHAPE_FIELDS = (
    "mean_input_tokens",
    "p95_input_tokens",
    "mean_output_tokens",
    "p95_output_tokens",
    "image_width_px",
    "image_height_px",
    "video_duration_seconds",
    "video_frames_per_second",
    "batch_size",
    "concurrent_sessions_mean",
    "concurrent_sessions_peak",
    "arrival_rate_mean",
    "arrival_rate_peak",
    "records_per_job",
    "demand_per_month",
    "hours_per_day",
    "days_per_month",
)
TRAINING_FIELDS = (
    "tokens_to_train",
    "training_sequence_length",
    "zero_stage",
    "data_parallel_gpus",
    "recompute",
    "tensor_parallel",
    "sequence_parallel",
    "pipeline_parallel",
    "optimizer_offload",
    "optimizer_bits",
    "lora_rank",
    "target_eval_metric",
    "target_eval_score",
    "checkpoint_interval_minutes",
    "expected_failures_per_1000_gpu_hours",
    "failure_rate_source",
)
SUCCESS_FIELDS = (
    "unit_of_success",
    "quality_acceptance_rate",
    "quality_acceptance_source",
)
LATENCY_FIELDS = (
    "latency_class",
    "p95_ttft_ms",
    "p99_ttft_ms",
    "p95_tpot_ms",
    "p99_tpot_ms",
    "p95_e2e_ms",
    "p99_e2e_ms",
    "streaming",
)
OPERATIONS_FIELDS = (
    "operating_mode",
    "operating_boundary",
    "tools",
)
DECISION_METRIC_FIELDS = (
    "decision_metric",
    "decision_metric_reason",
)
#: The fields a person states; everything else (team, version, status, who and when) the services set.
EDITABLE_FIELDS = (
    "name",
    "notes",
    "workload_type",
    *MODEL_SHAPE_FIELDS,
    "shape_extras",
    "config_json",
    *REQUEST_SHAPE_FIELDS,
    *TRAINING_FIELDS,
    *SUCCESS_FIELDS,
    *LATENCY_FIELDS,
    *OPERATIONS_FIELDS,
    *DECISION_METRIC_FIELDS,
)


def _checked(data: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(data) - set(EDITABLE_FIELDS))
    if unknown:
        raise ValidationError(_("These fields cannot be set: %(fields)s.") % {"fields": ", ".join(unknown)})
    return dict(data)


def _stored(data: Mapping[str, Any]) -> dict[str, Any]:
    """The values as a summary stores them: text fields store "" for "not stated", never NULL."""
    values = dict(data)
    for name, value in data.items():
        field = WorkloadSummary._meta.get_field(name)
        if value is None and not field.null:
            values[name] = field.get_default()
    return values


@transaction.atomic
def workload_create(*, actor, team, data: Mapping[str, Any]) -> WorkloadSummary:
    """File a new workload: its lineage and version 1, a draft."""
    values = _checked(data)
    workload = Workload(team=team, created_by=actor)
    workload.full_clean()
    workload.save()
    summary = WorkloadSummary(
        workload=workload, team=team, version=1, status=Status.DRAFT, created_by=actor, **_stored(values)
    )
    summary.full_clean()
    summary.save()
    # The workload's entry comes once its version 1 exists: a workload is named after its latest version.
    record_change(actor=actor, instance=workload, action=ObjectChange.Action.CREATE, after=model_snapshot(workload))
    record_change(
        actor=actor,
        instance=summary,
        action=ObjectChange.Action.CREATE,
        after=model_snapshot(summary),
        message=_("Version 1 filed as a draft."),
    )
    return summary


@transaction.atomic
def summary_update(*, actor, summary: WorkloadSummary, data: Mapping[str, Any]) -> WorkloadSummary:
    """Edit a summary. A draft changes in place; a ready version stays frozen and the edit becomes version N+1 (a
    draft). Only the newest version can be edited. Returns the version that holds the edit."""
    values = _checked(data)
    current = WorkloadSummary.objects.select_for_update().select_related("workload").get(pk=summary.pk)
    latest = current.latest_version()
    if latest.pk != current.pk:
        raise ValidationError(
            _("Version %(version)s is not the newest; edit version %(latest)s instead.")
            % {"version": current.version, "latest": latest.version}
        )
    if current.is_draft:
        current, _changed = model_update(instance=current, actor=actor, data=_stored(values), fields=EDITABLE_FIELDS)
        return current

    successor = WorkloadSummary(
        workload=current.workload,
        team=current.team,
        version=current.version + 1,
        status=Status.DRAFT,
        created_by=actor,
        **_stored({**{name: getattr(current, name) for name in EDITABLE_FIELDS}, **values}),
    )
    successor.full_clean()
    successor.save()
    record_change(
        actor=actor,
        instance=successor,
        action=ObjectChange.Action.CREATE,
        before=model_snapshot(current),
        after=model_snapshot(successor),
        message=_("Version %(new)s drafted from ready version %(old)s, which stays unchanged.")
        % {"new": successor.version, "old": current.version},
    )
    return successor


def readiness_errors(summary: WorkloadSummary) -> dict[str, list[str]]:
    """{field: [why it is needed]} for every applicable field that is still empty."""
    errors: dict[str, list[str]] = {}
    for item in readiness.missing_fields(summary):
        errors.setdefault(item.field, []).append(_(item.requirement.why))
    return errors


@transaction.atomic
def summary_mark_ready(*, actor, summary: WorkloadSummary) -> WorkloadSummary:
    """Freeze a draft once every field its workload type needs is filled; quotes and benchmarks may then use it."""
    current = WorkloadSummary.objects.select_for_update().select_related("workload").get(pk=summary.pk)
    if current.is_ready:
        raise ValidationError(_("Version %(version)s is already ready.") % {"version": current.version})
    missing = readiness_errors(current)
    if missing:
        raise ValidationError(missing)
    readied = {
        "status": Status.READY,
        "ready_at": timezone.now(),
        "ready_by": actor if getattr(actor, "is_authenticated", False) else None,
    }
    current, _changed = model_update(
        instance=current,
        actor=actor,
        data=readied,
        fields=readied,
        action=ObjectChange.Action.TRANSITION,
        message=_("Version %(version)s marked ready: it is now frozen.") % {"version": current.version},
    )
    return current
