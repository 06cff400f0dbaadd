"""Phase-3 `operations` results on the server: a real run of the agent's job against its built-in mock server, a
hand-computed accounting case built with the agent's own functions, malformed results, and the pages."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from dossier_agent.jobs import operations

from apps.benchmarks import resilience_figures
from apps.comparison.tests.builders import gpu_candidate, workload
from apps.evidence.models import CandidateFigure
from tests.agent_server.resilience_support import Collect, agent_api, finish
from tests.i18n_tools import untranslated_text
from tests.test_translations import extracted, pseudo_locale  # noqa: F401 - the pseudo-locale's fixtures

pytestmark = pytest.mark.django_db

SPEC = {"target": "builtin_mock", "mock": {"startup_delay_s": 0.2},
        "load": {"rate_per_s": 20, "before_s": 0.6, "after_s": 0.6},
        "scenarios": [{"name": "kill_worker"}], "cold_start": {"repeats": 2}}


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """One real run of the agent's operations job (SIGKILL under load, two cold starts), a few seconds."""
    ctx = Collect(Path(tmp_path_factory.mktemp("operations")))
    return operations.run(copy.deepcopy(SPEC), ctx), ctx.artifacts


@pytest.fixture
def candidate(team, platform_user):
    # The H200 node the agent of these tests reports (apps/fleet/tests/helpers.inventory): its runs measure it.
    return gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2",
                         gpu_name="NVIDIA H200")


def _inputs(candidate) -> dict[str, CandidateFigure]:
    return {item.metric: item for item in CandidateFigure.objects.filter(candidate=candidate)}


def test_a_real_run_lands_on_the_candidate_with_exact_figures_from_the_request_records(real_run, pool, candidate,
                                                                                     platform_user):
    from apps.evidence.services import candidate_figure_remove

    result, artifacts = real_run
    # Against the built-in mock stack the run is a rehearsal: it fills only empty (or rehearsal) slots, so the
    # builder's measured retry rate goes first to let every computed figure land.
    candidate_figure_remove(actor=platform_user, item=candidate.figures.get(metric="retry_rate"))
    stored = finish(agent_api(pool), pool, "operations", SPEC, result, artifacts, candidate=candidate)
    phase = stored.summary["phase3"]
    assert "problem" not in phase
    assert phase["observability"]["metrics_ok"] is True  # the mock stack's /metrics answered and parsed
    scenario = phase["scenarios"][0]
    agent_counts = result["scenarios"][0]["accounting"]
    assert scenario["counted_from"] == "records"
    assert scenario["counts"] == {key: agent_counts[key] for key in resilience_figures.ACCOUNTING_COUNTS}
    assert agent_counts["retries"] > 0 and agent_counts["all_accounted"]

    inputs = _inputs(candidate)
    retries, accepted = agent_counts["retries"], agent_counts["accepted"]
    assert inputs["retry_rate"].value == resilience_figures.quantized(Decimal(retries) / Decimal(accepted))
    assert float(inputs["retry_rate"].value) == pytest.approx(result["figures"]["retry_rate"], abs=1e-12)
    assert inputs["failure_rate"].value == resilience_figures.quantized(
        Decimal(agent_counts["lost"]) / Decimal(accepted))
    healthy = result["scenarios"][0]["time_to_healthy_s"]
    assert inputs["restart_hours"].value == resilience_figures.quantized(Decimal(repr(healthy)) / 3600)
    assert float(inputs["cold_start_seconds"].value) == pytest.approx(result["figures"]["cold_start_s_median"],
                                                                      abs=1e-6)
    for metric in ("retry_rate", "failure_rate", "restart_hours", "cold_start_seconds"):
        item = inputs[metric]
        assert item.source == "measured" and item.measurement.rehearsal is True
        assert item.reference.startswith(f"job:{stored.job_id} (rehearsal — not a GPU measurement, phase 3 operations)")
    assert stored.rehearsal is True and "mock_stack" in stored.rehearsal_reasons
    assert "÷ 3600 for hours" in inputs["restart_hours"].reference
    assert "under induced failures" in inputs["retry_rate"].reference
    assert sorted(phase["phase4"]["stored"]) == sorted(
        ["retry_rate", "failure_rate", "restart_hours", "cold_start_seconds"])


def test_the_candidate_and_job_pages_show_the_recovery_table_and_the_charts(real_run, pool, candidate, client,
                                                                            platform_user):
    result, artifacts = real_run
    stored = finish(agent_api(pool), pool, "operations", SPEC, result, artifacts, candidate=candidate)
    client.force_login(platform_user)
    for url in (reverse("quotes:candidate-detail", args=[candidate.pk]),
                reverse("benchmarks:job-detail", args=[stored.job_id])):
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert 'id="resilience-results"' in html and "resilience-recovery" in html
        timeline = _chart(html, f"resilience-{stored.pk}-timeline-0")
        names = [trace["name"] for trace in timeline["data"]]
        assert any("p99" in name for name in names)
        assert len(timeline["data"][0]["x"]) == len(result["scenarios"][0]["timeline"]["rows"])
        assert timeline["layout"]["shapes"]  # the event markers
        cold = _chart(html, f"resilience-{stored.pk}-cold-start")
        assert sorted(cold["data"][0]["y"]) == sorted(run["time_to_healthy_s"]
                                                      for run in result["cold_start"]["runs"])


