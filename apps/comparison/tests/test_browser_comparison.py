"""In a real browser (Debian's Chromium): the comparison draws its Plotly charts from the locally served
plotly.min.js, on screen and in the print view, and the table sorts by effective unit cost."""

import re

import pytest

from apps.comparison.tests.builders import measured, worked_example

# The project's browser fixtures (tests/browser/conftest.py), shared the way apps/quotes does.
from tests.browser.conftest import _allow_orm_beside_playwright, browser, login, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def compared(team, platform_user):
    example = worked_example(team, platform_user)
    for candidate, p50, p95, p99 in ((example.a, 600, 1500, 2600), (example.b, 450, 1100, 1900),
                                     (example.c, 700, 1800, 3900)):
        measured(candidate, platform_user, "p50_latency_ms", str(p50), f"job:{candidate.pk}50")
        measured(candidate, platform_user, "p95_latency_ms", str(p95), f"job:{candidate.pk}95")
        measured(candidate, platform_user, "p99_latency_ms", str(p99), f"job:{candidate.pk}99")
    return example


def test_charts_are_drawn_on_screen_and_in_the_print_view(page, login, platform_user, compared):  # noqa: F811
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(page, platform_user)
    page.goto(f"/decisions/workloads/{compared.summary.pk}/comparison/")
    drawn = page.locator("[data-chart] .main-svg")
    drawn.first.wait_for()
    chart_ids = page.locator("[data-chart]").evaluate_all("nodes => nodes.map(n => n.dataset.chart)")
    assert set(chart_ids) >= {"cost-breakdown-data", "latency-data", "cost-vs-p99-data", "sensitivity-data",
                              "break-even-reserve-data", "break-even-api-data"}
    page.wait_for_function("document.querySelectorAll('[data-chart] .main-svg').length >= 6")
    assert "Cost per accepted output, by component" in page.locator("#figure-cost-breakdown").inner_text()

    page.goto(f"/decisions/workloads/{compared.summary.pk}/comparison/print/")
    page.wait_for_function("document.querySelectorAll('[data-chart] .main-svg').length >= 6")
    widths = page.locator("[data-chart] .main-svg").evaluate_all(
        "nodes => nodes.map(node => node.getBoundingClientRect().width)"
    )
    assert all(width <= 700 for width in widths)  # fits a printed page
    page.emulate_media(media="print")
    assert not page.locator(".site-header").is_visible()
    assert errors == []


def test_table_sorts_by_effective_unit_cost(page, login, platform_user, compared):  # noqa: F811
    login(page, platform_user)
    page.goto(f"/decisions/workloads/{compared.summary.pk}/comparison/")
    page.get_by_role("columnheader", name=re.compile("Effective unit cost")).click()
    labels = page.locator("#comparison-table tbody th[scope=row] a").all_inner_texts()
    assert labels == ["B reserved H200", "A on-demand H100", "C API route"]
