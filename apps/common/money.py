"""Money as exact Decimal: ISO 4217 currencies, exact conversion, and the one rule for how a figure is written.

Pure Python (no Django). Amounts stay unrounded in storage and in computation; this module is the one place that
decides how a figure is written out, on a page, in the API, in the CSV and in the workbook.

The rule (every comparison figure goes through `exact()` or `shown()`):

* **Exact** (`exact()`, the API's figures, the CSV, `data-exact`/`data-sort-value` on the pages): plain notation,
  never an exponent (`2.00000E+7` → `20000000`); zero is `0` (never `0E-30`); at most
  `EXACT_SIGNIFICANT_DIGITS` (30) significant digits. The cost model computes with 34 (IEEE decimal128) and the last
  digits of a quotient carry its rounding (1/3 × 2190 = 729.9999999999999999999999999999999), so a longer figure is
  rounded half-even to 30 digits and its trailing zeros dropped: `730.0000000000000000000000000000001` → `730`.
  A figure of 30 digits or fewer is written as computed (`6570.00`, `0.000427785`).
  The workbook's formula cells store the exact value as a spreadsheet number (the nearest double).
* **Shown** (`shown()`, what a person reads: the pages and the API's `display` objects), by the kind of figure
  (`figure_kind()` tells it from the figure's name; a figure the cost model adds later follows by its name):
  - `MONEY`, a total (GPU cost, waste, total cost, cost per completed run): rounded half up to the currency's
    minor unit (ISO 4217: JPY 0, USD 2, BHD 3), so zero is `0.00` in USD and `0` in JPY;
  - `UNIT_COST`, a unit price or unit cost (effective unit cost per accepted output, hourly price, price per token):
    `UNIT_PRICE_SIGNIFICANT_DIGITS` (6) significant digits, half up, never fewer decimals than the minor unit and
    never an integer digit rounded away (0.0008325 → `0.000832500`, 3 → `3.00000`);
  - `QUANTITY`, everything else (hours, outputs, requests, shares, rates, ratios, months, tokens):
    `QUANTITY_SIGNIFICANT_DIGITS` (6) significant digits, half-even, trailing zeros dropped, integer digits kept
    (730.0000000000000000000000000000001 → `730`, 0.50735667… → `0.507357`, 9736512500.000… → `9736512500`);
  - a share written as a percentage (`percent()`, "idle capacity is 49.3 % of the GPU cost"):
    `PERCENT_DECIMALS` (1) decimal, half-even.

  Totals and unit prices round half up (the rule Dossier's quote pages always used), quantities half-even. None of
  them is ever written with an exponent.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext
from enum import StrEnum

from apps.common import decimals

#: Active ISO 4217 currencies and their minor units (the number of decimals of the currency's smallest unit), as
#: published in ISO 4217 list one. Precious metals, testing and "no currency" codes are left out on purpose: nobody
#: pays a GPU bill in XAU.
MINOR_UNITS: dict[str, int] = {
    "AED": 2, "AFN": 2, "ALL": 2, "AMD": 2, "AOA": 2, "ARS": 2, "AUD": 2, "AWG": 2, "AZN": 2,
    "BAM": 2, "BBD": 2, "BDT": 2, "BGN": 2, "BHD": 3, "BIF": 0, "BMD": 2, "BND": 2, "BOB": 2, "BOV": 2,
    "BRL": 2, "BSD": 2, "BTN": 2, "BWP": 2, "BYN": 2, "BZD": 2,
    "CAD": 2, "CDF": 2, "CHE": 2, "CHF": 2, "CHW": 2, "CLF": 4, "CLP": 0, "CNY": 2, "COP": 2, "COU": 2,
    "CRC": 2, "CUP": 2, "CVE": 2, "CZK": 2,
    "DJF": 0, "DKK": 2, "DOP": 2, "DZD": 2,
    "EGP": 2, "ERN": 2, "ETB": 2, "EUR": 2,
    "FJD": 2, "FKP": 2,
    "GBP": 2, "GEL": 2, "GHS": 2, "GIP": 2, "GMD": 2, "GNF": 0, "GTQ": 2, "GYD": 2,
    "HKD": 2, "HNL": 2, "HTG": 2, "HUF": 2,
    "IDR": 2, "ILS": 2, "INR": 2, "IQD": 3, "IRR": 2, "ISK": 0,
    "JMD": 2, "JOD": 3, "JPY": 0,
    "KES": 2, "KGS": 2, "KHR": 2, "KMF": 0, "KPW": 2, "KRW": 0, "KWD": 3, "KYD": 2, "KZT": 2,
    "LAK": 2, "LBP": 2, "LKR": 2, "LRD": 2, "LSL": 2, "LYD": 3,
    "MAD": 2, "MDL": 2, "MGA": 2, "MKD": 2, "MMK": 2, "MNT": 2, "MOP": 2, "MRU": 2, "MUR": 2, "MVR": 2,
    "MWK": 2, "MXN": 2, "MXV": 2, "MYR": 2, "MZN": 2,
    "NAD": 2, "NGN": 2, "NIO": 2, "NOK": 2, "NPR": 2, "NZD": 2,
    "OMR": 3,
    "PAB": 2, "PEN": 2, "PGK": 2, "PHP": 2, "PKR": 2, "PLN": 2, "PYG": 0,
    "QAR": 2,
    "RON": 2, "RSD": 2, "RUB": 2, "RWF": 0,
    "SAR": 2, "SBD": 2, "SCR": 2, "SDG": 2, "SEK": 2, "SGD": 2, "SHP": 2, "SLE": 2, "SOS": 2, "SRD": 2,
    "SSP": 2, "STN": 2, "SVC": 2, "SYP": 2, "SZL": 2,
    "THB": 2, "TJS": 2, "TMT": 2, "TND": 3, "TOP": 2, "TRY": 2, "TTD": 2, "TWD": 2, "TZS": 2,
    "UAH": 2, "UGX": 0, "USD": 2, "USN": 2, "UYI": 0, "UYU": 2, "UYW": 4, "UZS": 2,
    "VED": 2, "VES": 2, "VND": 0, "VUV": 0,
    "WST": 2,
    "XAF": 0, "XCD": 2, "XCG": 2, "XOF": 0, "XPF": 0,
    "YER": 2,
    "ZAR": 2, "ZMW": 2, "ZWG": 2,
}  # fmt: skip

CURRENCY_CODES: tuple[str, ...] = tuple(sorted(MINOR_UNITS))

#: Unit prices and unit costs are shown with at least this many significant digits.
UNIT_PRICE_SIGNIFICANT_DIGITS = 6

#: Hours, outputs, shares and other quantities are shown with this many significant digits.
QUANTITY_SIGNIFICANT_DIGITS = 6

#: A share written as a percentage keeps this many decimals.
PERCENT_DECIMALS = 1

#: An exact figure is written with at most this many significant digits (the cost model computes with 34; the last
#: ones carry a quotient's rounding).
EXACT_SIGNIFICANT_DIGITS = 30

#: Working precision for exact arithmetic: far above any product of two stored amounts (30 digits each at most).
_EXACT_PRECISION = 80


class MoneyError(ValueError):
    """An amount, currency or rate that money arithmetic refuses."""


def is_currency(code: str) -> bool:
    return code in MINOR_UNITS


def minor_units(currency: str) -> int:
    """Decimals of the currency's smallest unit (IDR 2, JPY 0, KWD 3)."""
    try:
        return MINOR_UNITS[currency]
    except KeyError:
        raise MoneyError(f"{currency!r} is not an ISO 4217 currency code.") from None


