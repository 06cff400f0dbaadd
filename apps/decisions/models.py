"""Decisions: the phase-4 inputs a candidate needs beyond its quote (entered by hand with their source until the
benchmarks supply them), and below the marker the decision records (issue 10).

Figures are exact Decimals stored as text (apps.common.fields.ExactDecimalField): compare them in Python.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.scoping import scoped_queryset
from apps.common.fields import ExactDecimalField

# --- Phase-4 inputs (issue 9) ---


class InputMetric(models.TextChoices):
    """What a phase-4 input measures. Fractions are written 0.02 for 2 %."""

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


#: Metrics written as a fraction of 1.
FRACTION_METRICS = frozenset(
    {InputMetric.RETRY_RATE, InputMetric.FAILURE_RATE, InputMetric.MEMORY_MARGIN, InputMetric.HEADROOM}
)
#: The retry rate counts retries per request served (apps/decisions/normalize.py charges generated × (1 + retry rate
#: + failure rate)); it may pass 1 under induced failures, never this.
RETRY_RATE_LIMIT = 10
#: Metrics that are whole numbers.
COUNT_METRICS = frozenset(
    {InputMetric.TESTED_CONTEXT_TOKENS, InputMetric.TESTED_CONCURRENCY, InputMetric.GPUS_PER_REPLICA,
     InputMetric.NODES_PER_REPLICA}
)


#: Metrics a training comparison reads, and metrics only a serving comparison reads.
TRAINING_METRICS = frozenset(
    {InputMetric.TRAINING_THROUGHPUT, InputMetric.CHECKPOINT_WRITE_HOURS, InputMetric.RESTART_HOURS,
     InputMetric.LOST_WORK_GPU_HOURS}
)
SERVING_METRICS = frozenset(
    {InputMetric.CAPACITY_AT_SLO, InputMetric.RETRY_RATE, InputMetric.P50_LATENCY_MS, InputMetric.P95_LATENCY_MS,
     InputMetric.P99_LATENCY_MS, InputMetric.HEADROOM, InputMetric.COLD_START_SECONDS}
)
#: Metrics that describe GPUs we run (an API route has none of them).
FLEET_METRICS = frozenset(
    {InputMetric.CAPACITY_AT_SLO, InputMetric.MEMORY_MARGIN, InputMetric.TESTED_CONTEXT_TOKENS,
     InputMetric.TESTED_CONCURRENCY, InputMetric.GPUS_PER_REPLICA, InputMetric.NODES_PER_REPLICA,
     InputMetric.INTERCONNECT_BUS_BANDWIDTH_GBPS, InputMetric.HEADROOM, InputMetric.COLD_START_SECONDS,
     *TRAINING_METRICS}
)


def metrics_for(*, training: bool, api_route: bool) -> list[tuple[str, str]]:
    """The (value, label) choices that matter for a candidate of this kind and workload."""
    left_out = (SERVING_METRICS if training else TRAINING_METRICS) | (FLEET_METRICS if api_route else frozenset())
    return [(value, label) for value, label in InputMetric.choices if value not in left_out]


class CapacityUnit(models.TextChoices):
    REQUESTS_PER_SECOND = "requests_per_second", _("requests per second")
    OUTPUTS_PER_SECOND = "outputs_per_second", _("outputs per second")


class InputSource(models.TextChoices):
    MEASURED = "measured", _("Measured")
    QUOTED = "quoted", _("Quoted")
    ESTIMATED = "estimated", _("Estimated")


class Phase4Input(models.Model):
    """One phase-4 figure of one candidate, with where it comes from.

    measured: `reference` names the benchmark job (e.g. "job:42"); quoted: `reference` names the quote document or
    message; estimated: `estimated_by` and `estimate_reason` say who estimated it and why.
    """

    candidate = models.ForeignKey(
        "quotes.Candidate", on_delete=models.CASCADE, related_name="phase4_inputs", verbose_name=_("candidate")
    )
    metric = models.CharField(_("figure"), max_length=40, choices=InputMetric.choices)
    value = ExactDecimalField(_("value"), max_digits=24, decimal_places=12)
    capacity_unit = models.CharField(
        _("capacity unit"),
        max_length=30,
        choices=CapacityUnit.choices,
        blank=True,
        help_text=_("Only for the capacity at the SLO."),
    )
    source = models.CharField(_("source"), max_length=20, choices=InputSource.choices)
    reference = models.CharField(
        _("reference"),
        max_length=500,
        blank=True,
        help_text=_("Measured: the benchmark job. Quoted: the document or message that states it."),
    )
    estimated_by = models.CharField(_("estimated by"), max_length=200, blank=True)
    estimate_reason = models.TextField(_("why this estimate"), blank=True)
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("entered by"),
    )
    entered_at = models.DateTimeField(_("entered at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = scoped_queryset("candidate__team").as_manager()

    class Meta:
        ordering = ["candidate", "metric"]
        verbose_name = _("phase-4 input")
        verbose_name_plural = _("phase-4 inputs")
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "metric"],
                name="decisions_phase4input_one_per_metric",
                violation_error_message=_("This candidate already has this figure: edit it instead."),
            ),
            models.CheckConstraint(
                condition=~Q(source__in=["measured", "quoted"]) | ~Q(reference=""),
                name="decisions_phase4input_referenced",
                violation_error_message=_("A measured or quoted figure needs its reference."),
            ),
            models.CheckConstraint(
                condition=~Q(source="estimated") | (~Q(estimated_by="") & ~Q(estimate_reason="")),
                name="decisions_phase4input_estimate_explained",
                violation_error_message=_("An estimated figure needs who estimated it and why."),
            ),
            models.CheckConstraint(
                condition=Q(capacity_unit="") | Q(metric="capacity_at_slo"),
                name="decisions_phase4input_unit_for_capacity_only",
                violation_error_message=_("Only the capacity at the SLO has a capacity unit."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate_id} · {self.metric} = {self.value}"

    def get_absolute_url(self) -> str:
        return reverse("decisions:candidate-inputs", args=[self.candidate_id])

    def get_history_url(self) -> str:
        return reverse("audit:object-history", args=[self._meta.app_label, self._meta.model_name, self.pk])

    def clean(self):
        from django.core.exceptions import ValidationError

        errors: dict[str, list] = {}
        if self.value is not None:
            if self.metric == InputMetric.RETRY_RATE:
                # Retries per request served: under induced failures a request may need more than one retry.
                if self.value >= RETRY_RATE_LIMIT:
                    errors.setdefault("value", []).append(
                        _("Write retries per request served, below %(limit)s: 0.02 means 2 %%.")
                        % {"limit": RETRY_RATE_LIMIT})
            elif self.metric in FRACTION_METRICS and self.value >= 1:
                errors.setdefault("value", []).append(_("Write a fraction below 1: 0.02 means 2 %."))
            if self.metric in COUNT_METRICS and self.value != self.value.to_integral_value():
                errors.setdefault("value", []).append(_("This figure is a whole number."))
            if self.metric == InputMetric.CAPACITY_AT_SLO and self.value <= 0:
                errors.setdefault("value", []).append(_("A capacity is greater than zero."))
        if self.metric == InputMetric.CAPACITY_AT_SLO and not self.capacity_unit:
            errors.setdefault("capacity_unit", []).append(_("Say what the capacity counts."))
        if errors:
            raise ValidationError(errors)


# --- Decision records (issue 10) ---


class RecordStatus(models.TextChoices):
    DRAFT = "draft", _("Draft")
    PROPOSED = "proposed", _("Proposed")
    ACCEPTED = "accepted", _("Accepted")
    REJECTED = "rejected", _("Rejected")
    SUPERSEDED = "superseded", _("Superseded")


#: States in which nothing of the record may change any more (superseded only gains its forward link).
FINAL_STATUSES = frozenset({RecordStatus.ACCEPTED, RecordStatus.REJECTED, RecordStatus.SUPERSEDED})


class CapacityModel(models.TextChoices):
    """The second decision beside the GPU: how the capacity is obtained (the guide's rent, reserve, buy or API)."""

    RENT = "rent", _("Rent (on-demand or spot)")
    RESERVE = "reserve", _("Reserve (committed capacity)")
    BUY = "buy", _("Buy (own the hardware)")
    API = "api", _("Use a model API")
    HYBRID = "hybrid", _("Hybrid")


class StageKind(models.TextChoices):
    PLATFORM = "platform", _("Platform review")
    FINANCE = "finance", _("Finance")
    PRODUCT = "product", _("Product")


#: The sign-off stages in the order they are given, each signed by a member holding the role of the same name.
STAGE_ORDER = (StageKind.PLATFORM, StageKind.FINANCE, StageKind.PRODUCT)


class DecisionRecordQuerySet(scoped_queryset("team")):
    def accepted(self):
        return self.filter(status=RecordStatus.ACCEPTED)


class DecisionRecord(models.Model):
    """A MADR-style decision record: which candidate of one workload version, which capacity model, and why.

The considered options are the candidates of the workload version (all of them, as the comparison shows them).

    While a draft it reads its inputs live. Proposing freezes every input and the phase-4 comparison into
    `snapshot_json` (canonical JSON, hashed into `snapshot_sha256`); from then on the record renders from that
    snapshot only. Status changes go through apps.decisions.services_records with conditional UPDATEs.
    """

    team = models.ForeignKey(
        "accounts.Team", on_delete=models.PROTECT, related_name="decision_records", verbose_name=_("team")
    )
    number = models.PositiveIntegerField(_("number"), help_text=_("Counted per team: DR-1, DR-2, …"))
    workload_summary = models.ForeignKey(
        "workloads.WorkloadSummary",
        on_delete=models.PROTECT,
        related_name="decision_records",
        verbose_name=_("workload version"),
    )
    title = models.CharField(_("title"), max_length=200)
    context = models.TextField(_("context and problem"), blank=True)
    drivers = models.TextField(_("decision drivers"), blank=True, help_text=_("One driver per line."))
    chosen_option = models.ForeignKey(
        "quotes.Candidate",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="chosen_in_records",
        verbose_name=_("chosen option"),
    )
    capacity_model = models.CharField(_("capacity model"), max_length=20, choices=CapacityModel.choices, blank=True)
    rationale = models.TextField(_("rationale"), blank=True)
    consequences = models.TextField(_("consequences"), blank=True)
    confirmation_metric = models.TextField(
        _("confirmation"), blank=True, help_text=_("The figure that will show the decision was right, and when.")
    )
    revisit_on = models.DateField(_("revisit on"), null=True, blank=True)
    revisit_triggers = models.TextField(
        _("revisit triggers"),
        blank=True,
        help_text=_("Besides expired quotes, changed prices, a new workload version and the date, checked daily."),
    )
    deciders = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="+", blank=True, verbose_name=_("deciders")
    )
    consulted = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="+", blank=True, verbose_name=_("consulted")
    )
    informed = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="+", blank=True, verbose_name=_("informed")
    )

    status = models.CharField(_("status"), max_length=12, choices=RecordStatus.choices, default=RecordStatus.DRAFT)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("author")
    )
    supersedes = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="superseding_records",
        verbose_name=_("supersedes"),
    )
    superseded_by = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("superseded by")
    )
    proposal_round = models.PositiveIntegerField(_("proposal round"), default=0)
    snapshot_json = models.TextField(_("snapshot (canonical JSON)"), blank=True)
    snapshot_sha256 = models.CharField(_("snapshot SHA-256"), max_length=64, blank=True)
    inputs_sha256 = models.CharField(_("inputs SHA-256"), max_length=64, blank=True)
    proposed_at = models.DateTimeField(_("proposed at"), null=True, blank=True)
    inputs_changed_at = models.DateTimeField(
        _("inputs changed at"),
        null=True,
        blank=True,
        help_text=_("When a change to the inputs after the proposal was found; the approvals given were withdrawn."),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = DecisionRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-number"]
        verbose_name = _("decision record")
        verbose_name_plural = _("decision records")
        constraints = [
            models.UniqueConstraint(fields=["team", "number"], name="decisions_record_unique_number"),
            models.CheckConstraint(condition=~Q(title=""), name="decisions_record_titled"),
            models.CheckConstraint(
                condition=Q(status=RecordStatus.DRAFT) | (~Q(snapshot_json="") & ~Q(snapshot_sha256="")),
                name="decisions_record_frozen_unless_draft",
                violation_error_message=_("Only a draft may be without its snapshot."),
            ),
            models.CheckConstraint(
                condition=~Q(status__in=[RecordStatus.ACCEPTED, RecordStatus.REJECTED, RecordStatus.SUPERSEDED])
                | Q(decided_at__isnull=False),
                name="decisions_record_decided_when_final",
            ),
            models.CheckConstraint(
                condition=~Q(status=RecordStatus.SUPERSEDED) | Q(superseded_by__isnull=False),
                name="decisions_record_superseded_by_someone",
            ),
            models.CheckConstraint(
                condition=Q(supersedes__isnull=True) | ~Q(supersedes=models.F("id")),
                name="decisions_record_not_superseding_itself",
            ),
        ]

    def __str__(self) -> str:
        return f"DR-{self.number} {self.title}"

    def get_absolute_url(self) -> str:
        return reverse("records:detail", args=[self.pk])

    def get_history_url(self) -> str:
        return reverse("audit:object-history", args=[self._meta.app_label, self._meta.model_name, self.pk])

    @property
    def reference(self) -> str:
        return f"DR-{self.number}"

    @property
    def is_draft(self) -> bool:
        return self.status == RecordStatus.DRAFT

    @property
    def is_frozen(self) -> bool:
        """Proposed or later: the record shows its snapshot, never the live inputs."""
        return self.status != RecordStatus.DRAFT and bool(self.snapshot_json)

    @property
    def snapshot(self) -> dict | None:
        """The frozen snapshot as data (None for a draft), parsed once per instance."""
        import json

        if not self.snapshot_json:
            return None
        cached = self.__dict__.get("_snapshot_cache")
        if cached is None or cached[0] != self.snapshot_json:
            cached = (self.snapshot_json, json.loads(self.snapshot_json))
            self.__dict__["_snapshot_cache"] = cached
        return cached[1]

    def snapshot_matches_hash(self) -> bool:
        """The stored snapshot text still hashes to the stored content hash."""
        import hashlib

        return bool(self.snapshot_json) and (
            hashlib.sha256(self.snapshot_json.encode("utf-8")).hexdigest() == self.snapshot_sha256
        )


class StageStatus(models.TextChoices):
    PENDING = "pending", _("Waiting")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    WITHDRAWN = "withdrawn", _("Withdrawn (inputs or content changed)")


class ApprovalStage(models.Model):
    """One sign-off stage of one proposal round, with its reviewer's response once given.

    Every proposal opens the three stages afresh (a new round); the stages of an earlier round stay as the trail.
    """

    record = models.ForeignKey(
        DecisionRecord, on_delete=models.CASCADE, related_name="stages", verbose_name=_("decision record")
    )
    round = models.PositiveIntegerField(_("proposal round"))
    kind = models.CharField(_("stage"), max_length=12, choices=StageKind.choices)
    position = models.PositiveSmallIntegerField(_("position"))
    status = models.CharField(_("status"), max_length=12, choices=StageStatus.choices, default=StageStatus.PENDING)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("reviewer"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    comment = models.TextField(_("comment"), blank=True, help_text=_("Required when rejecting: say why."))
    snapshot_sha256 = models.CharField(
        _("snapshot SHA-256 signed"), max_length=64, blank=True, help_text=_("The snapshot the reviewer saw.")
    )
    withdrawn_at = models.DateTimeField(_("withdrawn at"), null=True, blank=True)

    objects = scoped_queryset("record__team").as_manager()

    class Meta:
        ordering = ["record", "round", "position"]
        verbose_name = _("approval stage")
        verbose_name_plural = _("approval stages")
        constraints = [
            models.UniqueConstraint(fields=["record", "round", "kind"], name="decisions_stage_unique_per_round"),
            models.CheckConstraint(
                condition=~Q(status=StageStatus.REJECTED) | ~Q(comment=""),
                name="decisions_stage_rejection_has_reason",
                violation_error_message=_("A rejection needs its reason."),
            ),
            models.CheckConstraint(
                condition=~Q(status__in=[StageStatus.APPROVED, StageStatus.REJECTED])
                | (Q(reviewer__isnull=False) & Q(decided_at__isnull=False)),
                name="decisions_stage_response_has_reviewer",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.record} · {self.get_kind_display()} ({self.get_status_display()})"

    def get_absolute_url(self) -> str:
        return reverse("records:detail", args=[self.record_id]) + f"#stage-{self.pk}"


class RevisitReason(models.TextChoices):
    QUOTE_EXPIRED = "quote_expired", _("A cited quote expired")
    PRICE_CHANGED = "price_changed", _("A cited price changed")
    WORKLOAD_CHANGED = "workload_changed", _("The workload has a newer version")
    REVISIT_DATE = "revisit_date", _("The revisit date passed")


class RevisitFlag(models.Model):
    """Why an accepted record should be looked at again, found by the beat task `decisions.flag_records_for_revisit`.

    `subject` names what the flag is about ("price:17", "workload:4", "date") so one reason can hold several flags;
    `details` carries the figures the message shows.
    """

    record = models.ForeignKey(
        DecisionRecord, on_delete=models.CASCADE, related_name="revisit_flags", verbose_name=_("decision record")
    )
    reason = models.CharField(_("reason"), max_length=20, choices=RevisitReason.choices)
    subject = models.CharField(_("about"), max_length=100)
    details = models.JSONField(_("details"), default=dict, blank=True)
    flagged_at = models.DateTimeField(_("flagged at"))
    cleared_at = models.DateTimeField(_("cleared at"), null=True, blank=True)

    objects = scoped_queryset("record__team").as_manager()

    class Meta:
        ordering = ["-flagged_at", "-pk"]
        verbose_name = _("revisit flag")
        verbose_name_plural = _("revisit flags")
        constraints = [
            models.UniqueConstraint(
                fields=["record", "reason", "subject"],
                condition=Q(cleared_at__isnull=True),
                name="decisions_revisit_one_open_per_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.record} · {self.get_reason_display()}"

    def get_absolute_url(self) -> str:
        return reverse("records:detail", args=[self.record_id]) + "#revisit"


class NotificationKind(models.TextChoices):
    APPROVAL_REQUEST = "approval_request", _("Approval requests")
    DECISION = "decision", _("Decisions")
    REVISIT = "revisit", _("Revisit flags")


class Notification(models.Model):
    """One message to one person about one decision record. `event` and `params` make the text in the reader's
    language; it is shown in the app and, when the person wants it, sent by email."""

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="decision_notifications",
        verbose_name=_("recipient"),
    )
    record = models.ForeignKey(
        DecisionRecord, on_delete=models.CASCADE, related_name="notifications", verbose_name=_("decision record")
    )
    kind = models.CharField(_("kind"), max_length=20, choices=NotificationKind.choices)
    event = models.CharField(_("event"), max_length=40)
    params = models.JSONField(_("parameters"), default=dict, blank=True)
    in_app = models.BooleanField(_("shown in the app"), default=True)
    email_wanted = models.BooleanField(_("email wanted"), default=False)
    emailed_at = models.DateTimeField(_("emailed at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    read_at = models.DateTimeField(_("read at"), null=True, blank=True)

    objects = scoped_queryset("record__team").as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        indexes = [models.Index(fields=["recipient", "read_at"], name="decisions_notification_unread")]

    def __str__(self) -> str:
        return f"{self.recipient} · {self.record} · {self.event}"

    def get_absolute_url(self) -> str:
        return reverse("records:detail", args=[self.record_id])


class NotificationPreference(models.Model):
    """Which notifications one person receives, in the app and by email (a missing row means the defaults)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="decision_notification_preference",
        verbose_name=_("user"),
    )
    approval_request_in_app = models.BooleanField(_("approval requests in the app"), default=True)
    approval_request_email = models.BooleanField(_("approval requests by email"), default=True)
    decision_in_app = models.BooleanField(_("decisions in the app"), default=True)
    decision_email = models.BooleanField(_("decisions by email"), default=True)
    revisit_in_app = models.BooleanField(_("revisit flags in the app"), default=True)
    revisit_email = models.BooleanField(_("revisit flags by email"), default=True)

    class Meta:
        verbose_name = _("notification preference")
        verbose_name_plural = _("notification preferences")

    def __str__(self) -> str:
        return str(self.user)

    def get_absolute_url(self) -> str:
        return reverse("records:notification-preferences")

    def wants(self, kind: str, channel: str) -> bool:
        """channel: "in_app" or "email"."""
        return bool(getattr(self, f"{kind}_{channel}"))
