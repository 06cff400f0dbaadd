"""Revisiting accepted records: the beat task flags expired quotes, cited prices that moved by more than the team's
percentage, a newer workload version and a passed revisit date; the record keeps its approved figures and offers a
superseding draft that reads today's inputs."""

import datetime
from decimal import Decimal

import pytest
import time_machine
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from apps.comparison.tests.builders import observed_at
from apps.decisions import services, tasks
from apps.decisions.models import DecisionRecord, Notification, RecordStatus, RevisitFlag, StageKind
from apps.decisions.tests import records_builders as build
from apps.quotes import services as quote_services
from apps.workloads import services as workload_services

pytestmark = pytest.mark.django_db


def _price(quote, actor, amount, **extra):
    return quote_services.price_record(
        actor=actor, quote=quote, component="list_price", amount=amount, source_kind="price_page",
        source_reference="https://vendor.example.test/pricing#2027", observed_at=observed_at(), **extra,
    )


def _unit_cost(record, label):
    results = record.snapshot["comparison"]["results"]
    return next(item["row"]["effective_unit_cost"] for item in results if item["label"] == label)


def _open_flags(record):
    return list(RevisitFlag.objects.filter(record=record, cleared_at__isnull=True).order_by("reason", "subject"))


def test_the_revisit_task_is_on_the_beat_schedule():
    tasks_scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"quotes.flag_stale_prices", "decisions.flag_records_for_revisit"} <= tasks_scheduled


def test_a_cited_price_20_percent_higher_flags_the_record_whose_figures_stay_as_approved(team, client):
    setup = build.accepted(team)
    record = setup.record
    approved_json, approved_hash = record.snapshot_json, record.snapshot_sha256
    approved_cost = _unit_cost(record, "B reserved H200")
    assert Decimal(approved_cost) == Decimal("0.0003515")

    cited = setup.example.b.quote.price_versions.get(component="list_price")
    _price(setup.example.b.quote, setup.people.author, "4.20")  # 3.50 + 20 %
    assert tasks.flag_records_for_revisit() == {"flagged": 1, "cleared": 0, "withdrawn": 0}

    record = DecisionRecord.objects.get(pk=record.pk)
    assert record.status == RecordStatus.ACCEPTED
    assert (record.snapshot_json, record.snapshot_sha256) == (approved_json, approved_hash)
    assert record.snapshot_matches_hash()
    (flag,) = _open_flags(record)
    assert (flag.reason, flag.subject) == ("price_changed", f"price:{cited.pk}")
    assert flag.details["cited_amount"] == "3.50" and flag.details["new_amount"] == "4.20"
    assert Decimal(flag.details["change_percent"]) == Decimal("20.00")

    client.force_login(setup.people.finance)
    page = client.get(record.get_absolute_url()).content.decode()
    assert f'data-exact="{approved_cost}"' in page  # the table still shows the approved unit cost
    assert "0.0003515" in page
    assert "version 2 costs 4.20 USD, 20.00 % against version 1 cited by the record (3.50)" in page
    assert 'id="revisit"' in page

    # The people of the record are told, once: running the task again opens nothing new.
    assert Notification.objects.filter(record=record, event="revisit_flagged").count() >= 1
    assert tasks.flag_records_for_revisit() == {"flagged": 0, "cleared": 0, "withdrawn": 0}


def test_a_change_within_the_teams_percentage_flags_nothing(team):
    team.revisit_price_change_percent = Decimal("10")
    team.save()
    setup = build.accepted(team)
    _price(setup.example.b.quote, setup.people.author, "3.80")  # +8.57 %
    tasks.flag_records_for_revisit()
    assert _open_flags(setup.record) == []


def test_a_flag_clears_once_the_price_is_back(team):
    setup = build.accepted(team)
    _price(setup.example.a.quote, setup.people.author, "3.90")  # A: +30 %
    tasks.flag_records_for_revisit()
    assert [flag.reason for flag in _open_flags(setup.record)] == ["price_changed"]
    _price(setup.example.a.quote, setup.people.author, "3.00")
    assert tasks.flag_records_for_revisit()["cleared"] == 1
    assert _open_flags(setup.record) == []


