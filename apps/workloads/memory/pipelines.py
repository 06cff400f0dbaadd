"""Media pipelines: the models a diffusers pipeline loads beside its denoiser (text encoders, VAE), from a table of
known pipelines with the source of each figure, and a reader for a diffusers `model_index.json`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.workloads.memory.errors import gettext_noop, shape_error
from apps.workloads.memory.precisions import Precision
from apps.workloads.memory.shapes import Architecture, ModelShape, PipelinePart

# Parameter counts of the models FLUX.1 loads (sources as read 2026-12-03):
# - FluxTransformer2DModel (transformer/ of black-forest-labs/FLUX.1-dev; FLUX.1-schnell has the same shape):
#   11,901,408,320 — the component parameter count in the metadata of the single-file flux1-dev-fp8.safetensors
#   bundle and the GGUF `total` of unsloth/FLUX.1-dev-GGUF. Black Forest Labs' model card says "a 12 billion
#   parameter rectified flow transformer" (https://huggingface.co/black-forest-labs/FLUX.1-dev). Its shape is the
#   diffusers FluxTransformer2DModel default: 19 double-stream + 38 single-stream blocks, 24 heads × 128 = 3,072
#   wide, MLP ratio 4.
# - T5EncoderModel, text_encoder_2: the google/t5-v1_1-xxl encoder (config.json: d_model 4,096, d_ff 10,240,
#   24 layers, 64 heads × d_kv 64, vocab_size 32,128, gated GELU, untied), counted: 32,128·4,096 embedding +
#   24·(4·4,096² attention + 3·4,096·10,240 FFN + 2·4,096 norms) + 4,096 final norm + 32·64 relative position
#   buckets = 4,762,310,656.
# - CLIPTextModel, text_encoder: the openai/clip-vit-large-patch14 text tower (config.json text_config: width 768,
#   12 layers, intermediate 3,072, vocab 49,408, 77 positions), counted: 49,408·768 + 77·768 + 12·(4·(768² + 768)
#   + 2·768·3,072 + 3,072 + 768 + 2·2·768) + 2·768 = 123,060,480.
# - AutoencoderKL, vae (16 latent channels): 83,819,683 — the vae component count in the same bundle's metadata,
#   and the value count of a tensor-by-tensor comparison with the FLUX.1-dev vae/ weights (244 tensors).
# The bundle's two text encoders together report 4,887,121,408, 0.04 % above 4,762,310,656 + 123,060,480 (the
# bundle keeps a few tensors the diffusers components do not load).
FLUX_TRANSFORMER_PARAMS = 11_901_408_320
T5_V1_1_XXL_ENCODER_PARAMS = 4_762_310_656
CLIP_VIT_L_14_TEXT_PARAMS = 123_060_480
FLUX_VAE_PARAMS = 83_819_683


@dataclass(frozen=True)
class KnownPipeline:
    """A diffusers pipeline class whose models have known sizes: the denoiser (its component name, parameters and
    layer shape, for the activation estimate) and the other parts."""

    denoiser: str
    denoiser_params: int
    parts: tuple[PipelinePart, ...]
    denoiser_shape: Mapping[str, int]
    source: str


FLUX_PIPELINE = KnownPipeline(
    denoiser="transformer",
    denoiser_params=FLUX_TRANSFORMER_PARAMS,
    parts=(
        PipelinePart("text_encoder", CLIP_VIT_L_14_TEXT_PARAMS),
        PipelinePart("text_encoder_2", T5_V1_1_XXL_ENCODER_PARAMS),
        PipelinePart("vae", FLUX_VAE_PARAMS),
    ),
    # 19 + 38 blocks of width 24 × 128 = 3,072 with an MLP of 4 × 3,072.
    denoiser_shape={"num_layers": 57, "hidden_size": 3072, "num_attention_heads": 24, "ffn_size": 12288},
    source="black-forest-labs/FLUX.1-dev and FLUX.1-schnell (same models); see FLUX_TRANSFORMER_PARAMS",
)

# Pipelines by their model_index.json `_class_name`.
KNOWN_PIPELINES: dict[str, KnownPipeline] = {
    "FluxPipeline": FLUX_PIPELINE,
}
# model_index.json entries that are not models with weights.
_NON_MODEL_COMPONENTS = frozenset({"scheduler", "tokenizer", "tokenizer_2", "tokenizer_3", "feature_extractor"})


def is_diffusers_config(config: Mapping[str, Any]) -> bool:
    return "_class_name" in config and "_diffusers_version" in config


def parse_model_index(config: Mapping[str, Any], precision: Precision | str = Precision.BF16) -> ModelShape:
    """A diffusion ModelShape from a diffusers model_index.json of a known pipeline: the denoiser's parameters as
    `params`, its layer shape, and every other model it lists as a pipeline part. ShapeError (field "config") for a
    component config (one model, not a pipeline) or an unknown pipeline."""
    name = str(config.get("_class_name", ""))
    known = KNOWN_PIPELINES.get(name)
    if known is None:
        raise shape_error(
            "config",
            gettext_noop(
                "Diffusers config %(name)s is not a known pipeline (known: %(known)s); state the parameter count "
                "instead."
            ),
            name=name,
            known=", ".join(sorted(KNOWN_PIPELINES)),
        )
    listed = {key for key, value in config.items() if not key.startswith("_") and isinstance(value, list)}
    models = listed - _NON_MODEL_COMPONENTS
    expected = {known.denoiser} | {part.name for part in known.parts}
    if models and models != expected:
        raise shape_error(
            "config",
            gettext_noop("model_index.json lists %(listed)s; %(name)s loads %(expected)s."),
            listed=", ".join(sorted(models)),
            name=name,
            expected=", ".join(sorted(expected)),
        )
    return ModelShape(
        architecture=Architecture.DIFFUSION,
        precision=precision,
        params=known.denoiser_params,
        pipeline_parts=known.parts,
        **known.denoiser_shape,
    )
