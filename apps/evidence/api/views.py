"""The evidence API under /api/v1/evidence/: a candidate's figures (platform and admin write, every role of the
owning team reads). Another team's objects 404.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets

from apps.accounts.permissions import ReadAnyRoleWritePlatform
from apps.evidence import services
from apps.evidence.api import serializers
from apps.evidence.filters import CandidateFigureFilterSet
from apps.evidence.selectors import figures_for


@extend_schema(parameters=[OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH)])
class CandidateFigureViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    mixins.DestroyModelMixin, viewsets.GenericViewSet,
):
    """Phase-4 inputs; creating one for a metric the candidate already has changes that figure."""

    serializer_class = serializers.CandidateFigureSerializer
    permission_classes = [ReadAnyRoleWritePlatform]
    filterset_class = CandidateFigureFilterSet
    ordering = ["candidate", "metric"]

    def get_queryset(self):
        return figures_for(self.request.user)

    def _save(self, serializer, candidate, metric):
        data = dict(serializer.validated_data)
        data.pop("candidate", None)
        data.pop("metric", None)
        serializer.instance = services.candidate_figure_enter(
            actor=self.request.user, candidate=candidate, metric=metric, **data
        )

    def perform_create(self, serializer):
        self._save(serializer, serializer.validated_data["candidate"], serializer.validated_data["metric"])

    def perform_update(self, serializer):
        instance = serializer.instance
        for name in ("value", "source", "reference", "estimated_by", "estimate_reason", "capacity_unit"):
            serializer.validated_data.setdefault(name, getattr(instance, name))
        self._save(serializer, instance.candidate, instance.metric)

    def perform_destroy(self, instance):
        services.candidate_figure_remove(actor=self.request.user, item=instance)
