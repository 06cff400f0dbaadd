"""The decisions' step of a workload's progress strip (apps/workloads/progress.py, registered in
DecisionsConfig.ready): a decision record for this workload version, accepted after its sign-offs."""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext as _

from apps.decisions.models import DecisionRecord, RecordStatus
from apps.workloads import progress


def record_step(user, summary, known: dict) -> progress.Step:
    label = _("Decision record")
    records = list(DecisionRecord.objects.filter(workload_summary=summary, team_id=summary.team_id)
                   .order_by("-number"))
    by_status = {status: [record for record in records if record.status == status] for status in RecordStatus}
    if by_status[RecordStatus.ACCEPTED]:
        record = by_status[RecordStatus.ACCEPTED][0]
        return progress.Step("record", label, progress.DONE,
                             _("%(record)s accepted.") % {"record": record.reference}, record.get_absolute_url())
    if by_status[RecordStatus.PROPOSED]:
        record = by_status[RecordStatus.PROPOSED][0]
        return progress.Step("record", label, progress.IN_PROGRESS,
                             _("%(record)s is proposed and waits for its sign-offs.") % {"record": record.reference},
                             record.get_absolute_url())
    if by_status[RecordStatus.DRAFT]:
        record = by_status[RecordStatus.DRAFT][0]
        return progress.Step("record", label, progress.IN_PROGRESS,
                             _("%(record)s is a draft.") % {"record": record.reference}, record.get_absolute_url())
    if not summary.is_ready:
        return progress.Step("record", label, progress.MISSING, _("Needs a ready summary and a comparison first."))
    if records:
        return progress.Step("record", label, progress.MISSING,
                             _("No standing record: %(record)s was %(status)s.") % {
                                 "record": records[0].reference, "status": records[0].get_status_display().lower()},
                             reverse("records:create"))
    return progress.Step("record", label, progress.MISSING, _("No decision record for this version yet."),
                         reverse("records:create"))


def register() -> None:
    progress.register_step(progress.RECORD, record_step)
