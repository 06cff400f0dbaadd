"""The summary's parallelism and optimizer fields: on the form, into the training request, and the estimator's
objections to them put on the field at fault."""

from types import SimpleNamespace

import pytest

from apps.workloads import estimates
from apps.workloads.forms import SECTIONS, WorkloadSummaryForm
from apps.workloads.memory.training import OptimizerOffload
from apps.workloads.tests.factories import REALTIME_READY_FIELDS, WorkloadSummaryFactory
from apps.workloads.validation import summary_errors

NEW_FIELDS = ("tensor_parallel", "sequence_parallel", "pipeline_parallel", "optimizer_offload", "optimizer_bits")
TRAINING = {**REALTIME_READY_FIELDS, "workload_type": "full_fine_tuning", "training_sequence_length": 2048}


def test_the_training_section_of_the_form_asks_for_the_layout_and_the_optimizer():
    training = next(names for key, _title, names in SECTIONS if key == "training")
    form = WorkloadSummaryForm()
    for name in NEW_FIELDS:
        assert name in training
        assert name in form.fields
    assert [value for value, _label in form.fields["optimizer_offload"].choices] == ["", "none", "cpu", "nvme"]


def test_the_summary_fields_reach_the_training_request():
    """t=4 with sequence parallelism, p=2, ZeRO-2 over 8 GPUs, optimizer in CPU memory: 4 · 2 · 8 = 64 GPUs."""
    values = {
        **TRAINING,
        "zero_stage": 2,
        "data_parallel_gpus": 8,
        "tensor_parallel": 4,
        "sequence_parallel": True,
        "pipeline_parallel": 2,
        "optimizer_offload": "cpu",
        "optimizer_bits": None,
    }
    request = estimates.plan_for(SimpleNamespace(**values)).request
    assert (request.tensor_parallel, request.sequence_parallel, request.pipeline_parallel) == (4, True, 2)
    assert (request.optimizer_offload, request.optimizer_bits) == (OptimizerOffload.CPU, 32)
    assert request.gpus == 64


def test_empty_fields_mean_one_gpu_one_stage_32_bit_adam_on_the_gpu():
    request = estimates.plan_for(SimpleNamespace(**TRAINING)).request
    assert (request.tensor_parallel, request.sequence_parallel, request.pipeline_parallel) == (1, False, 1)
    assert (request.optimizer_offload, request.optimizer_bits) == (OptimizerOffload.NONE, 32)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"sequence_parallel": True}, "sequence_parallel"),  # tensor-parallel GPUs empty: 1
        ({"optimizer_offload": "cpu"}, "optimizer_offload"),  # ZeRO stage empty: 0
        ({"optimizer_offload": "nvme", "zero_stage": 2}, "optimizer_offload"),
        ({"optimizer_bits": 8, "optimizer_offload": "cpu", "zero_stage": 2}, "optimizer_bits"),
        ({"pipeline_parallel": 64}, "pipeline_parallel"),  # Llama 3 8B has 32 layers
    ],
)
def test_the_estimators_objection_lands_on_the_field_at_fault(changes, field):
    summary = WorkloadSummaryFactory(**{**TRAINING, **changes})
    errors = summary_errors(summary)
    assert list(errors) == [field]
