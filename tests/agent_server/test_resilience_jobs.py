"""Phase-3 `checkpoint`, `allreduce` and `acceptance` results on the server: real tiny runs of the agent's jobs on this
CPU, finished through the agent API and ingested; the acceptance threshold logic with fixed datasheet values; the
candidate and quote pages."""

from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from dossier_agent.jobs import acceptance, allreduce, checkpoint

from apps.benchmarks import resilience_figures
from apps.benchmarks.models import Result
from apps.benchmarks.services import plan_dispatch, plan_request_dispatch
from apps.benchmarks.tests.helpers import make_plan
from apps.comparison.tests.builders import gpu_candidate, workload
from apps.evidence.models import CandidateFigure
from tests.agent_server.resilience_support import (
    DECLARED_OPERATIONS,
    PHASE3_KINDS,
    Collect,
    agent_api,
    finish,
)
from tests.i18n_tools import untranslated_text
from tests.test_translations import extracted, pseudo_locale  # noqa: F401 - the pseudo-locale's fixtures

pytestmark = pytest.mark.django_db

CHECKPOINT_SPEC = {"device": "cpu", "state_bytes": 2 * 2**20, "batch_size": 8, "cpu_threads": 1, "timeout_s": 60,
                   "workload": {"checkpoint_interval_s": 1800, "gpus": 8, "checkpoint_bytes": 1e9}}
ALLREDUCE_SPEC = {"device": "cpu", "local_ranks": 2, "sizes_bytes": [4096, 65536], "warmup": 1, "target_s": 0.01,
                  "timeout_s": 60}
ACCEPTANCE_SPEC = {**acceptance.SELF_TEST_SPEC, "device": "cpu"}
H200 = {"gpu": "NVIDIA H200", "memory_bandwidth_bytes_per_s": 4.8e12, "matmul_flops_per_s": {"bf16": 989e12},
        "host_link_bytes_per_s": 63e9, "source": "test: NVIDIA H200 datasheet"}


def _run(job, spec, tmp_path_factory, name):
    ctx = Collect(Path(tmp_path_factory.mktemp(name)))
    return job.run(copy.deepcopy(spec), ctx), ctx.artifacts


@pytest.fixture(scope="module")
def checkpoint_run(tmp_path_factory):
    return _run(checkpoint, CHECKPOINT_SPEC, tmp_path_factory, "checkpoint")


@pytest.fixture(scope="module")
def allreduce_run(tmp_path_factory):
    return _run(allreduce, ALLREDUCE_SPEC, tmp_path_factory, "allreduce")


@pytest.fixture(scope="module")
def acceptance_run(tmp_path_factory):
    return _run(acceptance, ACCEPTANCE_SPEC, tmp_path_factory, "acceptance")


@pytest.fixture
def candidate(team, platform_user):
    # The H200 node the agent of these tests reports (apps/fleet/tests/helpers.inventory): its runs measure it.
    return gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2",
                         gpu_name="NVIDIA H200")


def _inputs(candidate) -> dict[str, CandidateFigure]:
    return {item.metric: item for item in CandidateFigure.objects.filter(candidate=candidate)}


def test_a_checkpoint_round_trip_stores_the_write_time_and_the_lost_work(checkpoint_run, pool, candidate, client,
                                                                         platform_user):
    result, artifacts = checkpoint_run
    assert result["verified"]
    stored = finish(agent_api(pool), pool, "checkpoint", CHECKPOINT_SPEC, result, artifacts, candidate=candidate)
    phase = stored.summary["phase3"]
    assert phase["verified"] and phase["chosen"] == result["targets"][0]["name"]
    target = result["targets"][0]
    write = Decimal("1000000000.0") / Decimal(repr(target["write_bytes_per_s"]))
    read = Decimal("1000000000.0") / Decimal(repr(target["read_bytes_per_s"]))
    inputs = _inputs(candidate)
    assert inputs["checkpoint_write_hours"].value == resilience_figures.quantized(write / 3600)
    assert inputs["lost_work_gpu_hours"].value == resilience_figures.quantized((Decimal(900) + read) * 8 / 3600)
    # the agent's own projection says the same
    lost = result["projections"][0]["lost_work"]
    assert float(inputs["lost_work_gpu_hours"].value) == pytest.approx(lost["expected_total_gpu_hours_per_failure"],
                                                                        rel=1e-9)
    # device "cpu": a rehearsal, stored where the candidate had no such figure, labelled, and never measured evidence
    assert stored.rehearsal is True and stored.rehearsal_reasons == ["cpu_device"]
    assert inputs["checkpoint_write_hours"].reference.startswith(
        f"job:{stored.job_id} (rehearsal — not a GPU measurement, phase 3 checkpoint)")
    assert inputs["checkpoint_write_hours"].measurement.rehearsal is True

    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    assert "resilience-checkpoint" in html and target["name"] in html


