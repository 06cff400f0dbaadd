"""Phase-2 ingest of throughput results: real runs of the agent's throughput job against its loopback mock (a second
or two each), uploaded and finished through the agent API, then ingested by the Celery task body."""

from __future__ import annotations

import hashlib
import json
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from dossier_agent.contract import metrics
from dossier_agent.contract.load_spec import LoadSpec
from dossier_agent.jobs import throughput as throughput_job
from dossier_agent.loadgen import selfcheck

from apps.benchmarks import tasks, throughput
from apps.benchmarks.measurements import counts_as_measured
from apps.benchmarks.models import FigureMeasurement, Result
from apps.benchmarks.services import plan_dispatch, plan_request_dispatch
from apps.benchmarks.tests.helpers import make_plan
from apps.comparison.tests.builders import gpu_candidate, measured, workload
from apps.evidence.models import CandidateFigure
from apps.fleet.tests.helpers import AgentApi, register_agent
from tests.agent_server.resilience_support import Collect

pytestmark = pytest.mark.django_db


def run_spec(rate: float = 150, *, lag_limit_s: float = 0.5, sweep: dict | None = None) -> dict[str, Any]:
    spec = {
        "endpoint": {"url": "builtin-mock", "api": "chat", "mock": {"ttft-ms": 5, "token-ms": 1}},
        "profile": {"kind": "constant", "rate": rate}, "duration_s": 1.6, "warmup_s": 0.3, "cooldown_s": 0.1,
        "min_window_s": 1.0, "output_tokens": 8, "prompts": {"synthetic": {"input_tokens_mean": 16}},
        "slo": {"ttft_max_s": 1.0, "e2e_max_s": 2.0, "target": 0.9}, "send_lag_p99_limit_s": lag_limit_s,
        "self_check": {"enabled": False},
    }
    if sweep is not None:
        spec["sweep"] = sweep
    return spec


@pytest.fixture
def api(pool):
    _agent, token = register_agent(pool, machine_id="node-phase2", job_kinds=("throughput",))
    return AgentApi(token)


def run_and_finish(api, pool, spec: dict[str, Any], *, candidate=None) -> tuple[Result, dict[str, Any], Collect]:
    """Queue a throughput job, run the agent's job for real, upload its artifacts and finish: the stored Result."""
    plan = make_plan(pool, kind="throughput", spec=spec, name="Throughput")
    if candidate is not None:
        plan.spec = {**plan.spec, "candidate_id": candidate.pk}
        plan.save(update_fields=["spec"])
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    claimed = api.claim_job(job_kinds=("throughput",))
    with tempfile.TemporaryDirectory(prefix="throughput-") as workdir:
        ctx = Collect(Path(workdir))
        result = throughput_job.run(spec, ctx)
    listed = []
    for name, (digest, data, media_type) in ctx.artifacts.items():
        response = api.put_artifact(claimed, data, name=name, media_type=media_type)
        assert response.status_code in (200, 201), response.content
        listed.append({"sha256": digest, "name": name, "media_type": media_type, "size": len(data)})
    response = api.finish(claimed, result=json.loads(json.dumps(result)), artifacts=listed)
    assert response.status_code == 201, response.content
    return Result.objects.get(job_id=int(claimed.job_id)), result, ctx


def agent_summarize(spec: dict[str, Any], npz: bytes, offered: float | None) -> dict[str, Any]:
    """What the brief asks the ingest to equal: metrics.summarize on the same records with the spec's parameters."""
    load = LoadSpec.from_dict({k: v for k, v in spec.items() if k not in ("sweep", "self_check")}
                              | {"endpoint": {"url": "http://127.0.0.1:1", "api": "chat"}})
    return metrics.summarize(metrics.columns_from_npz(npz), window=(load.warmup_s, load.duration_s - load.cooldown_s),
                             limits={k: v for k, v in spec["slo"].items() if k != "target"},
                             slo_target=spec["slo"]["target"], target_output_tokens=spec["output_tokens"],
                             send_lag_p99_limit_s=spec["send_lag_p99_limit_s"], offered_rate=offered)


