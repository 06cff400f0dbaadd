"""The decision-record pages: the list, a draft from start to proposal, the record page drawn from its snapshot (the
phase-4 table, the six mistakes, the charts, the approval trail, the audit log), the sign-off form, the print view
and the exports made from the snapshot."""

import copy
import io
from decimal import Decimal

import openpyxl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from apps.comparison import display, exports
from apps.comparison.tests.builders import observed_at
from apps.decisions import selectors
from apps.decisions.models import DecisionRecord, RecordStatus, StageKind
from apps.decisions.snapshot import comparison_from_data
from apps.decisions.tests import records_builders as build
from apps.evidence.services import candidate_figure_set
from apps.quotes import services as quote_services

pytestmark = pytest.mark.django_db


def _raise_prices(setup):
    quote_services.price_record(
        actor=setup.people.author, quote=setup.example.b.quote, component="list_price", amount="5.00",
        source_kind="price_page", source_reference="https://vendor.example.test/pricing#later",
        observed_at=observed_at(),
    )
    candidate_figure_set(actor=setup.people.author, candidate=setup.example.b, metric="capacity_at_slo", value="4",
                     source="measured", reference="job:77", capacity_unit="requests_per_second")


def test_a_platform_member_starts_edits_and_proposes_a_draft_in_the_browser(team, client):
    who = build.people(team)
    example = build.worked_example(team, who.author)
    client.force_login(who.author)
    response = client.post(reverse("records:create"), data={"workload_summary": example.summary.pk,
                                                             "title": "GPU for support chat"})
    record = DecisionRecord.objects.get(team=team)
    assert response.status_code == 302 and response["Location"] == reverse("records:edit", args=[record.pk])

    edit = client.get(reverse("records:edit", args=[record.pk])).content.decode()
    assert edit.count('name="chosen_option"') == 1 and "B reserved H200" in edit
    response = client.post(reverse("records:edit", args=[record.pk]), data={
        "title": "GPU for support chat", "chosen_option": example.b.pk, "capacity_model": "reserve",
        "rationale": "Cheapest per accepted response.", "deciders": [who.author.pk], "informed": [who.finance.pk],
    })
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.chosen_option == example.b and list(record.informed.all()) == [who.finance]

    response = client.post(reverse("records:propose", args=[record.pk]))
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.status == RecordStatus.PROPOSED and record.snapshot_matches_hash()


def test_an_incomplete_draft_says_what_the_proposal_needs(team, client):
    setup = build.draft(team, rationale="")
    client.force_login(setup.people.author)
    response = client.post(reverse("records:propose", args=[setup.record.pk]))
    assert response.status_code == 400 and "A proposal needs this." in response.content.decode()


def test_the_records_list_shows_status_workload_choice_unit_cost_and_revisit_flags(team, client):
    setup = build.accepted(team)
    draft = build.draft(team, build.people(team, "other-"), choose="a")
    setup.record.revisit_flags.create(reason="revisit_date", subject="date", details={"revisit_on": "2027-01-01"},
                                      flagged_at=setup.record.decided_at)
    client.force_login(setup.people.product)
    page = client.get(reverse("records:list")).content.decode()
    assert "DR-1 GPU for support chat" in page and "DR-2 GPU for support chat" in page
    assert "Accepted" in page and "Draft" in page
    assert 'data-exact="0.0003515"' in page  # B's frozen unit cost
    assert "B reserved H200" in page and "A on-demand H100" in page
    assert 'data-reason="revisit_date"' in page
    assert draft.record.pk != setup.record.pk
    filtered = client.get(reverse("records:list"), {"status": "draft"}).content.decode()
    assert "DR-2" in filtered and "DR-1 " not in filtered


def test_the_record_page_draws_the_table_mistakes_and_charts_from_the_snapshot(team, client):
    setup = build.accepted(team, choose="a")
    _raise_prices(setup)  # the live inputs move; the accepted record does not
    client.force_login(setup.people.finance)
    page = client.get(setup.record.get_absolute_url()).content.decode()

    assert page.count('data-exact="0.0003515"') == 1 and 'data-exact="0.0004245"' in page
    assert "5.00" not in page  # the new price is nowhere on the accepted record
    assert 'data-mistake="chose_by_hourly_rate" data-raised="yes"' in page
    assert 'id="figure-cost-breakdown"' in page
    for reviewer in (setup.people.reviewer, setup.people.finance, setup.people.product):
        assert f'<td translate="no">{reviewer.username}</td>' in page
    history = reverse("audit:object-history", args=["decisions", "decisionrecord", setup.record.pk])
    assert f'href="{history}"' in page
    assert 'data-ok="yes"' in page and setup.record.snapshot_sha256 in page

    audit = client.get(history).content.decode()
    assert audit.count(setup.people.finance.username) >= 1 and setup.people.product.username in audit


def test_a_frozen_record_is_rebuilt_without_reading_any_input(team):
    setup = build.accepted(team)
    record = DecisionRecord.objects.get(pk=setup.record.pk)
    with CaptureQueriesContext(connection) as queries:
        comparison = selectors.view_comparison(record)
        display.table_rows(comparison)
        display.chart_list(comparison)
        exports.comparison_xlsx(comparison)
        exports.comparison_data(comparison)
    assert len(queries) == 0
    unit_costs = {result.label: result.row.effective_unit_cost for result in comparison.rows}
    assert unit_costs["B reserved H200"] == Decimal("0.0003515")


