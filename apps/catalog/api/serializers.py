"""Read-only serializers of the catalog API: a GPU model with its figures, each with its source and as-of date."""

from rest_framework import serializers

from apps.catalog.models import GpuModel, GpuSpec


class GpuSpecSerializer(serializers.ModelSerializer):
    label = serializers.CharField(source="get_key_display", read_only=True)
    entered_by = serializers.CharField(
        source="entered_by.username",
        read_only=True,
        allow_null=True,
        help_text="Username of the admin who entered the value; null when the catalog loader did.",
    )

    class Meta:
        model = GpuSpec
        fields = ["key", "label", "value", "unit", "source_url", "source_text", "as_of", "entered_by", "entered_at"]
        read_only_fields = fields


class GpuModelSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="catalog-api:gpu-detail")
    display_name = serializers.CharField(read_only=True)
    specs = GpuSpecSerializer(many=True, read_only=True)

    class Meta:
        model = GpuModel
        fields = [
            "id",
            "url",
            "vendor",
            "name",
            "variant",
            "display_name",
            "form_factor",
            "memory_type",
            "host_interface",
            "datasheet_url",
            "note",
            "specs",
        ]
        read_only_fields = fields
