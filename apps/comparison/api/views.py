"""The comparison API under /api/v1/comparisons/: the comparison of a workload version, read by every role of the
owning team (finance included). Another team's workload answers 404.

A bad input never makes the comparison fail: the answer lists it under "errors", naming the candidate and the field.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import HasAnyRole
from apps.comparison import exports
from apps.comparison.api import serializers
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
        return Response(exports.comparison_data(comparison))
