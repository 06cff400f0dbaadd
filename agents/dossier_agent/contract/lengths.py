"""Request-length distributions of synthetic prompts: what a load spec may ask for, checked the same way by the
server (when a plan is saved) and the agent (when it builds the prompts). Pure Python, no numpy.

Two distributions, each given by the workload's own figures:

- **log-normal** from the mean and the p95 (`input_tokens_mean`, `input_tokens_p95`): σ solves
  ln(p95/mean) = z95·σ − σ²/2, μ = ln(mean) − σ²/2. It exists only while p95/mean ≤ exp(z95²/2) ≈ 3.87: a log-normal
  whose p95 is further above its mean has no such σ.
- **quantile knots** (`input_tokens_quantiles`: [[q, length], …] from q = 0 to q = 1, lengths not decreasing): the
  inverse CDF, log-linear between knots (ln length is linear in q). `knots_from_mean_p95` fits knots
  (0, 1), (0.5, m), (0.95, p95), (1, p95) with the median m solved so that the mean is the workload's mean: it
  expresses a mean and p95 the log-normal cannot, down to a mean of about p95·0.45/ln(p95) + p95/20.

`synthetic_lengths(mean, p95)` picks the first of the two that can express the figures and returns the fields of
`prompts.synthetic` for it (same names for `output_tokens_*`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

Z95 = 1.6448536269514722
#: the largest p95/mean a log-normal can have: exp(z95² / 2)
LOGNORMAL_MAX_P95_RATIO = math.exp(Z95 * Z95 / 2)
MAX_KNOTS = 64
MAX_LENGTH = 10_000_000


class LengthError(ValueError):
    """A length distribution that cannot be built; the message names the field."""


def lognormal_parameters(mean: float, p95: float | None) -> tuple[float, float] | None:
    """(μ, σ) of the log-normal with this mean and p95; None for a constant length (no p95, or p95 ≈ mean)."""
    if not mean > 0:
        raise LengthError("mean length must be positive")
    if p95 is None or p95 <= mean * 1.0001:
        return None
    ratio = math.log(p95 / mean)
    if ratio > Z95 * Z95 / 2:
        raise LengthError(f"p95 {p95:g} is too far above the mean {mean:g} for a log-normal "
                          f"(p95/mean <= {LOGNORMAL_MAX_P95_RATIO:.2f})")
    sigma = Z95 - math.sqrt(Z95 * Z95 - 2 * ratio)
    return math.log(mean) - sigma * sigma / 2, sigma


def check_knots(knots: Any, name: str = "quantiles") -> list[tuple[float, float]]:
    """The knots as (q, length) pairs, or LengthError naming what is wrong."""
    if not isinstance(knots, Sequence) or isinstance(knots, str) or not 2 <= len(knots) <= MAX_KNOTS:
        raise LengthError(f"{name} must be a list of 2 to {MAX_KNOTS} [quantile, length] pairs")
    pairs: list[tuple[float, float]] = []
    for index, knot in enumerate(knots):
        if (not isinstance(knot, Sequence) or isinstance(knot, str) or len(knot) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in knot)):
            raise LengthError(f"{name}[{index}] must be a [quantile, length] pair of numbers")
        pairs.append((float(knot[0]), float(knot[1])))
    if pairs[0][0] != 0 or pairs[-1][0] != 1:
        raise LengthError(f"{name} must run from quantile 0 to quantile 1")
    for (q0, v0), (q1, v1) in pairwise(pairs):
        if not q1 > q0:
            raise LengthError(f"{name}: quantiles must increase")
        if v1 < v0:
            raise LengthError(f"{name}: lengths must not decrease")
    if pairs[0][1] < 1 or pairs[-1][1] > MAX_LENGTH:
        raise LengthError(f"{name}: lengths must lie between 1 and {MAX_LENGTH}")
    return pairs


def length_at(knots: Sequence[tuple[float, float]], u: float) -> float:
    """The inverse CDF at u ∈ [0, 1]: log-linear between the knots around u."""
    for (q0, v0), (q1, v1) in pairwise(knots):
        if u <= q1:
            t = (u - q0) / (q1 - q0)
            return math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0)))
    return knots[-1][1]


def knots_mean(knots: Sequence[tuple[float, float]]) -> float:
    """The mean of the distribution: Σ width·(v1 − v0)/ln(v1/v0) over the segments (width·v0 where v1 = v0)."""
    total = 0.0
    for (q0, v0), (q1, v1) in pairwise(knots):
        width = q1 - q0
        total += width * v0 if math.isclose(v0, v1) else width * (v1 - v0) / math.log(v1 / v0)
    return total


def knots_from_mean_p95(mean: float, p95: float) -> list[list[float]]:
    """Knots (0, 1), (0.5, m), (0.95, p95), (1, p95) whose mean is `mean` (m by bisection), as JSON lists."""
    if not 1 <= mean <= p95:
        raise LengthError(f"the mean {mean:g} must lie between 1 and the p95 {p95:g}")

    def knots(median: float) -> list[tuple[float, float]]:
        return [(0.0, 1.0), (0.5, median), (0.95, float(p95)), (1.0, float(p95))]

    low, high = 1.0, float(p95)
    if knots_mean(knots(low)) > mean:
        raise LengthError(f"the mean {mean:g} is too far below the p95 {p95:g} for any supported distribution "
                          f"(at least {knots_mean(knots(low)):.0f} with this p95)")
    if knots_mean(knots(high)) < mean:
        raise LengthError(f"the mean {mean:g} is too close to the p95 {p95:g} for the quantile knots")
    for _step in range(100):
        middle = (low + high) / 2
        if knots_mean(knots(middle)) < mean:
            low = middle
        else:
            high = middle
    return [[q, round(v, 3)] for q, v in knots((low + high) / 2)]


def synthetic_lengths(prefix: str, mean: float, p95: float | None) -> dict[str, Any]:
    """The `prompts.synthetic` fields for lengths with this mean and p95 (`prefix` is "input_tokens" or
    "output_tokens"): the log-normal when it can express them, else quantile knots fitted to both."""
    fields: dict[str, Any] = {f"{prefix}_mean": mean}
    try:
        lognormal_parameters(mean, p95)
    except LengthError:
        fields[f"{prefix}_quantiles"] = knots_from_mean_p95(mean, float(p95))
    else:
        if p95 is not None:
            fields[f"{prefix}_p95"] = p95
    return fields


def check_synthetic(synthetic: Mapping[str, Any], where: str = "prompts.synthetic") -> None:
    """Raise LengthError naming the field when the agent could not build these prompt lengths."""
    for prefix, required in (("input_tokens", True), ("output_tokens", False)):
        mean = synthetic.get(f"{prefix}_mean")
        if prefix == "output_tokens" and mean is None:
            mean = synthetic.get("output_tokens")
        p95, quantiles = synthetic.get(f"{prefix}_p95"), synthetic.get(f"{prefix}_quantiles")
        if mean is None and not required:
            mean = 128
        if not isinstance(mean, (int, float)) or isinstance(mean, bool) or not mean > 0:
            raise LengthError(f"{where}.{prefix}_mean: must be a positive number")
        if quantiles is not None:
            if p95 is not None:
                raise LengthError(f"{where}.{prefix}_p95: give the p95 or the quantiles, not both")
            check_knots(quantiles, f"{where}.{prefix}_quantiles")
            continue
        if p95 is not None and (not isinstance(p95, (int, float)) or isinstance(p95, bool)):
            raise LengthError(f"{where}.{prefix}_p95: must be a number")
        try:
            lognormal_parameters(float(mean), p95)
        except LengthError as error:
            raise LengthError(f"{where}.{prefix}_p95: {error}") from None
