"""The FilterSets of the quotes app, shared by the browser lists and the API."""

import django_filters
from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import GpuModel
from apps.quotes.models import (
    CURRENCY_CHOICES,
    Candidate,
    CandidateKind,
    CommercialModel,
    PriceUnit,
    Quote,
    Vendor,
)
from apps.workloads.models import WorkloadSummary

#: Choices that are data (names, codes): the pseudo-locale check and browsers' translators leave them alone.
DATA_CHOICES = {"translate": "no"}


class QuoteFilterSet(django_filters.FilterSet):
    search = django_filters.CharFilter(label=_("Search"), method="filter_search")
    vendor = django_filters.ModelChoiceFilter(
        label=_("Vendor"), queryset=Vendor.objects.none(), widget=forms.Select(attrs=DATA_CHOICES)
    )
    gpu = django_filters.ModelChoiceFilter(
        label=_("GPU"), queryset=GpuModel.objects.all(), widget=forms.Select(attrs=DATA_CHOICES)
    )
    commercial_model = django_filters.ChoiceFilter(label=_("Commercial model"), choices=CommercialModel.choices)
    price_unit = django_filters.ChoiceFilter(label=_("Price unit"), choices=PriceUnit.choices)
    currency = django_filters.ChoiceFilter(
        label=_("Currency"), choices=CURRENCY_CHOICES, widget=forms.Select(attrs=DATA_CHOICES)
    )

    class Meta:
        model = Quote
        fields = ["search", "vendor", "gpu", "commercial_model", "price_unit", "currency"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.request
        user = getattr(request, "user", None)
        self.filters["vendor"].queryset = Vendor.objects.for_user(user) if user is not None else Vendor.objects.none()

    def filter_search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(
            Q(title__icontains=value)
            | Q(vendor__name__icontains=value)
            | Q(sku__icontains=value)
            | Q(region__icontains=value)
            | Q(served_model__icontains=value)
        )


class CandidateFilterSet(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(label=_("Kind"), choices=CandidateKind.choices)
    quote = django_filters.ModelChoiceFilter(
        label=_("Quote"), queryset=Quote.objects.none(), widget=forms.Select(attrs=DATA_CHOICES)
    )
    workload_summary = django_filters.ModelChoiceFilter(
        label=_("Workload version"), queryset=WorkloadSummary.objects.none(), widget=forms.Select(attrs=DATA_CHOICES)
    )

    class Meta:
        model = Candidate
        fields = ["kind", "quote", "workload_summary"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user = getattr(self.request, "user", None)
        self.filters["quote"].queryset = Quote.objects.for_user(user) if user is not None else Quote.objects.none()
        self.filters["workload_summary"].queryset = (
            WorkloadSummary.objects.for_user(user) if user is not None else WorkloadSummary.objects.none()
        )
