"""The pure money helpers: currencies and minor units, exact arithmetic, and rounding only for display."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.common import money


@pytest.mark.parametrize(("code", "units"), [("IDR", 2), ("USD", 2), ("EUR", 2), ("JPY", 0), ("KWD", 3), ("CLF", 4)])
def test_minor_units_follow_iso_4217(code, units):
    assert money.minor_units(code) == units


def test_unknown_currency_is_refused():
    with pytest.raises(money.MoneyError):
        money.minor_units("QQQ")
    with pytest.raises(money.MoneyError):
        money.round_to_minor_unit("1", "QQQ")
    assert not money.is_currency("ABC")


def test_a_float_is_never_accepted_as_money():
    with pytest.raises(money.MoneyError):
        money.to_decimal(0.1)
    with pytest.raises(money.MoneyError):
        money.convert("1", 1.1)


def test_nan_and_infinity_are_refused():
    for value in ("NaN", "Infinity", Decimal("-Infinity")):
        with pytest.raises(money.MoneyError):
            money.to_decimal(value)


def test_canonical_string_never_uses_an_exponent():
    assert money.canonical(Decimal("1.23E-7")) == "0.000000123"
    assert money.canonical("987654321098765432.12") == "987654321098765432.12"
    assert money.canonical(Decimal("-0.00")) == "0.00"


def test_conversion_is_exact_beyond_python_default_precision():
    # 20 digits × 14 digits = 34 significant digits: Python's default 28-digit context would round this.
    amount = Decimal("987654321098765432.12")
    rate = Decimal("0.000061234567891234")
    assert amount * rate == Decimal("60478585578392.97668057320317")  # what plain Decimal math gives: rounded
    assert money.convert(amount, rate) == Decimal("60478585578392.97668057320317003608")


def test_exact_product_is_checked_against_integer_arithmetic():
    amount, rate = Decimal("987654321098765432.12"), Decimal("0.000061234567891234")
    scaled = 98765432109876543212 * 61234567891234  # both as integers, scale 10^-2 × 10^-18
    assert money.convert(amount, rate) == Decimal(f"{scaled}E-20")  # the constructor never rounds


def test_a_rate_must_be_positive():
    with pytest.raises(money.MoneyError):
        money.convert("100", "0")


def test_totals_round_to_the_minor_unit_only_when_shown():
    assert money.round_to_minor_unit("1234.565", "USD") == Decimal("1234.57")
    assert money.round_to_minor_unit("0.005", "USD") == Decimal("0.01")
    assert money.round_to_minor_unit("1234.5", "JPY") == Decimal("1235")
    assert money.round_to_minor_unit("1.23456", "KWD") == Decimal("1.235")
    assert money.round_to_minor_unit("987654321098765432.125", "IDR") == Decimal("987654321098765432.13")


def test_unit_prices_keep_at_least_six_significant_digits():
    assert money.canonical(money.round_unit_price("0.000000123")) == "0.000000123000"
    assert money.canonical(money.round_unit_price("0.000427785")) == "0.000427785"
    assert money.canonical(money.round_unit_price("0.00042778512")) == "0.000427785"
    assert money.canonical(money.round_unit_price("3.5", "USD")) == "3.50000"
    assert money.canonical(money.round_unit_price("123456789", "JPY")) == "123456789"
    assert money.canonical(money.round_unit_price("123456789.5", "USD")) == "123456789.50"


@given(st.decimals(min_value=Decimal("0.000000001"), max_value=Decimal("1e15"), places=9, allow_nan=False))
def test_a_shown_unit_price_has_six_significant_digits_or_more(value):
    shown = money.round_unit_price(value)
    assert money.significant_digits(shown) >= 1
    digits = len(shown.as_tuple().digits)
    assert digits >= 6
    # Never further from the exact value than half of its last shown digit.
    assert abs(shown - value) <= Decimal(1).scaleb(shown.as_tuple().exponent) / 2


def test_division_is_exact_when_the_quotient_terminates():
    assert money.divide("24.80", 8) == Decimal("3.1")
    with pytest.raises(money.MoneyError):
        money.divide("1", "0")
