"""Writes of the phase-4 inputs: one figure per candidate and metric, set (created or changed) or removed, each with
its provenance and an audit entry.

A person enters a figure through `candidate_figure_enter`: quoted or estimated, never measured. Measured figures come
from benchmark results: the benchmarks ingest (apps/benchmarks/measurements.measured_figure_set) calls
`candidate_figure_set` with source "measured" and links the figure to the result that measured it in the same
transaction; a measured figure without that link does not count as measured (apps/comparison/selectors).
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.audit.models import ObjectChange
from apps.audit.services import model_create, model_snapshot, model_update, record_change
from apps.common import money
from apps.evidence.models import CandidateFigure, FigureMetric, FigureSource

Action = ObjectChange.Action


def _person(actor) -> str:
    return actor.get_username() if getattr(actor, "is_authenticated", False) else str(actor or "")


def _provenance_fields(*, actor, source: str, reference: str, estimated_by: str, estimate_reason: str) -> dict:
    """Keep only the provenance fields the source uses; an estimate defaults to the person entering it."""
    if source == FigureSource.ESTIMATED:
        return {
            "reference": "",
            "estimated_by": (estimated_by or "").strip() or _person(actor),
            "estimate_reason": (estimate_reason or "").strip(),
        }
    return {"reference": (reference or "").strip(), "estimated_by": "", "estimate_reason": ""}


def _value(value: Decimal | int | str) -> Decimal:
    try:
        return money.to_decimal(value)
    except money.MoneyError:
        raise ValidationError({"value": _("Enter a decimal number.")}) from None


@transaction.atomic
def candidate_figure_set(
    *,
    actor,
    candidate,
    metric: str,
    value: Decimal | int | str,
    source: str,
    reference: str = "",
    estimated_by: str = "",
    estimate_reason: str = "",
    capacity_unit: str = "",
) -> CandidateFigure:
    """Create the candidate's figure for `metric`, or change it (one figure per metric; the audit log keeps the old)."""
    if metric not in FigureMetric.values:
        raise ValidationError({"metric": _("Unknown figure.")})
    existing = CandidateFigure.objects.select_for_update().filter(candidate=candidate, metric=metric).first()
    values = {
        "value": _value(value),
        "source": source,
        "capacity_unit": capacity_unit if metric == FigureMetric.CAPACITY_AT_SLO else "",
        **_provenance_fields(
            actor=actor, source=source, reference=reference, estimated_by=estimated_by, estimate_reason=estimate_reason
        ),
    }
    entered_by = actor if getattr(actor, "pk", None) else None
    if existing is None:
        item = CandidateFigure(candidate=candidate, metric=metric, entered_by=entered_by, **values)
        return model_create(instance=item, actor=actor, team=candidate.team)
    changes = {**values, "entered_by": entered_by, "entered_at": timezone.now()}
    existing, _changed = model_update(instance=existing, actor=actor, data=changes, fields=changes, team=candidate.team)
    return existing


def measured_refused_message() -> str:
    return _("Measured figures come from benchmark results: enter this one as quoted or estimated.")


def refuse_typed_measured(source: str) -> None:
    """A person cannot type a measured figure: it comes from a benchmark result, linked to it."""
    if source == FigureSource.MEASURED:
        raise ValidationError({"source": measured_refused_message()})


@transaction.atomic
def candidate_figure_enter(*, actor, candidate, metric: str, source: str, **values) -> CandidateFigure:
    """A person's figure (page, form, API): quoted or estimated; "measured" is refused on the source field."""
    refuse_typed_measured(source)
    return candidate_figure_set(actor=actor, candidate=candidate, metric=metric, source=source, **values)


@transaction.atomic
def candidate_figure_remove(*, actor, item: CandidateFigure) -> None:
    before = model_snapshot(item)
    team = item.candidate.team
    item_id = item.pk
    record_change(actor=actor, instance=item, action=Action.DELETE, before=before, team=team)
    CandidateFigure.objects.filter(pk=item_id).delete()
