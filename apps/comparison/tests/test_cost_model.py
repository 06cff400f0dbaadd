"""Phase-4 normalisation: the issue's worked example to the digit, each commercial model, bad inputs, properties."""

import dataclasses
import decimal
import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.common.decimals import significant
from apps.common.money import round_to_minor_unit
from apps.common.provenance import ProvenanceKind
from apps.common.work_units import Conversion, WorkUnit
from apps.comparison.cost_model import (
    DECIMAL_CONTEXT,
    CandidateInput,
    CostKind,
    CostLine,
    Demand,
    ExchangeRate,
    NormalizationError,
    Provenance,
    TrainingRun,
    UnitMismatchError,
    api_vs_self_host_tokens_per_month,
    blended_api_price_per_million,
    buy_vs_rent_months,
    media_cost_per_accepted_asset,
    normalize,
    reserve_vs_on_demand_utilisation,
    sensitivity,
    training_run_cost,
)
from apps.comparison.tests.worked_example import (
    ESTIMATED,
    MEASURED,
    QUOTE_A,
    QUOTE_B,
    candidate_a,
    candidate_b,
    candidate_c,
    realtime_demand,
    self_hosted_lines,
)

D = Decimal


@pytest.fixture(autouse=True, scope="module")
def _same_decimal_context_as_the_module():
    # expected values computed here use the module's 34-digit context, so exact comparisons mean exact
    previous = decimal.getcontext()
    decimal.setcontext(DECIMAL_CONTEXT.copy())
    yield
    decimal.setcontext(previous)


def close(actual, expected):
    """Equal to 30 significant digits: for figures whose operations run in another order than the module's."""
    return abs(actual - expected) <= abs(expected) * D("1e-30")


def one_row(demand, candidate, **kwargs):
    (row,) = normalize(demand, [candidate], **kwargs)
    json.dumps(row.to_dict())  # every row serialises for the API, and every note renders its text
    return row


# --- the worked example of the guide ------------------------------------------------------------------------------


def test_worked_example_a_on_demand_h100():
    """Peak 12 req/s × 1.01 (the 1 % retries are sent again at the peak too) = 12.12 ÷ 5 req/s → 3 GPUs, billed
    3 × 730 h × 3.00 = 6,570.00. The retries used 20,000,000 × 0.01 = 200,000 of the 3 × 5 × 3600 × 730 =
    39,420,000 requests the fleet could serve: 6,570.00 × 200,000 ÷ 39,420,000 = 33.33 of the bill, shown once as
    retry waste (the old convention added 1 % of the bill, 65.70, on top of a bill that already paid for the retries).
    Total 6,570.00 + 120.00 + 1,800.00 = 8,490.00; per accepted response 8,490.00 ÷ 20,000,000 = 0.0004245."""
    row = one_row(realtime_demand(), candidate_a())
    assert row.gpus == 3
    assert row.billed_compute == D("6570.00")
    assert round_to_minor_unit(row.retry_waste, "USD") == D("33.33")
    assert row.gpu_cost + row.retry_waste == D("6570.00")
    assert row.failure_waste == row.retry_waste
    assert row.storage_network == D("120.00")
    assert row.platform_labor == D("1800.00")
    assert row.total_cost == D("8490.00")
    assert row.effective_unit_cost == D("0.0004245")
    assert round_to_minor_unit(row.idle_capacity, "USD") == D("3203.33")  # 6,570.00 × (1 − 20,200,000 ÷ 39,420,000)
    assert round_to_minor_unit(row.productive_capacity, "USD") == D("3333.33")
    assert row.hourly_price == D("3.00")


def test_worked_example_b_reserved_h200():
    """12.12 req/s ÷ 9 → 2 GPUs, 2 × 730 × 3.50 = 5,110.00 committed; retries 5,110.00 × 200,000 ÷ (2 × 9 × 3600 ×
    730 = 47,304,000) = 21.60 of it. Total 5,110.00 + 1,920.00 = 7,030.00; per response 0.0003515."""
    row = one_row(realtime_demand(), candidate_b())
    assert row.gpus == 2
    assert row.billed_compute == D("5110.00")
    assert round_to_minor_unit(row.failure_waste, "USD") == D("21.60")
    assert row.storage_network == D("120.00")
    assert row.platform_labor == D("1800.00")
    assert row.total_cost == D("7030.00")
    assert row.effective_unit_cost == D("0.0003515")
    assert round_to_minor_unit(row.idle_capacity, "USD") == D("2927.90")  # 5,110.00 × (1 − 20,200,000 ÷ 47,304,000)
    assert row.hourly_price == D("3.50")


def test_worked_example_c_api_route():
    row = one_row(realtime_demand(), candidate_c())
    assert row.paid_requests == D(20_400_000)
    assert row.gpu_cost + row.failure_waste == D("16320.00")  # API cost of the productive requests + paid retries
    assert row.gpu_cost == D("16000.00")
    assert row.retry_waste == D("320.00")
    assert row.storage_network == D("150.00")
    assert row.platform_labor == D("180.00")
    assert row.total_cost == D("16650.00")
    assert row.effective_unit_cost == D("0.0008325")
    assert row.idle_capacity == 0
    assert row.hourly_price is None


