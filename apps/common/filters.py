"""Filter fields shared by the apps' FilterSets (django-filter), checked at the edge.

    candidate = IdFilter(label=_("Candidate"), field_name="candidate_id")

A record id in a query string is an integer from 0 to 2**63 - 1 (a BigAutoField); anything else — a fraction, a
number past the database's integer range — is a 400 naming the parameter, never a query the database refuses (SQLite
raises OverflowError on an integer past 64 bits). The schema says the same: type integer with those bounds.
"""

from __future__ import annotations

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

#: The largest id a BigAutoField holds (SQLite INTEGER and PostgreSQL bigint alike).
MAX_ID = 2**63 - 1


@extend_schema_field({"type": "integer", "minimum": 0, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """A record id: an integer in 0..MAX_ID (a form error, so a 400, outside it)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)
