"""Vendor quotes and everything a price needs to be defensible: versions with sources, typed cost lines, documents,
exchange rates, the procurement checklist with its commitment policy, and candidate rows.

Money is exact Decimal stored as text (apps.common.fields.ExactDecimalField): compare and sort it in Python.
"""

from __future__ import annotations

import datetime
import os
import uuid

from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from apps.accounts.fields import user_foreign_key
from apps.accounts.scoping import TeamScopedQuerySet, scoped_queryset
from apps.common import money
from apps.common.fields import ExactDecimalField
from apps.common.models import (
    EnteredByModel,
    TeamOwnedModel,
    source_field,
    sourced_pair_constraints,
    team_foreign_key,
)
from apps.quotes import kinds
from apps.quotes.kinds import USAGE_UNITS

CURRENCY_CHOICES = [(code, code) for code in money.CURRENCY_CODES]


class CommercialModel(models.TextChoices):
    ON_DEMAND = "on_demand", _("On-demand")
    SPOT = "spot", _("Spot")
    RESERVED = "reserved", _("Reserved")
    MARKETPLACE = "marketplace", _("Marketplace")
    DEDICATED_CLUSTER = "dedicated_cluster", _("Dedicated cluster")
    PRIVATE_CLOUD = "private_cloud", _("Private cloud")
    MANAGED_ENDPOINT = "managed_endpoint", _("Managed endpoint")
    PURCHASE = "purchase", _("Purchase")
    MODEL_API = "model_api", _("Model/API route")


#: Commercial models that bill committed hours whether they are used or not.
COMMITTED_MODELS = frozenset(
    {CommercialModel.RESERVED, CommercialModel.DEDICATED_CLUSTER, CommercialModel.PRIVATE_CLOUD}
)


class PriceUnit(models.TextChoices):
    GPU_HOUR = kinds.PriceUnit.GPU_HOUR.value, _("per GPU-hour")
    NODE_HOUR = kinds.PriceUnit.NODE_HOUR.value, _("per node-hour")
    MILLION_TOKENS = kinds.PriceUnit.MILLION_TOKENS.value, _("per 1M tokens (input and output priced apart)")
    REQUEST = kinds.PriceUnit.REQUEST.value, _("per request")
    NODE_PURCHASE = kinds.PriceUnit.NODE_PURCHASE.value, _("per node bought")


class PaymentOption(models.TextChoices):
    PAY_AS_YOU_GO = "pay_as_you_go", _("Pay as you go")
    NO_UPFRONT = "no_upfront", _("No upfront")
    PARTIAL_UPFRONT = "partial_upfront", _("Partial upfront")
    ALL_UPFRONT = "all_upfront", _("All upfront")
    MONTHLY_INVOICE = "monthly_invoice", _("Monthly invoice")
    PREPAID_CREDITS = "prepaid_credits", _("Prepaid credits")


class BillingGranularity(models.IntegerChoices):
    SECOND = 1, _("per second")
    MINUTE = 60, _("per minute")
    HOUR = 3600, _("per hour")
    DAY = 86400, _("per day")
    MONTH = 2628000, _("per month (730 hours)")


