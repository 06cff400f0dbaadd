"""Finance uploads actuals for an accepted record in real Chromium and sees planned against actual: the decision's
cost per accepted output beside the actual one, the drift, the idle share, the version in the history, and the
record flagged for a revisit.

The record is the worked example's choice B, decided at 0.0003515 USD per accepted request. The sheet's two days
spend 351.50 + 439.375 = 790.875 USD for 2,000,000 accepted requests: 0.0003954375 each, +12.5 % (beyond the
team's 10 %).
"""

import pytest

from apps.actuals.models import ActualsUpload
from apps.decisions.models import RevisitFlag
from apps.decisions.tests.records_builders import accepted
from tests.browser.conftest import TIMEOUT_MS
from tests.factories import PASSWORD

pytestmark = pytest.mark.browser

SHEET = (
    "date,gpu_hours,outputs,accepted_outputs,spend,currency\n"
    "2026-01-01,48,1000000,1000000,351.50,USD\n"
    "2026-01-02,48,1010000,1000000,439.375,USD\n"
)


@pytest.fixture(autouse=True)
def _tasks_run_inline():
    """The live server queues the notification emails on commit: run them here instead of publishing to a broker."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def test_finance_uploads_actuals_and_sees_planned_against_actual(browser, live_server, transactional_db, team,
                                                                 tmp_path):
    setup = accepted(team)
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(setup.people.finance.get_username())
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

        page.goto(setup.record.get_absolute_url())
        panel = page.locator("#actuals")
        assert panel.get_by_role("heading", name="Planned against actual").is_visible()
        assert page.locator("#actuals-none").is_visible()

        # First a sheet with one bad cell: nothing is saved, the row and the column are named.
        bad = tmp_path / "bad.csv"
        bad.write_text(SHEET.replace("439.375", "abc"), encoding="utf-8")
        page.locator("#id_source").fill("AWS CUR export, January 2026")
        page.locator("#id_file").set_input_files(str(bad))
        page.locator("#actuals-upload").click()
        page.wait_for_selector("#actuals-errors")
        assert "Row 3, column spend" in page.locator("#actuals-errors").inner_text()
        assert not ActualsUpload.objects.exists()

        # Then the good sheet.
        good = tmp_path / "january.csv"
        good.write_text(SHEET, encoding="utf-8")
        page.locator("#id_source").fill("AWS CUR export, January 2026")
        page.locator("#id_file").set_input_files(str(good))
        page.locator("#actuals-upload").click()
        page.wait_for_selector(".message-success")
        page.wait_for_selector("#planned-against-actual")

        assert page.locator("#actuals-planned-cost").get_attribute("data-exact") == "0.0003515"
        assert page.locator("#actuals-actual-cost").get_attribute("data-exact") == "0.0003954375"
        assert page.locator("#actuals-drift").inner_text().strip() == "+12.5 %"
        assert page.locator("#actuals-actual-idle").inner_text().strip().endswith("%")
        assert page.locator("#actuals-beyond").is_visible()
        assert page.locator("#actuals-history tbody tr").count() == 1
        assert "january.csv" in page.locator("#actuals-history").inner_text()
        assert "The actual cost drifted" in page.locator(".message-success").inner_text()
        assert page.locator("#revisit .revisit-flag").filter(has_text="Actuals version 1").count() == 1
        assert RevisitFlag.objects.filter(record=setup.record, reason="actual_drift", cleared_at__isnull=True).exists()
    finally:
        context.close()
