"""Specification of the memory-fit estimator: published figures, formulas, validation, fit, inverse answers."""

import json
import math
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from apps.workloads.memory.breakdown import TERM_LABELS, Breakdown, EstimateKind, Term
from apps.workloads.memory.capacity import Capacity, CapacitySource, FitStatus, choose_capacity, fit
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.hf_config import parse_hf_config, parse_hf_config_json
from apps.workloads.memory.inference import (
    InferenceRequest,
    estimate_inference,
    kv_cache_bytes_per_request,
    kv_cache_bytes_per_token,
    weights_term,
)
from apps.workloads.memory.precisions import Precision, bytes_per_parameter, quantisation_constant_bits
from apps.workloads.memory.search import (
    fewest_gpus_inference,
    fewest_gpus_training,
    largest_concurrency,
    smallest_fitting_device,
)
from apps.workloads.memory.shapes import Architecture, ModelShape, parameter_count
from apps.workloads.memory.training import (
    TrainingRequest,
    activation_bytes_per_layer,
    estimate_training,
    lora_trainable_parameters,
    model_state_terms,
    output_activation_bytes,
)

GB = 10**9
GIB = 2**30
MIB = 2**20

# Real config.json contents (the keys that matter) of published models.
LLAMA_3_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "torch_dtype": "bfloat16",
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
}
LLAMA_3_2_1B_CONFIG = {
    **LLAMA_3_8B_CONFIG,
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "head_dim": 64,
    "tie_word_embeddings": True,
    "max_position_embeddings": 131072,
}
LLAMA_3_70B_CONFIG = {
    **LLAMA_3_8B_CONFIG,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
}
MIXTRAL_8X7B_CONFIG = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
DEEPSEEK_V2_LITE_CONFIG = {
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 102400,
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
    "q_lora_rank": None,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 64,
    "num_experts_per_tok": 6,
    "n_shared_experts": 2,
    "moe_intermediate_size": 1408,
    "first_k_dense_replace": 1,
    "torch_dtype": "bfloat16",
}
QWEN2_7B_CONFIG = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "max_position_embeddings": 131072,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "max_window_layers": 28,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
GEMMA_7B_CONFIG = {  # no tie_word_embeddings key: Gemma ties by default
    "model_type": "gemma",
    "hidden_size": 3072,
    "intermediate_size": 24576,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "head_dim": 256,
    "vocab_size": 256000,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}
MISTRAL_7B_V01_CONFIG = {
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
BERT_BASE_UNCASED_CONFIG = {
    "model_type": "bert",
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}


def billions(count: int) -> float:
    return count / 1e9


@pytest.fixture
def llama_3_8b() -> ModelShape:
    return parse_hf_config(LLAMA_3_8B_CONFIG)


# --------------------------------------------------------------------------------------------------------------------
# Precision
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "expected"),
    [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("int8", 1), ("bfloat16", 2), ("FP16", 2), ("float32", 4)],
)
def test_bytes_per_parameter_of_unscaled_formats(precision, expected):
    assert bytes_per_parameter(precision) == expected


def test_int4_adds_a_16_bit_scale_and_4_bit_zero_point_per_group_of_128():
    assert bytes_per_parameter("int4") == Fraction(1, 2) + Fraction(20, 128 * 8)


def test_nf4_constants_are_half_a_bit_per_parameter_and_0_127_with_double_quantisation():
    assert quantisation_constant_bits("nf4") == Fraction(1, 2)
    assert round(float(quantisation_constant_bits("nf4", double_quantisation=True)), 3) == 0.127
    assert bytes_per_parameter("nf4") == Fraction(1, 2) + Fraction(1, 16)


def test_unknown_precision_is_rejected_by_name():
    with pytest.raises(ShapeError) as excinfo:
        bytes_per_parameter("fp6")
    assert excinfo.value.field == "precision"
    assert "fp6" in excinfo.value.message
    with pytest.raises(ShapeError) as excinfo:
        ModelShape(precision="int3", params=1000)
    assert excinfo.value.field == "precision"


# --------------------------------------------------------------------------------------------------------------------
# Parameter counts from the shape (published figures)
# --------------------------------------------------------------------------------------------------------------------


def test_llama_3_8b_has_its_published_8_03_billion_parameters(llama_3_8b):
    count = parameter_count(llama_3_8b)
    assert count.total == 8_030_261_248
    assert count.active == count.total
    assert sum(term.count for term in count.terms) == count.total
    assert {term.name for term in count.terms} >= {"embedding", "output_head", "attention", "ffn", "norms"}


def test_llama_3_8b_from_a_typed_shape_matches_the_config():
    shape = ModelShape(
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_kv_heads=8,
        ffn_size=14336,
        vocab_size=128256,
        tied_embeddings=False,
    )
    assert parameter_count(shape).total == 8_030_261_248


def test_tied_embeddings_count_the_matrix_once():
    shape = parse_hf_config(LLAMA_3_2_1B_CONFIG)
    assert shape.tied_embeddings is True
    assert parameter_count(shape).total == 1_235_814_400  # Llama 3.2 1B


def test_mixtral_total_and_active_parameters():
    shape = parse_hf_config(MIXTRAL_8X7B_CONFIG)
    assert shape.architecture is Architecture.MOE
    count = parameter_count(shape)
    assert round(billions(count.total), 1) == 46.7
    assert round(billions(count.active), 1) == 12.9


def test_deepseek_v2_lite_latent_attention_and_shared_experts():
    shape = parse_hf_config(DEEPSEEK_V2_LITE_CONFIG)
    assert shape.is_latent_attention
    assert (shape.kv_lora_rank, shape.qk_rope_head_dim) == (512, 64)
    assert (shape.num_experts, shape.num_experts_per_token, shape.num_shared_experts) == (64, 6, 2)
    assert shape.first_dense_layers == 1
    count = parameter_count(shape)
    assert round(billions(count.total), 1) == 15.7
    # 26 MoE layers each leave 64 − 6 routed experts (3 · 2,048 · 1,408 parameters each) idle per token.
    assert count.active == count.total - 26 * (64 - 6) * 3 * 2048 * 1408


