"""Inverse answers for a training plan on one GPU: the largest micro-batch that fits, and the smallest change that
makes a plan fit (a cheaper recomputation, a higher ZeRO stage, offloading the optimizer, more GPUs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from apps.workloads.memory.breakdown import Breakdown
from apps.workloads.memory.capacity import Capacity, FitResult, fit
from apps.workloads.memory.errors import ShapeError, gettext_noop
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import (
    MAX_GPUS,
    OptimizerOffload,
    Recompute,
    TrainingRequest,
    estimate_training,
)

# TrainingRequest accepts micro-batches up to this size.
MAX_MICRO_BATCH = 65_536
# The "more GPUs" step searches data-parallel degrees up to this many.
DEFAULT_MAX_DATA_PARALLEL_GPUS = 4096


def _fit(shape: ModelShape, request: TrainingRequest, capacity: Capacity) -> tuple[Breakdown, FitResult]:
    breakdown = estimate_training(shape, request)
    return breakdown, fit(breakdown, capacity)


def largest_micro_batch(
    shape: ModelShape, request: TrainingRequest, capacity: Capacity, *, upper_bound: int = MAX_MICRO_BATCH
) -> int:
    """The largest micro-batch b whose per-GPU estimate fits `capacity` (tight counts as fitting), everything else
    as planned; 0 when even b = 1 does not fit. Memory grows with b, so doubling then bisection finds it."""

    def fits_with(batch: int) -> bool:
        return _fit(shape, replace(request, micro_batch_size=batch), capacity)[1].fits

    if not fits_with(1):
        return 0
    if fits_with(upper_bound):
        return upper_bound
    low, high = 1, 2  # fits_with(low); grow high until it fails
    while high < upper_bound and fits_with(high):
        low, high = high, min(high * 2, upper_bound)
    while high - low > 1:  # fits_with(low) is true, fits_with(high) is false
        middle = (low + high) // 2
        if fits_with(middle):
            low = middle
        else:
            high = middle
    return low


@dataclass(frozen=True)
class ChangeStep:
    """One change to the plan: a code (`field=value`) and a message the web layer translates (`template` % `params`),
    like ShapeError."""

    code: str
    template: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return self.template % dict(self.params) if self.params else self.template


@dataclass(frozen=True)
class Change:
    """A plan that fits: the changed request, its breakdown and fit, and the steps from the original plan (none when
    it fitted as planned)."""

    request: TrainingRequest
    breakdown: Breakdown
    fit: FitResult
    steps: tuple[ChangeStep, ...]

    @property
    def needed(self) -> bool:
        return bool(self.steps)

    @property
    def reason(self) -> str:
        """The steps in English, one sentence each (translate `steps` one by one for the page)."""
        if not self.steps:
            return NO_CHANGE_MESSAGE
        return " ".join(step.message for step in self.steps)


NO_CHANGE_MESSAGE = gettext_noop("It fits as planned.")


def _steps(original: TrainingRequest, changed: TrainingRequest) -> tuple[ChangeStep, ...]:
    """What differs between the two requests, in the order of the ladder."""
    steps: list[ChangeStep] = []
    if changed.recompute != original.recompute:
        if changed.recompute is Recompute.SELECTIVE:
            steps.append(
                ChangeStep(
                    "recompute=selective",
                    gettext_noop("Recompute the attention scores in backward (selective recomputation)."),
                )
            )
        else:
            steps.append(
                ChangeStep(
                    "recompute=full",
                    gettext_noop(
                        "Keep only each layer's input and recompute the layer in backward (full recomputation)."
                    ),
                )
            )
    if changed.zero_stage != original.zero_stage:
        steps.append(
            ChangeStep(
                f"zero_stage={changed.zero_stage}",
                gettext_noop("Shard the model states with ZeRO stage %(stage)s over the %(gpus)s data-parallel GPUs."),
                {"stage": changed.zero_stage, "gpus": changed.data_parallel_gpus},
            )
        )
    if changed.optimizer_offload != original.optimizer_offload:
        if changed.optimizer_offload is OptimizerOffload.CPU:
            template = gettext_noop(
                "Offload the optimizer states and step to CPU memory (ZeRO-Offload, DeepSpeed's 32-bit CPU Adam)."
            )
        else:
            template = gettext_noop(
                "Offload the optimizer states to NVMe, with the step on the CPU (ZeRO-Infinity, DeepSpeed's 32-bit "
                "CPU Adam)."
            )
        steps.append(ChangeStep(f"optimizer_offload={changed.optimizer_offload.value}", template))
    if changed.data_parallel_gpus != original.data_parallel_gpus:
        steps.append(
            ChangeStep(
                f"data_parallel_gpus={changed.data_parallel_gpus}",
                gettext_noop("Train on %(gpus)s data-parallel GPUs instead of %(planned)s."),
                {"gpus": changed.data_parallel_gpus, "planned": original.data_parallel_gpus},
            )
        )
    return tuple(steps)


Rung = Callable[[TrainingRequest], TrainingRequest | None]


def _recompute(mode: Recompute) -> Rung:
    def apply(request: TrainingRequest) -> TrainingRequest | None:
        order = (Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL)
        return replace(request, recompute=mode) if order.index(request.recompute) < order.index(mode) else None

    return apply


def _zero_stage(stage: int) -> Rung:
    def apply(request: TrainingRequest) -> TrainingRequest | None:
        return replace(request, zero_stage=stage) if request.zero_stage < stage else None

    return apply


def _offload(device: OptimizerOffload) -> Rung:
    """DeepSpeed's optimizer offload needs ZeRO-1 or higher (CPU) or ZeRO-3 (NVMe) and runs a 32-bit CPU Adam."""
    minimum_stage = 1 if device is OptimizerOffload.CPU else 3
    order = (OptimizerOffload.NONE, OptimizerOffload.CPU, OptimizerOffload.NVME)

    def apply(request: TrainingRequest) -> TrainingRequest | None:
        if order.index(request.optimizer_offload) >= order.index(device):
            return None
        return replace(
            request,
            optimizer_offload=device,
            zero_stage=max(request.zero_stage, minimum_stage),
            optimizer_bits=32,
        )

    return apply