def test_expired_quotes_a_newer_workload_version_and_the_revisit_date_flag_the_record(team):
    setup = build.accepted(team, revisit_on=datetime.date(2027, 6, 1))
    workload_services.summary_update(actor=setup.people.author, summary=setup.example.summary,
                                     data={"notes": "Traffic doubles in Q3."})

    with time_machine.travel(datetime.datetime(2027, 6, 2, 9, tzinfo=datetime.UTC)):
        tasks.flag_records_for_revisit()
    reasons = {flag.reason: flag for flag in _open_flags(setup.record)}
    # By June 2027 the cited prices (observed today) are past the team's stale age too.
    assert set(reasons) == {"workload_changed", "revisit_date", "price_stale"}
    assert reasons["workload_changed"].details["new_version"] == 2
    assert reasons["revisit_date"].details == {"revisit_on": "2027-06-01"}


def test_a_cited_price_past_its_valid_until_date_flags_the_quote_as_expired(team):
    who = build.people(team)
    setup = build.draft(team, who)
    _price(setup.example.b.quote, who.author, "3.50", valid_until=timezone.localdate() + datetime.timedelta(days=3))
    setup.record = services.record_propose(actor=who.author, record=setup.record)
    build.sign(setup, StageKind.PLATFORM, StageKind.FINANCE, StageKind.PRODUCT)
    tasks.flag_records_for_revisit()
    assert _open_flags(setup.record) == []
    with time_machine.travel(timezone.now() + datetime.timedelta(days=5)):
        tasks.flag_records_for_revisit()
    (flag,) = _open_flags(setup.record)
    assert flag.reason == "quote_expired" and flag.details["component"] == "list_price"


def test_a_superseding_draft_carries_the_new_price_and_the_old_record_keeps_its_own(team, client):
    setup = build.accepted(team)
    old = setup.record
    _price(setup.example.b.quote, setup.people.author, "4.20")
    tasks.flag_records_for_revisit()

    client.force_login(setup.people.author)
    response = client.post(reverse("records:supersede", args=[old.pk]))
    draft = DecisionRecord.objects.get(supersedes=old)
    assert response.status_code == 302 and response["Location"] == reverse("records:edit", args=[draft.pk])
    assert draft.status == RecordStatus.DRAFT and draft.chosen_option == old.chosen_option

    # The draft reads today's inputs: B now costs 4.20 an hour.
    page = client.get(draft.get_absolute_url()).content.decode()
    assert "4.20" in page
    new = build.Setup(team, setup.people, setup.example,
                      services.record_propose(actor=setup.people.author, record=draft))
    cited = next(entry["prices"] for entry in new.record.snapshot["inputs"]["candidates"]
                 if entry["candidate"]["id"] == setup.example.b.pk)
    assert [(price["number"], price["amount"]) for price in cited if price["component"] == "list_price"] == [
        (2, "4.20")
    ]
    new_cost = Decimal(_unit_cost(new.record, "B reserved H200"))
    assert new_cost > Decimal(_unit_cost(old, "B reserved H200"))

    build.sign(new, StageKind.PLATFORM, StageKind.FINANCE, StageKind.PRODUCT)
    old.refresh_from_db()
    assert old.status == RecordStatus.SUPERSEDED and old.superseded_by == new.record
    assert Decimal(_unit_cost(old, "B reserved H200")) == Decimal("0.0003515")
    assert _open_flags(old) == []  # a superseded record has nothing left to revisit
    old_page = client.get(old.get_absolute_url()).content.decode()
    assert 'id="superseded-by-link"' in old_page and new.record.reference in old_page


def test_the_task_withdraws_the_approvals_of_a_proposal_whose_inputs_changed(team):
    setup = build.proposed(team)
    build.sign(setup, StageKind.PLATFORM)
    _price(setup.example.a.quote, setup.people.author, "2.90")
    assert tasks.flag_records_for_revisit()["withdrawn"] == 1
    record = DecisionRecord.objects.get(pk=setup.record.pk)
    assert record.inputs_changed_at is not None
    assert not record.stages.filter(status="approved").exists()
    assert Notification.objects.filter(record=record, event="approvals_withdrawn",
                                       recipient=setup.people.reviewer).exists()
    assert tasks.flag_records_for_revisit()["withdrawn"] == 0


def test_a_cited_price_requoted_in_another_currency_is_flagged_without_a_percentage(team, client):
    setup = build.accepted(team)
    _price(setup.example.b.quote, setup.people.author, "3.50", currency="EUR")
    tasks.flag_records_for_revisit()
    (flag,) = _open_flags(setup.record)
    assert flag.reason == "price_changed" and flag.details["change_percent"] is None
    client.force_login(setup.people.author)
    page = client.get(setup.record.get_absolute_url()).content.decode()
    assert "version 2 costs 3.50 EUR, the record cites version 1 at 3.50 USD." in page
