"""Phase 2 beside its prediction: a candidate's measured capacity at the SLO (per GPU, written by the throughput
ingest) and the roofline PREDICTION for the same workload version on the same GPU (apps/workloads/memory/roofline.py),
with the residual (measured − predicted) / predicted kept per GPU architecture and precision the way the memory-fit
residuals are (apps/benchmarks/memory_fit.py). Computed on read from the stored figures: no table of its own.

The two are not the same quantity: the measurement is the highest offered load that still met the SLO; the prediction
is the roofline throughput at the workload's stated concurrency with no SLO. Their ratio is what calibrates the
roofline's efficiency factors, which is why the residual is kept.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from apps.benchmarks.measurements import counts_as_measured
from apps.benchmarks.memory_fit import candidate_capacity, gpu_architecture
from apps.evidence.models import CandidateFigure, CapacityUnit, FigureMetric
from apps.workloads import estimates, predictions
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.roofline import RooflinePrediction
from apps.workloads.selectors import gpu_peaks


@dataclass(frozen=True)
class CapacityComparison:
    """One candidate's measured capacity per GPU beside the roofline prediction (None with `why_not`)."""

    candidate: object
    figure: CandidateFigure
    measured_per_gpu: float  # requests per second per GPU at the SLO
    prediction: RooflinePrediction | None
    why_not: str
    gpu_architecture: str
    precision: str

    @property
    def predicted_per_gpu(self) -> float | None:
        return self.prediction.requests_per_s_per_gpu if self.prediction is not None else None

    @property
    def error_pct(self) -> float | None:
        """(measured − predicted) / predicted × 100: positive when the prediction was too low."""
        predicted = self.predicted_per_gpu
        if not predicted:
            return None
        return round((self.measured_per_gpu - predicted) / predicted * 100, 2)


def predict_candidate(candidate) -> tuple[RooflinePrediction | None, str]:
    """The roofline prediction of the candidate's workload version on its quote's GPU, or None and why not (English,
    stored-data style like the ingest's notes)."""
    gpu = candidate.quote.gpu
    if gpu is None:
        return None, "the quote names no GPU"
    peaks = gpu_peaks(gpu)
    if peaks is None:
        return None, "the catalog lacks this GPU's memory bandwidth or BF16 dense rate"
    plan, error = estimates.safe_plan(candidate.workload_summary)
    if plan is None:
        return None, f"the workload version cannot be estimated: {error}"
    source = predictions.request_mix(candidate.workload_summary, plan)
    if source is None:
        return None, "the workload states no request mix (mean input and output tokens of a serving workload)"
    capacity = candidate_capacity(candidate)
    if capacity is None:
        return None, "the catalog has no memory figure for this GPU"
    try:
        analysis = estimates.analyse(plan, [estimates.GpuCapacity(key=gpu.pk, name=gpu.display_name,
                                                                  capacity=capacity)])
    except ShapeError as shape_error:
        return None, str(shape_error)
    prediction = predictions.predict_for(plan, source.mix, analysis.fits[0], peaks)
    if prediction is None:
        return None, "the workload does not fit this GPU, or the roofline cannot split it"
    return prediction, ""


def capacity_figures(user) -> Iterable[CandidateFigure]:
    """The user's measured capacities at the SLO in requests per second (the ones that count as measured)."""
    figures = (
        CandidateFigure.objects.for_user(user)
        .filter(metric=FigureMetric.CAPACITY_AT_SLO, capacity_unit=CapacityUnit.REQUESTS_PER_SECOND)
        .select_related("candidate__quote__gpu", "candidate__workload_summary", "measurement__result")
        .prefetch_related("candidate__quote__gpu__specs")
        .order_by("candidate_id")
    )
    return [figure for figure in figures if counts_as_measured(figure)]


def compare(figure: CandidateFigure) -> CapacityComparison:
    candidate = figure.candidate
    prediction, why_not = predict_candidate(candidate)
    gpu = candidate.quote.gpu
    return CapacityComparison(
        candidate=candidate,
        figure=figure,
        measured_per_gpu=float(figure.value),
        prediction=prediction,
        why_not=why_not,
        gpu_architecture=gpu_architecture(gpu) if gpu is not None else "unknown",
        precision=str(candidate.workload_summary.precision or estimates.DEFAULT_PRECISION),
    )


def capacity_comparison(candidate) -> CapacityComparison | None:
    """The candidate's measured capacity beside its prediction, when phase 2 measured one (for the candidate page)."""
    figure = (
        CandidateFigure.objects.filter(candidate=candidate, metric=FigureMetric.CAPACITY_AT_SLO,
                                       capacity_unit=CapacityUnit.REQUESTS_PER_SECOND)
        .select_related("measurement__result")
        .first()
    )
    if figure is None or not counts_as_measured(figure):
        return None
    return compare(figure)


def capacity_comparisons(user) -> list[CapacityComparison]:
    return [compare(figure) for figure in capacity_figures(user)]


@dataclass(frozen=True)
class CapacityResidualGroup:
    gpu_architecture: str
    precision: str
    count: int
    mean_error_pct: float
    min_error_pct: float
    max_error_pct: float


def group_capacity_residuals(comparisons: Iterable[CapacityComparison]) -> list[CapacityResidualGroup]:
    """Per GPU architecture and precision: how far the roofline was from the measured capacity (only comparisons
    with a prediction)."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for item in comparisons:
        if item.error_pct is not None:
            groups[(item.gpu_architecture, item.precision)].append(item.error_pct)
    return [
        CapacityResidualGroup(architecture, precision, len(errors), round(statistics.fmean(errors), 2), min(errors),
                              max(errors))
        for (architecture, precision), errors in sorted(groups.items())
    ]
