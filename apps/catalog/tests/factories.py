"""Factories for the catalog's tests (factory_boy)."""

import datetime
from decimal import Decimal

import factory

from apps.catalog.models import SPEC_UNITS, FormFactor, GpuModel, GpuSpec, SpecKey


class GpuModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GpuModel
        django_get_or_create = ("name", "variant")

    vendor = "NVIDIA"
    name = factory.Sequence(lambda n: f"NVIDIA Test GPU {n}")
    variant = "SXM"
    form_factor = FormFactor.SXM
    memory_type = "HBM3e"
    host_interface = "PCIe Gen5"
    datasheet_url = "https://www.nvidia.com/en-us/data-center/"


class GpuSpecFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GpuSpec

    gpu = factory.SubFactory(GpuModelFactory)
    key = SpecKey.MEMORY_GB
    value = Decimal("80")
    unit = factory.LazyAttribute(lambda spec: SPEC_UNITS[spec.key])
    source_url = "https://www.nvidia.com/en-us/data-center/"
    as_of = datetime.date(2026, 12, 2)
