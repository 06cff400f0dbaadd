"""Memory-fit estimator: the bytes a model needs on each GPU to serve or train it, term by term with formulas.

Pure Python (no Django, no ORM) so it can be tested and reused on its own. Symbols follow DESIGN.md: P parameters,
L layers, h hidden size, a attention heads, n_kv KV heads, d head dim, f FFN size, V vocabulary, s sequence length,
b micro-batch, c context tokens, t tensor-parallel degree, N data-parallel GPUs. Sizes are bytes unless a name says
otherwise (`_gib` = 2**30 bytes, `_mib` = 2**20 bytes, `_gb` = 10**9 bytes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any, TypeVar

BYTES_PER_GIB = 2**30
BYTES_PER_MIB = 2**20
BYTES_PER_GB = 10**9


def gettext_noop(message: str) -> str:
    """Mark a message for `makemessages` without importing Django; the web layer translates `ShapeError.template`."""
    return message


# --------------------------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------------------------


class ShapeError(ValueError):
    """Invalid estimator input. `field` names the input at fault; `template` % `params` rebuilds `message`."""

    def __init__(self, field: str, message: str, *, template: str | None = None, params: Mapping | None = None):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.template = message if template is None else template
        self.params = dict(params or {})


def _error(field_name: str, template: str, **params: Any) -> ShapeError:
    message = template % params if params else template
    return ShapeError(field_name, message, template=template, params=params)


# --------------------------------------------------------------------------------------------------------------------
# Vocabulary: architectures, precisions
# --------------------------------------------------------------------------------------------------------------------


class Architecture(StrEnum):
    DENSE = "dense"
    MOE = "moe"
    ENCODER = "encoder"
    DIFFUSION = "diffusion"
    OTHER = "other"


class Precision(StrEnum):
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    NF4 = "nf4"


PRECISION_ALIASES: dict[str, Precision] = {
    "float32": Precision.FP32,
    "float": Precision.FP32,
    "bfloat16": Precision.BF16,
    "float16": Precision.FP16,
    "half": Precision.FP16,
    "float8": Precision.FP8,
    "float8_e4m3fn": Precision.FP8,
    "float8_e5m2": Precision.FP8,
    "fp8_e4m3": Precision.FP8,
    "fp8_e5m2": Precision.FP8,
}

SIXTEEN_BIT_OR_WIDER = frozenset({Precision.FP32, Precision.BF16, Precision.FP16})
QUANTISED_PRECISIONS = frozenset({Precision.FP8, Precision.INT8, Precision.INT4, Precision.NF4})
KV_CACHE_PRECISIONS = frozenset({Precision.FP32, Precision.BF16, Precision.FP16, Precision.FP8, Precision.INT8})

_STORAGE_BYTES: dict[Precision, Fraction] = {
    Precision.FP32: Fraction(4),
    Precision.BF16: Fraction(2),
    Precision.FP16: Fraction(2),
    Precision.FP8: Fraction(1),
    Precision.INT8: Fraction(1),
    Precision.INT4: Fraction(1, 2),
    Precision.NF4: Fraction(1, 2),
}

# INT4 (GPTQ/AWQ layout): one 16-bit scale and one 4-bit zero point per group of 128 weights.
INT4_GROUP_SIZE = 128
INT4_SCALE_BITS = 16
INT4_ZERO_POINT_BITS = 4
# NF4 (QLoRA, Dettmers et al. 2023): one fp32 absmax constant per block of 64 weights = 32/64 = 0.5 bit/param.
# Double quantisation stores those constants as 8-bit values with one fp32 constant per 256 of them:
# 8/64 + 32/(64·256) = 0.127 bit/param.
NF4_BLOCK_SIZE = 64
NF4_CONSTANT_BITS = 32
NF4_DOUBLE_QUANT_CONSTANT_BITS = 8
NF4_DOUBLE_QUANT_BLOCK_SIZE = 256
# Embeddings, the output head, norms and MoE routers stay in 16-bit when a checkpoint is quantised (GPTQ, AWQ,
# bitsandbytes and vLLM's FP8 all leave them unquantised).
UNQUANTISED_BYTES_PER_PARAMETER = 2


def normalise_precision(value: str | Precision, field_name: str = "precision") -> Precision:
    """Return the Precision for a name such as "bf16", "BF16" or "bfloat16"; ShapeError otherwise."""
    if isinstance(value, Precision):
        return value
    if not isinstance(value, str):
        raise _error(field_name, gettext_noop("Precision must be a name such as bf16, got %(value)r."), value=value)
    key = value.strip().lower()
    if key in PRECISION_ALIASES:
        return PRECISION_ALIASES[key]
    try:
        return Precision(key)
    except ValueError:
        raise _error(
            field_name,
            gettext_noop("Unknown precision %(value)r; use one of %(choices)s."),
            value=value,
            choices=", ".join(p.value for p in Precision),
        ) from None


def quantisation_constant_bits(precision: str | Precision, *, double_quantisation: bool = False) -> Fraction:
    """Bits per parameter spent on scale constants (zero for formats without per-group constants)."""
    precision = normalise_precision(precision)
    if precision is Precision.INT4:
        return Fraction(INT4_SCALE_BITS + INT4_ZERO_POINT_BITS, INT4_GROUP_SIZE)
    if precision is Precision.NF4:
        if double_quantisation:
            return Fraction(NF4_DOUBLE_QUANT_CONSTANT_BITS, NF4_BLOCK_SIZE) + Fraction(
                NF4_CONSTANT_BITS, NF4_BLOCK_SIZE * NF4_DOUBLE_QUANT_BLOCK_SIZE
            )
        return Fraction(NF4_CONSTANT_BITS, NF4_BLOCK_SIZE)
    return Fraction(0)


def bytes_per_parameter(precision: str | Precision, *, double_quantisation: bool = False) -> Fraction:
    """Storage bytes per parameter, scale constants included.

    FP32 4, BF16/FP16 2, FP8/INT8 1, INT4/NF4 0.5 + their scale constants."""
    precision = normalise_precision(precision)
    constants = quantisation_constant_bits(precision, double_quantisation=double_quantisation)
    return _STORAGE_BYTES[precision] + constants / 8


def _activation_bytes(precision: Precision) -> int:
    """Activations run in the compute dtype: fp32 models in fp32, everything else (incl. quantised) in 16-bit."""
    return 4 if precision is Precision.FP32 else 2


def _default_kv_precision(precision: Precision) -> Precision:
    return precision if precision in SIXTEEN_BIT_OR_WIDER else Precision.BF16


# --------------------------------------------------------------------------------------------------------------------
# Validation helpers and limits
# --------------------------------------------------------------------------------------------------------------------

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
}
# Counts that may be zero (everything else in SHAPE_LIMITS is at least 1).
ZERO_ALLOWED_FIELDS = frozenset(
    {
        "num_shared_experts",
        "first_dense_layers",
        "position_embeddings",
        "token_type_vocab_size",
        "sliding_window_layers",
    }
)
MAX_CONTEXT_TOKENS = 2**27
MAX_CONCURRENT_SESSIONS = 1_000_000
MAX_GPUS = 1_048_576
MAX_OVERHEAD_BYTES = 2**40
# Stated and computed parameter counts may differ (vision towers, biases the shape does not model), but not by
# more than this factor: beyond it the stated figure is almost surely in the wrong unit.
STATED_PARAMS_MAX_RATIO = 2


def _check_int(field_name: str, value: Any, *, minimum: int = 1, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(field_name, gettext_noop("Must be a whole number, got %(value)r."), value=value)
    if value < minimum:
        raise _error(
            field_name, gettext_noop("Must be at least %(minimum)s, got %(value)s."), minimum=minimum, value=value
        )
    if value > maximum:
        raise _error(
            field_name,
            gettext_noop("%(value)s is implausibly large (limit %(maximum)s); check the unit."),
            value=value,
            maximum=maximum,
        )
    return value


def _check_fraction(field_name: str, value: Any, *, maximum: float = 1.0) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction | Decimal):
        raise _error(field_name, gettext_noop("Must be a number, got %(value)r."), value=value)
    if not math.isfinite(value) or value < 0 or value > maximum:
        raise _error(
            field_name, gettext_noop("Must be between 0 and %(maximum)s, got %(value)s."), maximum=maximum, value=value
        )
    return Fraction(value)


def _require(value: int | None, field_name: str, purpose: str) -> int:
    if value is None:
        raise _error(field_name, gettext_noop("Needed for %(purpose)s."), purpose=purpose)
    return value


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
    # Encoders (BERT-like): learned positions, token types, pooler
    position_embeddings: int = 0
    token_type_vocab_size: int = 0
    pooler: bool = False

    def __post_init__(self) -> None:
        try:
            architecture = Architecture(self.architecture)
        except ValueError:
            raise _error(
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
            _check_int(name, value, minimum=minimum, maximum=maximum)
        for name in ("tied_embeddings", "gated_ffn", "qkv_bias", "double_quantisation", "pooler"):
            if not isinstance(getattr(self, name), bool):
                raise _error(name, gettext_noop("Must be true or false, got %(value)r."), value=getattr(self, name))
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
                raise _error("num_attention_heads", gettext_noop("Needed when KV heads are given."))
            if self.num_kv_heads > heads or heads % self.num_kv_heads:
                raise _error(
                    "num_kv_heads",
                    gettext_noop("KV heads (%(kv)s) must divide the attention heads (%(heads)s)."),
                    kv=self.num_kv_heads,
                    heads=heads,
                )
        if heads is None or hidden is None:
            return
        if self.head_dim is None:
            if hidden % heads:
                raise _error(
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
            raise _error(
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
            experts = _require(self.num_experts, "num_experts", gettext_noop("a mixture-of-experts model"))
            if experts < 2:
                raise _error("num_experts", gettext_noop("A mixture of experts needs at least 2 experts."))
            per_token = _require(
                self.num_experts_per_token, "num_experts_per_token", gettext_noop("a mixture-of-experts model")
            )
            if per_token > experts:
                raise _error(
                    "num_experts_per_token",
                    gettext_noop("%(per_token)s experts per token exceeds the %(experts)s experts."),
                    per_token=per_token,
                    experts=experts,
                )
        elif has_experts or self.num_shared_experts:
            raise _error("architecture", gettext_noop("Experts are given, so the architecture must be moe."))

    def _check_latent_attention(self) -> None:
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            missing = "qk_rope_head_dim" if self.qk_rope_head_dim is None else "kv_lora_rank"
            raise _error(missing, gettext_noop("Latent attention (MLA) needs both kv_lora_rank and qk_rope_head_dim."))

    def _check_layers(self) -> None:
        layers = self.num_layers
        for name in ("first_dense_layers", "sliding_window_layers"):
            value = getattr(self, name)
            if value and layers is not None and value > layers:
                raise _error(
                    name,
                    gettext_noop("%(value)s exceeds the %(layers)s layers."),
                    value=value,
                    layers=layers,
                )
        if self.sliding_window_layers is not None and self.sliding_window is None:
            raise _error("sliding_window", gettext_noop("Needed when sliding-window layers are given."))

    def _check_stated_params(self) -> None:
        if self.params is not None and self.active_params is not None and self.active_params > self.params:
            raise _error("active_params", gettext_noop("Active parameters cannot exceed the total parameters."))
        if self.params is None or not self.has_layer_shape:
            return
        computed = parameter_count(self).total
        if not computed / STATED_PARAMS_MAX_RATIO <= self.params <= computed * STATED_PARAMS_MAX_RATIO:
            raise _error(
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
    def window_layer_count(self) -> int:
        if self.sliding_window is None:
            return 0
        return (self.num_layers or 0) if self.sliding_window_layers is None else self.sliding_window_layers


# --------------------------------------------------------------------------------------------------------------------
# Terms and breakdowns
# --------------------------------------------------------------------------------------------------------------------

InputValue = int | float | str | bool


@dataclass(frozen=True)
class Term:
    """One addend of an estimate: its bytes, the formula that produced them and the values that went in."""

    name: str
    size_bytes: int
    formula: str
    inputs: Mapping[str, InputValue] = field(default_factory=dict)

    @property
    def size_gib(self) -> float:
        return self.size_bytes / BYTES_PER_GIB

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size_bytes": self.size_bytes,
            "size_gib": self.size_gib,
            "formula": self.formula,
            "inputs": dict(self.inputs),
        }


# English labels for the UI; the web layer translates them (strings marked for makemessages).
TERM_LABELS: dict[str, str] = {
    "weights": gettext_noop("Weights"),
    "frozen_base_weights": gettext_noop("Frozen base weights"),
    "gradients": gettext_noop("Gradients"),
    "optimizer_states": gettext_noop("Optimizer states (fp32 master, Adam moments)"),
    "kv_cache": gettext_noop("KV cache"),
    "activation_peak": gettext_noop("Activation peak"),
    "activations": gettext_noop("Activations (transformer layers)"),
    "output_activations": gettext_noop("Activations (output layer and loss)"),
    "cuda_runtime": gettext_noop("CUDA context and runtime"),
    "safety_margin": gettext_noop("Safety margin"),
}


class EstimateKind(StrEnum):
    INFERENCE = "inference"
    TRAINING = "training"


@dataclass(frozen=True)
class Breakdown:
    """The memory each GPU needs: a sum of terms. `gpus` is how many GPUs share the job (t, or t × N)."""

    kind: EstimateKind
    terms: tuple[Term, ...]
    gpus: int = 1

    @property
    def total_bytes(self) -> int:
        return sum(term.size_bytes for term in self.terms)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / BYTES_PER_GIB

    def term(self, name: str) -> Term:
        for term in self.terms:
            if term.name == name:
                return term
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "gpus": self.gpus,
            "total_bytes": self.total_bytes,
            "total_gib": self.total_gib,
            "terms": [term.as_dict() for term in self.terms],
        }


def _fmt(value: Fraction | int) -> InputValue:
    """A JSON-friendly input value: ints stay ints, fractions become floats."""
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else float(value)
    return value


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
    if shape.architecture is Architecture.ENCODER:
        count += a * d + 2 * n_kv * d + h
        formula += " + a·d + 2·n_kv·d + h (biases)"
    elif shape.qkv_bias:
        count += a * d + 2 * n_kv * d
        formula += " + a·d + 2·n_kv·d (q/k/v biases)"
    return count, formula, {"h": h, "a": a, "n_kv": n_kv, "d": d}


def _ffn_parameters(shape: ModelShape, ffn: int) -> int:
    h = shape.hidden_size or 0
    matrices = 3 if shape.gated_ffn else 2
    count = matrices * h * ffn
    if shape.architecture is Architecture.ENCODER:
        count += ffn + h
    return count


def parameter_count(shape: ModelShape) -> ParameterCount:
    """Parameters computed from the layer shape: embeddings, untied output head, attention (GQA or MLA), FFN
    (gated: 3·h·f), MoE experts and routers, norms. ShapeError names the first missing field."""
    for name in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size"):
        _require(getattr(shape, name), name, gettext_noop("the parameter count"))
    if shape.architecture in (Architecture.DIFFUSION, Architecture.OTHER):
        raise _error(
            "params",
            gettext_noop("The parameter count of a %(architecture)s model cannot be derived from the shape; state it."),
            architecture=shape.architecture.value,
        )
    encoder = shape.architecture is Architecture.ENCODER
    layers, h, vocab = shape.num_layers or 0, shape.hidden_size or 0, shape.vocab_size or 0
    terms: list[ParameterTerm] = []

    embedding = vocab * h
    embedding_formula = "V·h"
    if encoder:
        embedding += (shape.position_embeddings + shape.token_type_vocab_size) * h
        embedding_formula = "(V + positions + token types)·h"
    terms.append(
        ParameterTerm(
            "embedding",
            embedding,
            embedding_formula,
            {"V": vocab, "h": h, "positions": shape.position_embeddings, "token types": shape.token_type_vocab_size}
            if encoder
            else {"V": vocab, "h": h},
        )
    )
    head = 0 if (shape.tied_embeddings or encoder) else vocab * h
    if head:
        terms.append(ParameterTerm("output_head", head, "V·h (untied)", {"V": vocab, "h": h}))

    attention_per_layer, attention_formula, attention_inputs = _attention_parameters_per_layer(shape)
    attention = layers * attention_per_layer
    terms.append(ParameterTerm("attention", attention, f"L·({attention_formula})", {"L": layers, **attention_inputs}))

    matrices = 3 if shape.gated_ffn else 2
    dense_layers = layers if not shape.is_moe else min(shape.first_dense_layers, layers)
    moe_layers = layers - dense_layers
    ffn_total = 0
    if dense_layers:
        ffn = _require(shape.ffn_size, "ffn_size", gettext_noop("the parameter count"))
        ffn_total = dense_layers * _ffn_parameters(shape, ffn)
        terms.append(
            ParameterTerm(
                "ffn",
                ffn_total,
                f"L_dense·{matrices}·h·f" + (" + biases" if encoder else ""),
                {"L_dense": dense_layers, "h": h, "f": ffn},
            )
        )
    inactive = 0
    router = 0
    if moe_layers:
        experts, per_token = shape.num_experts or 0, shape.num_experts_per_token or 0
        expert_ffn = _require(shape.expert_ffn_size or shape.ffn_size, "expert_ffn_size", gettext_noop("MoE layers"))
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

    if encoder:
        norms = layers * 2 * 2 * h + 2 * h  # LayerNorm (weight + bias) twice per layer, plus the embedding norm
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
        raise _error("params", gettext_noop("State the parameter count or the full layer shape."))
    return computed.total, unquantised, "computed from the shape"


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
    n_kv = _require(shape.kv_heads, "num_kv_heads", gettext_noop("the KV cache"))
    d = _require(shape.resolved_head_dim, "head_dim", gettext_noop("the KV cache"))
    per_layer = 2 * n_kv * d * kv_bytes
    return (
        math.ceil(per_layer),
        f"2·n_kv·d·bytes({kv_precision})",
        {"n_kv": n_kv, "d": d, f"bytes({kv_precision})": _fmt(kv_bytes)},
    )


def kv_cache_bytes_per_token(shape: ModelShape, kv_precision: str | Precision | None = None) -> int:
    """2·L·n_kv·d·bytes (MLA: L·(kv_lora_rank + rope_dim)·bytes) for one token at full attention; 0 without a cache."""
    if not has_kv_cache(shape):
        return 0
    precision = _kv_precision(shape, kv_precision)
    layers = _require(shape.num_layers, "num_layers", gettext_noop("the KV cache"))
    per_layer, _, _ = _kv_bytes_per_layer_token(shape, precision)
    return layers * per_layer


def _kv_precision(shape: ModelShape, kv_precision: str | Precision | None) -> Precision:
    if kv_precision is None:
        return _default_kv_precision(shape.precision)  # type: ignore[arg-type]
    precision = normalise_precision(kv_precision, "kv_cache_precision")
    if precision not in KV_CACHE_PRECISIONS:
        raise _error(
            "kv_cache_precision",
            gettext_noop("A KV cache is stored as %(choices)s, not %(value)s."),
            choices=", ".join(sorted(p.value for p in KV_CACHE_PRECISIONS)),
            value=precision.value,
        )
    return precision


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
    precision = _kv_precision(shape, kv_precision)
    layers = _require(shape.num_layers, "num_layers", gettext_noop("the KV cache"))
    per_layer, _, _ = _kv_bytes_per_layer_token(shape, precision)
    window_layers = shape.window_layer_count
    full_tokens = _round_up(context_tokens, block_size_tokens)
    window_tokens = _round_up(min(context_tokens, shape.sliding_window or context_tokens), block_size_tokens)
    return per_layer * ((layers - window_layers) * full_tokens + window_layers * window_tokens)


# --------------------------------------------------------------------------------------------------------------------
# Inference
# --------------------------------------------------------------------------------------------------------------------

# CUDA context with PyTorch, cuBLAS and attention kernels loaded: a bare PyTorch process shows about 0.5–0.75 GiB on
# the device before the first tensor (PyTorch forum, "GPU memory floor"), more with many kernels: 1 GiB.
DEFAULT_CUDA_CONTEXT_BYTES = 1 * BYTES_PER_GIB
# Serving runtime beyond the torch allocator: vLLM's CUDA-graph pool (typically 0.5–1 GiB on logs of graph capture),
# NCCL and cuBLAS workspaces, allocator fragmentation: 1 GiB.
DEFAULT_INFERENCE_RUNTIME_BYTES = 1 * BYTES_PER_GIB
# Training runtime: NCCL buffers, cuBLAS workspaces and allocator fragmentation: 1 GiB.
DEFAULT_TRAINING_RUNTIME_BYTES = 1 * BYTES_PER_GIB
# vLLM's default gpu_memory_utilization is 0.9: it keeps 10 % of the device free; the estimate adds the same margin.
DEFAULT_SAFETY_MARGIN_FRACTION = 0.10
# vLLM V1 default max_num_batched_tokens for online serving on large GPUs (the chunked-prefill step size).
DEFAULT_MAX_BATCHED_TOKENS = 8192
# Logits are fp32 (4 bytes) and the sampler holds a second fp32 tensor of the same size (softmax probabilities).
LOGITS_BYTES_PER_ENTRY = 8


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
        _check_int("p95_context_tokens", self.p95_context_tokens, maximum=MAX_CONTEXT_TOKENS)
        _check_int("concurrent_sessions", self.concurrent_sessions, maximum=MAX_CONCURRENT_SESSIONS)
        _check_int("tensor_parallel", self.tensor_parallel, maximum=1024)
        _check_int("block_size_tokens", self.block_size_tokens, maximum=4096)
        _check_int("max_batched_tokens", self.max_batched_tokens, maximum=2**24)
        if self.activation_peak_bytes is not None:
            _check_int("activation_peak_bytes", self.activation_peak_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        _check_int("cuda_context_bytes", self.cuda_context_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        _check_int("runtime_overhead_bytes", self.runtime_overhead_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        _check_fraction("safety_margin_fraction", self.safety_margin_fraction)
        if self.kv_cache_precision is not None:
            object.__setattr__(
                self, "kv_cache_precision", normalise_precision(self.kv_cache_precision, "kv_cache_precision")
            )


def _check_tensor_parallel(shape: ModelShape, t: int) -> None:
    heads = shape.num_attention_heads
    if heads is not None and heads % t:
        raise _error(
            "tensor_parallel",
            gettext_noop("Tensor-parallel degree %(t)s must divide the %(heads)s attention heads."),
            t=t,
            heads=heads,
        )
    n_kv = shape.kv_heads
    if n_kv is not None and not shape.is_latent_attention and n_kv % t and t % n_kv:
        raise _error(
            "tensor_parallel",
            gettext_noop("Tensor-parallel degree %(t)s and the %(kv)s KV heads must divide one another."),
            t=t,
            kv=n_kv,
        )


def _kv_cache_term(shape: ModelShape, request: InferenceRequest) -> Term:
    if not has_kv_cache(shape):
        return Term(
            "kv_cache",
            0,
            "no KV cache (attention is recomputed every step)",
            {"architecture": shape.architecture.value},
        )
    precision = _kv_precision(shape, request.kv_cache_precision)
    layers = _require(shape.num_layers, "num_layers", gettext_noop("the KV cache"))
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


def _inference_activation_term(shape: ModelShape, request: InferenceRequest) -> Term:
    if request.activation_peak_bytes is not None:
        stated = request.activation_peak_bytes
        return Term("activation_peak", stated, "stated", {"bytes": stated})
    h = _require(shape.hidden_size, "hidden_size", gettext_noop("the activation peak (or state activation_peak_bytes)"))
    if shape.is_moe:
        expert_ffn = _require(shape.expert_ffn_size or shape.ffn_size, "expert_ffn_size", gettext_noop("MoE layers"))
        routed = (shape.num_experts_per_token or 0) * expert_ffn
        shared = shape.num_shared_experts * (shape.shared_expert_ffn_size or expert_ffn)
        ffn = max(routed + shared, (shape.ffn_size or 0) if shape.first_dense_layers else 0)
        where_ffn = ["f = max(k·f_e + S·f_s, f_dense)"]
    else:
        ffn = _require(shape.ffn_size, "ffn_size", gettext_noop("the activation peak (or state activation_peak_bytes)"))
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


def _runtime_term(cuda_context_bytes: int, runtime_overhead_bytes: int) -> Term:
    return Term(
        "cuda_runtime",
        cuda_context_bytes + runtime_overhead_bytes,
        "CUDA context + runtime (allocator, workspaces, CUDA graphs)",
        {"CUDA context": cuda_context_bytes, "runtime": runtime_overhead_bytes},
    )


def _with_safety_margin(terms: list[Term], fraction: float) -> tuple[Term, ...]:
    subtotal = sum(term.size_bytes for term in terms)
    margin = math.ceil(subtotal * Fraction(fraction))
    terms.append(Term("safety_margin", margin, "margin·subtotal", {"margin": fraction, "subtotal": subtotal}))
    return tuple(terms)


def estimate_inference(shape: ModelShape, request: InferenceRequest) -> Breakdown:
    """Per-GPU memory to serve: weights/t + KV(p95 context × sessions)/t + activation peak + CUDA context/runtime,
    then the safety margin."""
    t = request.tensor_parallel
    _check_tensor_parallel(shape, t)
    if shape.max_context_tokens is not None and request.p95_context_tokens > shape.max_context_tokens:
        raise _error(
            "p95_context_tokens",
            gettext_noop("%(context)s tokens exceed the model's context window of %(window)s tokens."),
            context=request.p95_context_tokens,
            window=shape.max_context_tokens,
        )
    terms = [
        weights_term(shape, divisor=t, divisor_formula="/t", divisor_inputs={"t": t}),
        _kv_cache_term(shape, request),
        _inference_activation_term(shape, request),
        _runtime_term(request.cuda_context_bytes, request.runtime_overhead_bytes),
    ]
    return Breakdown(EstimateKind.INFERENCE, _with_safety_margin(terms, request.safety_margin_fraction), gpus=t)


# --------------------------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------------------------


class TrainingMethod(StrEnum):
    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Recompute(StrEnum):
    NONE = "none"
    SELECTIVE = "selective"  # recompute attention scores only (drops the 5·a·s/h term)
    FULL = "full"  # keep only each layer's input


LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
# Mixed-precision Adam (ZeRO paper): 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master, momentum, variance).
WEIGHT_BYTES_PER_PARAMETER = 2
GRADIENT_BYTES_PER_PARAMETER = 2
OPTIMIZER_BYTES_PER_PARAMETER = 12


@dataclass(frozen=True)
class TrainingRequest:
    """How the model is trained: sequence, micro-batch, method, ZeRO stage over N data-parallel GPUs, TP degree t."""

    sequence_length: int
    micro_batch_size: int = 1
    method: TrainingMethod | str = TrainingMethod.FULL
    zero_stage: int = 0
    data_parallel_gpus: int = 1
    tensor_parallel: int = 1
    recompute: Recompute | str = Recompute.NONE
    flash_attention: bool = True
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = LORA_TARGETS
    double_quantisation: bool = True  # QLoRA
    cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES
    runtime_overhead_bytes: int = DEFAULT_TRAINING_RUNTIME_BYTES
    safety_margin_fraction: float = DEFAULT_SAFETY_MARGIN_FRACTION

    def __post_init__(self) -> None:
        _check_int("sequence_length", self.sequence_length, maximum=MAX_CONTEXT_TOKENS)
        _check_int("micro_batch_size", self.micro_batch_size, maximum=65_536)
        _check_int("zero_stage", self.zero_stage, minimum=0, maximum=3)
        _check_int("data_parallel_gpus", self.data_parallel_gpus, maximum=MAX_GPUS)
        _check_int("tensor_parallel", self.tensor_parallel, maximum=1024)
        _check_int("lora_rank", self.lora_rank, maximum=65_536)
        _check_int("cuda_context_bytes", self.cuda_context_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        _check_int("runtime_overhead_bytes", self.runtime_overhead_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        _check_fraction("safety_margin_fraction", self.safety_margin_fraction)
        for name, enum in (("method", TrainingMethod), ("recompute", Recompute)):
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                raise _error(
                    name,
                    gettext_noop("Unknown value %(value)r; use one of %(choices)s."),
                    value=getattr(self, name),
                    choices=", ".join(member.value for member in enum),
                ) from None
        targets = tuple(self.lora_targets)
        unknown = sorted(set(targets) - set(LORA_TARGETS))
        if unknown or not targets:
            raise _error(
                "lora_targets",
                gettext_noop("Adapt one or more of %(choices)s; got %(value)s."),
                choices=", ".join(LORA_TARGETS),
                value=", ".join(unknown) or "nothing",
            )
        object.__setattr__(self, "lora_targets", targets)

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.data_parallel_gpus


def model_state_terms(
    trainable_params: int, zero_stage: int, data_parallel_gpus: int, tensor_parallel: int = 1
) -> tuple[Term, ...]:
    """Mixed-precision Adam model states per GPU: 16·P without ZeRO; ZeRO-1 4P + 12P/N, ZeRO-2 2P + 14P/N,
    ZeRO-3 16P/N (P already split by t)."""
    _check_int("zero_stage", zero_stage, minimum=0, maximum=3)
    n, t = data_parallel_gpus, tensor_parallel
    inputs: dict[str, InputValue] = {"P": trainable_params, "N": n, "t": t, "ZeRO stage": zero_stage}

    def term(name: str, bytes_per_parameter_: int, sharded_from_stage: int) -> Term:
        sharded = zero_stage >= sharded_from_stage
        divisor = t * n if sharded else t
        formula = f"{bytes_per_parameter_}·P/(t·N)" if sharded else f"{bytes_per_parameter_}·P/t"
        return Term(name, math.ceil(Fraction(bytes_per_parameter_ * trainable_params, divisor)), formula, inputs)

    return (
        term("weights", WEIGHT_BYTES_PER_PARAMETER, 3),
        term("gradients", GRADIENT_BYTES_PER_PARAMETER, 2),
        term("optimizer_states", OPTIMIZER_BYTES_PER_PARAMETER, 1),
    )


def _lora_matrix_shapes(shape: ModelShape, ffn: int, targets: Iterable[str]) -> list[tuple[int, int]]:
    """(d_in, d_out) of the adapted matrices in one layer with FFN size `ffn` (one MLP)."""
    h = shape.hidden_size or 0
    a = shape.num_attention_heads or 0
    d = shape.resolved_head_dim or 0
    targets = set(targets)
    matrices: list[tuple[int, int]] = []
    if shape.is_latent_attention:
        rank, rope = shape.kv_lora_rank or 0, shape.qk_rope_head_dim or 0
        nope, v = shape.qk_nope_head_dim or d, shape.v_head_dim or d
        if "q" in targets:
            if shape.q_lora_rank is None:
                matrices.append((h, a * (nope + rope)))
            else:
                matrices += [(h, shape.q_lora_rank), (shape.q_lora_rank, a * (nope + rope))]
        if targets & {"k", "v"}:  # keys and values share the latent projections
            matrices += [(h, rank + rope), (rank, a * (nope + v))]
        if "o" in targets:
            matrices.append((a * v, h))
    else:
        n_kv = shape.kv_heads or a
        dims = {"q": (h, a * d), "k": (h, n_kv * d), "v": (h, n_kv * d), "o": (a * d, h)}
        matrices += [dims[name] for name in ("q", "k", "v", "o") if name in targets]
    mlp = {"up": (h, ffn), "down": (ffn, h)}
    if shape.gated_ffn:
        mlp["gate"] = (h, ffn)
    matrices += [dims_ for name, dims_ in mlp.items() if name in targets]
    return matrices


def lora_trainable_parameters(shape: ModelShape, rank: int, targets: Iterable[str] = LORA_TARGETS) -> int:
    """Σ r·(d_in + d_out) over the adapted matrices of every layer (MoE: each routed expert and the shared MLP)."""
    for name in ("num_layers", "hidden_size", "num_attention_heads"):
        _require(getattr(shape, name), name, gettext_noop("LoRA adapters"))
    targets = tuple(targets)
    layers = shape.num_layers or 0
    attention_only = [name for name in targets if name in {"q", "k", "v", "o"}]
    mlp_only = [name for name in targets if name in {"gate", "up", "down"}]

    def adapter_parameters(matrices: list[tuple[int, int]]) -> int:
        return sum(rank * (d_in + d_out) for d_in, d_out in matrices)

    total = layers * adapter_parameters(_lora_matrix_shapes(shape, 0, attention_only))
    if not mlp_only:
        return total
    dense_layers = layers if not shape.is_moe else min(shape.first_dense_layers, layers)
    if dense_layers:
        ffn = _require(shape.ffn_size, "ffn_size", gettext_noop("LoRA adapters"))
        total += dense_layers * adapter_parameters(_lora_matrix_shapes(shape, ffn, mlp_only))
    moe_layers = layers - dense_layers
    if moe_layers:
        expert_ffn = _require(shape.expert_ffn_size or shape.ffn_size, "expert_ffn_size", gettext_noop("MoE layers"))
        per_layer = (shape.num_experts or 0) * adapter_parameters(_lora_matrix_shapes(shape, expert_ffn, mlp_only))
        if shape.num_shared_experts:
            shared_ffn = shape.num_shared_experts * (shape.shared_expert_ffn_size or expert_ffn)
            per_layer += adapter_parameters(_lora_matrix_shapes(shape, shared_ffn, mlp_only))
        total += moe_layers * per_layer
    return total


def activation_bytes_per_layer(
    *,
    sequence_length: int,
    micro_batch_size: int,
    hidden_size: int,
    attention_heads: int,
    tensor_parallel: int = 1,
    recompute: Recompute | str = Recompute.NONE,
    flash_attention: bool = False,
) -> tuple[int, str]:
    """Activations one transformer layer stores for backward, 16-bit (Korthikanti et al. 2022):
    s·b·h·(34 + 5·a·s/h); with TP s·b·h·(10 + 24/t + 5·a·s/(h·t)); full recomputation 2·s·b·h. FlashAttention and
    selective recomputation drop the 5·a·s/h term."""
    s, b, h, a, t = sequence_length, micro_batch_size, hidden_size, attention_heads, tensor_parallel
    recompute = Recompute(recompute)
    if recompute is Recompute.FULL:
        return 2 * s * b * h, "2·s·b·h"
    keeps_scores = not flash_attention and recompute is Recompute.NONE
    if t == 1:
        factor = Fraction(34) + (Fraction(5 * a * s, h) if keeps_scores else 0)
        formula = "s·b·h·(34 + 5·a·s/h)" if keeps_scores else "s·b·h·34"
    else:
        factor = 10 + Fraction(24, t) + (Fraction(5 * a * s, h * t) if keeps_scores else 0)
        formula = "s·b·h·(10 + 24/t + 5·a·s/(h·t))" if keeps_scores else "s·b·h·(10 + 24/t)"
    return math.ceil(s * b * h * factor), formula


def output_activation_bytes(
    *, sequence_length: int, micro_batch_size: int, hidden_size: int, vocab_size: int, tensor_parallel: int = 1
) -> int:
    """Output layer and loss: 4·s·b·h·(1 + V/h), split across TP ranks."""
    s, b, h, v, t = sequence_length, micro_batch_size, hidden_size, vocab_size, tensor_parallel
    return math.ceil(Fraction(4 * s * b * h, t) * (1 + Fraction(v, h)))


def _activation_terms(shape: ModelShape, request: TrainingRequest) -> list[Term]:
    purpose = gettext_noop("training activations")
    layers = _require(shape.num_layers, "num_layers", purpose)
    h = _require(shape.hidden_size, "hidden_size", purpose)
    a = _require(shape.num_attention_heads, "num_attention_heads", purpose)
    s, b, t = request.sequence_length, request.micro_batch_size, request.tensor_parallel
    recompute = Recompute(request.recompute)
    per_layer, layer_formula = activation_bytes_per_layer(
        sequence_length=s,
        micro_batch_size=b,
        hidden_size=h,
        attention_heads=a,
        tensor_parallel=t,
        recompute=recompute,
        flash_attention=request.flash_attention,
    )
    inputs: dict[str, InputValue] = {
        "L": layers,
        "s": s,
        "b": b,
        "h": h,
        "a": a,
        "t": t,
        "recompute": recompute.value,
        "FlashAttention": request.flash_attention,
    }
    total = layers * per_layer
    formula = f"L·{layer_formula}"
    if recompute is Recompute.FULL:
        # Backward recomputes one layer at a time: that layer's full activations are live on top of the inputs.
        working, working_formula = activation_bytes_per_layer(
            sequence_length=s,
            micro_batch_size=b,
            hidden_size=h,
            attention_heads=a,
            tensor_parallel=t,
            recompute=Recompute.NONE,
            flash_attention=request.flash_attention,
        )
        total += working
        formula += f" + {working_formula} (one layer recomputed in backward)"
    terms = [Term("activations", total, formula, inputs)]
    if shape.vocab_size is not None and shape.architecture is not Architecture.DIFFUSION:
        terms.append(
            Term(
                "output_activations",
                output_activation_bytes(
                    sequence_length=s, micro_batch_size=b, hidden_size=h, vocab_size=shape.vocab_size, tensor_parallel=t
                ),
                "4·s·b·h·(1 + V/h)/t",
                {"s": s, "b": b, "h": h, "V": shape.vocab_size, "t": t},
            )
        )
    return terms


def estimate_training(shape: ModelShape, request: TrainingRequest) -> Breakdown:
    """Per-GPU memory to train: model states (mixed-precision Adam, ZeRO-sharded) or frozen base + LoRA adapters,
    activations, CUDA context/runtime, then the safety margin."""
    t, n, stage = request.tensor_parallel, request.data_parallel_gpus, request.zero_stage
    _check_tensor_parallel(shape, t)
    method = TrainingMethod(request.method)
    terms: list[Term] = []
    if method is TrainingMethod.FULL:
        params, _, _ = effective_parameters(shape)
        terms += model_state_terms(params, stage, n, t)
    else:
        base_precision = Precision.NF4 if method is TrainingMethod.QLORA else shape.precision
        divisor = t * n if stage == 3 else t
        terms.append(
            weights_term(
                shape,
                name="frozen_base_weights",
                precision=base_precision,  # type: ignore[arg-type]
                double_quantisation=request.double_quantisation if method is TrainingMethod.QLORA else None,
                divisor=divisor,
                divisor_formula="/(t·N)" if stage == 3 else "/t",
                divisor_inputs={"t": t, "N": n},
            )
        )
        adapters = lora_trainable_parameters(shape, request.lora_rank, request.lora_targets)
        for term in model_state_terms(adapters, stage, n, t):
            terms.append(
                replace(
                    term,
                    formula=f"{term.formula}, P = LoRA Σ r·(d_in + d_out)",
                    inputs={**term.inputs, "r": request.lora_rank, "targets": ",".join(request.lora_targets)},
                )
            )
    terms += _activation_terms(shape, request)
    terms.append(_runtime_term(request.cuda_context_bytes, request.runtime_overhead_bytes))
    return Breakdown(EstimateKind.TRAINING, _with_safety_margin(terms, request.safety_margin_fraction), gpus=t * n)


# --------------------------------------------------------------------------------------------------------------------
# Capacity and fit
# --------------------------------------------------------------------------------------------------------------------


class CapacitySource(StrEnum):
    MEASURED = "measured"  # NVML total reported by an agent on the node
    CATALOG = "catalog"  # usable MiB recorded in the GPU catalog
    DATASHEET = "datasheet"  # datasheet GB × 10⁹ (conservative)


@dataclass(frozen=True)
class Capacity:
    """Memory one GPU really offers, with where the figure came from."""

    total_bytes: int
    source: CapacitySource
    source_label: str

    def __post_init__(self) -> None:
        _check_int("capacity", self.total_bytes, maximum=2**50)
        object.__setattr__(self, "source", CapacitySource(self.source))

    @property
    def total_gib(self) -> float:
        return self.total_bytes / BYTES_PER_GIB


def choose_capacity(
    *,
    measured_total_mib: int | None = None,
    catalog_usable_mib: int | None = None,
    datasheet_gb: int | float | str | Any = None,
) -> Capacity:
    """Pick the capacity per DESIGN: the agent's measured NVML total (MiB) > catalog usable MiB > datasheet GB × 10⁹.
    Datasheet HBM "GB" is never converted to GiB and called the capacity."""
    if measured_total_mib is not None:
        mib = _check_int("measured_total_mib", measured_total_mib, maximum=2**30)
        return Capacity(mib * BYTES_PER_MIB, CapacitySource.MEASURED, f"measured by agent (NVML): {mib:,} MiB")
    if catalog_usable_mib is not None:
        mib = _check_int("catalog_usable_mib", catalog_usable_mib, maximum=2**30)
        return Capacity(mib * BYTES_PER_MIB, CapacitySource.CATALOG, f"catalog usable memory: {mib:,} MiB")
    if datasheet_gb is not None:
        try:
            gigabytes = Fraction(str(datasheet_gb))
        except (ValueError, ZeroDivisionError):
            raise _error("datasheet_gb", gettext_noop("Must be a number, got %(value)r."), value=datasheet_gb) from None
        if gigabytes <= 0 or gigabytes > 10**6:
            raise _error(
                "datasheet_gb", gettext_noop("Must be between 0 and 1,000,000 GB, got %(value)s."), value=datasheet_gb
            )
        return Capacity(
            math.floor(gigabytes * BYTES_PER_GB), CapacitySource.DATASHEET, f"datasheet: {datasheet_gb} GB × 10⁹ bytes"
        )
    raise _error("capacity", gettext_noop("No memory figure: give a measured, catalog or datasheet capacity."))


class FitStatus(StrEnum):
    FITS = "fits"
    TIGHT = "tight"
    DOES_NOT_FIT = "does_not_fit"


# "Tight": it fits, but with less than this share of the device left over.
DEFAULT_TIGHT_HEADROOM_FRACTION = 0.10


@dataclass(frozen=True)
class FitResult:
    status: FitStatus
    required_bytes: int
    capacity: Capacity
    gpus: int
    headroom_bytes: int  # negative when it does not fit

    @property
    def headroom_gib(self) -> float:
        return self.headroom_bytes / BYTES_PER_GIB

    @property
    def headroom_percent(self) -> float:
        return 100 * self.headroom_bytes / self.capacity.total_bytes

    @property
    def fits(self) -> bool:
        return self.status is not FitStatus.DOES_NOT_FIT


def fit(
    breakdown: Breakdown, capacity: Capacity, *, tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION
) -> FitResult:
    """Compare the per-GPU requirement with one GPU's capacity: fits, tight (headroom below the fraction), or not."""
    threshold = _check_fraction("tight_headroom_fraction", tight_headroom_fraction)
    headroom = capacity.total_bytes - breakdown.total_bytes
    if headroom < 0:
        status = FitStatus.DOES_NOT_FIT
    elif headroom < threshold * capacity.total_bytes:
        status = FitStatus.TIGHT
    else:
        status = FitStatus.FITS
    return FitResult(status, breakdown.total_bytes, capacity, breakdown.gpus, headroom)


