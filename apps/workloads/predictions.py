"""Roofline PREDICTIONS for a workload version: the request mix its summary states and one prediction per fitting
GPU, for the shortlist's cost ranking and for setting phase 2's measured capacity beside it.

Plain Python (no Django), like estimates.py: it reads the summary's attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.workloads import rules
from apps.workloads.estimates import Analysis, EstimatePlan, GpuFit
from apps.workloads.memory.capacity import FitStatus
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.inference import InferenceRequest
from apps.workloads.memory.roofline import GpuPeaks, RequestMix, RooflineError, RooflinePrediction, predict_serving


@dataclass(frozen=True)
class MixSource:
    mix: RequestMix
    derivation: Mapping[str, str]  # input → "field = value"


def _first(summary: Any, names: tuple[str, ...]) -> tuple[str, int] | None:
    for name in names:
        value = getattr(summary, name, None)
        if value not in (None, ""):
            return name, int(value)
    return None


def request_mix(summary: Any, plan: EstimatePlan) -> MixSource | None:
    """The mix a serving workload states: mean input and output tokens (else their p95, said so) and the plan's
    concurrent sessions. None for workloads that do not generate tokens or state no lengths."""
    if getattr(summary, "workload_type", None) not in rules.SERVES_LLM:
        return None
    if not isinstance(plan.request, InferenceRequest):
        return None
    prompt = _first(summary, ("mean_input_tokens", "p95_input_tokens"))
    answer = _first(summary, ("mean_output_tokens", "p95_output_tokens"))
    if prompt is None or answer is None or answer[1] < 1:
        return None
    sessions = plan.request.concurrent_sessions
    try:
        mix = RequestMix(mean_input_tokens=prompt[1], mean_output_tokens=answer[1], concurrency=sessions)
    except ShapeError:
        return None
    return MixSource(
        mix,
        {
            "I": f"{prompt[0]} = {prompt[1]}",
            "O": f"{answer[0]} = {answer[1]}",
            "B": plan.derivation.get("sessions", f"sessions = {sessions}"),
        },
    )


def replica_of(item: GpuFit) -> tuple[int, int | None] | None:
    """(tensor-parallel GPUs of one replica, sessions per replica or None for the plan's) of a fitting GPU: the
    memory layout when the estimate chose one, else the planned degree, else the fewest GPUs that fit."""
    layout = getattr(item, "layout", None)
    if layout is not None:
        return int(layout.tensor_parallel), getattr(layout, "sessions_per_replica", None)
    if item.fit.status in (FitStatus.FITS, FitStatus.TIGHT):
        return item.fit.gpus, None
    if item.fewest_gpus is not None:
        return item.fewest_gpus, None
    return None


def predict_for(plan: EstimatePlan, mix: RequestMix, item: GpuFit, peaks: GpuPeaks) -> RooflinePrediction | None:
    """The roofline prediction of one fitting GPU, or None when it cannot be drawn (a ShapeError or RooflineError:
    a degree that does not split the heads, a shape without layers)."""
    replica = replica_of(item)
    if replica is None:
        return None
    gpus, sessions = replica
    if sessions:
        mix = RequestMix(mix.mean_input_tokens, mix.mean_output_tokens, sessions)
    request = plan.request
    kv_precision = request.kv_cache_precision if isinstance(request, InferenceRequest) else None
    try:
        return predict_serving(plan.shape, mix, peaks, tensor_parallel=gpus, kv_cache_precision=kv_precision)
    except (ShapeError, RooflineError):
        return None


def shortlist_predictions(
    summary: Any, analysis: Analysis, peaks: Mapping[Any, GpuPeaks]
) -> dict[Any, RooflinePrediction] | None:
    """One prediction per fitting GPU with datasheet peaks (by GPU key); None when the workload has no mix."""
    source = request_mix(summary, analysis.plan)
    if source is None:
        return None
    predictions = {}
    for item in analysis.fits:
        gpu_peaks = peaks.get(item.gpu.key)
        if gpu_peaks is None:
            continue
        prediction = predict_for(analysis.plan, source.mix, item, gpu_peaks)
        if prediction is not None:
            predictions[item.gpu.key] = prediction
    return predictions