def test_qwen2_7b_counts_qkv_biases_and_ignores_a_disabled_window():
    shape = parse_hf_config(QWEN2_7B_CONFIG)
    assert shape.qkv_bias is True
    assert shape.sliding_window is None
    assert round(billions(parameter_count(shape).total), 2) == 7.62


def test_gemma_7b_uses_the_stated_head_dim_and_ties_by_default():
    shape = parse_hf_config(GEMMA_7B_CONFIG)
    assert shape.head_dim == 256
    assert shape.resolved_head_dim != shape.hidden_size // shape.num_attention_heads
    assert shape.tied_embeddings is True
    assert round(billions(parameter_count(shape).total), 2) == 8.54


def test_bert_base_encoder_has_109_482_240_parameters_and_no_kv_cache():
    shape = parse_hf_config(BERT_BASE_UNCASED_CONFIG)
    assert shape.architecture is Architecture.ENCODER
    assert shape.gated_ffn is False
    assert parameter_count(shape).total == 109_482_240
    assert kv_cache_bytes_per_token(shape) == 0


def test_diffusion_models_need_a_stated_parameter_count():
    shape = ModelShape(architecture="diffusion", num_layers=4, hidden_size=64, num_attention_heads=4, vocab_size=1)
    with pytest.raises(ShapeError) as excinfo:
        parameter_count(shape)
    assert excinfo.value.field == "params"


def test_a_stated_parameter_count_wins_for_the_weights():
    shape = ModelShape(params=7_000_000_000, precision="fp16")
    term = weights_term(shape)
    assert term.size_bytes == 14_000_000_000
    assert term.inputs["P source"] == "stated"


# --------------------------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------------------------

VALID_SHAPE = {
    "num_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_kv_heads": 8,
    "ffn_size": 14336,
    "vocab_size": 128256,
}


@pytest.mark.parametrize(
    ("changes", "field", "fragment"),
    [
        ({"num_layers": -1}, "num_layers", "at least 1"),
        ({"num_layers": 0}, "num_layers", "at least 1"),
        ({"hidden_size": 10**9}, "hidden_size", "implausibly large"),
        ({"vocab_size": 4096.0}, "vocab_size", "whole number"),
        ({"num_layers": True}, "num_layers", "whole number"),
        ({"num_kv_heads": 6}, "num_kv_heads", "must divide"),
        ({"num_kv_heads": 64}, "num_kv_heads", "must divide"),
        ({"hidden_size": 4000, "num_attention_heads": 30, "num_kv_heads": 10}, "head_dim", "not divisible"),
        ({"head_dim": 8}, "head_dim", "inconsistent"),
        ({"head_dim": 1024}, "head_dim", "inconsistent"),
        ({"architecture": "rnn"}, "architecture", "Unknown architecture"),
        ({"architecture": "moe"}, "num_experts", "Needed"),
        ({"architecture": "moe", "num_experts": 8, "num_experts_per_token": 9}, "num_experts_per_token", "exceeds"),
        ({"num_experts": 8, "num_experts_per_token": 2}, "architecture", "moe"),
        ({"kv_lora_rank": 512}, "qk_rope_head_dim", "MLA"),
        ({"params": 8_030_261}, "params", "2× apart"),
        ({"sliding_window_layers": 40, "sliding_window": 4096}, "sliding_window_layers", "exceeds"),
    ],
)
def test_bad_shapes_raise_an_error_naming_the_field(changes, field, fragment):
    with pytest.raises(ShapeError) as excinfo:
        ModelShape(**{**VALID_SHAPE, **changes})
    assert excinfo.value.field == field
    assert fragment in excinfo.value.message
    assert str(excinfo.value).startswith(f"{field}: ")


def test_error_template_and_params_rebuild_the_message_for_translation():
    with pytest.raises(ShapeError) as excinfo:
        ModelShape(**{**VALID_SHAPE, "num_kv_heads": 6})
    error = excinfo.value
    assert error.template % error.params == error.message
    assert error.params == {"kv": 6, "heads": 32}


def test_a_head_dim_other_than_hidden_over_heads_is_accepted_within_reason():
    shape = ModelShape(**{**VALID_SHAPE, "hidden_size": 5120, "head_dim": 128})  # Mistral-Nemo style
    assert shape.resolved_head_dim == 128


# --------------------------------------------------------------------------------------------------------------------
# config.json parsing
# --------------------------------------------------------------------------------------------------------------------


def test_parse_reads_gqa_dtype_and_context(llama_3_8b):
    assert llama_3_8b.num_kv_heads == 8
    assert llama_3_8b.precision is Precision.BF16
    assert llama_3_8b.max_context_tokens == 8192
    assert llama_3_8b.architecture is Architecture.DENSE
    assert llama_3_8b.head_dim is None
    assert llama_3_8b.resolved_head_dim == 128


def test_parse_reads_a_multimodal_wrapper_through_text_config():
    config = {"model_type": "llava", "torch_dtype": "float16", "text_config": LLAMA_3_8B_CONFIG | {"torch_dtype": None}}
    shape = parse_hf_config(config)
    assert shape.precision is Precision.FP16
    assert parameter_count(shape).total == 8_030_261_248


def test_parse_reads_quantisation_config():
    awq = parse_hf_config({**LLAMA_3_8B_CONFIG, "quantization_config": {"quant_method": "awq", "bits": 4}})
    assert awq.precision is Precision.INT4
    bnb = parse_hf_config(
        {
            **LLAMA_3_8B_CONFIG,
            "quantization_config": {
                "quant_method": "bitsandbytes",
                "load_in_4bit": True,
                "bnb_4bit_quant_type": "nf4",
                "bnb_4bit_use_double_quant": True,
            },
        }
    )
    assert (bnb.precision, bnb.double_quantisation) == (Precision.NF4, True)


