"""Serializers of the evidence API: a candidate's figures (writes go through the services)."""

from __future__ import annotations

from rest_framework import serializers

from apps.evidence.models import CandidateFigure
from apps.quotes.api.serializers import ServiceModelSerializer
from apps.quotes.models import Candidate


class CandidateFigureSerializer(ServiceModelSerializer):
    candidate = serializers.PrimaryKeyRelatedField(queryset=Candidate.objects.none())
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

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:
            self.fields["candidate"].queryset = Candidate.objects.for_user(request.user)
        if self.instance is not None and not isinstance(self.instance, list | tuple):
            self.fields["candidate"].read_only = True
            self.fields["metric"].read_only = True
