"""Reads of the GPU catalog. The catalog is global: every user with a role sees all of it."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

from django.db import models
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import REFERENCE_PRICE_CURRENCY, DeviceKind, GpuModel, GpuSpec, SpecKey

BYTES_PER_MIB = 1024 * 1024
BYTES_PER_GB = 10**9


def gpu_catalog() -> models.QuerySet[GpuModel]:
    """Every GPU model with all its figures (and who entered them): two queries however long the catalog is."""
    return GpuModel.objects.select_related("parent").prefetch_related(
        Prefetch("specs", queryset=GpuSpec.objects.select_related("entered_by").order_by("key"))
    )


def gpu_get(*, pk) -> GpuModel:
    """One GPU model with its figures, or Http404."""
    return get_object_or_404(gpu_catalog(), pk=pk)


class MemoryBasis(models.TextChoices):
    """Where a usable-memory figure comes from, best first (DESIGN.md, "Memory-fit estimator")."""

    MEASURED = "measured", _("measured by the agent (NVML)")
    CATALOG_USABLE = "catalog_usable", _("usable memory reported by the driver (catalog)")
    DATASHEET = "datasheet", _("datasheet GB × 10⁹ bytes (conservative)")
    HOST_STATED = "host_stated", _("host memory stated for this CPU device, GB × 10⁹ bytes")


@dataclass(frozen=True)
class UsableMemory:
    bytes: int
    basis: MemoryBasis
    source: str  # the figure's own source: a URL, a description, or what the caller said about the measurement
    as_of: datetime.date | None

    @property
    def basis_label(self) -> str:
        return str(self.basis.label)

    @property
    def gib(self) -> Decimal:
        return Decimal(self.bytes) / Decimal(1024**3)

    @property
    def source_is_url(self) -> bool:
        return self.source.startswith(("http://", "https://"))


def usable_memory_bytes(
    gpu: GpuModel,
    *,
    measured_mib: int | Decimal | None = None,
    measured_source: str = "",
    measured_on: datetime.date | None = None,
) -> UsableMemory | None:
    """The memory a process can really have on this GPU, labelled with where the figure came from.

    Order: the agent's measured total (NVML, MiB) when the caller has one; else the catalog's usable MiB where
    recorded (an H200 SXM reports 143,771 MiB); else the datasheet GB × 10⁹ bytes. Datasheet HBM "GB" is never
    converted to GiB. None when the catalog records neither figure and nothing was measured.
    A MIG profile's datasheet figure is its profile memory (NVIDIA's MIG user guide); a CPU device's memory figure is
    the host memory stated for it (labelled HOST_STATED, never a datasheet).
    """
    if measured_mib is not None:
        return UsableMemory(
            bytes=int(Decimal(measured_mib) * BYTES_PER_MIB),
            basis=MemoryBasis.MEASURED,
            source=measured_source,
            as_of=measured_on,
        )
    usable = gpu.spec(SpecKey.USABLE_MIB)
    if usable is not None:
        return UsableMemory(
            bytes=int(usable.value * BYTES_PER_MIB),
            basis=MemoryBasis.CATALOG_USABLE,
            source=usable.source,
            as_of=usable.as_of,
        )
    datasheet = gpu.spec(SpecKey.MEMORY_GB)
    if datasheet is not None:
        return UsableMemory(
            bytes=int(datasheet.value * BYTES_PER_GB),
            basis=MemoryBasis.HOST_STATED if gpu.device_kind == DeviceKind.CPU else MemoryBasis.DATASHEET,
            source=datasheet.source,
            as_of=datasheet.as_of,
        )
    return None


@dataclass(frozen=True)
class ReferencePrice:
    """A public reference price per GPU-hour (e.g. a cloud's on-demand rate ÷ its GPUs), never a quote."""

    amount: Decimal
    currency: str
    source: str  # the URL when there is one, else the description
    as_of: datetime.date
    detail: str = ""  # the description beside a URL: which offer, and the arithmetic per GPU

    @property
    def source_is_url(self) -> bool:
        return self.source.startswith(("http://", "https://"))


def reference_price(gpu: GpuModel) -> ReferencePrice | None:
    """The catalog's reference price per GPU-hour of a device, with its source and date; None when none is recorded.

    Uses the prefetched figures of `gpu_catalog()` / `gpu_get()` when the GPU came from them.
    """
    spec = gpu.spec(SpecKey.REFERENCE_PRICE_PER_GPU_HOUR)
    if spec is None:
        return None
    return ReferencePrice(
        amount=spec.value.normalize(),
        currency=REFERENCE_PRICE_CURRENCY,
        source=spec.source,
        as_of=spec.as_of,
        detail=spec.source_text if spec.source_url else "",
    )
