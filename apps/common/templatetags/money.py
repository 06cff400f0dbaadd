"""Template filters that show money the way DESIGN.md asks: totals to the minor unit, unit prices to ≥ 6 digits.

`{{ total|money_total:"IDR" }}` → "1,234,567.89" (localised separators); `{{ price|unit_price:"USD" }}` →
"0.000000123000"; `{{ price|raw_decimal }}` → the exact value for data-sort-value attributes and exports.
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
