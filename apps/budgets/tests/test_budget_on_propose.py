"""Proposing a decision record checks its cost centre's budget and freezes the check into the snapshot.

The record is the issue-9 worked example choosing B (reserved H200, 12-month term): 2 GPUs × 730 h × 3.50 = 5,110.00
compute + 120.00 storage + 20 h × 90.00 labor = 7,030.00 a month, committed over 12 months: 84,360.00. The budget of
cost centre CC-4100 is 72,000.00 a year: 6,000.00 a month, 72,000.00 over 12 months. 7,030 of 6,000 = 1.1716…: over.
"""

import csv
import io
from decimal import Decimal as D

import openpyxl
import pytest
from django.urls import reverse

from apps.budgets import services
from apps.budgets.tests.builders import budget, cost_centre, finance_member
from apps.decisions import services as record_services
from apps.decisions.models import RecordStatus, StageKind
from apps.decisions.snapshot import budget_result_of
from apps.decisions.tests import records_builders as build

pytestmark = pytest.mark.django_db


def test_over_the_budget_blocks_under_a_blocking_policy_and_warns_under_a_warning_one(team, client):
    finance = finance_member(team)
    centre = cost_centre(team, finance, code="CC-4100", name="Support chat")
    budget(team, centre, finance, amount="72000.00", period="annual")
    services.policy_set(actor=finance, team=team, mode="block")
    setup = build.draft(team, choose="b")
    author = setup.people.author
    client.force_login(author)

    # API: 400 naming the budget and the figures; the record stays a draft with no snapshot.
    response = client.post(reverse("records-api:record-propose", args=[setup.record.pk]),
                           {"cost_centre": centre.pk, "tags": ["support", "eu-west"]}, content_type="application/json")
    assert response.status_code == 400, response.content
    text = response.content.decode()
    assert "CC-4100" in text and "7030.00 USD" in text and "6000.00 USD" in text and "84360.00 USD" in text
    setup.record.refresh_from_db()
    assert (setup.record.status, setup.record.snapshot_json, setup.record.cost_centre_id) == (RecordStatus.DRAFT, "",
                                                                                             None)
    # The page: 400 with the same reason.
    page = client.post(reverse("records:propose", args=[setup.record.pk]), {"cost_centre": centre.pk, "tags": ""})
    assert page.status_code == 400 and "CC-4100" in page.content.decode()

    # A warning policy proposes and shows the warning; the snapshot holds the check's input and outcome.
    services.policy_set(actor=finance, team=team, mode="warn")
    page = client.post(reverse("records:propose", args=[setup.record.pk]),
                       {"cost_centre": centre.pk, "tags": "Support eu-west"}, follow=True)
    assert page.status_code == 200
    assert any("Over the budget of CC-4100" in str(message) for message in page.context["messages"])
    setup.record.refresh_from_db()
    record = setup.record
    assert (record.status, record.cost_centre_id, record.tags) == (RecordStatus.PROPOSED, centre.pk,
                                                                  ["eu-west", "support"])
    frozen = record.snapshot["budget_check"]
    assert frozen["input"]["spend"] == {"monthly_total": "7030.00", "commitment_months": "12"}
    assert D(frozen["input"]["budget"]["amount"]) == D(72000) and frozen["input"]["policy"]["mode"] == "warn"
    assert frozen["context"]["cost_centre"]["code"] == "CC-4100" and frozen["context"]["counted"] == []
    result = budget_result_of(record.snapshot)
    assert (result.outcome, result.reason) == ("warn", "over")
    assert result.budget_monthly == D(6000) and result.record_committed == D("84360.00")
    assert result.budget_over_horizon == D(72000)
    assert result.share_monthly.quantize(D("0.0001")) == D("1.1717")  # 7,030 ÷ 6,000
    assert record.snapshot["record"]["cost_centre"]["code"] == "CC-4100"
    assert 'id="budget-check"' in client.get(record.get_absolute_url()).content.decode()

    # Accepted, it is committed spend: the finance page counts 7,030 × 12 = 84,360 in the annual period.
    build.sign(setup, StageKind.PLATFORM, StageKind.FINANCE, StageKind.PRODUCT)
    assert setup.record.status == RecordStatus.ACCEPTED
    client.force_login(finance)
    page = client.get(reverse("budgets:finance"))
    (row,) = page.context["rows"]
    assert (row.committed_monthly, row.committed_in_period, row.remaining) == (D("7030.00"), D("84360.00"),
                                                                              D("-12360.00"))
    assert row.over and [item.reference for item in row.records] == [record.reference]
    lines = list(csv.reader(io.StringIO(client.get(reverse("budgets:export-csv")).content.decode())))
    assert lines[1][1] == "CC-4100" and lines[1][10] == "84360.00" and lines[1][11] == "-12360.00"
    workbook = openpyxl.load_workbook(io.BytesIO(client.get(reverse("budgets:export-xlsx")).content))
    sheet = workbook.active
    assert sheet.cell(2, 2).value == "CC-4100" and sheet.cell(2, 11).value == 84360.0

    # A second record on the same cost centre counts the accepted one: option A, 8,490.00 a month, no commitment
    # (horizon = the annual period, 12 months): 7,030 + 8,490 = 15,520 of 6,000 a month; over 12 months
    # 84,360 + 101,880 = 186,240 of 72,000.
    second = record_services.record_create(
        actor=author, team=team, workload_summary=setup.example.summary, title="Second option",
        chosen_option=setup.example.a, capacity_model="rent", rationale="Compare.",
    )
    second = record_services.record_propose(actor=author, record=second, cost_centre=centre)
    result = budget_result_of(second.snapshot)
    assert (result.committed_monthly, result.total_monthly) == (D("7030.00"), D("15520.00"))
    assert (result.horizon_months, result.total_over_horizon) == (D(12), D("186240.00"))
    assert result.counted == (record.reference,)


def test_under_a_blocking_policy_a_proposal_must_name_one_of_the_teams_cost_centres(team, other_team):
    setup = build.draft(team, choose="a")
    finance = finance_member(team)
    budget(team, actor=finance)
    services.policy_set(actor=finance, team=team, mode="block")
    with pytest.raises(record_services.ValidationError) as refused:
        record_services.record_propose(actor=setup.people.author, record=setup.record)
    assert "cost_centre" in refused.value.message_dict
    foreign = cost_centre(other_team)
    with pytest.raises(record_services.ValidationError):
        record_services.record_propose(actor=setup.people.author, record=setup.record, cost_centre=foreign)
    with pytest.raises(record_services.ValidationError):
        record_services.record_propose(actor=setup.people.author, record=setup.record,
                                       cost_centre=cost_centre(team), tags=["=HYPERLINK(x)"])
