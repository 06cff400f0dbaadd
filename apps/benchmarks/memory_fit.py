"""Benchmark phase 1 (memory fit) on the server: a `memory_fit` job derived from a candidate's workload version, with
the prediction computed here and sent in the spec, and what its results say (predicted vs measured per component,
headroom, largest fitting concurrency, OOMs, the device's usable memory) with the residuals kept per GPU family and
precision. The job and its spec/result formats are the agent's: `dossier_agent.jobs.memory_fit`.

Results are found through the spec's `origin` (candidate, workload version, GPU), so no table is added for them.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from enum import Enum
from typing import Any

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.benchmarks.models import BenchmarkPlan, Result, ResultStatus
from apps.benchmarks.services import plan_create
from apps.catalog.models import GpuModel, SpecKey
from apps.catalog.selectors import usable_memory_bytes
from apps.catalog.services import gpu_spec_set
from apps.common.chart_text import escaped_figure, readable_chart
from apps.fleet.models import Agent, AgentPool
from apps.workloads import estimates
from apps.workloads.memory import calibration
from apps.workloads.memory.breakdown import DEFAULT_SAFETY_MARGIN_FRACTION
from apps.workloads.memory.capacity import Capacity, fit
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.inference import MAX_CONCURRENT_SESSIONS, MAX_CONTEXT_TOKENS, InferenceRequest
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import TrainingRequest
from apps.workloads.models import CalibratedMargin
from apps.workloads.selectors import (
    CAPACITY_SOURCES,
    MarginChoice,
    calibrated_margin_get,
    calibrated_margins_for_user,
    gpu_architecture_of,
    margin_choice,
    percent_text,
    shape_family,
)
from apps.workloads.services import calibrated_margin_record

MEMORY_FIT_KIND = "memory_fit"
DEVICES = ("auto", "cuda", "cpu")
LATENCY_FIELDS = ("p95_ttft_ms", "p99_ttft_ms", "p95_tpot_ms", "p99_tpot_ms", "p95_e2e_ms", "p99_e2e_ms")
MIB = 2**20
# What the source of a catalog figure may hold (GpuSpec.source_text).
CATALOG_SOURCE_MAX_LENGTH = 300


class Phase1Error(ValueError):
    """A memory-fit plan that cannot be derived; the message is for the person who asked."""


# --------------------------------------------------------------------------------------------------------------------
# Deriving the job spec (no database)
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitSettings:
    """What a person may change before dispatch. `tokens` is the p95 context (inference) or the sequence length
    (training); `concurrency` the concurrent sessions (inference) or the micro-batch size (training)."""

    tokens: int
    concurrency: int
    max_probes: int = 6
    probe_timeout_s: int = 300
    device: str = "auto"
    search_maximum: int | None = None
    model_path: str = ""  # the checkpoint folder on the node (the agent's exact-model path); empty: the proxy


def is_training(plan: estimates.EstimatePlan) -> bool:
    return isinstance(plan.request, TrainingRequest)


def default_settings(plan: estimates.EstimatePlan) -> FitSettings:
    """The workload's own target: p95 context × peak concurrency, or sequence length × micro-batch."""
    request = plan.request
    if isinstance(request, TrainingRequest):
        return FitSettings(tokens=request.sequence_length, concurrency=request.micro_batch_size)
    return FitSettings(tokens=request.p95_context_tokens, concurrency=request.concurrent_sessions)


def probe_plan(plan: estimates.EstimatePlan, settings: FitSettings) -> estimates.EstimatePlan:
    """The estimate for what one probe runs: one device (no tensor, sequence or pipeline parallelism, no ZeRO
    sharding, no optimizer offload), at the settings' tokens and concurrency."""
    request = plan.request
    if isinstance(request, TrainingRequest):
        request = replace(request, sequence_length=settings.tokens, micro_batch_size=settings.concurrency,
                          zero_stage=0, data_parallel_gpus=1, tensor_parallel=1, sequence_parallel=False,
                          pipeline_parallel=1, optimizer_offload="none")
    else:
        request = replace(request, p95_context_tokens=settings.tokens, concurrent_sessions=settings.concurrency,
                          tensor_parallel=1)
    return replace(plan, request=request)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def model_spec(shape: ModelShape) -> dict[str, Any]:
    """The estimator's ModelShape as the job spec's `model` object (every field, JSON-ready)."""
    return {item.name: _plain(getattr(shape, item.name)) for item in fields(shape)}


