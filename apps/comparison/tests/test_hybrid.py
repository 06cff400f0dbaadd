"""The hybrid plan (apps/comparison/hybrid.py, pure): the profile, the exact search, the break-even points, and the
parts built from the cost model's own rows. Figures are the module docstring's worked case, computed by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from apps.comparison import cost_model, hybrid
from apps.comparison.cost_model import CandidateInput, Demand, Provenance

D = Decimal
QUOTE = Provenance.quoted("price-version-1")
MEASURED = Provenance.measured("job-1")


def ten_to_one_demand(**changes) -> Demand:
    """6,557,760 accepted requests in 720 operating hours: mean 9,108/h = 2.53 req/s, peak 25.3 req/s (10:1)."""
    values = {"accepted_outputs": D(6_557_760), "period_hours": D(730), "peak_rate": D("25.3"),
              "operating_hours": D(720), "mode": "realtime", **changes}
    return Demand(**values)


def reserved_input(**changes) -> CandidateInput:
    values = {"id": "R", "label": "Reserved", "kind": "gpu", "commercial_model": "reserved", "unit_price": D("2.00"),
              "committed_hours": D(720), "capacity_at_slo_per_gpu": D(1),
              "provenance": {"unit_price": QUOTE, "committed_hours": QUOTE, "capacity_at_slo_per_gpu": MEASURED},
              **changes}
    return CandidateInput(**values)


def on_demand_input(**changes) -> CandidateInput:
    values = {"id": "O", "label": "On demand", "kind": "gpu", "commercial_model": "on_demand",
              "unit_price": D("4.00"), "billing_granularity_hours": D(1), "capacity_at_slo_per_gpu": D(1),
              "provenance": {"unit_price": QUOTE, "billing_granularity_hours": QUOTE,
                             "capacity_at_slo_per_gpu": MEASURED}, **changes}
    return CandidateInput(**values)


def api_input(**changes) -> CandidateInput:
    """1,000 output tokens per request at 2.50 per 1M: 0.0025 per request."""
    values = {"id": "A", "label": "API", "kind": "api", "commercial_model": "api",
              "api_input_price_per_million": D(0), "api_output_price_per_million": D("2.50"),
              "mean_input_tokens": D(0), "mean_output_tokens": D(1000),
              "provenance": {"api_output_price_per_million": QUOTE, "mean_output_tokens": MEASURED}, **changes}
    return CandidateInput(**values)


def parts_from_rows(demand, candidates):
    rows = {row.candidate_id: row for row in cost_model.normalize(demand, candidates)}
    by_id = {candidate.id: candidate for candidate in candidates}
    peak = hybrid.peak_outputs_per_hour(demand, candidates)
    return rows, {
        "reserved": hybrid.reserved_part(demand, by_id["R"], rows["R"], rate=D(1), peak=peak),
        "on_demand": hybrid.on_demand_part(demand, by_id["O"], rows["O"], rate=D(1), peak=peak),
        "api": hybrid.api_part(by_id["A"], rows["A"], rate=D(1)),
    }


def ten_to_one_profile(demand):
    return hybrid.two_level_profile(
        accepted_outputs=demand.accepted_outputs, peak_per_hour=D("25.3") * 3600,
        operating_hours=demand.operating_hours, window_hours=D(24),
    )


def test_the_two_level_profile_holds_the_peak_for_one_hour_and_spreads_the_rest():
    """30 windows of 24 h; 6,557,760 ÷ 30 = 218,592 per window; peak 25.3 × 3,600 = 91,080/h for 1 h; base
    (218,592 − 91,080) ÷ 23 = 5,544/h. Mean 9,108/h: peak ÷ mean = 10."""
    profile = ten_to_one_profile(ten_to_one_demand())
    assert profile.shape == "two_level"
    assert profile.windows == 30
    assert [(block.hours, block.load) for block in profile.blocks] == [(1, 91_080), (23, 5_544)]
    assert profile.volume == 6_557_760
    assert profile.peak / profile.mean == 10


def test_the_profile_of_a_volume_too_small_for_the_peak_hour_is_the_peak_then_idle():
    """100 outputs per 24-h window, peak 400/h: the peak lasts 100 ÷ 400 = 0.25 h, the other 23.75 h are idle."""
    profile = hybrid.two_level_profile(accepted_outputs=D(3000), peak_per_hour=D(400), operating_hours=D(720),
                                       window_hours=D(24))
    assert profile.shape == "peak_only"
    assert [(block.hours, block.load) for block in profile.blocks] == [(D("0.25"), 400), (D("23.75"), 0)]


def test_a_ten_to_one_peak_mix_beats_every_pure_option():
    """The module docstring's worked case. Parts from the cost model's rows: reserved 2.00 × 720 = 1,440.00 per GPU,
    on demand 4.00 per GPU-hour billed hourly, API 0.0025 per request; 3,600 requests per GPU-hour.
    Two base GPUs (7,200/h ≥ 5,544/h) serve every base hour and 7,200 of the peak hour's 91,080; the other 83,880 go
    to ⌊83,880 ÷ 3,600⌋ = 23 burst GPUs (82,800, 23 × 4.00 = 92.00 per window) and 1,080 to the API (2.70 per window):
    2 × 1,440 + 30 × 92 + 30 × 2.70 = 2,880 + 2,760 + 81 = 5,721.00.
    Pure options (the rows): 26 reserved GPUs × 1,440 = 37,440.00; 26 on-demand GPUs × 720 h × 4.00 = 74,880.00;
    the API 6,557,760 × 0.0025 = 16,394.40."""
    demand = ten_to_one_demand()
    candidates = [reserved_input(), on_demand_input(), api_input()]
    rows, parts = parts_from_rows(demand, candidates)
    assert (rows["R"].total_cost, rows["O"].total_cost, rows["A"].total_cost) == (37_440, 74_880, D("16394.4"))
    plan = hybrid.cheapest_mix(ten_to_one_profile(demand), **parts, accepted_outputs=demand.accepted_outputs)
    assert (plan.base_gpus, plan.burst_gpus, plan.api_outputs) == (2, 23, 1_080 * 30)
    assert [part.billed for part in plan.parts] == [2_880, 2_760, 81]
    assert plan.total_cost == 5_721
    assert plan.total_cost < min(row.total_cost for row in rows.values())
    with cost_model.localcontext(cost_model.DECIMAL_CONTEXT):
        assert plan.effective_unit_cost == D(5_721) / D(6_557_760)
    peak, base = plan.blocks
    assert (peak.base_outputs, peak.burst_units, peak.burst_outputs, peak.api_outputs) == (7_200, 23, 82_800, 1_080)
    assert (base.base_outputs, base.burst_units, base.api_outputs) == (5_544, 0, 0)


def test_the_break_even_points_of_the_worked_case():
    """u* = (1,440 ÷ (3,600 × 720)) ÷ (4.00 ÷ 3,600) = 0.5 of the 720 operating hours = 360 h; a burst GPU beats the
    API in an hour it serves more than 4.00 ÷ 0.0025 = 1,600 requests; a base GPU beats the API above
    1,440 ÷ 0.0025 = 576,000 requests a period."""
    demand = ten_to_one_demand()
    _rows, parts = parts_from_rows(demand, [reserved_input(), on_demand_input(), api_input()])
    plan = hybrid.cheapest_mix(ten_to_one_profile(demand), **parts)
    assert plan.break_even.reserve_utilisation == D("0.5")
    assert plan.break_even.reserve_hours == 360
    assert plan.break_even.burst_outputs_per_hour == 1_600
    assert plan.break_even.base_outputs_vs_api == 576_000


def test_the_search_is_exact_over_the_subsets_of_parts():
    """Without the API the 1,080 left at the peak need a 24th burst GPU (4.00): 2,880 + 30 × 96 = 5,760.00, dearer
    than the three-part 5,721.00. Without burst, the peak hour's rest goes to the API: with 2 base GPUs
    30 × 83,880 × 0.0025 = 6,291 + 2,880 = 9,171; with 3, 30 × 80,280 × 0.0025 = 6,021 + 4,320 = 10,341;
    with 1, 30 × (23 × 1,944 + 87,480) × 0.0025 = 9,914.40 + 1,440 = 11,354.40: 2 base GPUs, 9,171.00."""
    demand = ten_to_one_demand()
    _rows, parts = parts_from_rows(demand, [reserved_input(), on_demand_input(), api_input()])
    profile = ten_to_one_profile(demand)
    no_api = hybrid.cheapest_mix(profile, reserved=parts["reserved"], on_demand=parts["on_demand"])
    assert (no_api.total_cost, no_api.base_gpus, no_api.burst_gpus) == (5_760, 2, 24)
    no_burst = hybrid.cheapest_mix(profile, reserved=parts["reserved"], api=parts["api"])
    assert (no_burst.total_cost, no_burst.base_gpus) == (9_171, 2)


def test_a_part_is_charged_its_cost_lines_only_when_the_mix_uses_it():
    """A 3,000.00 labor line on the API route makes the 81.00 of overflow dear: 24 burst GPUs instead (5,760.00), and
    the unused API's line is not charged."""
    demand = ten_to_one_demand()
    _rows, parts = parts_from_rows(demand, [reserved_input(), on_demand_input(), api_input()])
    api = hybrid.ApiPart(id="A", label="API", cost_per_output=parts["api"].cost_per_output,
                         fixed_costs={"platform_labor": D(3000)})
    plan = hybrid.cheapest_mix(ten_to_one_profile(demand), reserved=parts["reserved"], on_demand=parts["on_demand"],
                               api=api)
    assert plan.total_cost == 5_760
    assert plan.platform_labor == 0
    assert [part.part for part in plan.used_parts] == ["reserved", "on_demand"]