def _more_gpus(shape: ModelShape, capacity: Capacity, maximum: int) -> Rung:
    """The fewest data-parallel GPUs above the planned ones that fit, at ZeRO-3 (the stage that shards all the model
    states, so each added GPU lowers the per-GPU need); None if `maximum` does not fit either. The per-GPU need never
    grows with N, so a bisection finds it."""

    def apply(request: TrainingRequest) -> TrainingRequest | None:
        base = replace(request, zero_stage=3)

        def fits_with(gpus: int) -> bool:
            return _fit(shape, replace(base, data_parallel_gpus=gpus), capacity)[1].fits

        low, high = request.data_parallel_gpus, min(maximum, MAX_GPUS)
        if high <= low or not fits_with(high):
            return None
        while high - low > 1:  # fits_with(high); low is the planned count or one known not to fit
            middle = (low + high) // 2
            if fits_with(middle):
                high = middle
            else:
                low = middle
        return replace(base, data_parallel_gpus=high)

    return apply


def smallest_change(
    shape: ModelShape,
    request: TrainingRequest,
    capacity: Capacity,
    *,
    max_data_parallel_gpus: int = DEFAULT_MAX_DATA_PARALLEL_GPUS,
) -> Change | None:
    """The cheapest change (in throughput) that makes the plan fit one GPU of `capacity`; a Change without steps when
    it fits as planned; None when nothing on the ladder fits.

    The ladder, cheapest first:

    1. selective recomputation: re-runs only the attention core, whose FLOPs per stored byte are low (Korthikanti
       et al. 2022: it cuts the recomputation overhead by over 90 % against full recomputation);
    2. ZeRO stage 1, then 2, then 3: stages 1 and 2 move the same bytes as plain data parallelism (reduce-scatter +
       all-gather), stage 3 1.5 × as many (Rajbhandari et al. 2020, ZeRO, section 7), mostly overlapped with compute;
       they only help with more than one data-parallel GPU;
    3. full recomputation: one more forward pass per step, about a third more compute;
    4. optimizer offload to CPU memory (ZeRO-Offload): the step runs on the CPU and the gradients and weights cross
       PCIe every step;
    5. optimizer offload to NVMe (ZeRO-Infinity, ZeRO-3 only): as 4, bounded by the drive's bandwidth;
    6. more data-parallel GPUs at ZeRO-3: the only step that buys hardware.

    Each rung is tried first on its own (on the original plan), then together with the earlier rungs that lowered
    the need; the first plan that fits (tight counts as fitting) wins. A candidate the estimator rejects (a
    combination DeepSpeed does not offer) is skipped."""
    breakdown, result = _fit(shape, request, capacity)
    if result.fits:
        return Change(request, breakdown, result, ())
    rungs: tuple[Rung, ...] = (
        _recompute(Recompute.SELECTIVE),
        _zero_stage(1),
        _zero_stage(2),
        _zero_stage(3),
        _recompute(Recompute.FULL),
        _offload(OptimizerOffload.CPU),
        _offload(OptimizerOffload.NVME),
        _more_gpus(shape, capacity, max_data_parallel_gpus),
    )
    cumulative, cumulative_bytes = request, breakdown.total_bytes
    for rung in rungs:
        candidates = [rung(request)]
        if cumulative is not request:
            candidates.append(rung(cumulative))
        best: tuple[TrainingRequest, int] | None = None
        for candidate in candidates:
            if candidate is None:
                continue
            try:
                candidate_breakdown, candidate_fit = _fit(shape, candidate, capacity)
            except ShapeError:
                continue
            if candidate_fit.fits:
                return Change(candidate, candidate_breakdown, candidate_fit, _steps(request, candidate))
            if best is None or candidate_breakdown.total_bytes < best[1]:
                best = (candidate, candidate_breakdown.total_bytes)
        if best is not None and best[1] < cumulative_bytes:
            cumulative, cumulative_bytes = best
    return None


@dataclass(frozen=True)
class TrainingAnswers:
    """The training inverse answers for one GPU, for a page's estimate panel."""

    fit: FitResult
    largest_micro_batch: int
    smallest_change: Change | None


def training_answers(shape: ModelShape, request: TrainingRequest, capacity: Capacity) -> TrainingAnswers:
    """Both inverse answers for one GPU: the largest micro-batch at the plan's settings and the smallest change."""
    _breakdown, result = _fit(shape, request, capacity)
    return TrainingAnswers(
        fit=result,
        largest_micro_batch=largest_micro_batch(shape, request, capacity),
        smallest_change=smallest_change(shape, request, capacity),
    )