def _request_spec(request: InferenceRequest | TrainingRequest) -> tuple[str, dict[str, Any]]:
    if isinstance(request, TrainingRequest):
        return "training", {
            "sequence_length": request.sequence_length,
            "micro_batch_size": request.micro_batch_size,
            "method": _plain(request.method),
            "lora_rank": request.lora_rank,
            "lora_targets": _plain(request.lora_targets),
            "recompute": _plain(request.recompute),
            "double_quantisation": request.double_quantisation,
        }
    return "inference", {
        "p95_context_tokens": request.p95_context_tokens,
        "concurrent_sessions": request.concurrent_sessions,
        "kv_cache_precision": _plain(request.kv_cache_precision),
        "block_size_tokens": request.block_size_tokens,
        "max_batched_tokens": request.max_batched_tokens,
    }


def derive_memory_fit_spec(
    *,
    plan: estimates.EstimatePlan,
    settings: FitSettings,
    capacity: Capacity | None = None,
    origin: Mapping[str, Any] | None = None,
    latency_limits: Mapping[str, int] | None = None,
    safety_margin: MarginChoice | None = None,
) -> dict[str, Any]:
    """The `memory_fit` job spec: the shape, the target, the search limits and the server's predicted breakdown (with
    its fit on the GPU's usable memory when that is known). ShapeError when the settings make no valid request.

    `safety_margin` (the GPU's margin: default or calibrated, `workloads.selectors.calibrated_margins`) replaces the
    request's margin in the prediction, and its fraction and source are recorded in the spec's `safety_margin`. The
    agent compares the total without the margin, so the margin never feeds back into the residuals."""
    if settings.device not in DEVICES:
        raise Phase1Error(_("The device must be one of %(choices)s.") % {"choices": ", ".join(DEVICES)})
    if safety_margin is not None:
        plan = replace(plan, request=replace(plan.request, safety_margin_fraction=safety_margin.fraction))
    target = probe_plan(plan, settings)
    breakdown = target.breakdown()
    workload, request = _request_spec(target.request)
    search: dict[str, Any] = {"max_probes": settings.max_probes, "probe_timeout_s": settings.probe_timeout_s}
    if settings.search_maximum is not None:
        search["maximum"] = max(settings.search_maximum, settings.concurrency)
    spec: dict[str, Any] = {
        "model": model_spec(target.shape),
        "workload": workload,
        workload: request,
        "predicted": breakdown.as_dict(),
        "device": settings.device,
        "search": search,
        "seed": 0,
        "latency_limits_ms": dict(latency_limits or {}),
        "origin": dict(origin or {}),
    }
    if settings.model_path:
        spec["model_path"] = settings.model_path
    if safety_margin is not None:
        spec["safety_margin"] = {"fraction": safety_margin.fraction, "source": safety_margin.source,
                                 "calibrated": safety_margin.calibrated, "runs": safety_margin.runs}
    if capacity is not None:
        predicted_fit = fit(breakdown, capacity)
        spec["capacity"] = {
            "usable_bytes": capacity.total_bytes,
            "source": capacity.source.value,
            "source_label": capacity.source_label,
            "predicted_status": predicted_fit.status.value,
            "predicted_headroom_bytes": predicted_fit.headroom_bytes,
        }
    return spec


# --------------------------------------------------------------------------------------------------------------------
# Reading a result (no database)
# --------------------------------------------------------------------------------------------------------------------

COMPONENT_LABELS = {
    "weights": gettext_lazy("Weights"),
    "kv_cache": gettext_lazy("KV cache"),
    "activation_peak": gettext_lazy("Activation peak"),
    "adapters": gettext_lazy("LoRA adapters"),
    "gradients": gettext_lazy("Gradients"),
    "optimizer_states": gettext_lazy("Optimizer states"),
    "activations": gettext_lazy("Activations"),
    "cuda_runtime": gettext_lazy("CUDA context and runtime"),
    "total_without_margin": gettext_lazy("Total (without the safety margin)"),
}


@dataclass(frozen=True)
class ComponentRow:
    component: str
    predicted_bytes: int | None
    measured_bytes: int | None
    error_pct: float | None
    note: str | None

    @property
    def label(self) -> str:
        return str(COMPONENT_LABELS.get(self.component, self.component))

    @property
    def predicted_mib(self) -> float | None:
        return None if self.predicted_bytes is None else round(self.predicted_bytes / MIB, 1)

    @property
    def measured_mib(self) -> float | None:
        return None if self.measured_bytes is None else round(self.measured_bytes / MIB, 1)


