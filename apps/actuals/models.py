"""Actual usage and cost of an accepted decision, kept beside its frozen snapshot (which never changes).

Each upload (a sheet, or a list of days through the API) is a new version of the record's actuals: the latest is
current, the older ones stay as they were. Nothing here is edited after it is written.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.scoping import TeamScopedQuerySet, scoped_queryset
from apps.actuals import parsing
from apps.common.models import HistoryLinkedModel, team_foreign_key

_DIGITS = {"max_digits": parsing.MAX_DIGITS, "decimal_places": parsing.DECIMAL_PLACES}


class Channel(models.TextChoices):
    FILE = "file", _("Uploaded sheet (CSV or XLSX)")
    API = "api", _("API")


class ActualsUpload(HistoryLinkedModel):
    """One version of a record's actuals: who sent which days, from where, and when."""

    team = team_foreign_key("actuals_uploads")
    record = models.ForeignKey(
        "decisions.DecisionRecord",
        on_delete=models.PROTECT,
        related_name="actuals_uploads",
        verbose_name=_("decision record"),
    )
    version = models.PositiveIntegerField(_("version"))
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("uploaded by")
    )
    uploaded_at = models.DateTimeField(_("uploaded at"), default=timezone.now)
    channel = models.CharField(_("sent as"), max_length=8, choices=Channel.choices)
    file_name = models.CharField(_("file name"), max_length=255, blank=True)
    source = models.TextField(
        _("source"),
        help_text=_("Where the figures come from: the billing export, the observability query, the period."),
    )
    row_count = models.PositiveIntegerField(_("days"))
    currency = models.CharField(_("currency"), max_length=3)
    first_day = models.DateField(_("first day"))
    last_day = models.DateField(_("last day"))

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["record", "-version"]
        verbose_name = _("actuals upload")
        verbose_name_plural = _("actuals uploads")
        constraints = [
            models.UniqueConstraint(fields=["record", "version"], name="actuals_upload_unique_version"),
            models.CheckConstraint(condition=Q(version__gte=1), name="actuals_upload_version_positive"),
            models.CheckConstraint(condition=Q(row_count__gte=1), name="actuals_upload_has_days"),
            models.CheckConstraint(condition=~Q(source=""), name="actuals_upload_sourced",
                                   violation_error_message=_("Say where the figures come from.")),
            models.CheckConstraint(condition=Q(first_day__lte=F("last_day")), name="actuals_upload_days_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id and self.record.reference} · actuals v{self.version}"

    def get_absolute_url(self) -> str:
        return reverse("records:detail", args=[self.record_id]) + "#actuals"


class ActualDay(models.Model):
    """One day of one upload: GPU-hours, outputs (requests or outputs, the decision's unit), accepted outputs and
    spend, exact."""

    upload = models.ForeignKey(ActualsUpload, on_delete=models.CASCADE, related_name="days", verbose_name=_("upload"))
    date = models.DateField(_("date"))
    gpu_hours = models.DecimalField(_("GPU-hours"), **_DIGITS)
    outputs = models.DecimalField(_("requests or outputs"), **_DIGITS)
    accepted_outputs = models.DecimalField(_("accepted outputs"), **_DIGITS)
    spend = models.DecimalField(_("spend"), **_DIGITS)
    currency = models.CharField(_("currency"), max_length=3)

    objects = scoped_queryset("upload__team").as_manager()

    class Meta:
        ordering = ["upload", "date"]
        verbose_name = _("actual day")
        verbose_name_plural = _("actual days")
        constraints = [
            models.UniqueConstraint(fields=["upload", "date"], name="actuals_day_unique_date"),
            models.CheckConstraint(
                condition=Q(gpu_hours__gte=0) & Q(outputs__gte=0) & Q(accepted_outputs__gte=0) & Q(spend__gte=0),
                name="actuals_day_not_negative",
            ),
            models.CheckConstraint(condition=Q(accepted_outputs__lte=F("outputs")),
                                   name="actuals_day_accepted_within_outputs"),
        ]

    def __str__(self) -> str:
        return f"{self.upload} · {self.date.isoformat()}"
