"""Decision records: the comparison a team chose, frozen, reviewed stage by stage (platform, finance, product), and
flagged for a revisit when its inputs move.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.fields import user_foreign_key
from apps.accounts.scoping import scoped_queryset
from apps.common.models import TeamOwnedModel, team_foreign_key


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


class DecisionRecord(TeamOwnedModel):
    """A MADR-style decision record: which candidate of one workload version, which capacity model, and why.

The considered options are the candidates of the workload version (all of them, as the comparison shows them).

    While a draft it reads its inputs live. Proposing freezes every input and the phase-4 comparison into
    `snapshot_json` (canonical JSON, hashed into `snapshot_sha256`); from then on the record renders from that
    snapshot only. Status changes go through apps.decisions.services with conditional UPDATEs.
    """

    team = team_foreign_key("decision_records")
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
    cost_centre = models.ForeignKey(
        "budgets.CostCentre",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="decision_records",
        verbose_name=_("cost centre"),
        help_text=_("Chosen when the record is proposed; its budget is checked then."),
    )
    tags = models.JSONField(
        _("tags"), default=list, blank=True, help_text=_("Slugs finance groups spend by, e.g. inference, eu-west.")
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
    created_by = None  # the record's `author` says who wrote it
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
    reviewer = user_foreign_key(_("reviewer"), on_delete=models.PROTECT)
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    comment = models.TextField(_("comment"), blank=True, help_text=_("Required when rejecting: say why."))
    snapshot_sha256 = models.CharField(
        _("snapshot SHA-256 signed"), max_length=64, blank=True, help_text=_("The snapshot the reviewer saw.")
    )
    withdrawn_at = models.DateTimeField(_("withdrawn at"), null=True, blank=True)
    # Who signed and for which team, as they were named when they signed: renaming a person or a team later never
    # changes what a signed record shows.
    reviewer_username = models.CharField(_("reviewer's username at signing"), max_length=150, blank=True)
    reviewer_name = models.CharField(_("reviewer's name at signing"), max_length=300, blank=True)
    team_name = models.CharField(_("team name at signing"), max_length=200, blank=True)

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

    @property
    def signer_name(self) -> str:
        """The signer as named at signing ("" while nobody signed); rows signed before the names were kept fall back
        to the live account."""
        if self.reviewer_name or self.reviewer_username:
            return self.reviewer_name or self.reviewer_username
        return self.reviewer.get_username() if self.reviewer_id else ""

    @property
    def signer_username(self) -> str:
        if self.reviewer_username:
            return self.reviewer_username
        return self.reviewer.get_username() if self.reviewer_id else ""


class RevisitReason(models.TextChoices):
    QUOTE_EXPIRED = "quote_expired", _("A cited quote expired")
    PRICE_CHANGED = "price_changed", _("A cited price changed")
    WORKLOAD_CHANGED = "workload_changed", _("The workload has a newer version")
    REVISIT_DATE = "revisit_date", _("The revisit date passed")
    PRICE_STALE = "price_stale", _("A cited price is stale")
    ACTUAL_DRIFT = "actual_drift", _("The actual cost drifted from the decision")


#: Reasons another app raises and clears itself through services.record_flag_raise / record_flag_clear (the actuals
#: app, from the reported usage and cost); the beat task's refresh neither opens nor clears them.
EXTERNAL_REASONS = frozenset({RevisitReason.ACTUAL_DRIFT})


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
