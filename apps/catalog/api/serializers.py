"""Read-only serializers of the catalog API: a GPU model with its figures, each with its source and as-of date."""

from rest_framework import serializers

from apps.catalog.models import GpuModel, GpuSpec
from apps.catalog.selectors import reference_price, usable_memory_bytes


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


class UsableMemorySerializer(serializers.Serializer):
    bytes = serializers.IntegerField()
    basis = serializers.CharField(help_text="measured | catalog_usable | datasheet | host_stated")
    basis_label = serializers.CharField()
    source = serializers.CharField()
    as_of = serializers.DateField(allow_null=True)


class ReferencePriceSerializer(serializers.Serializer):
    amount = serializers.DecimalField(max_digits=14, decimal_places=4)
    currency = serializers.CharField()
    source = serializers.CharField()
    detail = serializers.CharField(help_text="Which offer, and the arithmetic to one GPU-hour.")
    as_of = serializers.DateField()


class GpuModelSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="catalog-api:gpu-detail")
    display_name = serializers.CharField(read_only=True)
    parent_display_name = serializers.CharField(source="parent.display_name", read_only=True, allow_null=True)
    specs = GpuSpecSerializer(many=True, read_only=True)
    usable_memory = serializers.SerializerMethodField(
        help_text="The memory a process can use and its basis (catalog usable MiB with its source, or the datasheet "
        "GB × 10⁹ bytes, or a CPU device's stated host memory); null when the catalog records no memory."
    )
    reference_price = serializers.SerializerMethodField(
        help_text="A public reference price per GPU-hour with its source and date (never a quote); null when none."
    )

    def get_usable_memory(self, gpu) -> dict | None:
        usable = usable_memory_bytes(gpu)
        if usable is None:
            return None
        return UsableMemorySerializer(
            {**usable.__dict__, "basis": usable.basis.value, "basis_label": usable.basis_label}
        ).data

    def get_reference_price(self, gpu) -> dict | None:
        price = reference_price(gpu)
        return ReferencePriceSerializer(price).data if price is not None else None

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
            "device_kind",
            "parent",
            "parent_display_name",
            "compute_slices",
            "compute_slices_of",
            "memory_slices",
            "memory_slices_of",
            "usable_memory",
            "reference_price",
            "specs",
        ]
        read_only_fields = fields