def test_retries_and_acceptance_shrink_what_a_gpu_serves_as_the_cost_model_counts_them():
    """1 req/s per GPU, 80 % accepted, 2 % retried + 3 % failed: 3,600 × 0.8 ÷ 1.05 = 2,742.857… accepted outputs
    per GPU-hour; the waste is 0.05 ÷ 1.05 of the busy cost."""
    demand = ten_to_one_demand(quality_acceptance=D("0.8"))
    candidate = reserved_input(retry_rate=D("0.02"), failure_rate=D("0.03"),
                               provenance={"unit_price": QUOTE, "committed_hours": QUOTE,
                                           "capacity_at_slo_per_gpu": MEASURED, "retry_rate": MEASURED,
                                           "failure_rate": MEASURED})
    with cost_model.localcontext(cost_model.DECIMAL_CONTEXT):
        assert hybrid.fleet_outputs_per_gpu_hour(demand, candidate) == D(3600) * D("0.8") / D("1.05")
    (row,) = cost_model.normalize(demand, [candidate])
    part = hybrid.reserved_part(demand, candidate, row, rate=D(1), peak=D(91_080))
    with cost_model.localcontext(cost_model.DECIMAL_CONTEXT):
        assert part.waste_fraction == D("0.05") / D("1.05")


def test_a_single_part_is_no_hybrid():
    demand = ten_to_one_demand()
    _rows, parts = parts_from_rows(demand, [reserved_input(), on_demand_input(), api_input()])
    with pytest.raises(cost_model.NormalizationError, match="at least two"):
        hybrid.cheapest_mix(ten_to_one_profile(demand), reserved=parts["reserved"])


def test_a_peak_beyond_the_search_is_refused_naming_the_capacity():
    """A capacity of 0.001 req/s per GPU: the 25.3 req/s peak needs 25,300 base GPUs, more than the 5,000 searched."""
    demand = ten_to_one_demand()
    candidates = [reserved_input(capacity_at_slo_per_gpu=D("0.001")), on_demand_input(), api_input()]
    _rows, parts = parts_from_rows(demand, candidates)
    with pytest.raises(cost_model.NormalizationError, match="25300 base units") as error:
        hybrid.cheapest_mix(ten_to_one_profile(demand), **parts)
    assert error.value.field == "capacity_at_slo_per_gpu"
