"""Inverse answers: the most concurrent sessions, the fewest GPUs and the smallest device whose memory fits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from apps.workloads.memory.breakdown import Breakdown
from apps.workloads.memory.capacity import DEFAULT_TIGHT_HEADROOM_FRACTION, Capacity, FitResult, fit
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.inference import MAX_CONCURRENT_SESSIONS, InferenceRequest, estimate_inference
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import TrainingRequest, estimate_training


def largest_concurrency(
    shape: ModelShape, request: InferenceRequest, capacity: Capacity, *, upper_bound: int = MAX_CONCURRENT_SESSIONS
) -> int | None:
    """Most concurrent sessions at the request's p95 context that fit the capacity (0: not even one fits;
    None: memory does not limit concurrency up to `upper_bound`).

    The need grows with the sessions no faster than between one and two sessions (the KV cache grows linearly, the
    activation peak stops growing once a step is full), so the straight line through those two estimates gives a
    first guess at or below the answer; a galloping search from that guess and a bisection then find the exact
    answer with a handful of estimates (fits_with is monotone: more sessions never need less memory)."""

    def need(sessions: int) -> int:
        return estimate_inference(shape, replace(request, concurrent_sessions=sessions)).total_bytes

    def fits_with(sessions: int) -> bool:
        return need(sessions) <= capacity.total_bytes

    one = need(1)
    if one > capacity.total_bytes:
        return 0
    if fits_with(upper_bound):
        return None
    if upper_bound <= 2:
        return 1  # one fits, upper_bound (2) does not
    slope = max(1, need(2) - one)
    guess = min(upper_bound - 1, max(1, 1 + (capacity.total_bytes - one) // slope))
    # invariant below: fits_with(low) is true and fits_with(high) is false
    if fits_with(guess):
        low, step = guess, 1
        while True:
            probe = min(low + step, upper_bound)
            if probe == upper_bound or not fits_with(probe):
                high = probe
                break
            low, step = probe, step * 2
    else:
        high, step = guess, 1
        while True:
            probe = max(high - step, 1)
            if probe == 1 or fits_with(probe):
                low = probe
                break
            high, step = probe, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if fits_with(middle):
            low = middle
        else:
            high = middle
    return low


DEFAULT_TENSOR_PARALLEL_DEGREES = (1, 2, 4, 8, 16, 32, 64)


def fewest_gpus_inference(
    shape: ModelShape,
    request: InferenceRequest,
    capacity: Capacity,
    degrees: Iterable[int] = DEFAULT_TENSOR_PARALLEL_DEGREES,
) -> tuple[int, Breakdown] | None:
    """Smallest valid tensor-parallel degree whose per-GPU estimate fits; None if none of `degrees` does."""
    for degree in sorted(degrees):
        try:
            breakdown = estimate_inference(shape, replace(request, tensor_parallel=degree))
        except ShapeError as error:
            if error.field == "tensor_parallel":
                continue  # the degree does not divide the heads: not a valid layout
            raise
        if breakdown.total_bytes <= capacity.total_bytes:
            return degree, breakdown
    return None


def fewest_gpus_training(
    shape: ModelShape, request: TrainingRequest, capacity: Capacity, *, max_data_parallel_gpus: int = 4096
) -> tuple[int, Breakdown] | None:
    """Fewest data-parallel GPUs N (at the request's ZeRO stage and TP degree) whose per-GPU estimate fits.
    The per-GPU need never grows with N, so a bisection finds it; None if even `max_data_parallel_gpus` fails."""

    def estimate(n: int) -> Breakdown:
        return estimate_training(shape, replace(request, data_parallel_gpus=n))

    def fits_with(n: int) -> bool:
        return estimate(n).total_bytes <= capacity.total_bytes

    if not fits_with(max_data_parallel_gpus):
        return None
    low, high = 0, max_data_parallel_gpus  # fits_with(high); low = 0 stands for "nothing smaller known to fit"
    while high - low > 1:
        middle = (low + high) // 2
        if fits_with(middle):
            high = middle
        else:
            low = middle
    return high, estimate(high)


K = TypeVar("K")


def smallest_fitting_device(
    breakdown: Breakdown,
    devices: Mapping[K, Capacity],
    *,
    tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION,
) -> tuple[K, FitResult] | None:
    """The device with the least memory that still fits (tight counts as fitting); None when none fits."""
    fitting = [
        (key, result)
        for key, capacity in devices.items()
        if (result := fit(breakdown, capacity, tight_headroom_fraction=tight_headroom_fraction)).fits
    ]
    if not fitting:
        return None
    return min(fitting, key=lambda item: item[1].capacity.total_bytes)
