"""catalog_gpus: the estimator sees every catalog device with its memory and the basis of that memory."""

import pytest

from apps.workloads.memory.capacity import CapacitySource
from apps.workloads.selectors import catalog_gpus

pytestmark = pytest.mark.django_db


def by_name(items):
    return {item.gpu.display_name: item for item in items}


def test_the_h100_sxm_is_counted_on_its_sourced_catalog_usable_memory(loaded_catalog):
    """81,559 MiB × 1,048,576 = 85,520,809,984 B, labelled "catalog" with its source; the H100 PCIe (no sourced
    reading) stays on the datasheet's 80 × 10⁹ B."""
    items = by_name(catalog_gpus())
    h100 = items["NVIDIA H100 SXM"].capacity.capacity
    assert (h100.total_bytes, h100.source) == (85_520_809_984, CapacitySource.CATALOG)
    assert "https://github.com/modal-labs/modal-client/pull/2797" in h100.source_label
    pcie = items["NVIDIA H100 PCIe"].capacity.capacity
    assert (pcie.total_bytes, pcie.source) == (80 * 10**9, CapacitySource.DATASHEET)


def test_mig_profiles_and_the_cpu_device_are_devices_with_their_memory(loaded_catalog):
    items = by_name(catalog_gpus())
    mig = items["NVIDIA A100 80GB SXM MIG 1g.10gb"]
    assert (mig.capacity.capacity.total_bytes, mig.capacity.capacity.source) == (10 * 10**9, CapacitySource.DATASHEET)
    assert mig.capacity.family is None  # a slice is not the whole card the cheat sheet describes
    cpu = items["CPU host 64 GB RAM (default)"]
    assert cpu.capacity.capacity.total_bytes == 64 * 10**9
    assert cpu.capacity.capacity.source_label.startswith("host memory stated for this CPU device")
    assert len(items) == 30  # every device of the bundled catalog has a memory figure