class Vendor(TeamOwnedModel):
    team = team_foreign_key("vendors")
    name = models.CharField(_("name"), max_length=120)
    website = models.URLField(_("website"), max_length=500, blank=True)
    contact = models.CharField(_("contact"), max_length=200, blank=True, help_text=_("Who sent the quotes."))
    notes = models.TextField(_("notes"), blank=True)
    created_by = None  # a vendor is the team's address book entry; the audit log says who added it

    class Meta:
        ordering = ["name"]
        verbose_name = _("vendor")
        verbose_name_plural = _("vendors")
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="quotes_vendor_unique_team_name"),
            models.CheckConstraint(condition=~Q(name=""), name="quotes_vendor_named"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("quotes:vendor-detail", args=[self.pk])


class Quote(TeamOwnedModel):
    """A vendor's offer: the node, the topology and the commercial terms. Its prices live in PriceVersion rows."""

    team = team_foreign_key("quotes")
    vendor = models.ForeignKey(Vendor, on_delete=models.PROTECT, related_name="quotes", verbose_name=_("vendor"))
    title = models.CharField(
        _("title"), max_length=200, help_text=_("A short name, e.g. “8× H200 reserved 12 months”.")
    )
    vendor_reference = models.CharField(_("vendor's quote number"), max_length=120, blank=True)

    # What is offered.
    sku = models.CharField(_("SKU / instance type"), max_length=120, blank=True)
    region = models.CharField(_("region"), max_length=80, blank=True)
    zone = models.CharField(_("zone"), max_length=80, blank=True)
    gpu = models.ForeignKey(
        "catalog.GpuModel",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="quotes",
        verbose_name=_("GPU"),
        help_text=_("Required unless the quote is a model/API route priced per token or per request."),
    )
    served_model = models.CharField(
        _("served model"), max_length=200, blank=True, help_text=_("For a model/API route or managed endpoint.")
    )
    form_factor = models.CharField(_("node form factor"), max_length=120, blank=True)
    gpu_memory_gb = ExactDecimalField(_("memory per GPU (GB)"), max_digits=8, decimal_places=2, null=True, blank=True)
    gpus_per_node = models.PositiveSmallIntegerField(_("GPUs per node"), default=1)
    node_count = models.PositiveIntegerField(_("nodes quoted"), default=1)
    vcpus_per_node = models.PositiveIntegerField(_("vCPUs per node"), null=True, blank=True)
    ram_gb_per_node = models.PositiveIntegerField(_("RAM per node (GB)"), null=True, blank=True)
    local_nvme_tb_per_node = ExactDecimalField(
        _("local NVMe per node (TB)"), max_digits=8, decimal_places=3, null=True, blank=True
    )
    interconnect_intra_node = models.CharField(
        _("interconnect inside the node"), max_length=200, blank=True, help_text=_("e.g. NVLink 4 with NVSwitch.")
    )
    interconnect_inter_node = models.CharField(
        _("interconnect between nodes"), max_length=200, blank=True, help_text=_("e.g. 8× 400 Gb/s InfiniBand NDR.")
    )
    storage_bandwidth = models.CharField(_("storage bandwidth"), max_length=120, blank=True)
    network_bandwidth = models.CharField(_("network bandwidth"), max_length=120, blank=True)
    placement = models.TextField(
        _("placement assumptions"), blank=True, help_text=_("Placement group, rack, dedicated cluster…")
    )

    # Commercial terms.
    commercial_model = models.CharField(_("commercial model"), max_length=30, choices=CommercialModel.choices)
    price_unit = models.CharField(_("price unit"), max_length=30, choices=PriceUnit.choices)
    currency = models.CharField(_("currency"), max_length=3, choices=CURRENCY_CHOICES)
    billing_granularity_seconds = models.PositiveIntegerField(
        _("billing granularity"), choices=BillingGranularity.choices, null=True, blank=True
    )
    minimum_billed_seconds = models.PositiveIntegerField(
        _("minimum charge per run (seconds)"),
        null=True,
        blank=True,
        help_text=_("The least time billed each time the GPUs start (e.g. 60 for a one-minute minimum)."),
    )
    term_months = models.PositiveIntegerField(_("term (months)"), null=True, blank=True)
    committed_hours_per_month = ExactDecimalField(
        _("committed hours per month"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=_("Hours billed per GPU (or per node, by the price unit) each month whether used or not."),
    )
    payment_option = models.CharField(_("payment option"), max_length=30, choices=PaymentOption.choices, blank=True)
    cancellation_terms = models.TextField(_("cancellation rights"), blank=True)
    support_tier = models.CharField(_("support tier"), max_length=120, blank=True)
    spot_preemption_rate_per_hour = ExactDecimalField(
        _("spot preemptions per GPU-hour"), max_digits=12, decimal_places=8, null=True, blank=True
    )
    spot_preemption_source = source_field(_("source of the preemption rate"))

    # Owning instead of renting: the non-money figures (the money ones are prices, see PriceComponent).
    amortisation_months = models.PositiveIntegerField(_("amortisation (months)"), null=True, blank=True)
    amortisation_source = source_field(_("source of the amortisation period"))
    power_kw_per_node = ExactDecimalField(
        _("power draw per node (kW)"), max_digits=10, decimal_places=4, null=True, blank=True
    )
    power_source = source_field(_("source of the power draw"))
    pue = ExactDecimalField(_("PUE"), max_digits=6, decimal_places=3, null=True, blank=True)
    pue_source = source_field(_("source of the PUE"))

    notes = models.TextField(_("notes"), blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["vendor__name", "title"]
        verbose_name = _("quote")
        verbose_name_plural = _("quotes")
        constraints = [
            models.CheckConstraint(condition=~Q(title=""), name="quotes_quote_titled"),
            models.CheckConstraint(condition=Q(gpus_per_node__gte=1), name="quotes_quote_gpus_per_node_positive"),
            models.CheckConstraint(condition=Q(node_count__gte=1), name="quotes_quote_node_count_positive"),
            *sourced_pair_constraints(
                "quotes_quote",
                preemption=(
                    "spot_preemption_rate_per_hour", "spot_preemption_source",
                    _("A spot preemption rate needs its source."),
                ),
                amortisation=(
                    "amortisation_months", "amortisation_source", _("An amortisation period needs its source.")
                ),
                power=("power_kw_per_node", "power_source", _("A power draw needs its source.")),
                pue=("pue", "pue_source", _("A PUE needs its source.")),
            ),
            models.CheckConstraint(
                condition=Q(commercial_model=CommercialModel.PURCHASE, price_unit=PriceUnit.NODE_PURCHASE)
                | (~Q(commercial_model=CommercialModel.PURCHASE) & ~Q(price_unit=PriceUnit.NODE_PURCHASE)),
                name="quotes_quote_purchase_priced_per_node",
                violation_error_message=_("A purchase is priced per node bought, and only a purchase is."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.vendor.name} · {self.title}"

    def get_absolute_url(self) -> str:
        return reverse("quotes:quote-detail", args=[self.pk])

    def clean(self):
        from django.core.exceptions import ValidationError

        errors: dict[str, list] = {}
        if self.price_unit in USAGE_UNITS:
            if self.commercial_model not in {CommercialModel.MODEL_API, CommercialModel.MANAGED_ENDPOINT}:
                errors.setdefault("price_unit", []).append(
                    _("Per-token and per-request prices belong to a model/API route or a managed endpoint.")
                )
        elif self.gpu_id is None:
            errors.setdefault("gpu", []).append(_("Name the GPU from the catalog."))
        if self.commercial_model == CommercialModel.MODEL_API and self.price_unit not in USAGE_UNITS:
            errors.setdefault("price_unit", []).append(_("A model/API route is priced per token or per request."))
        if self.commercial_model == CommercialModel.PURCHASE:
            for name in ("amortisation_months", "power_kw_per_node", "pue"):
                if getattr(self, name) is None:
                    errors.setdefault(name, []).append(_("A purchase needs this figure (with its source)."))
        if self.pue is not None and self.pue < 1:
            errors.setdefault("pue", []).append(_("A PUE is at least 1."))
        if self.spot_preemption_rate_per_hour is not None and self.commercial_model != CommercialModel.SPOT:
            errors.setdefault("spot_preemption_rate_per_hour", []).append(_("Only a spot quote has preemptions."))
        if self.committed_hours_per_month is not None and self.committed_hours_per_month > 744:
            errors.setdefault("committed_hours_per_month", []).append(_("A month has at most 744 hours."))
        if errors:
            raise ValidationError(errors)

    @property
    def is_api_route(self) -> bool:
        return self.price_unit in USAGE_UNITS

    @property
    def is_purchase(self) -> bool:
        return self.commercial_model == CommercialModel.PURCHASE

    @property
    def billing_model(self) -> str:
        """How phase 4 bills it: on_demand, spot, reserved (committed hours), purchase or api (per token/request)."""
        if self.is_purchase:
            return "purchase"
        if self.is_api_route:
            return "api"
        if self.commercial_model == CommercialModel.SPOT:
            return "spot"
        if self.commercial_model in COMMITTED_MODELS and self.committed_hours_per_month is not None:
            return "reserved"
        return "on_demand"

    @property
    def gpus_quoted(self) -> int:
        return self.gpus_per_node * self.node_count


class PriceComponent(models.TextChoices):
    """The priced items of a quote; each one has its own chain of versions."""

    LIST_PRICE = "list_price", _("List price")
    CONTRACTED_PRICE = "contracted_price", _("Contracted price")
    INPUT_TOKENS = "input_tokens", _("Input tokens, per 1M")
    OUTPUT_TOKENS = "output_tokens", _("Output tokens, per 1M")
    OVERAGE_RATE = "overage_rate", _("Overage rate")
    MINIMUM_COMMITMENT = "minimum_commitment", _("Minimum commitment, per month")
    SPARES_PER_NODE = "spares_per_node", _("Spares, per node")
    MAINTENANCE_PER_NODE_YEAR = "maintenance_per_node_year", _("Maintenance, per node and year")
    ENERGY_PER_KWH = "energy_per_kwh", _("Energy, per kWh")
    COLOCATION_PER_KW_MONTH = "colocation_per_kw_month", _("Colocation, per kW-month")


#: Components priced in the quote's own price unit (list, contracted and overage rates).
PER_PRICE_UNIT_COMPONENTS = frozenset(
    {PriceComponent.LIST_PRICE, PriceComponent.CONTRACTED_PRICE, PriceComponent.OVERAGE_RATE}
)
PURCHASE_COMPONENTS = frozenset(
    {
        PriceComponent.SPARES_PER_NODE,
        PriceComponent.MAINTENANCE_PER_NODE_YEAR,
        PriceComponent.ENERGY_PER_KWH,
        PriceComponent.COLOCATION_PER_KW_MONTH,
    }
)
TOKEN_COMPONENTS = frozenset({PriceComponent.INPUT_TOKENS, PriceComponent.OUTPUT_TOKENS})


class SourceKind(models.TextChoices):
    PRICE_PAGE = "price_page", _("Price page (URL)")
    VENDOR_QUOTE_FILE = "vendor_quote_file", _("Vendor quote file")
    EMAIL = "email", _("Email")
    API = "api", _("Vendor API")


class PriceVersion(EnteredByModel):
    """One observed value of one priced item. Never edited: a new price is a new version, the old ones stay."""

    quote = models.ForeignKey(Quote, on_delete=models.CASCADE, related_name="price_versions", verbose_name=_("quote"))
    component = models.CharField(_("priced item"), max_length=40, choices=PriceComponent.choices)
    number = models.PositiveIntegerField(_("version"))
    amount = ExactDecimalField(_("amount"), max_digits=30, decimal_places=18)
    currency = models.CharField(_("currency"), max_length=3, choices=CURRENCY_CHOICES)
    source_kind = models.CharField(_("source kind"), max_length=30, choices=SourceKind.choices)
    source_reference = models.CharField(
        _("source"),
        max_length=500,
        help_text=_("The price page URL, the file name and page, the email's sender and subject, or the API call."),
    )
    document = models.ForeignKey(
        "QuoteDocument",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="prices",
        verbose_name=_("quote document"),
    )
    observed_at = models.DateTimeField(_("observed at"), help_text=_("When the price was read at its source."))
    valid_until = models.DateField(_("valid until"), null=True, blank=True)
    note = models.CharField(_("note"), max_length=500, blank=True)

    objects = scoped_queryset("quote__team").as_manager()

    class Meta:
        ordering = ["quote", "component", "-number"]
        verbose_name = _("price version")
        verbose_name_plural = _("price versions")
        constraints = [
            models.UniqueConstraint(fields=["quote", "component", "number"], name="quotes_price_unique_version"),
            models.CheckConstraint(condition=Q(number__gte=1), name="quotes_price_number_positive"),
            models.CheckConstraint(
                condition=~Q(source_reference=""),
                name="quotes_price_has_source",
                violation_error_message=_("A price needs its source."),
            ),
            models.CheckConstraint(
                condition=Q(observed_at__isnull=False),
                name="quotes_price_has_timestamp",
                violation_error_message=_("A price needs the time it was observed."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.quote} · {self.get_component_display()} v{self.number}"

    def get_absolute_url(self) -> str:
        return reverse("quotes:quote-detail", args=[self.quote_id]) + f"#price-{self.pk}"

    def clean(self):
        from django.core.exceptions import ValidationError

        if self.source_kind == SourceKind.PRICE_PAGE and not self.source_reference.startswith(("https://", "http://")):
            raise ValidationError({"source_reference": _("A price page is cited by its URL.")})
        if self.source_kind == SourceKind.VENDOR_QUOTE_FILE and self.document_id is None:
            raise ValidationError(
                {
                    "document": _(
                        "A price from the vendor's quote file cites that file: upload it with this price (the "
                        "price form's file field, or `file` in a multipart POST to /api/v1/quotes/price-versions/), "
                        "or pick a document already attached to the quote."
                    )
                }
            )
        if self.document_id is not None and self.quote_id is not None and self.document.quote_id != self.quote_id:
            raise ValidationError({"document": _("This document belongs to another quote.")})
        if self.observed_at is not None and self.observed_at > timezone.now() + datetime.timedelta(minutes=5):
            raise ValidationError({"observed_at": _("A price cannot be observed in the future.")})

    @property
    def unit_label(self) -> str:
        """What one `amount` buys, in words."""
        if self.component in PER_PRICE_UNIT_COMPONENTS:
            return str(self.quote.get_price_unit_display())
        return str(self.get_component_display())


class CostKind(models.TextChoices):
    STORAGE = "storage", _("Storage")
    NETWORK_EGRESS = "network_egress", _("Network and egress")
    CHECKPOINT_STORAGE = "checkpoint_storage", _("Checkpoint storage")
    SNAPSHOTS = "snapshots", _("Snapshots")
    PUBLIC_IP = "public_ip", _("Public IP")
    LOAD_BALANCER = "load_balancer", _("Load balancer")
    PRIVATE_NETWORK = "private_network", _("Private network")
    SERVING_STACK = "serving_stack", _("Serving stack")
    GATEWAY_OPERATIONS = "gateway_operations", _("Gateway and operations")
    OBSERVABILITY = "observability", _("Observability")
    PLATFORM_LABOR = "platform_labor", _("Platform labor")
    MODERATION = "moderation", _("Moderation and quality filtering")
    QUEUE_OVERHEAD = "queue_overhead", _("Queue overhead")
    OPERATOR_REVIEW = "operator_review", _("Operator review")


#: How each typed line maps onto the cost kinds of the phase-4 normalisation (apps/comparison/cost_model.py).
NORMALIZATION_COST_KIND = {
    CostKind.STORAGE: "storage",
    CostKind.SNAPSHOTS: "storage",
    CostKind.CHECKPOINT_STORAGE: "checkpointing",
    CostKind.NETWORK_EGRESS: "network",
    CostKind.PUBLIC_IP: "network",
    CostKind.LOAD_BALANCER: "network",
    CostKind.PRIVATE_NETWORK: "network",
    CostKind.SERVING_STACK: "serving_stack",
    CostKind.GATEWAY_OPERATIONS: "gateway",
    CostKind.OBSERVABILITY: "observability",
    CostKind.PLATFORM_LABOR: "platform_labor",
    CostKind.MODERATION: "moderation",
    CostKind.QUEUE_OVERHEAD: "queue_overhead",
    CostKind.OPERATOR_REVIEW: "operator_review",
}


class CostPeriod(models.TextChoices):
    MONTH = "month", _("per month")
    RUN = "run", _("per training run")


class CostLineQuerySet(scoped_queryset("quote__team")):
    def current(self):
        return self.filter(replaced_by__isnull=True, removed_at__isnull=True)


class CostLine(EnteredByModel):
    """A typed cost besides the GPU price: quantity × rate per period, with its source or its estimator.

    Lines on the quote apply to every candidate made from it; a line that names a candidate adds a
    workload-specific cost to that candidate only. A changed line is replaced (the old one stays, linked).
    """

    quote = models.ForeignKey(Quote, on_delete=models.CASCADE, related_name="cost_lines", verbose_name=_("quote"))
    candidate = models.ForeignKey(
        "Candidate",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="cost_lines",
        verbose_name=_("candidate"),
        help_text=_("Leave empty when the cost applies to every candidate of the quote."),
    )
    kind = models.CharField(_("kind"), max_length=30, choices=CostKind.choices)
    description = models.CharField(_("description"), max_length=300, blank=True)
    quantity = ExactDecimalField(_("quantity"), max_digits=24, decimal_places=8)
    unit = models.CharField(_("unit"), max_length=40, help_text=_("e.g. GB-month, hours, IP-month."))
    rate = ExactDecimalField(_("rate per unit"), max_digits=30, decimal_places=18)
    currency = models.CharField(_("currency"), max_length=3, choices=CURRENCY_CHOICES)
    period = models.CharField(_("period"), max_length=10, choices=CostPeriod.choices, default=CostPeriod.MONTH)
    source_reference = models.CharField(
        _("source"), max_length=500, blank=True, help_text=_("Where the rate comes from; empty for an estimate.")
    )
    observed_at = models.DateTimeField(_("observed at"), null=True, blank=True)
    estimated_by = user_foreign_key(_("estimated by"), on_delete=models.PROTECT)
    estimate_reason = models.CharField(_("why this estimate"), max_length=500, blank=True)
    replaced_by = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="replaces", verbose_name=_("replaced by")
    )
    removed_at = models.DateTimeField(_("removed at"), null=True, blank=True)

    objects = CostLineQuerySet.as_manager()

    class Meta:
        ordering = ["quote", "kind", "pk"]
        verbose_name = _("cost line")
        verbose_name_plural = _("cost lines")
        constraints = [
            models.CheckConstraint(
                condition=(~Q(source_reference="") & Q(observed_at__isnull=False))
                | (Q(estimated_by__isnull=False) & ~Q(estimate_reason="")),
                name="quotes_costline_sourced_or_estimated",
                violation_error_message=_(
                    "A cost line needs a source with the date it was read, or who estimated it and why."
                ),
            ),
            models.CheckConstraint(condition=~Q(unit=""), name="quotes_costline_has_unit"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.quantity} {self.unit} × {self.rate} {self.currency}"

    def get_absolute_url(self) -> str:
        return reverse("quotes:quote-detail", args=[self.quote_id]) + f"#cost-{self.pk}"

    def clean(self):
        from django.core.exceptions import ValidationError

        if self.candidate_id is not None and self.quote_id is not None and self.candidate.quote_id != self.quote_id:
            raise ValidationError({"candidate": _("This candidate is made from another quote.")})

    @property
    def amount(self):
        """quantity × rate, exact."""
        return money.multiply(self.quantity, self.rate)

    @property
    def is_estimate(self) -> bool:
        return not self.source_reference

    @property
    def is_current(self) -> bool:
        return self.replaced_by_id is None and self.removed_at is None


def _document_path(instance: QuoteDocument, filename: str) -> str:
    extension = os.path.splitext(filename)[1].lower()
    return f"quotes/{instance.quote.team_id}/{uuid.uuid4().hex}{extension}"


class DocumentKind(models.TextChoices):
    PDF = "pdf", "PDF"
    XLSX = "xlsx", "XLSX"
    CSV = "csv", "CSV"
    EML = "eml", "EML"


class QuoteDocument(models.Model):
    """A vendor document behind a quote (PDF, spreadsheet, saved email), checked for type and size on upload."""

    quote = models.ForeignKey(Quote, on_delete=models.CASCADE, related_name="documents", verbose_name=_("quote"))
    file = models.FileField(_("file"), upload_to=_document_path, max_length=300)
    original_name = models.CharField(_("file name"), max_length=255)
    kind = models.CharField(_("type"), max_length=10, choices=DocumentKind.choices)
    size_bytes = models.PositiveBigIntegerField(_("size (bytes)"))
    sha256 = models.CharField(_("SHA-256"), max_length=64)
    description = models.CharField(_("description"), max_length=300, blank=True)
    uploaded_by = user_foreign_key(_("uploaded by"))
    uploaded_at = models.DateTimeField(_("uploaded at"), default=timezone.now)

    objects = scoped_queryset("quote__team").as_manager()

    class Meta:
        ordering = ["quote", "-uploaded_at"]
        verbose_name = _("quote document")
        verbose_name_plural = _("quote documents")

    def __str__(self) -> str:
        return self.original_name

    def get_absolute_url(self) -> str:
        return reverse("quotes:document-download", args=[self.pk])


class ExchangeRate(EnteredByModel):
    """`rate` units of `to_currency` for one unit of `from_currency`, as of a date, from a cited source."""

    team = team_foreign_key("exchange_rates")
    from_currency = models.CharField(_("from"), max_length=3, choices=CURRENCY_CHOICES)
    to_currency = models.CharField(_("to"), max_length=3, choices=CURRENCY_CHOICES)
    rate = ExactDecimalField(_("rate"), max_digits=30, decimal_places=18)
    source = models.CharField(_("source"), max_length=500, help_text=_("e.g. the central bank's reference rate page."))
    as_of = models.DateField(_("as of"))

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["from_currency", "to_currency", "-as_of", "-pk"]
        verbose_name = _("exchange rate")
        verbose_name_plural = _("exchange rates")
        constraints = [
            models.UniqueConstraint(
                fields=["team", "from_currency", "to_currency", "as_of"], name="quotes_rate_unique_per_day"
            ),
            models.CheckConstraint(
                condition=~Q(source=""),
                name="quotes_rate_has_source",
                violation_error_message=_("An exchange rate needs its source."),
            ),
            models.CheckConstraint(
                condition=Q(as_of__isnull=False),
                name="quotes_rate_has_date",
                violation_error_message=_("An exchange rate needs its date."),
            ),
            models.CheckConstraint(
                condition=~Q(from_currency=models.F("to_currency")),
                name="quotes_rate_two_currencies",
                violation_error_message=_("An exchange rate converts between two different currencies."),
            ),
        ]

    def __str__(self) -> str:
        return f"1 {self.from_currency} = {self.rate} {self.to_currency} ({self.as_of:%Y-%m-%d})"

    def get_absolute_url(self) -> str:
        return reverse("quotes:rate-list") + f"#rate-{self.pk}"

    def clean(self):
        from django.core.exceptions import ValidationError

        if self.rate is not None and self.rate <= 0:
            raise ValidationError({"rate": _("An exchange rate is positive.")})


# ---------------------------------------------------------------------------------------------------------------
# The procurement checklist (questions are data, in English, French and Indonesian) and the commitment policy.


class ChecklistGroup(models.TextChoices):
    HARDWARE = "hardware", _("Hardware and topology")
    SOFTWARE = "software", _("Software stack")
    COMMERCIAL = "commercial", _("Commercial model")
    SECURITY = "security", _("Security and governance")


class TranslatedText(models.Model):
    """A text carried in the three languages of the guide; `text` picks the active language."""

    text_en = models.TextField(_("text (English)"))
    text_fr = models.TextField(_("text (French)"))
    text_id = models.TextField(_("text (Indonesian)"))

    class Meta:
        abstract = True

    @property
    def text(self) -> str:
        language = (get_language() or "en").split("-")[0]
        return getattr(self, f"text_{language}", "") or self.text_en


class ChecklistQuestion(TranslatedText):
    code = models.SlugField(_("code"), max_length=60, unique=True)
    group = models.CharField(_("group"), max_length=20, choices=ChecklistGroup.choices)
    position = models.PositiveSmallIntegerField(_("position"), default=0)
    active = models.BooleanField(_("active"), default=True)

    audit_is_global = True

    class Meta:
        ordering = ["group", "position", "code"]
        verbose_name = _("checklist question")
        verbose_name_plural = _("checklist questions")

    def __str__(self) -> str:
        return self.text


class AnswerStatus(models.TextChoices):
    ANSWERED = "answered", _("Answered")
    NOT_PROVIDED = "not_provided", _("Not provided")
    NOT_APPLICABLE = "not_applicable", _("Not applicable")


class AnswerOrigin(models.TextChoices):
    """Who gave an answer: a person, or the quote's own terms (apps/quotes/checklist_prefill.py)."""

    PERSON = "person", _("Answered by a person")
    QUOTE = "quote", _("From the quote")


class ChecklistAnswer(models.Model):
    quote = models.ForeignKey(Quote, on_delete=models.CASCADE, related_name="answers", verbose_name=_("quote"))
    question = models.ForeignKey(
        ChecklistQuestion, on_delete=models.PROTECT, related_name="answers", verbose_name=_("question")
    )
    status = models.CharField(_("status"), max_length=20, choices=AnswerStatus.choices)
    value = models.TextField(_("answer"), blank=True)
    evidence = models.CharField(
        _("evidence"), max_length=500, blank=True, help_text=_("Where the answer is written: a URL, a page, an email.")
    )
    evidence_document = models.ForeignKey(
        QuoteDocument,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="answers",
        verbose_name=_("evidence document"),
    )
    answered_by = user_foreign_key(_("answered by"))
    answered_at = models.DateTimeField(_("answered at"), default=timezone.now)
    origin = models.CharField(
        _("origin"),
        max_length=10,
        choices=AnswerOrigin.choices,
        default=AnswerOrigin.PERSON,
        help_text=_(
            "“From the quote”: written from the quote's own terms, and rewritten when they change until a person "
            "edits the answer."
        ),
    )

    objects = scoped_queryset("quote__team").as_manager()

    class Meta:
        ordering = ["question__group", "question__position"]
        verbose_name = _("checklist answer")
        verbose_name_plural = _("checklist answers")
        constraints = [
            models.UniqueConstraint(fields=["quote", "question"], name="quotes_answer_unique_per_question"),
            models.CheckConstraint(
                condition=~Q(status="answered") | ~Q(value=""),
                name="quotes_answer_has_value",
                violation_error_message=_("An answer needs its value (or mark it not provided / not applicable)."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.quote} · {self.question.code}: {self.get_status_display()}"

    def get_absolute_url(self) -> str:
        return reverse("quotes:quote-checklist", args=[self.quote_id])

    def clean(self):
        from django.core.exceptions import ValidationError

        if (
            self.evidence_document_id is not None
            and self.quote_id is not None
            and self.evidence_document.quote_id != self.quote_id
        ):
            raise ValidationError({"evidence_document": _("This document belongs to another quote.")})

    @property
    def has_evidence(self) -> bool:
        return bool(self.evidence or self.evidence_document_id)


class CommitmentTier(models.Model):
    """The commitment policy, one tier per row: from this commitment on, these answers must be present.

    Admins edit it in the Django admin. A quote falls in the highest tier whose threshold its commitment reaches
    (converted to the tier's currency with the team's rates); the tiers below add their questions too.
    """

    name_en = models.CharField(_("name (English)"), max_length=120)
    name_fr = models.CharField(_("name (French)"), max_length=120)
    name_id = models.CharField(_("name (Indonesian)"), max_length=120)
    minimum_commitment = ExactDecimalField(_("from a commitment of"), max_digits=24, decimal_places=2)
    currency = models.CharField(_("currency"), max_length=3, choices=CURRENCY_CHOICES, default="USD")
    required_questions = models.ManyToManyField(
        ChecklistQuestion, related_name="tiers", blank=True, verbose_name=_("answers required")
    )
    evidence_required = models.BooleanField(
        _("evidence required"), default=False, help_text=_("Every required answer must cite its evidence.")
    )

    audit_is_global = True

    class Meta:
        ordering = ["currency", "pk"]
        verbose_name = _("commitment policy tier")
        verbose_name_plural = _("commitment policy tiers")

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        language = (get_language() or "en").split("-")[0]
        return getattr(self, f"name_{language}", "") or self.name_en


# ---------------------------------------------------------------------------------------------------------------
# Stale price flags: what the beat task `flag_stale_prices` found, listed on a page.


class StalePriceFlag(models.Model):
    price = models.ForeignKey(PriceVersion, on_delete=models.CASCADE, related_name="flags", verbose_name=_("price"))
    team = team_foreign_key("+", on_delete=models.CASCADE)
    reason = models.CharField(_("reason"), max_length=20)
    flagged_at = models.DateTimeField(_("flagged at"))
    cleared_at = models.DateTimeField(_("cleared at"), null=True, blank=True)

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-flagged_at", "-pk"]
        verbose_name = _("stale price flag")
        verbose_name_plural = _("stale price flags")
        constraints = [
            models.UniqueConstraint(
                fields=["price"], condition=Q(cleared_at__isnull=True), name="quotes_flag_one_open_per_price"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.price} · {self.reason}"

    def get_absolute_url(self) -> str:
        return reverse("quotes:stale-prices")


# ---------------------------------------------------------------------------------------------------------------
# Candidate rows: what phase 4 compares.


class CandidateKind(models.TextChoices):
    GPU = kinds.CandidateKind.GPU.value, _("GPU rental")
    PURCHASE = kinds.CandidateKind.PURCHASE.value, _("Purchase option")
    API = kinds.CandidateKind.API.value, _("Model/API route")


def candidate_kind_for(quote: Quote) -> str:
    if quote.is_purchase:
        return CandidateKind.PURCHASE
    if quote.is_api_route:
        return CandidateKind.API
    return CandidateKind.GPU


class Candidate(TeamOwnedModel):
    """A quote attached to a ready workload summary version: a GPU rental, a purchase option or a model/API route."""

    team = team_foreign_key("candidates")
    quote = models.ForeignKey(Quote, on_delete=models.PROTECT, related_name="candidates", verbose_name=_("quote"))
    workload_summary = models.ForeignKey(
        "workloads.WorkloadSummary",
        on_delete=models.PROTECT,
        related_name="candidates",
        verbose_name=_("workload summary version"),
        help_text=_("A ready version: the candidate keeps the version it was made for."),
    )
    kind = models.CharField(_("kind"), max_length=20, choices=CandidateKind.choices)
    label = models.CharField(_("label"), max_length=200)
    expected_retry_rate = ExactDecimalField(
        _("expected retry rate"),
        max_digits=10,
        decimal_places=8,
        null=True,
        blank=True,
        help_text=_("A fraction: 0.02 means 2 requests in 100 are sent again. Phase 3 measures it."),
    )
    retry_rate_source = source_field(_("source of the retry rate"))
    quality_acceptance = ExactDecimalField(
        _("quality acceptance"),
        max_digits=10,
        decimal_places=8,
        null=True,
        blank=True,
        help_text=_("The share of outputs that pass the quality check (0 to 1), e.g. from the route's evaluations."),
    )
    quality_acceptance_source = source_field(_("source of the quality acceptance"))
    spot_rework_hours = ExactDecimalField(
        _("rework hours per preemption"), max_digits=10, decimal_places=4, null=True, blank=True
    )
    spot_rework_source = source_field(_("source of the rework hours"))
    notes = models.TextField(_("notes"), blank=True)

    class Meta:
        ordering = ["label", "pk"]
        verbose_name = _("candidate")
        verbose_name_plural = _("candidates")
        constraints = [
            models.UniqueConstraint(
                fields=["quote", "workload_summary"],
                name="quotes_candidate_unique_quote_workload",
                violation_error_message=_("This quote is already a candidate for this workload version."),
            ),
            models.CheckConstraint(condition=~Q(label=""), name="quotes_candidate_labelled"),
            *sourced_pair_constraints(
                "quotes_candidate",
                retry_rate=("expected_retry_rate", "retry_rate_source", _("A retry rate needs its source.")),
                acceptance=(
                    "quality_acceptance", "quality_acceptance_source", _("A quality acceptance needs its source.")
                ),
                rework=("spot_rework_hours", "spot_rework_source", _("Rework hours need their source.")),
            ),
        ]

    def __str__(self) -> str:
        return self.label

    def get_absolute_url(self) -> str:
        return reverse("quotes:candidate-detail", args=[self.pk])

    def clean(self):
        from django.core.exceptions import ValidationError

        errors: dict[str, list] = {}
        if self.workload_summary_id is not None:
            if not self.workload_summary.is_ready:
                errors.setdefault("workload_summary", []).append(
                    _("A candidate attaches to a ready workload version, not a draft.")
                )
            if self.team_id is not None and self.workload_summary.team_id != self.team_id:
                errors.setdefault("workload_summary", []).append(_("This workload belongs to another team."))
        if self.expected_retry_rate is not None and not (0 <= self.expected_retry_rate < 1):
            errors.setdefault("expected_retry_rate", []).append(_("A retry rate is a fraction from 0 to below 1."))
        if self.quality_acceptance is not None and not (0 < self.quality_acceptance <= 1):
            errors.setdefault("quality_acceptance", []).append(_("A quality acceptance is above 0 and at most 1."))
        if self.spot_rework_hours is not None and self.kind and self.quote_id and self.quote.billing_model != "spot":
            errors.setdefault("spot_rework_hours", []).append(_("Only a spot quote has preemptions to rework."))
        if errors:
            raise ValidationError(errors)