def test_worked_example_cheapest_hour_is_not_the_cheapest_output():
    rows = {row.candidate_id: row for row in normalize(realtime_demand(), [candidate_a(), candidate_b(),
                                                                          candidate_c()])}
    assert rows["A"].hourly_price < rows["B"].hourly_price
    assert rows["B"].effective_unit_cost < rows["A"].effective_unit_cost < rows["C"].effective_unit_cost


def test_idle_capacity_is_part_of_gpu_cost_and_not_added_again():
    row = one_row(realtime_demand(), candidate_a())
    assert close(row.productive_capacity + row.idle_capacity, row.gpu_cost)
    assert row.total_cost == (row.gpu_cost + row.storage_network + row.platform_labor + row.other_costs
                              + row.failure_waste)
    # the bill is split once: useful work, retried work and idle time
    assert close(row.productive_capacity + row.idle_capacity + row.retry_waste, row.billed_compute)
    # productive = demand ÷ provisioned capacity over the period: 20e6 ÷ (3 × 5 req/s × 730 h × 3600 s) of the bill
    assert close(row.productive_capacity, D("6570.00") * D(20_000_000) / D(3 * 5 * 730 * 3600))


def test_unit_cost_is_kept_unrounded():
    row = one_row(realtime_demand(accepted_outputs=D(7), peak_rate=D(1)), candidate_a())
    assert row.total_cost == D("4110.00")  # 1 GPU × 730 h × 3.00 + 120.00 + 1,800.00 (its retries inside the bill)
    assert row.effective_unit_cost == D("4110.00") / 7
    assert len(row.effective_unit_cost.as_tuple().digits) == 34
    assert significant(row.effective_unit_cost, 6) == D("587.143")


def test_to_dict_keeps_exact_decimal_strings_and_provenance():
    data = one_row(realtime_demand(), candidate_a()).to_dict()
    assert data["effective_unit_cost"] == "0.0004245"
    assert data["billed_compute"] == "6570.00"
    assert data["kind"] == "gpu"
    assert {"kind": "quoted", "reference": "price-version-17", "by": "", "why": ""} in data["provenance"]["gpu_cost"]
    assert any(note["code"] == "idle_share" for note in data["notes"])


def test_every_figure_names_its_sources():
    row = one_row(realtime_demand(), candidate_a())
    assert QUOTE_A in row.provenance["gpu_cost"]
    assert MEASURED in row.provenance["idle_capacity"]
    assert ESTIMATED in row.provenance["platform_labor"]
    assert Provenance.quoted("storage-quote-4") in row.provenance["storage_network"]
    assert Provenance.measured("job-102") in row.provenance["failure_waste"]
    assert {p.kind for p in row.provenance["effective_unit_cost"]} == {
        ProvenanceKind.QUOTED, ProvenanceKind.MEASURED, ProvenanceKind.ESTIMATED}


def test_notes_report_latency_against_target_memory_margin_and_acceptance():
    row = one_row(
        realtime_demand(p95_latency_target_ms=D(800)),
        candidate_a(p95_latency_ms=D(950), memory_margin=D("0.18"),
                    provenance={**candidate_a().provenance, "p95_latency_ms": MEASURED, "memory_margin": MEASURED}),
    )
    notes = {note.code: note for note in row.notes}
    assert notes["p95_latency"].params["verdict"] == "misses"
    assert notes["memory_margin"].params["value"] == D("0.18")
    assert notes["quality_acceptance"].params["value"] == D(1)
    assert notes["idle_share"].text == "idle capacity is 49.0% of the GPU cost"
    assert notes["rate_not_given"].params["field"] == "failure_rate"


# --- sizing and billing by commercial model ---------------------------------------------------------------------


@pytest.mark.parametrize(("headroom", "gpus"), [(D(0), 3), (D("0.2"), 3), (D("0.3"), 4)])
def test_headroom_sizes_whole_gpus_above_the_peak(headroom, gpus):
    provenance = {**candidate_a().provenance, "headroom": ESTIMATED}
    row = one_row(realtime_demand(), candidate_a(headroom=headroom, provenance=provenance))
    assert row.gpus == gpus  # 12 req/s × (1 + headroom) ÷ 5 req/s per GPU, rounded up


def test_replicas_and_nodes_are_whole():
    # 2 GPUs per replica at 3 req/s per GPU → 6 req/s a replica → 2 replicas for 12 req/s → 4 GPUs → one 8-GPU node
    candidate = candidate_a(capacity_at_slo_per_gpu=D(3), gpus_per_replica=2, gpus_per_node=8,
                            price_unit="node_hour", unit_price=D("24.00"))
    row = one_row(realtime_demand(), candidate)
    assert (row.gpus, row.nodes) == (8, 1)
    assert row.billed_compute == D("24.00") * 730
    assert row.hourly_price == D("3.00")


