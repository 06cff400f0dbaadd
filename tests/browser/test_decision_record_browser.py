"""A decision record from draft to accepted in real Chromium, with the four people of a sign-off: the author drafts
and proposes it, a second platform member reviews it, finance and product approve it; then the XLSX for finance is
downloaded from the accepted record and read back."""

import io
from decimal import Decimal

import openpyxl
import pytest
from django.core import mail

from apps.comparison.tests.builders import worked_example
from apps.decisions.models import DecisionRecord, RecordStatus
from apps.decisions.tests.records_builders import people
from tests.browser.conftest import TIMEOUT_MS
from tests.factories import PASSWORD

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _tasks_run_inline():
    """The live server queues emails on commit: run them here instead of publishing to a broker."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def sign_in_as(browser, live_server, transactional_db):
    """sign_in_as(user): a fresh browser context (its own cookies) signed in through the login form."""
    contexts = []

    def open_page(user):
        context = browser.new_context(base_url=live_server.url, locale="en-US", accept_downloads=True)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(user.get_username())
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def sign_off(transactional_db, team):
    who = people(team, "browser-")
    return who, worked_example(team, who.author)


def _sign(page, record, comment: str):
    page.goto(record.get_absolute_url())
    page.locator("#id_comment").fill(comment)
    page.locator("#approve").click()
    page.wait_for_selector(".message-success")


def test_four_people_take_a_record_from_draft_to_accepted_and_download_the_xlsx(sign_in_as, sign_off, team):
    who, example = sign_off

    # The author starts a draft on the workload version, states the decision and proposes it.
    author = sign_in_as(who.author)
    author.goto("/decisions/records/")
    author.get_by_role("link", name="New decision record").click()
    author.wait_for_url("**/decisions/records/new/")
    author.locator("#id_workload_summary").select_option(str(example.summary.pk))
    author.locator("#id_title").fill("GPU for support chat")
    author.get_by_role("button", name="Start the draft").click()
    author.wait_for_url("**/edit/")
    author.locator("#id_chosen_option").select_option(str(example.b.pk))
    author.locator("#id_capacity_model").select_option("reserve")
    author.locator("#id_rationale").fill("B is the cheapest per accepted response at the peak rate.")
    author.locator(f'#field-informed input[value="{who.finance.pk}"]').check()
    author.get_by_role("button", name="Save the draft").click()
    author.wait_for_selector("#record-status[data-status='draft']")
    author.locator("#propose").click()
    author.wait_for_selector("#record-status[data-status='proposed']")
    record = DecisionRecord.objects.get(team=team)
    assert author.locator("#sign-form").count() == 0  # the author signs no stage
    assert author.locator("#snapshot-hash").inner_text() == record.snapshot_sha256

    # Platform review by another platform member, then finance, then product.
    reviewer = sign_in_as(who.reviewer)
    _sign(reviewer, record, "Capacity measured at the SLO; memory fit still to run.")
    assert reviewer.locator("#waiting-for").inner_text() == "Waiting for: Finance."
    finance = sign_in_as(who.finance)
    _sign(finance, record, "Cost math checked against the quotes.")
    product = sign_in_as(who.product)
    _sign(product, record, "Latency target met for the launch.")
    product.wait_for_selector("#record-status[data-status='accepted']")
    record.refresh_from_db()
    assert record.status == RecordStatus.ACCEPTED and record.snapshot_matches_hash()
    trail = product.locator("table.approval-trail tbody tr")
    assert trail.evaluate_all("rows => rows.map(row => row.dataset.status)") == ["approved"] * 3
    assert product.locator("#sign-form").count() == 0

    # Finance downloads the XLSX of the accepted record: its figures are the frozen ones.
    finance.goto(record.get_absolute_url())
    with finance.expect_download() as download_info:
        finance.locator("#export-xlsx").click()
    download = download_info.value
    assert download.suggested_filename.startswith("DR-1-") and download.suggested_filename.endswith(".xlsx")
    with open(download.path(), "rb") as handle:
        workbook = openpyxl.load_workbook(io.BytesIO(handle.read()))
    sheet = workbook["Comparison"]
    header = [cell.value for cell in sheet[1]]
    rows = {row[1]: row for row in sheet.iter_rows(min_row=2, values_only=True)}
    exact = header.index("effective unit cost computed by Dossier (exact)")
    assert Decimal(rows["B reserved H200"][exact]) == Decimal("0.0003515")
    # The emails of the sign-off went out through the email task (run inline here, never to the shared broker).
    assert {message.to[0] for message in mail.outbox} >= {who.reviewer.email, who.finance.email, who.product.email}