def test_parse_reads_sliding_windows():
    mistral = parse_hf_config(MISTRAL_7B_V01_CONFIG)
    assert (mistral.sliding_window, mistral.window_layer_count) == (4096, 32)
    gemma2 = parse_hf_config(
        {**GEMMA_7B_CONFIG, "model_type": "gemma2", "num_hidden_layers": 42, "sliding_window": 4096}
    )
    assert gemma2.window_layer_count == 21
    typed = parse_hf_config(
        {**LLAMA_3_8B_CONFIG, "sliding_window": 1024, "layer_types": ["sliding_attention", "full_attention"] * 16}
    )
    assert typed.window_layer_count == 16


@pytest.mark.parametrize(
    ("config", "field", "fragment"),
    [
        ([1, 2, 3], "config", "JSON object"),
        ("{}", "config", "JSON object"),
        ({k: v for k, v in LLAMA_3_8B_CONFIG.items() if k != "hidden_size"}, "hidden_size", "no hidden_size"),
        ({**LLAMA_3_8B_CONFIG, "num_hidden_layers": "32"}, "num_layers", "whole number"),
        ({**LLAMA_3_8B_CONFIG, "vocab_size": True}, "vocab_size", "whole number"),
        ({**LLAMA_3_8B_CONFIG, "num_key_value_heads": 7}, "num_kv_heads", "must divide"),
        ({**LLAMA_3_8B_CONFIG, "hidden_size": -4096}, "hidden_size", "at least 1"),
        ({**LLAMA_3_8B_CONFIG, "torch_dtype": "float6"}, "precision", "Unknown precision"),
        ({**LLAMA_3_8B_CONFIG, "quantization_config": {"quant_method": "exl2"}}, "precision", "not recognised"),
        ({**LLAMA_3_8B_CONFIG, "tie_word_embeddings": "no"}, "config", "true or false"),
        ({"_class_name": "FluxTransformer2DModel", "_diffusers_version": "0.30.0"}, "config", "Diffusers"),
    ],
)
def test_malformed_configs_get_a_clear_error(config, field, fragment):
    with pytest.raises(ShapeError) as excinfo:
        parse_hf_config(config)
    assert excinfo.value.field == field
    assert fragment in excinfo.value.message


def test_parse_json_text_reports_where_it_is_broken():
    assert parse_hf_config_json(json.dumps(LLAMA_3_8B_CONFIG)).num_layers == 32
    with pytest.raises(ShapeError) as excinfo:
        parse_hf_config_json('{"hidden_size": 4096,\n "num_hidden_layers": }')
    assert excinfo.value.field == "config"
    assert "line 2" in excinfo.value.message
    with pytest.raises(ShapeError):
        parse_hf_config_json(b"\xff\xfe\x00")


# --------------------------------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------------------------------


def test_llama_3_8b_bf16_kv_cache_is_131_072_bytes_per_token(llama_3_8b):
    assert kv_cache_bytes_per_token(llama_3_8b) == 131_072  # 2 · 32 · 8 · 128 · 2
    assert kv_cache_bytes_per_token(llama_3_8b, "fp8") == 65_536


def test_kv_cache_rounds_each_request_up_to_whole_blocks(llama_3_8b):
    assert kv_cache_bytes_per_request(llama_3_8b, 1000) == 1008 * 131_072
    assert kv_cache_bytes_per_request(llama_3_8b, 1024) == 1024 * 131_072
    assert kv_cache_bytes_per_request(llama_3_8b, 1000, block_size_tokens=1) == 1000 * 131_072


def test_latent_attention_caches_the_compressed_kv_only():
    shape = parse_hf_config(DEEPSEEK_V2_LITE_CONFIG)
    assert kv_cache_bytes_per_token(shape) == 27 * (512 + 64) * 2


def test_sliding_window_layers_keep_at_most_the_window():
    shape = parse_hf_config(MISTRAL_7B_V01_CONFIG)
    assert kv_cache_bytes_per_request(shape, 32768) == 4096 * 131_072
    assert kv_cache_bytes_per_request(shape, 2000) == 2000 * 131_072


def test_kv_cache_cannot_be_stored_as_nf4(llama_3_8b):
    with pytest.raises(ShapeError) as excinfo:
        kv_cache_bytes_per_token(llama_3_8b, "nf4")
    assert excinfo.value.field == "kv_cache_precision"


# --------------------------------------------------------------------------------------------------------------------
# Inference estimate
# --------------------------------------------------------------------------------------------------------------------


def test_inference_breakdown_of_llama_3_8b(llama_3_8b):
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=16)
    breakdown = estimate_inference(llama_3_8b, request)
    assert breakdown.kind is EstimateKind.INFERENCE
    assert [term.name for term in breakdown.terms] == [
        "weights",
        "kv_cache",
        "activation_peak",
        "cuda_runtime",
        "safety_margin",
    ]
    assert breakdown.term("weights").size_bytes == 2 * 8_030_261_248
    assert breakdown.term("kv_cache").size_bytes == 8192 * 131_072 * 16
    # T = min(8192, 16 · 8192) tokens · (2·4096 + 3·14336) · 2 bytes + 8 · 16 sequences · 128,256 vocabulary
    assert breakdown.term("activation_peak").size_bytes == 8192 * (2 * 4096 + 3 * 14336) * 2 + 8 * 16 * 128256
    assert breakdown.term("cuda_runtime").size_bytes == 2 * GIB
    subtotal = sum(term.size_bytes for term in breakdown.terms[:-1])
    assert breakdown.term("safety_margin").size_bytes == math.ceil(subtotal / 10)
    assert breakdown.total_bytes == subtotal + breakdown.term("safety_margin").size_bytes
    for term in breakdown.terms:
        assert term.formula
        assert term.inputs
    assert breakdown.as_dict()["total_bytes"] == breakdown.total_bytes


