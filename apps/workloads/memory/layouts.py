"""Serving layouts: how many data-parallel replicas of how many GPUs (tensor × pipeline parallel) hold the peak
sessions at the p95 context, and which of them needs the fewest whole GPUs.

A workload's peak sessions need not fit one replica: 200 sessions at 8k tokens of Llama-3-8B need 200 GiB of KV
cache, which no single GPU holds, but four replicas of one 80 GB GPU with 50 sessions each do. For every valid
(tensor-parallel t, pipeline-parallel pp) pair:

    per replica           = the most sessions one replica of t·pp GPUs holds at the p95 context (largest_concurrency)
    replicas              = ⌈S / per replica⌉
    sessions per replica  = ⌈S / replicas⌉       (the load spread evenly; never above per replica)
    GPUs                  = replicas · t · pp

and the layout's per-GPU breakdown and fit are those at the sessions per replica. `cheapest_layout` picks the fewest
whole GPUs; ties go to fewer GPUs per replica (less interconnect), then to tensor before pipeline parallelism.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from apps.workloads.memory.breakdown import Breakdown
from apps.workloads.memory.capacity import DEFAULT_TIGHT_HEADROOM_FRACTION, Capacity, FitResult, fit
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.inference import InferenceRequest, estimate_inference
from apps.workloads.memory.search import DEFAULT_TENSOR_PARALLEL_DEGREES, largest_concurrency
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import TrainingRequest

DEFAULT_PIPELINE_PARALLEL_DEGREES = (1, 2, 4, 8)
# One replica spans at most this many GPUs (the largest tensor-parallel degree the estimator already tries).
DEFAULT_MAX_GPUS_PER_REPLICA = 64
# Degree-pair errors that mean "not a valid layout", not a bad request.
_LAYOUT_FIELDS = frozenset({"tensor_parallel", "pipeline_parallel"})


@dataclass(frozen=True)
class Layout:
    """Data-parallel replicas of tensor_parallel × pipeline_parallel GPUs, each holding sessions_per_replica sessions.
    `breakdown` and `fit` are per GPU at that load."""

    replicas: int
    tensor_parallel: int
    pipeline_parallel: int
    sessions_per_replica: int
    breakdown: Breakdown
    fit: FitResult

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def gpus(self) -> int:
        return self.replicas * self.gpus_per_replica

    @property
    def sessions(self) -> int:
        """The sessions all replicas hold together (at least the peak asked for)."""
        return self.replicas * self.sessions_per_replica

    def as_dict(self) -> dict:
        return {
            "replicas": self.replicas,
            "tensor_parallel": self.tensor_parallel,
            "pipeline_parallel": self.pipeline_parallel,
            "gpus_per_replica": self.gpus_per_replica,
            "gpus": self.gpus,
            "sessions_per_replica": self.sessions_per_replica,
            "required_bytes_per_gpu": self.breakdown.total_bytes,
            "headroom_bytes": self.fit.headroom_bytes,
            "status": self.fit.status.value,
        }


def layout_for(
    shape: ModelShape,
    request: InferenceRequest,
    capacity: Capacity,
    tensor_parallel: int,
    pipeline_parallel: int,
    *,
    tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION,
) -> Layout | None:
    """The layout with replicas of `tensor_parallel` × `pipeline_parallel` GPUs, or None when not even one session
    fits such a replica. ShapeError when the degrees do not suit the model (field tensor_parallel/pipeline_parallel)."""
    sessions = request.concurrent_sessions
    degrees = replace(request, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel)
    most = largest_concurrency(shape, degrees, capacity, upper_bound=sessions)
    if most == 0:
        return None
    per_replica = sessions if most is None else most
    replicas = -(-sessions // per_replica)
    load = -(-sessions // replicas)
    breakdown = estimate_inference(shape, replace(degrees, concurrent_sessions=load))
    result = fit(breakdown, capacity, tight_headroom_fraction=tight_headroom_fraction)
    return Layout(replicas, tensor_parallel, pipeline_parallel, load, breakdown, result)


def inference_layouts(
    shape: ModelShape,
    request: InferenceRequest,
    capacity: Capacity,
    *,
    max_gpus_per_replica: int = DEFAULT_MAX_GPUS_PER_REPLICA,
    tensor_parallel_degrees: Iterable[int] = DEFAULT_TENSOR_PARALLEL_DEGREES,
    pipeline_parallel_degrees: Iterable[int] = DEFAULT_PIPELINE_PARALLEL_DEGREES,
    tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION,
) -> list[Layout]:
    """Every fitting layout of the request's peak sessions on GPUs of `capacity`, one per valid (t, pp) pair with
    t·pp ≤ max_gpus_per_replica, ordered by (t, pp). A pair whose t does not divide the heads (or whose pp exceeds
    the layers) is skipped; a pair where one session does not fit has no layout. The request's own degrees are
    ignored: the search sets them."""
    layouts = []
    for tp in sorted(set(tensor_parallel_degrees)):
        for pp in sorted(set(pipeline_parallel_degrees)):
            if tp * pp > max_gpus_per_replica:
                continue
            try:
                found = layout_for(shape, request, capacity, tp, pp, tight_headroom_fraction=tight_headroom_fraction)
            except ShapeError as error:
                if error.field in _LAYOUT_FIELDS:
                    continue
                raise
            if found is not None:
                layouts.append(found)
    return layouts


def cheapest_inference_layout(
    shape: ModelShape,
    request: InferenceRequest,
    capacity: Capacity,
    *,
    max_gpus_per_replica: int = DEFAULT_MAX_GPUS_PER_REPLICA,
    tensor_parallel_degrees: Iterable[int] = DEFAULT_TENSOR_PARALLEL_DEGREES,
    pipeline_parallel_degrees: Iterable[int] = DEFAULT_PIPELINE_PARALLEL_DEGREES,
    tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION,
) -> Layout | None:
    """cheapest_layout(inference_layouts(...)) without the layouts that cannot win: a layout needs at least t·pp
    GPUs, so the pairs are tried by growing t·pp and the search stops once t·pp exceeds the best whole-GPU count."""
    pairs = sorted(
        (
            (tp, pp)
            for tp in set(tensor_parallel_degrees)
            for pp in set(pipeline_parallel_degrees)
            if tp * pp <= max_gpus_per_replica
        ),
        key=lambda pair: (pair[0] * pair[1], pair[1], pair[0]),
    )
    best: Layout | None = None
    for tp, pp in pairs:
        if best is not None and tp * pp > best.gpus:
            break
        try:
            found = layout_for(shape, request, capacity, tp, pp, tight_headroom_fraction=tight_headroom_fraction)
        except ShapeError as error:
            if error.field in _LAYOUT_FIELDS:
                continue
            raise
        if found is not None and (best is None or layout_order(found) < layout_order(best)):
            best = found
    return best


def layout_order(layout: Layout) -> tuple[int, int, int, int]:
    """Fewest whole GPUs first; then fewer GPUs per replica; then tensor before pipeline parallelism."""
    return (layout.gpus, layout.gpus_per_replica, layout.pipeline_parallel, layout.tensor_parallel)


def cheapest_layout(layouts: Sequence[Layout]) -> Layout | None:
    """The layout with the fewest whole GPUs (ties: fewer GPUs per replica, then tensor before pipeline); None when
    there is none."""
    return min(layouts, key=layout_order, default=None)


def training_layout(request: TrainingRequest, breakdown: Breakdown, result: FitResult) -> Layout:
    """A training plan's data-parallel answer (fewest_gpus_training) as a layout: N data-parallel ranks of t GPUs.
    A training step has no sessions: `sessions_per_replica` is the micro-batch each rank runs."""
    return Layout(
        replicas=request.data_parallel_gpus,
        tensor_parallel=request.tensor_parallel,
        pipeline_parallel=1,
        sessions_per_replica=request.micro_batch_size,
        breakdown=breakdown,
        fit=result,
    )
