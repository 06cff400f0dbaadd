"""The model shape a proxy is built from, read from a memory-fit job spec. No torch here: the job process reads and
checks the spec before any probe process imports torch.

The fields are those of `ModelShape` in the server's estimator (`apps/workloads/memory/shapes.py`), with the same
names and defaults, and `parameter_breakdown` mirrors its parameter formulas term by term, so a proxy holds exactly
the parameters the prediction counted:

- embedding V·h (encoders: (V + positions + token types)·h); an untied output head V·h (decoders only);
- attention per layer h·a·d + 2·h·n_kv·d + a·d·h, plus biases a·d + 2·n_kv·d + h on encoders and a·d + 2·n_kv·d with
  `qkv_bias`; latent attention (MLA, DeepSeek-V2/V3: `kv_lora_rank` r_kv and `qk_rope_head_dim` d_rope given) instead
  h·a·(d_nope + d_rope) for the queries (with `q_lora_rank` r_q: h·r_q + r_q + r_q·a·(d_nope + d_rope), the r_q being
  the latent query norm), h·(r_kv + d_rope) + r_kv + r_kv·a·(d_nope + d_v) for keys and values (the r_kv being the
  latent norm) and a·d_v·h for the output, with d_nope and d_v defaulting to the head dim;
- FFN per dense layer 3·h·f gated or 2·h·f (encoders add the biases f + h); MoE layers E routed experts of
  3·h·f_e each, S shared experts of f_s each (built as one MLP of width S·f_s: the same count), a router h·E;
- norms L·2h + h (RMSNorm) for decoders, L·2·2h + 2h (LayerNorm weight and bias) for encoders; a pooler h·h + h.

Diffusion transformers have no parameter formula in the estimator (it takes the stated count): their proxy is a DiT
(Peebles & Xie 2023: patch embedding, timestep and class embedders, adaLN-Zero blocks, final layer) whose parameters
are counted here; when the spec states `params`, the rest up to that figure is one conditioning table, so the proxy
still holds exactly the stated count (`diffusion_fill`).

The KV cache per token and layer is 2·n_kv·d elements, or with latent attention r_kv + d_rope (the normalised latent and
the shared rope key, which is all MLA keeps: keys and values are projected back out of the latent), as the estimator
counts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

ARCHITECTURES = ("dense", "moe", "encoder", "diffusion")
PRECISION_ALIASES = {
    "float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
}
# Storage bytes per parameter without scale constants (as the estimator's _STORAGE_BYTES).
STORAGE_BYTES = {
    "fp32": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2), "fp8": Fraction(1), "int8": Fraction(1),
    "int4": Fraction(1, 2), "nf4": Fraction(1, 2),
}
SIXTEEN_BIT_OR_WIDER = frozenset({"fp32", "bf16", "fp16"})
KV_CACHE_PRECISIONS = frozenset({"fp32", "bf16", "fp16", "fp8", "int8"})
VLLM_BLOCK_SIZE_TOKENS = 16
MLA_FIELDS = ("kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "qk_nope_head_dim", "v_head_dim")


class ProxyShapeError(ValueError):
    """The spec's model shape cannot be built as a proxy; `field` names the input at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def normalise_precision(value: Any, field: str = "precision") -> str:
    if not isinstance(value, str):
        raise ProxyShapeError(field, f"precision must be a name such as bf16, got {value!r}")
    key = value.strip().lower()
    key = PRECISION_ALIASES.get(key, key)
    if key not in STORAGE_BYTES:
        raise ProxyShapeError(field, f"unknown precision {value!r}; use one of {', '.join(STORAGE_BYTES)}")
    return key


def compute_precision(precision: str) -> str:
    """Activations (and dequantised weights) run in fp32 for fp32 models, fp16 for fp16, else bf16."""
    return precision if precision in {"fp32", "fp16"} else "bf16"


def default_kv_precision(precision: str) -> str:
    return precision if precision in SIXTEEN_BIT_OR_WIDER else "bf16"