def test_tensor_parallelism_splits_weights_and_kv_but_not_beyond_the_kv_heads(llama_3_8b):
    base = InferenceRequest(p95_context_tokens=4096, concurrent_sessions=8)
    one = estimate_inference(llama_3_8b, base)
    two = estimate_inference(llama_3_8b, replace(base, tensor_parallel=2))
    assert two.gpus == 2
    assert two.term("weights").size_bytes == one.term("weights").size_bytes // 2
    assert two.term("kv_cache").size_bytes == one.term("kv_cache").size_bytes // 2
    sixteen = estimate_inference(llama_3_8b, replace(base, tensor_parallel=16))
    assert sixteen.term("kv_cache").size_bytes == one.term("kv_cache").size_bytes // 8
    with pytest.raises(ShapeError) as excinfo:
        estimate_inference(llama_3_8b, replace(base, tensor_parallel=3))
    assert excinfo.value.field == "tensor_parallel"


def test_quantised_weights_keep_embeddings_and_head_in_16_bit(llama_3_8b):
    shape = replace(llama_3_8b, precision="int4")
    term = weights_term(shape)
    unquantised = 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096
    quantised = 8_030_261_248 - unquantised
    assert term.size_bytes == math.ceil(quantised * bytes_per_parameter("int4") + unquantised * 2)
    assert "P_quantised" in term.formula


def test_context_beyond_the_model_window_is_rejected(llama_3_8b):
    with pytest.raises(ShapeError) as excinfo:
        estimate_inference(llama_3_8b, InferenceRequest(p95_context_tokens=16384, concurrent_sessions=1))
    assert excinfo.value.field == "p95_context_tokens"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"p95_context_tokens": 0}, "p95_context_tokens"),
        ({"concurrent_sessions": -1}, "concurrent_sessions"),
        ({"safety_margin_fraction": 1.5}, "safety_margin_fraction"),
        ({"kv_cache_precision": "fp5"}, "kv_cache_precision"),
        ({"cuda_context_bytes": -1}, "cuda_context_bytes"),
    ],
)
def test_bad_inference_requests_name_the_field(changes, field):
    with pytest.raises(ShapeError) as excinfo:
        InferenceRequest(**{"p95_context_tokens": 1024, "concurrent_sessions": 1, **changes})
    assert excinfo.value.field == field


def test_encoders_are_estimated_without_a_kv_cache():
    shape = parse_hf_config(BERT_BASE_UNCASED_CONFIG)
    breakdown = estimate_inference(shape, InferenceRequest(p95_context_tokens=512, concurrent_sessions=32))
    assert breakdown.term("kv_cache").size_bytes == 0
    assert breakdown.term("activation_peak").size_bytes == 8192 * (2 * 768 + 3 * 3072) * 2


def test_a_params_only_shape_cannot_size_the_kv_cache():
    with pytest.raises(ShapeError) as excinfo:
        estimate_inference(ModelShape(params=7 * GB), InferenceRequest(p95_context_tokens=10, concurrent_sessions=1))
    assert excinfo.value.field == "num_layers"


# --------------------------------------------------------------------------------------------------------------------
# Training estimate
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("stage", "expected_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1_model_states_per_gpu(stage, expected_gb):
    terms = model_state_terms(7_500_000_000, stage, 64)
    assert round(sum(term.size_bytes for term in terms) / GB, 1) == expected_gb


def test_zero_terms_show_which_state_is_sharded():
    weights, gradients, optimizer = model_state_terms(1000, 2, 4)
    assert (weights.formula, gradients.formula, optimizer.formula) == ("2·P/t", "2·P/(t·N)", "12·P/(t·N)")
    assert (weights.size_bytes, gradients.size_bytes, optimizer.size_bytes) == (2000, 500, 3000)


def test_activation_formulas_of_korthikanti_et_al():
    common = {"sequence_length": 2048, "micro_batch_size": 1, "hidden_size": 4096, "attention_heads": 32}
    # s·b·h·(34 + 5·a·s/h) = 2048 · 4096 · (34 + 80)
    assert activation_bytes_per_layer(**common)[0] == 2048 * 4096 * 114
    assert activation_bytes_per_layer(**common, flash_attention=True)[0] == 2048 * 4096 * 34
    assert activation_bytes_per_layer(**common, recompute="selective")[0] == 2048 * 4096 * 34
    assert activation_bytes_per_layer(**common, recompute="full")[0] == 2 * 2048 * 4096
    # With t = 8: s·b·h·(10 + 24/8 + 5·a·s/(h·8)) = 2048 · 4096 · (10 + 3 + 10)
    assert activation_bytes_per_layer(**common, tensor_parallel=8)[0] == 2048 * 4096 * 23
    assert output_activation_bytes(
        sequence_length=2048, micro_batch_size=1, hidden_size=4096, vocab_size=128256
    ) == 4 * 2048 * (4096 + 128256)


def test_full_training_breakdown(llama_3_8b):
    request = TrainingRequest(sequence_length=2048, micro_batch_size=1, zero_stage=3, data_parallel_gpus=8)
    breakdown = estimate_training(llama_3_8b, request)
    assert breakdown.kind is EstimateKind.TRAINING
    assert breakdown.gpus == 8
    states = sum(breakdown.term(name).size_bytes for name in ("weights", "gradients", "optimizer_states"))
    assert states == 16 * 8_030_261_248 // 8
    assert breakdown.term("activations").size_bytes == 32 * 2048 * 4096 * 34  # FlashAttention by default
    full = estimate_training(llama_3_8b, replace(request, recompute="full"))
    assert full.term("activations").size_bytes == 32 * 2 * 2048 * 4096 + 2048 * 4096 * 34
    assert "one layer recomputed" in full.term("activations").formula


def test_lora_on_all_linear_layers_of_llama_3_8b_trains_41_943_040_parameters(llama_3_8b):
    assert lora_trainable_parameters(llama_3_8b, 16) == 41_943_040
    assert lora_trainable_parameters(llama_3_8b, 8, ("q", "v")) == 3_407_872


def test_qlora_keeps_an_nf4_base_and_trains_adapters_with_adam(llama_3_8b):
    request = TrainingRequest(sequence_length=1024, method="qlora", lora_rank=16)
    breakdown = estimate_training(llama_3_8b, request)
    unquantised = 1_050_939_392
    nf4 = bytes_per_parameter("nf4", double_quantisation=True)
    expected_base = math.ceil((8_030_261_248 - unquantised) * nf4 + unquantised * 2)
    assert breakdown.term("frozen_base_weights").size_bytes == expected_base
    adapters = sum(breakdown.term(name).size_bytes for name in ("weights", "gradients", "optimizer_states"))
    assert adapters == 16 * 41_943_040
    lora = estimate_training(llama_3_8b, replace(request, method="lora"))
    assert lora.term("frozen_base_weights").size_bytes == 2 * 8_030_261_248


def test_training_a_params_only_shape_needs_the_layer_shape_for_activations():
    with pytest.raises(ShapeError) as excinfo:
        estimate_training(ModelShape(params=7 * GB), TrainingRequest(sequence_length=2048))
    assert excinfo.value.field == "num_layers"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"zero_stage": 4}, "zero_stage"),
        ({"method": "dora"}, "method"),
        ({"recompute": "some"}, "recompute"),
        ({"lora_targets": ("q", "lm_head")}, "lora_targets"),
        ({"data_parallel_gpus": 0}, "data_parallel_gpus"),
    ],
)
def test_bad_training_requests_name_the_field(changes, field):
    with pytest.raises(ShapeError) as excinfo:
        TrainingRequest(**{"sequence_length": 2048, **changes})
    assert excinfo.value.field == field


