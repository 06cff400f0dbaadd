"""The readiness gate: which fields apply depends on the workload type; a summary lists what is missing and why."""

from types import SimpleNamespace

import pytest

from apps.workloads import readiness
from apps.workloads.tests.factories import CODE_AGENT_READY_FIELDS, REALTIME_READY_FIELDS


def summary(**values):
    return SimpleNamespace(**values)


def test_a_complete_realtime_summary_is_ready():
    assert readiness.missing_fields(summary(**REALTIME_READY_FIELDS)) == []


def test_a_complete_code_agent_summary_is_ready():
    assert readiness.missing_fields(summary(**CODE_AGENT_READY_FIELDS)) == []


def test_each_missing_field_is_listed_with_the_reason_it_matters():
    values = {**REALTIME_READY_FIELDS, "num_kv_heads": None, "p99_ttft_ms": None}
    missing = readiness.missing_fields(summary(**values))
    assert [item.field for item in missing] == ["num_kv_heads", "p99_ttft_ms"]
    assert "grouped-query attention" in missing[0].requirement.why
    assert "p95/p99" in missing[1].requirement.why


def test_without_a_workload_type_only_the_universal_fields_are_asked():
    missing = readiness.fields_of(readiness.missing_fields(summary(name="x")))
    assert missing[0] == "workload_type"
    assert "p99_ttft_ms" not in missing and "tokens_to_train" not in missing
    assert "precision" in missing and "operating_boundary" in missing


@pytest.mark.parametrize(
    ("workload_type", "needed", "not_needed"),
    [
        ("realtime_inference", {"p99_ttft_ms", "concurrent_sessions_peak", "num_kv_heads"}, {"tokens_to_train"}),
        ("training", {"tokens_to_train", "target_eval_score", "expected_failures_per_1000_gpu_hours"}, {"p99_ttft_ms"}),
        ("lora_fine_tuning", {"lora_rank", "training_sequence_length"}, {"concurrent_sessions_peak"}),
        ("image_generation", {"image_width_px", "image_height_px"}, {"video_duration_seconds", "num_kv_heads"}),
        ("video_generation", {"video_duration_seconds", "video_frames_per_second"}, {"p95_output_tokens"}),
        (
            "code_agent",
            {
                "arrival_rate_peak",
                "p95_e2e_ms",
                "p99_e2e_ms",
                "mean_input_tokens",
                "p95_input_tokens",
                "mean_output_tokens",
                "p95_output_tokens",
                "concurrent_sessions_peak",
                "max_context_tokens",
                "num_kv_heads",
                "quality_acceptance_rate",
                "demand_per_month",
            },
            {"tokens_to_train", "batch_size", "records_per_job", "p99_ttft_ms", "streaming", "image_width_px"},
        ),
        ("notebook", {"hours_per_day"}, {"demand_per_month", "tools", "quality_acceptance_rate"}),
    ],
)
def test_the_fields_that_apply_depend_on_the_workload_type(workload_type, needed, not_needed):
    applicable = readiness.applicable_fields(workload_type)
    assert needed <= applicable
    assert not (not_needed & applicable)


def test_a_parameter_count_or_a_layer_shape_it_follows_from_satisfies_the_size():
    shape_only = {**REALTIME_READY_FIELDS, "params": None}
    assert "params" not in readiness.fields_of(readiness.missing_fields(summary(**shape_only)))
    neither = {**shape_only, "vocab_size": None}
    assert "params" in readiness.fields_of(readiness.missing_fields(summary(**neither)))
    diffusion = {
        "workload_type": "image_generation",
        "architecture": "diffusion",
        "num_layers": 24,
        "hidden_size": 1536,
        "num_attention_heads": 24,
        "vocab_size": 1,
        "ffn_size": 6144,
    }
    assert "params" in readiness.fields_of(readiness.missing_fields(summary(**diffusion)))


def test_empty_text_and_an_empty_tool_list_count_as_missing():
    values = {**REALTIME_READY_FIELDS, "tokenizer": "", "tools": []}
    assert {"tokenizer", "tools"} <= set(readiness.fields_of(readiness.missing_fields(summary(**values))))


def test_streaming_false_is_an_answer_not_a_gap():
    values = {**REALTIME_READY_FIELDS, "streaming": False}
    assert readiness.is_ready(summary(**values))