def test_the_section_has_no_untranslated_text(pseudo_locale, real_run, pool, candidate, client,  # noqa: F811
                                              platform_user):
    result, artifacts = real_run
    finish(agent_api(pool), pool, "operations", SPEC, result, artifacts, candidate=candidate)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = pseudo_locale
    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    start = html.index('<section class="resilience-results"')
    assert untranslated_text(html[start:html.index("</section>", start) + 10]) == []


def _chart(html: str, dom_id: str) -> dict:
    marker = f'<script id="{dom_id}-data" type="application/json">'
    start = html.index(marker) + len(marker)
    return json.loads(html[start:html.index("</script>", start)])


# --- the hand-computed case -----------------------------------------------------------------------------------------


def _request(i, outcome, attempts):
    return {"i": i, "sched": float(i), "outcome": outcome, "attempts": [
        {"send": send, "end": end, "first_token": None if error else end - 0.01, "status": None, "error": error,
         "detail": None, "out_tok": None} for send, end, error in attempts]}


#: scenario A: one first-try success, one success on the 2nd attempt, one loss after 3 attempts, one cut at the end
RECORDS_A = [
    _request(0, "succeeded", [(0.1, 0.2, None)]),
    _request(1, "retried_then_succeeded", [(1.1, 1.15, "connect_refused"), (1.3, 1.4, None)]),
    _request(2, "lost", [(1.5, 1.55, "connect_refused"), (1.7, 1.75, "connect_refused"), (2.1, 2.2, "http_503")]),
    _request(3, "lost", [(2.5, 2.9, "cut_at_end")]),
]
#: scenario B: two first-try successes and one success on the 3rd attempt
RECORDS_B = [
    _request(0, "succeeded", [(0.1, 0.3, None)]),
    _request(1, "retried_then_succeeded", [(0.5, 0.6, "http_502"), (0.7, 0.8, "http_502"), (1.0, 1.2, None)]),
    _request(2, "succeeded", [(1.6, 1.9, None)]),
]


def _scenario(name: str, records: list[dict], time_to_healthy_s: float) -> dict:
    """A scenario as `operations.run_scenario` reports it, built by the agent's own functions from the records."""
    before = operations.latency_window(records, 0.0, 1.0)
    after = operations.latency_window(records, 1.0, 3.0)
    return {"name": name, "recovery": "restart", "time_to_detection_s": 0.05, "time_to_healthy_s": time_to_healthy_s,
            "logged_ready_s": time_to_healthy_s - 0.01, "time_to_first_success_s": time_to_healthy_s + 0.05,
            "recovered": True, "errors": operations.error_kinds(records), "accounting": operations.accounting(records),
            "latency_before": before, "latency_after_recovery": after,
            "latency_ratio_after_vs_before": operations.latency_ratio(before, after),
            "ready_check": operations.ready_check(time_to_healthy_s, time_to_healthy_s - 0.01, {"abs_s": 0.2,
                                                                                                "rel": 0.1}),
            "timeline": operations.timeline(records, [], 0.0, 3.0, {"event_start": 1.0, "healthy": 1.0 +
                                                                    time_to_healthy_s})}


def hand_result() -> tuple[dict, dict]:
    result = {"schema": 1, "target": "declared", "scenarios": [_scenario("kill_worker", RECORDS_A, 1.5),
                                                               _scenario("bad_deploy", RECORDS_B, 2.25)],
              "cold_start": None, "proxy_model": None, "observability": {"log_lines_captured": 0}}
    result["figures"] = operations.figures(result)
    artifacts = {}
    for position, (name, records) in enumerate((("kill_worker", RECORDS_A), ("bad_deploy", RECORDS_B)), start=1):
        data = gzip.compress("\n".join(json.dumps(line) for line in records).encode())
        artifacts[f"requests-{position}-{name}.jsonl.gz"] = (hashlib.sha256(data).hexdigest(), data,
                                                            "application/gzip")
    return result, artifacts


