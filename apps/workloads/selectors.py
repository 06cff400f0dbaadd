"""Reads of workload summaries, always scoped to the user's teams, and the report a summary page shows: readiness,
decision metric, memory estimate on every catalog GPU, shortlist and capacity-model hint."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.db import models
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _

from apps.catalog.models import DeviceKind, GpuModel, SpecKey
from apps.catalog.selectors import MemoryBasis, UsableMemory, gpu_catalog, usable_memory_bytes
from apps.workloads import estimates, predictions, price_sources, readiness, rules
from apps.workloads.memory import calibration
from apps.workloads.memory.capacity import Capacity, CapacitySource
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.roofline import GpuPeaks, RooflineError
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.models import CalibratedMargin, WorkloadSummary
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
    # A CPU device's stated host memory is as conservative as a datasheet figure (GB × 10⁹), never a measurement.
    MemoryBasis.HOST_STATED: CapacitySource.DATASHEET,
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
    """Every catalog device with a memory figure (optionally only `pks`), in catalog order: whole GPUs, MIG profiles
    (their profile memory) and CPU devices (their stated host memory), each labelled with its memory basis."""
    queryset = gpu_catalog()
    if pks is not None:
        queryset = queryset.filter(pk__in=pks)
    gpus = []
    for gpu in queryset:
        usable = usable_memory_bytes(gpu)
        if usable is None or usable.bytes <= 0:
            continue
        # A MIG slice or a CPU host is not the whole card the guide's cheat-sheet row describes.
        family = rules.family_of(gpu.name) if gpu.device_kind == DeviceKind.GPU else None
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
# The safety margin of each GPU: the default, or the one phase-1 results calibrated (apps/workloads/memory/calibration)
# --------------------------------------------------------------------------------------------------------------------


def gpu_architecture_of(gpu: GpuModel) -> str:
    """The GPU architecture results are grouped by: the guide's GPU family code (h100, h200, …), else the GPU's own
    name. A memory-fit job's `origin.gpu_architecture` is this value."""
    family = rules.family_of(gpu.name)
    return family.code if family is not None else gpu.display_name


def shape_family(shape: ModelShape) -> str:
    """The model family of a shape (calibration.model_family): architecture/precision, `dense/bf16`."""
    return calibration.model_family(str(shape.architecture.value), str(shape.precision.value))


def percent_text(fraction: Decimal) -> str:
    """A fraction as a percentage with at most two decimals and no trailing zeros: 0.031 → "3.1"."""
    return f"{fraction * 100:.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class MarginChoice:
    """The safety margin an estimate on one GPU uses (a fraction of the subtotal) and why, in words."""

    fraction: float
    source: str
    calibrated: bool = False
    runs: int = 0


def margin_choice(row: CalibratedMargin | None, *, gpu_architecture: str, model_family: str) -> MarginChoice:
    """The margin a stored calibration gives (the default while it has fewer than MIN_RUNS results), with its source."""
    runs = row.runs if row is not None else 0
    if row is None or row.margin_fraction is None:
        text = _("default %(margin)s %% (%(runs)d of %(needed)d phase-1 runs needed on %(gpu)s, %(family)s)") % {
            "margin": percent_text(calibration.DEFAULT_MARGIN), "runs": runs, "needed": calibration.MIN_RUNS,
            "gpu": gpu_architecture, "family": model_family,
        }
        return MarginChoice(float(calibration.DEFAULT_MARGIN), text, calibrated=False, runs=runs)
    values = {
        "runs": runs, "gpu": gpu_architecture, "family": model_family,
        "cushion": percent_text(calibration.CUSHION), "cap": percent_text(calibration.MAX_MARGIN),
        "largest": percent_text(max(Decimal(0), row.largest_underestimate)),
    }
    if row.capped:
        text = _("calibrated from %(runs)d phase-1 runs on %(gpu)s, %(family)s: largest underestimate %(largest)s %% "
                 "+ %(cushion)s %% cushion, capped at %(cap)s %% (the estimate itself needs fixing)") % values
    elif row.largest_underestimate < 0:
        text = _("calibrated from %(runs)d phase-1 runs on %(gpu)s, %(family)s: no underestimate (every run used "
                 "less than predicted) + %(cushion)s %% cushion") % values
    else:
        text = _("calibrated from %(runs)d phase-1 runs on %(gpu)s, %(family)s: largest underestimate %(largest)s %% "
                 "+ %(cushion)s %% cushion") % values
    return MarginChoice(float(row.margin_fraction), text, calibrated=True, runs=runs)


def calibrated_margin_get(*, team, gpu_architecture: str, model_family: str) -> CalibratedMargin | None:
    if team is None:
        return None
    return CalibratedMargin.objects.filter(team=team, gpu_architecture=gpu_architecture,
                                           model_family=model_family).first()


def calibrated_margins(gpus: Iterable[Any], shape: ModelShape, *, team) -> dict[Any, MarginChoice]:
    """{GPU pk: the margin its estimate uses} for a model shape: each GPU's architecture and the shape's family looked
    up in the team's calibrations. `gpus` are catalog GpuModels or CatalogGpus; without a team every GPU gets the
    default (a calibration is a team's own: its results are not shown to other teams)."""
    family = shape_family(shape)
    models_ = [getattr(item, "gpu", item) for item in gpus]
    rows: dict[str, CalibratedMargin] = {}
    if team is not None:
        architectures = {gpu_architecture_of(gpu) for gpu in models_}
        rows = {row.gpu_architecture: row for row in CalibratedMargin.objects.filter(
            team=team, model_family=family, gpu_architecture__in=architectures)}
    choices = {}
    for gpu in models_:
        architecture = gpu_architecture_of(gpu)
        choices[gpu.pk] = margin_choice(rows.get(architecture), gpu_architecture=architecture, model_family=family)
    return choices


def with_calibrated_margins(gpus: list[CatalogGpu], shape: ModelShape, *, team) -> list[CatalogGpu]:
    """The catalog GPUs with the safety margin each estimate on them uses (the team's calibration for that GPU and
    model family, else the default), and its source, set on their GpuCapacity (the page shows it beside the layout;
    the fit and the layout use it)."""
    choices = calibrated_margins(gpus, shape, team=team)
    return [
        replace(item, capacity=replace(item.capacity, safety_margin_fraction=choices[item.gpu.pk].fraction,
                                       safety_margin_source=choices[item.gpu.pk].source))
        for item in gpus
    ]


def calibrated_margins_for_user(user) -> models.QuerySet[CalibratedMargin]:
    """The calibrations of the user's teams (the residuals page)."""
    return CalibratedMargin.objects.for_user(user).select_related("team")


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
        gpus = with_calibrated_margins(gpus, plan.shape, team=summary.team if summary.team_id else None)
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
