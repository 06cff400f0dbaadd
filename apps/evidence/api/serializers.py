"""Serializers of the evidence API: a candidate's figures (writes go through the services)."""

from __future__ import annotations

from rest_framework import serializers

from apps.common.api_fields import CreateOnlyFieldsMixin, ScopedPrimaryKeyRelatedField
from apps.evidence.models import CandidateFigure
from apps.quotes.api.serializers import ServiceModelSerializer
from apps.quotes.models import Candidate


class CandidateFigureSerializer(CreateOnlyFieldsMixin, ServiceModelSerializer):
    candidate = ScopedPrimaryKeyRelatedField(model=Candidate)
    entered_by = serializers.StringRelatedField()

    class Meta:
        model = CandidateFigure
        fields = [
            "id",
            "candidate",
            "metric",
            "value",
            "capacity_unit",
            "source",
            "reference",
            "estimated_by",
            "estimate_reason",
            "entered_by",
            "entered_at",
            "updated_at",
        ]
        read_only_fields = ["entered_by", "entered_at", "updated_at"]
        validators = []  # one figure per candidate and metric: the service updates the existing one
        create_only_fields = ["candidate", "metric"]
