"""The GPU shortlist: the quick-answer matrix row of a workload, and the catalog GPUs ranked by memory fit, then by
whether the guide points that way, then by what the workload needs most (rules.NEEDS).

Given roofline predictions and known prices per GPU-hour, `rank_by_predicted_cost` ranks the fitting GPUs by
PREDICTED cost per accepted output instead (the ones without a prediction or a price follow, in the order above).

Plain Python over estimates.Analysis; the texts are in rules.py.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from apps.workloads import rules
from apps.workloads.estimates import Analysis, GpuFit
from apps.workloads.memory.capacity import FitStatus
from apps.workloads.memory.roofline import SECONDS_PER_HOUR, RooflinePrediction
from apps.workloads.price_sources import PriceRef

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
    cost: PredictedCost | None = None  # set by rank_by_predicted_cost
    cost_missing: str = ""  # why there is no predicted cost: COST_MISSING_* codes

    @property
    def fits_as_planned(self) -> bool:
        return self.fit_class in (FITS_AS_PLANNED, TIGHT_AS_PLANNED)


@dataclass(frozen=True)
class Shortlist:
    answer: rules.QuickAnswer
    need: str
    entries: tuple[ShortlistEntry, ...]
    cost_currency: str | None = None  # set when the entries are ranked by predicted cost per accepted output

    @property
    def families(self) -> tuple[rules.GpuFamily, ...]:
        return tuple(rules.GPU_FAMILIES_BY_CODE[code] for code in self.answer.families)


def _fit_class(item: GpuFit) -> tuple[int, int | None]:
    if item.fit.status is FitStatus.FITS:
        return FITS_AS_PLANNED, item.fit.gpus
    if item.fit.status is FitStatus.TIGHT:
        return TIGHT_AS_PLANNED, item.fit.gpus
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


def build_shortlist(
    workload_type: str,
    analysis: Analysis,
    *,
    predictions: Mapping[Any, RooflinePrediction] | None = None,
    prices: Mapping[Any, PriceRef] | None = None,
    acceptance: Decimal | None = None,
) -> Shortlist:
    """The shortlist by fit, guide direction and need; with `predictions` and `prices` (by GPU key), ranked by
    predicted cost per accepted output (rank_by_predicted_cost)."""
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
        ShortlistEntry(rank, item, family, in_direction, fit_class, gpus_needed, value)
        for rank, (_, item, family, in_direction, fit_class, gpus_needed, value) in enumerate(rows, start=1)
    )
    shortlist = Shortlist(answer, need, entries)
    if predictions is None and prices is None:
        return shortlist
    return rank_by_predicted_cost(shortlist, predictions or {}, prices or {}, acceptance=acceptance)


# --------------------------------------------------------------------------------------------------------------------
# Ranking by predicted cost per accepted output
# --------------------------------------------------------------------------------------------------------------------

COST_MISSING_DOES_NOT_FIT = "does_not_fit"
COST_MISSING_PREDICTION = "no_prediction"
COST_MISSING_PRICE = "no_price"
COST_MISSING_CURRENCY = "other_currency"


@dataclass(frozen=True)
class PredictedCost:
    """A PREDICTION: price per GPU-hour × GPUs ÷ (predicted outputs per hour × acceptance), in `price.currency`."""

    prediction: RooflinePrediction
    price: PriceRef
    gpus: int  # GPUs of one replica (the prediction's tensor-parallel degree)
    acceptance: Decimal  # the workload's stated quality acceptance (1 when not stated)
    acceptance_stated: bool
    outputs_per_hour: Decimal  # predicted responses per hour of one replica
    cost_per_accepted_output: Decimal

    @property
    def formula(self) -> str:
        return (
            f"{self.price.amount} {self.price.currency}/GPU-h × {self.gpus} GPU ÷ "
            f"({self.outputs_per_hour} outputs/h × {self.acceptance}) = {self.cost_per_accepted_output} "
            f"{self.price.currency} per accepted output"
        )


def predicted_cost(prediction: RooflinePrediction, price: PriceRef, acceptance: Decimal | None) -> PredictedCost:
    """The predicted cost per accepted output of one replica (Decimal; the roofline's float rate read to 6 figures)."""
    stated = acceptance is not None
    share = Decimal(acceptance) if stated else Decimal(1)
    if not 0 < share <= 1:
        raise ValueError(f"the acceptance is a fraction above 0 and at most 1, got {acceptance!r}")
    per_hour = Decimal(f"{prediction.requests_per_s_per_replica * SECONDS_PER_HOUR:.6g}")
    gpus = prediction.tensor_parallel
    cost = price.amount * gpus / (per_hour * share)
    return PredictedCost(prediction, price, gpus, share, stated, per_hour, cost)


def _ranking_currency(prices: Mapping[Any, PriceRef], keys: list[Any]) -> str | None:
    """The currency most of the priced GPUs are priced in (ties: alphabetical); the others cannot be compared."""
    counts = Counter(prices[key].currency for key in keys if key in prices)
    if not counts:
        return None
    return min(counts, key=lambda currency: (-counts[currency], currency))


def rank_by_predicted_cost(
    shortlist: Shortlist,
    predictions: Mapping[Any, RooflinePrediction],
    prices: Mapping[Any, PriceRef],
    *,
    acceptance: Decimal | None = None,
) -> Shortlist:
    """The fitting entries with a prediction and a price in the ranking currency first, cheapest predicted cost per
    accepted output first; then every other entry in the shortlist's previous order (each says why it has no cost).
    """
    fitting_keys = [
        entry.gpu_fit.gpu.key
        for entry in shortlist.entries
        if entry.fit_class != DOES_NOT_FIT and entry.gpu_fit.gpu.key in predictions
    ]
    currency = _ranking_currency(prices, fitting_keys)
    costed, rest = [], []
    for position, entry in enumerate(shortlist.entries):
        key = entry.gpu_fit.gpu.key
        prediction, price = predictions.get(key), prices.get(key)
        if entry.fit_class == DOES_NOT_FIT:
            missing = COST_MISSING_DOES_NOT_FIT
        elif prediction is None:
            missing = COST_MISSING_PREDICTION
        elif price is None:
            missing = COST_MISSING_PRICE
        elif price.currency != currency:
            missing = COST_MISSING_CURRENCY
        else:
            cost = predicted_cost(prediction, price, acceptance)
            costed.append((cost.cost_per_accepted_output, position, replace(entry, cost=cost, cost_missing="")))
            continue
        rest.append(replace(entry, cost=None, cost_missing=missing))
    costed.sort(key=lambda row: (row[0], row[1]))
    ordered = [entry for _, _, entry in costed] + rest
    entries = tuple(replace(entry, rank=rank) for rank, entry in enumerate(ordered, start=1))
    return replace(shortlist, entries=entries, cost_currency=currency if costed else None)
