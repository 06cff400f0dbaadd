"""Template filters that show money the way DESIGN.md asks: totals to the minor unit, unit prices to ≥ 6 digits.

`{{ total|money_total:"IDR" }}` → "1,234,567.89" (localised separators); `{{ price|unit_price:"USD" }}` →
"0.000000123000"; `{{ hours|quantity }}` → "730" (six significant digits); `{{ price|raw_decimal }}` → the exact
value for data-sort-value attributes and exports; `{{ figure|exact_figure }}` → a computed figure exact as the API
writes it (never "0E-30" or 34-digit quotient noise). The rule itself lives in apps/common/money.py.
"""

from django import template
from django.utils import formats

from apps.common import money

register = template.Library()


def _show(value) -> str:
    return formats.number_format(value, use_l10n=True, force_grouping=True)


@register.filter
def money_total(value, currency: str = "") -> str:
    """A total rounded to its currency's minor unit (only here, for display)."""
    if value is None or value == "":
        return ""
    try:
        rounded = money.round_to_minor_unit(value, currency) if currency else money.to_decimal(value)
    except money.MoneyError:
        return ""
    return _show(rounded)


@register.filter
def unit_price(value, currency: str = "") -> str:
    """A unit price or unit cost with at least six significant digits."""
    if value is None or value == "":
        return ""
    try:
        shown = money.round_unit_price(value, currency or None)
    except money.MoneyError:
        return ""
    return _show(shown)


@register.filter
def raw_decimal(value) -> str:
    """The exact stored value, never rounded and never in exponent form."""
    if value is None or value == "":
        return ""
    try:
        return money.canonical(value)
    except money.MoneyError:
        return ""


@register.filter
def quantity(value) -> str:
    """Hours, outputs, shares and other quantities: six significant digits, integer digits kept (money.shown)."""
    if value is None or value == "":
        return ""
    try:
        return _show(money.round_quantity(value))
    except money.MoneyError:
        return ""


@register.filter
def exact_figure(value) -> str:
    """A computed figure exact as the API and the CSV write it (money.exact): plain, zero as 0, ≤ 30 digits."""
    if value is None or value == "":
        return ""
    try:
        return money.exact(value)
    except money.MoneyError:
        return ""