@dataclass(frozen=True)
class MemoryFitReading:
    """One memory-fit result as the pages show it."""

    device_kind: str
    memory_accounting: str
    architecture: str
    precision: str
    target: Mapping[str, Any]
    fits_at_target: bool
    peak_bytes: int | None
    peak_source: str | None
    headroom_bytes: int | None
    headroom_pct: float | None
    largest_fitting: int | None
    largest_fitting_variable: str
    largest_fitting_exact: bool
    smallest_failing: int | None
    oom_count: int
    timeout_count: int
    probe_count: int
    usable_bytes: int | None
    usable_mib: int | None
    usable_source: str
    usable_device_name: str | None
    predicted_total_bytes: int | None
    predicted_capacity_bytes: int | None
    components: tuple[ComponentRow, ...]
    comparison_note: str | None
    model_source: str = "proxy"
    proxy_reason: str | None = None
    checkpoint_parameters: int | None = None
    checkpoint_weight_bytes: int | None = None
    exact_model_class: str | None = None

    @property
    def checkpoint_weight_mib(self) -> float | None:
        return None if self.checkpoint_weight_bytes is None else round(self.checkpoint_weight_bytes / MIB, 1)

    @property
    def device_reported_memory(self) -> bool:
        """NVML on a GPU reported the usable memory (a CPU's address-space limit or MemTotal never counts)."""
        return self.device_kind == "cuda" and self.usable_mib is not None and self.usable_source.startswith("nvml")

    @property
    def peak_mib(self) -> float | None:
        return None if self.peak_bytes is None else round(self.peak_bytes / MIB, 1)

    @property
    def headroom_mib(self) -> float | None:
        return None if self.headroom_bytes is None else round(self.headroom_bytes / MIB, 1)

    @property
    def predicted_total_mib(self) -> float | None:
        return None if self.predicted_total_bytes is None else round(self.predicted_total_bytes / MIB, 1)

    @property
    def capacity_bytes(self) -> int | None:
        """The capacity line: what the device reported, else the figure the prediction was fitted against."""
        return self.usable_bytes if self.usable_bytes is not None else self.predicted_capacity_bytes


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    """A part of an agent's result that should be an object; anything else reads as empty (never raises)."""
    return value if isinstance(value, Mapping) else {}


def read_memory_fit(result: Mapping[str, Any], spec: Mapping[str, Any] | None = None) -> MemoryFitReading:
    """A memory-fit RESULT object (and the spec it ran with) as a reading; missing parts read as None."""
    labels = _mapping(result.get("labels"))
    usable = _mapping(result.get("usable_memory"))
    largest = _mapping(result.get("largest_fitting"))
    predicted = _mapping(result.get("predicted"))
    capacity = _mapping(_mapping(spec).get("capacity"))
    checkpoint = _mapping(result.get("checkpoint"))
    exact = _mapping(result.get("exact_model"))
    rows = tuple(
        ComponentRow(
            component=str(row.get("component")),
            predicted_bytes=_int_or_none(row.get("predicted_bytes")),
            measured_bytes=_int_or_none(row.get("measured_bytes")),
            error_pct=row.get("error_pct") if isinstance(row.get("error_pct"), (int, float)) else None,
            note=row.get("note"),
        )
        for row in (result.get("comparison") if isinstance(result.get("comparison"), list) else [])
        if isinstance(row, Mapping)
    )
    return MemoryFitReading(
        device_kind=str(labels.get("device_kind") or ""),
        memory_accounting=str(labels.get("memory_accounting") or ""),
        architecture=str(labels.get("architecture") or _mapping(result.get("model")).get("architecture") or ""),
        precision=str(labels.get("precision") or _mapping(result.get("model")).get("precision") or ""),
        target=dict(_mapping(result.get("target"))),
        fits_at_target=bool(result.get("fits_at_target")),
        peak_bytes=_int_or_none(result.get("peak_bytes")),
        peak_source=result.get("peak_source"),
        headroom_bytes=_int_or_none(result.get("headroom_bytes")),
        headroom_pct=result.get("headroom_pct"),
        largest_fitting=_int_or_none(largest.get("value")),
        largest_fitting_variable=str(largest.get("variable") or ""),
        largest_fitting_exact=bool(largest.get("exact")),
        smallest_failing=_int_or_none(largest.get("smallest_failing")),
        oom_count=_int_or_none(result.get("oom_count")) or 0,
        timeout_count=_int_or_none(result.get("timeout_count")) or 0,
        probe_count=_int_or_none(result.get("probe_count")) or 0,
        usable_bytes=_int_or_none(usable.get("total_bytes")),
        usable_mib=_int_or_none(usable.get("total_mib")),
        usable_source=str(usable.get("source") or ""),
        usable_device_name=usable.get("device_name"),
        predicted_total_bytes=_int_or_none(predicted.get("total_bytes")),
        predicted_capacity_bytes=_int_or_none(capacity.get("usable_bytes")),
        components=rows,
        comparison_note=result.get("comparison_note"),
        model_source=str(result.get("model_source") or labels.get("model_source") or "proxy"),
        proxy_reason=result.get("proxy_reason") or labels.get("proxy_reason"),
        checkpoint_parameters=_int_or_none(checkpoint.get("parameter_count")),
        checkpoint_weight_bytes=_int_or_none(checkpoint.get("weight_bytes")),
        exact_model_class=str(exact["model_class"]) if exact.get("model_class") is not None else None,
    )


