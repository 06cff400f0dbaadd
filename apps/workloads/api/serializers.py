"""Serializers of the workloads API: summaries (written through the services), and the small input/output shapes of
the estimate, readiness and analysis endpoints."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from apps.common.api_fields import TeamChoiceField
from apps.workloads import estimates, readiness
from apps.workloads.memory.breakdown import EstimateKind
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.hf_config import parse_hf_config, parse_hf_config_json
from apps.workloads.models import Tool, WorkloadSummary
from apps.workloads.services import EDITABLE_FIELDS
from apps.workloads.validation import shape_error_message


def read_config(value: Any):
    """A config.json given as an object or as its text → ModelShape (ShapeError names the field at fault)."""
    if isinstance(value, str):
        return parse_hf_config_json(value), json.loads(value)
    return parse_hf_config(value), value


def missing_field_data(summary) -> list[dict]:
    return [
        {
            "field": item.field,
            "label": str(WorkloadSummary._meta.get_field(item.field).verbose_name),
            "why": gettext(item.requirement.why),
        }
        for item in readiness.missing_fields(summary)
    ]


class WorkloadSummarySerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="workloads-api:summary-detail")
    page_url = serializers.CharField(source="get_absolute_url", read_only=True)
    team = TeamChoiceField()
    tools = serializers.ListField(child=serializers.ChoiceField(choices=Tool.choices), required=False)
    config = serializers.JSONField(
        write_only=True,
        required=False,
        help_text=_("A model's config.json (object or text): fills the model shape."),
    )
    # None until the workload type is known (WorkloadSummary.proposed_metric / effective_metric).
    proposed_metric = serializers.CharField(read_only=True, allow_null=True)
    effective_metric = serializers.CharField(read_only=True, allow_null=True)
    is_latest = serializers.BooleanField(read_only=True)
    newer_version = serializers.SerializerMethodField()
    missing_fields = serializers.SerializerMethodField()

    class Meta:
        model = WorkloadSummary
        fields = [
            "id",
            "url",
            "page_url",
            "workload",
            "team",
            "version",
            "status",
            "is_latest",
            "newer_version",
            "missing_fields",
            "proposed_metric",
            "effective_metric",
            *EDITABLE_FIELDS,
            "config",
            "ready_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["workload", "version", "status", "config_json", "ready_at", "created_at", "updated_at"]

    def get_validators(self) -> list:
        # The model's own constraints are checked by the services' full_clean (with field-named errors). Not
        # Meta.validators = []: that would also drop the defaults DRF gives the read-only version and status.
        return []

    def get_newer_version(self, summary) -> str | None:
        newer = summary.newer_versions().last()
        request = self.context.get("request")
        if newer is None or request is None:
            return None
        from rest_framework.reverse import reverse

        return reverse("workloads-api:summary-detail", args=[newer.pk], request=request)

    def get_missing_fields(self, summary) -> list[dict]:
        return missing_field_data(summary)

    def validate_team(self, team):
        if self.instance is not None and team != self.instance.team:
            raise serializers.ValidationError(_("A workload stays with its team."))
        return team

    def validate(self, attrs):
        config = attrs.pop("config", None)
        if config is not None:
            try:
                shape, decoded = read_config(config)
            except ShapeError as error:
                raise serializers.ValidationError({"config": [shape_error_message(error)]}) from None
            values = estimates.summary_values_from(shape)
            for name in ("params", "active_params"):
                if values[name] is None:
                    values.pop(name)  # a config.json never states the count: keep one given beside it
            attrs = {**values, **attrs}
            attrs["config_json"] = decoded
        return attrs

    def summary_data(self) -> dict:
        return {name: value for name, value in self.validated_data.items() if name in EDITABLE_FIELDS}


class EstimateInputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[(kind.value, kind.value) for kind in EstimateKind])
    shape = serializers.DictField(
        required=False,
        default=dict,
        help_text=_("ModelShape fields: params, num_layers, hidden_size, num_attention_heads, num_kv_heads, …"),
    )
    config_json = serializers.JSONField(
        required=False, help_text=_("A model's config.json (object or text); `shape` values override it.")
    )
    request = serializers.DictField(
        help_text=_("Inference: p95_context_tokens, concurrent_sessions, …; training: sequence_length, zero_stage, …")
    )
    gpus = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        help_text=_("Catalog GPU ids to fit against; empty: the whole catalog."),
    )

    def validate(self, attrs):
        if not attrs.get("shape") and attrs.get("config_json") is None:
            raise serializers.ValidationError({"shape": [_("Give the model shape or its config.json.")]})
        return attrs


class TermSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    size_bytes = serializers.IntegerField()
    size_gib = serializers.FloatField()
    formula = serializers.CharField()
    inputs = serializers.DictField()


class BreakdownSerializer(serializers.Serializer):
    kind = serializers.CharField()
    gpus = serializers.IntegerField(help_text=_("How many GPUs share the job (t, or t × N)."))
    total_bytes = serializers.IntegerField()
    total_gib = serializers.FloatField()
    terms = TermSerializer(many=True)


class LayoutSerializer(serializers.Serializer):
    replicas = serializers.IntegerField(help_text=_("Data-parallel replicas (training: data-parallel ranks)."))
    tensor_parallel = serializers.IntegerField()
    pipeline_parallel = serializers.IntegerField()
    gpus_per_replica = serializers.IntegerField(help_text=_("Tensor-parallel × pipeline-parallel GPUs."))
    gpus = serializers.IntegerField(help_text=_("Whole GPUs: replicas × GPUs per replica."))
    sessions_per_replica = serializers.IntegerField(
        help_text=_("Peak sessions each replica holds at the p95 context (training: the micro-batch).")
    )
    required_bytes_per_gpu = serializers.IntegerField()
    headroom_bytes = serializers.IntegerField()
    status = serializers.CharField()


class GpuFitSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    capacity_bytes = serializers.IntegerField()
    capacity_gib = serializers.FloatField()
    capacity_source = serializers.CharField()
    capacity_source_label = serializers.CharField()
    status = serializers.CharField()
    fits = serializers.BooleanField()
    headroom_bytes = serializers.IntegerField()
    headroom_gib = serializers.FloatField()
    headroom_percent = serializers.FloatField()
    fewest_gpus = serializers.IntegerField(allow_null=True)
    fewest_gpus_zero3 = serializers.IntegerField(allow_null=True)
    largest_concurrency = serializers.IntegerField(allow_null=True)
    concurrency_unbounded = serializers.BooleanField()
    layout = LayoutSerializer(
        allow_null=True, help_text=_("The cheapest fitting layout (fewest whole GPUs); null when none fits.")
    )
    safety_margin_fraction = serializers.FloatField(allow_null=True)
    safety_margin_source = serializers.CharField(allow_blank=True)


class EstimateOutputSerializer(serializers.Serializer):
    kind = serializers.CharField()
    breakdown = BreakdownSerializer()
    gpus = GpuFitSerializer(many=True)
    smallest_fitting_gpu = serializers.DictField(allow_null=True)
