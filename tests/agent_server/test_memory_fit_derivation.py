"""Plan from the workload: the memory_fit spec derived from a candidate's ready workload version."""

from dataclasses import replace
from datetime import date

import pytest
from dossier_agent.jobs.memory_fit import parse_spec

from apps.benchmarks import memory_fit
from apps.benchmarks.models import PlanStatus
from apps.benchmarks.plan_spec import normalise_plan_spec
from apps.catalog.services import gpu_spec_set
from apps.workloads import estimates
from apps.workloads.memory.inference import estimate_inference
from apps.workloads.memory.training import estimate_training
from apps.workloads.tests.factories import ready_summary
from tests.agent_server.memory_fit_support import TINY_SHAPE, tiny_candidate

pytestmark = pytest.mark.django_db


def test_default_settings_are_the_workloads_p95_context_and_peak_concurrency(team):
    plan = estimates.plan_for(ready_summary(team))
    settings = memory_fit.default_settings(plan)
    assert (settings.tokens, settings.concurrency) == (3000 + 700, 64)


def test_training_settings_are_the_sequence_and_micro_batch(team):
    summary = ready_summary(team, workload_type="lora_fine_tuning", training_sequence_length=2048, batch_size=4)
    plan = estimates.plan_for(summary)
    assert memory_fit.is_training(plan)
    assert (memory_fit.default_settings(plan).tokens, memory_fit.default_settings(plan).concurrency) == (2048, 4)


def test_spec_carries_the_shape_target_and_the_servers_prediction_for_the_edited_target(team):
    plan = estimates.plan_for(ready_summary(team))
    settings = memory_fit.FitSettings(tokens=1024, concurrency=8, max_probes=3, probe_timeout_s=30, device="cpu")
    spec = memory_fit.derive_memory_fit_spec(plan=plan, settings=settings, origin={"candidate_id": 7},
                                         latency_limits={"p95_ttft_ms": 800})
    expected = estimate_inference(plan.shape, replace(plan.request, p95_context_tokens=1024,
                                                      concurrent_sessions=8))
    assert spec["predicted"] == expected.as_dict()
    assert spec["model"]["num_layers"] == 32 and spec["model"]["num_kv_heads"] == 8
    assert spec["model"]["architecture"] == "dense" and spec["model"]["precision"] == "bf16"
    assert spec["inference"]["p95_context_tokens"] == 1024 and spec["inference"]["concurrent_sessions"] == 8
    assert spec["search"] == {"max_probes": 3, "probe_timeout_s": 30}
    assert spec["device"] == "cpu" and spec["latency_limits_ms"] == {"p95_ttft_ms": 800}
    assert spec["origin"] == {"candidate_id": 7} and "capacity" not in spec


def test_the_agent_accepts_the_derived_spec(team):
    plan = estimates.plan_for(ready_summary(team, **TINY_SHAPE))
    settings = replace(memory_fit.default_settings(plan), device="cpu")
    spec = memory_fit.derive_memory_fit_spec(plan=plan, settings=settings)
    fit_plan = parse_spec(spec, {})
    assert fit_plan.device == "cpu" and fit_plan.target == 2 and fit_plan.target_tokens == 128
    assert fit_plan.shape.hidden_size == 64 and fit_plan.predicted["total_bytes"] == spec["predicted"]["total_bytes"]


def test_training_prediction_is_for_one_device_without_zero_sharding(team):
    summary = ready_summary(team, workload_type="full_fine_tuning", training_sequence_length=1024, batch_size=1,
                            zero_stage=3, data_parallel_gpus=8)
    plan = estimates.plan_for(summary)
    spec = memory_fit.derive_memory_fit_spec(plan=plan, settings=memory_fit.default_settings(plan))
    single = estimate_training(plan.shape, replace(plan.request, zero_stage=0, data_parallel_gpus=1))
    sharded = plan.breakdown()
    assert spec["workload"] == "training" and spec["training"]["method"] == "full"
    assert spec["predicted"]["total_bytes"] == single.total_bytes > sharded.total_bytes


def test_unknown_device_is_refused(team):
    plan = estimates.plan_for(ready_summary(team))
    with pytest.raises(memory_fit.Phase1Error):
        memory_fit.derive_memory_fit_spec(plan=plan, settings=replace(memory_fit.default_settings(plan), device="tpu"))


def test_candidate_spec_fits_the_prediction_on_the_quotes_gpu_and_records_its_origin(team):
    candidate = tiny_candidate(team)
    gpu = candidate.quote.gpu
    gpu_spec_set(actor="test", gpu=gpu, key="usable_mib", value=143771, source="https://example.test/h200",
                 as_of=date(2026, 11, 1))
    spec = memory_fit.candidate_spec(candidate, memory_fit.FitSettings(tokens=128, concurrency=2))
    assert spec["origin"] == {"candidate_id": candidate.pk, "workload_summary_id": candidate.workload_summary_id,
                              "gpu_id": gpu.pk, "gpu_name": gpu.display_name, "gpu_architecture": "h200"}
    assert spec["capacity"]["usable_bytes"] == 143771 * 2**20 and spec["capacity"]["source"] == "catalog"
    assert spec["capacity"]["predicted_status"] == "fits"
    assert spec["capacity"]["predicted_headroom_bytes"] == 143771 * 2**20 - spec["predicted"]["total_bytes"]
    assert spec["latency_limits_ms"]["p95_ttft_ms"] == 800


def test_plan_goes_through_the_ordinary_plan_service(team, pool):
    candidate = tiny_candidate(team)
    plan = memory_fit.memory_fit_plan_create(candidate=candidate, target_pool=pool,
                                         settings=memory_fit.FitSettings(tokens=128, concurrency=2, device="cpu"))
    assert plan.status == PlanStatus.DRAFT and plan.team == team
    (entry,) = normalise_plan_spec(plan.spec)
    assert entry.kind == "memory_fit" and entry.spec["origin"]["candidate_id"] == candidate.pk


def test_a_quote_without_a_gpu_cannot_be_planned(team):
    candidate = tiny_candidate(team)
    candidate.quote.gpu = None
    with pytest.raises(memory_fit.Phase1Error):
        memory_fit.candidate_estimate_plan(candidate)
