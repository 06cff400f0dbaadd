"""Reading a Hugging Face config.json into a ModelShape: dtype or quantisation, MoE, latent attention, windows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from apps.workloads.memory.errors import gettext_noop, shape_error
from apps.workloads.memory.pipelines import is_diffusers_config, parse_model_index
from apps.workloads.memory.precisions import Precision, normalise_precision
from apps.workloads.memory.shapes import Architecture, ModelShape

ENCODER_MODEL_TYPES = frozenset(
    {
        "bert",
        "roberta",
        "xlm-roberta",
        "camembert",
        "distilbert",
        "mpnet",
        "deberta",
        "deberta-v2",
        "electra",
        "albert",
        "modernbert",
        "nomic_bert",
        "xlm-roberta-xl",
        "ernie",
    }
)
ENCODERS_WITH_LEARNED_POSITIONS = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "distilbert", "ernie"})
ENCODERS_WITH_POOLER = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "ernie"})
NON_GATED_DECODER_TYPES = frozenset(
    {"gpt2", "gpt_neox", "gptj", "opt", "falcon", "bloom", "mpt", "phi", "starcoder2", "gpt_bigcode"}
)
# Decoders built like GPT-2: biases on every attention and FFN projection and LayerNorm with a bias (OPT's
# enable_bias, StarCoder2's use_bias may turn the biases off).
BIASED_LAYER_NORM_DECODER_TYPES = frozenset({"gpt2", "opt", "gpt_bigcode", "gpt_neox", "bloom", "phi", "starcoder2"})
# Decoders with learned absolute positions: (config key, extra rows). OPT's OPTLearnedPositionalEmbedding holds
# max_position_embeddings + 2 rows (its offset of 2 for the padding index, transformers modeling_opt.py).
LEARNED_POSITION_DECODER_TYPES: dict[str, tuple[str, int]] = {
    "gpt2": ("n_positions", 0),
    "gpt_bigcode": ("n_positions", 0),
    "opt": ("max_position_embeddings", 2),
}
# Model types whose configs default tie_word_embeddings to true when the key is absent: the class default of
# transformers' config classes (transformers 5.23, models/<type>/configuration_<type>.py, read 2026-12-03): True for
# opt, gpt2, bloom, falcon, mpt, starcoder2, gpt_bigcode, cohere and the Gemma family; False for llama, mistral,
# mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen3_next, phi, phi3, gpt_neox, gptj, deepseek_v2, deepseek_v3,
# gpt_oss, olmo and stablelm. Other types stay untied (the larger, conservative count).
TIED_BY_DEFAULT_TYPES = (
    frozenset(
        {
            "gemma",
            "gemma2",
            "gemma3",
            "gemma3_text",
            "opt",
            "gpt2",
            "bloom",
            "falcon",
            "mpt",
            "starcoder2",
            "gpt_bigcode",
            "cohere",
        }
    )
    | ENCODER_MODEL_TYPES
)
# Hybrid models whose config leaves layer_types out: every full_attention_interval-th layer is full attention, the
# others linear attention (transformers Qwen3NextConfig: layer i is full iff (i + 1) % interval == 0).
LINEAR_ATTENTION_INTERVAL_TYPES = frozenset(
    {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
)
# Model types whose sliding window covers every layer.
ALL_LAYER_WINDOW_TYPES = frozenset({"mistral", "mixtral", "phi3", "starcoder2"})

_CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "num_attention_heads": ("num_attention_heads", "n_head", "n_heads"),
    "num_kv_heads": ("num_key_value_heads", "num_kv_heads", "n_kv_heads"),
    "ffn_size": ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "num_experts": ("num_local_experts", "n_routed_experts", "num_experts"),
    "num_experts_per_token": ("num_experts_per_tok", "moe_top_k", "num_selected_experts"),
    "expert_ffn_size": ("moe_intermediate_size",),
    "head_dim": ("head_dim",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "q_lora_rank": ("q_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "max_context_tokens": ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"),
    "linear_num_key_heads": ("linear_num_key_heads",),
    "linear_num_value_heads": ("linear_num_value_heads",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "linear_conv_kernel_dim": ("linear_conv_kernel_dim",),
}


def _config_int(config: Mapping[str, Any], field_name: str, keys: Iterable[str] | None = None) -> int | None:
    for key in keys if keys is not None else _CONFIG_KEYS[field_name]:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise shape_error(
                field_name,
                gettext_noop("config.json key %(key)s must be a whole number, got %(value)r."),
                key=key,
                value=value,
            )
        return value
    return None


def _config_bool(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise shape_error(
            "config",
            gettext_noop("config.json key %(key)s must be true or false, got %(value)r."),
            key=key,
            value=value,
        )
    return value


def _config_precision(config: Mapping[str, Any]) -> tuple[Precision, bool]:
    """(weights precision, NF4 double quantisation) from quantization_config, else torch_dtype/dtype."""
    quantisation = config.get("quantization_config")
    if quantisation is not None:
        if not isinstance(quantisation, Mapping):
            raise shape_error("precision", gettext_noop("config.json quantization_config must be an object."))
        method = str(quantisation.get("quant_method", "")).lower()
        if method in {"awq", "gptq"}:
            bits = quantisation.get("bits", quantisation.get("w_bit"))
            if bits == 4:
                return Precision.INT4, False
            if bits == 8:
                return Precision.INT8, False
            raise shape_error(
                "precision",
                gettext_noop("%(method)s with %(bits)s bits is not supported."),
                method=method,
                bits=bits,
            )
        if method == "bitsandbytes":
            if quantisation.get("load_in_4bit"):
                return Precision.NF4, bool(quantisation.get("bnb_4bit_use_double_quant", False))
            if quantisation.get("load_in_8bit"):
                return Precision.INT8, False
        if method in {"fp8", "fbgemm_fp8"}:
            return Precision.FP8, False
        raise shape_error(
            "precision",
            gettext_noop("Quantisation method %(method)r is not recognised; choose the precision by hand."),
            method=method,
        )
    dtype = config.get("torch_dtype", config.get("dtype"))
    if dtype is None or dtype == "auto":
        return Precision.BF16, False  # serving engines load checkpoints without a dtype in 16-bit
    return normalise_precision(dtype), False


def _sliding_window_layers(config: Mapping[str, Any], model_type: str, layers: int) -> int | None:
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list):
        return sum(1 for kind in layer_types if kind == "sliding_attention")
    if model_type == "gemma2":
        return (layers + 1) // 2  # even-numbered layers use the window
    if model_type in {"gemma3", "gemma3_text"}:
        pattern = _config_int(config, "sliding_window_layers", ("sliding_window_pattern",)) or 6
        return layers - layers // pattern  # every pattern-th layer is global
    if model_type in {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}:
        first_window_layer = _config_int(config, "sliding_window_layers", ("max_window_layers",)) or 0
        return max(layers - first_window_layer, 0)
    if model_type in ALL_LAYER_WINDOW_TYPES:
        return None
    return 0  # the config does not say which layers use the window: count all as full attention (conservative)


def _linear_attention_layers(config: Mapping[str, Any], model_type: str, layers: int) -> int:
    """Layers whose mixer is linear attention: counted in layer_types, else from full_attention_interval."""
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list):
        return sum(1 for kind in layer_types if kind == "linear_attention")
    if model_type in LINEAR_ATTENTION_INTERVAL_TYPES:
        interval = _config_int(config, "linear_attention_layers", ("full_attention_interval",)) or 4
        return layers - layers // interval
    return 0


def parse_hf_config(config: Mapping[str, Any]) -> ModelShape:
    """Read a Hugging Face config.json (already decoded) into a ModelShape; ShapeError names the field at fault."""
    if not isinstance(config, Mapping):
        raise shape_error(
            "config", gettext_noop("config.json must be a JSON object, got %(kind)s."), kind=type(config).__name__
        )
    if is_diffusers_config(config):
        return parse_model_index(config)
    merged: dict[str, Any] = dict(config)
    text_config = config.get("text_config")
    if isinstance(text_config, Mapping):
        # Multimodal wrappers keep the language model under text_config; its null keys do not hide the wrapper's.
        merged.update({key: value for key, value in text_config.items() if value is not None})
    model_type = str(merged.get("model_type", "")).lower()

    values: dict[str, int | None] = {name: _config_int(merged, name) for name in _CONFIG_KEYS}
    if model_type == "distilbert":
        values["ffn_size"] = _config_int(merged, "ffn_size", ("hidden_dim",))
    if model_type == "gpt2" and values["ffn_size"] is None and values["hidden_size"] is not None:
        values["ffn_size"] = 4 * values["hidden_size"]  # GPT-2 leaves n_inner null for the default 4·h
    for name in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size"):
        if values[name] is None:
            raise shape_error(
                name,
                gettext_noop("config.json has no %(key)s."),
                key=" / ".join(_CONFIG_KEYS[name]),
            )
    layers = values["num_layers"] or 0

    experts = values["num_experts"]
    if model_type in ENCODER_MODEL_TYPES:
        architecture = Architecture.ENCODER
    elif experts is not None and experts > 1:
        architecture = Architecture.MOE
    else:
        architecture = Architecture.DENSE
        values["num_experts"] = values["num_experts_per_token"] = values["expert_ffn_size"] = None
    if values["ffn_size"] is None and architecture is not Architecture.MOE:
        raise shape_error(
            "ffn_size", gettext_noop("config.json has no %(key)s."), key=" / ".join(_CONFIG_KEYS["ffn_size"])
        )

    moe: dict[str, Any] = {}
    if architecture is Architecture.MOE:
        shared_size = _config_int(merged, "shared_expert_ffn_size", ("shared_expert_intermediate_size",))
        shared_count = _config_int(merged, "num_shared_experts", ("n_shared_experts",))
        moe = {
            "num_shared_experts": shared_count if shared_count is not None else (1 if shared_size else 0),
            "shared_expert_ffn_size": shared_size,
            "first_dense_layers": _config_int(merged, "first_dense_layers", ("first_k_dense_replace",)) or 0,
        }

    sliding_window = _config_int(merged, "sliding_window", ("sliding_window",))
    if merged.get("use_sliding_window") is False:
        sliding_window = None
    window_layers = _sliding_window_layers(merged, model_type, layers) if sliding_window else None

    linear_layers = _linear_attention_layers(merged, model_type, layers)
    linear: dict[str, Any] = {}
    if linear_layers:
        names = ("num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim", "conv_kernel_dim")
        linear = {f"linear_{name}": values[f"linear_{name}"] for name in names}
        linear["linear_attention_layers"] = linear_layers

    precision, double_quantisation = _config_precision(merged)
    encoder = architecture is Architecture.ENCODER
    position_embeddings = values["max_context_tokens"] if model_type in ENCODERS_WITH_LEARNED_POSITIONS else 0
    if model_type in LEARNED_POSITION_DECODER_TYPES:
        key, extra_rows = LEARNED_POSITION_DECODER_TYPES[model_type]
        rows = _config_int(merged, "position_embeddings", (key,))
        position_embeddings = rows + extra_rows if rows else 0
    token_types = _config_int(merged, "token_type_vocab_size", ("type_vocab_size",)) if encoder else None
    gpt2_like = model_type in BIASED_LAYER_NORM_DECODER_TYPES
    linear_biases = gpt2_like and _config_bool(merged, "enable_bias", True) and _config_bool(merged, "use_bias", True)
    return ModelShape(
        architecture=architecture,
        precision=precision,
        double_quantisation=double_quantisation,
        num_layers=values["num_layers"],
        hidden_size=values["hidden_size"],
        num_attention_heads=values["num_attention_heads"],
        num_kv_heads=values["num_kv_heads"],
        head_dim=values["head_dim"],
        ffn_size=values["ffn_size"],
        vocab_size=values["vocab_size"],
        tied_embeddings=_config_bool(merged, "tie_word_embeddings", model_type in TIED_BY_DEFAULT_TYPES),
        gated_ffn=not encoder and model_type not in NON_GATED_DECODER_TYPES,
        qkv_bias=_config_bool(merged, "attention_bias", model_type in {"qwen2", "qwen2_moe"}),
        linear_biases=linear_biases,
        layer_norm=gpt2_like,
        num_experts=values["num_experts"],
        num_experts_per_token=values["num_experts_per_token"],
        expert_ffn_size=values["expert_ffn_size"],
        kv_lora_rank=values["kv_lora_rank"],
        qk_rope_head_dim=values["qk_rope_head_dim"] if values["kv_lora_rank"] is not None else None,
        q_lora_rank=values["q_lora_rank"],
        qk_nope_head_dim=values["qk_nope_head_dim"],
        v_head_dim=values["v_head_dim"],
        sliding_window=sliding_window,
        sliding_window_layers=window_layers,
        max_context_tokens=values["max_context_tokens"],
        position_embeddings=position_embeddings or 0,
        token_type_vocab_size=token_types or 0,
        pooler=model_type in ENCODERS_WITH_POOLER,
        **moe,
        **linear,
    )


def parse_hf_config_json(text: str | bytes) -> ModelShape:
    """Decode config.json text and read it; malformed JSON gets a ShapeError with the line and column."""
    try:
        config = json.loads(text)
    except UnicodeDecodeError:
        raise shape_error("config", gettext_noop("config.json is not UTF-8 text.")) from None
    except json.JSONDecodeError as error:
        raise shape_error(
            "config",
            gettext_noop("config.json is not valid JSON: %(reason)s at line %(line)s, column %(column)s."),
            reason=error.msg,
            line=error.lineno,
            column=error.colno,
        ) from None
    return parse_hf_config(config)
