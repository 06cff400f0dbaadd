"""Proxy models: a decoder (dense, GQA, MoE; multi-head or latent attention), an encoder and a diffusion transformer
of a given shape, with random weights made on the device at the target precision, and the operations a memory probe
runs on them.

The layout follows the estimator's parameter formulas (see `shape.py`), so the proxy holds the parameters the
prediction counted. What the proxies leave out does not change memory in a way the estimator models: rotary position
embeddings (a transient the size of q and k), dropout, and real tokenisation. Grouped-query attention expands the keys
and values of one layer at a time for prefill and training (a transient, as eager implementations do) and uses the
grouped layout for decode, so the KV cache itself is never expanded. Latent attention (MLA) caches one latent row per
token and layer; prefill projects keys and values back out of it (a transient, as vLLM's prefill path does), decode
absorbs the up-projections into the query and the output (as vLLM and FlashMLA do), so decode reads the latent cache
as stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from dossier_agent.proxies.shape import DiffusionGeometry, ProxyShape
from dossier_agent.proxies.weights import INIT_STD, apply_weight, make_store, random_tensor

NORM_EPS = 1e-6


@dataclass
class BuildOptions:
    """How to build a proxy. `layer_storage` is the storage of the transformer layers' matrices (dense or a
    quantised format); embeddings, output head, norms and routers stay in the compute dtype (as quantisers keep
    them). `train_base`: the base weights get gradients (full training); LoRA adapters are added for `lora_targets`
    when `lora_rank` is set."""

    device: torch.device
    compute_dtype: torch.dtype
    layer_storage: str = "dense"
    double_quantisation: bool = False
    train_base: bool = False
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] = ()
    generator: torch.Generator | None = None
    build_adapters: bool = True  # False: build the base only, add the adapters later with add_adapters()

    def parameter(self, *shape: int, std: float = INIT_STD, trainable: bool | None = None) -> nn.Parameter:
        trainable = self.train_base if trainable is None else trainable
        return nn.Parameter(
            random_tensor(shape, device=self.device, dtype=self.compute_dtype, std=std, generator=self.generator),
            requires_grad=trainable,
        )

    def constant(self, *shape: int, value: float, trainable: bool | None = None) -> nn.Parameter:
        trainable = self.train_base if trainable is None else trainable
        tensor = torch.empty(shape, device=self.device, dtype=self.compute_dtype)
        if tensor.device.type != "meta":
            tensor.fill_(value)
        return nn.Parameter(tensor, requires_grad=trainable)


# ----------------------------------------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------------------------------------


class LoraAdapter(nn.Module):
    """ΔW = B·A·(α/r): A (r × d_in) random, B (d_out × r) zero, trainable (stacked per expert when `lead`)."""

    def __init__(self, options: BuildOptions, d_in: int, d_out: int, lead: tuple[int, ...]):
        super().__init__()
        rank = options.lora_rank or 0
        self.scale = 2.0  # α = 2r, the usual setting
        self.a = nn.Parameter(
            random_tensor((*lead, rank, d_in), device=options.device, dtype=options.compute_dtype,
                          std=1 / math.sqrt(d_in), generator=options.generator)
        )
        self.b = nn.Parameter(torch.zeros((*lead, d_out, rank), device=options.device, dtype=options.compute_dtype))

    def forward(self, x: torch.Tensor, index: int | None = None) -> torch.Tensor:
        a = self.a if index is None else self.a[index]
        b = self.b if index is None else self.b[index]
        return F.linear(F.linear(x, a), b) * self.scale


class Linear(nn.Module):
    def __init__(self, options: BuildOptions, d_in: int, d_out: int, *, bias: bool = False,
                 lora_name: str | tuple[str, ...] | None = None, experts: int | None = None):
        super().__init__()
        self.lead = (experts,) if experts else ()
        self.d_in, self.d_out = d_in, d_out
        self.store = make_store(
            (*self.lead, d_out, d_in), storage=options.layer_storage, device=options.device,
            compute_dtype=options.compute_dtype, trainable=options.train_base,
            double_quantisation=options.double_quantisation, generator=options.generator,
        )
        self.bias = None
        if bias:
            self.bias = nn.Parameter(torch.zeros((*self.lead, d_out), device=options.device,
                                                 dtype=options.compute_dtype), requires_grad=options.train_base)
        # The LoRA targets that adapt this matrix (MLA's shared latent projections answer to both "k" and "v").
        self.lora_names = (lora_name,) if isinstance(lora_name, str) else tuple(lora_name or ())
        self.lora: LoraAdapter | None = None
        if options.build_adapters:
            self.add_adapter(options)

    def add_adapter(self, options: BuildOptions) -> None:
        targeted = any(name in options.lora_targets for name in self.lora_names)
        if options.lora_rank and targeted and self.lora is None:
            self.lora = LoraAdapter(options, self.d_in, self.d_out, self.lead)

    def effective_weight(self) -> torch.Tensor:
        """The (out, in) matrix this layer applies, dequantised and with its adapter's B·A·(α/r) (no experts)."""
        weight = self.store.materialise()
        if self.lora is not None:
            weight = weight + (self.lora.b @ self.lora.a) * self.lora.scale
        return weight

    def forward(self, x: torch.Tensor, index: int | None = None) -> torch.Tensor:
        y = apply_weight(x, self.store, index)
        if self.bias is not None:
            y = y + (self.bias if index is None else self.bias[index])
        if self.lora is not None:
            y = y + self.lora(x, index)
        return y


