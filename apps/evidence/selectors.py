"""Reads of candidate figures, scoped to what the user may see."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.evidence.models import CandidateFigure


def figures_for(user) -> QuerySet[CandidateFigure]:
    return CandidateFigure.objects.for_user(user).select_related("candidate__team", "entered_by")
