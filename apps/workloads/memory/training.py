"""Training memory per GPU: mixed-precision Adam states sharded by ZeRO, or a frozen base with LoRA/QLoRA adapters,
plus the activations kept for backward (Korthikanti et al. 2022)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
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
from apps.workloads.memory.inference import MAX_CONTEXT_TOKENS, weights_term
from apps.workloads.memory.precisions import BYTES_PER_GIB, Precision
from apps.workloads.memory.shapes import Architecture, ModelShape, check_tensor_parallel, effective_parameters


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
MAX_GPUS = 1_048_576
# Training runtime: NCCL buffers, cuBLAS workspaces and allocator fragmentation: 1 GiB.
DEFAULT_TRAINING_RUNTIME_BYTES = 1 * BYTES_PER_GIB


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
        check_int("sequence_length", self.sequence_length, maximum=MAX_CONTEXT_TOKENS)
        check_int("micro_batch_size", self.micro_batch_size, maximum=65_536)
        check_int("zero_stage", self.zero_stage, minimum=0, maximum=3)
        check_int("data_parallel_gpus", self.data_parallel_gpus, maximum=MAX_GPUS)
        check_int("tensor_parallel", self.tensor_parallel, maximum=1024)
        check_int("lora_rank", self.lora_rank, maximum=65_536)
        check_int("cuda_context_bytes", self.cuda_context_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_int("runtime_overhead_bytes", self.runtime_overhead_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_fraction("safety_margin_fraction", self.safety_margin_fraction)
        for name, enum in (("method", TrainingMethod), ("recompute", Recompute)):
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                raise shape_error(
                    name,
                    gettext_noop("Unknown value %(value)r; use one of %(choices)s."),
                    value=getattr(self, name),
                    choices=", ".join(member.value for member in enum),
                ) from None
        targets = tuple(self.lora_targets)
        unknown = sorted(set(targets) - set(LORA_TARGETS))
        if unknown or not targets:
            raise shape_error(
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
    check_int("zero_stage", zero_stage, minimum=0, maximum=3)
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
        require(getattr(shape, name), name, gettext_noop("LoRA adapters"))
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
        ffn = require(shape.ffn_size, "ffn_size", gettext_noop("LoRA adapters"))
        total += dense_layers * adapter_parameters(_lora_matrix_shapes(shape, ffn, mlp_only))
    moe_layers = layers - dense_layers
    if moe_layers:
        expert_ffn = require(shape.expert_ffn_size or shape.ffn_size, "expert_ffn_size", gettext_noop("MoE layers"))
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
    layers = require(shape.num_layers, "num_layers", purpose)
    h = require(shape.hidden_size, "hidden_size", purpose)
    a = require(shape.num_attention_heads, "num_attention_heads", purpose)
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
    check_tensor_parallel(shape, t)
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
    terms.append(runtime_term(request.cuda_context_bytes, request.runtime_overhead_bytes))
    return Breakdown(EstimateKind.TRAINING, with_safety_margin(terms, request.safety_margin_fraction), gpus=t * n)
