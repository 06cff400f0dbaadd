"""The GPU catalog: GPU models and their datasheet figures, each figure with its own source and as-of date."""

from decimal import Decimal
from fractions import Fraction
from functools import reduce
from operator import or_

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from apps.common.models import EnteredByModel, HistoryLinkedModel, sourced_constraint


class FormFactor(models.TextChoices):
    # Product terms, the same in every language: not marked for translation.
    PCIE = "PCIe", "PCIe"
    SXM = "SXM", "SXM"
    SUPERCHIP = "Superchip", "Superchip"
    HOST = "Host", _("host (CPU)")


class DeviceKind(models.TextChoices):
    """What a catalog device is: a whole GPU, a MIG profile (a fixed slice of a parent GPU), or a CPU host."""

    GPU = "gpu", _("GPU")
    MIG = "mig", _("MIG profile")
    CPU = "cpu", _("CPU (host memory)")


class SpecKey(models.TextChoices):
    """The figures the catalog records; the declaration order is the column order of every table."""

    MEMORY_GB = "memory_gb", _("Memory")
    USABLE_MIB = "usable_mib", _("Usable memory (driver)")
    MEMORY_BANDWIDTH_TBPS = "memory_bandwidth_tbps", _("Memory bandwidth")
    BF16_DENSE_TFLOPS = "bf16_dense_tflops", _("BF16 dense tensor rate")
    FP8_DENSE_TFLOPS = "fp8_dense_tflops", _("FP8 dense tensor rate")
    TDP_W = "tdp_w", _("Board power (TDP)")
    NVLINK_GBPS = "nvlink_gbps", _("NVLink bandwidth")
    REFERENCE_PRICE_PER_GPU_HOUR = "reference_price_per_gpu_hour", _("Reference price per GPU-hour")


class SpecUnit(models.TextChoices):
    # SI and binary unit symbols are the same in every language: not marked for translation.
    GB = "GB", "GB"
    MIB = "MiB", "MiB"
    TB_PER_S = "TB/s", "TB/s"
    TFLOPS = "TFLOPS", "TFLOPS"
    WATT = "W", "W"
    GB_PER_S = "GB/s", "GB/s"
    USD_PER_HOUR = "USD/h", "USD/h"


#: Each key has exactly one unit (enforced by a database constraint).
SPEC_UNITS: dict[str, str] = {
    SpecKey.MEMORY_GB: SpecUnit.GB,
    SpecKey.USABLE_MIB: SpecUnit.MIB,
    SpecKey.MEMORY_BANDWIDTH_TBPS: SpecUnit.TB_PER_S,
    SpecKey.BF16_DENSE_TFLOPS: SpecUnit.TFLOPS,
    SpecKey.FP8_DENSE_TFLOPS: SpecUnit.TFLOPS,
    SpecKey.TDP_W: SpecUnit.WATT,
    SpecKey.NVLINK_GBPS: SpecUnit.GB_PER_S,
    SpecKey.REFERENCE_PRICE_PER_GPU_HOUR: SpecUnit.USD_PER_HOUR,
}

#: The currency of every reference price (its unit is USD/h).
REFERENCE_PRICE_CURRENCY = "USD"