def round_up(tokens: int, block: int) -> int:
    return -(-tokens // block) * block


@dataclass(frozen=True)
class ProxyShape:
    architecture: str = "dense"
    precision: str = "bf16"
    params: int | None = None
    active_params: int | None = None
    num_layers: int | None = None
    hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    ffn_size: int | None = None
    vocab_size: int | None = None
    tied_embeddings: bool = False
    gated_ffn: bool | None = None
    qkv_bias: bool = False
    double_quantisation: bool = False
    num_experts: int | None = None
    num_experts_per_token: int | None = None
    expert_ffn_size: int | None = None
    num_shared_experts: int = 0
    shared_expert_ffn_size: int | None = None
    first_dense_layers: int = 0
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int | None = None
    max_context_tokens: int | None = None
    position_embeddings: int = 0
    token_type_vocab_size: int = 0
    pooler: bool = False

    @classmethod
    def from_spec(cls, data: Mapping[str, Any]) -> ProxyShape:
        """Read the spec's `model` object; fields the proxy does not use are ignored (the server may send more)."""
        if not isinstance(data, Mapping):
            raise ProxyShapeError("model", f"the model shape must be a JSON object, got {type(data).__name__}")
        known = {item.name for item in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        shape = cls(**values)
        shape.validate()
        return shape

    def as_dict(self) -> dict[str, Any]:
        return {item.name: getattr(self, item.name) for item in fields(self)}

    # -- checks ------------------------------------------------------------------------------------------------------
    def validate(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ProxyShapeError(
                "architecture",
                f"no proxy for architecture {self.architecture!r}; proxies exist for {', '.join(ARCHITECTURES)}",
            )
        object.__setattr__(self, "precision", normalise_precision(self.precision))
        if self.gated_ffn is None:  # SwiGLU decoders; BERT-style encoders and DiT blocks use a plain GELU MLP
            object.__setattr__(self, "gated_ffn", self.architecture in ("dense", "moe"))
        for item in fields(self):
            value = getattr(self, item.name)
            is_count = item.type in ("int | None", "int") and value is not None
            if is_count and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ProxyShapeError(item.name, f"must be a whole number ≥ 0, got {value!r}")
        for name in ("tied_embeddings", "gated_ffn", "qkv_bias", "double_quantisation", "pooler"):
            if not isinstance(getattr(self, name), bool):
                raise ProxyShapeError(name, f"must be true or false, got {getattr(self, name)!r}")
        for name in ("num_layers", "hidden_size", "num_attention_heads"):
            if not getattr(self, name):
                raise ProxyShapeError(name, "a proxy needs the layer shape (num_layers, hidden_size, heads)")
        if self.architecture != "diffusion" and not self.vocab_size:
            raise ProxyShapeError("vocab_size", "a decoder or encoder proxy needs the vocabulary size")
        if not self.ffn_size and not (self.architecture == "moe" and self.expert_ffn_size):
            raise ProxyShapeError("ffn_size", "a proxy needs the FFN (intermediate) size")
        self._check_latent_attention()
        heads, kv = self.num_attention_heads, self.kv_heads
        if kv > heads or heads % kv:
            raise ProxyShapeError("num_kv_heads", f"KV heads ({kv}) must divide the attention heads ({heads})")
        if self.head_dim is None and self.hidden_size % heads:
            raise ProxyShapeError("head_dim", "hidden size not divisible by the heads; state the head dim")
        if self.architecture == "moe":
            if not self.num_experts or not self.num_experts_per_token:
                raise ProxyShapeError("num_experts", "a mixture of experts needs num_experts and num_experts_per_token")
            if self.num_experts_per_token > self.num_experts:
                raise ProxyShapeError("num_experts_per_token", "more experts per token than experts")
        elif self.num_experts or self.num_experts_per_token or self.num_shared_experts:
            raise ProxyShapeError("architecture", "experts are given, so the architecture must be moe")
        if self.sliding_window_layers and self.sliding_window is None:
            raise ProxyShapeError("sliding_window", "needed when sliding-window layers are given")

    def _check_latent_attention(self) -> None:
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            missing = "qk_rope_head_dim" if self.qk_rope_head_dim is None else "kv_lora_rank"
            raise ProxyShapeError(missing, "latent attention (MLA) needs both kv_lora_rank and qk_rope_head_dim")
        for name in MLA_FIELDS:
            if getattr(self, name) == 0:
                raise ProxyShapeError(name, "must be at least 1 (leave it out when the model does not have it)")
        # Without kv_lora_rank the other latent fields are ignored, as the estimator ignores them.
        if self.is_latent_attention and not self.has_kv_cache:
            raise ProxyShapeError(
                "kv_lora_rank", f"latent attention (MLA) is a decoder's attention, not a {self.architecture}'s"
            )

    # -- derived values ----------------------------------------------------------------------------------------------
    @property
    def is_latent_attention(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def latent_dims(self) -> tuple[int, int, int, int]:
        """MLA (r_kv, d_rope, d_nope, d_v), d_nope and d_v defaulting to the head dim (as the estimator)."""
        d = self.resolved_head_dim
        return self.kv_lora_rank or 0, self.qk_rope_head_dim or 0, self.qk_nope_head_dim or d, self.v_head_dim or d

    @property
    def kv_cache_width(self) -> int:
        """Cached elements per token and layer for one of the `kv_cache_heads`: d (keys and values apart), or MLA
        r_kv + d_rope (one latent row that serves as key, its first r_kv elements as value)."""
        if self.is_latent_attention:
            rank, rope, _, _ = self.latent_dims
            return rank + rope
        return self.resolved_head_dim

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads if self.num_kv_heads is not None else self.num_attention_heads

    @property
    def resolved_head_dim(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden_size // self.num_attention_heads

    @property
    def is_encoder(self) -> bool:
        return self.architecture == "encoder"

    @property
    def is_moe(self) -> bool:
        return self.architecture == "moe"

    @property
    def has_kv_cache(self) -> bool:
        return self.architecture in ("dense", "moe")

    @property
    def dense_layer_count(self) -> int:
        return self.num_layers if not self.is_moe else min(self.first_dense_layers, self.num_layers)

    @property
    def expert_ffn(self) -> int:
        return self.expert_ffn_size or self.ffn_size or 0

    @property
    def shared_ffn_width(self) -> int:
        """The shared experts as one MLP: S · f_s (0 without shared experts)."""
        return self.num_shared_experts * (self.shared_expert_ffn_size or self.expert_ffn)

    @property
    def window_layer_count(self) -> int:
        if self.sliding_window is None:
            return 0
        return self.num_layers if self.sliding_window_layers is None else self.sliding_window_layers

    def layer_uses_window(self, index: int) -> bool:
        """The last `window_layer_count` layers keep a windowed cache (which ones does not change the bytes)."""
        return index >= self.num_layers - self.window_layer_count

    def kv_bytes_per_token_layer(self, kv_precision: str) -> int:
        """2·n_kv·d·bytes, or with latent attention (r_kv + d_rope)·bytes (as the estimator's
        _kv_bytes_per_layer_token)."""
        if self.is_latent_attention:
            return self.kv_cache_width * int(STORAGE_BYTES[kv_precision])
        return 2 * self.kv_heads * self.resolved_head_dim * int(STORAGE_BYTES[kv_precision])

    def kv_cache_tokens(self, layer: int, context_tokens: int, block: int = VLLM_BLOCK_SIZE_TOKENS) -> int:
        """Tokens one request's cache holds in `layer`: the context rounded up to whole blocks (window layers: at most
        the window, rounded the same way), as the estimator's kv_cache_bytes_per_request."""
        if self.layer_uses_window(layer):
            return round_up(min(context_tokens, self.sliding_window or context_tokens), block)
        return round_up(context_tokens, block)

    def kv_cache_bytes_per_request(self, context_tokens: int, kv_precision: str,
                                   block: int = VLLM_BLOCK_SIZE_TOKENS) -> int:
        if not self.has_kv_cache:
            return 0
        per_token = self.kv_bytes_per_token_layer(kv_precision)
        return sum(per_token * self.kv_cache_tokens(layer, context_tokens, block) for layer in range(self.num_layers))


@dataclass(frozen=True)
class DiffusionGeometry:
    """What a DiT needs beyond the transformer shape (defaults: DiT-XL/2 on 256×256 images, 4 latent channels)."""

    patch_size: int = 2
    in_channels: int = 4
    out_channels: int | None = None  # None: in_channels (ε or velocity); DiT with learned σ has 2·in_channels
    num_classes: int = 1000  # class embedding rows num_classes + 1 (the null class of classifier-free guidance)
    frequency_embedding_size: int = 256

    @classmethod
    def from_spec(cls, data: Mapping[str, Any] | None) -> DiffusionGeometry:
        data = dict(data or {})
        known = {item.name for item in fields(cls)}
        geometry = cls(**{key: value for key, value in data.items() if key in known})
        for item in fields(geometry):
            value = getattr(geometry, item.name)
            if value is None:
                continue
            minimum = 0 if item.name == "num_classes" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ProxyShapeError(f"diffusion.{item.name}", f"must be a whole number ≥ {minimum}, got {value!r}")
        return geometry

    @property
    def resolved_out_channels(self) -> int:
        return self.out_channels or self.in_channels

    @property
    def patch_dim(self) -> int:
        return self.patch_size * self.patch_size * self.in_channels

    @property
    def output_patch_dim(self) -> int:
        return self.patch_size * self.patch_size * self.resolved_out_channels

    def as_dict(self) -> dict[str, Any]:
        return {item.name: getattr(self, item.name) for item in fields(self)}


def _latent_attention_parameters(shape: ProxyShape) -> int:
    h, a = shape.hidden_size, shape.num_attention_heads
    rank, rope, nope, v = shape.latent_dims
    q_rank = shape.q_lora_rank
    query = h * a * (nope + rope) if q_rank is None else h * q_rank + q_rank + q_rank * a * (nope + rope)
    return query + h * (rank + rope) + rank + rank * a * (nope + v) + a * v * h


def _attention_parameters(shape: ProxyShape) -> int:
    if shape.is_latent_attention:
        return _latent_attention_parameters(shape)
    h, a, n_kv, d = shape.hidden_size, shape.num_attention_heads, shape.kv_heads, shape.resolved_head_dim
    count = h * a * d + 2 * h * n_kv * d + a * d * h
    if shape.is_encoder:
        count += a * d + 2 * n_kv * d + h
    elif shape.qkv_bias:
        count += a * d + 2 * n_kv * d
    return count


def _ffn_parameters(shape: ProxyShape, width: int) -> int:
    matrices = 3 if shape.gated_ffn else 2
    count = matrices * shape.hidden_size * width
    if shape.is_encoder:
        count += width + shape.hidden_size
    return count


def parameter_breakdown(shape: ProxyShape, *, diffusion: DiffusionGeometry | None = None,
                        tokens: int | None = None) -> dict[str, int]:
    """The proxy's parameters by part (the estimator's terms for decoders and encoders; DiT parts for diffusion)."""
    if shape.architecture == "diffusion":
        return dit_parameter_breakdown(shape, diffusion or DiffusionGeometry(), tokens or 256)
    layers, h, vocab = shape.num_layers, shape.hidden_size, shape.vocab_size
    parts: dict[str, int] = {}
    embedding = vocab * h
    if shape.is_encoder:
        embedding += (shape.position_embeddings + shape.token_type_vocab_size) * h
    parts["embedding"] = embedding
    parts["output_head"] = 0 if (shape.tied_embeddings or shape.is_encoder) else vocab * h
    parts["attention"] = layers * _attention_parameters(shape)
    parts["ffn"] = shape.dense_layer_count * _ffn_parameters(shape, shape.ffn_size or 0)
    moe_layers = layers - shape.dense_layer_count
    matrices = 3 if shape.gated_ffn else 2
    parts["experts"] = moe_layers * (
        (shape.num_experts or 0) * matrices * h * shape.expert_ffn + matrices * h * shape.shared_ffn_width
    )
    parts["router"] = moe_layers * h * (shape.num_experts or 0)
    parts["norms"] = layers * 4 * h + 2 * h if shape.is_encoder else layers * 2 * h + h
    parts["pooler"] = h * h + h if shape.pooler else 0
    return parts


def dit_structure_breakdown(shape: ProxyShape, geometry: DiffusionGeometry, tokens: int) -> dict[str, int]:
    """DiT parts: patch embedding, fixed positional table (a frozen parameter in DiT), timestep MLP, class table,
    blocks (adaLN modulation 6h, attention with biases, MLP with biases; norms without affine), final layer."""
    h, layers, f = shape.hidden_size, shape.num_layers, shape.ffn_size or 0
    a, d = shape.num_attention_heads, shape.resolved_head_dim
    attention = h * a * d * 3 + 3 * a * d + a * d * h + h
    matrices = 3 if shape.gated_ffn else 2
    mlp = matrices * h * f + (matrices - 1) * f + h
    return {
        "patch_embedding": geometry.patch_dim * h + h,
        "position_table": tokens * h,
        "timestep_embedder": geometry.frequency_embedding_size * h + h + h * h + h,
        "class_embedding": (geometry.num_classes + 1) * h if geometry.num_classes else 0,
        "blocks": layers * (h * 6 * h + 6 * h + attention + mlp),
        "final_layer": h * 2 * h + 2 * h + h * geometry.output_patch_dim + geometry.output_patch_dim,
    }


def dit_parameter_breakdown(shape: ProxyShape, geometry: DiffusionGeometry, tokens: int) -> dict[str, int]:
    parts = dit_structure_breakdown(shape, geometry, tokens)
    structural = sum(parts.values())
    fill = 0
    if shape.params is not None:
        fill = shape.params - structural
        if fill < 0:
            raise ProxyShapeError(
                "params",
                f"the stated {shape.params:,} parameters are fewer than the {structural:,} of a DiT of this shape "
                f"at {tokens} tokens; check the shape or the stated count",
            )
    parts["conditioning_fill"] = fill
    return parts


def total_parameters(shape: ProxyShape, *, diffusion: DiffusionGeometry | None = None,
                     tokens: int | None = None) -> int:
    return sum(parameter_breakdown(shape, diffusion=diffusion, tokens=tokens).values())


def unquantised_parameters(shape: ProxyShape, *, diffusion: DiffusionGeometry | None = None,
                           tokens: int | None = None) -> int:
    """Parameters a quantised checkpoint keeps in 16-bit: embeddings, head, norms, routers (as the estimator)."""
    parts = parameter_breakdown(shape, diffusion=diffusion, tokens=tokens)
    if shape.architecture == "diffusion":
        return 0
    return parts["embedding"] + parts["output_head"] + parts["norms"] + parts["router"]


LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


def attention_matrices(shape: ProxyShape, targets: tuple[str, ...]) -> list[tuple[int, int]]:
    """(d_in, d_out) of one layer's attention matrices that LoRA `targets` adapt."""
    h, a, n_kv, d = shape.hidden_size, shape.num_attention_heads, shape.kv_heads, shape.resolved_head_dim
    if not shape.is_latent_attention:
        dims = {"q": (h, a * d), "k": (h, n_kv * d), "v": (h, n_kv * d), "o": (a * d, h)}
        return [dims[name] for name in ("q", "k", "v", "o") if name in targets]
    rank, rope, nope, v = shape.latent_dims
    matrices: list[tuple[int, int]] = []
    if "q" in targets:
        q_rank = shape.q_lora_rank
        matrices += [(h, a * (nope + rope))] if q_rank is None else [(h, q_rank), (q_rank, a * (nope + rope))]
    if "k" in targets or "v" in targets:
        matrices += [(h, rank + rope), (rank, a * (nope + v))]
    if "o" in targets:
        matrices.append((a * v, h))
    return matrices


def lora_parameters(shape: ProxyShape, rank: int, targets: tuple[str, ...] = LORA_TARGETS) -> int:
    """Σ r·(d_in + d_out) over the adapted matrices (the estimator's lora_trainable_parameters). With latent
    attention "q" adapts the query projection (both halves with q_lora_rank), "k" or "v" the two shared latent
    projections (h → r_kv + d_rope, r_kv → a·(d_nope + d_v)), "o" the output."""
    h = shape.hidden_size
    attention = sum(rank * (d_in + d_out) for d_in, d_out in attention_matrices(shape, targets))

    def mlp(width: int) -> int:
        names = {"up": (h, width), "down": (width, h)}
        if shape.gated_ffn:
            names["gate"] = (h, width)
        return sum(rank * sum(pair) for name, pair in names.items() if name in targets)

    total = shape.num_layers * attention
    total += shape.dense_layer_count * mlp(shape.ffn_size or 0)
    moe_layers = shape.num_layers - shape.dense_layer_count
    if moe_layers:
        per_layer = (shape.num_experts or 0) * mlp(shape.expert_ffn)
        if shape.num_shared_experts:
            per_layer += mlp(shape.shared_ffn_width)
        total += moe_layers * per_layer
    return total
