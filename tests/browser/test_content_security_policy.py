"""Under the Content-Security-Policy (settings.CONTENT_SECURITY_POLICY, django-csp) the pages still work in real
Chromium: a comparison draws its Plotly charts, the workload form runs its htmx checks, the language switcher
(an inline handler before, now bound in dossier.js) still submits, and Chromium reports no violation."""

import pytest

from apps.comparison.tests.builders import measured, worked_example

pytestmark = pytest.mark.browser

# Runs before any page script (Playwright adds it through the DevTools protocol, outside the page's policy).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__cspViolations.push(event.violatedDirective + " " + (event.blockedURI || "inline"));
});
"""


@pytest.fixture
def watched(page):
    """The page, with every CSP complaint collected: console 'Refused to …' messages and violation events."""
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text
            or message.text.startswith("Refused to") else None)
    page.add_init_script(RECORD_VIOLATIONS)

    def violations() -> list[str]:
        return refused + page.evaluate("window.__cspViolations || []")

    page.csp_violations = violations
    return page


@pytest.fixture
def compared(team, platform_user):
    example = worked_example(team, platform_user)
    for candidate, p99 in ((example.a, 2600), (example.b, 1900), (example.c, 3900)):
        for metric, value in (("p50_latency_ms", p99 // 4), ("p95_latency_ms", p99 // 2), ("p99_latency_ms", p99)):
            measured(candidate, platform_user, metric, str(value), f"job:{candidate.pk}{metric}")
    return example


def test_the_policy_header_is_sent_and_allows_scripts_from_this_server_only(client, platform_user):
    client.force_login(platform_user)
    policy = client.get("/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"


def test_a_comparison_draws_its_charts_with_no_violation(watched, login, platform_user, compared):
    login(watched, platform_user)
    watched.goto(f"/decisions/workloads/{compared.summary.pk}/comparison/")
    watched.wait_for_function("document.querySelectorAll('[data-chart] .main-svg').length >= 6")
    assert "Cost per accepted output, by component" in watched.locator("#figure-cost-breakdown").inner_text()
    watched.locator("[data-chart] .main-svg").first.hover()  # hover boxes use Plotly's injected styles
    assert watched.csp_violations() == []


def test_a_form_page_with_htmx_and_the_language_switcher_work_with_no_violation(watched, login, platform_user):
    login(watched, platform_user)
    watched.goto("/workloads/new/")
    watched.locator("form").first.wait_for()
    with watched.expect_response(lambda response: "/workloads/validate/" in response.url):
        watched.locator("select[name=modality]").select_option("text")  # hx-trigger="change" checks the form
    with watched.expect_navigation():
        watched.locator("#language-switch").select_option("fr")  # data-autosubmit, bound in dossier.js
    assert watched.locator("html").get_attribute("lang") == "fr"
    assert watched.csp_violations() == []
