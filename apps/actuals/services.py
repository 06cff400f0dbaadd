"""Writes of actuals: a new version of a record's actual usage and cost, from a sheet or the API's list of days,
then the drift check that raises (or clears) the record's revisit flag.

Rules (docs/actuals.md, docs/permissions.md):
- only an accepted record receives actuals; its frozen snapshot is never touched;
- the finance, platform and admin members of the record's team upload; everyone of the team reads;
- all or nothing: one bad row and nothing is saved, the refusal names every bad row and column;
- every upload is a new version (the latest is current); nothing is edited afterwards; each is audited;
- drift beyond the team's revisit percentage opens the record's "actual drift" flag (its people are told); a later
  version within it clears the flag.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.accounts.roles import Role, has_role
from apps.actuals import drift, parsing
from apps.actuals.messages import located_text
from apps.actuals.models import ActualDay, ActualsUpload, Channel
from apps.audit.services import model_create
from apps.common import money
from apps.common.errors import Conflict, DetailedValidationError
from apps.decisions import services as decision_services
from apps.decisions.models import DecisionRecord, RecordStatus, RevisitReason

#: The subject of the one "actual drift" flag a record can hold open.
DRIFT_SUBJECT = "actuals"
#: Roles that send actuals (finance from the bill, platform from the observability stack, admins).
UPLOAD_ROLES = (Role.FINANCE, Role.PLATFORM, Role.ADMIN)


class ActualsConflict(Conflict):
    """The record cannot receive actuals in its state (answered 409)."""


class ActualsRejected(DetailedValidationError):
    """The upload is refused as a whole; `errors` are the parser's CellErrors (row, column, code)."""

    def __init__(self, errors: list[parsing.CellError], *, field: str):
        self.cell_errors = errors
        super().__init__(
            {field: [located_text(error) for error in errors]},
            details={"errors": [
                {"row": error.row, "column": error.column, "code": error.code, "message": located_text(error)}
                for error in errors
            ]},
        )


def may_upload(user) -> bool:
    return has_role(user, *UPLOAD_ROLES)


def _require_upload_role(actor) -> None:
    if not may_upload(actor):
        raise PermissionDenied(_("Only the finance, platform and admin roles send actuals."))


def record_currency(record: DecisionRecord) -> str:
    """The currency of the decision's figures (the snapshot's reporting currency)."""
    return str(((record.snapshot or {}).get("comparison") or {}).get("currency") or record.team.reporting_currency)


def _check_record(record: DecisionRecord) -> drift.Planned:
    if record.status != RecordStatus.ACCEPTED:
        raise ActualsConflict(
            _("Actuals are kept for an accepted record; this record is %(status)s.")
            % {"status": record.get_status_display()}
        )
    try:
        return drift.planned_from_snapshot(record.snapshot or {})
    except drift.NoPlan:
        raise ActualsConflict(_("The record's snapshot has no costed chosen option to compare actuals with.")) from None


def _today(record: DecisionRecord) -> datetime.date:
    return timezone.localdate()


@dataclass(frozen=True)
class UploadResult:
    upload: ActualsUpload
    report: drift.DriftReport
    flag_opened: bool
    flag_cleared: bool


def actuals_upload_file(*, actor, record: DecisionRecord, name: str, content: bytes, source: str) -> UploadResult:
    """A new version from a .csv or .xlsx sheet in the documented format; ActualsRejected names each bad row."""
    _require_upload_role(actor)
    _check_record(record)
    try:
        days = parsing.parse_sheet(name, content, currency=record_currency(record), today=_today(record))
    except parsing.ActualsInvalid as invalid:
        raise ActualsRejected(invalid.errors, field="file") from None
    return _save(actor=actor, record=record, days=days, source=source, channel=Channel.FILE, file_name=name)


def actuals_upload_items(*, actor, record: DecisionRecord, items, source: str) -> UploadResult:
    """A new version from the API's JSON list of days; ActualsRejected names each bad item (row N = item N)."""
    _require_upload_role(actor)
    _check_record(record)
    try:
        days = parsing.parse_items(items, currency=record_currency(record), today=_today(record))
    except parsing.ActualsInvalid as invalid:
        raise ActualsRejected(invalid.errors, field="days") from None
    return _save(actor=actor, record=record, days=days, source=source, channel=Channel.API, file_name="")


