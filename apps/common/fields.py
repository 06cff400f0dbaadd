"""Model fields shared by the apps. ExactDecimalField keeps money exact on SQLite as on PostgreSQL.

Django's SQLite backend reads a DecimalField through a float rounded to 15 significant digits (see
django/db/backends/sqlite3/operations.py, get_decimalfield_converter), and SQLite's NUMERIC affinity may store the
value as a REAL as well. An 18-digit IDR amount does not survive that. ExactDecimalField stores the canonical decimal
string in a text column instead: every backend keeps the digits, and the Python side only ever sees Decimal.

The price of that choice: the database compares these columns as text, so filter and sort by them in Python (the
comparison table does), never with `__gt` or `order_by` in SQL.
"""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.core import checks, exceptions
from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.common import money


class ExactDecimalField(models.Field):
    """An exact Decimal stored as its canonical string. max_digits/decimal_places bound what is accepted."""

    description = _("Exact decimal number")
    empty_strings_allowed = False
    default_error_messages = {
        "invalid": _("“%(value)s” is not a decimal number."),
        "max_digits": _("Use at most %(max)s significant digits."),
        "max_decimal_places": _("Use at most %(max)s decimal places."),
        "negative": _("This value cannot be negative."),
    }

    def __init__(self, *args, max_digits: int = 30, decimal_places: int = 18, allow_negative: bool = False, **kwargs):
        self.max_digits = max_digits
        self.decimal_places = decimal_places
        self.allow_negative = allow_negative
        kwargs.setdefault("max_length", 64)
        super().__init__(*args, **kwargs)

    def check(self, **kwargs):
        errors = super().check(**kwargs)
        if not (0 <= self.decimal_places <= self.max_digits) or self.max_digits + 3 > self.max_length:
            errors.append(
                checks.Error(
                    "ExactDecimalField needs 0 <= decimal_places <= max_digits and max_length >= max_digits + 3.",
                    obj=self,
                    id="common.E001",
                )
            )
        return errors

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["max_digits"] = self.max_digits
        kwargs["decimal_places"] = self.decimal_places
        if self.allow_negative:
            kwargs["allow_negative"] = True
        if kwargs.get("max_length") == 64:
            del kwargs["max_length"]
        return name, path, args, kwargs

    def get_internal_type(self) -> str:
        # A varchar column on every backend: text affinity on SQLite, so nothing is turned into a REAL.
        return "CharField"

    def to_python(self, value):
        if value is None or (isinstance(value, Decimal) and value.is_finite()):
            return value
        if value == "":
            return None
        try:
            return money.to_decimal(value)
        except money.MoneyError:
            raise exceptions.ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": value}
            ) from None

    def from_db_value(self, value, expression, connection):
        if value is None:
            return None
        return Decimal(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return None
        if isinstance(value, float):
            raise TypeError(f"{self.name}: refusing float {value!r}; money is never a float, pass a string.")
        return money.canonical(value)

    def validate(self, value, model_instance):
        super().validate(value, model_instance)
        if value is None:
            return
        sign, digits, exponent = value.as_tuple()
        decimals = max(-exponent, 0)
        # Integer digits plus written decimals: what a database NUMERIC(max_digits, decimal_places) would demand.
        whole_digits = max(len(digits) + exponent, 0)
        if decimals > self.decimal_places:
            raise exceptions.ValidationError(
                self.error_messages["max_decimal_places"], code="max_decimal_places",
                params={"max": self.decimal_places},
            )
        if whole_digits + decimals > self.max_digits:
            raise exceptions.ValidationError(
                self.error_messages["max_digits"], code="max_digits", params={"max": self.max_digits}
            )
        if sign and not value.is_zero() and not self.allow_negative:
            raise exceptions.ValidationError(self.error_messages["negative"], code="negative")

    def value_to_string(self, obj):
        value = self.value_from_object(obj)
        return "" if value is None else money.canonical(value)

    def formfield(self, **kwargs):
        defaults = {
            "form_class": forms.DecimalField,
            "max_digits": self.max_digits,
            "decimal_places": self.decimal_places,
        }
        if not self.allow_negative:
            defaults["min_value"] = Decimal(0)
        defaults.update(kwargs)
        # CharField.formfield would pass max_length to the form field; DecimalField does not take it.
        return models.Field.formfield(self, **defaults)
