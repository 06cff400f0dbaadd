"""What a quantity of work counts: requests, records, output tokens, images, clip-seconds, training tokens, checkpoints,
tasks, eval suites, training runs.

Pure Python (no Django). Demand, capacity, prices and quality acceptance each carry one of these units
(apps/comparison/cost_model.py); the models' choices (the workload's unit of success, a capacity figure's unit) map
onto them here, in one place, so a comparison can refuse to mix two units without a stated conversion.
"""

from __future__ import annotations

from enum import StrEnum


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

#: A capacity figure's unit (apps/evidence/models.py CapacityUnit values): units of work per second per GPU.
#: "outputs_per_second" is the workload's own unit of success (None here: the demand's unit, whatever it is).
CAPACITY_UNIT = {
    "requests_per_second": WorkUnit.REQUEST,
    "records_per_second": WorkUnit.RECORD,
    "output_tokens_per_second": WorkUnit.OUTPUT_TOKEN,
    "images_per_second": WorkUnit.IMAGE,
    "clip_seconds_per_second": WorkUnit.CLIP_SECOND,
    "training_tokens_per_second": WorkUnit.TRAINING_TOKEN,
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
