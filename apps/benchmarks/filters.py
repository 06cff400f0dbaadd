"""One FilterSet per model, shared by the user API and the browser lists."""

import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _

from apps.benchmarks.models import BenchmarkPlan, FigureMeasurement, Job, JobStatus, PlanStatus
from apps.common.filters import IdFilter


def _plans(request):
    return BenchmarkPlan.objects.for_user(getattr(request, "user", None))


class JobFilterSet(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(label=_("Status"), choices=JobStatus.choices)
    kind = django_filters.CharFilter(label=_("Kind"))
    # Plan names are data: the select is marked translate="no" (its empty choice is only dashes).
    plan = django_filters.ModelChoiceFilter(label=_("Plan"), queryset=_plans,
                                            widget=forms.Select(attrs={"translate": "no"}))

    class Meta:
        model = Job
        fields = ["status", "kind", "plan"]


class PlanFilterSet(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(label=_("Status"), choices=PlanStatus.choices)

    class Meta:
        model = BenchmarkPlan
        fields = ["status"]


class FigureMeasurementFilterSet(django_filters.FilterSet):
    candidate = IdFilter(label=_("Candidate"), field_name="figure__candidate_id")
    figure = IdFilter(label=_("Figure"), field_name="figure_id")
    rehearsal = django_filters.BooleanFilter(label=_("Rehearsal"))

    class Meta:
        model = FigureMeasurement
        fields = ["candidate", "figure", "rehearsal"]