def test_batch_work_is_sized_by_volume_after_quality_filter():
    """3.6M accepted at 90 % acceptance = 4M generated in 100 operating hours = 11.1 req/s → 6 GPUs at 2 req/s; billed
    by use (no granularity): the 4M ÷ (6 × 2 × 3600) = 92.59 h the work takes, not the 100-hour window."""
    demand = Demand(accepted_outputs=D(3_600_000), period_hours=D(730), peak_rate=D(0), operating_hours=D(100),
                    mode="batch", quality_acceptance=D("0.9"))
    row = one_row(demand, candidate_a(capacity_at_slo_per_gpu=D(2), retry_rate=D(0)))
    assert row.gpus == 6
    assert row.generated_outputs == D(4_000_000)
    assert close(row.gpu_cost, D(4_000_000) / 2 / 3600 * D("3.00"))  # GPU-seconds of work × price
    assert close(row.productive_capacity, row.gpu_cost)
    assert {note.params.get("basis") for note in row.notes if note.code == "sized_by"} == {"volume"}


def test_on_demand_hours_round_up_per_run_to_the_billing_granularity():
    """1M requests at 5 req/s per GPU on the 1 GPU the volume needs (1M ÷ 360,000 s = 2.8 req/s): 55.56 h of work in
    40 runs of 1.389 h, each billed by the hour → 40 × 2 h = 80 billed hours."""
    demand = Demand(accepted_outputs=D(1_000_000), period_hours=D(730), peak_rate=D(0), operating_hours=D(100),
                    mode="batch", runs_per_period=40)
    candidate = candidate_a(billing_granularity_hours=D(1), retry_rate=D(0),
                            provenance={"unit_price": QUOTE_A, "capacity_at_slo_per_gpu": MEASURED,
                                        "billing_granularity_hours": QUOTE_A})
    row = one_row(demand, candidate)
    assert row.gpus == 1
    assert row.billed_hours_per_gpu == D(80)
    assert row.gpu_cost == 80 * D("3.00")
    # the rounded-up hours are paid and idle
    assert close(row.productive_capacity, row.gpu_cost * D(1_000_000) / (5 * 3600 * 80))


def test_a_minimum_charge_per_run_is_billed():
    """40 runs of 1.389 h with a 2-hour minimum charge per run (no granularity) → 80 billed hours."""
    demand = Demand(accepted_outputs=D(1_000_000), period_hours=D(730), peak_rate=D(0), operating_hours=D(100),
                    mode="batch", runs_per_period=40)
    candidate = candidate_a(minimum_billed_hours=D(2), retry_rate=D(0),
                            provenance={"unit_price": QUOTE_A, "capacity_at_slo_per_gpu": MEASURED,
                                        "minimum_billed_hours": QUOTE_A})
    assert one_row(demand, candidate).billed_hours_per_gpu == D(80)


def test_reserved_hours_are_billed_regardless_of_use():
    half_time = realtime_demand(operating_hours=D(365), accepted_outputs=D(10_000_000))
    row = one_row(half_time, candidate_b(retry_rate=D(0)))
    assert row.gpu_cost == D("5110.00")
    assert close(row.productive_capacity, D("5110.00") * D(10_000_000) / (2 * 9 * 3600 * 730))


def test_reserved_short_commitment_without_overage_price_names_the_field():
    with pytest.raises(NormalizationError) as error:
        normalize(realtime_demand(), [candidate_b(committed_hours=D(500))])
    assert (error.value.candidate, error.value.field) == ("B", "committed_hours")


def test_reserved_overage_hours_are_billed_at_the_overage_price():
    provenance = {**candidate_b().provenance, "overage_price": QUOTE_B}
    row = one_row(realtime_demand(), candidate_b(committed_hours=D(500), overage_price=D("4.00"),
                                                 provenance=provenance))
    assert row.billed_compute == 2 * (500 * D("3.50") + 230 * D("4.00"))
    assert row.gpu_cost_parts["overage"] == 2 * 230 * D("4.00")


def test_minimum_commitment_tops_up_gpu_cost_as_idle():
    provenance = {**candidate_a().provenance, "minimum_commitment": QUOTE_A}
    row = one_row(realtime_demand(), candidate_a(minimum_commitment=D("8000.00"), provenance=provenance))
    assert row.billed_compute == D("8000.00")
    assert row.gpu_cost_parts["minimum_commitment_top_up"] == D("1430.00")
    assert round_to_minor_unit(row.idle_capacity, "USD") == D("4633.33")  # 3,203.33 + the 1,430.00 top-up
    assert round_to_minor_unit(row.retry_waste, "USD") == D("33.33")  # the retries' share of the GPU time, as before


def test_spot_preemption_rework_is_failure_waste():
    provenance = {"unit_price": QUOTE_A, "capacity_at_slo_per_gpu": MEASURED,
                  "spot_preemptions_per_hour": Provenance.measured("job-401"), "spot_rework_hours": ESTIMATED}
    candidate = candidate_a(commercial_model="spot", unit_price=D("1.20"), retry_rate=D(0),
                            spot_preemptions_per_hour=D("0.02"), spot_rework_hours=D("0.5"), provenance=provenance)
    row = one_row(realtime_demand(), candidate)
    assert row.gpu_cost == 3 * 730 * D("1.20")
    assert row.preemption_rework == 3 * 730 * D("0.01") * D("1.20")
    assert row.failure_waste == row.preemption_rework


