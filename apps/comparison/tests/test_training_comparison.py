"""A training workload is compared per completed run: time to the token budget from the measured throughput,
checkpoint stalls and the work expected to be lost to failures between checkpoints (cost_model.training_run_cost)."""

import dataclasses
from decimal import Decimal

import openpyxl
import pytest
from django.urls import reverse

from apps.common import money
from apps.comparison import cost_model
from apps.comparison.exports import TABLE_SHEET
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import make_quote, measured, workload
from apps.comparison.tests.spreadsheet import columns, recalculate, row_of
from apps.quotes import services as quote_services
from apps.quotes.tests.factories import GpuFactory

pytestmark = pytest.mark.django_db
D = Decimal

TRAINING_WORKLOAD = {
    "workload_type": "training", "tokens_to_train": 50_000_000_000, "checkpoint_interval_minutes": 60,
    "expected_failures_per_1000_gpu_hours": D("0.5"), "failure_rate_source": "fleet incident log 2025",
    "target_eval_metric": "MMLU 5-shot", "target_eval_score": D("0.70"),
}


def _cluster(team, actor, summary, *, label, price, gpus_per_node, node_count, throughput, **terms):
    quote = make_quote(team, actor, prices={"list_price": price}, title=f"{label} cluster",
                       gpu=GpuFactory(name="NVIDIA H100"), gpus_per_node=gpus_per_node, node_count=node_count,
                       price_unit="gpu_hour", currency="USD", interconnect_intra_node="NVLink 4",
                       interconnect_inter_node="8× 400 Gb/s InfiniBand", **terms)
    quote_services.cost_line_add(actor=actor, quote=quote, kind="checkpoint_storage", quantity="1", unit="run",
                                 rate="200.00", period="run", source_reference="https://vendor.example.test/storage",
                                 observed_at=quote.price_versions.get().observed_at)
    quote_services.cost_line_add(actor=actor, quote=quote, kind="platform_labor", quantity="10", unit="hour",
                                 rate="90.00", period="run", estimate_reason="run babysitting")
    candidate = quote_services.candidate_create(actor=actor, team=team, quote=quote, workload_summary=summary,
                                                label=label)
    measured(candidate, actor, "training_tokens_per_second", throughput, f"job:{candidate.pk}1")
    measured(candidate, actor, "checkpoint_write_hours", "0.05", f"job:{candidate.pk}2")
    measured(candidate, actor, "restart_hours", "0.5", f"job:{candidate.pk}3")
    return candidate


@pytest.fixture
def training(team, platform_user):
    summary = workload(team, **TRAINING_WORKLOAD)
    a = _cluster(team, platform_user, summary, label="A 16× H100", price="3.00", gpus_per_node=8, node_count=2,
                 throughput="60000", commercial_model="on_demand")
    b = _cluster(team, platform_user, summary, label="B 8× H100", price="2.60", gpus_per_node=8, node_count=1,
                 throughput="28000", commercial_model="on_demand")
    return summary, a, b


def _by_hand(gpus, price, throughput):
    """The docstring of training_run_cost, step by step, for the fixture's workload and cost lines."""
    compute = D(50_000_000_000) / D(throughput) / 3600
    checkpoints = int(compute // 1)
    checkpoint_hours = checkpoints * D("0.05")
    failures = D("0.0005") * gpus * (compute + checkpoint_hours)
    waste_hours = failures * (min(D(1), compute) / 2 + D("0.5"))
    hourly = gpus * D(price)
    return hourly * (compute + checkpoint_hours + waste_hours) + D(200) + D(900)


def test_cost_per_completed_run_on_the_page_and_in_the_api(client, platform_user, training):
    summary, a, b = training
    client.force_login(platform_user)
    data = client.get(reverse("comparison-api:comparison", args=[summary.pk])).json()
    assert data["errors"] == []
    rows = {item["candidate_id"]: item["training_row"] for item in data["candidates"]}
    expected_a, expected_b = _by_hand(16, "3.00", "60000"), _by_hand(8, "2.60", "28000")
    assert abs(D(rows[a.pk]["cost_per_completed_run"]) - expected_a) < D("1e-20")
    assert abs(D(rows[b.pk]["cost_per_completed_run"]) - expected_b) < D("1e-20")
    assert D(rows[a.pk]["checkpointing"]) == D(48) * D("11.55") + D(200)  # 231 checkpoints × 0.05 h
    assert data["training"]["failures_per_gpu_hour"] == "0.0005"

    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    assert "Cost per completed training run" in page
    shown = f"{money.round_to_minor_unit(expected_a, 'USD'):,}"
    assert shown in page.split(f'id="candidate-{a.pk}"')[1].split("</tr>")[0]
    # B's half-size cluster takes 496 h instead of 231 h, yet costs less per completed run (≈ 11,977 vs 12,859).
    assert expected_b < expected_a
    assert data["cheapest_per_accepted_output"] == b.pk


def test_training_candidate_without_measured_throughput_names_the_field(client, platform_user, training):
    summary, a, _b = training
    a.figures.filter(metric="training_tokens_per_second").delete()
    client.force_login(platform_user)
    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    assert f'data-candidate="{a.pk}" data-field="throughput_tokens_per_second"' in page
    assert "not measured yet" in page


def test_training_workload_without_a_token_budget_names_the_workload_field(client, team, platform_user):
    summary = workload(team, **{**TRAINING_WORKLOAD, "tokens_to_train": None})
    client.force_login(platform_user)
    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    assert 'data-field="tokens_to_train"' in page


def test_training_xlsx_recomputes_the_cost_per_run(client, platform_user, training, tmp_path):
    summary, a, b = training
    client.force_login(platform_user)
    path = tmp_path / "training.xlsx"
    path.write_bytes(client.get(reverse("comparison:comparison-xlsx", args=[summary.pk])).content)
    workbook = openpyxl.load_workbook(path)
    table = workbook[TABLE_SHEET]
    header = columns(table)
    table[f"{header['training throughput (tokens/s)']}{row_of(table, a.pk)}"] = 75000
    changed = tmp_path / "changed.xlsx"
    workbook.save(changed)
    computed = recalculate(changed, tmp_path)[TABLE_SHEET]
    column = columns(computed)["cost per completed run"]
    comparison = comparison_for(platform_user, summary)
    by_id = {result.candidate.pk: result for result in comparison.training_rows}
    for candidate, run in ((a, dataclasses.replace(by_id[a.pk].training_run, throughput_tokens_per_second=D(75000))),
                           (b, by_id[b.pk].training_run)):
        exact = cost_model.training_run_cost(run).cost_per_completed_run
        value = computed[f"{column}{row_of(computed, candidate.pk)}"].value
        assert abs(D(repr(value)) - exact) <= exact * D("5e-7"), (candidate, value, exact)


def test_training_csv_lists_the_run_figures(client, platform_user, training):
    summary, a, _b = training
    client.force_login(platform_user)
    text = client.get(reverse("comparison:comparison-csv", args=[summary.pk])).content.decode()
    header, first = text.splitlines()[:2]
    assert header.startswith("candidate_id,label,kind,currency,gpus,price_per_gpu_hour,compute_hours")
    assert first.startswith(f"{a.pk},A 16× H100,gpu,USD,16,3.00,231.48148148")
