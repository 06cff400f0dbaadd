"""Factories for the quotes app's tests (factory_boy). Money is always given as strings, never floats."""

import datetime

import factory
from django.utils import timezone

from apps.catalog.models import FormFactor, GpuModel
from apps.quotes.models import (
    CommercialModel,
    PriceComponent,
    PriceUnit,
    PriceVersion,
    Quote,
    SourceKind,
    Vendor,
)


class GpuFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GpuModel
        django_get_or_create = ("name", "variant")

    vendor = "NVIDIA"
    name = "NVIDIA H200"
    variant = "SXM"
    form_factor = FormFactor.SXM
    memory_type = "HBM3e"


class VendorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Vendor

    team = None
    name = factory.Sequence(lambda n: f"Cloud {n}")
    website = "https://cloud.example.test"


class QuoteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Quote

    team = factory.LazyAttribute(lambda quote: quote.vendor.team)
    vendor = factory.SubFactory(VendorFactory)
    title = factory.Sequence(lambda n: f"8× H200 on-demand #{n}")
    gpu = factory.SubFactory(GpuFactory)
    gpus_per_node = 8
    commercial_model = CommercialModel.ON_DEMAND
    price_unit = PriceUnit.GPU_HOUR
    currency = "USD"


class PriceVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PriceVersion

    quote = factory.SubFactory(QuoteFactory)
    component = PriceComponent.LIST_PRICE
    number = factory.Sequence(lambda n: n + 1)
    amount = "3.50"
    currency = factory.LazyAttribute(lambda price: price.quote.currency)
    source_kind = SourceKind.PRICE_PAGE
    source_reference = "https://cloud.example.test/pricing"
    observed_at = factory.LazyFunction(lambda: timezone.now() - datetime.timedelta(days=1))
