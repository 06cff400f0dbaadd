"""A PREDICTION of serving capacity from the datasheet: a roofline model of one replica serving a request mix.

Pure Python (no Django). Every figure here is a prediction from the catalog's peak memory bandwidth and dense tensor
rate, scaled by the named efficiency factors below; it is never a measurement and is labelled so wherever it shows.
Phase 2 (apps/benchmarks/throughput.py) measures the capacity; the residuals page sets the two side by side.

The model (symbols as in DESIGN.md; B sequences decoding together on one replica of t tensor-parallel GPUs):

- Decode step, per GPU: bytes = W_read/t + KV_step/min(t, n_kv) and FLOPs = (2·P_active·B + A_decode·B)/t, where
  W_read is the weight bytes one step reads (all of a dense model; for a mixture of experts the shared part plus the
  experts the B tokens route to: 1 − (1 − k/E)^B of them in expectation), KV_step = B · KV bytes per token · the
  mean context during decode (c̄ = I + O/2), A_decode = 4·L·a·d·c̄ the attention FLOPs of one token at context c̄.
  step time = max(bytes ÷ (β·η_β), FLOPs ÷ (π·η_π)): the roofline.
- Prefill of one request, per GPU: (2·P_active·I + 2·L·a·d·I²)/t FLOPs ÷ (π·η_π) (compute-bound; causal attention
  over I tokens is half of 4·L·a·d·I²).
- A replica serving B concurrent requests spends, per request, its prefill and O/B of the decode steps:
  requests/s per replica = B / (B·t_prefill + O·t_step); per GPU ÷ t; output tokens/s = requests/s · O.

It leaves out: scheduling gaps, sampling, communication between tensor-parallel ranks, chunked-prefill interference
with decode, speculative decoding and the KV cache's block rounding. The residuals of measured runs say how far off
that leaves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from apps.workloads.memory.errors import check_int, gettext_noop, shape_error
from apps.workloads.memory.inference import has_kv_cache, kv_cache_bytes_per_request, weights_term
from apps.workloads.memory.precisions import Precision
from apps.workloads.memory.shapes import ModelShape, check_tensor_parallel, effective_parameters, parameter_count

PREDICTION_LABEL = "prediction (roofline from datasheet peaks)"

# Achievable fraction of the datasheet memory bandwidth in decode ("model bandwidth utilisation"). Basis: Databricks
# / MosaicML, "LLM Inference Performance Engineering: Best Practices" (2023-10-12,
# https://www.databricks.com/blog/llm-inference-performance-engineering-best-practices): "At batch size 1, we can
# achieve a higher MBU of 60% on 2xH100-80GBs as compared to 55% on 4xA100-40GB GPUs"; the same post shows MBU
# falling as the batch grows, so 0.60 is optimistic at large batches.
ACHIEVABLE_BANDWIDTH_FRACTION = 0.60
ACHIEVABLE_BANDWIDTH_BASIS = (
    "0.60: MBU at batch 1 on 2×H100-80GB, Databricks 'LLM Inference Performance Engineering: Best Practices' "
    "(2023-10-12)"
)
# Achievable fraction of the datasheet dense tensor rate ("model FLOPs utilisation") in compute-bound phases. Basis:
# Pope et al., "Efficiently Scaling Transformer Inference" (arXiv:2211.05102, 2022-11): 76 % MFU in prefill for PaLM
# 540B on TPU v4. No GPU serving figure with a citable source was found: this one is a TPU's best case, so the
# prediction is optimistic where it is compute-bound.
ACHIEVABLE_COMPUTE_FRACTION = 0.76
ACHIEVABLE_COMPUTE_BASIS = (
    "0.76: prefill MFU of PaLM 540B on TPU v4, Pope et al. 'Efficiently Scaling Transformer Inference' "
    "(arXiv:2211.05102, 2022-11); a TPU's best case, no GPU figure adopted"
)
# Weight formats a GPU multiplies at its FP8 tensor rate (when the catalog has one); the rest run at the BF16 rate
# (4-bit formats are dequantised to 16-bit before the matmul; fp32 has no tensor-core rate in the catalog).
FP8_RATE_PRECISIONS = frozenset({Precision.FP8, Precision.INT8})
TB = 10**12
SECONDS_PER_HOUR = 3600


class RooflineError(ValueError):
    """The roofline cannot be drawn for these inputs; `field` names the one at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RequestMix:
    """The requests one replica serves: mean prompt and answer lengths, and how many decode together."""

    mean_input_tokens: int
    mean_output_tokens: int
    concurrency: int  # B: sequences in one replica's batch

    def __post_init__(self) -> None:
        check_int("mean_input_tokens", self.mean_input_tokens, minimum=0, maximum=2**27)
        check_int("mean_output_tokens", self.mean_output_tokens, maximum=2**27)
        check_int("concurrency", self.concurrency, maximum=1_000_000)


