"""The one FilterSet of workload summaries, shared by the browser list and the API."""

import django_filters
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.workloads.models import Status, WorkloadSummary, WorkloadType


class WorkloadSummaryFilterSet(django_filters.FilterSet):
    search = django_filters.CharFilter(label=_("Name or model contains"), method="filter_search")
    workload_type = django_filters.ChoiceFilter(label=_("Workload type"), choices=WorkloadType.choices)
    status = django_filters.ChoiceFilter(label=_("State"), choices=Status.choices)
    latest = django_filters.BooleanFilter(label=_("Newest version only"), method="filter_latest")

    class Meta:
        model = WorkloadSummary
        fields = ["search", "workload_type", "status", "latest"]

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(name__icontains=value) | Q(model_name__icontains=value))

    def filter_latest(self, queryset, name, value):
        return queryset.latest_versions() if value else queryset