def test_a_checkpoint_without_a_workload_size_stores_no_write_time(checkpoint_run, pool, candidate):
    result, artifacts = checkpoint_run
    result = copy.deepcopy(result)
    result["workload"] = {"checkpoint_interval_s": 1800, "gpus": 8}
    stored = finish(agent_api(pool), pool, "checkpoint", CHECKPOINT_SPEC, result, artifacts, candidate=candidate)
    skipped = " ".join(stored.summary["phase3"]["phase4"]["skipped"])
    assert "workload.checkpoint_bytes" in skipped
    assert "checkpoint_write_hours" not in _inputs(candidate)


def test_a_cpu_allreduce_is_shown_labelled_and_never_stored_as_the_gpu_interconnect(allreduce_run, pool, candidate,
                                                                                    client, platform_user):
    result, artifacts = allreduce_run
    stored = finish(agent_api(pool), pool, "allreduce", ALLREDUCE_SPEC, result, artifacts, candidate=candidate)
    phase = stored.summary["phase3"]
    assert phase["label"] == "cpu" and phase["backend"] == "gloo" and phase["world_size"] == 2
    assert phase["largest"]["busbw_gbps"] == result["busbw_at_largest_gbps"]
    assert "interconnect_busbw_gbps" not in _inputs(candidate)
    assert "does not measure the GPUs' interconnect" in phase["phase4"]["skipped"][0]
    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    assert f"resilience-{stored.pk}-interconnect" in html and "CPU (gloo)" in html


def test_the_interconnect_rule_takes_the_busbw_of_the_largest_message(allreduce_run):
    # The storing rule on the real rows, as if a CUDA run had measured them (the label is the only change).
    result = copy.deepcopy(allreduce_run[0])
    result["label"] = "cuda"
    checked = resilience_figures.allreduce_figures(result)
    value, note = checked["phase4"]["figures"]["busbw_gbps"]
    largest = max(result["rows"], key=lambda row: row["size_bytes"])
    assert value == resilience_figures.quantized(Decimal(repr(largest["busbw_gbps"])), 6)
    assert f"largest message ({largest['size_bytes']} B), 2 ranks, gloo" in note
    result["rows"][0]["busbw_gbps"] *= 2  # not algbw · 2(n−1)/n any more
    with pytest.raises(resilience_figures.ShapeError, match="algbw/busbw"):
        resilience_figures.allreduce_figures(result)


def test_a_cpu_acceptance_run_is_labelled_cpu_and_never_flagged(acceptance_run, pool, candidate, client,
                                                                platform_user):
    result, artifacts = acceptance_run
    stored = finish(agent_api(pool), pool, "acceptance", ACCEPTANCE_SPEC, result, artifacts, candidate=candidate)
    phase = stored.summary["phase3"]
    assert phase["label"] == "cpu" and phase["verdict"] == "not_applicable" and phase["flags"] == []
    assert all(row["ratio"] is None and row["datasheet"] is None for row in phase["rows"])
    assert any(row["measured"] for row in phase["rows"])
    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    assert "resilience-acceptance" in html and "never compared with a GPU datasheet" in html
    assert 'id="acceptance-flag"' not in html
    quote_html = client.get(candidate.quote.get_absolute_url()).content.decode()
    assert 'id="acceptance-flags"' not in quote_html