class RMSNorm(nn.Module):
    def __init__(self, options: BuildOptions, size: int):
        super().__init__()
        self.weight = options.constant(size, value=1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + NORM_EPS)).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, options: BuildOptions, size: int):
        super().__init__()
        self.weight = options.constant(size, value=1.0)
        self.bias = options.constant(size, value=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, NORM_EPS)


class FeedForward(nn.Module):
    """Gated (SwiGLU: down(silu(gate(x))·up(x))) or plain (down(gelu(up(x)))); stacked per expert with `experts`."""

    def __init__(self, options: BuildOptions, hidden: int, width: int, *, gated: bool, bias: bool = False,
                 gate_bias: bool = False, experts: int | None = None):
        super().__init__()
        self.up = Linear(options, hidden, width, bias=bias, lora_name="up", experts=experts)
        self.gate = Linear(options, hidden, width, bias=gate_bias, lora_name="gate", experts=experts) if gated else None
        self.down = Linear(options, width, hidden, bias=bias, lora_name="down", experts=experts)

    def forward(self, x: torch.Tensor, index: int | None = None) -> torch.Tensor:
        up = self.up(x, index)
        hidden = F.silu(self.gate(x, index)) * up if self.gate is not None else F.gelu(up, approximate="tanh")
        return self.down(hidden, index)


