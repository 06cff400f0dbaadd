"""The pages issue 17 added, in French and in Indonesian, in real Chromium (issue 17, "Done when": French and
Indonesian screenshots of the new pages are checked by the pseudo-locale test like the others).

One person signs in once and chooses each language with the header's language switcher (the language kept on their
account). For every page, in each language: a full-page screenshot (pytest's tmp_path, and DOSSIER_SCREENSHOTS_DIR
when set), `<html lang>` in that language, and nothing wider than the window at 1280 px and at 390 px (a phone): a
wide table scrolls inside its own wrapper, the page does not. Then, in the pseudo-locale where every known string
reads "⟦…⟧", the text the browser shows — what JavaScript wrote included, outside translate="no" — must all be
inside the markers.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.urls import reverse

from apps.actuals.tests.url_fixtures import record_with_actuals
from apps.budgets.tests.builders import budget
from apps.comparison.tests.builders import worked_example
from apps.decisions.tests.url_fixtures import proposed
from tests.access import ROLES
from tests.browser.conftest import TIMEOUT_MS
from tests.factories import PASSWORD, UserFactory
from tests.i18n_tools import LANGUAGES, untranslated_pieces
from tests.test_translations import extracted, pseudo_locale  # noqa: F401 - the pseudo-locale's fixtures

pytestmark = pytest.mark.browser

WIDTHS = {"desktop": 1280, "mobile": 390}
HEIGHT = 900


@dataclass(frozen=True)
class Page:
    name: str
    path: str
    shows: str = "main h1"  # what the page is for, there in every language


def _issue_17_pages(team) -> list[Page]:
    """Each page issue 17 added, with the rows that make it show what it is for."""
    platform = UserFactory(username="priya", roles=["platform"], teams=[team])
    example = worked_example(team, platform)  # a hybrid of B's reserved base and C's API overflow
    waiting = proposed(team)  # written by someone else: its platform stage waits for the superuser below
    with_actuals = record_with_actuals(team)
    centre_budget = budget(team)
    return [
        Page("team-start", reverse("teams:start")),
        Page("team-detail", reverse("teams:detail", args=[team.pk])),
        Page("waiting-for-me", reverse("records:waiting"), "main tbody tr"),
        Page("workload-progress", reverse("workloads:detail", args=[example.summary.pk]), ".progress-strip"),
        Page("sweep-plan-form", reverse("benchmarks:plan-sweep-create") + f"?candidate={example.b.pk}",
             '#job-plan-form[data-form-kind="throughput_sweep"]'),
        Page("quote-form", reverse("quotes:quote-create")),
        Page("price-form", reverse("quotes:price-create", args=[example.b.quote_id]), "input[type=file]"),
        Page("checklist", reverse("quotes:quote-checklist", args=[example.b.quote_id])),
        Page("budgets", reverse("budgets:finance"), "main table tbody tr"),
        Page("budget-form", reverse("budgets:budget-create")),
        Page("budget-edit", reverse("budgets:budget-edit", args=[centre_budget.pk])),
        Page("budget-policy", reverse("budgets:policy")),
        Page("hybrid-comparison", reverse("comparison:comparison", args=[example.summary.pk]), "#candidate-hybrid"),
        Page("actuals", with_actuals.get_absolute_url(), "#planned-against-actual"),
        Page("waiting-record", waiting.get_absolute_url()),
    ]


# --- What the browser measures ---------------------------------------------------------------------------------------

# The elements wider than the window, deepest first, outside any element that scrolls or clips them.
_OVERFLOW = """() => {
  const width = window.innerWidth;
  const scrollWidth = document.documentElement.scrollWidth;
  if (scrollWidth <= width) return {scrollWidth, width, culprits: []};
  const escapes = (element) => {
    for (let parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
      if (getComputedStyle(parent).overflowX !== "visible") return false;
    }
    return element.getBoundingClientRect().right > width + 1;
  };
  const wide = [...document.body.querySelectorAll("*")].filter(escapes);
  const leaves = wide.filter((element) => !wide.some((other) => other !== element && element.contains(other)));
  const describe = (element) => element.tagName.toLowerCase() + (element.id ? "#" + element.id : "")
    + (element.classList.length ? "." + [...element.classList].join(".") : "")
    + " " + JSON.stringify((element.innerText || element.value || "").trim().slice(0, 60))
    + " right=" + Math.round(element.getBoundingClientRect().right);
  return {scrollWidth, width, culprits: leaves.slice(0, 8).map(describe)};
}"""

# The visible text in document order (null between text nodes, as tests/i18n_tools.py reads it) and the attribute
# values a reader sees, leaving out what translate="no" marks as data (the `translate` property is inherited).
_VISIBLE_TEXT = """() => {
  document.querySelectorAll("details").forEach((details) => { details.open = true; });
  const shown = (element) => {
    const select = element.closest("select");
    if (select) element = select;  // a closed list's options are shown when it opens
    return element.checkVisibility({visibilityProperty: true});
  };
  const text = [document.title, null];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest("script, style, template, noscript") || !parent.translate || !shown(parent)) {
      continue;
    }
    text.push(node.data, null);
  }
  const attributes = [];
  for (const element of document.body.querySelectorAll("[placeholder], [title], [aria-label], [alt], input[value]")) {
    if (!element.translate || !shown(element)) continue;
    for (const name of ["placeholder", "title", "aria-label", "alt"]) {
      if (element.getAttribute(name)) attributes.push(element.getAttribute(name));
    }
    if (element.matches("input[type=submit], input[type=button], input[type=reset]") && element.value) {
      attributes.push(element.value);
    }
  }
  return {text, attributes};
}"""


def _switch_language(page, language: str) -> None:
    """Choose `language` in the header's switcher: it submits itself and comes back to the same page. The switcher
    names each language by Django's table of languages, which lacks the pseudo-locale: that one gets an option here
    (the view accepts it, as settings.LANGUAGES offers it during the test)."""
    page.evaluate("""(language) => {
      const select = document.querySelector("#language-switch");
      if (![...select.options].some((option) => option.value === language)) select.add(new Option(language, language));
    }""", language)
    with page.expect_navigation():
        page.locator("#language-switch").select_option(language)
    page.wait_for_load_state()


def _screenshot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    folder = os.environ.get("DOSSIER_SCREENSHOTS_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)


def _open(page, target: Page) -> None:
    response = page.goto(target.path)
    assert response is not None and response.status == 200, f"{target.name}: {target.path} answered " \
        f"{response.status if response else 'nothing'}"


def test_new_pages_in_french_and_indonesian_fit_the_window_and_leave_no_english(
        browser, live_server, transactional_db, team, tmp_path, pseudo_locale):  # noqa: F811
    pages = _issue_17_pages(team)
    person = UserFactory(username="root", is_superuser=True, is_staff=True, roles=list(ROLES), teams=[team])
    context = browser.new_context(base_url=live_server.url, locale="en-US",
                                  viewport={"width": WIDTHS["desktop"], "height": HEIGHT})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    overflowing: list[str] = []
    untranslated: list[str] = []
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(person.get_username())
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

        for language in LANGUAGES:
            _switch_language(page, language)
            for label, width in WIDTHS.items():
                # Loaded at that width, as a phone loads it: charts size themselves to the window they start in.
                page.set_viewport_size({"width": width, "height": HEIGHT})
                for target in pages:
                    _open(page, target)
                    assert page.evaluate("document.documentElement.lang") == language, target.name
                    assert page.locator(target.shows).count() > 0, f"{target.name}: no {target.shows}"
                    measured = page.evaluate(_OVERFLOW)
                    if measured["scrollWidth"] > measured["width"]:
                        overflowing.append(f"{language} {target.name} at {width} px: {measured['scrollWidth']} px "
                                           f"wide; {measured['culprits']}")
                    _screenshot(page, tmp_path, f"{target.name}-{language}-{label}")
            page.set_viewport_size({"width": WIDTHS["desktop"], "height": HEIGHT})

        _switch_language(page, pseudo_locale)
        for target in pages:
            _open(page, target)
            collected = page.evaluate(_VISIBLE_TEXT)
            found = untranslated_pieces(collected["text"], collected["attributes"])
            untranslated += [f"{target.name}: {text!r}" for text in dict.fromkeys(found)]
    finally:
        context.close()
    report = ("wider than the window:\n" + "\n".join(overflowing)
              + "\nuntranslated text in the pseudo-locale:\n" + "\n".join(untranslated))
    assert not (overflowing or untranslated), report