# --------------------------------------------------------------------------------------------------------------------
# Capacity and fit
# --------------------------------------------------------------------------------------------------------------------


def test_capacity_prefers_measured_then_catalog_then_datasheet():
    measured = choose_capacity(measured_total_mib=143_771, catalog_usable_mib=143_000, datasheet_gb=141)
    assert (measured.source, measured.total_bytes) == (CapacitySource.MEASURED, 143_771 * MIB)
    assert round(measured.total_gib, 1) == 140.4
    assert "NVML" in measured.source_label
    catalog = choose_capacity(catalog_usable_mib=81_559, datasheet_gb=80)
    assert (catalog.source, catalog.total_bytes) == (CapacitySource.CATALOG, 81_559 * MIB)
    datasheet = choose_capacity(datasheet_gb="141")
    assert (datasheet.source, datasheet.total_bytes) == (CapacitySource.DATASHEET, 141 * GB)
    with pytest.raises(ShapeError) as excinfo:
        choose_capacity()
    assert excinfo.value.field == "capacity"
    with pytest.raises(ShapeError):
        choose_capacity(datasheet_gb="lots")


def breakdown_of(total_bytes: int) -> Breakdown:
    return Breakdown(EstimateKind.INFERENCE, (Term("weights", total_bytes, "P·bytes", {"P": total_bytes}),))


def test_fit_statuses_and_headroom():
    capacity = Capacity(100 * GIB, CapacitySource.DATASHEET, "test")
    roomy = fit(breakdown_of(80 * GIB), capacity)
    assert roomy.status is FitStatus.FITS
    assert roomy.headroom_gib == 20
    assert roomy.headroom_percent == 20
    tight = fit(breakdown_of(95 * GIB), capacity)
    assert tight.status is FitStatus.TIGHT
    assert fit(breakdown_of(95 * GIB), capacity, tight_headroom_fraction=0.04).status is FitStatus.FITS
    exact = fit(breakdown_of(100 * GIB), capacity)
    assert (exact.status, exact.headroom_bytes) == (FitStatus.TIGHT, 0)
    over = fit(breakdown_of(101 * GIB), capacity)
    assert over.status is FitStatus.DOES_NOT_FIT
    assert over.headroom_gib == -1
    assert over.headroom_percent == -1


# --------------------------------------------------------------------------------------------------------------------
# Inverse answers
# --------------------------------------------------------------------------------------------------------------------


def test_largest_concurrency_of_llama_3_8b_on_an_h100(llama_3_8b):
    capacity = choose_capacity(measured_total_mib=81_559)
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=1)
    sessions = largest_concurrency(llama_3_8b, request, capacity)
    assert sessions is not None
    assert sessions > 1
    at_max = estimate_inference(llama_3_8b, replace(request, concurrent_sessions=sessions))
    beyond = estimate_inference(llama_3_8b, replace(request, concurrent_sessions=sessions + 1))
    assert at_max.total_bytes <= capacity.total_bytes < beyond.total_bytes


def test_largest_concurrency_is_zero_when_the_weights_alone_do_not_fit(llama_3_8b):
    capacity = choose_capacity(datasheet_gb=16)
    request = InferenceRequest(p95_context_tokens=1024, concurrent_sessions=1)
    assert largest_concurrency(llama_3_8b, request, capacity) == 0


def test_fewest_tensor_parallel_gpus_for_llama_3_70b_on_80_gb():
    shape = parse_hf_config(LLAMA_3_70B_CONFIG)
    capacity = choose_capacity(catalog_usable_mib=81_559)
    request = InferenceRequest(p95_context_tokens=8192, concurrent_sessions=8)
    answer = fewest_gpus_inference(shape, request, capacity)
    assert answer is not None
    degree, breakdown = answer
    assert degree == 4
    assert breakdown.gpus == 4
    assert fit(breakdown, capacity).fits
    smaller = estimate_inference(shape, replace(request, tensor_parallel=2))
    assert not fit(smaller, capacity).fits
    assert fewest_gpus_inference(shape, request, capacity, degrees=(1, 2)) is None


