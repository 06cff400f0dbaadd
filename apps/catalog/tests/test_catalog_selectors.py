"""Catalog reads: the whole catalog in a fixed number of queries, and the usable memory with its source."""

import datetime
from decimal import Decimal

import pytest

from apps.catalog.models import SpecKey
from apps.catalog.selectors import MemoryBasis, gpu_catalog, usable_memory_bytes
from apps.catalog.tests.factories import GpuModelFactory, GpuSpecFactory

pytestmark = pytest.mark.django_db


def test_the_catalog_with_every_figure_takes_two_queries(django_assert_num_queries):
    for _ in range(5):
        gpu = GpuModelFactory()
        GpuSpecFactory(gpu=gpu, key=SpecKey.MEMORY_GB)
        GpuSpecFactory(gpu=gpu, key=SpecKey.TDP_W, value=700)
    with django_assert_num_queries(2):
        figures = [(gpu.display_name, key, spec) for gpu in gpu_catalog() for key, spec in gpu.specs_in_order()]
    assert len(figures) == 5 * len(SpecKey.values)
    assert sum(spec is not None for _, _, spec in figures) == 10


def test_usable_memory_prefers_the_agents_measurement(h200_sxm):
    memory = usable_memory_bytes(
        h200_sxm, measured_mib=143_000, measured_source="agent on node-7", measured_on=datetime.date(2026, 12, 1)
    )
    assert memory.bytes == 143_000 * 1024 * 1024
    assert memory.basis == MemoryBasis.MEASURED
    assert memory.source == "agent on node-7"


def test_usable_memory_uses_the_catalogs_driver_reading_when_recorded(h200_sxm):
    memory = usable_memory_bytes(h200_sxm)
    assert memory.bytes == 143_771 * 1024 * 1024
    assert memory.basis == MemoryBasis.CATALOG_USABLE
    assert memory.source == "nvidia-smi on an H200 SXM, driver 580.159, 2026-10-27"
    assert round(memory.gib, 1) == Decimal("140.4")  # DESIGN.md: an H200 reports ≈ 140.4 GiB


def test_usable_memory_falls_back_to_the_datasheet_gigabytes_never_converted_to_gib(loaded_catalog):
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="SXM")
    memory = usable_memory_bytes(h100)
    assert memory.bytes == 80 * 10**9
    assert memory.basis == MemoryBasis.DATASHEET
    assert memory.source == "https://www.nvidia.com/en-us/data-center/h100/"
    assert memory.as_of == datetime.date(2026, 12, 2)


def test_usable_memory_is_unknown_when_the_catalog_records_no_memory():
    assert usable_memory_bytes(GpuModelFactory()) is None
