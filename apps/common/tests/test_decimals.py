"""The exact-decimal helpers every app reads and rounds figures with: parsing, measured floats, significant digits."""

from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.common import decimals

D = Decimal


@pytest.mark.parametrize(("value", "expected"), [
    (D("0.000000123"), D("0.000000123")),
    (7, D(7)),
    (" 987654321098765432.12 ", D("987654321098765432.12")),
    ("1.23E-7", D("1.23E-7")),
])
def test_a_decimal_an_int_or_a_numeric_string_is_read_exactly(value, expected):
    number = decimals.parse_decimal(value, field="amount")
    assert number == expected
    assert number.as_tuple() == expected.as_tuple()  # the digits as written: no float on the way


@pytest.mark.parametrize(("value", "message"), [
    (0.1, "not a float or bool"),
    (True, "not a float or bool"),
    ("abc", "'abc' is not a number"),
    ([1], "expected a number, got list"),
    ("NaN", "must be a finite number"),
    (D("Infinity"), "must be a finite number"),
])
def test_a_refused_input_names_the_callers_field(value, message):
    with pytest.raises(decimals.DecimalInputError) as error:
        decimals.parse_decimal(value, field="unit_price")
    assert error.value.field == "unit_price"
    assert message in error.value.message
    assert str(error.value).startswith("unit_price: ")


@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_the_written_form_of_a_decimal_reads_back_to_the_same_decimal(value):
    assert decimals.parse_decimal(str(value), field="value") == value


def test_a_measured_float_keeps_the_places_asked_for():
    assert decimals.from_float(0.12345678, 6) == D("0.123457")
    assert decimals.from_float(1234.5, 3) == D("1234.5")
    # Python's round of the float itself: 2.675 is stored just below 2.675, so it rounds down.
    assert decimals.from_float(2.675, 2) == D("2.67")


def test_significant_digits_round_half_even_by_default():
    assert decimals.significant(D("1234.565")) == D("1234.56")
    assert decimals.significant(D("1234.575")) == D("1234.58")
    assert decimals.significant(D("1234.565"), rounding=ROUND_HALF_UP) == D("1234.57")
    assert decimals.significant(D("16.666666666"), 6) == D("16.6667")


def test_significant_digits_never_round_past_the_coarsest_place():
    assert str(decimals.significant(D(123456789), 6)) == "1.23457E+8"
    assert str(decimals.significant(D(123456789), 6, coarsest_exponent=0)) == "123456789"
    assert str(decimals.significant(D("3.5"), 6, coarsest_exponent=-2)) == "3.50000"
    assert str(decimals.significant(D("1234.5"), 6, coarsest_exponent=-2)) == "1234.50"


def test_zero_keeps_its_written_form():
    assert str(decimals.significant(D("0.000"))) == "0.000"


@given(st.decimals(min_value=D("-1e20"), max_value=D("1e20"), allow_nan=False, allow_infinity=False).filter(bool),
       st.integers(min_value=1, max_value=12))
def test_a_rounded_figure_is_within_half_a_unit_of_its_last_digit(value, digits):
    rounded = decimals.significant(value, digits)
    last_place = D(1).scaleb(value.adjusted() - (digits - 1))
    with localcontext() as context:
        context.prec = 100  # the check itself must not round
        assert abs(rounded - value) <= last_place / 2
    assert len(rounded.normalize().as_tuple().digits) <= digits
