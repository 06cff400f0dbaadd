"""The one FilterSet of the catalog, shared by the browser list and the API."""

import django_filters
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import DeviceKind, FormFactor, GpuModel


class GpuModelFilterSet(django_filters.FilterSet):
    search = django_filters.CharFilter(label=_("Name contains"), method="filter_search")
    form_factor = django_filters.ChoiceFilter(label=_("Form factor"), choices=FormFactor.choices)
    device_kind = django_filters.ChoiceFilter(label=_("Device"), choices=DeviceKind.choices)

    class Meta:
        model = GpuModel
        fields = ["search", "form_factor", "device_kind"]

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(name__icontains=value) | Q(variant__icontains=value))
