"""How the URL-access, permission-matrix and translation tests build the decision records that the records URLs
point at (see tests/url_registry.py). The registry reads this module.

Each builder makes a light record: one GPU candidate on a ready workload version, the four people of a sign-off, and
the record in the state the URL needs (a draft to edit, a frozen record for its snapshot, an accepted one to
supersede).
"""

from apps.comparison.tests.builders import gpu_candidate, workload
from apps.decisions import services
from apps.decisions.models import StageKind
from apps.decisions.tests.records_builders import people
from tests.url_registry import team_object


def make_record(team, state: str = "draft"):
    who = people(team)
    summary = workload(team)
    candidate = gpu_candidate(team, who.author, summary, label="H200 reserved", price="3.50", capacity="9")
    record = services.record_create(
        actor=who.author,
        team=team,
        workload_summary=summary,
        title="GPU for support chat",
        chosen_option=candidate,
        capacity_model="rent",
        rationale="Measured capacity at the SLO, cheapest per accepted response.",
        deciders=[who.author],
    )
    if state == "draft":
        return record
    record = services.record_propose(actor=who.author, record=record)
    if state == "proposed":
        return record
    for kind, reviewer in ((StageKind.PLATFORM, who.reviewer), (StageKind.FINANCE, who.finance),
                           (StageKind.PRODUCT, who.product)):
        record = services.stage_decide(actor=reviewer, record=record, kind=kind, approve=True).record
    return record


def draft(team):
    return make_record(team, "draft")


def proposed(team):
    return make_record(team, "proposed")


def accepted(team):
    return make_record(team, "accepted")


def _stage(kind: str):
    return lambda team: {"pk": proposed(team).pk, "stage": kind}


URL_FIXTURES = {
    "records:detail": team_object(accepted),
    "records:edit": team_object(draft),
    "records:propose": team_object(draft),
    "records:withdraw": team_object(proposed),
    "records:supersede": team_object(accepted),
    "records:review-platform": team_object(proposed),
    "records:review-finance": team_object(proposed),
    "records:review-product": team_object(proposed),
    "records:print": team_object(accepted),
    "records:export-xlsx": team_object(accepted),
    "records:export-csv": team_object(accepted),
    "records:snapshot": team_object(accepted),
    "records-api:record-detail": team_object(draft),
    "records-api:record-propose": team_object(draft),
    "records-api:record-withdraw": team_object(proposed),
    "records-api:record-supersede": team_object(accepted),
    "records-api:record-stage": team_object(_stage(StageKind.FINANCE)),
    "records-api:record-snapshot": team_object(accepted),
    "records-api:record-export": team_object(lambda team: {"pk": accepted(team).pk, "kind": "xlsx"}),
}
