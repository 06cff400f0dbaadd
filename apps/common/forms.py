"""What every browser form shares."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError


def add_service_errors(form: forms.BaseForm, error: ValidationError) -> None:
    """Put a service's ValidationError on the form: each message on the field it names when the form has that field,
    the rest (Django's "__all__", fields the form does not show, a message without a field) on the form itself."""
    if hasattr(error, "error_dict"):
        for field, errors in error.error_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, error.error_list)
