"""How much memory one GPU offers (measured by an agent > catalog usable > datasheet) and whether an estimate fits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from apps.workloads.memory.breakdown import Breakdown
from apps.workloads.memory.errors import check_fraction, check_int, gettext_noop, shape_error
from apps.workloads.memory.precisions import BYTES_PER_GB, BYTES_PER_GIB, BYTES_PER_MIB


class CapacitySource(StrEnum):
    MEASURED = "measured"  # NVML total reported by an agent on the node
    CATALOG = "catalog"  # usable MiB recorded in the GPU catalog
    DATASHEET = "datasheet"  # datasheet GB × 10⁹ (conservative)


@dataclass(frozen=True)
class Capacity:
    """Memory one GPU really offers, with where the figure came from."""

    total_bytes: int
    source: CapacitySource
    source_label: str

    def __post_init__(self) -> None:
        check_int("capacity", self.total_bytes, maximum=2**50)
        object.__setattr__(self, "source", CapacitySource(self.source))

    @property
    def total_gib(self) -> float:
        return self.total_bytes / BYTES_PER_GIB


def choose_capacity(
    *,
    measured_total_mib: int | None = None,
    catalog_usable_mib: int | None = None,
    datasheet_gb: int | float | str | Any = None,
) -> Capacity:
    """Pick the capacity per DESIGN: the agent's measured NVML total (MiB) > catalog usable MiB > datasheet GB × 10⁹.
    Datasheet HBM "GB" is never converted to GiB and called the capacity."""
    if measured_total_mib is not None:
        mib = check_int("measured_total_mib", measured_total_mib, maximum=2**30)
        return Capacity(mib * BYTES_PER_MIB, CapacitySource.MEASURED, f"measured by agent (NVML): {mib:,} MiB")
    if catalog_usable_mib is not None:
        mib = check_int("catalog_usable_mib", catalog_usable_mib, maximum=2**30)
        return Capacity(mib * BYTES_PER_MIB, CapacitySource.CATALOG, f"catalog usable memory: {mib:,} MiB")
    if datasheet_gb is not None:
        try:
            gigabytes = Fraction(str(datasheet_gb))
        except (ValueError, ZeroDivisionError):
            raise shape_error(
                "datasheet_gb", gettext_noop("Must be a number, got %(value)r."), value=datasheet_gb
            ) from None
        if gigabytes <= 0 or gigabytes > 10**6:
            raise shape_error(
                "datasheet_gb", gettext_noop("Must be between 0 and 1,000,000 GB, got %(value)s."), value=datasheet_gb
            )
        return Capacity(
            math.floor(gigabytes * BYTES_PER_GB), CapacitySource.DATASHEET, f"datasheet: {datasheet_gb} GB × 10⁹ bytes"
        )
    raise shape_error("capacity", gettext_noop("No memory figure: give a measured, catalog or datasheet capacity."))


class FitStatus(StrEnum):
    FITS = "fits"
    TIGHT = "tight"
    DOES_NOT_FIT = "does_not_fit"


# "Tight": it fits, but with less than this share of the device left over.
DEFAULT_TIGHT_HEADROOM_FRACTION = 0.10


@dataclass(frozen=True)
class FitResult:
    status: FitStatus
    required_bytes: int
    capacity: Capacity
    gpus: int
    headroom_bytes: int  # negative when it does not fit

    @property
    def headroom_gib(self) -> float:
        return self.headroom_bytes / BYTES_PER_GIB

    @property
    def headroom_percent(self) -> float:
        return 100 * self.headroom_bytes / self.capacity.total_bytes

    @property
    def fits(self) -> bool:
        return self.status is not FitStatus.DOES_NOT_FIT


def fit(
    breakdown: Breakdown, capacity: Capacity, *, tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION
) -> FitResult:
    """Compare the per-GPU requirement with one GPU's capacity: fits, tight (headroom below the fraction), or not."""
    threshold = check_fraction("tight_headroom_fraction", tight_headroom_fraction)
    headroom = capacity.total_bytes - breakdown.total_bytes
    if headroom < 0:
        status = FitStatus.DOES_NOT_FIT
    elif headroom < threshold * capacity.total_bytes:
        status = FitStatus.TIGHT
    else:
        status = FitStatus.FITS
    return FitResult(status, breakdown.total_bytes, capacity, breakdown.gpus, headroom)
