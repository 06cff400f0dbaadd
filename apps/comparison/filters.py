"""The FilterSet of the mistakes-check waivers, for the user API."""

import django_filters
from django.utils.translation import gettext_lazy as _

from apps.common.filters import IdFilter
from apps.comparison.models import MistakeWaiver


class MistakeWaiverFilterSet(django_filters.FilterSet):
    # An id past the database's range is a 400 naming `candidate`, not a query SQLite refuses (apps.common.filters).
    candidate = IdFilter(label=_("Candidate"), field_name="candidate_id")

    class Meta:
        model = MistakeWaiver
        fields = ["candidate"]
