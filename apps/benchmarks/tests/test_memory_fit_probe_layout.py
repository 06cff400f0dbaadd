"""A memory-fit probe runs on one device: the plan's parallel layout and optimizer offload are dropped from the
prediction it carries, so a training plan with them still yields a probe."""

from apps.benchmarks.memory_fit import FitSettings, probe_plan
from apps.workloads.estimates import EstimatePlan
from apps.workloads.memory.breakdown import EstimateKind
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import OptimizerOffload, TrainingRequest


def test_probe_of_a_sequence_pipeline_parallel_offloaded_plan_is_one_plain_device():
    """The planned request (t=4 with sequence parallelism, p=2, ZeRO-3 over 8 GPUs, optimizer on NVMe) is invalid
    once t=1 and ZeRO-0 unless sequence parallelism, the pipeline and the offload go too."""
    shape = ModelShape(params=1_000_000, num_layers=4, hidden_size=64, num_attention_heads=4)
    planned = TrainingRequest(
        sequence_length=2048,
        tensor_parallel=4,
        sequence_parallel=True,
        pipeline_parallel=2,
        zero_stage=3,
        data_parallel_gpus=8,
        optimizer_offload="nvme",
    )
    probe = probe_plan(EstimatePlan(EstimateKind.TRAINING, shape, planned), FitSettings(tokens=512, concurrency=2))
    request = probe.request
    assert (request.tensor_parallel, request.pipeline_parallel, request.data_parallel_gpus, request.zero_stage) == (
        1,
        1,
        1,
        0,
    )
    assert request.sequence_parallel is False
    assert request.optimizer_offload is OptimizerOffload.NONE
    assert (request.sequence_length, request.micro_batch_size) == (512, 2)
    assert probe.breakdown().gpus == 1
