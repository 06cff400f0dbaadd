"""Fixtures of the catalog's tests: the bundled catalog loaded through its command, and its H200 SXM."""

import io

import pytest
from django.core.management import call_command

from apps.catalog.models import GpuModel


@pytest.fixture
def loaded_catalog(db):
    call_command("load_catalog", stdout=io.StringIO())
    return GpuModel.objects.all()


@pytest.fixture
def h200_sxm(loaded_catalog):
    return GpuModel.objects.get(name="NVIDIA H200", variant="SXM")