@readable_chart(lambda figure: _(
    "Memory per component as the estimator predicted it and as the node measured it: a measured bar well above its "
    "prediction means the estimate was too optimistic; the dashed line is the GPU's usable memory."))
@escaped_figure
def memory_fit_figure(reading: MemoryFitReading) -> dict[str, Any]:
    """A Plotly figure: predicted vs measured MiB per component (grouped bars) and the capacity line."""
    rows = [row for row in reading.components if row.predicted_bytes is not None or row.measured_bytes is not None]
    names = [row.label for row in rows]
    data: list[dict[str, Any]] = [
        {"type": "bar", "name": _("Predicted (MiB)"), "x": names, "y": [row.predicted_mib for row in rows]},
        {"type": "bar", "name": _("Measured (MiB)"), "x": names, "y": [row.measured_mib for row in rows]},
    ]
    capacity = reading.capacity_bytes
    if capacity is not None and names:
        data.append({
            "type": "scatter", "mode": "lines", "name": _("Usable memory (MiB)"), "x": [names[0], names[-1]],
            "y": [round(capacity / MIB, 1)] * 2, "line": {"dash": "dash", "color": "#b00020"},
        })
    layout = {
        "barmode": "group",
        "title": {"text": _("Memory fit: predicted vs measured")},
        "yaxis": {"title": {"text": "MiB"}, "rangemode": "tozero", "automargin": True},
        "xaxis": {"automargin": True},
        "legend": {"orientation": "h"},
        "margin": {"t": 48, "r": 16, "b": 96, "l": 64},
    }
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class Residual:
    """Measured minus predicted for one component of one result."""

    gpu_architecture: str
    precision: str
    component: str
    error_pct: float
    residual_bytes: int


@dataclass(frozen=True)
class ResidualGroup:
    gpu_architecture: str
    precision: str
    component: str
    count: int
    mean_error_pct: float
    min_error_pct: float
    max_error_pct: float
    mean_residual_bytes: int

    @property
    def label(self) -> str:
        return str(COMPONENT_LABELS.get(self.component, self.component))

    @property
    def mean_residual_mib(self) -> float:
        return round(self.mean_residual_bytes / MIB, 1)


def residuals_of(reading: MemoryFitReading, gpu_architecture: str) -> list[Residual]:
    """The components where both figures exist. A CPU run is its own architecture ("cpu"), never the GPU's."""
    architecture = "cpu" if reading.device_kind == "cpu" else gpu_architecture
    return [
        Residual(architecture, reading.precision, row.component, float(row.error_pct),
                 row.measured_bytes - row.predicted_bytes)
        for row in reading.components
        if row.error_pct is not None and row.measured_bytes is not None and row.predicted_bytes is not None
    ]


def group_residuals(residuals: Iterable[Residual]) -> list[ResidualGroup]:
    groups: dict[tuple[str, str, str], list[Residual]] = defaultdict(list)
    for residual in residuals:
        groups[(residual.gpu_architecture, residual.precision, residual.component)].append(residual)
    return [
        ResidualGroup(
            gpu_architecture=architecture, precision=precision, component=component, count=len(items),
            mean_error_pct=round(statistics.fmean(item.error_pct for item in items), 2),
            min_error_pct=min(item.error_pct for item in items),
            max_error_pct=max(item.error_pct for item in items),
            mean_residual_bytes=round(statistics.fmean(item.residual_bytes for item in items)),
        )
        for (architecture, precision, component), items in sorted(groups.items())
    ]


#: Fewer results than this in a group make its suggested margin provisional.
MARGIN_MIN_RESULTS = 3
TOTAL_COMPONENT = "total_without_margin"


