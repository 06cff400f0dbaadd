"""Serving memory per GPU: weights, the KV cache (paged, windowed or latent), the activation peak, the runtime and
the safety margin."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from apps.workloads.memory.breakdown import (
    DEFAULT_CUDA_CONTEXT_BYTES,
    DEFAULT_SAFETY_MARGIN_FRACTION,
    MAX_OVERHEAD_BYTES,
    Breakdown,
    EstimateKind,
    InputValue,
    Term,
    runtime_term,
    with_safety_margin,
)
from apps.workloads.memory.errors import check_fraction, check_int, gettext_noop, require, shape_error
from apps.workloads.memory.precisions import (
    BYTES_PER_GIB,
    QUANTISED_PRECISIONS,
    UNQUANTISED_BYTES_PER_PARAMETER,
    Precision,
    bytes_per_parameter,
    kv_cache_precision,
    normalise_precision,
    quantisation_constant_bits,
)
from apps.workloads.memory.shapes import Architecture, ModelShape, check_tensor_parallel, effective_parameters

# Upper bounds of a request; anything larger is a typo or a unit mistake.
MAX_CONTEXT_TOKENS = 2**27
MAX_CONCURRENT_SESSIONS = 1_000_000
# Serving runtime beyond the torch allocator: vLLM's CUDA-graph pool (typically 0.5–1 GiB on logs of graph capture),
# NCCL and cuBLAS workspaces, allocator fragmentation: 1 GiB.
DEFAULT_INFERENCE_RUNTIME_BYTES = 1 * BYTES_PER_GIB
# vLLM V1 default max_num_batched_tokens for online serving on large GPUs (the chunked-prefill step size).
DEFAULT_MAX_BATCHED_TOKENS = 8192
# Logits are fp32 (4 bytes) and the sampler holds a second fp32 tensor of the same size (softmax probabilities).
LOGITS_BYTES_PER_ENTRY = 8


def _fmt(value: Fraction | int) -> InputValue:
    """A JSON-friendly input value: ints stay ints, fractions become floats."""
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else float(value)
    return value


def _activation_bytes(precision: Precision) -> int:
    """Activations run in the compute dtype: fp32 models in fp32, everything else (incl. quantised) in 16-bit."""
    return 4 if precision is Precision.FP32 else 2


# --------------------------------------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------------------------------------


def weights_term(
    shape: ModelShape,
    *,
    name: str = "weights",
    precision: Precision | None = None,
    double_quantisation: bool | None = None,
    divisor: int = 1,
    divisor_formula: str = "",
    divisor_inputs: Mapping[str, InputValue] | None = None,
) -> Term:
    """P · bytes(precision) / divisor; quantised formats keep embeddings, head, norms and routers in 16-bit."""
    precision = shape.precision if precision is None else precision
    double_quantisation = shape.double_quantisation if double_quantisation is None else double_quantisation
    params, unquantised, origin = effective_parameters(shape)
    per_parameter = bytes_per_parameter(precision, double_quantisation=double_quantisation)
    inputs: dict[str, InputValue] = {"P": params, "P source": origin, f"bytes({precision})": _fmt(per_parameter)}
    inputs.update(divisor_inputs or {})
    if precision in QUANTISED_PRECISIONS and unquantised:
        quantised = params - unquantised
        total = quantised * per_parameter + unquantised * UNQUANTISED_BYTES_PER_PARAMETER
        formula = f"(P_quantised·bytes({precision}) + P_16bit·2){divisor_formula}"
        inputs.update({"P_quantised": quantised, "P_16bit": unquantised})
    else:
        total = params * per_parameter
        formula = f"P·bytes({precision}){divisor_formula}"
    if precision is Precision.NF4 or precision is Precision.INT4:
        inputs["scale constants (bit/param)"] = _fmt(
            quantisation_constant_bits(precision, double_quantisation=double_quantisation)
        )
    return Term(name, math.ceil(total / divisor), formula, inputs)


# --------------------------------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------------------------------


VLLM_BLOCK_SIZE_TOKENS = 16


def has_kv_cache(shape: ModelShape) -> bool:
    """Encoders and diffusion transformers recompute attention each step and keep no KV cache."""
    return shape.architecture not in (Architecture.ENCODER, Architecture.DIFFUSION)


def _kv_bytes_per_layer_token(shape: ModelShape, kv_precision: Precision) -> tuple[int, str, dict[str, InputValue]]:
    kv_bytes = bytes_per_parameter(kv_precision)
    if shape.is_latent_attention:
        rank, rope = shape.kv_lora_rank or 0, shape.qk_rope_head_dim or 0
        per_layer = (rank + rope) * kv_bytes
        return (
            math.ceil(per_layer),
            f"(r_kv + d_rope)·bytes({kv_precision})",
            {"r_kv": rank, "d_rope": rope, f"bytes({kv_precision})": _fmt(kv_bytes)},
        )
    n_kv = require(shape.kv_heads, "num_kv_heads", gettext_noop("the KV cache"))
    d = require(shape.resolved_head_dim, "head_dim", gettext_noop("the KV cache"))
    per_layer = 2 * n_kv * d * kv_bytes
    return (
        math.ceil(per_layer),
        f"2·n_kv·d·bytes({kv_precision})",
        {"n_kv": n_kv, "d": d, f"bytes({kv_precision})": _fmt(kv_bytes)},
    )


def _attention_layers(shape: ModelShape) -> int:
    """Layers that keep a KV cache: all but the linear-attention ones."""
    require(shape.num_layers, "num_layers", gettext_noop("the KV cache"))
    return shape.attention_layer_count


def kv_cache_bytes_per_token(shape: ModelShape, kv_precision: str | Precision | None = None) -> int:
    """2·L_attn·n_kv·d·bytes (MLA: L_attn·(kv_lora_rank + rope_dim)·bytes) for one token at full attention, over the
    layers with softmax attention (linear-attention layers keep a fixed state instead); 0 without a cache."""
    if not has_kv_cache(shape):
        return 0
    precision = kv_cache_precision(shape.precision, kv_precision)  # type: ignore[arg-type]
    layers = _attention_layers(shape)
    per_layer, _, _ = _kv_bytes_per_layer_token(shape, precision)
    return layers * per_layer


def linear_state_bytes_per_session(shape: ModelShape) -> int:
    """Recurrent state of the linear-attention layers for one session, whatever its context: L_linear · state
    elements · bytes. vLLM keeps it in the model dtype (mamba_cache_dtype and mamba_ssm_cache_dtype "auto";
    MambaStateDtypeCalculator.gated_delta_net_state_dtype), so fp32 models 4 bytes, everything else 2."""
    if not has_kv_cache(shape) or not shape.linear_attention_layers:
        return 0
    return (
        shape.linear_attention_layers
        * shape.linear_state_elements_per_layer
        * _activation_bytes(shape.precision)  # type: ignore[arg-type]
    )


def _round_up(tokens: int, block: int) -> int:
    return -(-tokens // block) * block


def kv_cache_bytes_per_request(
    shape: ModelShape,
    context_tokens: int,
    kv_precision: str | Precision | None = None,
    block_size_tokens: int = VLLM_BLOCK_SIZE_TOKENS,
) -> int:
    """KV cache of one request at `context_tokens`, rounded up to whole blocks; sliding-window layers keep at most
    the window."""
    if not has_kv_cache(shape):
        return 0
    precision = kv_cache_precision(shape.precision, kv_precision)  # type: ignore[arg-type]
    layers = _attention_layers(shape)
    per_layer, _, _ = _kv_bytes_per_layer_token(shape, precision)
    window_layers = shape.window_layer_count
    full_tokens = _round_up(context_tokens, block_size_tokens)
    window_tokens = _round_up(min(context_tokens, shape.sliding_window or context_tokens), block_size_tokens)
    return per_layer * ((layers - window_layers) * full_tokens + window_layers * window_tokens)


# --------------------------------------------------------------------------------------------------------------------
# Serving estimate
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InferenceRequest:
    """How the model is served: p95 context (input + output tokens) and peak concurrent sessions."""

    p95_context_tokens: int
    concurrent_sessions: int
    tensor_parallel: int = 1
    kv_cache_precision: Precision | str | None = None  # None: the model's 16-bit dtype (fp32 models: fp32)
    block_size_tokens: int = VLLM_BLOCK_SIZE_TOKENS
    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    activation_peak_bytes: int | None = None  # a measured or stated peak replaces the formula
    cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES
    runtime_overhead_bytes: int = DEFAULT_INFERENCE_RUNTIME_BYTES
    safety_margin_fraction: float = DEFAULT_SAFETY_MARGIN_FRACTION

    def __post_init__(self) -> None:
        check_int("p95_context_tokens", self.p95_context_tokens, maximum=MAX_CONTEXT_TOKENS)
        check_int("concurrent_sessions", self.concurrent_sessions, maximum=MAX_CONCURRENT_SESSIONS)
        check_int("tensor_parallel", self.tensor_parallel, maximum=1024)
        check_int("block_size_tokens", self.block_size_tokens, maximum=4096)
        check_int("max_batched_tokens", self.max_batched_tokens, maximum=2**24)
        if self.activation_peak_bytes is not None:
            check_int("activation_peak_bytes", self.activation_peak_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_int("cuda_context_bytes", self.cuda_context_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_int("runtime_overhead_bytes", self.runtime_overhead_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_fraction("safety_margin_fraction", self.safety_margin_fraction)
        if self.kv_cache_precision is not None:
            object.__setattr__(
                self, "kv_cache_precision", normalise_precision(self.kv_cache_precision, "kv_cache_precision")
            )


def _kv_cache_term(shape: ModelShape, request: InferenceRequest) -> Term:
    if not has_kv_cache(shape):
        return Term(
            "kv_cache",
            0,
            "no KV cache (attention is recomputed every step)",
            {"architecture": shape.architecture.value},
        )
    precision = kv_cache_precision(shape.precision, request.kv_cache_precision)  # type: ignore[arg-type]
    layers = _attention_layers(shape)
    per_layer, layer_formula, layer_inputs = _kv_bytes_per_layer_token(shape, precision)
    c, block, sessions, t = (
        request.p95_context_tokens,
        request.block_size_tokens,
        request.concurrent_sessions,
        request.tensor_parallel,
    )
    if shape.is_latent_attention:
        kv_split = 1  # the latent cache is replicated on every tensor-parallel rank
        split_formula = " (latent cache replicated on each TP rank)"
    else:
        kv_split = min(t, shape.kv_heads or t)  # ranks beyond n_kv hold copies of a KV head
        split_formula = " / min(t, n_kv)"
    per_request = kv_cache_bytes_per_request(shape, c, precision, block)
    window_layers = shape.window_layer_count
    if window_layers:
        tokens_formula = "((L − L_w)·⌈c/B⌉·B + L_w·⌈min(c, w)/B⌉·B)"
        window_inputs: dict[str, InputValue] = {"L_w": window_layers, "w": shape.sliding_window or 0}
    else:
        tokens_formula = "L·⌈c/B⌉·B"
        window_inputs = {}
    formula = f"{tokens_formula}·{layer_formula}·sessions{split_formula}"
    if shape.linear_attention_layers:
        formula += "; L = layers with softmax attention (linear-attention layers keep a state instead)"
    inputs = {
        "L": layers,
        **layer_inputs,
        **window_inputs,
        "c": c,
        "B": block,
        "sessions": sessions,
        "t": t,
        "bytes per token": layers * per_layer,
        "bytes per request": per_request,
    }
    return Term("kv_cache", math.ceil(per_request * sessions / kv_split), formula, inputs)


def _linear_state_term(shape: ModelShape, request: InferenceRequest) -> Term:
    """The fixed recurrent state of the linear-attention layers: per session, whatever the context; vLLM splits its
    heads and convolution channels across the tensor-parallel ranks."""
    per_session = linear_state_bytes_per_session(shape)
    sessions, t = request.concurrent_sessions, request.tensor_parallel
    value_heads = shape.linear_num_value_heads or 0
    key_heads = shape.linear_num_key_heads or value_heads
    return Term(
        "linear_attention_state",
        math.ceil(per_session * sessions / t),
        "L_linear·(n_v·d_k·d_v + (2·n_k·d_k + n_v·d_v)·(K − 1))·bytes(act)·sessions/t",
        {
            "L_linear": shape.linear_attention_layers,
            "n_v": value_heads,
            "n_k": key_heads,
            "d_k": shape.linear_key_head_dim or 0,
            "d_v": shape.linear_value_head_dim or 0,
            "K": shape.linear_conv_kernel_dim or 0,
            "bytes(act)": _activation_bytes(shape.precision),  # type: ignore[arg-type]
            "sessions": sessions,
            "t": t,
            "bytes per session": per_session,
        },
    )


def pipeline_part_terms(shape: ModelShape) -> list[Term]:
    """One weights term per model a media pipeline loads beside its denoiser ("weights:<component>"), each at its
    own precision (the shape's when it states none) and whole on every GPU: pipelines shard only the denoiser."""
    terms = []
    for part in shape.pipeline_parts:
        precision = normalise_precision(part.precision or shape.precision, "pipeline_parts")
        per_parameter = bytes_per_parameter(precision)
        terms.append(
            Term(
                f"weights:{part.name}",
                math.ceil(part.params * per_parameter),
                f"P_part·bytes({precision}) (whole on each GPU)",
                {"part": part.name, "P_part": part.params, f"bytes({precision})": _fmt(per_parameter)},
            )
        )
    return terms


def _inference_activation_term(shape: ModelShape, request: InferenceRequest) -> Term:
    if request.activation_peak_bytes is not None:
        stated = request.activation_peak_bytes
        return Term("activation_peak", stated, "stated", {"bytes": stated})
    h = require(shape.hidden_size, "hidden_size", gettext_noop("the activation peak (or state activation_peak_bytes)"))
    if shape.is_moe:
        expert_ffn = require(shape.expert_ffn_size or shape.ffn_size, "expert_ffn_size", gettext_noop("MoE layers"))
        routed = (shape.num_experts_per_token or 0) * expert_ffn
        shared = shape.num_shared_experts * (shape.shared_expert_ffn_size or expert_ffn)
        ffn = max(routed + shared, (shape.ffn_size or 0) if shape.first_dense_layers else 0)
        where_ffn = ["f = max(k·f_e + S·f_s, f_dense)"]
    else:
        ffn = require(shape.ffn_size, "ffn_size", gettext_noop("the activation peak (or state activation_peak_bytes)"))
        where_ffn = []
    act_bytes = _activation_bytes(shape.precision)  # type: ignore[arg-type]
    t = request.tensor_parallel
    tokens = min(request.max_batched_tokens, request.concurrent_sessions * request.p95_context_tokens)
    sequences = min(request.concurrent_sessions, tokens)
    vocab = shape.vocab_size if shape.architecture is not Architecture.ENCODER else None
    # The largest live set of one forward step: the residual stream and the normed input (2·h per token) plus the
    # FFN intermediates (gate and up outputs, then their product: 3·f per token, split across TP ranks), and the fp32
    # logits with the sampler's copy for the last token of each sequence.
    ffn_share = Fraction(3 * ffn, t)
    peak = tokens * (2 * h + ffn_share) * act_bytes
    formula = "T·(2·h + 3·f/t)·bytes(act)"
    where = ["T = min(max_batched_tokens, sessions·c)", *where_ffn]
    inputs: dict[str, InputValue] = {
        "T": tokens,
        "h": h,
        "f": ffn,
        "t": t,
        "bytes(act)": act_bytes,
        "max_batched_tokens": request.max_batched_tokens,
    }
    if vocab:
        peak += LOGITS_BYTES_PER_ENTRY * sequences * vocab
        formula += f" + {LOGITS_BYTES_PER_ENTRY}·n_seq·V"
        where.append("n_seq = min(sessions, T), 8 bytes = fp32 logits + the sampler's fp32 copy")
        inputs.update({"n_seq": sequences, "V": vocab})
    return Term("activation_peak", math.ceil(peak), f"{formula}; {'; '.join(where)}", inputs)


def estimate_inference(shape: ModelShape, request: InferenceRequest) -> Breakdown:
    """Per-GPU memory to serve: weights/t (+ the pipeline's other models, whole) + KV(p95 context × sessions)/t
    (+ the linear-attention state × sessions/t) + activation peak + CUDA context/runtime, then the safety margin."""
    t = request.tensor_parallel
    check_tensor_parallel(shape, t)
    if shape.max_context_tokens is not None and request.p95_context_tokens > shape.max_context_tokens:
        raise shape_error(
            "p95_context_tokens",
            gettext_noop("%(context)s tokens exceed the model's context window of %(window)s tokens."),
            context=request.p95_context_tokens,
            window=shape.max_context_tokens,
        )
    terms = [
        weights_term(shape, divisor=t, divisor_formula="/t", divisor_inputs={"t": t}),
        *pipeline_part_terms(shape),
        _kv_cache_term(shape, request),
    ]
    if linear_state_bytes_per_session(shape):
        terms.append(_linear_state_term(shape, request))
    terms += [
        _inference_activation_term(shape, request),
        runtime_term(request.cuda_context_bytes, request.runtime_overhead_bytes),
    ]
    return Breakdown(EstimateKind.INFERENCE, with_safety_margin(terms, request.safety_margin_fraction), gpus=t)
