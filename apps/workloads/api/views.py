"""The workloads API: summaries (list, read, file, edit — editing a ready version makes a new one), marking a version
ready, a version's analysis, and a stateless estimate that saves nothing."""

from __future__ import annotations

import dataclasses

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole, ReadAnyRoleWritePlatform
from apps.accounts.selectors import teams_for_user
from apps.workloads import estimates, rules
from apps.workloads.api.serializers import (
    EstimateInputSerializer,
    EstimateOutputSerializer,
    WorkloadSummarySerializer,
    missing_field_data,
    read_config,
)
from apps.workloads.filters import WorkloadSummaryFilterSet
from apps.workloads.memory.breakdown import TERM_LABELS, Breakdown, EstimateKind
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.inference import InferenceRequest
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import TrainingRequest
from apps.workloads.selectors import catalog_gpus, summaries_for_user, summary_get, summary_report
from apps.workloads.services import summary_mark_ready, summary_update, workload_create
from apps.workloads.validation import shape_error_message


class WorkloadSummaryViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Workload summaries of your teams, every version. Editing a ready version answers with version N+1 (a draft);
    the ready one stays unchanged. Summaries are never deleted: quotes and decisions keep the version they used."""

    serializer_class = WorkloadSummarySerializer
    permission_classes = [ReadAnyRoleWritePlatform]
    filterset_class = WorkloadSummaryFilterSet
    ordering_fields = ["name", "version", "updated_at", "workload_type"]
    ordering = ["-updated_at", "-pk"]

    def get_queryset(self):
        return summaries_for_user(self.request.user)

    def perform_create(self, serializer):
        team = serializer.validated_data.get("team")
        if team is None:
            teams = list(teams_for_user(self.request.user)[:2])
            if len(teams) != 1:
                raise serializers.ValidationError({"team": [_("Choose the team the workload belongs to.")]})
            team = teams[0]
        serializer.instance = workload_create(actor=self.request.user, team=team, data=serializer.summary_data())

    def perform_update(self, serializer):
        serializer.instance = summary_update(
            actor=self.request.user, summary=serializer.instance, data=serializer.summary_data()
        )


class SummaryMarkReadyView(APIView):
    """Freeze a draft version once every field its workload type needs is filled; a 400 names each missing field
    with why it is needed."""

    permission_classes = [ReadAnyRoleWritePlatform]

    @extend_schema(request=None, responses={200: WorkloadSummarySerializer})
    def post(self, request, pk: int):
        summary = summary_mark_ready(actor=request.user, summary=summary_get(user=request.user, pk=pk))
        return Response(WorkloadSummarySerializer(summary, context={"request": request}).data)


# --------------------------------------------------------------------------------------------------------------------
# Estimates
# --------------------------------------------------------------------------------------------------------------------


def breakdown_data(breakdown: Breakdown) -> dict:
    data = breakdown.as_dict()
    for term in data["terms"]:
        term["label"] = _(TERM_LABELS.get(term["name"], term["name"]))
    return data


def analysis_data(analysis: estimates.Analysis) -> dict:
    return {
        "kind": analysis.kind.value,
        "breakdown": breakdown_data(analysis.breakdown),
        "gpus": [
            {
                "id": item.gpu.key,
                "name": item.gpu.name,
                "capacity_bytes": item.gpu.capacity.total_bytes,
                "capacity_gib": item.gpu.capacity.total_gib,
                "capacity_source": item.gpu.capacity.source.value,
                "capacity_source_label": item.gpu.capacity.source_label,
                "status": item.fit.status.value,
                "fits": item.fit.fits,
                "headroom_bytes": item.fit.headroom_bytes,
                "headroom_gib": item.fit.headroom_gib,
                "headroom_percent": item.fit.headroom_percent,
                "fewest_gpus": item.fewest_gpus,
                "fewest_gpus_zero3": item.fewest_gpus_zero3,
                "largest_concurrency": item.largest_concurrency,
                "concurrency_unbounded": item.concurrency_unbounded,
                "layout": item.layout.as_dict() if item.layout else None,
                "safety_margin_fraction": item.gpu.safety_margin_fraction,
                "safety_margin_source": item.gpu.safety_margin_source,
            }
            for item in analysis.fits
        ],
        "smallest_fitting_gpu": (
            {"id": analysis.smallest_fitting.gpu.key, "name": analysis.smallest_fitting.gpu.name}
            if analysis.smallest_fitting
            else None
        ),
    }


SHAPE_FIELD_NAMES = frozenset(field.name for field in dataclasses.fields(ModelShape))
REQUEST_FIELDS_BY_KIND = {
    EstimateKind.INFERENCE.value: frozenset(field.name for field in dataclasses.fields(InferenceRequest)),
    EstimateKind.TRAINING.value: frozenset(field.name for field in dataclasses.fields(TrainingRequest)),
}
REQUEST_FIELD_NAMES = REQUEST_FIELDS_BY_KIND["inference"] | REQUEST_FIELDS_BY_KIND["training"]


def estimate_error(error: ShapeError) -> dict:
    """{"shape": {"num_kv_heads": [message]}}: the input group and the field at fault."""
    message = [shape_error_message(error)]
    if error.field in SHAPE_FIELD_NAMES:
        return {"shape": {error.field: message}}
    if error.field in REQUEST_FIELD_NAMES:
        return {"request": {error.field: message}}
    return {"non_field_errors": [f"{error.field}: {message[0]}"]}


class EstimateView(APIView):
    """Stateless memory-fit estimate: a model shape (or its config.json) and a request → the per-GPU breakdown with
    each term's formula, and its fit on the catalog GPUs. Nothing is saved; bad input is a 400 naming the field."""

    permission_classes = [HasAnyRole]

    @extend_schema(request=EstimateInputSerializer, responses={200: EstimateOutputSerializer})
    def post(self, request):
        serializer = EstimateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        shape_values = dict(data.get("shape") or {})
        if data.get("config_json") is not None:
            try:
                base, _decoded = read_config(data["config_json"])
            except ShapeError as error:
                return Response({"config_json": [shape_error_message(error)]}, status=status.HTTP_400_BAD_REQUEST)
            shape_values = {
                **{field.name: getattr(base, field.name) for field in dataclasses.fields(ModelShape)},
                **shape_values,
            }
        unknown = {
            where: {name: [_("Unknown field.")] for name in sorted(set(values) - allowed)}
            for where, values, allowed in (
                ("shape", shape_values, SHAPE_FIELD_NAMES),
                ("request", data["request"], REQUEST_FIELDS_BY_KIND[data["kind"]]),
            )
            if set(values) - allowed
        }
        if unknown:
            return Response(unknown, status=status.HTTP_400_BAD_REQUEST)
        gpus = catalog_gpus(data["gpus"]) if data.get("gpus") else catalog_gpus()
        if data.get("gpus") and len(gpus) != len(set(data["gpus"])):
            return Response(
                {"gpus": [_("Unknown GPU, or a GPU without a memory figure.")]}, status=status.HTTP_400_BAD_REQUEST
            )
        try:
            plan = estimates.plan_from_inputs(data["kind"], shape_values, data["request"])
            analysis = estimates.analyse(plan, [item.capacity for item in gpus])
        except ShapeError as error:
            return Response(estimate_error(error), status=status.HTTP_400_BAD_REQUEST)
        return Response(analysis_data(analysis))