@transaction.atomic
def _save(*, actor, record, days: list[parsing.ParsedDay], source: str, channel: str, file_name: str) -> UploadResult:
    source = (source or "").strip()
    if not source:
        raise ValidationError({"source": _("Say where the figures come from (the billing export, the query).")})
    # The record's row is the lock that numbers the versions (and keeps its state while the upload is written).
    current = DecisionRecord.objects.select_for_update().select_related("team").get(pk=record.pk)
    planned = _check_record(current)
    last = ActualsUpload.objects.filter(record=current).order_by("-version").values_list("version", flat=True).first()
    totals = drift.actual_totals(days)
    upload = ActualsUpload(
        team=current.team,
        record=current,
        version=(last or 0) + 1,
        uploaded_by=actor,
        uploaded_at=timezone.now(),
        channel=channel,
        file_name=(file_name or "")[:255],
        source=source,
        row_count=len(days),
        currency=days[0].currency,
        first_day=totals.first_day,
        last_day=totals.last_day,
    )
    model_create(
        instance=upload,
        actor=actor,
        team=current.team,
        message=_("Actuals version %(version)s of %(record)s: %(days)s day(s), %(first)s to %(last)s, %(spend)s "
                  "%(currency)s spent for %(accepted)s accepted output(s).")
        % {"version": upload.version, "record": current.reference, "days": len(days),
           "first": totals.first_day.isoformat(), "last": totals.last_day.isoformat(),
           "spend": money.exact(totals.spend), "currency": upload.currency,
           "accepted": money.exact(totals.accepted_outputs)},
    )
    ActualDay.objects.bulk_create([
        ActualDay(upload=upload, date=day.date, gpu_hours=day.gpu_hours, outputs=day.outputs,
                  accepted_outputs=day.accepted_outputs, spend=day.spend, currency=day.currency)
        for day in days
    ])
    report = drift.compare(planned, days, threshold_percent=threshold_percent(current))
    opened = cleared = False
    if report.beyond_threshold:
        _flag, opened = decision_services.record_flag_raise(
            actor=actor, record=current, reason=RevisitReason.ACTUAL_DRIFT, subject=DRIFT_SUBJECT,
            details=flag_details(upload, report),
        )
    else:
        cleared = decision_services.record_flag_clear(
            actor=actor, record=current, reason=RevisitReason.ACTUAL_DRIFT, subject=DRIFT_SUBJECT
        )
    return UploadResult(upload, report, opened, cleared)


def threshold_percent(record: DecisionRecord) -> Decimal:
    """The team's revisit percentage (Team.revisit_price_change_percent, 10 by default): the same bound for a cited
    price that moved and for the actual cost per accepted output against the decision's."""
    return Decimal(record.team.revisit_price_change_percent)


def flag_details(upload: ActualsUpload, report: drift.DriftReport) -> dict:
    """What the revisit flag shows (exact decimal strings; decisions' flag_text writes the sentence)."""
    actual_cost = report.actual.cost_per_accepted_output
    return {
        "version": upload.version,
        "upload_id": upload.pk,
        "first_day": report.actual.first_day.isoformat(),
        "last_day": report.actual.last_day.isoformat(),
        "currency": report.planned.currency,
        "unit": report.planned.unit,
        "planned": money.shown(report.planned.cost_per_accepted_output, "unit_cost", report.planned.currency),
        "actual": money.shown(actual_cost, "unit_cost", report.planned.currency),
        "planned_exact": money.exact(report.planned.cost_per_accepted_output),
        "actual_exact": money.exact(actual_cost) if actual_cost is not None else None,
        "spend": money.shown(report.actual.spend, "money", report.planned.currency),
        "drift_percent": str(report.drift_percent.quantize(Decimal("0.01"))) if report.drift is not None else None,
        "threshold_percent": str(report.threshold_percent),
    }
