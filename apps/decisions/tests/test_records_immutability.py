"""An accepted record never changes: every write URL of the records pages and API is tried, by every person of the
sign-off, and the record, its stages and its snapshot stay byte for byte what was approved. Finance approves but
edits no evidence."""

import hashlib
import json

import pytest
from django.urls import reverse

from apps.audit.services import model_snapshot
from apps.decisions.models import ApprovalStage, DecisionRecord, StageKind
from apps.decisions.tests import records_builders as build
from tests.factories import UserFactory
from tests.url_registry import url_entries

pytestmark = pytest.mark.django_db

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
#: Writes that may succeed on an accepted record because they change another object (a new superseding draft).
CREATES_ANOTHER_RECORD = {"records:supersede", "records-api:record-supersede"}
PAGE_CHANGE = {
    "title": "Rewritten after the fact", "rationale": "changed", "chosen_option": "", "capacity_model": "rent",
    "decision": "approve", "comment": "looks fine",
}


def _record_entries():
    return [
        entry for entry in url_entries()
        if entry.name.split(":")[0] in ("records", "records-api") and "pk" in entry.parameters
    ]


def _paths(entry, record) -> list[str]:
    if "stage" in entry.parameters:
        return [reverse(entry.name, kwargs={"pk": record.pk, "stage": stage}) for stage in StageKind.values]
    if "kind" in entry.parameters:
        return [reverse(entry.name, kwargs={"pk": record.pk, "kind": kind}) for kind in ("xlsx", "csv")]
    return [reverse(entry.name, kwargs={"pk": record.pk})]


def _send(client, method: str, path: str, *, api: bool):
    if api:
        return getattr(client, method.lower())(path, data=json.dumps(PAGE_CHANGE), content_type="application/json")
    if method == "POST":
        return client.post(path, data=PAGE_CHANGE)
    return getattr(client, method.lower())(path)


def _state(record) -> dict:
    record = DecisionRecord.objects.get(pk=record.pk)
    return {
        "record": model_snapshot(record),
        "people": {name: sorted(getattr(record, name).values_list("pk", flat=True))
                   for name in ("deciders", "consulted", "informed")},
        "stages": [model_snapshot(stage) for stage in ApprovalStage.objects.filter(record=record).order_by("pk")],
    }


def test_an_accepted_record_cannot_be_changed_through_any_page_or_endpoint(team, client):
    setup = build.accepted(team)
    record = setup.record
    approved = _state(record)
    everyone = UserFactory(username="holds-every-role", roles=["platform", "finance", "product", "admin"],
                           teams=[team])
    people = [setup.people.author, setup.people.reviewer, setup.people.finance, setup.people.product, everyone]

    entries = _record_entries()
    names = {entry.name for entry in entries}
    assert {"records:edit", "records:propose", "records:withdraw", "records:review-platform",
            "records:review-finance", "records:review-product", "records-api:record-detail",
            "records-api:record-stage", "records-api:record-propose", "records-api:record-withdraw"} <= names
    accepted_writes = []
    for entry in entries:
        for path in _paths(entry, record):
            for method in WRITE_METHODS:
                for person in people:
                    client.force_login(person)
                    response = _send(client, method, path, api=entry.is_rest_framework)
                    if entry.name in CREATES_ANOTHER_RECORD:
                        continue
                    if response.status_code < 400:
                        accepted_writes.append(f"{method} {path} as {person}: {response.status_code}")
    assert not accepted_writes, "writes that were not refused:\n" + "\n".join(accepted_writes)

    assert _state(record) == approved
    stored = DecisionRecord.objects.get(pk=record.pk)
    assert stored.snapshot_matches_hash()
    assert hashlib.sha256(stored.snapshot_json.encode("utf-8")).hexdigest() == stored.snapshot_sha256


def test_changing_an_accepted_record_is_refused_with_the_reason(team, client):
    setup = build.accepted(team)
    client.force_login(setup.people.author)
    edit = client.post(reverse("records:edit", args=[setup.record.pk]), data=PAGE_CHANGE)
    assert edit.status_code == 409 and "Only a draft can be edited" in edit.content.decode()
    api = client.patch(reverse("records-api:record-detail", args=[setup.record.pk]),
                       data={"title": "Rewritten"}, content_type="application/json")
    assert api.status_code == 409
    client.force_login(setup.people.finance)
    sign = client.post(reverse("records:review-finance", args=[setup.record.pk]), data={"decision": "reject",
                                                                                        "comment": "late"})
    assert sign.status_code == 409


def test_finance_approves_its_stage_but_edits_no_evidence(team, client):
    setup = build.proposed(team)
    finance = setup.people.finance
    client.force_login(finance)
    record = setup.record
    quote = setup.example.b.quote
    phase4_input = setup.example.b.figures.get(metric="capacity_at_slo")
    evidence_writes = [
        ("page", reverse("records:edit", args=[record.pk]), {"title": "Finance's title"}),
        ("page", reverse("records:propose", args=[record.pk]), {}),
        ("page", reverse("records:withdraw", args=[record.pk]), {}),
        ("page", reverse("records:create"), {"workload_summary": setup.example.summary.pk, "title": "x"}),
        ("page", reverse("quotes:price-create", args=[quote.pk]), {"component": "list_price", "amount": "1.00"}),
        ("page", reverse("quotes:quote-edit", args=[quote.pk]), {"title": "cheaper"}),
        ("page", reverse("evidence:figure-edit", args=[phase4_input.pk]), {"value": "20"}),
        ("api", reverse("records-api:record-detail", args=[record.pk]), {"title": "Finance's title"}),
        ("api", reverse("records-api:record-propose", args=[record.pk]), {}),
        ("api", reverse("records-api:record-list"), {"workload_summary": setup.example.summary.pk, "title": "x"}),
        ("api", reverse("quotes-api:price-version-list"), {"quote": quote.pk, "component": "list_price",
                                                           "amount": "1.00"}),
    ]
    for kind, path, data in evidence_writes:
        if kind == "api":
            method = client.patch if path.endswith(f"/{record.pk}/") else client.post
            response = method(path, data=json.dumps(data), content_type="application/json")
        else:
            response = client.post(path, data=data)
        assert response.status_code == 403, f"finance {path}: {response.status_code}"
    assert DecisionRecord.objects.get(pk=record.pk).title == "GPU for support chat"

    # Finance's own stage, after the platform review.
    build.sign(setup, StageKind.PLATFORM)
    response = client.post(reverse("records:review-finance", args=[record.pk]),
                           data={"decision": "approve", "comment": "Cost math checked."})
    assert response.status_code == 302
    assert ApprovalStage.objects.get(record=record, kind=StageKind.FINANCE).reviewer == finance