def test_ingest_stores_exactly_what_the_metrics_module_computes_from_the_uploaded_npz(api, pool):
    spec = run_spec()
    stored, agent_result, ctx = run_and_finish(api, pool, spec)

    assert tasks.ingest_result(stored.pk) is True
    stored.refresh_from_db()
    phase = stored.summary["phase2"]
    expected = agent_summarize(spec, ctx.artifacts["records.npz"][1], agent_result["summary"]["offered_rate"])
    assert phase["mode"] == "run"
    assert phase["records_artifact"] == ctx.artifacts["records.npz"][0]
    assert phase["summary"] == json.loads(json.dumps(expected))
    # …and it agrees with the summary the agent computed on the node (without its histograms).
    assert {k: v for k, v in phase["summary"].items() if k != "histograms"} == agent_result["summary"]
    latency = phase["summary"]["latency_s"]["e2e"]
    assert latency["per_request"]["n"] >= 100 and latency["per_request"]["p99"] is not None
    assert latency["per_request"]["method"] == metrics.PERCENTILE_METHOD
    assert latency["token_weighted"]["p95"] is not None
    assert phase["summary"]["histograms"]["e2e"]["cdf"]["value_s"]
    assert phase["summary"]["slices"]["rows"] and phase["summary"]["slo"]["ci"]
    assert phase["summary"]["goodput"]["accepted_tokens_per_s"] > 0
    assert phase["valid"] is True and phase["phase4"]["candidate_id"] is None


def test_ingesting_twice_stores_one_summary(api, pool):
    stored, _result, _ctx = run_and_finish(api, pool, run_spec(rate=40))
    assert tasks.ingest_result(stored.pk) is True
    stored.refresh_from_db()
    first = (stored.ingested_at, stored.summary)
    assert tasks.ingest_result(stored.pk) is False
    stored.refresh_from_db()
    assert (stored.ingested_at, stored.summary) == first
    assert Result.objects.filter(job=stored.job).count() == 1


def test_a_run_with_too_few_samples_has_no_p99_on_the_result_or_the_candidate(api, pool, team, platform_user):
    candidate = gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2")
    stored, _result, _ctx = run_and_finish(api, pool, run_spec(rate=20), candidate=candidate)
    tasks.ingest_result(stored.pk)
    stored.refresh_from_db()
    summary = stored.summary["phase2"]["summary"]
    per_request = summary["latency_s"]["e2e"]["per_request"]
    assert 20 <= per_request["n"] < 100
    assert per_request["p99"] is None and per_request["p95"] is not None
    inputs = {item.metric: item for item in CandidateFigure.objects.filter(candidate=candidate)}
    assert "p99_latency_ms" not in inputs
    assert inputs["p95_latency_ms"].value == Decimal(str(round(per_request["p95"] * 1000, 3)))
    assert "p99: too few samples" in stored.summary["phase2"]["phase4"]["skipped"]


def test_an_invalid_run_is_flagged_and_never_lands_on_the_candidate(api, pool, team, platform_user):
    candidate = gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2")
    # A send-lag limit no real client meets: the run is invalid by the module's own rule.
    stored, _result, _ctx = run_and_finish(api, pool, run_spec(rate=40, lag_limit_s=1e-9), candidate=candidate)
    tasks.ingest_result(stored.pk)
    stored.refresh_from_db()
    phase = stored.summary["phase2"]
    assert phase["valid"] is False and "send lag p99" in phase["invalid_reasons"][0]
    assert phase["phase4"]["stored"] == [] and "the run is invalid: nothing stored" in phase["phase4"]["skipped"]
    stored_figures = CandidateFigure.objects.filter(candidate=candidate, reference__startswith=f"job:{stored.job_id} ")
    assert not stored_figures.exists()
    left = {item.metric for item in CandidateFigure.objects.filter(candidate=candidate)}
    assert left == {"capacity_at_slo", "retry_rate"}


