"""The decision must be right: three hand-computed cases through the REST API and the page, and a comparison that
would mix units refused with both units named.

Each case's arithmetic is in its docstring; every figure is entered through the apps' services, as users do.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from apps.comparison.tests.builders import api_candidate, gpu_candidate, make_quote, measured, workload
from apps.evidence.services import candidate_figure_set
from apps.quotes import services as quote_services
from apps.quotes.tests.factories import GpuFactory

pytestmark = pytest.mark.django_db

D = Decimal
NO_PEAK = {"arrival_rate_peak": None, "arrival_rate_mean": None, "concurrent_sessions_mean": None,
           "concurrent_sessions_peak": None}


def api_rows(client, summary) -> dict:
    response = client.get(f"/api/v1/comparisons/{summary.pk}/")
    assert response.status_code == 200, response.content
    return {item["label"]: item for item in response.json()["candidates"]}


def page(client, summary) -> str:
    response = client.get(f"/comparison/workloads/{summary.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def close(actual: str | Decimal, expected: Decimal, digits: int = 20) -> bool:
    return abs(D(actual) - expected) <= abs(expected) * D(10) ** -digits


@pytest.fixture
def batch_tokens(team, platform_user):
    """(a) Batch inference, success counted in accepted output tokens: 1,000,000,000 a month, 500 output tokens per
    request (the workload declares it; the H100 candidate measured it too).

    H100 on demand at 2.00 per GPU-hour billed per second, 10 requests/s per GPU measured, no retries:
    1,000,000,000 ÷ 500 = 2,000,000 requests ÷ 10/s = 200,000 GPU-seconds = 55.555… h × 2.00 = 111.11 a month,
    0.000000111111… per accepted token. One GPU is enough (2,000,000 ÷ 2,628,000 s = 0.76 req/s), and it is billed for
    the hours the work takes, not the 730-hour month.

    API route at 0.40 / 1.60 per 1M input/output tokens, 800 in and 500 out per request, 2 % retries, a 150.00
    gateway and 2 h × 90.00 of labor: 2,000,000 requests × (800 × 0.40 + 500 × 1.60) ÷ 1M = 2,240.00, retries
    44.80, total 2,614.80, 0.0000026148 per accepted token. The GPU is the cheaper option.

    Before: the 1e9 tokens were sized as requests (380 req/s → 77 GPUs for the month, 64× the work) and the API
    route paid for 1e9 requests."""
    summary = workload(team, workload_type="batch_inference", unit_of_success="accepted_token",
                       demand_per_month=D(1_000_000_000), mean_output_tokens=500, p95_output_tokens=900,
                       quality_acceptance_rate=D(1), **NO_PEAK)
    gpu = gpu_candidate(team, platform_user, summary, label="H100 on demand", price="2.00", capacity="10",
                        retry_rate="0", storage="", labor_hours="", billing_granularity_seconds=1)
    measured(gpu, platform_user, "output_tokens_per_request", "500", f"job:{gpu.pk}03")
    api = api_candidate(team, platform_user, summary, label="API route")
    return summary, gpu, api


def test_a_batch_demand_in_output_tokens_is_converted_to_requests(client, platform_user, batch_tokens):
    summary, _gpu, _api = batch_tokens
    client.force_login(platform_user)
    rows = api_rows(client, summary)
    gpu, api = rows["H100 on demand"]["row"], rows["API route"]["row"]
    assert gpu["unit"] == "output_token" and gpu["capacity_unit"] == "request"
    assert gpu["gpus"] == 1
    assert close(gpu["billed_hours_per_gpu"], D(200_000) / 3600)
    assert close(gpu["total_cost"], D(200_000) / 3600 * D("2.00"))
    assert close(gpu["effective_unit_cost"], D(200_000) / 3600 * D("2.00") / 1_000_000_000)
    assert D(api["total_cost"]) == D("2614.80")
    assert D(api["effective_unit_cost"]) == D("0.0000026148")
    assert D(api["paid_requests"]) == D(2_040_000)
    body = page(client, summary)
    assert "Cost per accepted record or output token" in body and "per Accepted token" in body


@pytest.fixture
def per_second_records(team, platform_user):
    """(b) 12,500,000 generated records a month at 50 records/s per 8-GPU node (6.25 per GPU, 8 GPUs per replica),
    2.00 per GPU-hour billed per second, 2 % retries.

    The records are the work: 12,500,000 × 1.02 = 12,750,000 attempts ÷ 50/s = 255,000 s = 70.833… h per GPU,
    8 × 70.833… × 2.00 = 1,133.33 billed. The retries' share is 1,133.33 × 0.02 ÷ 1.02 = 22.22, shown once as retry
    waste; the useful records cost 12,500,000 ÷ 50 = 250,000 s → 8 × 69.444… h × 2.00 = 1,111.11. Total 1,133.33,
    0.0000906667 per accepted record. Before: billed for the 730-hour month (11,680.00) plus 2 % of it again."""
    summary = workload(team, workload_type="batch_inference", unit_of_success="accepted_record",
                       demand_per_month=D(12_500_000), quality_acceptance_rate=D(1), **NO_PEAK)
    node = gpu_candidate(team, platform_user, summary, label="8×H100 node", price="2.00", capacity="6.25",
                         retry_rate="0.02", storage="", labor_hours="", gpus_per_node=8,
                         billing_granularity_seconds=1)
    figure = node.figures.get(metric="capacity_at_slo")
    candidate_figure_set(actor=platform_user, candidate=node, metric="capacity_at_slo", value="6.25",
                         source=figure.source, reference=figure.reference, capacity_unit="records_per_second")
    measured(node, platform_user, "gpus_per_replica", "8", f"job:{node.pk}04")
    return summary, node


def test_b_per_second_billing_charges_the_hours_the_work_takes_and_retries_once(client, platform_user,
                                                                                per_second_records):
    summary, node_candidate = per_second_records
    client.force_login(platform_user)
    row = api_rows(client, summary)["8×H100 node"]["row"]
    assert (row["gpus"], row["nodes"]) == (8, 1)
    billed = 8 * D(255_000) / 3600 * D("2.00")
    assert close(row["billed_compute"], billed)
    assert D(row["billed_compute"]).quantize(D("0.01")) == D("1133.33")
    assert D(row["retry_waste"]).quantize(D("0.01")) == D("22.22")
    assert D(row["gpu_cost"]).quantize(D("0.01")) == D("1111.11")
    assert close(row["total_cost"], billed)  # the retries are in the bill once, not added again
    assert close(row["effective_unit_cost"], billed / 12_500_000)
    body = page(client, summary)
    node = body.split(f'id="candidate-{node_candidate.pk}"')[1].split("</tr>")[0]
    assert "1,111.11" in node and "22.22" in node  # the GPU cost and the retries, each once


@pytest.fixture
def fine_tuning(team, platform_user):
    """(c) A LoRA fine-tuning run costed per accepted checkpoint, half of the checkpoints accepted.

    1,080,000,000 tokens at a measured 30,000 tokens/s on an 8-GPU node = 10 h; 8 × 10 h × 2.00 = 160.00 a run (no
    failures, no checkpoint stall, no cost lines). At 50 % checkpoint acceptance, 160.00 ÷ 0.5 = 320.00 per accepted
    checkpoint; before, the table stopped at 160.00 per run."""
    summary = workload(team, workload_type="lora_fine_tuning", unit_of_success="accepted_checkpoint",
                       tokens_to_train=1_080_000_000, checkpoint_interval_minutes=60,
                       expected_failures_per_1000_gpu_hours=D(0),
                       failure_rate_source="no interruption in 40 runs, 2026", quality_acceptance_rate=D("0.5"),
                       quality_acceptance_source="reviewers accepted 6 of 12 checkpoints in 2026-10")
    quote = make_quote(team, platform_user, prices={"list_price": "2.00"}, title="8×H100 for fine-tuning",
                       gpu=GpuFactory(name="NVIDIA H100"), gpus_per_node=8, node_count=1, price_unit="gpu_hour",
                       currency="USD",
                       commercial_model="on_demand")
    cluster = quote_services.candidate_create(actor=platform_user, team=team, quote=quote, workload_summary=summary,
                                              label="8×H100 cluster")
    measured(cluster, platform_user, "training_tokens_per_second", "30000", f"job:{cluster.pk}01")
    return summary, cluster


def test_c_fine_tuning_is_costed_per_accepted_checkpoint(client, platform_user, fine_tuning):
    summary, cluster_candidate = fine_tuning
    client.force_login(platform_user)
    row = api_rows(client, summary)["8×H100 cluster"]["training_row"]
    assert D(row["cost_per_completed_run"]) == D("160.00")
    assert D(row["acceptance"]) == D("0.5")
    assert row["unit"] == "checkpoint"
    assert D(row["cost_per_accepted_output"]) == D("320.00")
    body = page(client, summary)
    cluster = body.split(f'id="candidate-{cluster_candidate.pk}"')[1].split("</tr>")[0]
    exact = re.findall(r'data-exact="([0-9.]+)"', cluster)
    assert D("320") in {D(value) for value in exact} and "320.00" in cluster
    assert "Cost per accepted fine-tuned checkpoint" in body


def test_a_comparison_that_mixes_units_is_refused_naming_both(client, platform_user, team):
    """Records demanded, capacity measured in requests, and nothing says how many requests a record takes."""
    summary = workload(team, workload_type="batch_inference", unit_of_success="accepted_record",
                       demand_per_month=D(1_000_000), quality_acceptance_rate=D(1), **NO_PEAK)
    gpu_candidate(team, platform_user, summary, label="H100", price="2.00", capacity="10")
    client.force_login(platform_user)
    response = client.get(f"/api/v1/comparisons/{summary.pk}/")
    assert response.status_code == 400
    error = response.json()
    message = str(error)
    assert "capacity_unit" in message
    assert "records" in message and "requests" in message
    body = page(client, summary)
    assert "records" in body and "requests" in body and "capacity unit" in body
    assert "mixes units without a conversion" in body and "cheapest per accepted output" not in body
