"""The user API's one exception handler (settings REST_FRAMEWORK["EXCEPTION_HANDLER"]).

Views call services and let their errors propagate; this turns them into DRF's own error shapes:

- a Django ValidationError is a 400 with `{"field": ["message", …], "non_field_errors": ["message", …]}` — the shape
  of a serializer's errors, so a client reads a refused service exactly like a refused input;
- a `Conflict` (the object's state forbids the step) is a 409 with `{"detail": "message"}`;
- Django's PermissionDenied and Http404 are a 403 and a 404 with `{"detail": "message"}`, as DRF does.

The agent API (/api/agent/v1) has its own error body (docs/agent-protocol.md §1.1): its base view answers every
exception itself, so this handler never sees them.
"""

from __future__ import annotations

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, status
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from apps.common.errors import Conflict, DetailedValidationError


class StateConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = _("The object's state does not allow this step.")
    default_code = "conflict"


def field_errors(error: DjangoValidationError) -> dict[str, list[ErrorDetail]]:
    """A Django ValidationError as DRF's field-error dict: Django's "__all__" becomes "non_field_errors", a message
    without a field too, and every message keeps its code."""
    detail: dict[str, list[ErrorDetail]] = {}
    for field, errors in error.update_error_dict({}).items():
        key = api_settings.NON_FIELD_ERRORS_KEY if field == NON_FIELD_ERRORS else field
        detail.setdefault(key, []).extend(
            ErrorDetail(message, code=item.code or "invalid") for item in errors for message in item
        )
    return detail


def exception_handler(exc, context):
    if isinstance(exc, Conflict):
        exc = StateConflict(" ".join(exc.messages))
    elif isinstance(exc, DjangoValidationError):
        detail = field_errors(exc)
        if isinstance(exc, DetailedValidationError):
            detail.update(exc.details)
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)