class GpuModel(HistoryLinkedModel):
    """One GPU product variant (e.g. NVIDIA H200 SXM). The figures live in GpuSpec rows."""

    vendor = models.CharField(_("vendor"), max_length=60, default="NVIDIA")
    name = models.CharField(_("name"), max_length=120, help_text=_("As the vendor names it, e.g. NVIDIA H200."))
    variant = models.CharField(_("variant"), max_length=120, help_text=_("e.g. SXM, NVL, 80GB PCIe."))
    form_factor = models.CharField(_("form factor"), max_length=20, choices=FormFactor.choices)
    memory_type = models.CharField(_("memory type"), max_length=30, help_text=_("e.g. HBM3e, GDDR7."))
    host_interface = models.CharField(_("host interface"), max_length=60, blank=True)
    datasheet_url = models.URLField(
        _("datasheet URL"),
        max_length=500,
        blank=True,
        help_text=_("The vendor page the descriptive fields (form factor, memory type, interface) come from."),
    )
    note = models.TextField(_("note"), blank=True)
    device_kind = models.CharField(
        _("device kind"),
        max_length=10,
        choices=DeviceKind.choices,
        default=DeviceKind.GPU,
        help_text=_("A whole GPU, a MIG profile of a parent GPU, or a CPU host (its memory is host memory)."),
    )
    parent = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="mig_profiles",
        verbose_name=_("parent GPU"),
        help_text=_("For a MIG profile: the whole GPU it is a slice of."),
    )
    compute_slices = models.PositiveSmallIntegerField(
        _("compute slices"), null=True, blank=True, help_text=_("For a MIG profile: its compute slices, e.g. 3 of 7.")
    )
    compute_slices_of = models.PositiveSmallIntegerField(
        _("compute slices of the card"), null=True, blank=True, help_text=_("e.g. 7 on an A100 or H100.")
    )
    memory_slices = models.PositiveSmallIntegerField(
        _("memory slices"), null=True, blank=True, help_text=_("For a MIG profile: its memory slices, e.g. 4 of 8.")
    )
    memory_slices_of = models.PositiveSmallIntegerField(
        _("memory slices of the card"), null=True, blank=True, help_text=_("e.g. 8 on an A100 or H100.")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    #: The audit history page shows this model to every user with a role (the catalog is not team-owned).
    audit_is_global = True

    class Meta:
        ordering = ["vendor", "name", "variant"]
        verbose_name = _("GPU model")
        verbose_name_plural = _("GPU models")
        constraints = [
            models.UniqueConstraint(fields=["name", "variant"], name="catalog_gpumodel_unique_name_variant"),
            models.CheckConstraint(condition=~Q(name="") & ~Q(variant=""), name="catalog_gpumodel_named"),
            models.CheckConstraint(
                condition=(
                    Q(
                        device_kind=DeviceKind.MIG,
                        parent__isnull=False,
                        compute_slices__isnull=False,
                        compute_slices_of__isnull=False,
                        memory_slices__isnull=False,
                        memory_slices_of__isnull=False,
                        compute_slices__gte=1,
                        memory_slices__gte=1,
                        compute_slices__lte=models.F("compute_slices_of"),
                        memory_slices__lte=models.F("memory_slices_of"),
                    )
                    | (
                        ~Q(device_kind=DeviceKind.MIG)
                        & Q(
                            parent__isnull=True,
                            compute_slices__isnull=True,
                            compute_slices_of__isnull=True,
                            memory_slices__isnull=True,
                            memory_slices_of__isnull=True,
                        )
                    )
                ),
                name="catalog_gpumodel_mig_has_parent_and_share",
                violation_error_message=_(
                    "A MIG profile needs its parent GPU and its share (compute and memory slices, each at most the "
                    "card's); any other device has neither."
                ),
            ),
        ]

    def __str__(self) -> str:
        return self.display_name

    def get_absolute_url(self) -> str:
        return reverse("catalog:detail", args=[self.pk])

    @property
    def display_name(self) -> str:
        """The full name with its variant, e.g. "NVIDIA H200 SXM"."""
        return f"{self.name} {self.variant}"

    @property
    def short_name(self) -> str:
        """The name without the vendor prefix, e.g. "H200 SXM"."""
        name = self.name.removeprefix(f"{self.vendor} ") if self.vendor else self.name
        return f"{name} {self.variant}"

    def clean(self):
        super().clean()
        if self.parent_id is not None:
            if self.pk is not None and self.parent_id == self.pk:
                raise ValidationError({"parent": _("A device cannot be its own parent.")})
            if self.parent.device_kind != DeviceKind.GPU:
                raise ValidationError({"parent": _("The parent of a MIG profile must be a whole GPU.")})

    @property
    def is_mig(self) -> bool:
        return self.device_kind == DeviceKind.MIG

    @property
    def is_cpu(self) -> bool:
        return self.device_kind == DeviceKind.CPU

    @property
    def compute_share(self) -> Fraction | None:
        """A MIG profile's share of the card's compute, e.g. 3/7; None for a whole device."""
        if self.compute_slices is None or not self.compute_slices_of:
            return None
        return Fraction(self.compute_slices, self.compute_slices_of)

    @property
    def memory_share(self) -> Fraction | None:
        """A MIG profile's share of the card's memory, e.g. 4/8 = 1/2; None for a whole device."""
        if self.memory_slices is None or not self.memory_slices_of:
            return None
        return Fraction(self.memory_slices, self.memory_slices_of)

    def spec(self, key: str) -> "GpuSpec | None":
        """The recorded figure for a key, or None. Uses prefetched specs when the queryset prefetched them."""
        for spec in self.specs.all():
            if spec.key == key:
                return spec
        return None

    def specs_in_order(self) -> list[tuple[str, "GpuSpec | None"]]:
        """(key, spec or None) for every SpecKey in column order, from the prefetched specs."""
        by_key = {spec.key: spec for spec in self.specs.all()}
        return [(key, by_key.get(key)) for key in SpecKey.values]


class GpuSpec(EnteredByModel, HistoryLinkedModel):
    """One datasheet (or driver-reported) figure of a GPU model, with where it comes from and as of when."""

    gpu = models.ForeignKey(GpuModel, on_delete=models.CASCADE, related_name="specs", verbose_name=_("GPU model"))
    key = models.CharField(_("figure"), max_length=40, choices=SpecKey.choices)
    value = models.DecimalField(_("value"), max_digits=14, decimal_places=4, validators=[MinValueValidator(0)])
    unit = models.CharField(_("unit"), max_length=10, choices=SpecUnit.choices)
    source_url = models.URLField(_("source URL"), max_length=500, blank=True)
    source_text = models.CharField(
        _("source description"),
        max_length=300,
        blank=True,
        help_text=_("Where the value comes from when it is not a web page, e.g. a measurement on a real card."),
    )
    as_of = models.DateField(_("as of"))

    audit_is_global = True

    class Meta:
        ordering = ["gpu", "key"]
        verbose_name = _("GPU figure")
        verbose_name_plural = _("GPU figures")
        constraints = [
            models.UniqueConstraint(fields=["gpu", "key"], name="catalog_gpuspec_unique_gpu_key"),
            models.CheckConstraint(condition=Q(value__gte=0), name="catalog_gpuspec_value_not_negative"),
            sourced_constraint(
                sources=["source_url", "source_text"],
                name="catalog_gpuspec_has_source",
                message=_("A figure needs a source: a URL or a description."),
            ),
            models.CheckConstraint(
                condition=reduce(or_, (Q(key=key, unit=unit) for key, unit in SPEC_UNITS.items())),
                name="catalog_gpuspec_unit_matches_key",
                violation_error_message=_("This unit does not belong to this figure."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.gpu.display_name} · {self.get_key_display()}"

    def get_absolute_url(self) -> str:
        return reverse("catalog:detail", args=[self.gpu_id])

    @property
    def source(self) -> str:
        """The URL when there is one, else the description."""
        return self.source_url or self.source_text

    @property
    def value_display(self) -> str:
        """The value without trailing zeros and never in exponent form: 1.5550 → "1.555", 1000.0000 → "1000"."""
        return format_decimal(self.value)


def format_decimal(value: Decimal) -> str:
    normalized = value.normalize()
    return f"{normalized:f}"
