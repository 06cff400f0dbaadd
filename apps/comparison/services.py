"""Writes of the comparison: a waiver of one rule for one candidate, recorded by the person who takes it (audited)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from apps.audit.services import model_create
from apps.comparison.models import MistakeWaiver


@transaction.atomic
def mistake_waiver_create(*, actor, candidate, rule: str, reason: str) -> MistakeWaiver:
    """`actor` waives `rule` for `candidate` because of `reason` (one waiver per candidate and rule)."""
    if not getattr(actor, "is_authenticated", False):
        raise ValidationError({"waived_by": _("A waiver is taken by a named person.")})
    if MistakeWaiver.objects.filter(candidate=candidate, rule=rule).exists():
        raise ValidationError({"rule": _("This rule is already waived for this candidate.")})
    waiver = MistakeWaiver(team=candidate.team, candidate=candidate, rule=rule, waived_by=actor,
                           reason=(reason or "").strip())
    return model_create(instance=waiver, actor=actor, team=candidate.team)
