"""The calibrated safety margin: the pure rule (apps/workloads/memory/calibration.py), the stored row's service and the
selector that gives each GPU its margin and the source in words."""

from decimal import Decimal
from fractions import Fraction

import pytest
from django.contrib.contenttypes.models import ContentType
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.audit.models import ObjectChange
from apps.workloads import selectors, services
from apps.workloads.memory import calibration
from apps.workloads.memory.calibration import Calibration, TotalResidual, calibrate
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.models import CalibratedMargin

MIB = 2**20


def _totals(*pairs):
    return [TotalResidual(index + 1, predicted, measured) for index, (predicted, measured) in enumerate(pairs)]


# --- the rule ---------------------------------------------------------------------------------------------------------


def test_the_rule_constants_are_the_documented_ones():
    assert calibration.MIN_RUNS == 3
    assert [str(calibration.CUSHION), str(calibration.MAX_MARGIN), str(calibration.DEFAULT_MARGIN)] == [
        "0.02", "0.50", "0.1"]


def test_no_result_gives_nothing():
    assert calibrate([]) == Calibration(runs=0, largest_underestimate=None, margin_fraction=None)


def test_below_three_results_the_default_stands():
    """Two results, the largest underestimate 1031/1000 − 1 = 0.031: recorded, but no margin (the default stands)."""
    found = calibrate(_totals((1000, 1031), (1000, 990)))
    assert (found.runs, found.largest_underestimate, found.margin_fraction, found.calibrated) == (
        2, Decimal("0.0310"), None, False)
    assert found.runs_missing == 1 and found.result_ids == (1, 2)


def test_three_results_give_the_largest_underestimate_plus_the_cushion():
    """+3.1 %, −1 %, +2 %: margin = 0.031 + 0.02 = 0.051."""
    found = calibrate(_totals((1000, 1031), (1000, 990), (2000, 2040)))
    assert (found.runs, found.largest_underestimate, found.margin_fraction, found.capped) == (
        3, Decimal("0.0310"), Decimal("0.0510"), False)


def test_a_family_always_overestimated_keeps_only_the_cushion():
    """−5 %, −2 %, −1 %: the largest "underestimate" −0.01 is floored at 0; margin = 0 + 0.02."""
    found = calibrate(_totals((1000, 950), (1000, 980), (1000, 990)))
    assert (found.largest_underestimate, found.margin_fraction) == (Decimal("-0.0100"), Decimal("0.0200"))


def test_the_margin_is_capped_at_half_and_says_so():
    """+60 %: 0.60 + 0.02 = 0.62 > 0.50, so the margin is 0.50, capped."""
    found = calibrate(_totals((1000, 1600), (1000, 1000), (1000, 1000)))
    assert (found.margin_fraction, found.capped) == (Decimal("0.50"), True)


def test_the_underestimate_is_rounded_up_to_a_hundredth_of_a_percent():
    """4/3 − 1 = 0.33333… → 0.3334 (rounded up, never down); margin 0.3534."""
    found = calibrate(_totals((3, 4), (3, 3), (3, 3)))
    assert (found.largest_underestimate, found.margin_fraction) == (Decimal("0.3334"), Decimal("0.3534"))


def test_an_absurd_underestimate_is_stored_at_its_bound_and_the_margin_capped():
    """1 byte predicted, 10¹² measured: u ≈ 10¹², stored as 10⁶; margin capped at 0.50."""
    found = calibrate(_totals((1, 10**12), (1000, 1000), (1000, 1000)))
    assert (found.largest_underestimate, found.margin_fraction, found.capped) == (Decimal(10**6), Decimal("0.50"), True)


def test_a_total_predicted_as_zero_does_not_count():
    found = calibrate(_totals((0, 100), (1000, 1000), (1000, 1000)))
    assert found.runs == 2 and found.margin_fraction is None and found.result_ids == (2, 3)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # the test machines are shared and loaded
@given(st.lists(st.tuples(st.integers(1, 10**12), st.integers(0, 10**12)), min_size=3, max_size=12))
def test_an_uncapped_margin_would_have_covered_every_run_counted(pairs):
    """margin × predicted ≥ measured − predicted for every run, unless the cap applied."""
    found = calibrate(_totals(*pairs))
    assert found.calibrated and 0 <= found.margin_fraction <= calibration.MAX_MARGIN
    if not found.capped:
        margin = Fraction(found.margin_fraction)
        assert all(margin * predicted >= measured - predicted for predicted, measured in pairs)