class SummaryAnalysisView(APIView):
    """Everything the summary page shows: readiness, decision metric, memory estimate on every catalog GPU,
    shortlist and capacity-model hint."""

    permission_classes = [HasAnyRole]

    @extend_schema(responses={200: dict})
    def get(self, request, pk: int):
        summary = summary_get(user=request.user, pk=pk)
        report = summary_report(summary)
        body: dict = {
            "summary": summary.pk,
            "version": summary.version,
            "status": summary.status,
            "missing_fields": missing_field_data(summary),
            "decision_metric": {
                "proposed": summary.proposed_metric,
                "effective": summary.effective_metric,
                "text": _(rules.METRICS[summary.effective_metric]) if summary.effective_metric else None,
                "reason": summary.decision_metric_reason,
            },
            "capacity_hints": [
                {
                    "code": rule.code,
                    "situation": _(rule.situation),
                    "starting_point": _(rule.starting_point),
                }
                for rule in report.capacity_hints
            ],
        }
        if report.analysis is None:
            error = report.plan_error
            body["estimate"] = None
            body["estimate_needs"] = list(error.fields) if isinstance(error, estimates.MissingInput) else []
            body["estimate_error"] = shape_error_message(error) if isinstance(error, ShapeError) else None
            body["shortlist"] = None
            return Response(body)
        body["estimate"] = analysis_data(report.analysis)
        body["estimate"]["derivation"] = dict(report.plan.derivation)
        shortlist = report.shortlist
        body["shortlist"] = {
            "row": shortlist.answer.code,
            "workload": _(shortlist.answer.workload),
            "prioritises": _(shortlist.answer.prioritises),
            "directions": _(shortlist.answer.directions),
            "watch": _(shortlist.answer.watch),
            "ranked_by": shortlist.need,
            "entries": [
                {
                    "rank": entry.rank,
                    "gpu": entry.gpu_fit.gpu.key,
                    "name": entry.gpu_fit.gpu.name,
                    "family": entry.family.code if entry.family else None,
                    "in_guide_direction": entry.in_guide_direction,
                    "fit": entry.gpu_fit.fit.status.value,
                    "gpus_needed": entry.gpus_needed,
                    "layout": entry.layout.as_dict() if entry.layout else None,
                    "need_value": entry.need_value,
                }
                for entry in shortlist.entries
            ],
        }
        return Response(body)