def purchase_candidate(**changes):
    fields = {"capex_per_node": D(240_000), "amortisation_months": D(36), "power_kw_per_node": D("10.2"),
              "pue": D("1.3"), "energy_price_per_kwh": D("0.12"), "colocation_per_kw_month": D(150),
              "maintenance_per_node_year": D(12_000), "capacity_at_slo_per_gpu": D(2)}
    candidate = CandidateInput(
        id="P", label="Owned 8×H200", kind="purchase", commercial_model="purchase", gpus_per_node=8,
        cost_lines=self_hosted_lines(), provenance={name: Provenance.quoted("purchase-quote-9") for name in fields},
        **fields,
    )
    return dataclasses.replace(candidate, **changes)


def test_purchase_is_amortised_with_power_pue_colocation_and_maintenance():
    row = one_row(realtime_demand(), purchase_candidate())
    assert (row.gpus, row.nodes) == (8, 1)  # 12 req/s ÷ 2 → 6 GPUs → one 8-GPU node
    parts = row.gpu_cost_parts
    assert close(parts["amortised_capex"], D(240_000) / 36)
    assert parts["energy"] == D("10.2") * D("1.3") * 730 * D("0.12")
    assert parts["colocation"] == D("10.2") * 150
    assert parts["maintenance"] == D(1000)
    assert row.gpu_cost == sum(parts.values())
    assert close(row.hourly_price, row.gpu_cost / (8 * 730))
    assert row.billed_hours_per_gpu == D(730)


def test_purchase_counts_the_whole_period_as_capacity():
    part_time = realtime_demand(operating_hours=D(365), accepted_outputs=D(10_000_000))
    row = one_row(part_time, purchase_candidate())
    assert close(row.productive_share, D(10_000_000) / (8 * 2 * 3600 * 730))
    assert "idle_power_not_counted" in {note.code for note in row.notes}


def test_candidate_quality_acceptance_overrides_the_demand():
    provenance = {**candidate_c().provenance, "quality_acceptance": Provenance.measured("job-303")}
    row = one_row(realtime_demand(), candidate_c(quality_acceptance=D("0.8"), provenance=provenance))
    assert row.generated_outputs == D(25_000_000)
    assert row.paid_requests == D(25_500_000)
    assert row.accepted_outputs == D(20_000_000)
    assert row.effective_unit_cost == (D(25_500_000) * D("0.0008") + D(330)) / D(20_000_000)


def test_other_currency_is_converted_at_the_stated_rate():
    rate = ExchangeRate("EUR", D("1.10"), Provenance.quoted("ecb-2025-06-02"))
    row = one_row(realtime_demand(), candidate_a(currency="EUR"), exchange_rates=[rate])
    assert row.currency == "USD"
    assert row.billed_compute == D("6570.00") * D("1.10")
    assert row.total_cost == D("8490.00") * D("1.10")
    assert row.hourly_price == D("3.30")
    assert rate.provenance in row.provenance["effective_unit_cost"]


# --- bad inputs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("build", "candidate", "field"), [
    (lambda: candidate_a(unit_price=D("-3.00")), "A", "unit_price"),
    (lambda: candidate_a(capacity_at_slo_per_gpu=D(0)), "A", "capacity_at_slo_per_gpu"),
    (lambda: candidate_c(quality_acceptance=D("1.2"), provenance={**candidate_c().provenance,
                                                                 "quality_acceptance": MEASURED}),
     "C", "quality_acceptance"),
    (lambda: candidate_c(api_output_price_per_million=D("-1.60")), "C", "api_output_price_per_million"),
    (lambda: candidate_a(unit_price=3.0), "A", "unit_price"),
    (lambda: candidate_a(unit_price="NaN"), "A", "unit_price"),
    (lambda: candidate_a(retry_rate=D("-0.01")), "A", "retry_rate"),
    (lambda: candidate_a(failure_rate=D(1), provenance={**candidate_a().provenance, "failure_rate": MEASURED}),
     "A", "failure_rate"),
    (lambda: candidate_a(provenance={"unit_price": QUOTE_A, "retry_rate": MEASURED}), "A",
     "capacity_at_slo_per_gpu"),
    (lambda: candidate_a(api_input_price_per_million=D(1)), "A", "api_input_price_per_million"),
    (lambda: candidate_a(commercial_model="purchase"), "A", "commercial_model"),
    (lambda: candidate_a(price_unit="million_tokens"), "A", "price_unit"),
    (lambda: candidate_a(price_unit="per_fortnight"), "A", "price_unit"),
    (lambda: candidate_a(capacity_at_slo_per_gpu=None), "A", "capacity_at_slo_per_gpu"),
    (lambda: candidate_a(cost_lines=(CostLine(CostKind.STORAGE, D(-5), QUOTE_A),)), "A", "cost_lines[0].unit_price"),
    (lambda: purchase_candidate(pue=D("0.9")), "P", "pue"),
    (lambda: candidate_a(commercial_model="spot", spot_preemptions_per_hour=D(2), spot_rework_hours=D(1),
                         provenance={**candidate_a().provenance, "spot_preemptions_per_hour": MEASURED,
                                     "spot_rework_hours": MEASURED}), "A", "spot_rework_hours"),
    (lambda: candidate_a(provenance={**candidate_a().provenance, "unit_pryce": QUOTE_A}), "A", "unit_pryce"),
])
def test_bad_candidate_input_names_candidate_and_field(build, candidate, field):
    with pytest.raises(NormalizationError) as error:
        build()
    assert (error.value.candidate, error.value.field) == (candidate, field)
    assert candidate in str(error.value)
    assert field in str(error.value)


