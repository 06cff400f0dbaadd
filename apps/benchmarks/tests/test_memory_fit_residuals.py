"""The residuals page: measured vs predicted per GPU architecture, precision and component, the
chart, the safety margin the residuals suggest; the exact-model fields and the checkpoint path on the plan page."""

import math

import pytest
from django.urls import reverse

from apps.benchmarks import memory_fit
from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.services import plan_dispatch
from apps.benchmarks.tests.test_memory_fit_results import _finish, _probes, _spec
from apps.workloads.memory.breakdown import DEFAULT_SAFETY_MARGIN_FRACTION
from tests.agent_server.memory_fit_support import agent_result, tiny_candidate

pytestmark = pytest.mark.django_db
H200_TOTAL = 143771 * 2**20


def _group(architecture, component, errors):
    residuals = [memory_fit.Residual(architecture, "bf16", component, error, int(error * 1000)) for error in errors]
    return memory_fit.group_residuals(residuals)


def test_the_suggested_margin_is_the_largest_underestimate_of_the_total_rounded_up():
    groups = (_group("h200", "total_without_margin", [3.0, 12.2, -4.0]) + _group("h100", "total_without_margin",
                                                                                  [-8.0, -2.5])
              + _group("h200", "weights", [40.0]))
    margins = {margin.gpu_architecture: margin for margin in memory_fit.suggested_margins(groups)}
    assert set(margins) == {"h100", "h200"}  # only the total calibrates the margin
    assert margins["h200"].suggested_margin_pct == 13 and margins["h200"].max_underestimate_pct == 12.2
    assert margins["h200"].exceeds_current and not margins["h200"].provisional
    assert margins["h100"].suggested_margin_pct == 0 and margins["h100"].provisional
    assert margins["h100"].current_margin_pct == 100 * DEFAULT_SAFETY_MARGIN_FRACTION


def test_the_residuals_figure_has_one_series_per_architecture_and_precision_with_min_max_whiskers():
    groups = _group("h200", "weights", [2.0, 6.0]) + _group("cpu", "weights", [-1.0])
    figure = memory_fit.residuals_figure(groups)
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["cpu · bf16", "h200 · bf16"]
    h200 = figure["data"][1]
    assert h200["y"] == [4.0] and h200["error_y"]["array"] == [2.0] and h200["error_y"]["arrayminus"] == [2.0]


def test_the_page_groups_results_by_architecture_and_shows_the_margin_and_chart(team, pool, agent, client,
                                                                                platform_user):
    candidate = tiny_candidate(team)
    result = _finish(candidate, pool, agent, "cuda", _probes(nvml_total=H200_TOTAL))
    _finish(candidate, pool, agent, "cpu", _probes())
    reading = memory_fit.read_memory_fit(result.result, result.spec)
    total = next(row for row in reading.components if row.component == "total_without_margin")
    client.force_login(platform_user)
    page = client.get(reverse("benchmarks:memory-fit-residuals")).content.decode()
    assert 'data-group="h200/bf16"' in page and 'data-group="cpu/bf16"' in page
    expected = max(0, math.ceil(total.error_pct))
    row = page.split('data-group="h200/bf16"', 1)[1].split("</tr>", 1)[0]
    assert f'class="suggested-margin">{expected}<' in row
    assert 'data-memory-chart="memory-fit-residuals-data"' in page and "vendor/plotly/plotly.min.js" in page
    assert 'id="margin-rule"' in page
    # the candidate and the workload pages link to it
    for url in (candidate.get_absolute_url(), candidate.workload_summary.get_absolute_url()):
        assert reverse("benchmarks:memory-fit-residuals") in client.get(url).content.decode()


def test_the_page_without_results_says_so_and_an_outsider_sees_no_other_teams_residuals(team, pool, agent, client,
                                                                                       outsider):
    _finish(tiny_candidate(team), pool, agent, "cpu", _probes())
    client.force_login(outsider)
    page = client.get(reverse("benchmarks:memory-fit-residuals")).content.decode()
    assert 'id="memory-fit-residuals-none"' in page and "data-group=" not in page


def test_an_exact_model_result_shows_its_source_and_checkpoint_figures(team):
    candidate = tiny_candidate(team)
    spec = _spec(candidate, "cpu")
    result = agent_result(spec, _probes())
    result.update(model_source="exact", proxy_reason=None, exact_model={"model_class": "LlamaForCausalLM"},
                  checkpoint={"parameter_count": 123456, "weight_bytes": 246912})
    reading = memory_fit.read_memory_fit(result, spec)
    assert reading.model_source == "exact" and reading.exact_model_class == "LlamaForCausalLM"
    assert reading.checkpoint_parameters == 123456 and reading.checkpoint_weight_bytes == 246912
    proxy = memory_fit.read_memory_fit(agent_result({**spec, "model_path": "/nowhere"}, _probes()), spec)
    assert proxy.model_source == "proxy" and proxy.checkpoint_parameters is None


def test_the_plan_page_sends_an_absolute_checkpoint_path_and_refuses_a_model_id(team, pool, client, platform_user):
    candidate = tiny_candidate(team)
    client.force_login(platform_user)
    url = reverse("benchmarks:memory-fit-plan", args=[candidate.pk])
    data = {"tokens": 128, "concurrency": 2, "max_probes": 2, "probe_timeout_s": 20, "device": "cpu",
            "target_pool": pool.pk, "dispatch": "on"}
    refused = client.post(url, {**data, "model_path": "meta-llama/Llama-3.1-8B"})
    assert refused.status_code == 400 and not BenchmarkPlan.objects.filter(team=team).exists()
    assert client.post(url, {**data, "model_path": "/srv/models/llama"}).status_code == 302
    plan = BenchmarkPlan.objects.get(team=team)
    plan_dispatch(plan_id=plan.pk)
    assert plan.jobs.get(kind="memory_fit").spec["model_path"] == "/srv/models/llama"
