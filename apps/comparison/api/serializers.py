"""The comparison API's query parameters (the comparison itself is answered as exports.comparison_data() builds it)
and the waivers of the mistakes check."""

from __future__ import annotations

from rest_framework import serializers

from apps.common.api_fields import ScopedPrimaryKeyRelatedField
from apps.comparison.models import MistakeWaiver
from apps.quotes.models import Candidate


class ComparisonQuerySerializer(serializers.Serializer):
    chosen = serializers.IntegerField(required=False, help_text="A candidate id: check the six mistakes for it.")
    focus = serializers.IntegerField(required=False, help_text="A candidate id: the sensitivity chart's candidate.")


class MistakeWaiverSerializer(serializers.ModelSerializer):
    """A named person's waiver of one rule for one candidate: the person is the one who sends it; `reason` says why."""

    candidate = ScopedPrimaryKeyRelatedField(model=Candidate)
    waived_by = serializers.StringRelatedField()
    reason = serializers.CharField(trim_whitespace=True, allow_blank=False, max_length=5000)

    class Meta:
        model = MistakeWaiver
        fields = ["id", "candidate", "rule", "reason", "waived_by", "created_at"]
        read_only_fields = ["waived_by", "created_at"]
        validators = []  # one waiver per candidate and rule: the service answers a second one