@dataclass(frozen=True)
class MarginSuggestion:
    """The safety margin the residuals of one GPU architecture and precision suggest.

    Rule: the largest underestimate of the total seen in the group — the highest error % of "total without the safety
    margin" (measured above predicted is positive) — rounded up to a whole percent, and never below 0 (a group whose
    results all came in under the prediction needs no margin beyond the estimate). The largest, not a mean or a
    percentile: with the handful of results a team has, a margin that one result already exceeded would not be safe.
    Fewer than MARGIN_MIN_RESULTS results make it provisional."""

    gpu_architecture: str
    precision: str
    count: int
    max_underestimate_pct: float
    mean_error_pct: float
    suggested_margin_pct: int
    current_margin_pct: float

    @property
    def provisional(self) -> bool:
        return self.count < MARGIN_MIN_RESULTS

    @property
    def exceeds_current(self) -> bool:
        return self.suggested_margin_pct > self.current_margin_pct


def suggested_margins(groups: Iterable[ResidualGroup]) -> list[MarginSuggestion]:
    """One suggestion per GPU architecture and precision, from its "total without the safety margin" residuals."""
    current = round(100 * DEFAULT_SAFETY_MARGIN_FRACTION, 1)
    return [
        MarginSuggestion(
            gpu_architecture=group.gpu_architecture, precision=group.precision, count=group.count,
            max_underestimate_pct=group.max_error_pct, mean_error_pct=group.mean_error_pct,
            suggested_margin_pct=max(0, math.ceil(group.max_error_pct)), current_margin_pct=current,
        )
        for group in groups
        if group.component == TOTAL_COMPONENT
    ]


@readable_chart(lambda figure: _(
    "How far the measurements were from the estimator, per component, in per cent: above zero the estimator "
    "predicted too little, below zero too much; the whiskers span the smallest and largest error."))
@escaped_figure
def residuals_figure(groups: Iterable[ResidualGroup]) -> dict[str, Any]:
    """A Plotly figure: the mean error % per component, one bar series per GPU architecture and precision, the
    whiskers spanning the smallest and largest error of the group; the zero line is the prediction."""
    series: dict[tuple[str, str], list[ResidualGroup]] = defaultdict(list)
    for group in groups:
        series[(group.gpu_architecture, group.precision)].append(group)
    data = []
    for (architecture, precision), items in sorted(series.items()):
        data.append({
            "type": "bar", "name": f"{architecture} · {precision}",
            "x": [item.label for item in items], "y": [item.mean_error_pct for item in items],
            "error_y": {"type": "data", "symmetric": False,
                        "array": [round(item.max_error_pct - item.mean_error_pct, 2) for item in items],
                        "arrayminus": [round(item.mean_error_pct - item.min_error_pct, 2) for item in items]},
        })
    layout = {
        "barmode": "group",
        "title": {"text": _("Memory estimate residuals: measured vs predicted (%)")},
        "yaxis": {"title": {"text": _("Error (%)")}, "zeroline": True, "automargin": True},
        "xaxis": {"automargin": True},
        "legend": {"orientation": "h"},
        "margin": {"t": 48, "r": 16, "b": 96, "l": 64},
    }
    return {"data": data, "layout": layout}


# --------------------------------------------------------------------------------------------------------------------
# Candidates, plans, results (database)
# --------------------------------------------------------------------------------------------------------------------


def gpu_architecture(gpu) -> str:
    """The GPU family of the guide's cheat sheet (h100, h200, …); a GPU it does not list goes by its own name."""
    return gpu_architecture_of(gpu)


def candidate_estimate_plan(candidate) -> estimates.EstimatePlan:
    """The estimate the candidate's workload version asks for (Phase1Error says what is missing)."""
    if candidate.quote.gpu_id is None:
        raise Phase1Error(_("This candidate's quote names no GPU: there is nothing to fit in memory."))
    plan, error = estimates.safe_plan(candidate.workload_summary)
    if plan is None:
        raise Phase1Error(_("The workload version cannot be estimated: %(error)s") % {"error": error})
    return plan


def candidate_capacity(candidate) -> Capacity | None:
    """The usable memory of the quote's GPU as the estimator takes it (catalog usable MiB, else datasheet)."""

    usable = usable_memory_bytes(candidate.quote.gpu)
    if usable is None or usable.bytes <= 0:
        return None
    label = f"{usable.basis.label}: {usable.source}" if usable.source else str(usable.basis.label)
    return Capacity(usable.bytes, CAPACITY_SOURCES[usable.basis], label)