@pytest.mark.parametrize(("changes", "field"), [
    ({"quality_acceptance": D("1.01")}, "quality_acceptance"),
    ({"quality_acceptance": D(0)}, "quality_acceptance"),
    ({"accepted_outputs": D(0)}, "accepted_outputs"),
    ({"operating_hours": D(800)}, "operating_hours"),
    ({"peak_rate": D(0)}, "peak_rate"),
    ({"period_hours": D("-730")}, "period_hours"),
    ({"mode": "streaming"}, "mode"),
])
def test_bad_demand_names_the_field(changes, field):
    with pytest.raises(NormalizationError) as error:
        realtime_demand(**changes)
    assert (error.value.candidate, error.value.field) == (None, field)


def test_missing_currency_rate_names_candidate_and_currency():
    with pytest.raises(NormalizationError) as error:
        normalize(realtime_demand(), [candidate_a(), candidate_b(currency="EUR")])
    assert (error.value.candidate, error.value.field) == ("B", "currency")
    assert "EUR" in error.value.message


def test_duplicate_candidate_ids_are_refused():
    with pytest.raises(NormalizationError) as error:
        normalize(realtime_demand(), [candidate_a(), candidate_b(id="A")])
    assert error.value.field == "id"


def test_training_demand_is_sent_to_the_training_formula():
    with pytest.raises(NormalizationError) as error:
        normalize(realtime_demand(mode="training"), [candidate_a()])
    assert error.value.field == "mode"


# --- training and media -----------------------------------------------------------------------------------------


def test_training_cost_per_completed_run():
    provenance = {"price_per_gpu_hour": QUOTE_A, "token_budget": ESTIMATED,
                  "throughput_tokens_per_second": MEASURED, "checkpoint_interval_hours": ESTIMATED,
                  "checkpoint_write_hours": MEASURED, "failures_per_gpu_hour": Provenance.measured("job-501"),
                  "restart_hours": MEASURED}
    run = TrainingRun(
        id="T", label="8×H100 fine-tune", gpus=8, price_per_gpu_hour=D("2.00"), token_budget=D(3_600_000_000),
        throughput_tokens_per_second=D(10_000), checkpoint_interval_hours=D(10), checkpoint_write_hours=D("0.1"),
        failures_per_gpu_hour=D("0.001"), restart_hours=D("0.5"), provenance=provenance,
        cost_lines=(CostLine(CostKind.STORAGE, D(50), QUOTE_A), CostLine(CostKind.NETWORK, D(20), QUOTE_A),
                    CostLine(CostKind.PLATFORM_LABOR, D(100), ESTIMATED, quantity=D(3), unit="hour")),
    )
    row = training_run_cost(run)
    assert row.compute_hours == D(100)  # 3.6e9 tokens ÷ 10,000 tokens/s
    assert row.checkpoints == 10
    assert row.checkpoint_hours == D(1)
    assert row.expected_failures == D("0.808")  # 0.001 × 8 GPUs × 101 h
    assert row.failed_run_waste_hours == D("4.444")  # 0.808 × (10 h ÷ 2 + 0.5 h restart)
    assert row.gpu_compute == D(1600)
    assert row.checkpointing == D(16)
    assert row.failed_run_waste == D("71.104")
    assert row.cost_per_completed_run == D("2057.104")
    assert MEASURED in row.provenance["gpu_compute"]


def test_training_run_needs_provenance_and_positive_throughput():
    with pytest.raises(NormalizationError) as error:
        TrainingRun(id="T", label="x", gpus=8, price_per_gpu_hour=D(2), token_budget=D(1),
                    throughput_tokens_per_second=D(0), checkpoint_interval_hours=D(1))
    assert (error.value.candidate, error.value.field) == ("T", "throughput_tokens_per_second")
    with pytest.raises(NormalizationError) as error:
        TrainingRun(id="T", label="x", gpus=8, price_per_gpu_hour=D(2), token_budget=D(1),
                    throughput_tokens_per_second=D(1), checkpoint_interval_hours=D(1))
    assert error.value.field == "price_per_gpu_hour"