def _cuda_acceptance(copy_seconds: float, matmul_seconds: float) -> dict:
    """An acceptance result of one CUDA device put together by the agent's own functions from fixed timings (the
    threshold logic against the H200 datasheet, as the agent's tests check it; no GPU here)."""
    thresholds = acceptance.load_thresholds()
    copy_work, matmul_work = 2.0 * 2**30, 2.0 * 8192**3
    checks = [
        acceptance._check_record("memory_bandwidth", "cuda", copy_work,
                                 {"seconds_per_op": [copy_seconds] * 3, "iterations_per_repeat": 10}, "copy",
                                 H200["memory_bandwidth_bytes_per_s"], H200["source"],
                                 acceptance.threshold_for(thresholds, "memory_bandwidth")),
        acceptance._check_record("matmul", "cuda", matmul_work,
                                 {"seconds_per_op": [matmul_seconds] * 3, "iterations_per_repeat": 10}, "matmul",
                                 H200["matmul_flops_per_s"]["bf16"], H200["source"],
                                 acceptance.threshold_for(thresholds, "matmul", "bf16"), precision="bf16"),
    ]
    devices = [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-0", "label": "cuda", "checks": checks}]
    health = {"verdict": "pass", "findings": []}
    dcgm = {"verdict": "not_applicable"}
    return {"schema": 1, "label": "cuda", "precision": "bf16", "datasheet": H200, "devices": devices,
            "health": health, "dcgm": dcgm, "verdict": acceptance.overall_verdict("cuda", checks, health, dcgm),
            "flags": acceptance.collect_flags(devices, health, dcgm)}


def test_a_check_below_its_threshold_is_flagged_on_the_candidate_and_its_quote(pool, candidate, client,
                                                                               platform_user):
    # copy: 2 GiB per op in 2 GiB / 3.6e12 s → 3.6 TB/s = 0.75 of 4.8 TB/s (threshold 0.8); bf16: 0.8 of 989 TFLOPS
    slow = _cuda_acceptance(2.0 * 2**30 / 3.6e12, 2.0 * 8192**3 / (0.8 * 989e12))
    assert slow["verdict"] == "fail"
    stored = finish(agent_api(pool), pool, "acceptance", {"datasheet": H200}, slow, candidate=candidate)
    phase = stored.summary["phase3"]
    assert phase["verdict"] == "fail" and phase["disagreements"] == []
    assert [(flag["check"], round(flag["ratio"], 6), flag["threshold"]) for flag in phase["flags"]] == [
        ("memory_bandwidth", 0.75, 0.8)]
    assert {row["check"]: row["verdict"] for row in phase["rows"]} == {"memory_bandwidth": "below_threshold",
                                                                      "matmul": "pass"}
    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    assert 'id="acceptance-flag"' in html and "below the acceptance threshold" in html
    quote_html = client.get(candidate.quote.get_absolute_url()).content.decode()
    assert 'id="acceptance-flags"' in quote_html and candidate.label in quote_html

    # a later run that passes clears the flag (the latest acceptance result of the node counts)
    healthy = _cuda_acceptance(2.0 * 2**30 / 4.32e12, 2.0 * 8192**3 / (0.8 * 989e12))
    assert healthy["verdict"] == "pass"
    finish(agent_api(pool, machine_id="node-resilience-b"), pool, "acceptance", {"datasheet": H200}, healthy,
           candidate=candidate)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    assert 'id="acceptance-flag"' not in html


def test_an_agent_verdict_that_contradicts_its_ratio_is_recomputed_and_reported(pool, candidate):
    slow = _cuda_acceptance(2.0 * 2**30 / 3.6e12, 2.0 * 8192**3 / (0.8 * 989e12))
    slow["devices"][0]["checks"][0]["verdict"] = "pass"  # the agent claims a pass at 0.75
    slow["flags"] = []
    stored = finish(agent_api(pool), pool, "acceptance", {"datasheet": H200}, slow, candidate=candidate)
    phase = stored.summary["phase3"]
    assert phase["verdict"] == "fail" and phase["flags"][0]["check"] == "memory_bandwidth"
    assert "memory_bandwidth on device 0: the agent said pass" in phase["disagreements"]


def test_a_malformed_checkpoint_or_allreduce_result_is_a_problem(pool, candidate):
    stored = finish(agent_api(pool), pool, "checkpoint", CHECKPOINT_SPEC,
                    {"targets": [{"name": "nvme", "bytes": -1}]}, candidate=candidate)
    assert "targets[0].bytes" in stored.summary["phase3"]["problem"]
    stored = finish(agent_api(pool, machine_id="node-resilience-b"), pool, "allreduce", ALLREDUCE_SPEC,
                    {"world_size": 2, "label": "cuda", "backend": "nccl", "rows": []}, candidate=candidate)
    assert "no message size" in stored.summary["phase3"]["problem"]
    assert not CandidateFigure.objects.filter(candidate=candidate, reference__contains="phase 3").exists()


def test_a_groups_interconnect_figure_counts_once_every_rank_succeeded_and_from_rank_zero(allreduce_run, pool,
                                                                                          candidate):
    from apps.benchmarks import tasks
    from apps.benchmarks.models import JobGroup, Result
    from apps.benchmarks.services import plan_create, plan_dispatch, plan_request_dispatch

    rows = copy.deepcopy(allreduce_run[0])
    rows["label"] = "cuda"  # the storing rule on real rows, as if measured on GPUs (the label is the only change)
    plan = plan_create(team=pool.team, name="two nodes", target_pool=pool, spec={
        "candidate_id": candidate.pk, "jobs": [{"kind": "allreduce", "spec": {"device": "cpu"},
                                                "group": {"world_size": 2}}]})
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    apis = [agent_api(pool, machine_id=f"rank-{index}") for index in range(2)]
    claimed = [api.claim_job(job_kinds=("allreduce",)) for api in apis]
    by_rank = {item.body["group"]["rank"]: (api, item) for api, item in zip(apis, claimed, strict=True)}
    results = {}
    for rank in (1, 0):  # rank 1 finishes first: the group has not succeeded when it is ingested
        api, item = by_rank[rank]
        api.start(item)
        figures = {**rows, "node_rank": rank}
        assert api.finish(item, result=figures).status_code == 201
        results[rank] = Result.objects.get(job_id=int(item.job_id))
        assert tasks.ingest_result(results[rank].pk) is True
        results[rank].refresh_from_db()
    assert "has not succeeded (yet)" in results[1].summary["phase3"]["phase4"]["skipped"][0]
    assert JobGroup.objects.get(plan=plan).status == "succeeded"
    report = results[0].summary["phase3"]["phase4"]
    assert report["stored"] == ["interconnect_busbw_gbps"] and report["from_result"] == results[0].pk
    stored = _inputs(candidate)["interconnect_busbw_gbps"]
    assert stored.reference.startswith(f"job:{results[0].job_id} ")


@pytest.mark.parametrize("shape", [["not", "an", "object"], {"checkpoint_bytes": 1e308}],
                         ids=["list", "huge-float"])
def test_an_unforeseen_result_shape_is_a_problem_not_a_stuck_ingest(pool, candidate, shape):
    stored = finish(agent_api(pool), pool, "checkpoint", CHECKPOINT_SPEC,
                    {"targets": [], "workload": shape}, candidate=candidate)
    assert stored.ingested_at is not None and "problem" in stored.summary["phase3"]


def test_an_integer_no_column_holds_is_refused_at_the_edge_before_any_ingest(pool, candidate):
    """10**400 used to reach the ingest (which called it a problem); the API's one JSON reading now refuses an
    integer past 64 bits with a 400 naming it (apps/common/json_input.py), so nothing is stored."""
    api = agent_api(pool)
    plan = make_plan(pool, kind="checkpoint", spec=CHECKPOINT_SPEC, name="Phase 3 checkpoint")
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    claimed = api.claim_job(job_kinds=PHASE3_KINDS, operations=DECLARED_OPERATIONS)
    response = api.finish(claimed, result={"targets": [], "workload": {"checkpoint_bytes": 10**400}})
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["result.workload.checkpoint_bytes"]
    assert not Result.objects.filter(job_id=int(claimed.job_id)).exists()


def test_the_sections_have_no_untranslated_text(pseudo_locale, checkpoint_run, allreduce_run, acceptance_run,  # noqa: F811
                                                pool, candidate, client, platform_user):
    for position, (kind, spec, run) in enumerate((("checkpoint", CHECKPOINT_SPEC, checkpoint_run),
                                                  ("allreduce", ALLREDUCE_SPEC, allreduce_run),
                                                  ("acceptance", ACCEPTANCE_SPEC, acceptance_run))):
        finish(agent_api(pool, machine_id=f"node-{position}"), pool, kind, spec, run[0], run[1], candidate=candidate)
    slow = _cuda_acceptance(2.0 * 2**30 / 3.6e12, 2.0 * 8192**3 / (0.8 * 989e12))
    finish(agent_api(pool, machine_id="node-9"), pool, "acceptance", {"datasheet": H200}, slow, candidate=candidate)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = pseudo_locale
    client.force_login(platform_user)
    html = client.get(reverse("quotes:candidate-detail", args=[candidate.pk])).content.decode()
    start = html.index('<section class="resilience-results"')
    assert untranslated_text(html[start:html.index("</section>", start) + 10]) == []
    html = client.get(candidate.quote.get_absolute_url()).content.decode()
    start = html.index('<div class="warning-box" id="acceptance-flags">')
    assert untranslated_text(html[start:html.index("</div>", start) + 6]) == []
