"""Evidence: the figures a candidate needs beyond its quote (capacity at the SLO, latencies, failure and retry rates,
memory margin, training throughput…), each with its provenance. Benchmarks write them when they measure; a person
enters them by hand with a source until then; the comparison reads them.

Figures are exact Decimals stored as text (apps.common.fields.ExactDecimalField): compare them in Python.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from apps.accounts.scoping import scoped_queryset
from apps.common.fields import ExactDecimalField
from apps.common.models import EnteredByModel, HistoryLinkedModel, provenance_constraints
from apps.common.provenance import ProvenanceKind


class FigureMetric(models.TextChoices):
    """What a candidate figure measures. Fractions are written 0.02 for 2 %."""

    CAPACITY_AT_SLO = "capacity_at_slo", _("Capacity at the SLO, per GPU")
    RETRY_RATE = "retry_rate", _("Retry rate")
    FAILURE_RATE = "failure_rate", _("Failure rate")
    P50_LATENCY_MS = "p50_latency_ms", _("p50 latency (ms)")
    P95_LATENCY_MS = "p95_latency_ms", _("p95 latency (ms)")
    P99_LATENCY_MS = "p99_latency_ms", _("p99 latency (ms)")
    MEMORY_MARGIN = "memory_margin", _("Memory margin, measured")
    TESTED_CONTEXT_TOKENS = "tested_context_tokens", _("Largest context tested (tokens)")
    TESTED_CONCURRENCY = "tested_concurrency", _("Largest concurrency tested")
    GPUS_PER_REPLICA = "gpus_per_replica", _("GPUs per replica")
    NODES_PER_REPLICA = "nodes_per_replica", _("Nodes per replica")
    INTERCONNECT_BUS_BANDWIDTH_GBPS = "interconnect_busbw_gbps", _("Interconnect bus bandwidth, all-reduce (GB/s)")
    HEADROOM = "headroom", _("Sizing headroom")
    TRAINING_THROUGHPUT = "training_tokens_per_second", _("Training throughput, whole cluster (tokens/s)")
    CHECKPOINT_WRITE_HOURS = "checkpoint_write_hours", _("Checkpoint write stall (hours)")
    RESTART_HOURS = "restart_hours", _("Restart after a failure (hours)")
    # Informational (phase 3): no comparison computes with these two; a training run's lost work per failure is
    # derived from its checkpoint interval and restart time, never added a second time.
    COLD_START_SECONDS = "cold_start_seconds", _("Cold start to healthy (seconds)")
    LOST_WORK_GPU_HOURS = "lost_work_gpu_hours", _("Lost work per failure (GPU-hours)")
    # Conversions and quality (apps/comparison/cost_model.py): the mean output tokens of one served request, the
    # units of work in one record, task or suite, and the share of outputs that pass the quality filter.
    OUTPUT_TOKENS_PER_REQUEST = "output_tokens_per_request", _("Mean output tokens per request")
    REQUESTS_PER_OUTPUT = "requests_per_output", _("Requests per unit of success (record, task, suite…)")
    QUALITY_ACCEPTANCE = "quality_acceptance", _("Quality acceptance (share of outputs accepted)")


#: Metrics written as a fraction of 1.
FRACTION_METRICS = frozenset(
    {FigureMetric.RETRY_RATE, FigureMetric.FAILURE_RATE, FigureMetric.MEMORY_MARGIN, FigureMetric.HEADROOM}
)
#: The retry rate counts retries per request served (apps/comparison/cost_model.py charges generated × (1 + retry rate
#: + failure rate)); it may pass 1 under induced failures, never this.
RETRY_RATE_LIMIT = 10
#: Conversion factors: a zero would divide the demand by nothing.
POSITIVE_METRICS = frozenset({FigureMetric.OUTPUT_TOKENS_PER_REQUEST, FigureMetric.REQUESTS_PER_OUTPUT})
#: Metrics that are whole numbers.
COUNT_METRICS = frozenset(
    {FigureMetric.TESTED_CONTEXT_TOKENS, FigureMetric.TESTED_CONCURRENCY, FigureMetric.GPUS_PER_REPLICA,
     FigureMetric.NODES_PER_REPLICA}
)


#: Metrics a training comparison reads, and metrics only a serving comparison reads.
TRAINING_METRICS = frozenset(
    {FigureMetric.TRAINING_THROUGHPUT, FigureMetric.CHECKPOINT_WRITE_HOURS, FigureMetric.RESTART_HOURS,
     FigureMetric.LOST_WORK_GPU_HOURS}
)
SERVING_METRICS = frozenset(
    {FigureMetric.CAPACITY_AT_SLO, FigureMetric.RETRY_RATE, FigureMetric.P50_LATENCY_MS, FigureMetric.P95_LATENCY_MS,
     FigureMetric.P99_LATENCY_MS, FigureMetric.HEADROOM, FigureMetric.COLD_START_SECONDS}
)
#: Metrics that describe GPUs we run (an API route has none of them).
FLEET_METRICS = frozenset(
    {FigureMetric.CAPACITY_AT_SLO, FigureMetric.MEMORY_MARGIN, FigureMetric.TESTED_CONTEXT_TOKENS,
     FigureMetric.TESTED_CONCURRENCY, FigureMetric.GPUS_PER_REPLICA, FigureMetric.NODES_PER_REPLICA,
     FigureMetric.INTERCONNECT_BUS_BANDWIDTH_GBPS, FigureMetric.HEADROOM, FigureMetric.COLD_START_SECONDS,
     *TRAINING_METRICS}
)


def metrics_for(*, training: bool, api_route: bool) -> list[tuple[str, str]]:
    """The (value, label) choices that matter for a candidate of this kind and workload."""
    left_out = (SERVING_METRICS if training else TRAINING_METRICS) | (FLEET_METRICS if api_route else frozenset())
    return [(value, label) for value, label in FigureMetric.choices if value not in left_out]


class CapacityUnit(models.TextChoices):
    # The units of apps/common/work_units.py CAPACITY_UNIT: a capacity counts one of them per second per GPU.
    REQUESTS_PER_SECOND = "requests_per_second", _("requests per second")
    RECORDS_PER_SECOND = "records_per_second", _("records per second")
    OUTPUT_TOKENS_PER_SECOND = "output_tokens_per_second", _("output tokens per second")
    IMAGES_PER_SECOND = "images_per_second", _("images per second")
    CLIP_SECONDS_PER_SECOND = "clip_seconds_per_second", _("clip-seconds per second")
    TASKS_PER_SECOND = "tasks_per_second", _("tasks per second")
    OUTPUTS_PER_SECOND = "outputs_per_second", _("units of success per second (the workload's own unit)")


class FigureSource(models.TextChoices):
    MEASURED = ProvenanceKind.MEASURED.value, _("Measured")
    QUOTED = ProvenanceKind.QUOTED.value, _("Quoted")
    ESTIMATED = ProvenanceKind.ESTIMATED.value, _("Estimated")


class CandidateFigure(EnteredByModel, HistoryLinkedModel):
    """One figure of one candidate (capacity, latency, failure rate…), with where it comes from.

    measured: written only by the benchmarks ingest, `reference` names the benchmark job (e.g. "job:42 (measured): …")
    and a `benchmarks.FigureMeasurement` links the figure to the canonical result that measured it (a lower app never
    points up, so the link lives there); a measured figure counts as evidence only through that link, never a
    rehearsal's (apps/benchmarks/measurements.counts_as_measured). A person enters only quoted (`reference` names
    the quote document or message) or estimated figures (`estimated_by` and `estimate_reason` say who and why).
    """

    candidate = models.ForeignKey(
        "quotes.Candidate", on_delete=models.CASCADE, related_name="figures", verbose_name=_("candidate")
    )
    metric = models.CharField(_("figure"), max_length=40, choices=FigureMetric.choices)
    value = ExactDecimalField(_("value"), max_digits=24, decimal_places=12)
    capacity_unit = models.CharField(
        _("capacity unit"),
        max_length=30,
        choices=CapacityUnit.choices,
        blank=True,
        help_text=_("Only for the capacity at the SLO."),
    )
    source = models.CharField(_("source"), max_length=20, choices=FigureSource.choices)
    reference = models.CharField(
        _("reference"),
        max_length=500,
        blank=True,
        help_text=_("Measured: the benchmark job. Quoted: the document or message that states it."),
    )
    estimated_by = models.CharField(_("estimated by"), max_length=200, blank=True)
    estimate_reason = models.TextField(_("why this estimate"), blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = scoped_queryset("candidate__team").as_manager()

    class Meta:
        ordering = ["candidate", "metric"]
        verbose_name = _("candidate figure")
        verbose_name_plural = _("candidate figures")
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "metric"],
                name="evidence_candidatefigure_one_per_metric",
                violation_error_message=_("This candidate already has this figure: edit it instead."),
            ),
            *provenance_constraints(
                "evidence_candidatefigure",
                referenced_message=_("A measured or quoted figure needs its reference."),
                estimate_message=_("An estimated figure needs who estimated it and why."),
            ),
            models.CheckConstraint(
                condition=Q(capacity_unit="") | Q(metric="capacity_at_slo"),
                name="evidence_candidatefigure_unit_for_capacity_only",
                violation_error_message=_("Only the capacity at the SLO has a capacity unit."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate_id} · {self.metric} = {self.value}"

    def get_absolute_url(self) -> str:
        return reverse("evidence:candidate-figures", args=[self.candidate_id])

    def clean(self):
        errors: dict[str, list] = {}
        if self.value is not None:
            if self.metric == FigureMetric.RETRY_RATE:
                # Retries per request served: under induced failures a request may need more than one retry.
                if self.value >= RETRY_RATE_LIMIT:
                    errors.setdefault("value", []).append(
                        _("Write retries per request served, below %(limit)s: 0.02 means 2 %%.")
                        % {"limit": RETRY_RATE_LIMIT})
            elif self.metric in FRACTION_METRICS and self.value >= 1:
                errors.setdefault("value", []).append(_("Write a fraction below 1: 0.02 means 2 %."))
            elif self.metric == FigureMetric.QUALITY_ACCEPTANCE and not 0 < self.value <= 1:
                errors.setdefault("value", []).append(_("Write a share above 0 and at most 1: 0.9 means 90 %."))
            elif self.metric in POSITIVE_METRICS and self.value <= 0:
                errors.setdefault("value", []).append(_("This figure is greater than zero."))
            if self.metric in COUNT_METRICS and self.value != self.value.to_integral_value():
                errors.setdefault("value", []).append(_("This figure is a whole number."))
            if self.metric == FigureMetric.CAPACITY_AT_SLO and self.value <= 0:
                errors.setdefault("value", []).append(_("A capacity is greater than zero."))
        if self.metric == FigureMetric.CAPACITY_AT_SLO and not self.capacity_unit:
            errors.setdefault("capacity_unit", []).append(_("Say what the capacity counts."))
        if errors:
            raise ValidationError(errors)


