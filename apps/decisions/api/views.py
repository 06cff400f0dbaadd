"""The decisions API under /api/v1/decisions/: the phase-4 comparison of a workload version (read by every role of
the owning team, finance included) and the phase-4 inputs (platform and admin write). Another team's objects 404.

A bad input never makes the comparison fail: the answer lists it under "errors", naming the candidate and the field.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole, ReadAnyRoleWritePlatform
from apps.decisions import exports, services
from apps.decisions.api import serializers
from apps.decisions.comparison import comparison_for, phase4_inputs_for, summary_get
from apps.decisions.filters import Phase4InputFilterSet


def _drf_error(error: DjangoValidationError) -> ValidationError:
    if hasattr(error, "error_dict"):
        return ValidationError(error.message_dict)
    return ValidationError({"non_field_errors": error.messages})


class ComparisonView(APIView):
    """The phase-4 table of one workload version: rows, errors, the six mistakes, sensitivity and break-even."""

    permission_classes = [HasAnyRole]

    @extend_schema(
        parameters=[serializers.ComparisonQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        description="Every figure exact (a decimal string) with its provenance; bad inputs are listed in `errors`.",
    )
    def get(self, request, pk: int):
        query = serializers.ComparisonQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        summary = summary_get(request.user, pk)
        comparison = comparison_for(
            request.user, summary, chosen_id=query.validated_data.get("chosen"),
            focus_id=query.validated_data.get("focus"),
        )
        return Response(exports.comparison_data(comparison))


@extend_schema(parameters=[OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH)])
class Phase4InputViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
    mixins.DestroyModelMixin, viewsets.GenericViewSet,
):
    """Phase-4 inputs; creating one for a metric the candidate already has changes that figure."""

    serializer_class = serializers.Phase4InputSerializer
    permission_classes = [ReadAnyRoleWritePlatform]
    filterset_class = Phase4InputFilterSet
    ordering = ["candidate", "metric"]

    def get_queryset(self):
        return phase4_inputs_for(self.request.user)

    def _save(self, serializer, candidate, metric):
        data = dict(serializer.validated_data)
        data.pop("candidate", None)
        data.pop("metric", None)
        try:
            serializer.instance = services.phase4_input_set(
                actor=self.request.user, candidate=candidate, metric=metric, **data
            )
        except DjangoValidationError as error:
            raise _drf_error(error) from None

    def perform_create(self, serializer):
        self._save(serializer, serializer.validated_data["candidate"], serializer.validated_data["metric"])

    def perform_update(self, serializer):
        instance = serializer.instance
        for name in ("value", "source", "reference", "estimated_by", "estimate_reason", "capacity_unit"):
            serializer.validated_data.setdefault(name, getattr(instance, name))
        self._save(serializer, instance.candidate, instance.metric)

    def perform_destroy(self, instance):
        services.phase4_input_remove(actor=self.request.user, item=instance)
