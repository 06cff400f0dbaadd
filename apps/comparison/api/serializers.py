"""The comparison API's query parameters. The comparison itself is answered as exports.comparison_data() builds it."""

from __future__ import annotations

from rest_framework import serializers


class ComparisonQuerySerializer(serializers.Serializer):
    chosen = serializers.IntegerField(required=False, help_text="A candidate id: check the six mistakes for it.")
    focus = serializers.IntegerField(required=False, help_text="A candidate id: the sensitivity chart's candidate.")
