"""Planned against actual: the decision's frozen figures beside the days a team reports (docs/actuals.md).

Pure Python (no Django): the snapshot's plain data and `ParsedDay`-like values in, a `DriftReport` out. Every figure
is an exact Decimal, computed in a 34-digit context that traps division by zero; nothing is rounded here.

The rules:

* **Planned cost per accepted output** is the chosen row's `effective_unit_cost` in the frozen snapshot
  (`snapshot["comparison"]["results"][chosen]["row"]["effective_unit_cost"]`, in `snapshot["comparison"]["currency"]`,
  per one `row["unit"]`): everything the decision counted (billed compute, waste, storage and network, platform
  labour, other cost lines) ÷ the accepted outputs.
* **Actual cost per accepted output** = Σ spend ÷ Σ accepted outputs over the days of the upload.
* **Drift** = actual ÷ planned − 1 (0.25 is 25 % dearer than decided, −0.10 is 10 % cheaper). It is beyond the
  team's threshold when |drift| × 100 > the threshold in percent (the team's revisit percentage, the same rule as a
  cited price that moved). Spend with no accepted output at all is beyond any threshold (the drift is unbounded).
* **GPU-hours against plan**: the plan bills `gpus × billed_hours_per_gpu` GPU-hours per period of `period_hours`;
  for the days reported that is `× 24 × days ÷ period_hours`, set beside the GPU-hours reported.
* **Idle share** (the share of the paid GPU-hours that did no accepted work). Planned: `1 − productive_share` of the
  chosen row (the cost model's idle capacity ÷ GPU cost). Actual: the plan's rate of accepted outputs per productive
  GPU-hour, `r = accepted_outputs ÷ (gpus × billed_hours_per_gpu × productive_share)`, gives the productive hours
  the reported work needed, `Σ accepted ÷ r`; the rest of the reported GPU-hours were idle:
  `actual idle = 1 − (Σ accepted ÷ Σ gpu_hours) ÷ r`, held within [0, 1] (work done faster than the plan's measured
  rate shows 0 and says so). A route with no GPU-hours in its plan (a model API) has no idle share.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal, DivisionByZero, InvalidOperation, Overflow, localcontext
from typing import Any, Protocol

ZERO = Decimal(0)
ONE = Decimal(1)
HUNDRED = Decimal(100)
HOURS_PER_DAY = Decimal(24)
_CONTEXT = Context(prec=34, traps=[DivisionByZero, InvalidOperation, Overflow])


class Day(Protocol):
    date: datetime.date
    gpu_hours: Decimal
    outputs: Decimal
    accepted_outputs: Decimal
    spend: Decimal


@dataclass(frozen=True)
class Planned:
    """The decision's figures for its chosen option, read from the frozen snapshot."""

    candidate_id: str
    label: str
    currency: str
    unit: str
    cost_per_accepted_output: Decimal
    accepted_outputs: Decimal  # per period
    period_hours: Decimal
    gpu_hours: Decimal | None  # billed GPU-hours per period (None: no GPU in the plan)
    productive_share: Decimal | None
    quality_acceptance: Decimal | None

    @property
    def idle_share(self) -> Decimal | None:
        if self.productive_share is None or not self.gpu_hours:
            return None
        return ONE - self.productive_share


@dataclass(frozen=True)
class Actual:
    first_day: datetime.date
    last_day: datetime.date
    days: int
    gpu_hours: Decimal
    outputs: Decimal
    accepted_outputs: Decimal
    spend: Decimal

    @property
    def acceptance(self) -> Decimal | None:
        with localcontext(_CONTEXT):
            return self.accepted_outputs / self.outputs if self.outputs else None

    @property
    def cost_per_accepted_output(self) -> Decimal | None:
        with localcontext(_CONTEXT):
            return self.spend / self.accepted_outputs if self.accepted_outputs else None


