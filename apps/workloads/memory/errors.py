"""ShapeError, the estimator's one input error (field name + translatable template), and the checks that raise it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any


def gettext_noop(message: str) -> str:
    """Mark a message for `makemessages` without importing Django; the web layer translates `ShapeError.template`."""
    return message


class ShapeError(ValueError):
    """Invalid estimator input. `field` names the input at fault; `template` % `params` rebuilds `message`."""

    def __init__(self, field: str, message: str, *, template: str | None = None, params: Mapping | None = None):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.template = message if template is None else template
        self.params = dict(params or {})


def shape_error(field_name: str, template: str, **params: Any) -> ShapeError:
    """A ShapeError whose message is `template` % `params`; the template stays for translation."""
    message = template % params if params else template
    return ShapeError(field_name, message, template=template, params=params)


def check_int(field_name: str, value: Any, *, minimum: int = 1, maximum: int) -> int:
    """`value` if it is a whole number within [minimum, maximum]; ShapeError naming the field otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise shape_error(field_name, gettext_noop("Must be a whole number, got %(value)r."), value=value)
    if value < minimum:
        raise shape_error(
            field_name, gettext_noop("Must be at least %(minimum)s, got %(value)s."), minimum=minimum, value=value
        )
    if value > maximum:
        raise shape_error(
            field_name,
            gettext_noop("%(value)s is implausibly large (limit %(maximum)s); check the unit."),
            value=value,
            maximum=maximum,
        )
    return value


def check_fraction(field_name: str, value: Any, *, maximum: float = 1.0) -> Fraction:
    """`value` as a Fraction if it is a finite number within [0, maximum]; ShapeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction | Decimal):
        raise shape_error(field_name, gettext_noop("Must be a number, got %(value)r."), value=value)
    if not math.isfinite(value) or value < 0 or value > maximum:
        raise shape_error(
            field_name, gettext_noop("Must be between 0 and %(maximum)s, got %(value)s."), maximum=maximum, value=value
        )
    return Fraction(value)


def require(value: int | None, field_name: str, purpose: str) -> int:
    """`value` unless it is missing; ShapeError saying what the field is needed for otherwise."""
    if value is None:
        raise shape_error(field_name, gettext_noop("Needed for %(purpose)s."), purpose=purpose)
    return value