def to_decimal(value: Decimal | int | str, *, field: str = "amount") -> Decimal:
    """A finite Decimal from a Decimal, an int or a decimal string; floats are refused (they are already inexact).

    The rules are `decimals.parse_decimal`'s; a refusal is a MoneyError, like every other refusal of this module.
    """
    try:
        return decimals.parse_decimal(value, field=field)
    except decimals.DecimalInputError as error:
        raise MoneyError(str(error)) from None


def canonical(value: Decimal | int | str) -> str:
    """The plain (never scientific) string of an exact decimal: 1.23E-7 → "0.000000123"."""
    number = to_decimal(value)
    if number.is_zero():
        number = number.copy_abs()
    return format(number, "f")


def significant_digits(value: Decimal) -> int:
    """The count of significant digits of an exact decimal (trailing zeros after the point count as written)."""
    digits = to_decimal(value).as_tuple().digits  # not normalize(): it would round to the context's 28 digits
    if not any(digits):
        return 0
    return len("".join(map(str, digits)).lstrip("0"))


def multiply(*factors: Decimal | int | str) -> Decimal:
    """The exact product (no rounding at Python's default 28 digits)."""
    result = Decimal(1)
    with localcontext() as context:
        context.prec = _EXACT_PRECISION
        for factor in factors:
            result *= to_decimal(factor)
    return result


def add(*terms: Decimal | int | str) -> Decimal:
    """The exact sum."""
    result = Decimal(0)
    with localcontext() as context:
        context.prec = _EXACT_PRECISION
        for term in terms:
            result += to_decimal(term)
    return result


def divide(dividend: Decimal | int | str, divisor: Decimal | int | str) -> Decimal:
    """A quotient to 34 significant digits (a quotient such as 1/3 has no exact decimal form); exact when it has one
    that fits."""
    denominator = to_decimal(divisor)
    if denominator.is_zero():
        raise MoneyError("Cannot divide by zero.")
    with localcontext() as context:
        context.prec = 34
        return to_decimal(dividend) / denominator


def convert(amount: Decimal | int | str, rate: Decimal | int | str) -> Decimal:
    """amount in currency A × rate (units of B per one unit of A) = amount in B, exactly."""
    rate_value = to_decimal(rate)
    if rate_value <= 0:
        raise MoneyError(f"An exchange rate must be positive, not {rate_value}.")
    return multiply(amount, rate_value)


def round_to_minor_unit(amount: Decimal | int | str, currency: str) -> Decimal:
    """A total as it is shown: rounded half up to the currency's minor unit (only ever for display)."""
    quantum = Decimal(1).scaleb(-minor_units(currency))
    with localcontext() as context:
        context.prec = _EXACT_PRECISION
        return to_decimal(amount).quantize(quantum, rounding=ROUND_HALF_UP)