def test_a_sweep_puts_capacity_per_gpu_and_tail_latency_on_the_candidate_with_provenance(api, pool, team,
                                                                                        platform_user):
    # The agent reports an H200 node (apps/fleet/tests/helpers.inventory) and the serving stack is one it did not
    # start (the loopback mock, run here as an outside server): to the server, a measurement of the H200 candidate.
    candidate = gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2",
                              gpu_name="NVIDIA H200")
    measured(candidate, platform_user, "gpus_per_replica", "2", "job:1")
    sweep = {"key": "rate", "levels": [20, 120], "level_duration_s": 1.4}
    with selfcheck.MockProcess("--ttft-ms=5", "--token-ms=1") as stack:
        spec = run_spec(sweep=sweep)
        spec["endpoint"] = {"url": stack.url, "api": "chat"}
        stored, agent_result, _ctx = run_and_finish(api, pool, spec, candidate=candidate)
    assert stored.rehearsal is False

    tasks.ingest_result(stored.pk)
    stored.refresh_from_db()
    phase = stored.summary["phase2"]
    assert phase["mode"] == "sweep" and [p["offered"] for p in phase["points"]] == [20.0, 120.0]
    assert phase["capacity"] == metrics.capacity_at_slo([p for p in phase["points"] if p["valid"]], 0.9)
    assert phase["capacity"]["capacity"] == agent_result["capacity_at_slo"]["capacity"] == 120.0
    level = phase["points"][1]
    assert level["attainment"] == next(p for p in agent_result["sweep"]["points"]
                                       if p["offered"] == 120)["attainment"]

    inputs = {item.metric: item for item in CandidateFigure.objects.filter(candidate=candidate)}
    capacity = inputs["capacity_at_slo"]
    assert capacity.source == "measured" and capacity.value == Decimal("60")
    assert capacity.capacity_unit == "requests_per_second"
    assert capacity.reference.startswith(f"job:{stored.job_id} (measured)")
    assert inputs["p95_latency_ms"].reference.startswith(f"job:{stored.job_id}")
    assert inputs["p95_latency_ms"].value == Decimal(str(round(level["e2e_p95_s"] * 1000, 3)))
    counts = phase["summary"]["counts"]
    assert inputs["failure_rate"].value == Decimal(str(round(
        counts["errors"] / (counts["measured"] - counts["errors"]), 8)))
    assert inputs["failure_rate"].reference.endswith(
        f"failed requests ÷ requests served = {counts['errors']} ÷ {counts['measured'] - counts['errors']}")
    assert sorted(phase["phase4"]["stored"]) == sorted(
        ["capacity_at_slo", "p95_latency_ms", "p99_latency_ms", "failure_rate", "output_tokens_per_request"])
    # The conversion a demand counted in output tokens needs: the mean output tokens of the requests served.
    assert inputs["output_tokens_per_request"].value == Decimal(str(round(phase["summary"]["output_length"]["mean"],
                                                                          3)))
    # Each figure is linked (a foreign key, not the reference text) to the canonical result that measured it.
    for metric in phase["phase4"]["stored"]:
        link = FigureMeasurement.objects.get(figure=inputs[metric])
        assert (link.result_id, link.rehearsal) == (stored.pk, False)
        assert counts_as_measured(inputs[metric])


def level_records(rate: float, seconds: float, *, stall: tuple[int, float] | None = None) -> bytes:
    """A sweep level's records.npz built by hand: a constant `rate` for `seconds`, each request sent 1 ms late and
    answered with 8 tokens (TTFT 5 ms); with `stall` = (i, t), request i and every later one leaves at t at the
    earliest (the client stalled)."""
    records = []
    for i in range(round(rate * seconds)):
        sched = i / rate
        send = sched + 0.001
        if stall is not None and i >= stall[0]:
            send = max(send, stall[1])
        times = [send + 0.005 + 0.001 * k for k in range(8)]
        records.append({"i": i, "sched": sched, "send": send, "first_byte": send + 0.004, "end": times[-1] + 0.0005,
                        "status": 200, "error": None, "in_tok": 16, "out_tok": 8, "check": "ok", "t": times})
    return metrics.columns_to_npz(metrics.columns_from_records(records))