# --------------------------------------------------------------------------------------------------------------------
# Inverse answers
# --------------------------------------------------------------------------------------------------------------------


def largest_concurrency(
    shape: ModelShape, request: InferenceRequest, capacity: Capacity, *, upper_bound: int = MAX_CONCURRENT_SESSIONS
) -> int | None:
    """Most concurrent sessions at the request's p95 context that fit the capacity (0: not even one fits;
    None: memory does not limit concurrency up to `upper_bound`)."""

    def fits_with(sessions: int) -> bool:
        candidate = replace(request, concurrent_sessions=sessions)
        return estimate_inference(shape, candidate).total_bytes <= capacity.total_bytes

    if not fits_with(1):
        return 0
    if fits_with(upper_bound):
        return None
    low, high = 1, 2  # invariant: fits_with(low) and (high == upper_bound or unknown); grow until high fails
    while high < upper_bound and fits_with(high):
        low, high = high, min(high * 2, upper_bound)
    while high - low > 1:  # fits_with(low) is true, fits_with(high) is false
        middle = (low + high) // 2
        if fits_with(middle):
            low = middle
        else:
            high = middle
    return low


DEFAULT_TENSOR_PARALLEL_DEGREES = (1, 2, 4, 8, 16, 32, 64)


def fewest_gpus_inference(
    shape: ModelShape,
    request: InferenceRequest,
    capacity: Capacity,
    degrees: Iterable[int] = DEFAULT_TENSOR_PARALLEL_DEGREES,
) -> tuple[int, Breakdown] | None:
    """Smallest valid tensor-parallel degree whose per-GPU estimate fits; None if none of `degrees` does."""
    for degree in sorted(degrees):
        try:
            breakdown = estimate_inference(shape, replace(request, tensor_parallel=degree))
        except ShapeError as error:
            if error.field == "tensor_parallel":
                continue  # the degree does not divide the heads: not a valid layout
            raise
        if breakdown.total_bytes <= capacity.total_bytes:
            return degree, breakdown
    return None