def candidate_margin(candidate, plan: estimates.EstimatePlan) -> MarginChoice:
    """The safety margin of the candidate's GPU for the plan's model family: calibrated by the team's phase-1
    results once there are enough of them, else the default (apps/workloads/memory/calibration.py)."""
    architecture, family = gpu_architecture(candidate.quote.gpu), shape_family(plan.shape)
    row = calibrated_margin_get(team=candidate.team, gpu_architecture=architecture, model_family=family)
    return margin_choice(row, gpu_architecture=architecture, model_family=family)


def candidate_spec(candidate, settings: FitSettings) -> dict[str, Any]:
    summary = candidate.workload_summary
    gpu = candidate.quote.gpu
    try:
        plan = candidate_estimate_plan(candidate)
        return derive_memory_fit_spec(
            plan=plan,
            settings=settings,
            safety_margin=candidate_margin(candidate, plan),
            capacity=candidate_capacity(candidate),
            origin={"candidate_id": candidate.pk, "workload_summary_id": summary.pk, "gpu_id": gpu.pk,
                    "gpu_name": gpu.display_name, "gpu_architecture": gpu_architecture(gpu)},
            latency_limits={name: getattr(summary, name) for name in LATENCY_FIELDS
                            if getattr(summary, name, None) is not None},
        )
    except ShapeError as error:
        raise Phase1Error(str(error)) from None


def memory_fit_plan_create(*, candidate, settings: FitSettings, target_pool, target_agent=None,
                           actor=None) -> BenchmarkPlan:
    """A benchmark plan of one memory_fit job for the candidate, through the ordinary plan service (so dispatch and
    the agent road are the same as for any plan)."""
    spec = candidate_spec(candidate, settings)
    name = _("Memory fit: %(candidate)s") % {"candidate": candidate.label}
    description = _("Phase 1 for workload version %(version)s on %(gpu)s, derived from the workload summary.") % {
        "version": candidate.workload_summary.pk, "gpu": candidate.quote.gpu.display_name,
    }
    return plan_create(team=candidate.team, name=name[:200], description=description,
                       spec={"jobs": [{"kind": MEMORY_FIT_KIND, "spec": spec}]},
                       target_pool=target_pool, target_agent=target_agent, actor=actor)


def memory_fit_results(user, *, candidate=None, summary=None) -> QuerySet[Result]:
    """The user's canonical, succeeded memory-fit results (of one candidate or one workload version), newest first."""
    queryset = Result.objects.for_user(user).filter(
        job__kind=MEMORY_FIT_KIND, canonical=True, status=ResultStatus.SUCCEEDED,
    ).select_related("job", "attempt__agent").order_by("-finished_at", "-pk")
    if candidate is not None:
        queryset = queryset.filter(job__spec__origin__candidate_id=candidate.pk)
    if summary is not None:
        queryset = queryset.filter(job__spec__origin__workload_summary_id=summary.pk)
    return queryset


def memory_fit_residuals(user) -> list[ResidualGroup]:
    """Residuals (measured − predicted) per GPU architecture, precision and component over the user's results."""
    residuals: list[Residual] = []
    for result in memory_fit_results(user):
        if not isinstance(result.result, dict):
            continue
        origin = (result.spec or {}).get("origin") or {}
        architecture = origin.get("gpu_architecture") or origin.get("gpu_name") or "unknown"
        residuals.extend(residuals_of(read_memory_fit(result.result, result.spec), architecture))
    return group_residuals(residuals)


def device_memory_source(result: Result, reading: MemoryFitReading) -> str:
    """Where a measured usable-memory figure comes from: the agent, its version, when, how (stored data, English)."""
    agent = result.attempt.agent
    text = (f"dossier-agent {agent.name} (agent #{agent.pk}, v{result.agent_version or '?'}) "
            f"at {result.finished_at.isoformat(timespec='seconds')}, job #{result.job_id}: {reading.usable_source}"
            f"{f' on {reading.usable_device_name}' if reading.usable_device_name else ''}")
    return text[:CATALOG_SOURCE_MAX_LENGTH]


def record_device_memory(*, result: Result):
    """Record the usable memory NVML reported in the catalog entry of the job's GPU (through gpu_spec_set, which
    keeps the old figure in the audit log). CPU results and results without an NVML figure change nothing."""

    if not isinstance(result.result, dict):
        return None
    reading = read_memory_fit(result.result, result.spec)
    if not reading.device_reported_memory:
        return None
    gpu = GpuModel.objects.filter(pk=((result.spec or {}).get("origin") or {}).get("gpu_id")).first()
    if gpu is None:
        return None
    agent = result.attempt.agent
    return gpu_spec_set(actor=f"agent:{agent.name}", gpu=gpu, key=SpecKey.USABLE_MIB, value=reading.usable_mib,
                        source=device_memory_source(result, reading), as_of=result.finished_at.date())


