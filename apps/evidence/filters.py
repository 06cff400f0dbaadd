"""The FilterSet of the phase-4 inputs, shared by the API and the browser."""

import django_filters
from django.utils.translation import gettext_lazy as _

from apps.common.filters import IdFilter
from apps.evidence.models import CandidateFigure, FigureMetric, FigureSource


class CandidateFigureFilterSet(django_filters.FilterSet):
    candidate = IdFilter(label=_("Candidate"), field_name="candidate_id")
    workload_summary = IdFilter(
        label=_("Workload summary version"), field_name="candidate__workload_summary_id"
    )
    metric = django_filters.ChoiceFilter(label=_("Figure"), choices=FigureMetric.choices)
    source = django_filters.ChoiceFilter(label=_("Source"), choices=FigureSource.choices)

    class Meta:
        model = CandidateFigure
        fields = ["candidate", "workload_summary", "metric", "source"]