@dataclass(frozen=True)
class GpuPeaks:
    """One GPU's datasheet peaks: memory bandwidth (TB/s) and dense tensor rates (TFLOPS, no sparsity)."""

    memory_bandwidth_tbps: float
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None = None

    def __post_init__(self) -> None:
        for name in ("memory_bandwidth_tbps", "bf16_dense_tflops", "fp8_dense_tflops"):
            value = getattr(self, name)
            if value is None and name == "fp8_dense_tflops":
                continue
            if value is None or not math.isfinite(value) or value <= 0:
                raise RooflineError(name, "a positive datasheet figure is needed")

    def dense_tflops(self, precision: Precision) -> tuple[float, str]:
        if precision in FP8_RATE_PRECISIONS and self.fp8_dense_tflops:
            return self.fp8_dense_tflops, "FP8 dense"
        return self.bf16_dense_tflops, "BF16 dense"


@dataclass(frozen=True)
class RooflinePrediction:
    """Predicted serving figures of one replica (t GPUs) and per GPU. Always a prediction: see `label`."""

    tensor_parallel: int
    concurrency: int
    mean_input_tokens: int
    mean_output_tokens: int
    bandwidth_tbps: float
    compute_tflops: float
    compute_basis: str
    bandwidth_efficiency: float
    compute_efficiency: float
    weight_bytes_read_per_gpu: int
    kv_bytes_read_per_gpu: int
    decode_flops_per_gpu: float
    decode_memory_s: float
    decode_compute_s: float
    prefill_flops_per_gpu: float
    prefill_s: float
    requests_per_s_per_replica: float
    derivation: tuple[str, ...]
    label: str = PREDICTION_LABEL

    @property
    def decode_step_s(self) -> float:
        return max(self.decode_memory_s, self.decode_compute_s)

    @property
    def bound(self) -> str:
        """"memory" or "compute": which roof the decode step is under."""
        return "memory" if self.decode_memory_s >= self.decode_compute_s else "compute"

    @property
    def requests_per_s_per_gpu(self) -> float:
        return self.requests_per_s_per_replica / self.tensor_parallel

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        return self.requests_per_s_per_gpu * self.mean_output_tokens

    @property
    def requests_per_hour_per_gpu(self) -> float:
        return self.requests_per_s_per_gpu * SECONDS_PER_HOUR

    @property
    def time_per_output_token_s(self) -> float:
        return self.decode_step_s

    @property
    def formula(self) -> str:
        return "\n".join(self.derivation)


def _active_parameters(shape: ModelShape, total: int) -> tuple[int, str]:
    if not shape.is_moe:
        return total, "P_active = P (dense)"
    if shape.active_params is not None:
        return shape.active_params, "P_active stated"
    if shape.has_layer_shape:
        return parameter_count(shape).active, "P_active computed from the shape"
    raise RooflineError("active_params", "a mixture of experts needs its active parameters or its layer shape")


def _weights_read_fraction(shape: ModelShape, total: int, active: int, batch: int) -> tuple[float, str]:
    """The share of the weights one decode step reads: 1 for a dense model; for a mixture of experts the dense part
    plus the expected share of routed experts B tokens touch, 1 − (1 − k/E)^B (tokens routed independently)."""
    experts, per_token = shape.num_experts or 0, shape.num_experts_per_token or 0
    if not shape.is_moe or experts <= per_token or total <= active:
        return 1.0, "all weights read every step"
    routed = (total - active) * experts / (experts - per_token)  # inactive = routed·(E − k)/E
    routed = min(routed, total)
    touched = 1 - (1 - per_token / experts) ** batch
    read = (total - routed + routed * touched) / total
    return read, (
        f"MoE: routed experts R = (P − P_active)·E/(E − k) = {routed:.4g}; touched by B={batch} tokens "
        f"1 − (1 − {per_token}/{experts})^{batch} = {touched:.4f}; share of weights read = {read:.4f}"
    )


def _attention_flops_per_token(shape: ModelShape, context: float) -> tuple[float, str]:
    """4·L·a·d·c: QKᵀ and the weighted sum of V for one token attending to c positions (MLA and shapes without heads:
    left out and said so)."""
    layers, heads, head_dim = shape.num_layers, shape.num_attention_heads, shape.resolved_head_dim
    if shape.is_latent_attention or None in (layers, heads, head_dim):
        return 0.0, "attention FLOPs left out (latent attention or no layer shape)"
    assert layers is not None and heads is not None and head_dim is not None
    window = shape.sliding_window
    window_layers = shape.window_layer_count
    spans = (layers - window_layers) * context + window_layers * min(context, window or context)
    return 4 * heads * head_dim * spans, f"4·L·a·d·c = 4·{layers}·{heads}·{head_dim}·{context:g}"