def test_media_cost_per_accepted_asset():
    """10,000 accepted images at 80 % acceptance = 12,500 renders, + 5 % failed renders = 13,125 attempts at 0.05/s
    on 1 GPU = 262,500 s = 72.92 h billed by use (not the 100-hour window) × 2.00 = 145.83; the failed renders' share
    145.83 × 0.05 ÷ 1.05 = 6.94 is the waste; (145.83 + 30 + 25 + 5 + 80) ÷ 10,000 = 0.0285833 per accepted image."""
    demand = Demand(accepted_outputs=D(10_000), period_hours=D(730), peak_rate=D(0), operating_hours=D(100),
                    mode="media", quality_acceptance=D("0.8"))
    candidate = CandidateInput(
        id="M", label="L40S image", kind="gpu", commercial_model="on_demand", unit_price=D("2.00"),
        capacity_at_slo_per_gpu=D("0.05"), failure_rate=D("0.05"),
        cost_lines=(CostLine(CostKind.STORAGE, D(30), QUOTE_A), CostLine(CostKind.MODERATION, D(25), QUOTE_A),
                    CostLine(CostKind.QUEUE_OVERHEAD, D(5), ESTIMATED),
                    CostLine(CostKind.OPERATOR_REVIEW, D(40), ESTIMATED, quantity=D(2), unit="hour")),
        provenance={"unit_price": QUOTE_A, "capacity_at_slo_per_gpu": MEASURED, "failure_rate": MEASURED},
    )
    row = one_row(demand, candidate)
    bill = D(262_500) / 3600 * D("2.00")
    assert close(row.billed_compute, bill)
    assert close(row.failure_loss, bill * D("0.05") / D("1.05"))
    assert close(row.gpu_cost + row.failure_loss, bill)
    assert row.other_costs == D(110)
    assert close(media_cost_per_accepted_asset(row), (bill + 140) / 10_000)
    assert close(row.effective_unit_cost, (bill + 140) / 10_000)


# --- break-even and sensitivity ---------------------------------------------------------------------------------


def test_reserve_vs_on_demand_break_even_utilisation():
    assert reserve_vs_on_demand_utilisation(D("2.10"), D("3.00")) == D("0.7")
    with pytest.raises(NormalizationError) as error:
        reserve_vs_on_demand_utilisation(D("2.10"), D(0))
    assert error.value.field == "on_demand_rate"


def test_buy_vs_rent_months():
    months = buy_vs_rent_months(D(100_000), D(10_000), D(4_000))
    assert significant(months, 6) == D("16.6667")
    assert buy_vs_rent_months(D(100_000), D(4_000), D(4_000)) is None  # renting never costs more: no break-even


def test_api_vs_self_host_tokens_per_month():
    blended = blended_api_price_per_million(D("0.40"), D("1.60"), D(800), D(300))
    assert blended == D(800) / D(1100)
    tokens = api_vs_self_host_tokens_per_month(D("7081.10"), blended)
    assert abs(tokens * blended / 1_000_000 - D("7081.10")) < D("1e-20")
    with pytest.raises(NormalizationError):
        api_vs_self_host_tokens_per_month(D(5000), D(0))


def test_sensitivity_moves_the_api_route_with_price_and_acceptance():
    bars = {bar.factor: bar for bar in sensitivity(realtime_demand(), candidate_c())}
    assert bars["price"].low == (D(16000) * D("0.8") * D("1.02") + D(330)) / D(20_000_000)
    assert bars["price"].high == (D(16000) * D("1.2") * D("1.02") + D(330)) / D(20_000_000)
    assert bars["acceptance"].high == bars["acceptance"].base  # acceptance is capped at 1
    assert bars["acceptance"].low > bars["acceptance"].base
    spreads = [bar.spread for bar in sensitivity(realtime_demand(), candidate_c())]
    assert spreads == sorted(spreads, reverse=True)


# --- properties -------------------------------------------------------------------------------------------------

money = st.decimals(min_value=D("0.01"), max_value=D(100), places=2)
rates = st.decimals(min_value=D(0), max_value=D("0.2"), places=3)


@st.composite
def gpu_cases(draw):
    peak = draw(st.decimals(min_value=D("0.1"), max_value=D(500), places=1))
    demand = Demand(
        accepted_outputs=draw(st.integers(min_value=1, max_value=10**9)), period_hours=D(730),
        peak_rate=peak, operating_hours=draw(st.integers(min_value=1, max_value=730)), mode="realtime",
        quality_acceptance=draw(st.decimals(min_value=D("0.05"), max_value=D(1), places=2)),
        runs_per_period=draw(st.integers(min_value=1, max_value=31)),
    )
    model = draw(st.sampled_from(["on_demand", "reserved", "spot"]))
    changes = {
        "commercial_model": model,
        "unit_price": draw(money),
        "capacity_at_slo_per_gpu": draw(st.decimals(min_value=D("0.01"), max_value=D(50), places=2)),
        "retry_rate": draw(rates), "failure_rate": draw(rates),
        "headroom": draw(st.decimals(min_value=D(0), max_value=D(1), places=2)),
        "gpus_per_node": draw(st.sampled_from([1, 2, 4, 8])),
        "billing_granularity_hours": draw(st.sampled_from([None, D(1), D("0.25")])),
    }
    if model == "reserved":
        changes["committed_hours"] = D(730)
    if model == "spot":
        changes["spot_preemptions_per_hour"] = D("0.01")
        changes["spot_rework_hours"] = D("0.5")
    changes["provenance"] = {name: MEASURED for name, value in changes.items()
                             if isinstance(value, Decimal) and value != 0}
    return demand, candidate_a(**changes)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_cases())
