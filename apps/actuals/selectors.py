"""Reads of actuals, scoped to the user: a record's versions, the current one, and planned against actual."""

from __future__ import annotations

from dataclasses import dataclass

from apps.actuals import drift
from apps.actuals.models import ActualDay, ActualsUpload
from apps.actuals.services import threshold_percent
from apps.decisions.models import DecisionRecord, RecordStatus


def uploads_of(user, record: DecisionRecord):
    """Every version of the record's actuals the user may read, newest first."""
    return (ActualsUpload.objects.for_user(user).filter(record=record).select_related("uploaded_by")
            .order_by("-version"))


def upload_get(user, pk: int) -> ActualsUpload:
    """One upload of the user's teams (DoesNotExist otherwise, answered 404)."""
    return ActualsUpload.objects.for_user(user).select_related("record__team", "uploaded_by").get(pk=pk)


def days_of(upload: ActualsUpload) -> list[ActualDay]:
    return list(ActualDay.objects.filter(upload=upload).order_by("date"))


@dataclass(frozen=True)
class PlannedAgainstActual:
    record: DecisionRecord
    uploads: list  # every version, newest first
    current: ActualsUpload | None
    planned: drift.Planned | None  # None: the snapshot has no costed choice (or the record is not frozen)
    report: drift.DriftReport | None  # None until a version exists


def planned_against_actual(user, record: DecisionRecord) -> PlannedAgainstActual:
    """The decision's figures and the current version's, compared by the rules of apps/actuals/drift.py."""
    uploads = list(uploads_of(user, record))
    current = uploads[0] if uploads else None
    planned = None
    if record.is_frozen:
        try:
            planned = drift.planned_from_snapshot(record.snapshot)
        except drift.NoPlan:
            planned = None
    report = None
    if planned is not None and current is not None:
        report = drift.compare(planned, days_of(current), threshold_percent=threshold_percent(record))
    return PlannedAgainstActual(record, uploads, current, planned, report)


def receives_actuals(record: DecisionRecord) -> bool:
    return record.status == RecordStatus.ACCEPTED
