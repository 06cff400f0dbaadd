"""What the comparison stores: the waivers a named person records for a rule of the mistakes check (today only
mistake 3, interconnect). Everything else the comparison shows is computed from quotes, workloads and evidence."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from apps.common.models import TeamOwnedModel, team_foreign_key
from apps.comparison.mistakes import WAIVABLE_RULES


class WaivableRule(models.TextChoices):
    INTERCONNECT_IGNORED = WAIVABLE_RULES[0], _("Ignoring interconnect")


class MistakeWaiver(TeamOwnedModel):
    """A named person's decision that one candidate need not pass one rule (e.g. no all-reduce test for a multi-GPU
    candidate), with why; who, why and when stay in the record and in the audit log. It replaces no evidence: the
    comparison shows the rule as waived, not as passed by a typed claim."""

    team = team_foreign_key("mistake_waivers")
    candidate = models.ForeignKey(
        "quotes.Candidate", on_delete=models.CASCADE, related_name="mistake_waivers", verbose_name=_("candidate")
    )
    rule = models.CharField(_("rule"), max_length=40, choices=WaivableRule.choices)
    waived_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("waived by")
    )
    reason = models.TextField(_("why"))
    created_by = None  # the person is `waived_by`: a waiver is recorded by the person who takes it

    class Meta:
        ordering = ["candidate", "rule"]
        verbose_name = _("mistake waiver")
        verbose_name_plural = _("mistake waivers")
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "rule"], name="comparison_waiver_one_per_rule",
                violation_error_message=_("This rule is already waived for this candidate."),
            ),
            models.CheckConstraint(
                condition=~Q(reason=""), name="comparison_waiver_has_reason",
                violation_error_message=_("Say why the rule is waived."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate_id} · {self.rule}"

    def get_absolute_url(self) -> str:
        return reverse("comparison:comparison", args=[self.candidate.workload_summary_id])

    def clean(self):
        if not (self.reason or "").strip():
            raise ValidationError({"reason": _("Say why the rule is waived.")})
        if self.candidate_id is not None and self.team_id is not None and self.candidate.team_id != self.team_id:
            raise ValidationError({"candidate": _("This candidate belongs to another team.")})