def test_rows_are_consistent_for_any_valid_gpu_candidate(case):
    demand, candidate = case
    row = one_row(demand, candidate)
    money_fields = ("gpu_cost", "productive_capacity", "idle_capacity", "storage_network", "platform_labor",
                    "failure_waste", "total_cost", "effective_unit_cost", "hourly_price")
    assert all(isinstance(getattr(row, name), Decimal) and getattr(row, name).is_finite() for name in money_fields)
    tolerance = row.total_cost * D("1e-30")
    assert -tolerance <= row.idle_capacity <= row.gpu_cost + tolerance
    assert abs(row.productive_capacity + row.idle_capacity - row.gpu_cost) <= tolerance
    assert abs(row.total_cost - (row.gpu_cost + row.storage_network + row.platform_labor + row.other_costs
                                 + row.failure_waste)) <= tolerance
    assert abs(row.effective_unit_cost * row.accepted_outputs - row.total_cost) <= tolerance
    # enough whole GPUs for the peak (rejected outputs and retries are sent again), and one node fewer would not be
    waste = 1 + candidate.retry_rate + candidate.failure_rate
    needed = demand.peak_rate / demand.quality_acceptance * waste * (1 + candidate.headroom)
    assert row.gpus * candidate.capacity_at_slo_per_gpu >= needed
    mean = row.generated_outputs * (1 + candidate.retry_rate + candidate.failure_rate) / (demand.operating_hours * 3600)
    required = max(needed, mean * (1 + candidate.headroom))
    assert (row.gpus - candidate.gpus_per_node) * candidate.capacity_at_slo_per_gpu < required


@settings(max_examples=75, deadline=None)
@given(gpu_cases(), st.decimals(min_value=D("0.01"), max_value=D(10), places=2))
def test_a_higher_price_never_lowers_the_unit_cost(case, increase):
    demand, candidate = case
    dearer = dataclasses.replace(candidate, unit_price=candidate.unit_price + increase)
    assert one_row(demand, dearer).effective_unit_cost > one_row(demand, candidate).effective_unit_cost


numbers = st.one_of(
    st.decimals(min_value=D(-10), max_value=D(10), places=2),
    st.just(D(0)),
    st.sampled_from([D("NaN"), D("Infinity"), "abc", 1.5, -1]),
)


@settings(max_examples=200, deadline=None)
@given(price=numbers, capacity=numbers, acceptance=numbers, retry=numbers, headroom=numbers, peak=numbers)
def test_any_input_gives_a_row_or_a_named_error_never_a_decimal_fault(price, capacity, acceptance, retry, headroom,
                                                                       peak):
    try:
        demand = realtime_demand(peak_rate=peak)
        candidate = candidate_a(
            unit_price=price, capacity_at_slo_per_gpu=capacity, quality_acceptance=acceptance, retry_rate=retry,
            headroom=headroom,
            provenance={"unit_price": QUOTE_A, "capacity_at_slo_per_gpu": MEASURED, "quality_acceptance": MEASURED,
                        "retry_rate": MEASURED, "headroom": ESTIMATED},
        )
        row = one_row(demand, candidate)
    except NormalizationError as error:
        assert error.field in {"unit_price", "capacity_at_slo_per_gpu", "quality_acceptance", "retry_rate",
                               "headroom", "peak_rate"}
    else:
        assert row.effective_unit_cost.is_finite()
        assert row.effective_unit_cost > 0


# --- units, acceptance-driven load ----------------------------------------------------------------------------


def test_rejected_outputs_add_load_at_the_peak():
    """Peak 12 req/s at 50 % acceptance: 24 req/s must be generated (× 1.01 retries = 24.24) ÷ 5 → 5 GPUs, not 3."""
    row = one_row(realtime_demand(quality_acceptance=D("0.5")), candidate_a())
    assert row.gpus == 5


def test_the_acceptance_bar_of_the_sensitivity_chart_moves_for_a_peak_sized_service():
    bars = {bar.factor: bar for bar in sensitivity(realtime_demand(quality_acceptance=D("0.8")), candidate_a())}
    assert bars["acceptance"].low != bars["acceptance"].high


def test_units_without_a_conversion_are_refused_naming_both():
    demand = realtime_demand(unit=WorkUnit.RECORD, peak_rate=D(0), mode="batch")
    with pytest.raises(UnitMismatchError) as error:
        normalize(demand, [candidate_a(capacity_unit=WorkUnit.REQUEST)])
    assert error.value.field == "capacity_unit"
    assert "records" in error.value.message and "requests" in error.value.message


def test_a_stated_conversion_chain_converts_and_is_cited():
    """1,000,000 records, 4 requests per record (declared), 500 output tokens per request (measured); capacity in
    output tokens: 1,000,000 × 4 × 500 = 2e9 tokens ÷ 2,500 tokens/s = 800,000 GPU-seconds."""
    declared = Provenance.estimated("data lead", "pipeline makes 4 calls per record")
    demand = Demand(accepted_outputs=D(1_000_000), period_hours=D(730), peak_rate=D(0), operating_hours=D(730),
                    mode="batch", unit=WorkUnit.RECORD,
                    conversions=(Conversion(WorkUnit.RECORD, WorkUnit.REQUEST, D(4), declared),))
    tokens = Conversion(WorkUnit.REQUEST, WorkUnit.OUTPUT_TOKEN, D(500), Provenance.measured("job-7"))
    candidate = candidate_a(capacity_at_slo_per_gpu=D(2500), capacity_unit=WorkUnit.OUTPUT_TOKEN, retry_rate=D(0),
                            conversions=(tokens,))
    row = one_row(demand, candidate)
    assert close(row.billed_compute, D(800_000) / 3600 * D("3.00"))
    assert declared in row.provenance["gpu_cost"] and Provenance.measured("job-7") in row.provenance["gpu_cost"]
    assert row.unit == "record" and row.capacity_unit == "output_token"