def round_unit_price(
    amount: Decimal | int | str,
    currency: str | None = None,
    significant: int = UNIT_PRICE_SIGNIFICANT_DIGITS,
) -> Decimal:
    """A unit price as it is shown: at least `significant` significant digits, never fewer decimals than the
    currency's minor unit, and never a rounded-away integer digit (123456789 stays 123456789).

    0.000000123 → 0.000000123000; 3.5 USD → 3.50000; 0.000427785 → 0.000427785.
    """
    number = to_decimal(amount)
    places = minor_units(currency) if currency else 0
    if number.is_zero():
        return Decimal(0).quantize(Decimal(1).scaleb(-places))
    return decimals.significant(number, significant, rounding=ROUND_HALF_UP, coarsest_exponent=-places)


def _plain(number: Decimal) -> str:
    """Fixed-point notation of a finite Decimal; any zero is "0"."""
    if number.is_zero():
        return "0"
    return format(number, "f")


def exact(value: Decimal | int | str) -> str:
    """An exact figure as written in the API and the CSV: plain notation, zero as "0", at most 30 significant digits
    (a longer one rounded half-even and stripped of trailing zeros). 2.00000E+7 → "20000000"; 0E-30 → "0";
    730.0000000000000000000000000000001 → "730"; 6570.00 → "6570.00"."""
    number = to_decimal(value)
    if number.is_zero():
        return "0"
    if significant_digits(number) > EXACT_SIGNIFICANT_DIGITS:
        with localcontext() as context:
            context.prec = _EXACT_PRECISION
            number = decimals.significant(number, EXACT_SIGNIFICANT_DIGITS).normalize()
    return _plain(number)


class FigureKind(StrEnum):
    MONEY = "money"
    UNIT_COST = "unit_cost"
    QUANTITY = "quantity"


#: Words in a figure's name that make it a unit cost, then a quantity; any other named amount is money. A new figure
#: follows the rule by its name: "..._price", "..._unit_cost" are unit costs; "..._hours", "..._share" quantities.
UNIT_COST_WORDS = ("unit_cost", "price")
QUANTITY_WORDS = (
    "hours", "outputs", "requests", "share", "acceptance", "rate", "failures", "checkpoints", "margin", "tokens",
    "months", "utilisation", "utilization", "gpus", "nodes", "budget", "throughput", "interval", "count", "ms",
)


def figure_kind(name: str) -> FigureKind:
    """How a figure is shown, from its name: a unit cost (`effective_unit_cost`, `hourly_price`), a quantity
    (`billed_hours_per_gpu`, `productive_share`, `generated_outputs`) or money (`gpu_cost`, `total_cost`, …)."""
    words = name.lower().split("_")
    if "unit_cost" in name or any(word in UNIT_COST_WORDS for word in words):
        return FigureKind.UNIT_COST
    if any(word in QUANTITY_WORDS for word in words):
        return FigureKind.QUANTITY
    return FigureKind.MONEY


def round_quantity(value: Decimal | int | str, significant: int = QUANTITY_SIGNIFICANT_DIGITS) -> Decimal:
    """A quantity as it is shown: `significant` significant digits half-even, integer digits kept, trailing zeros
    dropped (730.0000000000000000000000000000001 → 730; 0.50735667… → 0.507357)."""
    number = to_decimal(value)
    if number.is_zero():
        return Decimal(0)
    rounded = decimals.significant(number, significant, rounding=ROUND_HALF_EVEN, coarsest_exponent=0).normalize()
    # normalize() may leave an exponent (7.3E+2): bring it back to an integer exponent for plain printing.
    return rounded.quantize(Decimal(1)) if rounded.as_tuple().exponent > 0 else rounded


def round_figure(value: Decimal | int | str, kind: FigureKind | str, currency: str | None = None) -> Decimal:
    """`value` rounded for display as its kind asks (money needs the currency; without one it is a quantity)."""
    kind = FigureKind(kind)
    if kind is FigureKind.MONEY and currency:
        return round_to_minor_unit(value, currency)
    if kind is FigureKind.UNIT_COST:
        return round_unit_price(value, currency)
    return round_quantity(value)


def shown(value: Decimal | int | str | None, kind: FigureKind | str, currency: str | None = None) -> str | None:
    """The figure as a person reads it (plain notation, no grouping: a page adds its localised separators)."""
    if value is None:
        return None
    rounded = round_figure(value, kind, currency)
    if rounded.is_zero():
        return format(abs(rounded), "f")
    return format(rounded, "f")


def percent(share: Decimal | int | str) -> Decimal:
    """A share (0.4926…) as the percentage shown, to `PERCENT_DECIMALS` decimals half-even (49.3); zero as 0.0."""
    with localcontext() as context:
        context.prec = _EXACT_PRECISION
        value = (to_decimal(share) * 100).quantize(Decimal(1).scaleb(-PERCENT_DECIMALS), rounding=ROUND_HALF_EVEN)
    return abs(value) if value.is_zero() else value