class MixtureOfExperts(nn.Module):
    """Router (h × E, softmax, top-k renormalised), E routed experts, optional shared experts (one MLP of S·f_s)."""

    def __init__(self, options: BuildOptions, shape: ProxyShape):
        super().__init__()
        h = shape.hidden_size
        self.num_experts, self.top_k = shape.num_experts, shape.num_experts_per_token
        self.router = options.parameter(self.num_experts, h)
        self.experts = FeedForward(options, h, shape.expert_ffn, gated=shape.gated_ffn, experts=self.num_experts)
        self.shared = None
        if shape.shared_ffn_width:
            self.shared = FeedForward(options, h, shape.shared_ffn_width, gated=shape.gated_ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        scores = F.linear(flat, self.router).float().softmax(dim=-1)
        weights, chosen = scores.topk(self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        assignments = chosen.reshape(-1)
        order = assignments.argsort()
        counts = torch.bincount(assignments, minlength=self.num_experts).tolist()
        out = torch.zeros_like(flat)
        start = 0
        for expert, count in enumerate(counts):
            if count == 0:
                continue
            picked = order[start:start + count]
            start += count
            tokens = picked // self.top_k
            y = self.experts(flat[tokens], index=expert) * weights.reshape(-1)[picked].unsqueeze(-1)
            out = out.index_add(0, tokens, y)
        if self.shared is not None:
            out = out + self.shared(flat)
        return out.reshape(x.shape)


def expand_heads(tensor: torch.Tensor, groups: int) -> torch.Tensor:
    return tensor if groups == 1 else tensor.repeat_interleave(groups, dim=1)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """q (b, a, T, d); k, v (b, n_kv, S, d) with S ≥ T: causal attention aligned to the last key (lower right)."""
    groups = q.shape[1] // k.shape[1]
    k, v = expand_heads(k, groups), expand_heads(v, groups)
    if causal and q.shape[2] != k.shape[2]:
        from torch.nn.attention.bias import causal_lower_right

        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(q.shape[2], k.shape[2]))
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


@dataclass
class LayerCache:
    """One layer's KV cache for every request: (requests, n_kv, tokens, d), in the cache's storage dtype. Latent
    attention keeps one tensor (requests, 1, tokens, r_kv + d_rope) in `k` and no `v`: each row is the token's
    normalised latent and its shared rope key, read as the key of one KV head whose value is the first r_kv columns."""

    k: torch.Tensor
    v: torch.Tensor | None
    window: bool

    @property
    def capacity(self) -> int:
        return self.k.shape[2]

    @property
    def nbytes(self) -> int:
        tensors = (self.k,) if self.v is None else (self.k, self.v)
        return sum(tensor.numel() * tensor.element_size() for tensor in tensors)


@dataclass
class KVCache:
    layers: list[LayerCache] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(layer.nbytes for layer in self.layers)


class Attention(nn.Module):
    def __init__(self, options: BuildOptions, shape: ProxyShape, *, encoder: bool):
        super().__init__()
        h, a, n_kv, d = shape.hidden_size, shape.num_attention_heads, shape.kv_heads, shape.resolved_head_dim
        self.heads, self.kv_heads, self.head_dim = a, n_kv, d
        qkv_bias = encoder or shape.qkv_bias
        self.q = Linear(options, h, a * d, bias=qkv_bias, lora_name="q")
        self.k = Linear(options, h, n_kv * d, bias=qkv_bias, lora_name="k")
        self.v = Linear(options, h, n_kv * d, bias=qkv_bias, lora_name="v")
        self.o = Linear(options, a * d, h, bias=encoder, lora_name="o")

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        return q, k, v

    def _merge(self, out: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = out.shape
        return self.o(out.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))

    def forward(self, x: torch.Tensor, *, causal: bool) -> torch.Tensor:
        q, k, v = self._project(x)
        return self._merge(attend(q, k, v, causal=causal))

    def prefill(self, x: torch.Tensor, cache: LayerCache, rows: slice, start: int) -> torch.Tensor:
        """Tokens start … start+T of the `rows` requests: write their keys and values, attend causally."""
        q, k, v = self._project(x)
        t = x.shape[1]
        compute = q.dtype
        if cache.window:  # a ring of the last `capacity` tokens; keys: the ring's earlier tokens and this chunk
            keep = min(t, cache.capacity)
            if start:
                earlier = min(start, cache.capacity)
                k_all = torch.cat((cache.k[rows, :, :earlier].to(compute), k), dim=2)
                v_all = torch.cat((cache.v[rows, :, :earlier].to(compute), v), dim=2)
            else:
                k_all, v_all = k, v
            out = attend(q, k_all, v_all, causal=True)
            slots = torch.arange(start + t - keep, start + t, device=x.device) % cache.capacity
            cache.k[rows, :, slots] = k[:, :, t - keep:].to(cache.k.dtype)
            cache.v[rows, :, slots] = v[:, :, t - keep:].to(cache.v.dtype)
            return self._merge(out)
        cache.k[rows, :, start:start + t] = k.to(cache.k.dtype)
        cache.v[rows, :, start:start + t] = v.to(cache.v.dtype)
        keys = cache.k[rows, :, :start + t].to(compute)
        values = cache.v[rows, :, :start + t].to(compute)
        return self._merge(attend(q, keys, values, causal=True))

    def decode(self, x: torch.Tensor, cache: LayerCache, position: int) -> torch.Tensor:
        """One new token per request at `position`; queries grouped per KV head, so the cache is read as stored."""
        q, k, v = self._project(x)
        b = x.shape[0]
        slot = position % cache.capacity if cache.window else position
        cache.k[:, :, slot] = k[:, :, 0].to(cache.k.dtype)
        cache.v[:, :, slot] = v[:, :, 0].to(cache.v.dtype)
        valid = min(position + 1, cache.capacity)
        keys = cache.k[:, :, :valid].to(q.dtype)
        values = cache.v[:, :, :valid].to(q.dtype)
        grouped = q.reshape(b, self.kv_heads, self.heads // self.kv_heads, self.head_dim)
        out = F.scaled_dot_product_attention(grouped, keys, values)
        return self.o(out.reshape(b, 1, self.heads * self.head_dim))


class LatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434): queries h → a·(d_nope + d_rope), or through a
    normalised latent of r_q with q_lora_rank; keys and values share one down-projection h → r_kv + d_rope (the
    latent, normalised, and a rope key shared by all heads), the latent going up to a·(d_nope + d_v). The cache holds
    the r_kv + d_rope row per token; keys are [W_UK·latent, rope key], values W_UV·latent, scores scaled by
    1/√(d_nope + d_rope)."""

    def __init__(self, options: BuildOptions, shape: ProxyShape):
        super().__init__()
        h, a = shape.hidden_size, shape.num_attention_heads
        self.heads = a
        self.rank, self.rope, self.nope, self.value_dim = shape.latent_dims
        self.scale = 1 / math.sqrt(self.nope + self.rope)
        q_rank = shape.q_lora_rank
        self.q_down = Linear(options, h, q_rank, lora_name="q") if q_rank else None
        self.q_norm = RMSNorm(options, q_rank) if q_rank else None
        self.q = Linear(options, q_rank or h, a * (self.nope + self.rope), lora_name="q")
        self.kv_down = Linear(options, h, self.rank + self.rope, lora_name=("k", "v"))
        self.kv_norm = RMSNorm(options, self.rank)
        self.kv_up = Linear(options, self.rank, a * (self.nope + self.value_dim), lora_name=("k", "v"))
        self.o = Linear(options, a * self.value_dim, h, lora_name="o")

    def _queries(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        source = x if self.q_down is None else self.q_norm(self.q_down(x))
        return self.q(source).view(b, t, self.heads, self.nope + self.rope).transpose(1, 2)

    def _latent(self, x: torch.Tensor) -> torch.Tensor:
        """(b, t, r_kv + d_rope): what the cache keeps for each token."""
        down = self.kv_down(x)
        return torch.cat((self.kv_norm(down[..., :self.rank]), down[..., self.rank:]), dim=-1)

    def _keys_values(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys (b, a, S, d_nope + d_rope) and values (b, a, S, d_v) projected out of the latent rows."""
        b, s, _ = latent.shape
        kv = self.kv_up(latent[..., :self.rank]).view(b, s, self.heads, self.nope + self.value_dim).transpose(1, 2)
        k_nope, values = kv.split((self.nope, self.value_dim), dim=-1)
        k_rope = latent[..., self.rank:].unsqueeze(1).expand(b, self.heads, s, self.rope)
        return torch.cat((k_nope, k_rope), dim=-1), values

    def _merge(self, out: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = out.shape
        return self.o(out.transpose(1, 2).reshape(b, t, self.heads * self.value_dim))

    def forward(self, x: torch.Tensor, *, causal: bool) -> torch.Tensor:
        keys, values = self._keys_values(self._latent(x))
        return self._merge(attend(self._queries(x), keys, values, causal=causal))

    def prefill(self, x: torch.Tensor, cache: LayerCache, rows: slice, start: int) -> torch.Tensor:
        """Tokens start … start+T of the `rows` requests: write their latent rows, attend causally over the keys and
        values projected out of the cached rows (window layers: the ring's earlier rows and this chunk)."""
        q, latent = self._queries(x), self._latent(x)
        t = x.shape[1]
        if cache.window:
            keep = min(t, cache.capacity)
            earlier = min(start, cache.capacity)
            rows_all = torch.cat((cache.k[rows, 0, :earlier].to(q.dtype), latent), dim=1) if earlier else latent
            out = attend(q, *self._keys_values(rows_all), causal=True)
            slots = torch.arange(start + t - keep, start + t, device=x.device) % cache.capacity
            cache.k[rows, 0, slots] = latent[:, t - keep:].to(cache.k.dtype)
            return self._merge(out)
        cache.k[rows, 0, start:start + t] = latent.to(cache.k.dtype)
        rows_all = cache.k[rows, 0, :start + t].to(q.dtype)
        return self._merge(attend(q, *self._keys_values(rows_all), causal=True))

    def decode(self, x: torch.Tensor, cache: LayerCache, position: int) -> torch.Tensor:
        """One new token per request at `position`, with the up-projections absorbed: the query goes into the latent
        space (W_UKᵀ·q_nope), attends over the cached rows as one KV head (keys the whole row, values its first r_kv
        columns), and the attended latent goes out through W_UV; no key or value is ever projected out."""
        b = x.shape[0]
        q_nope, q_rope = self._queries(x)[:, :, 0].split((self.nope, self.rope), dim=-1)
        slot = position % cache.capacity if cache.window else position
        cache.k[:, 0, slot] = self._latent(x)[:, 0].to(cache.k.dtype)
        valid = min(position + 1, cache.capacity)
        rows = cache.k[:, :, :valid].to(q_nope.dtype)
        up = self.kv_up.effective_weight().view(self.heads, self.nope + self.value_dim, self.rank)
        w_uk, w_uv = up.split((self.nope, self.value_dim), dim=1)
        query = torch.cat((torch.einsum("bhn,hnr->bhr", q_nope, w_uk), q_rope), dim=-1).unsqueeze(1)
        attended = F.scaled_dot_product_attention(query, rows, rows[..., :self.rank], scale=self.scale)
        out = torch.einsum("bhr,hvr->bhv", attended[:, 0], w_uv)
        return self.o(out.reshape(b, 1, self.heads * self.value_dim))


def _run_layer(layer: nn.Module, x: torch.Tensor, recompute: bool) -> torch.Tensor:
    if recompute and torch.is_grad_enabled():
        return checkpoint(layer, x, use_reentrant=False)
    return layer(x)


# ----------------------------------------------------------------------------------------------------------------------
# Decoder (dense, GQA, MoE)
# ----------------------------------------------------------------------------------------------------------------------


class DecoderLayer(nn.Module):
    def __init__(self, options: BuildOptions, shape: ProxyShape, index: int):
        super().__init__()
        self.window = shape.layer_uses_window(index)
        self.attention_norm = RMSNorm(options, shape.hidden_size)
        self.attention: nn.Module = (LatentAttention(options, shape) if shape.is_latent_attention
                                     else Attention(options, shape, encoder=False))
        self.ffn_norm = RMSNorm(options, shape.hidden_size)
        if shape.is_moe and index >= shape.dense_layer_count:
            self.ffn: nn.Module = MixtureOfExperts(options, shape)
        else:
            self.ffn = FeedForward(options, shape.hidden_size, shape.ffn_size, gated=shape.gated_ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), causal=True)
        return x + self.ffn(self.ffn_norm(x))

    def prefill(self, x: torch.Tensor, cache: LayerCache, rows: slice, start: int) -> torch.Tensor:
        x = x + self.attention.prefill(self.attention_norm(x), cache, rows, start)
        return x + self.ffn(self.ffn_norm(x))

    def decode(self, x: torch.Tensor, cache: LayerCache, position: int) -> torch.Tensor:
        x = x + self.attention.decode(self.attention_norm(x), cache, position)
        return x + self.ffn(self.ffn_norm(x))


class DecoderProxy(nn.Module):
    kind = "decoder"

    def __init__(self, shape: ProxyShape, options: BuildOptions):
        super().__init__()
        self.shape = shape
        self.vocab_size = shape.vocab_size
        self.embedding = options.parameter(shape.vocab_size, shape.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(options, shape, index) for index in range(shape.num_layers))
        self.norm = RMSNorm(options, shape.hidden_size)
        self.head = None if shape.tied_embeddings else options.parameter(shape.vocab_size, shape.hidden_size)

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(self.norm(hidden), self.head if self.head is not None else self.embedding)

    def allocate_cache(self, requests: int, context_tokens: int, block: int, dtype: torch.dtype) -> KVCache:
        """The engine's up-front cache: every request's blocks for the full context (window layers: the window);
        latent attention: one (r_kv + d_rope) row per token, no separate values."""
        cache = KVCache()
        device = self.embedding.device
        latent = self.shape.is_latent_attention
        heads = 1 if latent else self.shape.kv_heads
        for index, layer in enumerate(self.layers):
            tokens = self.shape.kv_cache_tokens(index, context_tokens, block)
            size = (requests, heads, tokens, self.shape.kv_cache_width)
            values = None if latent else torch.zeros(size, device=device, dtype=dtype)
            cache.layers.append(LayerCache(torch.zeros(size, device=device, dtype=dtype), values, layer.window))
        return cache

    def prefill(self, tokens: torch.Tensor, cache: KVCache, rows: slice, start: int) -> torch.Tensor:
        """One prefill step; returns the fp32 logits of each sequence's last token (what the sampler needs)."""
        x = F.embedding(tokens, self.embedding)
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x = layer.prefill(x, layer_cache, rows, start)
        return self._logits(x[:, -1]).float()

    def decode(self, tokens: torch.Tensor, cache: KVCache, position: int) -> torch.Tensor:
        x = F.embedding(tokens, self.embedding)
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x = layer.decode(x, layer_cache, position)
        return self._logits(x[:, -1]).float()

    def training_loss(self, batch: int, sequence: int, *, recompute: bool,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        device = self.embedding.device
        tokens = torch.randint(self.vocab_size, (batch, sequence + 1), device=device, generator=generator)
        x = F.embedding(tokens[:, :-1], self.embedding)
        for layer in self.layers:
            x = _run_layer(layer, x, recompute)
        logits = self._logits(x)
        return F.cross_entropy(logits.float().view(-1, self.vocab_size), tokens[:, 1:].reshape(-1))


# ----------------------------------------------------------------------------------------------------------------------
# Encoder (embedding, reranking)
# ----------------------------------------------------------------------------------------------------------------------


class EncoderLayer(nn.Module):
    """Post-norm BERT layer: attention with biases, LayerNorm, FFN with biases, LayerNorm."""

    def __init__(self, options: BuildOptions, shape: ProxyShape):
        super().__init__()
        self.attention = Attention(options, shape, encoder=True)
        self.attention_norm = LayerNorm(options, shape.hidden_size)
        self.ffn = FeedForward(options, shape.hidden_size, shape.ffn_size, gated=shape.gated_ffn, bias=True)
        self.ffn_norm = LayerNorm(options, shape.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.attention(x, causal=False))
        return self.ffn_norm(x + self.ffn(x))


class EncoderProxy(nn.Module):
    kind = "encoder"

    def __init__(self, shape: ProxyShape, options: BuildOptions):
        super().__init__()
        h = shape.hidden_size
        self.shape = shape
        self.vocab_size = shape.vocab_size
        self.embedding = options.parameter(shape.vocab_size, h)
        self.positions = options.parameter(shape.position_embeddings, h) if shape.position_embeddings else None
        self.token_types = options.parameter(shape.token_type_vocab_size, h) if shape.token_type_vocab_size else None
        self.embedding_norm = LayerNorm(options, h)
        self.layers = nn.ModuleList(EncoderLayer(options, shape) for _ in range(shape.num_layers))
        self.pooler = Linear(options, h, h, bias=True) if shape.pooler else None

    def hidden_states(self, tokens: torch.Tensor, recompute: bool = False) -> torch.Tensor:
        x = F.embedding(tokens, self.embedding)
        if self.positions is not None:
            index = torch.arange(tokens.shape[1], device=tokens.device) % self.positions.shape[0]
            x = x + F.embedding(index, self.positions)
        if self.token_types is not None:
            x = x + self.token_types[0]
        x = self.embedding_norm(x)
        for layer in self.layers:
            x = _run_layer(layer, x, recompute)
        return x

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Pooled output per sequence (the [CLS] position, through the pooler when there is one)."""
        first = self.hidden_states(tokens)[:, 0]
        return torch.tanh(self.pooler(first)) if self.pooler is not None else first

    def training_loss(self, batch: int, sequence: int, *, recompute: bool,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        """Masked-language-model loss over every position through the tied word embeddings, plus an in-batch
        contrastive loss on the pooled outputs (embedding-model fine-tuning), so every parameter trains."""
        device = self.embedding.device
        tokens = torch.randint(self.vocab_size, (batch, sequence), device=device, generator=generator)
        hidden = self.hidden_states(tokens, recompute)
        logits = F.linear(hidden, self.embedding)
        loss = F.cross_entropy(logits.float().view(-1, self.vocab_size), tokens.view(-1))
        first = hidden[:, 0]
        pooled = F.normalize((torch.tanh(self.pooler(first)) if self.pooler is not None else first).float(), dim=-1)
        similarity = pooled @ pooled.t() / 0.05
        return loss + F.cross_entropy(similarity, torch.arange(batch, device=device))


# ----------------------------------------------------------------------------------------------------------------------
# Diffusion transformer (DiT)
# ----------------------------------------------------------------------------------------------------------------------


def timestep_embedding(steps: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    half = dim // 2
    frequencies = torch.exp(-math.log(max_period) * torch.arange(half, device=steps.device, dtype=torch.float32) / half)
    angles = steps.float()[:, None] * frequencies[None]
    embedding = torch.cat((torch.cos(angles), torch.sin(angles)), dim=-1)
    return F.pad(embedding, (0, dim % 2))


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class DiTAttention(nn.Module):
    """Multi-head self-attention with one fused qkv projection and an output projection, both with biases."""

    def __init__(self, options: BuildOptions, shape: ProxyShape):
        super().__init__()
        h, a, d = shape.hidden_size, shape.num_attention_heads, shape.resolved_head_dim
        self.heads, self.head_dim = a, d
        self.qkv = Linear(options, h, 3 * a * d, bias=True, lora_name="q")
        self.o = Linear(options, a * d, h, bias=True, lora_name="o")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.o(out.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))


class DiTBlock(nn.Module):
    def __init__(self, options: BuildOptions, shape: ProxyShape):
        super().__init__()
        h = shape.hidden_size
        self.modulation = Linear(options, h, 6 * h, bias=True)
        self.attention = DiTAttention(options, shape)
        self.mlp = FeedForward(options, h, shape.ffn_size, gated=shape.gated_ffn, bias=True, gate_bias=True)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.modulation(F.silu(c)).chunk(6, dim=-1)
        h = x.shape[-1]
        x = x + gate_a.unsqueeze(1) * self.attention(modulate(F.layer_norm(x, (h,), eps=NORM_EPS), shift_a, scale_a))
        return x + gate_m.unsqueeze(1) * self.mlp(modulate(F.layer_norm(x, (h,), eps=NORM_EPS), shift_m, scale_m))


class DiTProxy(nn.Module):
    """DiT (Peebles & Xie 2023) over `tokens` latent patches: patch embedding, a frozen positional table, timestep
    MLP, class table, adaLN-Zero blocks, final adaLN layer. `conditioning_fill` (see shape.dit_parameter_breakdown)
    holds the rest of a stated parameter count and feeds the conditioning vector, so it trains like the rest."""

    kind = "diffusion"

    def __init__(self, shape: ProxyShape, options: BuildOptions, geometry: DiffusionGeometry, tokens: int,
                 fill: int = 0):
        super().__init__()
        h = shape.hidden_size
        self.shape, self.geometry, self.tokens = shape, geometry, tokens
        self.patch_embedding = Linear(options, geometry.patch_dim, h, bias=True)
        self.position_table = options.parameter(tokens, h, trainable=False)
        self.timestep_in = Linear(options, geometry.frequency_embedding_size, h, bias=True)
        self.timestep_out = Linear(options, h, h, bias=True)
        self.class_embedding = options.parameter(geometry.num_classes + 1, h) if geometry.num_classes else None
        self.conditioning_fill = options.parameter(fill) if fill else None
        self.blocks = nn.ModuleList(DiTBlock(options, shape) for _ in range(shape.num_layers))
        self.final_modulation = Linear(options, h, 2 * h, bias=True)
        self.final = Linear(options, h, geometry.output_patch_dim, bias=True)

    def _conditioning(self, steps: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        dtype = self.position_table.dtype
        t = timestep_embedding(steps, self.geometry.frequency_embedding_size).to(dtype)
        c = self.timestep_out(F.silu(self.timestep_in(t)))
        if self.class_embedding is not None:
            c = c + F.embedding(labels, self.class_embedding)
        if self.conditioning_fill is not None:
            h = c.shape[-1]
            index = torch.arange(h, device=c.device) % self.conditioning_fill.shape[0]
            c = c + self.conditioning_fill[index]
        return c

    def forward(self, patches: torch.Tensor, steps: torch.Tensor, labels: torch.Tensor,
                recompute: bool = False) -> torch.Tensor:
        x = self.patch_embedding(patches) + self.position_table
        c = self._conditioning(steps, labels)
        for block in self.blocks:
            recomputed = recompute and torch.is_grad_enabled()
            x = checkpoint(block, x, c, use_reentrant=False) if recomputed else block(x, c)
        shift, scale = self.final_modulation(F.silu(c)).chunk(2, dim=-1)
        return self.final(modulate(F.layer_norm(x, (x.shape[-1],), eps=NORM_EPS), shift, scale))

    def random_inputs(self, batch: int, generator: torch.Generator | None = None):
        device, dtype = self.position_table.device, self.position_table.dtype
        patches = torch.randn(batch, self.tokens, self.geometry.patch_dim, device=device, dtype=dtype,
                              generator=generator)
        steps = torch.randint(1000, (batch,), device=device, generator=generator)
        labels = torch.randint(max(self.geometry.num_classes, 1), (batch,), device=device, generator=generator)
        return patches, steps, labels

    def training_loss(self, batch: int, sequence: int, *, recompute: bool,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        patches, steps, labels = self.random_inputs(batch, generator)
        prediction = self(patches, steps, labels, recompute=recompute)
        target = torch.randn(prediction.shape, device=prediction.device, dtype=prediction.dtype, generator=generator)
        return F.mse_loss(prediction.float(), target.float())


def add_adapters(model: nn.Module, options: BuildOptions) -> None:
    """Attach the LoRA adapters to a base built with `build_adapters=False` (so both can be measured apart)."""
    for module in model.modules():
        if isinstance(module, Linear):
            module.add_adapter(options)
