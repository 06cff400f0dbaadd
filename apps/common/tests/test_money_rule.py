"""The one rule for writing a figure (apps/common/money.py): exact figures plain and free of a quotient's noise,
shown figures rounded by their kind, never an exponent, zero never 0E-30."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.common import money


@pytest.mark.parametrize(("value", "written"), [
    (Decimal("0E-30"), "0"),
    (Decimal("-0.00"), "0"),
    (Decimal("2.00000E+7"), "20000000"),
    (Decimal("730.0000000000000000000000000000001"), "730"),
    (Decimal("729.9999999999999999999999999999999"), "730"),
    (Decimal("999.9999999999999999999999999999998"), "1000"),
    (Decimal("8000.000000000000000000000000000000"), "8000"),
    (Decimal("3236.666666666666666666666666666667"), "3236.66666666666666666666666667"),
    (Decimal("6570.00"), "6570.00"),  # a figure of 30 digits or fewer is written as computed
    (Decimal("0.000427785"), "0.000427785"),
    (Decimal("1.23E-7"), "0.000000123"),
])
def test_exact_figures_are_plain_without_a_quotients_noise(value, written):
    assert money.exact(value) == written


@pytest.mark.parametrize(("value", "kind", "currency", "written"), [
    (Decimal("0E-30"), "money", "USD", "0.00"),
    (Decimal("0E-30"), "money", "JPY", "0"),
    (Decimal("0E-30"), "money", "BHD", "0.000"),
    (Decimal("0E-30"), "unit_cost", "USD", "0.00"),
    (Decimal("0E-30"), "quantity", None, "0"),
    (Decimal("1234.565"), "money", "USD", "1234.57"),  # half up, as every total of Dossier
    (Decimal("1234.5"), "money", "JPY", "1235"),
    (Decimal("1.23456"), "money", "BHD", "1.235"),
    (Decimal("3236.666666666666666666666666666667"), "money", "USD", "3236.67"),
    (Decimal("0.0008325"), "unit_cost", "USD", "0.000832500"),
    (Decimal("3"), "unit_cost", "USD", "3.00000"),
    (Decimal("0.00499463125925925925925925925925926"), "unit_cost", "USD", "0.00499463"),
    (Decimal("730.0000000000000000000000000000001"), "quantity", None, "730"),
    (Decimal("2.00000E+7"), "quantity", None, "20000000"),
    (Decimal("0.5073566717402333840690005073566717"), "quantity", None, "0.507357"),
    (Decimal("9736512500.000000000000000000000000"), "quantity", None, "9736512500"),
    (Decimal("0.00000012345678"), "quantity", None, "0.000000123457"),
])
def test_shown_figures_follow_their_kind(value, kind, currency, written):
    assert money.shown(value, kind, currency) == written


@pytest.mark.parametrize(("name", "kind"), [
    ("effective_unit_cost", "unit_cost"), ("hourly_price", "unit_cost"), ("price_per_gpu_hour", "unit_cost"),
    ("gpu_cost", "money"), ("idle_capacity", "money"), ("failure_waste", "money"), ("total_cost", "money"),
    ("cost_per_completed_run", "money"), ("checkpointing", "money"), ("some_new_cost", "money"),
    ("billed_hours_per_gpu", "quantity"), ("productive_share", "quantity"), ("generated_outputs", "quantity"),
    ("paid_requests", "quantity"), ("quality_acceptance", "quantity"), ("expected_failures", "quantity"),
    ("reserve_vs_on_demand_utilisation", "quantity"), ("buy_vs_rent_months", "quantity"),
])
def test_a_figure_is_classified_by_its_name(name, kind):
    assert money.figure_kind(name) == kind


def test_significant_digits_are_counted_without_the_contexts_rounding():
    assert money.significant_digits(Decimal("730.0000000000000000000000000000001")) == 34
    assert money.significant_digits(Decimal("0E-30")) == 0


finite = st.decimals(allow_nan=False, allow_infinity=False, min_value=Decimal("-1e15"), max_value=Decimal("1e15"),
                     places=None)


@given(finite, st.sampled_from(["money", "unit_cost", "quantity"]), st.sampled_from(["USD", "JPY", "BHD"]))
def test_no_figure_is_ever_written_with_an_exponent(value, kind, currency):
    for written in (money.exact(value), money.shown(value, kind, currency)):
        assert "E" not in written and "e" not in written
        assert Decimal(written) == Decimal(written)  # a decimal number a spreadsheet or a parser reads back


@pytest.mark.parametrize(("share", "shown"), [
    (Decimal("0.4926433282597666159309994926433283"), "49.3"), (Decimal("0E-30"), "0.0"), (Decimal("1"), "100.0"),
])
def test_a_share_is_shown_as_a_percentage_with_one_decimal(share, shown):
    assert format(money.percent(share), "f") == shown