@dataclass(frozen=True)
class DriftReport:
    planned: Planned
    actual: Actual
    drift: Decimal | None  # actual ÷ planned − 1; None when nothing was accepted (or the plan costs nothing)
    threshold_percent: Decimal
    beyond_threshold: bool
    planned_gpu_hours_for_days: Decimal | None
    gpu_hours_ratio: Decimal | None  # reported ÷ planned for the same days
    actual_idle_share: Decimal | None
    faster_than_planned: bool  # the reported work per GPU-hour beat the plan's measured rate (idle shown as 0)

    @property
    def drift_percent(self) -> Decimal | None:
        with localcontext(_CONTEXT):
            return self.drift * HUNDRED if self.drift is not None else None


class NoPlan(ValueError):
    """The snapshot has no costed chosen option to compare with (no choice, or its row failed)."""


def _number(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def planned_from_snapshot(snapshot: Mapping[str, Any]) -> Planned:
    """The chosen option's planned figures from a record's frozen snapshot (its plain data)."""
    comparison = snapshot.get("comparison") or {}
    chosen_id = comparison.get("chosen_id")
    chosen = next((item for item in comparison.get("results", ()) if item.get("id") == chosen_id), None)
    if chosen is None or not chosen.get("row"):
        raise NoPlan("the snapshot has no costed chosen option")
    row = chosen["row"]
    demand = comparison.get("demand") or {}
    gpus = _number(row.get("gpus")) or ZERO
    hours = _number(row.get("billed_hours_per_gpu"))
    with localcontext(_CONTEXT):
        gpu_hours = gpus * hours if gpus and hours is not None else None
    return Planned(
        candidate_id=str(chosen_id),
        label=str(row.get("label") or chosen.get("label") or ""),
        currency=str(comparison.get("currency") or row.get("currency") or ""),
        unit=str(row.get("unit") or ""),
        cost_per_accepted_output=Decimal(row["effective_unit_cost"]),
        accepted_outputs=Decimal(row["accepted_outputs"]),
        period_hours=Decimal(demand.get("period_hours") or "730"),
        gpu_hours=gpu_hours,
        productive_share=_number(row.get("productive_share")),
        quality_acceptance=_number(row.get("quality_acceptance")),
    )


def actual_totals(days: Iterable[Day]) -> Actual:
    items = list(days)
    if not items:
        raise ValueError("no days")
    with localcontext(_CONTEXT):
        return Actual(
            first_day=min(day.date for day in items),
            last_day=max(day.date for day in items),
            days=len(items),
            gpu_hours=sum((Decimal(day.gpu_hours) for day in items), ZERO),
            outputs=sum((Decimal(day.outputs) for day in items), ZERO),
            accepted_outputs=sum((Decimal(day.accepted_outputs) for day in items), ZERO),
            spend=sum((Decimal(day.spend) for day in items), ZERO),
        )


def compare(planned: Planned, days: Iterable[Day], *, threshold_percent: Decimal) -> DriftReport:
    """The days against the plan (see the module's rules)."""
    actual = actual_totals(days)
    threshold = Decimal(threshold_percent)
    with localcontext(_CONTEXT):
        actual_cost = actual.cost_per_accepted_output
        drift = None
        if actual_cost is not None and planned.cost_per_accepted_output:
            drift = actual_cost / planned.cost_per_accepted_output - ONE
        # Paid for with nothing accepted is an unbounded drift.
        beyond = abs(drift) * HUNDRED > threshold if drift is not None else actual.spend > 0

        planned_hours = gpu_ratio = idle = None
        faster = False
        if planned.gpu_hours:
            planned_hours = planned.gpu_hours * HOURS_PER_DAY * actual.days / planned.period_hours
            gpu_ratio = actual.gpu_hours / planned_hours
            if planned.productive_share and actual.gpu_hours and planned.accepted_outputs:
                rate = planned.accepted_outputs / (planned.gpu_hours * planned.productive_share)
                idle = ONE - (actual.accepted_outputs / actual.gpu_hours) / rate
                if idle < 0:
                    idle, faster = ZERO, True
                idle = min(idle, ONE)
    return DriftReport(
        planned=planned,
        actual=actual,
        drift=drift,
        threshold_percent=threshold,
        beyond_threshold=beyond,
        planned_gpu_hours_for_days=planned_hours,
        gpu_hours_ratio=gpu_ratio,
        actual_idle_share=idle,
        faster_than_planned=faster,
    )
