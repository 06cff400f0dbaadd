"""The phase-2 partial on the job page and the candidate page: figures, charts, flags, and no untranslated text."""

import json

import pytest
from django.conf import settings
from django.urls import reverse

from apps.benchmarks import tasks
from apps.comparison.tests.builders import gpu_candidate, measured, workload
from tests.agent_server.test_throughput_ingest import (  # noqa: F401 - fixture
    api,
    finish_sweep,
    level_records,
    run_and_finish,
    run_spec,
)
from tests.i18n_tools import untranslated_text
from tests.test_translations import extracted, pseudo_locale  # noqa: F401 - the pseudo-locale's fixtures

pytestmark = pytest.mark.django_db


def _chart(html: str, dom_id: str) -> dict:
    marker = f'<script id="{dom_id}-data" type="application/json">'
    start = html.index(marker) + len(marker)
    return json.loads(html[start:html.index("</script>", start)])


@pytest.fixture
def sweep_result(api, pool, team, platform_user):  # noqa: F811
    candidate = gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2")
    measured(candidate, platform_user, "gpus_per_replica", "1", "job:1")
    sweep = {"key": "rate", "levels": [20, 60], "level_duration_s": 1.2}
    stored, _agent_result, _ctx = run_and_finish(api, pool, run_spec(sweep=sweep), candidate=candidate)
    tasks.ingest_result(stored.pk)
    stored.refresh_from_db()
    return stored, candidate


def test_job_and_candidate_pages_draw_the_three_charts_from_the_stored_summary(client, platform_user, sweep_result):
    stored, candidate = sweep_result
    client.force_login(platform_user)
    for url in (reverse("benchmarks:job-detail", args=[stored.job_id]),
                reverse("quotes:candidate-detail", args=[candidate.pk])):
        html = client.get(url).content.decode()
        dom_id = f"throughput-{stored.pk}"
        cdf, curve, goodput = (_chart(html, f"{dom_id}-{name}") for name in ("cdf", "curve", "goodput"))
        summary = stored.summary["phase2"]["summary"]
        assert cdf["data"][1]["x"] == summary["histograms"]["e2e"]["cdf"]["value_s"]
        assert cdf["data"][-1]["x"] == [2.0, 2.0]  # the 2 s end-to-end limit of the spec
        points = stored.summary["phase2"]["points"]
        assert goodput["data"][0]["x"] == [20.0, 60.0]
        assert goodput["data"][0]["y"] == [p["goodput_per_s"] for p in points]
        assert curve["data"][0]["y"] == [p["e2e_p50_s"] for p in points]
        assert "vendor/plotly/plotly.min.js" in html and "Capacity at the SLO" in html


def test_an_invalid_run_and_a_missing_p99_are_shown_as_such(client, platform_user, api, pool):  # noqa: F811
    stored, _result, _ctx = run_and_finish(api, pool, run_spec(rate=20, lag_limit_s=1e-9))
    tasks.ingest_result(stored.pk)
    client.force_login(platform_user)
    html = client.get(reverse("benchmarks:job-detail", args=[stored.job_id])).content.decode()
    assert "Invalid run: these figures are not a measurement of the endpoint." in html
    assert "send lag p99" in html
    assert "too few samples" in html


def test_the_scheduled_and_the_sent_rate_are_shown_side_by_side(client, platform_user, api, pool):  # noqa: F811
    spec = run_spec(lag_limit_s=0.005, sweep={"key": "rate", "levels": [1000, 2000], "level_duration_s": 1.6})
    stored = finish_sweep(api, pool, spec, {1000.0: level_records(1000, 1.6),
                                            2000.0: level_records(2000, 1.6, stall=(2900, 2.5))})
    tasks.ingest_result(stored.pk)
    stored.refresh_from_db()
    points = stored.summary["phase2"]["points"]
    assert [p["valid"] for p in points] == [True, False]
    client.force_login(platform_user)
    html = client.get(reverse("benchmarks:job-detail", args=[stored.job_id])).content.decode()
    # The level shown is the capacity (1,000 req/s): its schedule and what the client sent, beside each other.
    rates = html[html.index('<dd class="throughput-rates">'):]
    rates = rates[:rates.index("</dd>")]
    assert "1000.83 requests/s scheduled, 1000.83 requests/s sent" in rates  # 1,201 requests in the 1.2 s window
    assert "1000.83 requests/s actually sent at that level" in html
    # The levels table gives each level's sent rate next to the offered one: the 2,000 level sent less.
    cell = '<td class="num" translate="no">%s</td>'
    assert cell % "2000.0" + cell % f"{points[1]['sent_per_s']:.2f}" in html
    assert points[1]["sent_per_s"] < points[1]["scheduled_per_s"] - 50
    assert "did not keep its schedule" in html
    goodput = _chart(html, f"throughput-{stored.pk}-goodput")
    assert goodput["data"][-1]["y"] == [p["sent_per_s"] for p in points]


def test_the_partial_has_no_untranslated_text(pseudo_locale, client, platform_user, sweep_result):  # noqa: F811
    stored, candidate = sweep_result
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = pseudo_locale
    client.force_login(platform_user)
    for url in (reverse("benchmarks:job-detail", args=[stored.job_id]),
                reverse("quotes:candidate-detail", args=[candidate.pk])):
        html = client.get(url).content.decode()
        start = html.index('<section class="throughput-results"')
        assert untranslated_text(html[start:html.index("</section>", start) + 10]) == []