def ingest_memory_fit(*, result: Result, now=None) -> dict[str, Any]:
    """The ingest handler of memory_fit (services.INGEST_HANDLERS): for a succeeded result, the headline figures
    into its summary and the device's usable memory into the catalog."""
    if result.status != ResultStatus.SUCCEEDED or not isinstance(result.result, dict):
        return {}
    reading = read_memory_fit(result.result, result.spec)
    spec = record_device_memory(result=result)
    summary: dict[str, Any] = {"memory_fit": {
        "fits_at_target": reading.fits_at_target,
        "largest_fitting": reading.largest_fitting,
        "oom_count": reading.oom_count,
        "device_kind": reading.device_kind,
        "catalog_usable_mib_recorded": spec is not None,
    }}
    rows = recalibrate_margins(team=result.job.team, actor="ingest_result")
    counted = margin_total(result)
    if counted is not None:
        row = rows.get(counted[0])
        summary["margin_calibration"] = {
            "gpu_architecture": counted[0][0], "model_family": counted[0][1], "runs": row.runs if row else 0,
            "margin_fraction": str(row.margin_fraction) if row and row.margin_fraction is not None else None,
        }
    return summary


# --------------------------------------------------------------------------------------------------------------------
# The calibrated safety margin (the rule: apps/workloads/memory/calibration.py)
# --------------------------------------------------------------------------------------------------------------------

GroupKey = tuple[str, str]  # (GPU architecture, model family)


def calibrating_results(team_id) -> QuerySet[Result]:
    """The results that may calibrate a team's margins: canonical, succeeded, non-rehearsal memory-fit results."""
    return Result.objects.filter(job__team_id=team_id, job__kind=MEMORY_FIT_KIND, canonical=True,
                                 status=ResultStatus.SUCCEEDED, rehearsal=False).order_by("pk")


def margin_total(result: Result) -> tuple[GroupKey, calibration.TotalResidual] | None:
    """The group of a result and its total without the margin (predicted, measured), or None when the result does not
    count: not canonical, not succeeded, a rehearsal, run on a CPU, no GPU named in its origin, or no total compared."""
    if (not result.canonical or result.status != ResultStatus.SUCCEEDED or result.rehearsal
            or not isinstance(result.result, dict)):
        return None
    spec = result.spec if isinstance(result.spec, dict) else {}
    reading = read_memory_fit(result.result, spec)
    if reading.device_kind == "cpu":
        return None
    origin = _mapping(spec.get("origin"))
    architecture = origin.get("gpu_architecture") or origin.get("gpu_name")
    model = _mapping(spec.get("model"))
    model_architecture = model.get("architecture") or reading.architecture
    precision = model.get("precision") or reading.precision
    total = next((row for row in reading.components if row.component == TOTAL_COMPONENT), None)
    if (not architecture or not model_architecture or not precision or total is None
            or total.predicted_bytes is None or total.measured_bytes is None or total.predicted_bytes <= 0):
        return None
    key = (str(architecture), calibration.model_family(str(model_architecture), str(precision)))
    return key, calibration.TotalResidual(result.pk, total.predicted_bytes, total.measured_bytes)


def recalibrate_margins(*, team, actor) -> dict[GroupKey, CalibratedMargin]:
    """Recompute every calibrated margin of the team from all its results that count, and store each group's outcome
    (workloads.services.calibrated_margin_record: audited, unchanged rows are not written again). A group that lost
    its last result is updated to 0 results (the default stands). Returns {group: stored row}."""
    groups: dict[GroupKey, list[calibration.TotalResidual]] = defaultdict(list)
    for result in calibrating_results(team.pk):
        counted = margin_total(result)
        if counted is not None:
            groups[counted[0]].append(counted[1])
    for key in CalibratedMargin.objects.filter(team=team).values_list("gpu_architecture", "model_family"):
        groups.setdefault(tuple(key), [])
    rows = {}
    for (architecture, family), totals in sorted(groups.items()):
        row = calibrated_margin_record(actor=actor, team=team, gpu_architecture=architecture, model_family=family,
                                       calibration=calibration.calibrate(totals))
        if row is not None:
            rows[(architecture, family)] = row
    return rows