# --- the stored row and the selector ---------------------------------------------------------------------------------


def _record(team, pairs, architecture="h200", family="dense/bf16"):
    return services.calibrated_margin_record(actor="test", team=team, gpu_architecture=architecture,
                                             model_family=family, calibration=calibrate(_totals(*pairs)))


def _entries(row):
    return ObjectChange.objects.filter(content_type=ContentType.objects.get_for_model(CalibratedMargin),
                                       object_id=str(row.pk))


@pytest.mark.django_db
def test_recording_the_same_calibration_again_writes_nothing(team):
    row = _record(team, [(1000, 1031), (1000, 990), (2000, 2040)])
    assert row.margin_fraction == Decimal("0.0510") and row.source == "benchmark results #1, #2, #3"
    assert _entries(row).count() == 1
    again = _record(team, [(1000, 1031), (1000, 990), (2000, 2040)])
    assert again.pk == row.pk and _entries(row).count() == 1 and again.updated_at == row.updated_at
    changed = _record(team, [(1000, 1031), (1000, 990)])  # one result stopped counting: the default is back
    assert changed.margin_fraction is None and changed.runs == 2 and _entries(row).count() == 2


@pytest.mark.django_db
def test_a_group_without_results_gets_no_row(team):
    assert _record(team, []) is None and not CalibratedMargin.objects.exists()


def _gpus():
    """The first catalog GPU of the h200 family and of the h100 family (the bundled catalog)."""
    by_family = {}
    for item in selectors.catalog_gpus():
        by_family.setdefault(item.capacity.family, item.gpu)
    return by_family["h200"], by_family["h100"]


@pytest.mark.django_db
def test_each_gpu_gets_its_architectures_margin_for_the_shapes_family(team, other_team, loaded_catalog):
    """h200 dense/bf16 calibrated at 5.1 %; h100 has 2 results (the default 10 %); the moe family and another team's
    GPUs get the default."""
    h200, h100 = _gpus()
    _record(team, [(1000, 1031), (1000, 990), (2000, 2040)], architecture="h200")
    _record(team, [(1000, 1100), (1000, 1000)], architecture="h100")
    dense = ModelShape(architecture="dense", precision="bf16", params=7 * 10**9)
    choices = selectors.calibrated_margins(selectors.catalog_gpus([h200.pk, h100.pk]), dense, team=team)
    assert choices[h200.pk] == selectors.MarginChoice(
        0.051, "calibrated from 3 phase-1 runs on h200, dense/bf16: largest underestimate 3.1 % + 2 % cushion",
        calibrated=True, runs=3)
    assert choices[h100.pk] == selectors.MarginChoice(
        0.1, "default 10 % (2 of 3 phase-1 runs needed on h100, dense/bf16)", calibrated=False, runs=2)
    moe = ModelShape(architecture="moe", precision="bf16", params=7 * 10**9, num_experts=8, num_experts_per_token=2)
    assert not selectors.calibrated_margins([h200], moe, team=team)[h200.pk].calibrated
    assert not selectors.calibrated_margins([h200], dense, team=other_team)[h200.pk].calibrated
    assert selectors.calibrated_margins([h200], dense, team=None)[h200.pk].fraction == 0.1


@pytest.mark.django_db
def test_the_source_says_when_the_cap_applied_or_no_run_was_underestimated(team, loaded_catalog):
    h200, _h100 = _gpus()
    dense = ModelShape(architecture="dense", precision="bf16", params=7 * 10**9)
    _record(team, [(1000, 1600), (1000, 1000), (1000, 1000)])
    choice = selectors.calibrated_margins([h200], dense, team=team)[h200.pk]
    assert choice.fraction == 0.5 and "capped at 50 %" in choice.source
    _record(team, [(1000, 950), (1000, 980), (1000, 990)])
    choice = selectors.calibrated_margins([h200], dense, team=team)[h200.pk]
    assert choice.fraction == 0.02 and "no underestimate" in choice.source
