"""Planned against actual (pure module, no database): the figures of docs/actuals.md, computed by hand."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from apps.actuals import drift
from apps.actuals.parsing import ParsedDay


def _plan(**changes) -> drift.Planned:
    """2 GPUs × 730 h = 1,460 billed GPU-hours a 730-hour month, half of them productive, for 7,300,000 accepted
    requests at 0.0004 USD each: r = 7,300,000 ÷ (1,460 × 0.5) = 10,000 accepted requests per productive GPU-hour."""
    values = {
        "candidate_id": "5", "label": "B reserved H200", "currency": "USD", "unit": "request",
        "cost_per_accepted_output": Decimal("0.0004"), "accepted_outputs": Decimal(7_300_000),
        "period_hours": Decimal(730), "gpu_hours": Decimal(1460), "productive_share": Decimal("0.5"),
        "quality_acceptance": Decimal(1),
    }
    return drift.Planned(**{**values, **changes})


def _day(day: int, *, hours="48", outputs="240000", accepted="240000", spend="96") -> ParsedDay:
    return ParsedDay(datetime.date(2026, 1, day), Decimal(hours), Decimal(outputs), Decimal(accepted),
                     Decimal(spend), "USD")


def test_on_plan_the_drift_is_zero_and_the_idle_share_is_the_plans():
    """One day: 96 USD ÷ 240,000 accepted = 0.0004 (drift 0). The plan bills 1,460 × 24 ÷ 730 = 48 GPU-hours a day
    (ratio 1). 240,000 ÷ 48 = 5,000 per GPU-hour against r = 10,000: idle 1 − 5,000 ÷ 10,000 = 0.5 = 1 − 0.5."""
    report = drift.compare(_plan(), [_day(1)], threshold_percent=Decimal(10))
    assert report.drift == 0 and not report.beyond_threshold
    assert report.planned_gpu_hours_for_days == 48 and report.gpu_hours_ratio == 1
    assert report.actual_idle_share == Decimal("0.5") == report.planned.idle_share
    assert not report.faster_than_planned


def test_a_quarter_dearer_is_beyond_a_ten_percent_threshold():
    """Two days: (96 + 144) USD ÷ 480,000 = 0.0005 per accepted request; 0.0005 ÷ 0.0004 − 1 = 0.25 (+25 %)."""
    report = drift.compare(_plan(), [_day(1), _day(2, spend="144")], threshold_percent=Decimal(10))
    assert report.actual.cost_per_accepted_output == Decimal("0.0005")
    assert report.drift == Decimal("0.25") and report.drift_percent == 25
    assert report.beyond_threshold
    assert report.planned_gpu_hours_for_days == 96  # 1,460 × 24 × 2 ÷ 730


def test_the_threshold_binds_both_ways_and_is_exclusive():
    """100.80 ÷ 240,000 = 0.00042 → +5 %; 86.40 ÷ 240,000 = 0.00036 → −10 %, exactly the threshold: not beyond;
    86.16 ÷ 240,000 = 0.000359 → −10.25 %: beyond."""
    assert not drift.compare(_plan(), [_day(1, spend="100.80")], threshold_percent=Decimal(10)).beyond_threshold
    at_bound = drift.compare(_plan(), [_day(1, spend="86.40")], threshold_percent=Decimal(10))
    assert at_bound.drift == Decimal("-0.1") and not at_bound.beyond_threshold
    assert drift.compare(_plan(), [_day(1, spend="86.16")], threshold_percent=Decimal(10)).beyond_threshold


def test_spend_with_nothing_accepted_is_beyond_any_threshold():
    report = drift.compare(_plan(), [_day(1, accepted="0")], threshold_percent=Decimal(1000))
    assert report.drift is None and report.actual.cost_per_accepted_output is None and report.beyond_threshold
    assert report.actual_idle_share == 1  # 48 GPU-hours paid, no accepted work


def test_more_work_per_gpu_hour_than_the_plans_rate_shows_no_idle_and_says_so():
    """600,000 ÷ 48 = 12,500 per GPU-hour > r = 10,000: 1 − 1.25 < 0, shown as 0."""
    report = drift.compare(_plan(), [_day(1, outputs="600000", accepted="600000", spend="240")],
                           threshold_percent=Decimal(10))
    assert report.actual_idle_share == 0 and report.faster_than_planned


def test_an_api_route_has_no_gpu_hours_and_no_idle_share():
    report = drift.compare(_plan(gpu_hours=None, productive_share=Decimal(1)), [_day(1, hours="0")],
                           threshold_percent=Decimal(10))
    assert report.planned_gpu_hours_for_days is None and report.actual_idle_share is None
    assert report.planned.idle_share is None and report.drift == 0


def test_the_plan_is_read_from_the_snapshots_chosen_row():
    snapshot = {"comparison": {
        "currency": "USD", "chosen_id": "5", "demand": {"period_hours": "730"},
        "results": [
            {"id": "7", "label": "A", "row": {"effective_unit_cost": "9", "accepted_outputs": "1", "gpus": 3}},
            {"id": "5", "label": "B", "row": {
                "label": "B reserved H200", "unit": "request", "effective_unit_cost": "0.0003515",
                "accepted_outputs": "20000000.00", "gpus": 2, "billed_hours_per_gpu": "730",
                "productive_share": "0.4", "quality_acceptance": "1.0000"}},
        ],
    }}
    planned = drift.planned_from_snapshot(snapshot)
    assert planned.cost_per_accepted_output == Decimal("0.0003515") and planned.gpu_hours == 1460
    assert planned.idle_share == Decimal("0.6") and planned.unit == "request" and planned.label == "B reserved H200"
    snapshot["comparison"]["results"][1]["row"] = None
    with pytest.raises(drift.NoPlan):
        drift.planned_from_snapshot(snapshot)