def fewest_gpus_training(
    shape: ModelShape, request: TrainingRequest, capacity: Capacity, *, max_data_parallel_gpus: int = 4096
) -> tuple[int, Breakdown] | None:
    """Fewest data-parallel GPUs N (at the request's ZeRO stage and TP degree) whose per-GPU estimate fits.
    The per-GPU need never grows with N, so a bisection finds it; None if even `max_data_parallel_gpus` fails."""

    def estimate(n: int) -> Breakdown:
        return estimate_training(shape, replace(request, data_parallel_gpus=n))

    def fits_with(n: int) -> bool:
        return estimate(n).total_bytes <= capacity.total_bytes

    if not fits_with(max_data_parallel_gpus):
        return None
    low, high = 0, max_data_parallel_gpus  # fits_with(high); low = 0 stands for "nothing smaller known to fit"
    while high - low > 1:
        middle = (low + high) // 2
        if fits_with(middle):
            high = middle
        else:
            low = middle
    return high, estimate(high)


K = TypeVar("K")


def smallest_fitting_device(
    breakdown: Breakdown,
    devices: Mapping[K, Capacity],
    *,
    tight_headroom_fraction: float = DEFAULT_TIGHT_HEADROOM_FRACTION,
) -> tuple[K, FitResult] | None:
    """The device with the least memory that still fits (tight counts as fitting); None when none fits."""
    fitting = [
        (key, result)
        for key, capacity in devices.items()
        if (result := fit(breakdown, capacity, tight_headroom_fraction=tight_headroom_fraction)).fits
    ]
    if not fitting:
        return None
    return min(fitting, key=lambda item: item[1].capacity.total_bytes)


