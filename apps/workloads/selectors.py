"""Reads of workload summaries, always scoped to the user's teams, and the report a summary page shows: readiness,
decision metric, memory estimate on every catalog GPU, shortlist and capacity-model hint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import models
from django.shortcuts import get_object_or_404

from apps.catalog.models import GpuModel, SpecKey
from apps.catalog.selectors import MemoryBasis, UsableMemory, gpu_catalog, usable_memory_bytes
from apps.workloads import estimates, predictions, price_sources, readiness, rules
from apps.workloads.memory.capacity import Capacity, CapacitySource
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.roofline import GpuPeaks, RooflineError
from apps.workloads.models import WorkloadSummary
from apps.workloads.shortlist import Shortlist, build_shortlist


def summaries_for_user(user) -> models.QuerySet[WorkloadSummary]:
    """Every version of every workload of the user's teams."""
    return WorkloadSummary.objects.for_user(user).select_related("workload", "team", "created_by", "ready_by")


def latest_summaries_for_user(user) -> models.QuerySet[WorkloadSummary]:
    """The newest version of each of the user's workloads."""
    return summaries_for_user(user).latest_versions()


def ready_versions_for_user(user) -> models.QuerySet[WorkloadSummary]:
    """The frozen versions quotes, benchmark plans and decisions may be attached to."""
    return summaries_for_user(user).ready()


def summary_get(*, user, pk) -> WorkloadSummary:
    """One version the user may see, or Http404 (another team's summary is not revealed)."""
    return get_object_or_404(summaries_for_user(user), pk=pk)


def versions_of(summary: WorkloadSummary) -> models.QuerySet[WorkloadSummary]:
    return WorkloadSummary.objects.filter(workload_id=summary.workload_id).order_by("-version")


# --------------------------------------------------------------------------------------------------------------------
# The catalog as the estimator sees it
# --------------------------------------------------------------------------------------------------------------------

CAPACITY_SOURCES = {
    MemoryBasis.MEASURED: CapacitySource.MEASURED,
    MemoryBasis.CATALOG_USABLE: CapacitySource.CATALOG,
    MemoryBasis.DATASHEET: CapacitySource.DATASHEET,
}


@dataclass(frozen=True)
class CatalogGpu:
    """A catalog GPU with the memory a process can use on it (and where that figure came from)."""

    gpu: GpuModel
    usable_memory: UsableMemory
    capacity: estimates.GpuCapacity


def _spec_float(gpu: GpuModel, key: str) -> float | None:
    spec = gpu.spec(key)
    return float(spec.value) if spec is not None else None


def catalog_gpus(pks=None) -> list[CatalogGpu]:
    """Every catalog GPU with a memory figure (optionally only `pks`), in catalog order."""
    queryset = gpu_catalog()
    if pks is not None:
        queryset = queryset.filter(pk__in=pks)
    gpus = []
    for gpu in queryset:
        usable = usable_memory_bytes(gpu)
        if usable is None or usable.bytes <= 0:
            continue
        family = rules.family_of(gpu.name)
        capacity = Capacity(
            usable.bytes,
            CAPACITY_SOURCES[usable.basis],
            f"{usable.basis.label}: {usable.source}" if usable.source else str(usable.basis.label),
        )
        gpus.append(
            CatalogGpu(
                gpu,
                usable,
                estimates.GpuCapacity(
                    key=gpu.pk,
                    name=gpu.display_name,
                    capacity=capacity,
                    family=family.code if family else None,
                    nvlink_gbps=_spec_float(gpu, SpecKey.NVLINK_GBPS),
                    memory_bandwidth_tbps=_spec_float(gpu, SpecKey.MEMORY_BANDWIDTH_TBPS),
                ),
            )
        )
    return gpus


def gpu_peaks(gpu: GpuModel) -> GpuPeaks | None:
    """The datasheet peaks the serving roofline needs (memory bandwidth, BF16 and FP8 dense rates), or None."""
    try:
        return GpuPeaks(
            memory_bandwidth_tbps=_spec_float(gpu, SpecKey.MEMORY_BANDWIDTH_TBPS),
            bf16_dense_tflops=_spec_float(gpu, SpecKey.BF16_DENSE_TFLOPS),
            fp8_dense_tflops=_spec_float(gpu, SpecKey.FP8_DENSE_TFLOPS),
        )
    except RooflineError:
        return None


def shortlist_cost_inputs(summary: WorkloadSummary, analysis: estimates.Analysis, gpus: list[CatalogGpu]) -> dict:
    """The keyword arguments that make build_shortlist rank by predicted cost per accepted output: roofline
    predictions per fitting GPU and the team's known prices per GPU-hour ({} for a workload with no request mix)."""
    peaks = {item.gpu.pk: found for item in gpus if (found := gpu_peaks(item.gpu)) is not None}
    predicted = predictions.shortlist_predictions(summary, analysis, peaks)
    if predicted is None:
        return {}
    return {
        "predictions": predicted,
        "prices": price_sources.known_prices(summary.team, list(predicted)),
        "acceptance": summary.quality_acceptance_rate,
    }


# --------------------------------------------------------------------------------------------------------------------
# The report of one summary
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class SummaryReport:
    summary: WorkloadSummary
    missing: list[readiness.MissingField]
    plan: estimates.EstimatePlan | None
    plan_error: estimates.MissingInput | ShapeError | None
    analysis: estimates.Analysis | None
    shortlist: Shortlist | None
    capacity_hints: tuple[rules.CapacityRule, ...]
    gpus: dict[Any, CatalogGpu] = field(default_factory=dict)

    @property
    def is_ready_to_mark(self) -> bool:
        return self.summary.is_draft and not self.missing


def summary_report(summary: WorkloadSummary, *, gpus: list[CatalogGpu] | None = None) -> SummaryReport:
    """Everything the summary page and the analysis API show about one version."""
    gpus = catalog_gpus() if gpus is None else gpus
    plan, plan_error = estimates.safe_plan(summary)
    analysis = shortlist = None
    if plan is not None:
        try:
            analysis = estimates.analyse(plan, [item.capacity for item in gpus])
        except ShapeError as error:
            plan, plan_error = None, error
        else:
            costs = shortlist_cost_inputs(summary, analysis, gpus)
            shortlist = build_shortlist(summary.workload_type, analysis, **costs)
    values = {name: getattr(summary, name) for name in rules.CAPACITY_FIELDS}
    return SummaryReport(
        summary=summary,
        missing=readiness.missing_fields(summary),
        plan=plan,
        plan_error=plan_error,
        analysis=analysis,
        shortlist=shortlist,
        capacity_hints=rules.capacity_hints(values),
        gpus={item.gpu.pk: item for item in gpus},
    )
