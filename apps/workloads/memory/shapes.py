"""A model's shape (ModelShape, its architecture and plausibility limits) and the parameter count it implies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from apps.workloads.memory.breakdown import InputValue
from apps.workloads.memory.errors import check_int, gettext_noop, require, shape_error
from apps.workloads.memory.precisions import Precision, normalise_precision


class Architecture(StrEnum):
    DENSE = "dense"
    MOE = "moe"
    ENCODER = "encoder"
    DIFFUSION = "diffusion"
    OTHER = "other"


# Upper bounds well above any published model; anything larger is a typo or a unit mistake.
SHAPE_LIMITS: dict[str, int] = {
    "params": 10**14,
    "active_params": 10**14,
    "num_layers": 1024,
    "hidden_size": 262_144,
    "num_attention_heads": 2048,
    "num_kv_heads": 2048,
    "head_dim": 4096,
    "ffn_size": 1_048_576,
    "vocab_size": 4_194_304,
    "num_experts": 16_384,
    "num_experts_per_token": 16_384,
    "expert_ffn_size": 1_048_576,
    "num_shared_experts": 64,
    "shared_expert_ffn_size": 1_048_576,
    "first_dense_layers": 1024,
    "kv_lora_rank": 65_536,
    "qk_rope_head_dim": 4096,
    "q_lora_rank": 65_536,
    "qk_nope_head_dim": 4096,
    "v_head_dim": 4096,
    "sliding_window": 2**27,
    "sliding_window_layers": 1024,
    "max_context_tokens": 2**27,
    "position_embeddings": 2**27,
    "token_type_vocab_size": 1024,
    "linear_attention_layers": 1024,
    "linear_num_key_heads": 2048,
    "linear_num_value_heads": 2048,
    "linear_key_head_dim": 4096,
    "linear_value_head_dim": 4096,
    "linear_conv_kernel_dim": 64,
}
# Upper bound of the parts a media pipeline lists beside its denoiser (text encoders, VAE, image encoders).
MAX_PIPELINE_PARTS = 16
# Counts that may be zero (everything else in SHAPE_LIMITS is at least 1).
ZERO_ALLOWED_FIELDS = frozenset(
    {
        "num_shared_experts",
        "first_dense_layers",
        "position_embeddings",
        "token_type_vocab_size",
        "sliding_window_layers",
        "linear_attention_layers",
    }
)
# Stated and computed parameter counts may differ (vision towers, biases the shape does not model), but not by
# more than this factor: beyond it the stated figure is almost surely in the wrong unit.
STATED_PARAMS_MAX_RATIO = 2


# --------------------------------------------------------------------------------------------------------------------
# Pipeline parts (media pipelines: the text encoders and VAE beside the denoiser)
# --------------------------------------------------------------------------------------------------------------------


class PipelinePart(NamedTuple):
    """One model a media pipeline loads beside its denoiser (a text encoder, the VAE): its component name, its
    parameter count and its precision (None: the shape's). A NamedTuple, so a summary's `shape_extras` JSON keeps
    it as a plain [name, params, precision] list."""

    name: str
    params: int
    precision: str | None = None


def _pipeline_part(value: Any) -> PipelinePart:
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(PipelinePart._fields))
        if unknown:
            raise shape_error(
                "pipeline_parts", gettext_noop("Unknown pipeline part key %(key)r."), key=unknown[0]
            )
        value = (value.get("name"), value.get("params"), value.get("precision"))
    if isinstance(value, str) or not isinstance(value, Sequence) or not 2 <= len(value) <= 3:
        raise shape_error(
            "pipeline_parts",
            gettext_noop("A pipeline part is a name, a parameter count and an optional precision, got %(value)r."),
            value=value,
        )
    name, params, *rest = value
    if not isinstance(name, str) or not name.strip():
        raise shape_error("pipeline_parts", gettext_noop("A pipeline part needs a name."))
    check_int("pipeline_parts", params, maximum=SHAPE_LIMITS["params"])
    precision = rest[0] if rest else None
    if precision is not None:
        precision = normalise_precision(precision, "pipeline_parts").value
    return PipelinePart(name.strip(), params, precision)


def normalise_pipeline_parts(value: Any) -> tuple[PipelinePart, ...]:
    """Pipeline parts as PipelinePart tuples, from PipelinePart values, [name, params, precision] lists (JSON) or
    {"name", "params", "precision"} objects; ShapeError names `pipeline_parts` when one is malformed."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise shape_error("pipeline_parts", gettext_noop("Pipeline parts must be a list."))
    if len(value) > MAX_PIPELINE_PARTS:
        raise shape_error(
            "pipeline_parts", gettext_noop("At most %(count)s pipeline parts."), count=MAX_PIPELINE_PARTS
        )
    parts = tuple(_pipeline_part(item) for item in value)
    names = [part.name for part in parts]
    if len(set(names)) != len(names):
        raise shape_error("pipeline_parts", gettext_noop("Pipeline part names must differ."))
    return parts


# --------------------------------------------------------------------------------------------------------------------
# Model shape
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """A model's shape. Structural fields are optional: a stated `params` alone is enough for weights and training
    model states; the KV cache, activations and the computed parameter count need the layer shape."""

    architecture: Architecture | str = Architecture.DENSE
    precision: Precision | str = Precision.BF16
    params: int | None = None  # stated total parameter count (wins over the computed one)
    active_params: int | None = None  # stated active parameters per token (MoE)
    num_layers: int | None = None
    hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None  # None: same as num_attention_heads (multi-head attention)
    head_dim: int | None = None  # None: hidden_size / num_attention_heads; set it when the config states one
    ffn_size: int | None = None  # dense FFN (intermediate) size
    vocab_size: int | None = None
    tied_embeddings: bool = False
    gated_ffn: bool | None = None  # SwiGLU-style gate + up + down; None: True for decoders, False for encoders
    qkv_bias: bool = False  # biases on q, k, v projections (Qwen2)
    # Decoders built like GPT-2 / OPT: biases on every attention and FFN projection, LayerNorm (weight and bias)
    # instead of RMSNorm. Encoders have both whatever these say.
    linear_biases: bool = False
    layer_norm: bool = False
    double_quantisation: bool = False  # NF4 only
    # Mixture of experts
    num_experts: int | None = None
    num_experts_per_token: int | None = None
    expert_ffn_size: int | None = None  # None: ffn_size
    num_shared_experts: int = 0
    shared_expert_ffn_size: int | None = None  # size of each shared expert; None: expert_ffn_size
    first_dense_layers: int = 0  # leading layers with a dense FFN (DeepSeek first_k_dense_replace)
    # Multi-head latent attention (DeepSeek)
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None  # None: head_dim
    v_head_dim: int | None = None  # None: head_dim
    # Attention span
    sliding_window: int | None = None
    sliding_window_layers: int | None = None  # layers using the window; None: all layers
    max_context_tokens: int | None = None
    # Hybrid attention: layers whose mixer is linear attention (Qwen3-Next's Gated DeltaNet) keep a fixed recurrent
    # state per session instead of a KV cache. State per layer: value heads × key dim × value dim, plus the causal
    # convolution's last (kernel − 1) inputs of the q, k, v channels.
    linear_attention_layers: int = 0
    linear_num_key_heads: int | None = None  # None: linear_num_value_heads
    linear_num_value_heads: int | None = None
    linear_key_head_dim: int | None = None
    linear_value_head_dim: int | None = None
    linear_conv_kernel_dim: int | None = None  # None: no convolution state
    # Learned position embeddings (BERT, GPT-2, OPT), and the encoders' token types and pooler
    position_embeddings: int = 0
    token_type_vocab_size: int = 0
    pooler: bool = False
    # Media pipelines: the models loaded beside the denoiser (whose parameters are `params`)
    pipeline_parts: tuple[PipelinePart, ...] = ()

    def __post_init__(self) -> None:
        try:
            architecture = Architecture(self.architecture)
        except ValueError:
            raise shape_error(
                "architecture",
                gettext_noop("Unknown architecture %(value)r; use one of %(choices)s."),
                value=self.architecture,
                choices=", ".join(a.value for a in Architecture),
            ) from None
        object.__setattr__(self, "architecture", architecture)
        object.__setattr__(self, "precision", normalise_precision(self.precision))
        if self.gated_ffn is None:
            object.__setattr__(self, "gated_ffn", architecture is not Architecture.ENCODER)
        for name, maximum in SHAPE_LIMITS.items():
            value = getattr(self, name)
            if value is None:
                continue
            minimum = 0 if name in ZERO_ALLOWED_FIELDS else 1
            check_int(name, value, minimum=minimum, maximum=maximum)
        object.__setattr__(self, "pipeline_parts", normalise_pipeline_parts(self.pipeline_parts))
        for name in (
            "tied_embeddings",
            "gated_ffn",
            "qkv_bias",
            "linear_biases",
            "layer_norm",
            "double_quantisation",
            "pooler",
        ):
            if not isinstance(getattr(self, name), bool):
                raise shape_error(
                    name, gettext_noop("Must be true or false, got %(value)r."), value=getattr(self, name)
                )
        self._check_attention()
        self._check_experts()
        self._check_latent_attention()
        self._check_layers()
        self._check_stated_params()

    # -- validation --------------------------------------------------------------------------------------------------

    def _check_attention(self) -> None:
        heads, hidden = self.num_attention_heads, self.hidden_size
        if self.num_kv_heads is not None:
            if heads is None:
                raise shape_error("num_attention_heads", gettext_noop("Needed when KV heads are given."))
            if self.num_kv_heads > heads or heads % self.num_kv_heads:
                raise shape_error(
                    "num_kv_heads",
                    gettext_noop("KV heads (%(kv)s) must divide the attention heads (%(heads)s)."),
                    kv=self.num_kv_heads,
                    heads=heads,
                )
        if heads is None or hidden is None:
            return
        if self.head_dim is None:
            if hidden % heads:
                raise shape_error(
                    "head_dim",
                    gettext_noop(
                        "Hidden size %(hidden)s is not divisible by %(heads)s heads; "
                        "state the head dim from the config."
                    ),
                    hidden=hidden,
                    heads=heads,
                )
            return
        # Several models use a head dim other than hidden/heads (Gemma: 16 × 256 for hidden 3072), but heads × head
        # dim stays within a small factor of the hidden size.
        projected = heads * self.head_dim
        if projected * 4 < hidden or projected > hidden * 4:
            raise shape_error(
                "head_dim",
                gettext_noop(
                    "Head dim %(head_dim)s is inconsistent: %(heads)s heads × %(head_dim)s = %(projected)s, "
                    "more than 4× away from the hidden size %(hidden)s."
                ),
                head_dim=self.head_dim,
                heads=heads,
                projected=projected,
                hidden=hidden,
            )

    def _check_experts(self) -> None:
        has_experts = self.num_experts is not None or self.num_experts_per_token is not None
        if self.architecture is Architecture.MOE:
            experts = require(self.num_experts, "num_experts", gettext_noop("a mixture-of-experts model"))
            if experts < 2:
                raise shape_error("num_experts", gettext_noop("A mixture of experts needs at least 2 experts."))
            per_token = require(
                self.num_experts_per_token, "num_experts_per_token", gettext_noop("a mixture-of-experts model")
            )
            if per_token > experts:
                raise shape_error(
                    "num_experts_per_token",
                    gettext_noop("%(per_token)s experts per token exceeds the %(experts)s experts."),
                    per_token=per_token,
                    experts=experts,
                )
        elif has_experts or self.num_shared_experts:
            raise shape_error("architecture", gettext_noop("Experts are given, so the architecture must be moe."))

    def _check_latent_attention(self) -> None:
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            missing = "qk_rope_head_dim" if self.qk_rope_head_dim is None else "kv_lora_rank"
            raise shape_error(
                missing, gettext_noop("Latent attention (MLA) needs both kv_lora_rank and qk_rope_head_dim.")
            )

    def _check_layers(self) -> None:
        layers = self.num_layers
        for name in ("first_dense_layers", "sliding_window_layers", "linear_attention_layers"):
            value = getattr(self, name)
            if value and layers is not None and value > layers:
                raise shape_error(
                    name,
                    gettext_noop("%(value)s exceeds the %(layers)s layers."),
                    value=value,
                    layers=layers,
                )
        if self.sliding_window_layers is not None and self.sliding_window is None:
            raise shape_error("sliding_window", gettext_noop("Needed when sliding-window layers are given."))
        if self.linear_attention_layers:
            for name in ("linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim"):
                require(getattr(self, name), name, gettext_noop("linear-attention layers"))
            window_layers = self.sliding_window_layers or 0
            if layers is not None and self.linear_attention_layers + window_layers > layers:
                raise shape_error(
                    "linear_attention_layers",
                    gettext_noop(
                        "%(linear)s linear-attention and %(window)s sliding-window layers exceed the %(layers)s "
                        "layers."
                    ),
                    linear=self.linear_attention_layers,
                    window=window_layers,
                    layers=layers,
                )

    def _check_stated_params(self) -> None:
        if self.params is not None and self.active_params is not None and self.active_params > self.params:
            raise shape_error("active_params", gettext_noop("Active parameters cannot exceed the total parameters."))
        if self.params is None or not self.has_layer_shape:
            return
        computed = parameter_count(self).total
        if not computed / STATED_PARAMS_MAX_RATIO <= self.params <= computed * STATED_PARAMS_MAX_RATIO:
            raise shape_error(
                "params",
                gettext_noop(
                    "Stated %(stated)s parameters, but the shape gives %(computed)s "
                    "(more than 2× apart); check the unit."
                ),
                stated=f"{self.params:,}",
                computed=f"{computed:,}",
            )

    # -- derived values ----------------------------------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        return self.architecture is Architecture.MOE

    @property
    def is_latent_attention(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def has_layer_shape(self) -> bool:
        """True when the parameter count can be computed from the shape."""
        needed = (self.num_layers, self.hidden_size, self.num_attention_heads, self.vocab_size)
        ffn = (self.expert_ffn_size or self.ffn_size) if self.is_moe else self.ffn_size
        derivable = self.architecture not in (Architecture.DIFFUSION, Architecture.OTHER)
        return derivable and None not in needed and bool(ffn)

    @property
    def kv_heads(self) -> int | None:
        return self.num_kv_heads if self.num_kv_heads is not None else self.num_attention_heads

    @property
    def resolved_head_dim(self) -> int | None:
        if self.head_dim is not None:
            return self.head_dim
        if self.hidden_size is None or self.num_attention_heads is None:
            return None
        return self.hidden_size // self.num_attention_heads

    @property
    def attention_layer_count(self) -> int:
        """Layers with softmax attention (full or windowed), the ones that keep a KV cache."""
        return (self.num_layers or 0) - self.linear_attention_layers

    @property
    def window_layer_count(self) -> int:
        if self.sliding_window is None:
            return 0
        return self.attention_layer_count if self.sliding_window_layers is None else self.sliding_window_layers

    @property
    def linear_state_elements_per_layer(self) -> int:
        """Recurrent state of one linear-attention layer for one session, in elements: value heads × key dim × value
        dim, plus the convolution state (2·key heads·key dim + value heads·value dim channels × (kernel − 1)). The
        shapes vLLM allocates (MambaStateShapeCalculator.gated_delta_net_state_shape)."""
        if not self.linear_attention_layers:
            return 0
        value_heads = self.linear_num_value_heads or 0
        key_heads = self.linear_num_key_heads or value_heads
        key_dim, value_dim = self.linear_key_head_dim or 0, self.linear_value_head_dim or 0
        recurrent = value_heads * key_dim * value_dim
        conv_channels = 2 * key_heads * key_dim + value_heads * value_dim
        conv = conv_channels * max((self.linear_conv_kernel_dim or 1) - 1, 0)
        return recurrent + conv

    @property
    def pipeline_part_params(self) -> int:
        return sum(part.params for part in self.pipeline_parts)


def check_tensor_parallel(shape: ModelShape, t: int) -> None:
    """ShapeError unless `t` tensor-parallel ranks can split the attention heads and the KV heads."""
    heads = shape.num_attention_heads
    if heads is not None and heads % t:
        raise shape_error(
            "tensor_parallel",
            gettext_noop("Tensor-parallel degree %(t)s must divide the %(heads)s attention heads."),
            t=t,
            heads=heads,
        )
    n_kv = shape.kv_heads
    if n_kv is not None and not shape.is_latent_attention and n_kv % t and t % n_kv:
        raise shape_error(
            "tensor_parallel",
            gettext_noop("Tensor-parallel degree %(t)s and the %(kv)s KV heads must divide one another."),
            t=t,
            kv=n_kv,
        )


# --------------------------------------------------------------------------------------------------------------------
# Parameter count
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterTerm:
    """One part of the parameter count (a count of parameters, not bytes)."""

    name: str
    count: int
    formula: str
    inputs: Mapping[str, InputValue] = field(default_factory=dict)


@dataclass(frozen=True)
class ParameterCount:
    """Total and active (per token) parameters; `unquantised` counts the ones quantisers keep in 16-bit
    (embeddings, output head, norms, routers)."""

    total: int
    active: int
    unquantised: int
    terms: tuple[ParameterTerm, ...]


def _attention_parameters_per_layer(shape: ModelShape) -> tuple[int, str, dict[str, InputValue]]:
    h, a = shape.hidden_size, shape.num_attention_heads
    assert h is not None and a is not None  # guaranteed by has_layer_shape
    d = shape.resolved_head_dim or 0
    if shape.is_latent_attention:
        rank, rope = shape.kv_lora_rank or 0, shape.qk_rope_head_dim or 0
        nope = shape.qk_nope_head_dim or d
        v = shape.v_head_dim or d
        q_rank = shape.q_lora_rank
        if q_rank is None:
            query = h * a * (nope + rope)
            query_formula = "h·a·(d_nope + d_rope)"
        else:
            query = h * q_rank + q_rank + q_rank * a * (nope + rope)
            query_formula = "h·r_q + r_q + r_q·a·(d_nope + d_rope)"
        key_value = h * (rank + rope) + rank + rank * a * (nope + v)
        output = a * v * h
        formula = f"{query_formula} + h·(r_kv + d_rope) + r_kv + r_kv·a·(d_nope + d_v) + a·d_v·h"
        inputs = {"h": h, "a": a, "r_kv": rank, "d_rope": rope, "d_nope": nope, "d_v": v}
        if q_rank is not None:
            inputs["r_q"] = q_rank
        return query + key_value + output, formula, inputs
    n_kv = shape.kv_heads or a
    count = h * a * d + 2 * h * n_kv * d + a * d * h
    formula = "h·a·d + 2·h·n_kv·d + a·d·h"
    if _all_biases(shape):
        count += a * d + 2 * n_kv * d + h
        formula += " + a·d + 2·n_kv·d + h (biases)"
    elif shape.qkv_bias:
        count += a * d + 2 * n_kv * d
        formula += " + a·d + 2·n_kv·d (q/k/v biases)"
    return count, formula, {"h": h, "a": a, "n_kv": n_kv, "d": d}


def _all_biases(shape: ModelShape) -> bool:
    """Biases on every attention and FFN projection: encoders, and decoders built like GPT-2 / OPT."""
    return shape.architecture is Architecture.ENCODER or shape.linear_biases


def _linear_attention_parameters_per_layer(shape: ModelShape) -> tuple[int, str, dict[str, InputValue]]:
    """A Gated DeltaNet layer (Qwen3-Next, transformers' Qwen3NextGatedDeltaNet): in_proj_qkvz h·(2·k + 2·v),
    in_proj_ba h·2·n_v, depthwise conv (2·k + v)·K without bias, dt_bias and A_log (n_v each), the gated norm d_v,
    out_proj v·h; k = n_k·d_k, v = n_v·d_v."""
    h = shape.hidden_size or 0
    n_v = shape.linear_num_value_heads or 0
    n_k = shape.linear_num_key_heads or n_v
    d_k, d_v = shape.linear_key_head_dim or 0, shape.linear_value_head_dim or 0
    kernel = shape.linear_conv_kernel_dim or 0
    k, v = n_k * d_k, n_v * d_v
    count = h * (2 * k + 2 * v) + h * 2 * n_v + (2 * k + v) * kernel + 2 * n_v + d_v + v * h
    formula = "h·(2k + 2v) + 2h·n_v + (2k + v)·K + 2n_v + d_v + v·h, k = n_k·d_k, v = n_v·d_v"
    return count, formula, {"h": h, "n_k": n_k, "n_v": n_v, "d_k": d_k, "d_v": d_v, "K": kernel}


def _ffn_parameters(shape: ModelShape, ffn: int) -> int:
    h = shape.hidden_size or 0
    matrices = 3 if shape.gated_ffn else 2
    count = matrices * h * ffn
    if _all_biases(shape):
        count += ffn + h
    return count


def parameter_count(shape: ModelShape) -> ParameterCount:
    """Parameters computed from the layer shape: embeddings, untied output head, attention (GQA or MLA), FFN
    (gated: 3·h·f), MoE experts and routers, norms. ShapeError names the first missing field."""
    for name in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size"):
        require(getattr(shape, name), name, gettext_noop("the parameter count"))
    if shape.architecture in (Architecture.DIFFUSION, Architecture.OTHER):
        raise shape_error(
            "params",
            gettext_noop("The parameter count of a %(architecture)s model cannot be derived from the shape; state it."),
            architecture=shape.architecture.value,
        )
    encoder = shape.architecture is Architecture.ENCODER
    layers, h, vocab = shape.num_layers or 0, shape.hidden_size or 0, shape.vocab_size or 0
    terms: list[ParameterTerm] = []

    embedding = vocab * h
    embedding_formula = "V·h"
    embedding_inputs: dict[str, InputValue] = {"V": vocab, "h": h}
    if encoder:
        embedding += (shape.position_embeddings + shape.token_type_vocab_size) * h
        embedding_formula = "(V + positions + token types)·h"
        embedding_inputs.update({"positions": shape.position_embeddings, "token types": shape.token_type_vocab_size})
    elif shape.position_embeddings:  # learned positions of GPT-2 / OPT decoders
        embedding += shape.position_embeddings * h
        embedding_formula = "(V + positions)·h"
        embedding_inputs["positions"] = shape.position_embeddings
    terms.append(ParameterTerm("embedding", embedding, embedding_formula, embedding_inputs))
    head = 0 if (shape.tied_embeddings or encoder) else vocab * h
    if head:
        terms.append(ParameterTerm("output_head", head, "V·h (untied)", {"V": vocab, "h": h}))

    attention_per_layer, attention_formula, attention_inputs = _attention_parameters_per_layer(shape)
    attention_layers = shape.attention_layer_count
    attention = attention_layers * attention_per_layer
    if shape.linear_attention_layers:
        terms.append(
            ParameterTerm(
                "attention",
                attention,
                f"L_attn·({attention_formula})",
                {"L_attn": attention_layers, **attention_inputs},
            )
        )
        linear_per_layer, linear_formula, linear_inputs = _linear_attention_parameters_per_layer(shape)
        linear = shape.linear_attention_layers * linear_per_layer
        terms.append(
            ParameterTerm(
                "linear_attention",
                linear,
                f"L_linear·({linear_formula})",
                {"L_linear": shape.linear_attention_layers, **linear_inputs},
            )
        )
        attention += linear
    else:
        terms.append(
            ParameterTerm("attention", attention, f"L·({attention_formula})", {"L": layers, **attention_inputs})
        )

    matrices = 3 if shape.gated_ffn else 2
    dense_layers = layers if not shape.is_moe else min(shape.first_dense_layers, layers)
    moe_layers = layers - dense_layers
    ffn_total = 0
    if dense_layers:
        ffn = require(shape.ffn_size, "ffn_size", gettext_noop("the parameter count"))
        ffn_total = dense_layers * _ffn_parameters(shape, ffn)
        terms.append(
            ParameterTerm(
                "ffn",
                ffn_total,
                f"L_dense·{matrices}·h·f" + (" + biases" if _all_biases(shape) else ""),
                {"L_dense": dense_layers, "h": h, "f": ffn},
            )
        )
    inactive = 0
    router = 0
    if moe_layers:
        experts, per_token = shape.num_experts or 0, shape.num_experts_per_token or 0
        expert_ffn = require(shape.expert_ffn_size or shape.ffn_size, "expert_ffn_size", gettext_noop("MoE layers"))
        shared_ffn = shape.shared_expert_ffn_size or expert_ffn
        per_expert = matrices * h * expert_ffn
        routed = moe_layers * experts * per_expert
        shared = moe_layers * shape.num_shared_experts * matrices * h * shared_ffn
        router = moe_layers * h * experts
        inactive = moe_layers * (experts - per_token) * per_expert
        terms.append(
            ParameterTerm(
                "experts",
                routed + shared,
                f"L_moe·(E·{matrices}·h·f_e + S·{matrices}·h·f_s)",
                {
                    "L_moe": moe_layers,
                    "E": experts,
                    "h": h,
                    "f_e": expert_ffn,
                    "S": shape.num_shared_experts,
                    "f_s": shared_ffn,
                },
            )
        )
        terms.append(ParameterTerm("router", router, "L_moe·h·E", {"L_moe": moe_layers, "h": h, "E": experts}))
        ffn_total += routed + shared

    if encoder or shape.layer_norm:
        # LayerNorm (weight + bias) twice per layer, plus the embedding norm (encoders) or the final norm (decoders)
        norms = layers * 2 * 2 * h + 2 * h
        norm_formula = "L·2·2h + 2h (LayerNorm weight and bias)"
    else:
        norms = layers * 2 * h + h  # RMSNorm before attention and FFN, plus the final norm
        norm_formula = "L·2h + h (RMSNorm)"
    terms.append(ParameterTerm("norms", norms, norm_formula, {"L": layers, "h": h}))
    pooler = h * h + h if shape.pooler else 0
    if pooler:
        terms.append(ParameterTerm("pooler", pooler, "h·h + h", {"h": h}))

    total = embedding + head + attention + ffn_total + router + norms + pooler
    return ParameterCount(
        total=total,
        active=total - inactive,
        unquantised=embedding + head + norms + router,
        terms=tuple(terms),
    )


def effective_parameters(shape: ModelShape) -> tuple[int, int, str]:
    """(P, P kept in 16-bit when quantised, where P came from): the stated count wins; else the computed one."""
    computed = parameter_count(shape) if shape.has_layer_shape else None
    unquantised = computed.unquantised if computed else 0
    if shape.params is not None:
        return shape.params, min(unquantised, shape.params), "stated"
    if computed is None:
        raise shape_error("params", gettext_noop("State the parameter count or the full layer shape."))
    return computed.total, unquantised, "computed from the shape"