def test_retries_and_failures_change_the_inputs_exactly_as_computed_by_hand(pool, candidate):
    # 7 requests, 12 attempts (A: 1 + 2 + 3 + 1, B: 1 + 3 + 1): every attempt is paid, so 5 retries;
    # accepted 5 (each success once, retried or not); lost 2 (a loss after 3 attempts and one cut at the end).
    result, artifacts = hand_result()
    assert result["figures"]["retry_rate"] == 5 / 5  # the agent's own definition agrees
    stored = finish(agent_api(pool), pool, "operations", {"scenarios": ["kill_worker", "bad_deploy"]}, result,
                    artifacts, candidate=candidate)
    totals = stored.summary["phase3"]["totals"]
    assert totals == {"requests": 7, "succeeded_first_try": 3, "retried_then_succeeded": 2, "lost": 2,
                      "attempts": 12, "retries": 5, "accepted": 5}
    inputs = _inputs(candidate)
    # Per request that succeeded, as phase 4 charges them: 5 × (1 + 1 + 0.4) = 12 attempts, every one paid once.
    assert inputs["retry_rate"].value == Decimal("1")  # 5 retries ÷ 5 succeeded
    assert inputs["failure_rate"].value == Decimal("0.4")  # 2 lost ÷ 5 succeeded
    accepted = totals["accepted"]
    assert accepted * (1 + inputs["retry_rate"].value + inputs["failure_rate"].value) == totals["attempts"]
    assert inputs["restart_hours"].value == Decimal("0.000520833333")  # (1.5 + 2.25) ÷ 2 = 1.875 s ÷ 3600
    assert "cold_start_seconds" not in inputs
    assert inputs["retry_rate"].reference.startswith(f"job:{stored.job_id} (measured, phase 3 operations): "
                                                     "retries ÷ requests that succeeded = 5 ÷ 5")


def test_records_that_disagree_with_the_agents_accounting_are_a_problem_and_nothing_is_written(pool, candidate):
    result, artifacts = hand_result()
    name = "requests-2-bad_deploy.jsonl.gz"
    data = gzip.compress("\n".join(json.dumps(line) for line in RECORDS_B[:2]).encode())  # one request left out
    artifacts[name] = (hashlib.sha256(data).hexdigest(), data, "application/gzip")
    stored = finish(agent_api(pool), pool, "operations", {"scenarios": ["kill_worker"]}, result, artifacts,
                    candidate=candidate)
    assert stored.ingested_at is not None
    phase = stored.summary["phase3"]
    assert phase["kind"] == "operations" and "disagree with the agent's accounting" in phase["problem"]
    stored_figures = CandidateFigure.objects.filter(candidate=candidate, reference__startswith=f"job:{stored.job_id} ")
    assert not stored_figures.exists()


@pytest.mark.parametrize("damage, expected", [
    (lambda r: r["scenarios"][0]["accounting"].update(lost=3), "unaccounted"),
    (lambda r: r["scenarios"][1]["accounting"].update(retries=1), "retries ≠ attempts − requests"),
    (lambda r: r.update(scenarios="kill_worker"), "expected a list"),
    (lambda r: r["scenarios"][0].update(time_to_healthy_s="soon"), "expected a finite number"),
    (lambda r: r.update(cold_start={"runs": [{"time_to_healthy_s": True}]}), "expected a finite number"),
])
def test_a_malformed_result_is_summarised_with_its_problem(pool, candidate, client, platform_user, damage, expected):
    result, _artifacts = hand_result()
    damage(result)
    stored = finish(agent_api(pool), pool, "operations", {"scenarios": ["kill_worker"]}, result, candidate=candidate)
    assert expected in stored.summary["phase3"]["problem"]
    before = {item.metric: item.value for item in CandidateFigure.objects.filter(candidate=candidate)}
    assert before == {"capacity_at_slo": Decimal("2"), "retry_rate": Decimal("0.01")}  # the builder's, untouched
    stored_figures = CandidateFigure.objects.filter(candidate=candidate, reference__startswith=f"job:{stored.job_id} ")
    assert not stored_figures.exists()
    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    assert "could not be summarised" in html


def test_the_pure_counts_refuse_a_success_that_is_not_the_last_attempt():
    bad = _request(0, "retried_then_succeeded", [(0.1, 0.2, None), (0.3, 0.4, None)])
    with pytest.raises(resilience_figures.ShapeError, match="only one"):
        resilience_figures.count_requests([bad])
    with pytest.raises(resilience_figures.ShapeError, match="listed twice"):
        resilience_figures.count_requests([RECORDS_A[0], RECORDS_A[0]])


def test_a_steady_state_failure_rate_from_phase_2_is_never_replaced_by_one_under_induced_failures(pool, candidate):
    from apps.benchmarks.tests.helpers import measured_figure, measuring_result

    # Measured by a phase-2 (throughput) job on the candidate's node, linked to its result.
    throughput_job = measuring_result(candidate).job
    steady = f"job:{throughput_job.pk} (measured): failed requests ÷ requests served = 1 ÷ 999"
    measured_figure(candidate, "failure_rate", Decimal("0.001001"), steady)
    result, artifacts = hand_result()
    stored = finish(agent_api(pool), pool, "operations", {"scenarios": ["kill_worker", "bad_deploy"]}, result,
                    artifacts, candidate=candidate)
    inputs = _inputs(candidate)
    assert inputs["failure_rate"].value == Decimal("0.001001") and inputs["failure_rate"].reference == steady
    assert inputs["retry_rate"].value == Decimal("1")  # phase 3 is the only source of retries
    skipped = stored.summary["phase3"]["phase4"]["skipped"]
    assert any(f"phase 2 (job:{throughput_job.pk}) stands" in reason for reason in skipped)
