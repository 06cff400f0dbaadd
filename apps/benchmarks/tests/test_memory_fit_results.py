"""Reading memory-fit results: predicted vs measured, the catalog refined by NVML only, residuals, the pages."""

from datetime import date

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.benchmarks import memory_fit
from apps.benchmarks.models import BenchmarkPlan, Result
from apps.benchmarks.services import (
    attempt_finish,
    job_claim,
    plan_dispatch,
    plan_request_dispatch,
    result_ingest,
)
from apps.catalog.models import GpuSpec
from tests.agent_server.memory_fit_support import MIB, agent_result, probe_report, tiny_candidate

pytestmark = pytest.mark.django_db


def _spec(candidate, device):
    return memory_fit.candidate_spec(candidate, memory_fit.FitSettings(tokens=128, concurrency=2, device=device,
                                                              max_probes=3))


def _probes(nvml_total=None):
    common = {"weights": 80 * MIB, "kv_per_request": 10 * MIB, "activation": 20 * MIB, "nvml_total": nvml_total}
    return [probe_report(2, **common, runtime=500 * MIB if nvml_total else 0),
            probe_report(4, outcome="oom", **common)]


def _finish(candidate, pool, agent, device, probes):
    """The candidate's memory-fit plan dispatched, claimed by `agent` and finished with the agent-built result."""
    plan = memory_fit.memory_fit_plan_create(candidate=candidate, settings=memory_fit.FitSettings(
        tokens=128, concurrency=2, device=device, max_probes=3), target_pool=pool)
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    claim = job_claim(agent=agent, job_kinds=["memory_fit"], operations=[])
    result = agent_result(claim.job.spec, probes)
    payload = {"attempt": claim.attempt.number, "status": "succeeded", "finished_at": timezone.now(),
               "result": result, "artifacts": [], "error": None, "event_count": 0, "agent_version": "0.1.0"}
    attempt_finish(attempt=claim.attempt, idempotency_key=f"k-{claim.attempt.pk}", raw_body=b"{}", payload=payload)
    result = Result.objects.get(attempt=claim.attempt)
    result_ingest(result_id=result.pk)  # the task runs on commit; the test's transaction never commits
    return result


def test_reading_sets_measured_beside_predicted_with_the_error(team):
    candidate = tiny_candidate(team)
    spec = _spec(candidate, "cuda")
    reading = memory_fit.read_memory_fit(agent_result(spec, _probes(nvml_total=143771 * MIB)), spec)
    rows = {row.component: row for row in reading.components}
    predicted_weights = next(t["size_bytes"] for t in spec["predicted"]["terms"] if t["name"] == "weights")
    assert rows["weights"].measured_bytes == 80 * MIB and rows["weights"].predicted_bytes == predicted_weights
    assert rows["weights"].error_pct == round(100 * (80 * MIB - predicted_weights) / predicted_weights, 2)
    assert rows["kv_cache"].measured_bytes == 20 * MIB
    assert reading.fits_at_target and reading.largest_fitting == 2 and reading.smallest_failing == 4
    assert reading.largest_fitting_exact is False and reading.oom_count == 1 and reading.probe_count == 2
    assert reading.usable_mib == 143771 and reading.device_reported_memory
    assert reading.headroom_bytes == 143771 * MIB - (80 + 20 + 20 + 500) * MIB


def test_a_cpu_reading_never_counts_as_device_memory(team):
    candidate = tiny_candidate(team)
    spec = _spec(candidate, "cpu")
    reading = memory_fit.read_memory_fit(agent_result(spec, _probes()), spec)
    assert reading.device_kind == "cpu" and reading.usable_source.startswith("cpu")
    assert not reading.device_reported_memory


def test_figure_has_predicted_and_measured_bars_and_the_capacity_line(team):
    candidate = tiny_candidate(team)
    spec = _spec(candidate, "cuda")
    figure = memory_fit.memory_fit_figure(memory_fit.read_memory_fit(agent_result(spec, _probes(143771 * MIB)), spec))
    predicted, measured, capacity = figure["data"]
    assert predicted["type"] == measured["type"] == "bar" and len(predicted["x"]) == len(measured["y"])
    assert measured["y"][0] == 80.0 and capacity["y"] == [143771.0, 143771.0]


def test_nvml_result_refines_the_catalog_with_the_agent_and_time_as_source(team, pool, agent):
    candidate = tiny_candidate(team)
    result = _finish(candidate, pool, agent, "cuda", _probes(nvml_total=143771 * MIB))
    result.refresh_from_db()
    assert result.summary["memory_fit"]["catalog_usable_mib_recorded"] is True
    spec = GpuSpec.objects.get(gpu=candidate.quote.gpu, key="usable_mib")
    assert spec.value == 143771 and spec.as_of == result.finished_at.date()
    assert f"dossier-agent {agent.name}" in spec.source_text and "nvml" in spec.source_text
    assert result.finished_at.isoformat(timespec="seconds") in spec.source_text


