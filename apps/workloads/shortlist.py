"""The GPU shortlist: the quick-answer matrix row of a workload, and the catalog GPUs ranked by memory fit, then by
whether the guide points that way, then by what the workload needs most (rules.NEEDS).

Memory fit: fits as planned (one replica of the planned GPUs), tight, fits with more GPUs, or does not fit. A serving
workload fits with more GPUs when a layout of data-parallel replicas × (tensor × pipeline) GPUs holds its peak
sessions; the entry counts that layout's whole GPUs (estimates.GpuFit.layout) and carries the layout.

Plain Python over estimates.Analysis; the texts are in rules.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from apps.workloads import rules
from apps.workloads.estimates import Analysis, GpuFit
from apps.workloads.memory.breakdown import EstimateKind
from apps.workloads.memory.capacity import FitStatus
from apps.workloads.memory.layouts import Layout

FITS_AS_PLANNED = 0
TIGHT_AS_PLANNED = 1
FITS_WITH_MORE_GPUS = 2
DOES_NOT_FIT = 3


@dataclass(frozen=True)
class ShortlistEntry:
    rank: int
    gpu_fit: GpuFit
    family: rules.GpuFamily | None
    in_guide_direction: bool
    fit_class: int
    gpus_needed: int | None  # None: does not fit with any number the estimator tries
    need_value: float | None  # the figure the workload's need ranks by (NVLink GB/s, TB/s, or GiB)
    layout: Layout | None = None  # the cheapest fitting layout (gpu_fit.layout)

    @property
    def fits_as_planned(self) -> bool:
        return self.fit_class in (FITS_AS_PLANNED, TIGHT_AS_PLANNED)


@dataclass(frozen=True)
class Shortlist:
    answer: rules.QuickAnswer
    need: str
    entries: tuple[ShortlistEntry, ...]

    @property
    def families(self) -> tuple[rules.GpuFamily, ...]:
        return tuple(rules.GPU_FAMILIES_BY_CODE[code] for code in self.answer.families)


def _fit_class(item: GpuFit) -> tuple[int, int | None]:
    if item.fit.status is FitStatus.FITS:
        return FITS_AS_PLANNED, item.fit.gpus
    if item.fit.status is FitStatus.TIGHT:
        return TIGHT_AS_PLANNED, item.fit.gpus
    if item.layout is not None and item.layout.breakdown.kind is EstimateKind.INFERENCE:
        # Serving: the cheapest layout's whole GPUs (replicas × t × pp), never more than one tensor-parallel replica.
        return FITS_WITH_MORE_GPUS, item.layout.gpus
    needed = item.fewest_gpus if item.fewest_gpus is not None else item.fewest_gpus_zero3
    if needed is not None:
        return FITS_WITH_MORE_GPUS, needed
    return DOES_NOT_FIT, None


def _need_value(need: str, item: GpuFit) -> float | None:
    if need == rules.NEED_INTERCONNECT:
        return item.gpu.nvlink_gbps
    if need == rules.NEED_TAIL_LATENCY:
        return item.gpu.memory_bandwidth_tbps
    return item.gpu.capacity.total_gib


def _need_order(need: str, value: float | None) -> float:
    """Smaller sorts first: more interconnect or bandwidth is better, less memory wastes less."""
    if value is None:
        return math.inf
    return value if need == rules.NEED_COST_PER_OUTPUT else -value


def build_shortlist(workload_type: str, analysis: Analysis) -> Shortlist:
    answer = rules.QUICK_ANSWERS_BY_CODE[rules.QUICK_ANSWER_FOR_TYPE[workload_type]]
    need = answer.need
    rows = []
    for item in analysis.fits:
        family = rules.GPU_FAMILIES_BY_CODE.get(item.gpu.family) if item.gpu.family else None
        in_direction = family is not None and family.code in answer.families
        fit_class, gpus_needed = _fit_class(item)
        value = _need_value(need, item)
        key = (
            fit_class,
            gpus_needed if gpus_needed is not None else math.inf,
            not in_direction,
            _need_order(need, value),
            item.gpu.name,
        )
        rows.append((key, item, family, in_direction, fit_class, gpus_needed, value))
    rows.sort(key=lambda row: row[0])
    entries = tuple(
        ShortlistEntry(rank, item, family, in_direction, fit_class, gpus_needed, value, item.layout)
        for rank, (_, item, family, in_direction, fit_class, gpus_needed, value) in enumerate(rows, start=1)
    )
    return Shortlist(answer, need, entries)