def finish_sweep(api, pool, spec: dict[str, Any], levels: dict[float, bytes], *, candidate=None) -> Result:
    """Queue a throughput sweep job and finish it with the given records per level, as the agent uploads them."""
    plan = make_plan(pool, kind="throughput", spec=spec, name="Throughput")
    if candidate is not None:
        plan.spec = {**plan.spec, "candidate_id": candidate.pk}
        plan.save(update_fields=["spec"])
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    claimed = api.claim_job(job_kinds=("throughput",))
    listed = []
    for value, data in levels.items():
        name = f"records-{value:g}.npz"
        response = api.put_artifact(claimed, data, name=name, media_type="application/x-npz")
        assert response.status_code in (200, 201), response.content
        listed.append({"sha256": hashlib.sha256(data).hexdigest(), "name": name, "media_type": "application/x-npz",
                       "size": len(data)})
    sweep = {"key": spec["sweep"]["key"], "target": spec["slo"]["target"],
             "points": [{"offered": value} for value in levels]}
    response = api.finish(claimed, result={"sweep": sweep}, artifacts=listed)
    assert response.status_code == 201, response.content
    return Result.objects.get(job_id=int(claimed.job_id))


def test_a_level_the_client_did_not_send_is_never_the_capacity(api, pool, team, platform_user):
    candidate = gpu_candidate(team, platform_user, workload(team), label="H200 node", price="3.50", capacity="2",
                              gpu_name="NVIDIA H200")
    measured(candidate, platform_user, "gpus_per_replica", "2", "job:1")
    spec = run_spec(lag_limit_s=0.005, sweep={"key": "rate", "levels": [1000, 2000, 4000], "level_duration_s": 1.6})
    # The records below are built here: a serving stack outside the agent, so a measurement, not a rehearsal.
    spec["endpoint"] = {"url": "http://127.0.0.1:9/v1", "api": "chat"}
    # Window [0.3, 1.5] s. At 4,000 req/s the client stalls 46 requests before the window's end until 2 s: under 1 %
    # of the window's 4,801, so the send-lag p99 stays at 1 ms, but 42 fewer were sent in the window than scheduled,
    # where the 5 ms limit lets 21 slip. Every request is answered within the SLO: by attainment alone the level
    # passes.
    stored = finish_sweep(api, pool, spec, {1000.0: level_records(1000, 1.6), 2000.0: level_records(2000, 1.6),
                                            4000.0: level_records(4000, 1.6, stall=(5955, 2.0))},
                          candidate=candidate)

    tasks.ingest_result(stored.pk)
    stored.refresh_from_db()
    phase = stored.summary["phase2"]
    points = {p["offered"]: p for p in phase["points"]}
    top = points[4000.0]
    assert top["attainment"] == 1.0 and top["send_lag_p99_s"] == pytest.approx(0.001)
    assert top["valid"] is False
    assert [r for r in top["invalid_reasons"] if "send lag" in r] == []
    assert any("did not keep its schedule" in r for r in top["invalid_reasons"])
    assert top["scheduled_per_s"] == pytest.approx(4801 / 1.2)
    assert top["sent_per_s"] == pytest.approx((4801 - 42) / 1.2)
    assert points[2000.0]["valid"] is True and points[2000.0]["sent_per_s"] == pytest.approx(2000, rel=1e-3)

    assert phase["capacity"]["capacity"] == 2000.0
    assert phase["capacity_sent_per_s"] == points[2000.0]["sent_per_s"]
    assert phase["summary_level"] == 2000.0 and phase["summary"]["rate_check"]["ok"] is True
    assert phase["valid"] is False and any(r.startswith("level 4000: sent") for r in phase["invalid_reasons"])
    capacity = CandidateFigure.objects.get(candidate=candidate, metric="capacity_at_slo")
    assert capacity.value == Decimal("1000")  # 2,000 req/s at the SLO ÷ 2 GPUs, never the 4,000 the client missed
    assert capacity.reference.startswith(f"job:{stored.job_id} (measured): rate 2000 at the SLO")


def test_missing_records_are_reported_not_crashed_on(api, pool):
    plan = make_plan(pool, kind="throughput", spec=run_spec(), name="Throughput")
    plan_request_dispatch(plan=plan)
    plan_dispatch(plan_id=plan.pk)
    claimed = api.claim_job(job_kinds=("throughput",))
    api.finish(claimed, result={"spec": run_spec(), "summary": {}})
    stored = Result.objects.get()
    assert tasks.ingest_result(stored.pk) is True
    stored.refresh_from_db()
    assert stored.summary["phase2"] == {"mode": "none", "problem": "records.npz was not uploaded"}
    assert throughput.KIND == "throughput"
