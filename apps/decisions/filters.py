"""The FilterSet of the phase-4 inputs, shared by the API and the browser."""

import django_filters
from django.utils.translation import gettext_lazy as _

from apps.decisions.models import InputMetric, InputSource, Phase4Input


class Phase4InputFilterSet(django_filters.FilterSet):
    candidate = django_filters.NumberFilter(label=_("Candidate"), field_name="candidate_id")
    workload_summary = django_filters.NumberFilter(
        label=_("Workload summary version"), field_name="candidate__workload_summary_id"
    )
    metric = django_filters.ChoiceFilter(label=_("Figure"), choices=InputMetric.choices)
    source = django_filters.ChoiceFilter(label=_("Source"), choices=InputSource.choices)

    class Meta:
        model = Phase4Input
        fields = ["candidate", "workload_summary", "metric", "source"]
