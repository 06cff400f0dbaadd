"""The FilterSet of decision records, shared by the records list page and the records API."""

import django_filters
from django import forms
from django.db.models import Exists, OuterRef
from django.utils.translation import gettext_lazy as _

from apps.decisions.models import CapacityModel, DecisionRecord, RecordStatus, RevisitFlag
from apps.workloads.models import Workload


class RecordFilterSet(django_filters.FilterSet):
    search = django_filters.CharFilter(label=_("Search"), method="filter_search")
    status = django_filters.ChoiceFilter(label=_("Status"), choices=RecordStatus.choices)
    workload = django_filters.ModelChoiceFilter(
        label=_("Workload"),
        field_name="workload_summary__workload",
        queryset=Workload.objects.none(),
        widget=forms.Select(attrs={"translate": "no"}),
    )
    capacity_model = django_filters.ChoiceFilter(label=_("Capacity model"), choices=CapacityModel.choices)
    flagged = django_filters.BooleanFilter(label=_("To revisit"), method="filter_flagged")

    class Meta:
        model = DecisionRecord
        fields = ["search", "status", "workload", "capacity_model", "flagged"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user = getattr(self.request, "user", None)
        self.filters["workload"].queryset = (
            Workload.objects.for_user(user) if user is not None else Workload.objects.none()
        )

    def filter_search(self, queryset, name, value):
        value = value.strip()
        return queryset.filter(title__icontains=value) if value else queryset

    def filter_flagged(self, queryset, name, value):
        if value is None:
            return queryset
        open_flag = RevisitFlag.objects.filter(record=OuterRef("pk"), cleared_at__isnull=True)
        return queryset.filter(Exists(open_flag)) if value else queryset.exclude(Exists(open_flag))