def test_fewest_zero_3_gpus_for_a_training_run(llama_3_8b):
    capacity = choose_capacity(catalog_usable_mib=81_559)
    request = TrainingRequest(sequence_length=4096, zero_stage=3, recompute="full")
    answer = fewest_gpus_training(llama_3_8b, request, capacity)
    assert answer is not None
    gpus, breakdown = answer
    assert breakdown.total_bytes <= capacity.total_bytes
    assert gpus > 1
    fewer = estimate_training(llama_3_8b, replace(request, data_parallel_gpus=gpus - 1))
    assert fewer.total_bytes > capacity.total_bytes


def test_smallest_fitting_device_picks_the_least_memory_that_fits():
    devices = {
        "L4": choose_capacity(datasheet_gb=24),
        "L40S": choose_capacity(datasheet_gb=48),
        "H100": choose_capacity(catalog_usable_mib=81_559),
        "H200": choose_capacity(measured_total_mib=143_771),
    }
    name, result = smallest_fitting_device(breakdown_of(40 * GIB), devices)
    assert name == "L40S"
    assert result.capacity is devices["L40S"]
    assert smallest_fitting_device(breakdown_of(200 * GIB), devices) is None


# --------------------------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------------------------


@st.composite
def decoder_shapes(draw) -> ModelShape:
    kv_heads = draw(st.sampled_from([1, 2, 4, 8]))
    heads = kv_heads * draw(st.sampled_from([1, 2, 4, 8]))
    head_dim = draw(st.sampled_from([32, 64, 128]))
    hidden = heads * head_dim
    latent = draw(st.booleans())
    window = draw(st.one_of(st.none(), st.integers(16, 65536)))
    layers = draw(st.integers(1, 96))
    return ModelShape(
        precision=draw(st.sampled_from(list(Precision))),
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        ffn_size=draw(st.integers(hidden, 4 * hidden)),
        vocab_size=draw(st.integers(1000, 256_000)),
        tied_embeddings=draw(st.booleans()),
        kv_lora_rank=512 if latent else None,
        qk_rope_head_dim=64 if latent else None,
        sliding_window=window,
        sliding_window_layers=draw(st.integers(0, layers)) if window else None,
    )


inference_requests = st.builds(
    InferenceRequest,
    p95_context_tokens=st.integers(1, 262_144),
    concurrent_sessions=st.integers(1, 512),
    block_size_tokens=st.sampled_from([1, 16, 32]),
    max_batched_tokens=st.sampled_from([2048, 8192]),
)


@settings(max_examples=80, deadline=None)
@given(shape=decoder_shapes(), request=inference_requests, more_context=st.integers(0, 100_000))
def test_more_context_never_needs_less_memory(shape, request, more_context):
    longer = replace(request, p95_context_tokens=request.p95_context_tokens + more_context)
    base = estimate_inference(shape, request)
    assert estimate_inference(shape, longer).total_bytes >= base.total_bytes


@settings(max_examples=80, deadline=None)
@given(shape=decoder_shapes(), request=inference_requests, more_sessions=st.integers(0, 1000))
def test_more_concurrency_never_needs_less_memory(shape, request, more_sessions):
    busier = replace(request, concurrent_sessions=request.concurrent_sessions + more_sessions)
    base = estimate_inference(shape, request)
    assert estimate_inference(shape, busier).total_bytes >= base.total_bytes


@settings(max_examples=80, deadline=None)
@given(
    shape=decoder_shapes(),
    sequence=st.integers(1, 32768),
    gpus=st.integers(1, 2048),
    more_gpus=st.integers(0, 4096),
    method=st.sampled_from(["full", "lora", "qlora"]),
)
def test_more_gpus_under_zero_3_never_need_more_per_gpu(shape, sequence, gpus, more_gpus, method):
    request = TrainingRequest(sequence_length=sequence, zero_stage=3, data_parallel_gpus=gpus, method=method)
    wider = replace(request, data_parallel_gpus=gpus + more_gpus)
    base = estimate_training(shape, request)
    assert estimate_training(shape, wider).total_bytes <= base.total_bytes


@settings(max_examples=40, deadline=None)
@given(shape=decoder_shapes(), request=inference_requests, capacity_factor=st.floats(1.0, 6.0))
def test_largest_concurrency_fits_and_one_more_does_not(shape, request, capacity_factor):
    weights = weights_term(shape).size_bytes
    capacity = Capacity(max(1, int((weights + 2 * GIB) * capacity_factor)), CapacitySource.DATASHEET, "test")
    sessions = largest_concurrency(shape, request, capacity, upper_bound=100_000)
    assume(sessions is not None)
    if sessions:
        at_max = estimate_inference(shape, replace(request, concurrent_sessions=sessions))
        assert at_max.total_bytes <= capacity.total_bytes
    beyond = estimate_inference(shape, replace(request, concurrent_sessions=sessions + 1))
    assert beyond.total_bytes > capacity.total_bytes


@settings(max_examples=60, deadline=None)
@given(shape=decoder_shapes())
def test_parameter_terms_add_up_and_active_never_exceeds_total(shape):
    count = parameter_count(shape)
    assert sum(term.count for term in count.terms) == count.total
    assert 0 < count.unquantised < count.total
    assert count.active <= count.total


def test_every_term_an_estimate_produces_has_a_label(llama_3_8b):
    inference = estimate_inference(llama_3_8b, InferenceRequest(p95_context_tokens=1024, concurrent_sessions=1))
    names = {term.name for term in inference.terms}
    for method in ("full", "lora", "qlora"):
        request = TrainingRequest(sequence_length=1024, method=method, recompute="full")
        names |= {term.name for term in estimate_training(llama_3_8b, request).terms}
    assert names <= set(TERM_LABELS)


# --------------------------------------------------------------------------------------------------------------------
# Models people run: hybrid attention, media pipelines, tying defaults
# --------------------------------------------------------------------------------------------------------------------

