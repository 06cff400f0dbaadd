"""What a quantity of work counts: requests, records, output tokens, images, clip-seconds, training tokens, checkpoints,
tasks, eval suites, training runs.

Pure Python (no Django). Demand, capacity, prices and quality acceptance each carry one of these units
(apps/comparison/cost_model.py); the models' choices (the workload's unit of success, a capacity figure's unit) map
onto them here, in one place, so a comparison can refuse to mix two units without a stated conversion.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any


class WorkUnit(StrEnum):
    REQUEST = "request"
    RECORD = "record"
    OUTPUT_TOKEN = "output_token"  # noqa: S105 (a unit name, not a secret)
    IMAGE = "image"
    CLIP_SECOND = "clip_second"
    TRAINING_TOKEN = "training_token"  # noqa: S105 (a unit name, not a secret)
    CHECKPOINT = "checkpoint"
    TASK = "task"
    EVAL_SUITE = "eval_suite"
    TRAINING_RUN = "training_run"


#: The workload summary's unit of success (apps/workloads/models.py UnitOfSuccess values) as a unit of work. An
#: accepted response is one served request.
UNIT_OF_SUCCESS = {
    "completed_training_run": WorkUnit.TRAINING_RUN,
    "accepted_checkpoint": WorkUnit.CHECKPOINT,
    "accepted_response": WorkUnit.REQUEST,
    "accepted_token": WorkUnit.OUTPUT_TOKEN,
    "accepted_task": WorkUnit.TASK,
    "accepted_image": WorkUnit.IMAGE,
    "accepted_clip_second": WorkUnit.CLIP_SECOND,
    "accepted_record": WorkUnit.RECORD,
    "completed_eval_suite": WorkUnit.EVAL_SUITE,
}

#: A capacity figure's unit (apps/evidence/models.py CapacityUnit values): units of work per second per GPU (a
#: training cluster's throughput is its own figure, in training tokens per second).
#: "outputs_per_second" is the workload's own unit of success (None here: the demand's unit, whatever it is).
CAPACITY_UNIT = {
    "requests_per_second": WorkUnit.REQUEST,
    "records_per_second": WorkUnit.RECORD,
    "output_tokens_per_second": WorkUnit.OUTPUT_TOKEN,
    "images_per_second": WorkUnit.IMAGE,
    "clip_seconds_per_second": WorkUnit.CLIP_SECOND,
    "tasks_per_second": WorkUnit.TASK,
    "outputs_per_second": None,
}

#: How each unit is named in a message (English; the pages translate through their own labels).
UNIT_NAMES = {
    WorkUnit.REQUEST: "requests",
    WorkUnit.RECORD: "records",
    WorkUnit.OUTPUT_TOKEN: "output tokens",
    WorkUnit.IMAGE: "images",
    WorkUnit.CLIP_SECOND: "clip-seconds",
    WorkUnit.TRAINING_TOKEN: "training tokens",
    WorkUnit.CHECKPOINT: "checkpoints",
    WorkUnit.TASK: "tasks",
    WorkUnit.EVAL_SUITE: "eval suites",
    WorkUnit.TRAINING_RUN: "training runs",
}


def unit_of_success(value: str) -> WorkUnit | None:
    """The unit of work a workload's unit of success counts; None when it is not set."""
    return UNIT_OF_SUCCESS.get(value or "")


def unit_name(unit: WorkUnit | None) -> str:
    return UNIT_NAMES[unit] if unit is not None else "an unstated unit"


@dataclass(frozen=True)
class Conversion:
    """`factor` units of `unit` in one `per` (300 output tokens per request: per=REQUEST, unit=OUTPUT_TOKEN), with
    where the factor comes from (`source`: the caller's provenance, measured or declared)."""

    per: WorkUnit
    unit: WorkUnit
    factor: Decimal
    source: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "per", WorkUnit(self.per))
        object.__setattr__(self, "unit", WorkUnit(self.unit))
        if not isinstance(self.factor, Decimal) or not self.factor.is_finite() or self.factor <= 0:
            raise ValueError(f"a conversion factor is a positive decimal (got {self.factor!r})")


class NoConversion(ValueError):
    """Two quantities in different units and no stated conversion between them."""

    def __init__(self, have: WorkUnit | None, want: WorkUnit | None):
        self.have = have
        self.want = want
        super().__init__(f"no conversion from {unit_name(have)} to {unit_name(want)}")


def conversion_path(
    have: WorkUnit | None, want: WorkUnit | None, conversions: Iterable[Conversion]
) -> tuple[Decimal, tuple[Conversion, ...]]:
    """How many `want` units one `have` unit makes, through the stated conversions (either direction, chained), and
    the conversions used. The same unit converts by 1; a missing unit or a missing path raises NoConversion.

    Runs in the caller's decimal context (the cost model's: 34 digits, traps on)."""
    if have == want and have is not None:
        return Decimal(1), ()
    if have is None or want is None:
        raise NoConversion(have, want)
    edges: dict[WorkUnit, list[tuple[WorkUnit, Decimal, Conversion]]] = {}
    for conversion in conversions:
        edges.setdefault(conversion.per, []).append((conversion.unit, conversion.factor, conversion))
        edges.setdefault(conversion.unit, []).append((conversion.per, 1 / conversion.factor, conversion))
    queue: deque[tuple[WorkUnit, Decimal, tuple[Conversion, ...]]] = deque([(have, Decimal(1), ())])
    seen = {have}
    while queue:
        unit, factor, used = queue.popleft()
        for target, step, conversion in edges.get(unit, ()):
            if target in seen:
                continue
            if target == want:
                return factor * step, (*used, conversion)
            seen.add(target)
            queue.append((target, factor * step, (*used, conversion)))
    raise NoConversion(have, want)
