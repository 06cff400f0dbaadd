"""The comparison API under /api/v1/comparisons/: the comparison of a workload version, read by every role of the
owning team (finance included), and the waivers of the mistakes check (`waivers/`: every role reads, platform and
admin record one). Another team's workload or candidate answers 404 (or is refused as unknown).

A bad input never makes the comparison fail: the answer lists it under "errors", naming the candidate and the field.
One refusal is whole: a comparison that would mix two units with no conversion between them answers 400, the
field (`capacity_unit`, `mean_output_tokens`, `unit_of_success`) naming both units, because no row of it is comparable.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole, ReadAnyRoleWritePlatform
from apps.common.errors import DetailedValidationError
from apps.comparison import exports, services
from apps.comparison.api import serializers
from apps.comparison.filters import MistakeWaiverFilterSet
from apps.comparison.models import MistakeWaiver
from apps.comparison.selectors import comparison_for, summary_get


class ComparisonView(APIView):
    """The phase-4 table of one workload version: rows, errors, the six mistakes, sensitivity and break-even."""

    permission_classes = [HasAnyRole]

    @extend_schema(
        parameters=[serializers.ComparisonQuerySerializer],
        responses=serializers.ComparisonSerializer,
        description=(
            "Every figure exact (a decimal string: plain notation, never an exponent, zero as \"0\", at most 30 "
            "significant digits) with its provenance, and the same figures as shown in each `display` object (money "
            "to the currency's minor unit, unit costs and quantities to six significant digits). Database ids are "
            "ints. Bad inputs are listed in `errors`. See docs/api.md, \"Comparison figures\"."
        ),
    )
    def get(self, request, pk: int):
        query = serializers.ComparisonQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        summary = summary_get(request.user, pk)
        comparison = comparison_for(
            request.user, summary, chosen_id=query.validated_data.get("chosen"),
            focus_id=query.validated_data.get("focus"),
        )
        mismatches = comparison.unit_mismatches
        if mismatches:
            raise DetailedValidationError(
                {problem.field: f"{problem.candidate_label}: {problem.text}" for problem in mismatches},
                details={"errors": [problem.to_dict() for problem in mismatches]},
            )
        return Response(exports.comparison_data(comparison))


class MistakeWaiverViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                           viewsets.GenericViewSet):
    """Waivers of a rule of the mistakes check for one candidate (today: mistake 3, interconnect, for a multi-GPU
    candidate without a measured all-reduce test). The person who sends it is the one who waives; `reason` says why.
    `?candidate=<id>` lists one candidate's."""

    serializer_class = serializers.MistakeWaiverSerializer
    permission_classes = [ReadAnyRoleWritePlatform]
    filterset_class = MistakeWaiverFilterSet

    def get_queryset(self):
        return MistakeWaiver.objects.for_user(self.request.user).select_related("waived_by").order_by("pk")

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = services.mistake_waiver_create(
            actor=self.request.user, candidate=data["candidate"], rule=data["rule"], reason=data["reason"]
        )
