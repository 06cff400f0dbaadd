"""Refusals a service raises besides a plain ValidationError. Both are ValidationErrors, so a form shows them like
any other refusal; the API's exception handler (apps.common.api_errors) gives each its status and body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError


class Conflict(ValidationError):
    """The object's state does not allow this step now (it moved on, or someone acted first): the API answers 409."""


class DetailedValidationError(ValidationError):
    """A refusal that also says, in data a client can act on, what is missing (which checklist answers, …).

    The API adds `details` to the 400 body beside the messages; a form shows the messages only.
    """

    def __init__(self, message: Any, *, details: Mapping[str, Any], code: str | None = None,
                 params: Mapping[str, Any] | None = None) -> None:
        super().__init__(message, code=code, params=params)
        self.details = dict(details)