def test_the_six_mistakes_of_a_frozen_record_read_in_the_readers_language(team):
    setup = build.accepted(team, choose="a")
    data = setup.record.snapshot["comparison"]
    titles = {
        "en": "Choosing by hourly rate",
        "fr": "Choisir en fonction du tarif horaire",
        "id": "Memilih berdasarkan tarif per jam",
        "fr-ca": "Choisir en fonction du tarif horaire",
        "de": "Choosing by hourly rate",
    }
    for language, title in titles.items():
        with translation.override(language):
            comparison = comparison_from_data(data)
            rule = next(rule for rule in comparison.rules if rule.rule.code == "chose_by_hourly_rate")
            assert rule.title == title
            assert rule.findings and rule.findings[0].message == rule.findings[0].finding.message(gettext)


def test_a_frozen_record_keeps_the_words_it_was_frozen_with(team):
    setup = build.accepted(team, choose="a")
    data = copy.deepcopy(setup.record.snapshot["comparison"])
    rule = next(rule for rule in data["rules"] if rule["code"] == "chose_by_hourly_rate")
    rule["title"]["fr"] = "Choisir au tarif horaire (formulation de l’époque)"
    rule["findings"][0]["message"]["id"] = "Pesan yang dibekukan"
    with translation.override("fr"):
        frozen = next(item for item in comparison_from_data(data).rules if item.rule.code == "chose_by_hourly_rate")
    assert frozen.title == "Choisir au tarif horaire (formulation de l’époque)"
    with translation.override("id"):
        frozen = next(item for item in comparison_from_data(data).rules if item.rule.code == "chose_by_hourly_rate")
    assert frozen.findings[0].message == "Pesan yang dibekukan"


def test_a_draft_reads_todays_inputs(team, client):
    setup = build.draft(team)
    _raise_prices(setup)
    client.force_login(setup.people.author)
    page = client.get(setup.record.get_absolute_url()).content.decode()
    assert 'id="live-note"' in page and "5.00" in page


def test_the_sign_form_is_offered_to_the_reviewer_whose_turn_it_is_only(team, client):
    setup = build.proposed(team)
    for person, offered in ((setup.people.author, False), (setup.people.finance, False),
                            (setup.people.reviewer, True)):
        client.force_login(person)
        page = client.get(setup.record.get_absolute_url()).content.decode()
        assert ('id="sign-form"' in page) is offered, person
    client.force_login(setup.people.reviewer)
    url = reverse("records:review-platform", args=[setup.record.pk])
    refused = client.post(url, data={"decision": "reject", "comment": ""})
    assert refused.status_code == 400 and "A rejection needs its reason." in refused.content.decode()
    client.force_login(setup.people.author)
    assert client.post(url, data={"decision": "approve"}).status_code == 403


def test_a_proposal_whose_inputs_changed_says_so_and_offers_to_propose_again(team, client):
    setup = build.proposed(team)
    build.sign(setup, StageKind.PLATFORM)
    _raise_prices(setup)
    client.force_login(setup.people.finance)
    response = client.post(reverse("records:review-finance", args=[setup.record.pk]), data={"decision": "approve"})
    assert response.status_code == 409 and "approvals given so far were withdrawn" in response.content.decode()
    client.force_login(setup.people.author)
    page = client.get(setup.record.get_absolute_url()).content.decode()
    assert 'id="inputs-changed"' in page and "Propose again with today" in page


def test_the_print_view_and_the_exports_come_from_the_snapshot(team, client):
    setup = build.accepted(team)
    _raise_prices(setup)
    client.force_login(setup.people.finance)
    printed = client.get(reverse("records:print", args=[setup.record.pk])).content.decode()
    assert 'class="print-view"' in printed and 'data-exact="0.0003515"' in printed
    assert 'id="decision"' in printed and 'class="data-table approval-trail"' in printed

    xlsx = client.get(reverse("records:export-xlsx", args=[setup.record.pk]))
    assert xlsx["Content-Type"].startswith("application/vnd.openxmlformats")
    sheet = openpyxl.load_workbook(io.BytesIO(xlsx.content))["Comparison"]
    header = [cell.value for cell in sheet[1]]
    exact = header.index("effective unit cost computed by Dossier (exact)")
    price = header.index("price per price unit")
    rows = {row[1]: row for row in sheet.iter_rows(min_row=2, values_only=True)}
    assert rows["B reserved H200"][exact] == "0.0003515"
    assert Decimal(str(rows["B reserved H200"][price])) == Decimal("3.50")

    csv_text = client.get(reverse("records:export-csv", args=[setup.record.pk])).content.decode()
    assert "0.0003515" in csv_text

    snapshot = client.get(reverse("records:snapshot", args=[setup.record.pk]))
    assert snapshot.content.decode() == setup.record.snapshot_json
    assert snapshot["X-Content-SHA256"] == setup.record.snapshot_sha256


def test_a_draft_has_no_snapshot_to_download(team, client):
    setup = build.draft(team)
    client.force_login(setup.people.author)
    assert client.get(reverse("records:snapshot", args=[setup.record.pk])).status_code == 404