def test_a_conversion_without_a_source_is_refused():
    with pytest.raises(NormalizationError) as error:
        candidate_a(conversions=(Conversion(WorkUnit.REQUEST, WorkUnit.OUTPUT_TOKEN, D(500)),))
    assert error.value.field == "conversions[0]"


def test_fine_tuning_is_costed_per_accepted_checkpoint():
    """160.00 a run at 50 % checkpoint acceptance = 320.00 per accepted checkpoint."""
    run = TrainingRun(id="T", label="8×H100", gpus=8, price_per_gpu_hour=D("2.00"), token_budget=D(1_080_000_000),
                      throughput_tokens_per_second=D(30_000), checkpoint_interval_hours=D(1), acceptance=D("0.5"),
                      unit=WorkUnit.CHECKPOINT,
                      provenance={"price_per_gpu_hour": QUOTE_A, "token_budget": ESTIMATED,
                                  "throughput_tokens_per_second": MEASURED, "checkpoint_interval_hours": ESTIMATED,
                                  "acceptance": ESTIMATED})
    row = training_run_cost(run)
    assert row.cost_per_completed_run == D("160.00")
    assert row.cost_per_accepted_output == D("320.00")
    assert ESTIMATED in row.provenance["cost_per_accepted_output"]


# --- the memory floor: the peak sessions' KV cache must be held at once -------------------------------------------

MEMORY_LAYOUT = Provenance.estimated("memory layout", "4 replicas × 1 GPU (TP 1, PP 1), 50 sessions each on H100")


def _memory_floored(floor, **changes):
    provenance = {**candidate_a().provenance, "minimum_gpus_for_memory": MEMORY_LAYOUT}
    return candidate_a(capacity_at_slo_per_gpu=D(7), minimum_gpus_for_memory=floor,
                       provenance={**provenance, "capacity_at_slo_per_gpu": MEASURED}, **changes)


def test_a_fleet_the_rate_sizes_at_2_gpus_but_memory_at_4_is_priced_with_4():
    """Rate: 12 × 1.01 = 12.12 req/s ÷ 7 req/s per GPU → ⌈1.73⌉ = 2 GPUs. Memory: the layout needs 4 whole GPUs to
    hold the peak sessions at once → 4 GPUs, billed 4 × 730 h × 3.00 = 8,760.00; total 8,760.00 + 120.00 + 1,800.00 =
    10,680.00; per accepted response 10,680.00 ÷ 20,000,000 = 0.000534 (without the floor: 2 × 730 × 3.00 = 4,380.00,
    6,300.00 in all, 0.000315)."""
    without = one_row(realtime_demand(), _memory_floored(None))
    assert without.gpus == 2 and without.effective_unit_cost == D("0.000315")
    row = one_row(realtime_demand(), _memory_floored(4))
    assert row.gpus == 4 and row.nodes == 4
    assert row.billed_compute == D("8760.00") and row.total_cost == D("10680.00")
    assert row.effective_unit_cost == D("0.000534")
    notes = {note.code: note for note in row.notes}
    assert notes["sized_by"].params == {"basis": "memory", "gpus": 4, "nodes": 4}
    assert notes["memory_floor"].params == {"minimum_gpus": 4}
    assert MEMORY_LAYOUT in row.provenance["gpu_cost"]  # the estimate that set the fleet is a source of its cost


def test_a_memory_floor_below_the_rate_changes_nothing():
    """Worked example A: 3 GPUs by the rate; a layout of 1 GPU does not move it (8,490.00, 0.0004245)."""
    provenance = {**candidate_a().provenance, "minimum_gpus_for_memory": MEMORY_LAYOUT}
    row = one_row(realtime_demand(), candidate_a(minimum_gpus_for_memory=1, provenance=provenance))
    assert row.gpus == 3 and row.total_cost == D("8490.00") and row.effective_unit_cost == D("0.0004245")
    assert "memory_floor" not in {note.code for note in row.notes}
    assert MEMORY_LAYOUT not in row.provenance["gpu_cost"]


def test_the_memory_floor_counts_whole_replicas():
    """2 GPUs per replica, a floor of 3 GPUs → ⌈3/2⌉ = 2 replicas = 4 GPUs (the rate: ⌈12.12 ÷ (7 × 2)⌉ = 1)."""
    row = one_row(realtime_demand(), _memory_floored(3, gpus_per_replica=2))
    assert row.gpus == 4


def test_a_memory_floor_needs_its_provenance_and_a_fleet():
    with pytest.raises(NormalizationError) as error:
        candidate_a(minimum_gpus_for_memory=4)
    assert error.value.field == "minimum_gpus_for_memory" and "provenance" in error.value.message
    with pytest.raises(NormalizationError) as error:
        candidate_c(minimum_gpus_for_memory=4,
                    provenance={**candidate_c().provenance, "minimum_gpus_for_memory": MEMORY_LAYOUT})
    assert error.value.field == "minimum_gpus_for_memory"
    with pytest.raises(NormalizationError):
        _memory_floored(0)