def test_cpu_result_never_touches_the_catalog(team, pool, agent):
    candidate = tiny_candidate(team)
    from apps.catalog.services import gpu_spec_set

    gpu_spec_set(actor="test", gpu=candidate.quote.gpu, key="usable_mib", value=143771,
                 source="https://example.test/h200", as_of=date(2026, 11, 1))
    result = _finish(candidate, pool, agent, "cpu", _probes())
    result.refresh_from_db()
    assert result.summary["memory_fit"] == {"fits_at_target": True, "largest_fitting": 2, "oom_count": 1,
                                            "device_kind": "cpu", "catalog_usable_mib_recorded": False}
    spec = GpuSpec.objects.get(gpu=candidate.quote.gpu, key="usable_mib")
    assert spec.source_url == "https://example.test/h200" and spec.as_of == date(2026, 11, 1)


def test_residuals_are_grouped_by_gpu_architecture_and_precision(team, pool, agent, platform_user):
    candidate = tiny_candidate(team)
    _finish(candidate, pool, agent, "cuda", _probes(nvml_total=143771 * MIB))
    _finish(candidate, pool, agent, "cpu", _probes())
    groups = {(group.gpu_architecture, group.precision, group.component): group
              for group in memory_fit.memory_fit_residuals(platform_user)}
    assert groups[("h200", "bf16", "weights")].count == 1
    assert groups[("cpu", "bf16", "weights")].count == 1
    assert groups[("h200", "bf16", "weights")].mean_residual_bytes == 80 * MIB - next(
        row.predicted_bytes for row in memory_fit.read_memory_fit(
            Result.objects.filter(job__spec__device="cuda").get().result).components if row.component == "weights")


def test_group_residuals_averages_each_group():
    residuals = [memory_fit.Residual("h200", "bf16", "weights", 2.0, 10), memory_fit.Residual("h200", "bf16", "weights",
                                                                                       4.0, 30)]
    (group,) = memory_fit.group_residuals(residuals)
    assert (group.count, group.mean_error_pct, group.min_error_pct, group.max_error_pct) == (2, 3.0, 2.0, 4.0)
    assert group.mean_residual_bytes == 20


def test_results_show_on_the_candidate_and_workload_pages(team, pool, agent, client, platform_user):
    candidate = tiny_candidate(team)
    _finish(candidate, pool, agent, "cpu", _probes())
    client.force_login(platform_user)
    for url in (candidate.get_absolute_url(), candidate.workload_summary.get_absolute_url()):
        page = client.get(url).content.decode()
        assert 'id="memory-fit-components"' in page and "vendor/plotly/plotly.min.js" in page
        assert 'id="memory-fit-ooms">1 / 2<' in page and "data-memory-chart=" in page


def test_outsider_sees_no_result_of_another_team(team, pool, agent, outsider):
    candidate = tiny_candidate(team)
    _finish(candidate, pool, agent, "cpu", _probes())
    assert not memory_fit.memory_fit_results(outsider).exists()
    assert memory_fit.memory_fit_residuals(outsider) == []


def test_plan_page_derives_the_target_and_creates_a_dispatched_plan(team, pool, client, platform_user):
    candidate = tiny_candidate(team)
    client.force_login(platform_user)
    url = reverse("benchmarks:memory-fit-plan", args=[candidate.pk])
    page = client.get(url).content.decode()
    assert 'name="tokens" value="128"' in page and 'name="concurrency" value="2"' in page
    response = client.post(url, {"tokens": 256, "concurrency": 3, "max_probes": 2, "probe_timeout_s": 20,
                                 "device": "cpu", "target_pool": pool.pk, "dispatch": "on"})
    assert response.status_code == 302
    plan = BenchmarkPlan.objects.get(team=team)
    assert response.url == plan.get_absolute_url() and plan.dispatch_requested_at is not None
    plan_dispatch(plan_id=plan.pk)  # the dispatch task runs on commit; the test's transaction never commits
    job = plan.jobs.get(kind="memory_fit")
    assert job.spec["inference"]["p95_context_tokens"] == 256 and job.spec["inference"]["concurrent_sessions"] == 3
    assert job.spec["search"] == {"max_probes": 2, "probe_timeout_s": 20} and job.spec["device"] == "cpu"


@pytest.mark.parametrize("method", ["get", "post"])
def test_outsider_gets_404_on_the_plan_page(team, outsider, client, method):
    candidate = tiny_candidate(team)
    client.force_login(outsider)
    url = reverse("benchmarks:memory-fit-plan", args=[candidate.pk])
    assert getattr(client, method)(url).status_code == 404


def test_finance_cannot_plan(team, client, finance_user):
    candidate = tiny_candidate(team)
    client.force_login(finance_user)
    assert client.get(reverse("benchmarks:memory-fit-plan", args=[candidate.pk])).status_code == 403
