"""User API of the benchmarks: plans, jobs (with their events), artifacts and results, read-only; jobs cancel."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.accounts.permissions import ReadAnyRoleWritePlatform
from apps.benchmarks.api.serializers import (
    ArtifactSerializer,
    BenchmarkPlanSerializer,
    CancelSerializer,
    FigureMeasurementSerializer,
    JobEventSerializer,
    JobSerializer,
    ResultSerializer,
)
from apps.benchmarks.filters import FigureMeasurementFilterSet, JobFilterSet, PlanFilterSet
from apps.benchmarks.models import Artifact, BenchmarkPlan, FigureMeasurement, Job, Result
from apps.benchmarks.selectors import job_events
from apps.benchmarks.services import job_cancel


class BenchmarkPlanViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = BenchmarkPlanSerializer
    filterset_class = PlanFilterSet

    def get_queryset(self):
        return BenchmarkPlan.objects.for_user(self.request.user).order_by("-created_at", "-pk")


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = JobSerializer
    filterset_class = JobFilterSet
    permission_classes = [ReadAnyRoleWritePlatform]

    def get_queryset(self):
        return Job.objects.for_user(self.request.user).prefetch_related("attempts").order_by("-created_at", "-pk")

    @extend_schema(request=CancelSerializer, responses=JobSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel a queued job at once, or ask a running job's agent to stop (delivered on its next lease)."""
        job = self.get_object()
        data = CancelSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = job_cancel(job=job, actor=request.user, reason=data.validated_data["reason"])
        return Response(JobSerializer(job).data)

    @extend_schema(responses=JobEventSerializer(many=True))
    @action(detail=True, methods=["get"])
    def events(self, request, pk=None):
        """The job's events, every attempt, in order."""
        page = self.paginate_queryset(job_events(self.get_object()))
        return self.get_paginated_response(JobEventSerializer(page, many=True).data)


class ArtifactViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ArtifactSerializer

    def get_queryset(self):
        return Artifact.objects.for_user(self.request.user).select_related("attempt").order_by("created_at", "pk")


class ResultViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ResultSerializer

    def get_queryset(self):
        return (
            Result.objects.for_user(self.request.user)
            .select_related("attempt", "job")
            .prefetch_related("artifacts")
            .order_by("-recorded_at", "-pk")
        )


class FigureMeasurementViewSet(viewsets.ReadOnlyModelViewSet):
    """The link of each measured figure to the result that measured it (`?candidate=`, `?figure=`), with
    `is_rehearsal` and whether it counts as measured. Written only by the ingest."""

    serializer_class = FigureMeasurementSerializer
    filterset_class = FigureMeasurementFilterSet

    def get_queryset(self):
        return (
            FigureMeasurement.objects.for_user(self.request.user)
            .select_related("figure", "result")
            .order_by("figure__candidate_id", "figure__metric")
        )
