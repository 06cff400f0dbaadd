"""From a workload summary to the estimator's inputs, and the fit on each GPU with the inverse answers."""

import json
from types import SimpleNamespace

import pytest

from apps.workloads import estimates
from apps.workloads.estimates import GpuCapacity, MissingInput
from apps.workloads.memory.breakdown import EstimateKind
from apps.workloads.memory.capacity import Capacity, CapacitySource, FitStatus
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.hf_config import parse_hf_config_json
from apps.workloads.memory.inference import InferenceRequest, estimate_inference
from apps.workloads.memory.shapes import ModelShape
from apps.workloads.memory.training import TrainingMethod
from apps.workloads.tests.factories import REALTIME_READY_FIELDS

GIB = 2**30


def summary(**values):
    return SimpleNamespace(**values)


def gpu(name, gib, **figures):
    return GpuCapacity(
        key=name, name=name, capacity=Capacity(gib * GIB, CapacitySource.DATASHEET, f"{gib} GiB"), **figures
    )


def test_realtime_inference_is_sized_at_p95_input_plus_output_and_peak_sessions():
    plan = estimates.plan_for(summary(**REALTIME_READY_FIELDS))
    assert plan.kind is EstimateKind.INFERENCE
    assert plan.request.p95_context_tokens == 3000 + 700
    assert plan.request.concurrent_sessions == 64
    assert plan.shape.num_kv_heads == 8
    # Same figures as the estimator alone on the same inputs: the summary adds nothing of its own.
    direct = estimate_inference(
        ModelShape(
            num_layers=32,
            hidden_size=4096,
            num_attention_heads=32,
            num_kv_heads=8,
            ffn_size=14336,
            vocab_size=128256,
            max_context_tokens=8192,
        ),
        InferenceRequest(p95_context_tokens=3700, concurrent_sessions=64),
    )
    assert plan.breakdown() == direct
    assert plan.breakdown().term("kv_cache").size_bytes == 131_072 * 3712 * 64  # 3,700 tokens → 232 blocks of 16


def test_batch_inference_uses_the_batch_when_no_concurrency_is_stated():
    values = {
        **REALTIME_READY_FIELDS,
        "workload_type": "batch_inference",
        "concurrent_sessions_peak": None,
        "batch_size": 256,
    }
    assert estimates.plan_for(summary(**values)).request.concurrent_sessions == 256


def test_missing_request_inputs_are_named():
    values = {**REALTIME_READY_FIELDS, "p95_output_tokens": None, "concurrent_sessions_peak": None}
    with pytest.raises(MissingInput) as raised:
        estimates.plan_for(summary(**values))
    assert raised.value.fields == ("p95_output_tokens",)
    values["p95_output_tokens"] = 10
    with pytest.raises(MissingInput) as raised:
        estimates.plan_for(summary(**values))
    assert raised.value.fields == ("concurrent_sessions_peak",)


def test_training_uses_sequence_batch_zero_stage_and_gpus():
    values = {
        **REALTIME_READY_FIELDS,
        "workload_type": "full_fine_tuning",
        "training_sequence_length": 4096,
        "batch_size": 2,
        "zero_stage": 3,
        "data_parallel_gpus": 8,
        "recompute": "full",
    }
    plan = estimates.plan_for(summary(**values))
    assert plan.kind is EstimateKind.TRAINING
    assert (plan.request.sequence_length, plan.request.micro_batch_size) == (4096, 2)
    assert (plan.request.zero_stage, plan.request.data_parallel_gpus) == (3, 8)
    assert plan.request.method is TrainingMethod.FULL
    assert plan.breakdown().gpus == 8


@pytest.mark.parametrize(("precision", "method"), [("bf16", "lora"), ("nf4", "qlora"), ("int4", "qlora")])
def test_adapter_tuning_is_qlora_when_the_base_is_stored_in_4_bits(precision, method):
    values = {
        **REALTIME_READY_FIELDS,
        "workload_type": "lora_fine_tuning",
        "precision": precision,
        "training_sequence_length": 2048,
        "lora_rank": 8,
    }
    plan = estimates.plan_for(summary(**values))
    assert plan.request.method == method
    assert plan.request.lora_rank == 8


