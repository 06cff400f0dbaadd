"""The decision-records API: a record from draft to accepted through its endpoints, the refusals (out of turn, the
author, an accepted record), the frozen snapshot and its hash, the exports, and another team's records."""

import hashlib

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.decisions.models import DecisionRecord, RecordStatus
from apps.decisions.tests import records_builders as build
from tests.factories import UserFactory
from tests.url_registry import url_entries

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _stage(record, kind):
    return reverse("records-api:record-stage", kwargs={"pk": record.pk, "stage": kind})


def test_a_record_goes_from_draft_to_accepted_through_the_api(team):
    who = build.people(team)
    example = build.worked_example(team, who.author)
    author = _api(who.author)
    created = author.post(reverse("records-api:record-list"), {
        "team": team.slug, "workload_summary": example.summary.pk, "title": "GPU for support chat",
        "chosen_option": example.b.pk, "capacity_model": "reserve", "rationale": "Cheapest per accepted output.",
        "deciders": [who.author.pk],
    }, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    record = DecisionRecord.objects.get(pk=pk)
    assert created.json()["status"] == "draft" and created.json()["effective_unit_cost"] is None

    patched = author.patch(reverse("records-api:record-detail", args=[pk]), {"consequences": "12 months."},
                           format="json")
    assert patched.status_code == 200 and patched.json()["content"]["consequences"] == "12 months."

    proposed = author.post(reverse("records-api:record-propose", args=[pk]))
    assert proposed.status_code == 200 and proposed.json()["status"] == "proposed"

    out_of_turn = _api(who.finance).post(_stage(record, "finance"), {"decision": "approve"}, format="json")
    assert out_of_turn.status_code == 409 and "signed in order" in out_of_turn.json()["detail"]
    own_record = author.post(_stage(record, "platform"), {"decision": "approve"}, format="json")
    assert own_record.status_code == 403 and list(own_record.json()) == ["detail"]
    for person, kind in ((who.reviewer, "platform"), (who.finance, "finance"), (who.product, "product")):
        response = _api(person).post(_stage(record, kind), {"decision": "approve", "comment": "ok"}, format="json")
        assert response.status_code == 200, response.content
    detail = author.get(reverse("records-api:record-detail", args=[pk])).json()
    assert detail["status"] == "accepted" and detail["snapshot_matches_hash"] is True
    assert detail["effective_unit_cost"] == {"amount": "0.0003515", "currency": "USD"}
    assert [stage["reviewer"] for stage in detail["stages"]] == [who.reviewer.username, who.finance.username,
                                                                 who.product.username]
    rows = {item["label"]: item["row"]["effective_unit_cost"] for item in detail["comparison"]["candidates"]}
    assert rows["B reserved H200"] == "0.0003515"

    assert author.patch(reverse("records-api:record-detail", args=[pk]), {"title": "x"},
                        format="json").status_code == 409
    assert author.post(reverse("records-api:record-propose", args=[pk])).status_code == 409
    assert author.post(reverse("records-api:record-withdraw", args=[pk])).status_code == 409


def test_a_rejection_through_the_api_needs_its_reason(team):
    setup = build.proposed(team)
    reviewer = _api(setup.people.reviewer)
    refused = reviewer.post(_stage(setup.record, "platform"), {"decision": "reject"}, format="json")
    assert refused.status_code == 400 and refused.json() == {"comment": ["A rejection needs its reason."]}
    response = reviewer.post(_stage(setup.record, "platform"), {"decision": "reject", "comment": "No phase 1 yet."},
                             format="json")
    assert response.status_code == 200 and response.json()["status"] == RecordStatus.REJECTED


def test_the_snapshot_endpoint_returns_the_exact_bytes_that_were_hashed(team):
    setup = build.accepted(team)
    response = _api(setup.people.product).get(reverse("records-api:record-snapshot", args=[setup.record.pk]))
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == setup.record.snapshot_sha256
    assert response["X-Content-SHA256"] == setup.record.snapshot_sha256
    xlsx = _api(setup.people.product).get(
        reverse("records-api:record-export", kwargs={"pk": setup.record.pk, "kind": "xlsx"})
    )
    assert xlsx.status_code == 200 and xlsx.content[:2] == b"PK"


def test_the_list_filters_by_status_and_flags(team):
    setup = build.accepted(team)
    build.draft(team, build.people(team, "second-"))
    client = _api(setup.people.finance)
    accepted = client.get(reverse("records-api:record-list"), {"status": "accepted"}).json()
    assert [item["reference"] for item in accepted["results"]] == ["DR-1"]
    assert client.get(reverse("records-api:record-list"), {"flagged": "true"}).json()["count"] == 0
    setup.record.revisit_flags.create(reason="revisit_date", subject="date", details={},
                                      flagged_at=setup.record.decided_at)
    flagged = client.get(reverse("records-api:record-list"), {"flagged": "true"}).json()
    assert [item["revisit_flags"][0]["reason"] for item in flagged["results"]] == ["revisit_date"]


def _record_urls(record):
    for entry in url_entries():
        if entry.name.split(":")[0] not in ("records", "records-api") or "pk" not in entry.parameters:
            continue
        kwargs = {"pk": record.pk}
        if "stage" in entry.parameters:
            kwargs["stage"] = "finance"
        if "kind" in entry.parameters:
            kwargs["kind"] = "xlsx"
        yield entry, reverse(entry.name, kwargs=kwargs)


def test_another_teams_member_gets_404_from_every_record_page_and_endpoint(team, other_team, client):
    setup = build.accepted(team)
    outsider = UserFactory(username="outsider-every-role", roles=["platform", "finance", "product", "admin"],
                           teams=[other_team])
    client.force_login(outsider)
    answers = {}
    for _entry, path in _record_urls(setup.record):
        for method in ("get", "post"):
            response = getattr(client, method)(path)
            if response.status_code != 405:
                answers[f"{method.upper()} {path}"] = response.status_code
    assert answers and set(answers.values()) == {404}, answers
    listed = client.get(reverse("records:list")).content.decode()
    assert setup.record.title not in listed
    assert _api(outsider).get(reverse("records-api:record-list")).json()["count"] == 0
    history = reverse("audit:object-history", args=["decisions", "decisionrecord", setup.record.pk])
    assert client.get(history).status_code == 404


def test_a_user_without_a_role_is_refused_and_an_anonymous_one_sent_to_log_in(team, client):
    setup = build.accepted(team)
    nobody = UserFactory(username="member-without-role", teams=[team])
    anonymous_page = client.get(setup.record.get_absolute_url())
    assert anonymous_page.status_code == 302 and "/accounts/login/" in anonymous_page["Location"]
    client.force_login(nobody)
    assert client.get(setup.record.get_absolute_url()).status_code == 403
    assert client.get(reverse("records-api:record-detail", args=[setup.record.pk])).status_code == 403