# Qwen/Qwen3-Next-80B-A3B-Instruct config.json (the keys that matter; the release leaves layer_types out, so
# transformers' Qwen3NextConfig makes every full_attention_interval-th layer full attention, the others Gated
# DeltaNet linear attention).
QWEN3_NEXT_80B_A3B_CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "intermediate_size": 5120,
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
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "max_position_embeddings": 262144,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "torch_dtype": "bfloat16",
}
# facebook/opt-13b config.json: no tie_word_embeddings key (OPTConfig defaults it to True), ReLU FFN of ffn_dim,
# biases everywhere (enable_bias defaults to True), LayerNorm, learned positions.
OPT_13B_CONFIG = {
    "_name_or_path": "facebook/opt-13b",
    "architectures": ["OPTForCausalLM"],
    "model_type": "opt",
    "activation_function": "relu",
    "do_layer_norm_before": True,
    "ffn_dim": 20480,
    "hidden_size": 5120,
    "max_position_embeddings": 2048,
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "vocab_size": 50272,
    "word_embed_proj_dim": 5120,
    "torch_dtype": "float16",
}
# black-forest-labs/FLUX.1-dev model_index.json.
FLUX_1_DEV_MODEL_INDEX = {
    "_class_name": "FluxPipeline",
    "_diffusers_version": "0.30.0.dev0",
    "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
    "text_encoder": ["transformers", "CLIPTextModel"],
    "text_encoder_2": ["transformers", "T5EncoderModel"],
    "tokenizer": ["transformers", "CLIPTokenizer"],
    "tokenizer_2": ["transformers", "T5TokenizerFast"],
    "transformer": ["diffusers", "FluxTransformer2DModel"],
    "vae": ["diffusers", "AutoencoderKL"],
}


@pytest.fixture
def qwen3_next() -> ModelShape:
    return parse_hf_config(QWEN3_NEXT_80B_A3B_CONFIG)


def test_qwen3_next_kv_cache_counts_only_its_12_full_attention_layers(qwen3_next):
    """48 layers, every 4th full attention: 12 full + 36 Gated DeltaNet. KV per token = 12 layers · 2 (K and V) ·
    2 KV heads · 256 head dim · 2 bytes = 24,576 bytes; counting all 48 layers (the old reading) gave 98,304."""
    assert (qwen3_next.linear_attention_layers, qwen3_next.attention_layer_count) == (36, 12)
    assert kv_cache_bytes_per_token(qwen3_next) == 12 * 2 * 2 * 256 * 2 == 24_576
    assert kv_cache_bytes_per_token(replace(qwen3_next, linear_attention_layers=0)) == 4 * 24_576
    assert kv_cache_bytes_per_request(qwen3_next, 1000) == 1008 * 24_576  # 1,000 tokens → 63 blocks of 16


def test_qwen3_next_linear_layers_hold_a_fixed_state_per_session(qwen3_next):
    """Each Gated DeltaNet layer keeps, per session, 32 value heads × 128 × 128 = 524,288 recurrent values plus the
    convolution's last 3 inputs of 2·16·128 + 32·128 = 8,192 channels = 24,576: 548,864 values, 2 bytes each (bf16).
    36 layers · 548,864 · 2 = 39,518,208 bytes per session, whatever the context."""
    assert qwen3_next.linear_state_elements_per_layer == 32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3 == 548_864
    request = InferenceRequest(p95_context_tokens=32768, concurrent_sessions=8)
    state = estimate_inference(qwen3_next, request).term("linear_attention_state")
    assert state.size_bytes == 36 * 548_864 * 2 * 8 == 316_145_664
    longer = estimate_inference(qwen3_next, replace(request, p95_context_tokens=65536))
    assert longer.term("linear_attention_state").size_bytes == state.size_bytes
    split = estimate_inference(qwen3_next, replace(request, tensor_parallel=2))
    assert split.term("linear_attention_state").size_bytes == state.size_bytes // 2  # heads split across ranks
    assert estimate_inference(qwen3_next, request).term("kv_cache").size_bytes == 32768 * 24_576 * 8


def test_qwen3_next_layer_types_list_reads_like_the_interval(qwen3_next):
    typed = parse_hf_config(
        {**QWEN3_NEXT_80B_A3B_CONFIG, "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 12}
    )
    assert typed == qwen3_next


def test_qwen3_next_has_its_published_80_billion_parameters(qwen3_next):
    """Published: 80 B total (Qwen3-Next model card). Computed: 2 · 151,936 · 2,048 embeddings and head
    (622,329,856) + 12 attention layers (2,048·4,096 + 2·2,048·512 + 4,096·2,048 = 18,874,368 each) + 36 Gated
    DeltaNet layers (2,048·12,288 + 2·2,048·32 + 8,192·4 + 64 + 128 + 4,096·2,048 = 33,718,464 each) + 48 MoE
    layers of 512 routed and 1 shared expert (3·2,048·512 each) + routers 48·2,048·512 + norms 48·2·2,048 + 2,048
    = 79,573,623,552 (Qwen3-Next's output gate on the query, 12·2,048·4,096, is not modelled: 0.13 %)."""
    count = parameter_count(qwen3_next)
    terms = {term.name: term.count for term in count.terms}
    assert terms["linear_attention"] == 36 * 33_718_464
    assert terms["attention"] == 12 * 18_874_368
    assert count.total == 79_573_623_552
    assert round(billions(count.total)) == 80


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"linear_attention_layers": 24}, "linear_num_value_heads"),
        (
            {
                "linear_attention_layers": 30,
                "linear_num_value_heads": 32,
                "linear_key_head_dim": 128,
                "linear_value_head_dim": 128,
                "sliding_window": 4096,
                "sliding_window_layers": 8,
            },
            "linear_attention_layers",
        ),
        ({"linear_attention_layers": 33}, "linear_attention_layers"),
    ],
)
def test_bad_hybrid_shapes_name_the_field(changes, field):
    with pytest.raises(ShapeError) as excinfo:
        ModelShape(**{**VALID_SHAPE, **changes})
    assert excinfo.value.field == field


