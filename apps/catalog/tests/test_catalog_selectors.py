"""Catalog reads: the whole catalog in a fixed number of queries, and the usable memory with its source."""

import datetime
from decimal import Decimal

import pytest

from apps.catalog.models import SpecKey
from apps.catalog.selectors import (
    MemoryBasis,
    ReferencePrice,
    gpu_catalog,
    gpu_get,
    reference_price,
    usable_memory_bytes,
)
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
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="PCIe")  # no sourced usable MiB in the bundled file
    memory = usable_memory_bytes(h100)
    assert memory.bytes == 80 * 10**9
    assert memory.basis == MemoryBasis.DATASHEET
    assert memory.source == "https://www.nvidia.com/en-us/data-center/h100/"
    assert memory.as_of == datetime.date(2026, 12, 2)


def test_usable_memory_is_unknown_when_the_catalog_records_no_memory():
    assert usable_memory_bytes(GpuModelFactory()) is None


def test_the_h100_sxm_uses_its_sourced_driver_reading(loaded_catalog):
    """81,559 MiB × 1,048,576 B/MiB = 85,520,809,984 B (79.65 GiB), not the datasheet's 80 × 10⁹ B."""
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="SXM")
    memory = usable_memory_bytes(h100)
    assert memory.bytes == 85_520_809_984
    assert memory.basis == MemoryBasis.CATALOG_USABLE
    assert memory.source == "https://github.com/modal-labs/modal-client/pull/2797"
    assert memory.as_of == datetime.date(2025, 1, 23)


def test_a_measured_figure_still_wins_over_the_catalogs_driver_reading(loaded_catalog):
    h100 = loaded_catalog.get(name="NVIDIA H100", variant="SXM")
    memory = usable_memory_bytes(h100, measured_mib=81_000, measured_source="agent on node-3")
    assert (memory.bytes, memory.basis, memory.source) == (81_000 * 1024**2, MemoryBasis.MEASURED, "agent on node-3")


def test_a_mig_profile_counts_its_profile_memory_on_the_datasheet_basis(loaded_catalog):
    mig = loaded_catalog.get(name="NVIDIA H100", variant="SXM MIG 1g.10gb")
    memory = usable_memory_bytes(mig)
    assert (memory.bytes, memory.basis) == (10 * 10**9, MemoryBasis.DATASHEET)
    assert memory.source == "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"


def test_a_cpu_device_counts_its_stated_host_memory_labelled_as_such(loaded_catalog):
    cpu = loaded_catalog.get(device_kind="cpu")
    memory = usable_memory_bytes(cpu)
    assert (memory.bytes, memory.basis) == (64 * 10**9, MemoryBasis.HOST_STATED)
    assert memory.source.startswith("Planning default of this catalog")


def test_reference_price_gives_amount_currency_source_and_date(loaded_catalog):
    a10g = gpu_get(pk=loaded_catalog.get(name="NVIDIA A10G").pk)
    assert reference_price(a10g) == ReferencePrice(
        amount=Decimal("1.006"),
        currency="USD",
        source="https://www.factualminds.com/blog/amazon-ec2-on-demand-pricing-instance-families-2026/",
        as_of=datetime.date(2026, 6, 17),
        detail=(
            "AWS EC2 On-Demand, us-east-1, Linux, as quoted by the page (June 2026): g5.xlarge (1 × A10G) $1.006/h ÷ "
            "1 GPU = $1.006 per GPU-hour, host vCPUs and memory included"
        ),
    )


def test_reference_price_is_none_when_the_catalog_has_none(loaded_catalog):
    assert reference_price(loaded_catalog.get(name="NVIDIA GB200")) is None


def test_a_reference_price_entered_without_a_url_keeps_its_description_as_source():
    gpu = GpuModelFactory()
    GpuSpecFactory(
        gpu=gpu,
        key=SpecKey.REFERENCE_PRICE_PER_GPU_HOUR,
        unit="USD/h",
        value=Decimal("12.2900"),
        source_url="",
        source_text="p5.48xlarge $98.32/h ÷ 8 GPUs",
    )
    price = reference_price(gpu)
    assert (price.amount, price.source, price.detail) == (Decimal("12.29"), "p5.48xlarge $98.32/h ÷ 8 GPUs", "")