# --------------------------------------------------------------------------------------------------------------------
# Hugging Face config.json
# --------------------------------------------------------------------------------------------------------------------

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
# Model types whose configs default tie_word_embeddings to true when the key is absent.
TIED_BY_DEFAULT_TYPES = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text"}) | ENCODER_MODEL_TYPES
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
}


def _config_int(config: Mapping[str, Any], field_name: str, keys: Iterable[str] | None = None) -> int | None:
    for key in keys if keys is not None else _CONFIG_KEYS[field_name]:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _error(
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
        raise _error(
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
            raise _error("precision", gettext_noop("config.json quantization_config must be an object."))
        method = str(quantisation.get("quant_method", "")).lower()
        if method in {"awq", "gptq"}:
            bits = quantisation.get("bits", quantisation.get("w_bit"))
            if bits == 4:
                return Precision.INT4, False
            if bits == 8:
                return Precision.INT8, False
            raise _error(
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
        raise _error(
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


def parse_hf_config(config: Mapping[str, Any]) -> ModelShape:
    """Read a Hugging Face config.json (already decoded) into a ModelShape; ShapeError names the field at fault."""
    if not isinstance(config, Mapping):
        raise _error(
            "config", gettext_noop("config.json must be a JSON object, got %(kind)s."), kind=type(config).__name__
        )
    if "_class_name" in config and "_diffusers_version" in config:
        raise _error("config", gettext_noop("Diffusers configs are not read; state the parameter count instead."))
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
            raise _error(
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
        raise _error("ffn_size", gettext_noop("config.json has no %(key)s."), key=" / ".join(_CONFIG_KEYS["ffn_size"]))

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

    precision, double_quantisation = _config_precision(merged)
    encoder = architecture is Architecture.ENCODER
    position_embeddings = values["max_context_tokens"] if model_type in ENCODERS_WITH_LEARNED_POSITIONS else 0
    token_types = _config_int(merged, "token_type_vocab_size", ("type_vocab_size",)) if encoder else None
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
    )


def parse_hf_config_json(text: str | bytes) -> ModelShape:
    """Decode config.json text and read it; malformed JSON gets a ShapeError with the line and column."""
    try:
        config = json.loads(text)
    except UnicodeDecodeError:
        raise _error("config", gettext_noop("config.json is not UTF-8 text.")) from None
    except json.JSONDecodeError as error:
        raise _error(
            "config",
            gettext_noop("config.json is not valid JSON: %(reason)s at line %(line)s, column %(column)s."),
            reason=error.msg,
            line=error.lineno,
            column=error.colno,
        ) from None
    return parse_hf_config(config)