def test_training_without_a_sequence_length_cannot_be_estimated():
    with pytest.raises(MissingInput) as raised:
        estimates.plan_for(summary(**{**REALTIME_READY_FIELDS, "workload_type": "training"}))
    assert raised.value.fields == ("training_sequence_length",)


def test_image_generation_counts_one_latent_token_per_16_by_16_pixels():
    values = {
        "workload_type": "image_generation",
        "architecture": "diffusion",
        "precision": "bf16",
        "params": 2_000_000_000,
        "hidden_size": 1536,
        "ffn_size": 6144,
        "image_width_px": 1024,
        "image_height_px": 1024,
        "batch_size": 4,
    }
    plan = estimates.plan_for(summary(**values))
    assert plan.request.p95_context_tokens == 64 * 64
    assert plan.request.concurrent_sessions == 4
    breakdown = plan.breakdown()
    assert breakdown.term("kv_cache").size_bytes == 0  # a denoiser keeps no KV cache
    # The whole latent batch goes through each step: 4 images × 4,096 tokens × (2h + 3f) × 2 bytes.
    assert breakdown.term("activation_peak").size_bytes == 4 * 4096 * (2 * 1536 + 3 * 6144) * 2


def test_video_generation_multiplies_by_the_latent_frames():
    values = {
        "workload_type": "video_generation",
        "architecture": "diffusion",
        "params": 14_000_000_000,
        "hidden_size": 5120,
        "ffn_size": 13824,
        "image_width_px": 832,
        "image_height_px": 480,
        "video_duration_seconds": 5,
        "video_frames_per_second": 16,
    }
    plan = estimates.plan_for(summary(**values))
    frames = 5 * 16
    assert plan.request.p95_context_tokens == 52 * 30 * (1 + -(-(frames - 1) // 4))
    assert "seconds·fps" in plan.derivation["c"]


def test_a_bad_shape_is_a_shape_error_naming_the_field():
    with pytest.raises(ShapeError) as raised:
        estimates.plan_for(summary(**{**REALTIME_READY_FIELDS, "num_kv_heads": 5}))
    assert raised.value.field == "num_kv_heads"


def test_config_values_and_extras_round_trip_through_a_summary():
    config = {
        "model_type": "deepseek_v2",
        "hidden_size": 2048,
        "intermediate_size": 10944,
        "moe_intermediate_size": 1408,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "num_experts_per_tok": 6,
        "first_k_dense_replace": 1,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "vocab_size": 102400,
        "max_position_embeddings": 163840,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    shape = parse_hf_config_json(json.dumps(config))
    values = estimates.summary_values_from(shape)
    assert values["architecture"] == "moe"
    assert values["shape_extras"]["kv_lora_rank"] == 512
    assert values["shape_extras"]["num_shared_experts"] == 2
    assert estimates.model_shape(summary(**values)) == shape


def test_hybrid_attention_and_pipeline_parts_round_trip_through_a_summary_as_json():
    """The linear-attention layers of Qwen3-Next and the parts of a FLUX pipeline live in shape_extras; saved as JSON
    (pipeline parts become [name, params, precision] lists) they give back the same shape."""
    qwen3_next = {
        "model_type": "qwen3_next",
        "hidden_size": 2048,
        "num_hidden_layers": 48,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "full_attention_interval": 4,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_value_head_dim": 128,
        "num_experts": 512,
        "num_experts_per_tok": 10,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
    }
    flux = {
        "_class_name": "FluxPipeline",
        "_diffusers_version": "0.30.0.dev0",
        "text_encoder": ["transformers", "CLIPTextModel"],
        "text_encoder_2": ["transformers", "T5EncoderModel"],
        "transformer": ["diffusers", "FluxTransformer2DModel"],
        "vae": ["diffusers", "AutoencoderKL"],
    }
    for config in (qwen3_next, flux):
        shape = parse_hf_config_json(json.dumps(config))
        values = estimates.summary_values_from(shape)
        values["shape_extras"] = json.loads(json.dumps(values["shape_extras"]))
        assert estimates.model_shape(summary(**values)) == shape
    assert estimates.shape_extras_from(parse_hf_config_json(json.dumps(qwen3_next)))["linear_attention_layers"] == 36


def test_image_generation_with_a_flux_pipeline_counts_its_text_encoders_and_vae():
    values = {
        **estimates.summary_values_from(
            parse_hf_config_json(
                json.dumps(
                    {
                        "_class_name": "FluxPipeline",
                        "_diffusers_version": "0.30.0.dev0",
                        "text_encoder": ["transformers", "CLIPTextModel"],
                        "text_encoder_2": ["transformers", "T5EncoderModel"],
                        "transformer": ["diffusers", "FluxTransformer2DModel"],
                        "vae": ["diffusers", "AutoencoderKL"],
                    }
                )
            )
        ),
        "workload_type": "image_generation",
        "image_width_px": 1024,
        "image_height_px": 1024,
    }
    breakdown = estimates.plan_for(summary(**values)).breakdown()
    assert breakdown.term("weights").size_bytes == 11_901_408_320 * 2
    assert breakdown.term("weights:text_encoder_2").size_bytes == 4_762_310_656 * 2  # T5-XXL encoder in bf16
    assert breakdown.term("weights:text_encoder").size_bytes == 123_060_480 * 2  # CLIP-L text tower
    assert breakdown.term("weights:vae").size_bytes == 83_819_683 * 2


def test_analysis_fits_each_gpu_and_answers_the_inverse_questions():
    plan = estimates.plan_for(summary(**REALTIME_READY_FIELDS))
    need = plan.breakdown().total_bytes
    small, large = gpu("small", 24), gpu("large", 141)
    analysis = estimates.analyse(plan, [small, large])
    by_name = {item.gpu.name: item for item in analysis.fits}
    assert by_name["small"].fit.status is FitStatus.DOES_NOT_FIT
    assert by_name["small"].fewest_gpus > 1
    assert by_name["large"].fit.fits and by_name["large"].fewest_gpus == 1
    assert by_name["large"].fit.headroom_bytes == large.capacity.total_bytes - need
    assert analysis.smallest_fitting.gpu.name == "large"
    # More concurrency than the largest answer would not fit; the answer itself does.
    most = by_name["large"].largest_concurrency
    assert most >= 64
    bigger = estimates.EstimatePlan(plan.kind, plan.shape, InferenceRequest(3700, most + 1))
    assert bigger.breakdown().total_bytes > large.capacity.total_bytes


def test_training_analysis_also_answers_with_zero_3():
    values = {
        **REALTIME_READY_FIELDS,
        "workload_type": "full_fine_tuning",
        "training_sequence_length": 2048,
        "zero_stage": 0,
        "recompute": "full",
    }
    analysis = estimates.analyse(estimates.plan_for(summary(**values)), [gpu("h100", 80)])
    item = analysis.fits[0]
    assert item.fit.status is FitStatus.DOES_NOT_FIT  # 16 bytes/param × 8 B params do not fit one 80 GiB GPU
    assert item.fewest_gpus is None  # without sharding, more GPUs do not lower the per-GPU need
    assert item.fewest_gpus_zero3 is not None and item.fewest_gpus_zero3 > 1


def test_the_stateless_inputs_reject_unknown_fields():
    with pytest.raises(ShapeError) as raised:
        estimates.plan_from_inputs("inference", {"layers": 32}, {"p95_context_tokens": 10, "concurrent_sessions": 1})
    assert raised.value.field == "layers"
    with pytest.raises(ShapeError) as raised:
        estimates.plan_from_inputs("inference", {"params": 10**9}, {"concurrent_sessions": 1})
    assert raised.value.field == "p95_context_tokens"
