"""Exact decimals: an input read into a finite Decimal (never through a float), a measured float kept to a fixed
number of places, and a figure rounded to significant digits for display.

Pure Python (no Django). Money builds on it (apps/common/money.py); so do the cost model, the catalog file and the
benchmark ingest, so that every figure is read and rounded the same way.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import Any

#: Working precision of a rounding: far above the digits of any stored figure, so that quantize never overflows.
_ROUNDING_PRECISION = 80


class DecimalInputError(ValueError):
    """An input that is not an exact, finite decimal number. `field` names it as the caller does; `message` says
    what is wrong with it."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def parse_decimal(value: Any, *, field: str) -> Decimal:
    """`value` as an exact, finite Decimal: a Decimal, an int or a numeric string (surrounding spaces ignored).

    A float or a bool is refused (a float is already inexact), and so are NaN and infinity; the error names `field`.
    """
    if isinstance(value, bool | float):
        raise DecimalInputError(field, "pass a Decimal, an int or a numeric string, not a float or bool")
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            raise DecimalInputError(field, f"{value!r} is not a number") from None
    else:
        raise DecimalInputError(field, f"expected a number, got {type(value).__name__}")
    if not number.is_finite():
        raise DecimalInputError(field, "must be a finite number")
    return number


def from_float(value: float, places: int) -> Decimal:
    """A measured float as a Decimal of at most `places` decimals: Python's `round` of the float, read through its
    shortest form (round(0.12345678, 6) → Decimal('0.123457')). For measurements only: money is never a float."""
    return Decimal(str(round(float(value), places)))


def significant(
    value: Decimal,
    digits: int = 6,
    *,
    rounding: str = ROUND_HALF_EVEN,
    coarsest_exponent: int | None = None,
) -> Decimal:
    """`value` rounded to `digits` significant digits, half-even unless `rounding` says otherwise; zero as it is.

    `coarsest_exponent` keeps every digit down to that power of ten however many that is: 0 never rounds an integer
    digit away, -2 always keeps the cents. 1234.565 → 1234.56; with coarsest_exponent=-4, 1234.5650.
    """
    if value.is_zero():
        return value
    exponent = value.adjusted() - (digits - 1)
    if coarsest_exponent is not None:
        exponent = min(exponent, coarsest_exponent)
    with localcontext() as context:
        context.prec = _ROUNDING_PRECISION
        return value.quantize(Decimal(1).scaleb(exponent), rounding=rounding)