def predict_serving(
    shape: ModelShape,
    mix: RequestMix,
    gpu: GpuPeaks,
    *,
    tensor_parallel: int = 1,
    kv_cache_precision: Precision | str | None = None,
    bandwidth_efficiency: float = ACHIEVABLE_BANDWIDTH_FRACTION,
    compute_efficiency: float = ACHIEVABLE_COMPUTE_FRACTION,
) -> RooflinePrediction:
    """The roofline PREDICTION of one replica on `tensor_parallel` GPUs serving `mix` (see the module docstring)."""
    if not has_kv_cache(shape):
        raise shape_error(
            "architecture",
            gettext_noop("The serving roofline models token generation; a %(architecture)s model generates none."),
            architecture=shape.architecture.value,
        )
    for name, value in (("bandwidth_efficiency", bandwidth_efficiency), ("compute_efficiency", compute_efficiency)):
        if not 0 < value <= 1:
            raise RooflineError(name, "an efficiency is a fraction above 0 and at most 1")
    t = check_int("tensor_parallel", tensor_parallel, maximum=1024)
    check_tensor_parallel(shape, t)
    total, _, origin = effective_parameters(shape)
    active, active_origin = _active_parameters(shape, total)
    batch, prompt, answer = mix.concurrency, mix.mean_input_tokens, mix.mean_output_tokens
    precision = shape.precision
    assert isinstance(precision, Precision)
    tflops, compute_basis = gpu.dense_tflops(precision)
    bandwidth = gpu.memory_bandwidth_tbps * TB * bandwidth_efficiency
    compute = tflops * TB * compute_efficiency

    weight_bytes = weights_term(shape).size_bytes
    share, share_text = _weights_read_fraction(shape, total, active, batch)
    weights_read = math.ceil(weight_bytes * share / t)
    mean_context = prompt + answer / 2
    # Exact KV bytes of one request at the mean context (block size 1: a step reads the tokens, not the blocks).
    kv_context = max(1, math.floor(mean_context))
    kv_request = kv_cache_bytes_per_request(shape, kv_context, kv_cache_precision, block_size_tokens=1)
    kv_split = 1 if shape.is_latent_attention else min(t, shape.kv_heads or t)
    kv_read = math.ceil(batch * kv_request / kv_split)
    attention_token, attention_text = _attention_flops_per_token(shape, mean_context)
    decode_flops = batch * (2 * active + attention_token) / t
    decode_memory_s = (weights_read + kv_read) / bandwidth
    decode_compute_s = decode_flops / compute

    attention_prompt, _ = _attention_flops_per_token(shape, prompt)
    prefill_flops = (2 * active * prompt + attention_prompt * prompt / 2) / t
    prefill_s = prefill_flops / compute
    step = max(decode_memory_s, decode_compute_s)
    replica_rate = batch / (batch * prefill_s + answer * step)

    derivation = (
        f"{PREDICTION_LABEL}; B={batch} concurrent, I={prompt} input and O={answer} output tokens (means), t={t}",
        f"P = {total} ({origin}); {active_origin}: {active}",
        f"β = {gpu.memory_bandwidth_tbps:g} TB/s × η_β {bandwidth_efficiency:g} ({ACHIEVABLE_BANDWIDTH_BASIS})"
        if bandwidth_efficiency == ACHIEVABLE_BANDWIDTH_FRACTION
        else f"β = {gpu.memory_bandwidth_tbps:g} TB/s × η_β {bandwidth_efficiency:g} (stated)",
        f"π = {tflops:g} TFLOPS {compute_basis} × η_π {compute_efficiency:g} ({ACHIEVABLE_COMPUTE_BASIS})"
        if compute_efficiency == ACHIEVABLE_COMPUTE_FRACTION
        else f"π = {tflops:g} TFLOPS {compute_basis} × η_π {compute_efficiency:g} (stated)",
        f"weights read per step per GPU = {weight_bytes} B × {share:.4g} / t = {weights_read} B ({share_text})",
        f"KV read per step per GPU = B · KV(c̄ = I + O/2 = {mean_context:g}) / {kv_split} = {batch} · {kv_request} "
        f"/ {kv_split} = {kv_read} B",
        f"decode FLOPs per GPU = B·(2·P_active + {attention_text})/t = {decode_flops:.6g}",
        f"t_step = max({weights_read + kv_read} B ÷ β, {decode_flops:.6g} FLOP ÷ π) = "
        f"max({decode_memory_s:.6g}, {decode_compute_s:.6g}) s",
        f"t_prefill = (2·P_active·I + 2·L·a·d·I²)/t ÷ π = {prefill_flops:.6g} FLOP ÷ π = {prefill_s:.6g} s",
        f"requests/s per replica = B / (B·t_prefill + O·t_step) = {replica_rate:.6g}; per GPU ÷ {t} = "
        f"{replica_rate / t:.6g}; output tokens/s per GPU = {replica_rate / t * answer:.6g}",
    )
    return RooflinePrediction(
        tensor_parallel=t,
        concurrency=batch,
        mean_input_tokens=prompt,
        mean_output_tokens=answer,
        bandwidth_tbps=gpu.memory_bandwidth_tbps,
        compute_tflops=tflops,
        compute_basis=compute_basis,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        weight_bytes_read_per_gpu=weights_read,
        kv_bytes_read_per_gpu=kv_read,
        decode_flops_per_gpu=decode_flops,
        decode_memory_s=decode_memory_s,
        decode_compute_s=decode_compute_s,
        prefill_flops_per_gpu=prefill_flops,
        prefill_s=prefill_s,
        requests_per_s_per_replica=replica_rate,
        derivation=derivation,
    )
