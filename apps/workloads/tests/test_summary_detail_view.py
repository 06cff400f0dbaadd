"""A version's page: readiness with reasons, the metric, the memory breakdown and its chart, the shortlist, the
capacity hint, newer versions, and marking it ready."""

import json

import pytest
from django.urls import reverse

from apps.workloads.models import Status
from apps.workloads.tests.factories import draft_summary, ready_summary

pytestmark = pytest.mark.django_db


def test_the_page_lists_each_missing_field_with_why_it_matters(client_for, finance_user, team):
    summary = draft_summary(team, num_kv_heads=None, operating_boundary="")
    page = client_for(finance_user).get(summary.get_absolute_url()).content.decode()
    assert 'data-field="num_kv_heads"' in page and 'data-field="operating_boundary"' in page
    assert "grouped-query attention" in page  # why the KV heads matter
    assert "rule out some providers" in page  # why the boundary matters


def test_a_summary_missing_an_applicable_field_cannot_be_marked_ready(client_for, platform_user, team):
    summary = draft_summary(team, p99_e2e_ms=None)
    response = client_for(platform_user).post(reverse("workloads:mark-ready", args=[summary.pk]))
    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="ready-errors"' in page and 'data-field="p99_e2e_ms"' in page
    assert "judged at the tail" in page
    summary.refresh_from_db()
    assert summary.status == Status.DRAFT


def test_a_complete_summary_is_marked_ready(client_for, platform_user, team):
    summary = draft_summary(team)
    response = client_for(platform_user).post(reverse("workloads:mark-ready", args=[summary.pk]))
    assert response.status_code == 302
    summary.refresh_from_db()
    assert summary.status == Status.READY and summary.ready_by == platform_user


def test_the_page_shows_the_breakdown_with_formulas_and_the_chart_against_each_gpu(
    client_for, finance_user, team, loaded_catalog
):
    summary = ready_summary(team)
    response = client_for(finance_user).get(summary.get_absolute_url())
    page = response.content.decode()
    assert 'id="memory-breakdown"' in page
    assert "L·⌈c/B⌉·B·2·n_kv·d·bytes(bf16)·sessions" in page  # the KV-cache formula
    assert "vendor/plotly/plotly.min.js" in page and 'id="memory-chart-data"' in page
    chart = response.context["chart"]
    gpu_names = {gpu.short_name for gpu in loaded_catalog}
    assert set(chart["data"][-1]["x"]) == gpu_names  # the usable-memory markers, one per catalog GPU
    assert [trace["name"] for trace in chart["data"][:2]] == ["Weights", "KV cache"]
    h200 = next(row for row in response.context["gpu_rows"] if row["gpu"].display_name == "NVIDIA H200 SXM")
    assert h200["usable_bytes"] == 143_771 * 2**20 and h200["status_code"] == "fits"
    assert "driver" in h200["basis"]  # where the capacity figure comes from


def test_the_page_answers_the_inverse_questions_and_shows_the_shortlist(
    client_for, platform_user, team, loaded_catalog
):
    response = client_for(platform_user).get(ready_summary(team).get_absolute_url())
    context = response.context
    assert context["smallest"] is not None
    assert context["shortlist"]["entries"][0]["fits_as_planned"]
    assert "p95/p99 latency" in context["shortlist"]["prioritises"]
    assert all(row["largest_concurrency"] is not None or row["concurrency_unbounded"] for row in context["gpu_rows"])
    page = response.content.decode()
    assert 'id="shortlist"' in page and 'id="inverse-answers"' in page


def test_the_metric_is_proposed_from_the_workload_type(client_for, platform_user, team):
    page = client_for(platform_user).get(draft_summary(team).get_absolute_url()).content.decode()
    assert "Cost per accepted response at the target p95/p99 latency" in page


def test_the_capacity_hint_comes_from_the_guide_table(client_for, platform_user, team):
    summary = draft_summary(team, model_change_cadence="yearly", operating_mode="always_on")
    response = client_for(platform_user).get(summary.get_absolute_url())
    assert [hint["starting_point"] for hint in response.context["capacity"]["hints"]] == [
        "Reserved GPUs, dedicated endpoints, or reserved clusters"
    ]


def test_the_page_in_french_uses_the_french_rule_texts(client_for, platform_user, team, settings):
    client = client_for(platform_user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "fr"
    page = client.get(draft_summary(team, num_kv_heads=None).get_absolute_url()).content.decode()
    assert "l’attention à requêtes groupées" in page


def test_an_old_version_says_a_newer_one_exists(client_for, platform_user, team):
    ready = ready_summary(team)
    newer = draft_summary(team, workload=ready.workload, version=2)
    page = client_for(platform_user).get(ready.get_absolute_url()).content.decode()
    assert 'id="newer-version"' in page and newer.get_absolute_url() in page
    assert 'id="edit-link"' not in page


def test_an_incomplete_summary_says_what_the_estimate_needs(client_for, platform_user, team):
    summary = draft_summary(team, p95_output_tokens=None, mean_output_tokens=None)
    response = client_for(platform_user).get(summary.get_absolute_url())
    assert "p95 output tokens" in response.context["plan_error"]
    assert response.context["chart"] is None


def test_the_chart_figure_is_valid_json_in_the_page(client_for, platform_user, team, loaded_catalog):
    page = client_for(platform_user).get(ready_summary(team).get_absolute_url()).content.decode()
    start = page.index('<script id="memory-chart-data" type="application/json">') + len(
        '<script id="memory-chart-data" type="application/json">'
    )
    figure = json.loads(page[start : page.index("</script>", start)])
    assert figure["layout"]["barmode"] == "stack"
