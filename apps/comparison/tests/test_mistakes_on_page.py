"""Each of the six mistakes (and the guide's closing rule) is raised on the comparison page by a case built to trigger
it, and none is raised by a clean case (the pure checks are tested in test_mistakes.py; this is the page, fed from real
records)."""

import re

import pytest
from django.conf import settings
from django.urls import reverse

from apps.comparison.tests.builders import api_candidate, gpu_candidate, measured, workload

pytestmark = pytest.mark.django_db
RULES = ["chose_by_hourly_rate", "memory_fit_yes_no", "interconnect_ignored", "generated_not_accepted",
         "no_platform_ownership", "bought_for_todays_model", "committed_without_api_comparison"]


def _build(team, actor, *, case: str = "clean"):
    """The clean comparison, with one thing changed by `case`."""
    workload_changes = {"model_change_cadence": "yearly"}
    if case == "generated_not_accepted":
        workload_changes.update(unit_of_success="", quality_acceptance_rate=None, quality_acceptance_source="")
    if case == "bought_for_todays_model":
        workload_changes["model_change_cadence"] = "quarterly"
    summary = workload(team, **workload_changes)
    options = {}
    if case == "no_platform_ownership":
        options["labor_hours"] = ""
    if case in ("bought_for_todays_model", "committed_without_api_comparison"):
        options.update(commercial_model="reserved", committed_hours="730", term_months=12)
    main = gpu_candidate(team, actor, summary, label="A H100", price="3.00", capacity="5", **options)
    if case != "memory_fit_yes_no":
        measured(main, actor, "tested_context_tokens", str(summary.p95_context_tokens), "job:7001")
        measured(main, actor, "tested_concurrency", str(summary.peak_concurrency), "job:7002")
    if case == "interconnect_ignored":
        measured(main, actor, "gpus_per_replica", "2", "job:7003")
    if case != "committed_without_api_comparison":
        api_candidate(team, actor, summary, label="C API")
    if case == "chose_by_hourly_rate":
        cheaper_output = gpu_candidate(team, actor, summary, label="B H200", price="3.50", capacity="9",
                                       gpu_name="NVIDIA H200")
        measured(cheaper_output, actor, "tested_context_tokens", str(summary.p95_context_tokens), "job:7101")
        measured(cheaper_output, actor, "tested_concurrency", str(summary.peak_concurrency), "job:7102")
    return summary, main


def _raised(client, summary, **params) -> dict[str, bool]:
    response = client.get(reverse("comparison:comparison", args=[summary.pk]), params)
    assert response.status_code == 200
    found = dict(re.findall(r'data-mistake="([a-z_]+)" data-raised="(yes|no)"', response.content.decode()))
    assert list(found) == RULES
    return {code: value == "yes" for code, value in found.items()}


def test_clean_case_raises_no_mistake(client, team, platform_user):
    summary, main = _build(team, platform_user)
    client.force_login(platform_user)
    assert _raised(client, summary) == dict.fromkeys(RULES, False)
    assert _raised(client, summary, chosen=main.pk) == dict.fromkeys(RULES, False)


@pytest.mark.parametrize("case", RULES)
def test_each_mistake_is_raised_by_its_case_alone(client, team, platform_user, case):
    summary, _main = _build(team, platform_user, case=case)
    client.force_login(platform_user)
    assert _raised(client, summary) == {code: code == case for code in RULES}


def test_choosing_the_cheapest_hour_raises_the_warning(client, team, platform_user):
    summary, main = _build(team, platform_user, case="chose_by_hourly_rate")
    client.force_login(platform_user)
    page = client.get(reverse("comparison:comparison", args=[summary.pk]), {"chosen": main.pk}).content.decode()
    assert 'data-reason="cheapest_hour_not_cheapest_output"' in page
    assert "A H100 has the lowest hourly price (3.00) but costs 0.0004245 per accepted output" in page


@pytest.mark.parametrize(("language", "title", "message"), [
    ("fr", "Oublier la responsabilité de la plateforme", "A H100 tourne sur des GPU que vous exploitez"),
    ("id", None, "A H100 berjalan di GPU yang Anda operasikan"),
])
def test_mistakes_are_shown_in_the_active_language_as_data(client, team, platform_user, language, title, message):
    summary, _main = _build(team, platform_user, case="no_platform_ownership")
    client.force_login(platform_user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    block = page.split('data-mistake="no_platform_ownership"')[1].split("</ul>")[0]
    if title:
        assert f'<strong translate="no">{title}</strong>' in block
    assert f'translate="no">{message}' in block