def test_opt_13b_reads_as_tied_biased_with_learned_positions():
    """OPT-13B has 12.85 B parameters (Zhang et al. 2022, OPT, table 1 lists 13B; the checkpoint holds 12.85 B).
    Counted: tied embedding 50,272 · 5,120 = 257,392,640 + 2,050 learned positions (2,048 + OPT's offset of 2) ·
    5,120 = 10,496,000 + 40 layers · (4·(5,120² + 5,120) attention + 2·5,120·20,480 + 20,480 + 5,120 ReLU FFN +
    2·2·5,120 LayerNorms = 314,639,360) + 2·5,120 final LayerNorm = 12,853,473,280. The old reading (untied, no
    biases or positions, RMSNorm) gave 13,098,112,000, +1.9 %."""
    shape = parse_hf_config(OPT_13B_CONFIG)
    assert shape.tied_embeddings is True
    assert (shape.linear_biases, shape.layer_norm, shape.gated_ffn) == (True, True, False)
    assert shape.position_embeddings == 2050
    total = parameter_count(shape).total
    assert total == 12_853_473_280
    assert abs(total / 12.85e9 - 1) < 0.001
    untied = parse_hf_config({**OPT_13B_CONFIG, "tie_word_embeddings": False})
    assert parameter_count(untied).total == total + 50272 * 5120


@pytest.mark.parametrize(
    ("model_type", "tied"),
    [
        ("opt", True),
        ("gpt2", True),
        ("bloom", True),
        ("falcon", True),
        ("gemma", True),
        ("llama", False),
        ("mistral", False),
        ("qwen2", False),
        ("phi", False),
        ("gpt_neox", False),
    ],
)
def test_tying_defaults_follow_the_transformers_config_class(model_type, tied):
    config = {key: value for key, value in LLAMA_3_8B_CONFIG.items() if key != "tie_word_embeddings"}
    assert parse_hf_config({**config, "model_type": model_type}).tied_embeddings is tied


def test_flux_1_dev_pipeline_memory_includes_its_text_encoders_and_vae():
    """FLUX.1-dev in bf16 loads the 11,901,408,320-parameter transformer (23,802,816,640 bytes) and beside it CLIP-L
    (123,060,480 → 246,120,960 bytes), the T5-XXL encoder (4,762,310,656 → 9,524,621,312 bytes) and the VAE
    (83,819,683 → 167,639,366 bytes): 9,938,381,638 bytes more weights, 10 % more with the margin. The denoiser
    alone (the old estimate) fits 32 GiB at one 1024² image; the whole pipeline does not."""
    shape = parse_hf_config(FLUX_1_DEV_MODEL_INDEX)
    assert shape.architecture is Architecture.DIFFUSION
    assert shape.params == 11_901_408_320
    assert [part.name for part in shape.pipeline_parts] == ["text_encoder", "text_encoder_2", "vae"]
    request = InferenceRequest(p95_context_tokens=4096, concurrent_sessions=1, max_batched_tokens=2**24)
    pipeline = estimate_inference(shape, request)
    assert pipeline.term("weights").size_bytes == 23_802_816_640
    assert pipeline.term("weights:text_encoder").size_bytes == 246_120_960
    assert pipeline.term("weights:text_encoder_2").size_bytes == 9_524_621_312
    assert pipeline.term("weights:vae").size_bytes == 167_639_366
    denoiser_only = estimate_inference(replace(shape, pipeline_parts=()), request)
    parts = 246_120_960 + 9_524_621_312 + 167_639_366
    assert abs(pipeline.total_bytes - denoiser_only.total_bytes - parts * 1.1) <= 1  # margins round up
    assert denoiser_only.total_bytes < 32 * GIB < pipeline.total_bytes


def test_pipeline_parts_keep_their_own_precision_and_stay_whole_under_tensor_parallelism():
    shape = ModelShape(
        architecture="diffusion",
        precision="fp8",
        params=12_000_000_000,
        hidden_size=3072,
        ffn_size=12288,
        num_attention_heads=24,
        pipeline_parts=[["text_encoder_2", 4_762_310_656, "bf16"], {"name": "vae", "params": 83_819_683}],
    )
    request = InferenceRequest(p95_context_tokens=4096, concurrent_sessions=1, tensor_parallel=2)
    breakdown = estimate_inference(shape, request)
    assert breakdown.term("weights").size_bytes == 12_000_000_000 // 2  # fp8 denoiser split over 2 ranks
    assert breakdown.term("weights:text_encoder_2").size_bytes == 4_762_310_656 * 2  # bf16, whole
    assert breakdown.term("weights:vae").size_bytes == 83_819_683  # the shape's fp8


@pytest.mark.parametrize(
    "parts",
    [
        "vae",
        [["vae"]],
        [["vae", -1]],
        [["vae", 10, "fp6"]],
        [{"name": "vae", "params": 10, "dtype": "bf16"}],
        [["vae", 10], ["vae", 20]],
    ],
)
def test_bad_pipeline_parts_name_the_field(parts):
    with pytest.raises(ShapeError) as excinfo:
        ModelShape(architecture="diffusion", params=1000, pipeline_parts=parts)
    assert excinfo.value.field == "pipeline_parts"


def test_unknown_or_mismatched_diffusers_pipelines_are_refused():
    with pytest.raises(ShapeError) as excinfo:
        parse_hf_config({**FLUX_1_DEV_MODEL_INDEX, "_class_name": "StableDiffusion3Pipeline"})
    assert "not a known pipeline" in excinfo.value.message
    with pytest.raises(ShapeError) as excinfo:
        parse_hf_config({**FLUX_1_DEV_MODEL_INDEX, "image_encoder": ["transformers", "SiglipVisionModel"]})
    assert "image_encoder" in excinfo.value.message