def canonical_changed(*, team, actor) -> None:
    """services.CANONICAL_CHANGE_HANDLERS: memory-fit results stopped being canonical; the team's margins follow."""
    recalibrate_margins(team=team, actor=actor)


@dataclass(frozen=True)
class MarginInUse:
    """One calibration group on the residuals page: the margin estimates now use there, and the rule's state."""

    team: str
    gpu_architecture: str
    model_family: str
    runs: int
    largest_underestimate: Decimal | None
    choice: MarginChoice
    source: str

    @property
    def margin_pct(self) -> str:
        return percent_text(Decimal(str(self.choice.fraction)))

    @property
    def largest_underestimate_pct(self) -> str | None:
        return None if self.largest_underestimate is None else percent_text(self.largest_underestimate)

    @property
    def runs_missing(self) -> int:
        return max(0, calibration.MIN_RUNS - self.runs)


def margins_in_use(user) -> list[MarginInUse]:
    """The calibration groups of the user's teams, each with the margin in use and where it comes from."""
    return [
        MarginInUse(
            team=row.team.name, gpu_architecture=row.gpu_architecture, model_family=row.model_family, runs=row.runs,
            largest_underestimate=row.largest_underestimate,
            choice=margin_choice(row, gpu_architecture=row.gpu_architecture, model_family=row.model_family),
            source=row.source,
        )
        for row in calibrated_margins_for_user(user)
    ]


# --------------------------------------------------------------------------------------------------------------------
# The form of the "plan from the workload" page
# --------------------------------------------------------------------------------------------------------------------


class MemoryFitPlanForm(forms.Form):
    tokens = forms.IntegerField(label=gettext_lazy("Context tokens (p95) or training sequence length"), min_value=1,
                                max_value=MAX_CONTEXT_TOKENS)
    concurrency = forms.IntegerField(label=gettext_lazy("Concurrent sessions or micro-batch size"), min_value=1,
                                     max_value=MAX_CONCURRENT_SESSIONS)
    max_probes = forms.IntegerField(label=gettext_lazy("Most probes"), min_value=1, max_value=20, initial=6)
    probe_timeout_s = forms.IntegerField(label=gettext_lazy("Timeout per probe (seconds)"), min_value=5,
                                         max_value=3600, initial=300)
    device = forms.ChoiceField(label=gettext_lazy("Device"), initial="auto", choices=[
        ("auto", gettext_lazy("auto (the GPU when the node has one)")),
        ("cuda", gettext_lazy("GPU (CUDA)")),
        ("cpu", gettext_lazy("CPU (small shapes only)")),
    ])
    target_pool = forms.ModelChoiceField(label=gettext_lazy("Agent pool"), queryset=None,
                                         widget=forms.Select(attrs={"translate": "no"}))
    target_agent = forms.ModelChoiceField(label=gettext_lazy("Agent"), queryset=None, required=False,
                                          widget=forms.Select(attrs={"translate": "no"}))
    model_path = forms.CharField(
        label=gettext_lazy("Checkpoint folder on the node (optional)"), required=False, max_length=500,
        help_text=gettext_lazy("An absolute path on the agent's machine to a folder with config.json and "
                               ".safetensors files: the real weights are loaded there, nothing is downloaded. Left "
                               "empty, or not loadable there, the agent runs a proxy of the same shape and says why."),
        widget=forms.TextInput(attrs={"translate": "no"}),
    )
    dispatch = forms.BooleanField(label=gettext_lazy("Dispatch at once"), required=False, initial=True)

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)

        self.fields["target_pool"].queryset = AgentPool.objects.for_team(team).filter(is_active=True)
        self.fields["target_agent"].queryset = Agent.objects.filter(pool__team=team, revoked_at__isnull=True)

    def clean(self):
        cleaned = super().clean()
        pool, agent = cleaned.get("target_pool"), cleaned.get("target_agent")
        if pool is not None and agent is not None and agent.pool_id != pool.pk:
            self.add_error("target_agent", _("The agent is not in the chosen pool."))
        return cleaned

    def clean_model_path(self) -> str:
        value = (self.cleaned_data.get("model_path") or "").strip()
        if value and (not value.startswith(("/", "~")) or "://" in value):
            raise forms.ValidationError(_("Give an absolute folder path on the node (model ids and URLs are never "
                                          "downloaded)."))
        return value

    def settings(self) -> FitSettings:
        data = self.cleaned_data
        return FitSettings(tokens=data["tokens"], concurrency=data["concurrency"], max_probes=data["max_probes"],
                           probe_timeout_s=data["probe_timeout_s"], device=data["device"],
                           model_path=data.get("model_path") or "")
