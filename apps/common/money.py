"""Money as exact Decimal: ISO 4217 currencies, exact conversion, and the two ways an amount is shown.

Pure Python (no Django). Amounts stay unrounded in storage, in computation and in exports; they are rounded only when
shown: a total to its currency's minor unit, a unit price or unit cost to at least six significant digits.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext

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
    digits = to_decimal(value).normalize().as_tuple().digits
    return len(digits) if any(digits) else 0


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
