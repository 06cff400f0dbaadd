"""Training memory per GPU: mixed-precision Adam states (32- or 8-bit, on the GPU or offloaded) sharded by ZeRO, or a
frozen base with LoRA/QLoRA adapters, plus the activations kept for backward (Korthikanti et al. 2022), on the
heaviest pipeline stage."""

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


class OptimizerOffload(StrEnum):
    NONE = "none"
    CPU = "cpu"  # ZeRO-Offload: optimizer states and step in host memory
    NVME = "nvme"  # ZeRO-Infinity: optimizer states on NVMe, step on the CPU


LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
# Mixed-precision Adam (ZeRO paper): 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master, momentum, variance).
WEIGHT_BYTES_PER_PARAMETER = 2
GRADIENT_BYTES_PER_PARAMETER = 2
OPTIMIZER_BYTES_PER_PARAMETER = 12
# fp32 master weights: 4 of the 12 bytes above; the other 8 are Adam's two fp32 moments.
MASTER_WEIGHT_BYTES_PER_PARAMETER = 4
# 8-bit Adam (bitsandbytes, Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization", arXiv 2110.02861):
# each of the two moments is one uint8 per parameter plus one fp32 absmax constant per block. The paper and older
# releases use blocks of 2048; current bitsandbytes (bitsandbytes/optim/optimizer.py, Optimizer2State.init_state,
# read 2026-12-03) uses 256, the larger overhead, taken here: 2·(1 + 4/256) = 2.03125 bytes. The fp32 master weights
# of mixed precision stay: 4 + 2.03125 = 6.03125 bytes per parameter. (Tensors under bitsandbytes' min_8bit_size of
# 4096 elements keep 32-bit moments; norms and biases are a negligible share of a transformer.)
EIGHT_BIT_ADAM_BLOCK_SIZE = 256
EIGHT_BIT_ADAM_STATE_BYTES = 2 * (1 + Fraction(4, EIGHT_BIT_ADAM_BLOCK_SIZE))
OPTIMIZER_BITS = (32, 8)
MAX_GPUS = 1_048_576
# Training runtime: NCCL buffers, cuBLAS workspaces and allocator fragmentation: 1 GiB.
DEFAULT_TRAINING_RUNTIME_BYTES = 1 * BYTES_PER_GIB


@dataclass(frozen=True)
class TrainingRequest:
    """How the model is trained: sequence, micro-batch, method, ZeRO stage over N data-parallel GPUs, tensor-parallel
    degree t (with or without sequence parallelism), p pipeline stages, optimizer precision and offload."""

    sequence_length: int
    micro_batch_size: int = 1
    method: TrainingMethod | str = TrainingMethod.FULL
    zero_stage: int = 0
    data_parallel_gpus: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sequence_parallel: bool = False
    recompute: Recompute | str = Recompute.NONE
    flash_attention: bool = True
    optimizer_offload: OptimizerOffload | str = OptimizerOffload.NONE
    optimizer_bits: int = 32
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
        check_int("pipeline_parallel", self.pipeline_parallel, maximum=1024)
        check_int("lora_rank", self.lora_rank, maximum=65_536)
        check_int("cuda_context_bytes", self.cuda_context_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_int("runtime_overhead_bytes", self.runtime_overhead_bytes, minimum=0, maximum=MAX_OVERHEAD_BYTES)
        check_fraction("safety_margin_fraction", self.safety_margin_fraction)
        for name, enum in (
            ("method", TrainingMethod),
            ("recompute", Recompute),
            ("optimizer_offload", OptimizerOffload),
        ):
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
        self._check_parallelism_and_optimizer()

    def _check_parallelism_and_optimizer(self) -> None:
        if not isinstance(self.sequence_parallel, bool):
            raise shape_error(
                "sequence_parallel", gettext_noop("Must be true or false, got %(value)r."), value=self.sequence_parallel
            )
        if self.sequence_parallel and self.tensor_parallel == 1:
            raise shape_error(
                "sequence_parallel",
                gettext_noop(
                    "Sequence parallelism splits the tensor-parallel group: it needs a tensor-parallel degree above 1."
                ),
            )
        if isinstance(self.optimizer_bits, bool) or self.optimizer_bits not in OPTIMIZER_BITS:
            raise shape_error(
                "optimizer_bits",
                gettext_noop("Adam keeps its states in 32 or 8 bits, not %(value)r."),
                value=self.optimizer_bits,
            )
        offload = self.optimizer_offload
        # DeepSpeed (docs/config-json, "Optimizer offloading"): CPU offloading is available with ZeRO stage 1, 2, 3;
        # NVMe offloading only with ZeRO stage 3.
        if offload is OptimizerOffload.CPU and self.zero_stage < 1:
            raise shape_error(
                "optimizer_offload", gettext_noop("Offloading the optimizer to the CPU needs ZeRO stage 1, 2 or 3.")
            )
        if offload is OptimizerOffload.NVME and self.zero_stage != 3:
            raise shape_error("optimizer_offload", gettext_noop("Offloading the optimizer to NVMe needs ZeRO stage 3."))
        if offload is not OptimizerOffload.NONE and self.optimizer_bits != 32:
            raise shape_error(
                "optimizer_bits",
                gettext_noop(
                    "8-bit Adam runs on the GPU; an offloaded optimizer runs DeepSpeed's 32-bit CPU Adam instead."
                ),
            )

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel_gpus


def optimizer_bytes_per_parameter(optimizer_bits: int = 32) -> Fraction:
    """fp32 master weights + Adam's two moments: 12 bytes with 32-bit moments, 6.03125 with bitsandbytes' 8-bit
    block-wise moments (4 + 2·(1 + 4/256))."""
    if optimizer_bits == 32:
        return Fraction(OPTIMIZER_BYTES_PER_PARAMETER)
    if optimizer_bits == 8:
        return MASTER_WEIGHT_BYTES_PER_PARAMETER + EIGHT_BIT_ADAM_STATE_BYTES
    raise shape_error(
        "optimizer_bits", gettext_noop("Adam keeps its states in 32 or 8 bits, not %(value)r."), value=optimizer_bits
    )


def _bytes_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def model_state_terms(
    trainable_params: int,
    zero_stage: int,
    data_parallel_gpus: int,
    tensor_parallel: int = 1,
    *,
    optimizer_bits: int = 32,
    optimizer_offload: OptimizerOffload | str = OptimizerOffload.NONE,
) -> tuple[Term, ...]:
    """Mixed-precision Adam model states per GPU: 16·P without ZeRO; ZeRO-1 4P + 12P/N, ZeRO-2 2P + 14P/N,
    ZeRO-3 16P/N (P already split by t, and by pipeline stage).

    8-bit Adam: the optimizer states take 6.03125·P instead of 12·P (see EIGHT_BIT_ADAM_STATE_BYTES).
    Optimizer offload (ZeRO-Offload, Ren et al. 2021, to CPU; ZeRO-Infinity, Rajbhandari et al. 2021, to NVMe): the
    fp32 master weights and Adam moments (12·P, sharded as the ZeRO stage says) move to host memory or NVMe, where the
    optimizer step runs on the CPU and also keeps its fp32 copy of the gradients. What stays on the GPU: the 16-bit
    weights (sharded at ZeRO-3) and the 16-bit gradients backward produces, counted as the stage partitions them
    (DeepSpeed streams them to the host in buckets, so this is an upper bound). The optimizer_states term is then
    0 bytes and names the host bytes in its formula ("DeepSpeed first included offloading capabilities with
    ZeRO-Offload, a system for offloading optimizer and gradient states to CPU memory", deepspeed.readthedocs.io,
    "ZeRO"; read 2026-12-03)."""
    check_int("zero_stage", zero_stage, minimum=0, maximum=3)
    offload = OptimizerOffload(optimizer_offload)
    n, t = data_parallel_gpus, tensor_parallel
    inputs: dict[str, InputValue] = {"P": trainable_params, "N": n, "t": t, "ZeRO stage": zero_stage}
    if optimizer_bits != 32:
        inputs["optimizer bits"] = optimizer_bits
    if offload is not OptimizerOffload.NONE:
        inputs["optimizer offload"] = offload.value

    def term(name: str, bytes_per_parameter_: Fraction | int, sharded_from_stage: int) -> Term:
        sharded = zero_stage >= sharded_from_stage
        divisor = t * n if sharded else t
        formula = f"{_bytes_text(Fraction(bytes_per_parameter_))}·P/" + ("(t·N)" if sharded else "t")
        return Term(name, math.ceil(Fraction(bytes_per_parameter_) * trainable_params / divisor), formula, inputs)

    optimizer = term("optimizer_states", optimizer_bytes_per_parameter(optimizer_bits), 1)
    if offload is not OptimizerOffload.NONE:
        where = "CPU memory (ZeRO-Offload)" if offload is OptimizerOffload.CPU else "NVMe (ZeRO-Infinity)"
        optimizer = Term(
            "optimizer_states",
            0,
            f"0 on the GPU: {optimizer.formula} = {optimizer.size_bytes:,} bytes offloaded to {where}",
            {**inputs, "offloaded bytes": optimizer.size_bytes},
        )
    return (
        term("weights", WEIGHT_BYTES_PER_PARAMETER, 3),
        term("gradients", GRADIENT_BYTES_PER_PARAMETER, 2),
        optimizer,
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
    sequence_parallel: bool = False,
) -> tuple[int, str]:
    """Activations one transformer layer stores for backward, 16-bit: Table 2 of Korthikanti et al. 2022,
    "Reducing Activation Recomputation in Large Transformer Models" (arXiv 2205.05198), in bytes:

    ==========================================  =====================================  ===========================
    Table 2 row                                 bytes per layer                        arguments here
    ==========================================  =====================================  ===========================
    no parallelism                              s·b·h·(34 + 5·a·s/h)                   t=1
    tensor parallel (baseline)                  s·b·h·(10 + 24/t + 5·a·s/(h·t))        t>1
    tensor + sequence parallel                  s·b·h·(34/t + 5·a·s/(h·t))             t>1, sequence_parallel
    tensor parallel + selective recompute       s·b·h·(10 + 24/t)                      t>1, recompute="selective"
    tensor + sequence parallel + selective      s·b·h·34/t                             … both
    full activation recompute                   s·b·h·2                                recompute="full"
    ==========================================  =====================================  ===========================

    The rows are the paper's (GPT: LayerNorm, a 4h MLP with GeLU, dropout, 16-bit): they hold exactly with
    flash_attention=False. FlashAttention never stores the s×s attention scores, softmax or its dropout mask, so like
    selective recomputation it drops the 5·a·s/h term (the estimator's default: training requests have
    flash_attention=True). The 34 is the paper's GPT layer; a gated FFN (SwiGLU, f ≈ 8h/3) stores about as much, and
    the estimator keeps the paper's 34 for it. With sequence parallelism the stored layer input of full recomputation
    is the rank's sequence shard, 2·s·b·h/t (the paper's row is without sequence parallelism)."""
    s, b, h, a, t = sequence_length, micro_batch_size, hidden_size, attention_heads, tensor_parallel
    recompute = Recompute(recompute)
    if sequence_parallel and t == 1:
        raise shape_error(
            "sequence_parallel",
            gettext_noop(
                "Sequence parallelism splits the tensor-parallel group: it needs a tensor-parallel degree above 1."
            ),
        )
    if recompute is Recompute.FULL:
        if sequence_parallel:
            return math.ceil(Fraction(2 * s * b * h, t)), "2·s·b·h/t"
        return 2 * s * b * h, "2·s·b·h"
    keeps_scores = not flash_attention and recompute is Recompute.NONE
    scores = Fraction(5 * a * s, h * t) if keeps_scores else 0
    if t == 1:
        factor = 34 + scores
        formula = "s·b·h·(34 + 5·a·s/h)" if keeps_scores else "s·b·h·34"
    elif sequence_parallel:
        factor = Fraction(34, t) + scores
        formula = "s·b·h·(34/t + 5·a·s/(h·t))" if keeps_scores else "s·b·h·34/t"
    else:
        factor = 10 + Fraction(24, t) + scores
        formula = "s·b·h·(10 + 24/t + 5·a·s/(h·t))" if keeps_scores else "s·b·h·(10 + 24/t)"
    return math.ceil(s * b * h * factor), formula


def output_activation_bytes(
    *, sequence_length: int, micro_batch_size: int, hidden_size: int, vocab_size: int, tensor_parallel: int = 1
) -> int:
    """Output layer and loss: 4·s·b·h·(1 + V/h), split across TP ranks."""
    s, b, h, v, t = sequence_length, micro_batch_size, hidden_size, vocab_size, tensor_parallel
    return math.ceil(Fraction(4 * s * b * h, t) * (1 + Fraction(v, h)))


class StagePosition(StrEnum):
    WHOLE = "whole model"  # no pipeline parallelism
    FIRST = "first"
    LAST = "last"


@dataclass(frozen=True)
class PipelineStage:
    """What one pipeline stage holds: its layers, the micro-batches whose activations it keeps in flight, and
    whether it owns the embedding or the output layer."""

    position: StagePosition
    layers: int  # ⌈L/p⌉ (all L without pipeline parallelism)
    in_flight_micro_batches: int
    embedding: bool
    output_layer: bool


def pipeline_stages(layers: int, pipeline_parallel: int) -> tuple[PipelineStage, ...]:
    """The stages whose memory can be the peak. 1F1B schedule (PipeDream-Flush, as in Megatron-LM, without
    interleaving): stage i keeps the activations of p − i micro-batches in flight, so the first stage holds p
    micro-batches of ⌈L/p⌉ layers each, about L layers' worth (Korthikanti et al. 2022, section 4.2.3); the last
    holds one micro-batch of ⌈L/p⌉ layers plus the output layer and loss. Layers that p does not divide are rounded
    up (the fullest stage)."""
    p = pipeline_parallel
    if p == 1:
        return (PipelineStage(StagePosition.WHOLE, layers, 1, embedding=True, output_layer=True),)
    if p > layers:
        raise shape_error(
            "pipeline_parallel",
            gettext_noop("%(p)s pipeline stages cannot split %(layers)s layers; use at most one stage per layer."),
            p=p,
            layers=layers,
        )
    per_stage = -(-layers // p)
    return (
        PipelineStage(StagePosition.FIRST, per_stage, p, embedding=True, output_layer=False),
        PipelineStage(StagePosition.LAST, per_stage, 1, embedding=False, output_layer=True),
    )


def stage_parameters(shape: ModelShape, total: int, stage: PipelineStage) -> tuple[int, str]:
    """Parameters one pipeline stage holds: its ⌈L/p⌉ layers' share of the body (P less the input embedding V·h and
    the output head V·h) plus the embedding on the first stage and the head on the last. Megatron-LM keeps a copy of
    tied embeddings on the last stage for the output layer, so it is counted there too. Without a vocabulary (or
    without pipeline parallelism) the body is all of P."""
    layers = require(shape.num_layers, "num_layers", gettext_noop("pipeline stages"))
    if stage.position is StagePosition.WHOLE:
        return total, "P"
    embedding = (shape.vocab_size or 0) * (shape.hidden_size or 0)
    has_head = shape.architecture is not Architecture.ENCODER
    head_in_total = embedding if has_head and not shape.tied_embeddings else 0
    body = max(total - embedding - head_in_total, 0)
    share = math.ceil(Fraction(body * stage.layers, layers))
    if stage.position is StagePosition.FIRST:
        return share + embedding, "V·h + ⌈L/p⌉/L·(P − embedding − head)"
    return share + (embedding if has_head else 0), "V·h (head) + ⌈L/p⌉/L·(P − embedding − head)"


def _activation_terms(shape: ModelShape, request: TrainingRequest, stage: PipelineStage) -> list[Term]:
    purpose = gettext_noop("training activations")
    layers = require(shape.num_layers, "num_layers", purpose)
    h = require(shape.hidden_size, "hidden_size", purpose)
    a = require(shape.num_attention_heads, "num_attention_heads", purpose)
    s, b, t, p = request.sequence_length, request.micro_batch_size, request.tensor_parallel, request.pipeline_parallel
    recompute = Recompute(request.recompute)
    per_layer_arguments = {
        "sequence_length": s,
        "micro_batch_size": b,
        "hidden_size": h,
        "attention_heads": a,
        "tensor_parallel": t,
        "flash_attention": request.flash_attention,
        "sequence_parallel": request.sequence_parallel,
    }
    per_layer, layer_formula = activation_bytes_per_layer(**per_layer_arguments, recompute=recompute)
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
    if request.sequence_parallel:
        inputs["sequence parallel"] = True
    stored_layers = stage.layers * stage.in_flight_micro_batches
    if stage.position is StagePosition.WHOLE:
        formula = f"L·{layer_formula}"
    else:
        inputs.update({"p": p, "pipeline stage": stage.position.value})
        if stage.position is StagePosition.FIRST:
            formula = f"p·⌈L/p⌉·{layer_formula} (first stage: p micro-batches in flight)"
        else:
            formula = f"⌈L/p⌉·{layer_formula} (last stage: one micro-batch in flight)"
    total = stored_layers * per_layer
    if recompute is Recompute.FULL:
        # Backward recomputes one layer at a time: that layer's full activations are live on top of the inputs.
        working, working_formula = activation_bytes_per_layer(**per_layer_arguments, recompute=Recompute.NONE)
        total += working
        formula += f" + {working_formula} (one layer recomputed in backward)"
    terms = [Term("activations", total, formula, inputs)]
    if stage.output_layer and shape.vocab_size is not None and shape.architecture is not Architecture.DIFFUSION:
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


def _stage_terms(shape: ModelShape, request: TrainingRequest, stage: PipelineStage) -> list[Term]:
    t, n, stage_, p = request.tensor_parallel, request.data_parallel_gpus, request.zero_stage, request.pipeline_parallel
    layers = shape.num_layers or 1
    method = TrainingMethod(request.method)
    optimizer = {"optimizer_bits": request.optimizer_bits, "optimizer_offload": request.optimizer_offload}
    stage_note: dict[str, InputValue] = {} if p == 1 else {"p": p, "pipeline stage": stage.position.value}
    terms: list[Term] = []
    if method is TrainingMethod.FULL:
        params, _, _ = effective_parameters(shape)
        stage_params, params_formula = stage_parameters(shape, params, stage)
        for term in model_state_terms(stage_params, stage_, n, t, **optimizer):
            if p > 1:
                term = replace(
                    term, formula=f"{term.formula}, P = {params_formula}", inputs={**term.inputs, **stage_note}
                )
            terms.append(term)
    else:
        base_precision = Precision.NF4 if method is TrainingMethod.QLORA else shape.precision
        # The frozen base is split evenly over the stages (its embedding and head are not placed separately).
        divisor = t * p * (n if stage_ == 3 else 1)
        divisor_formula = ("/(t·N)" if stage_ == 3 else "/t") if p == 1 else ("/(t·p·N)" if stage_ == 3 else "/(t·p)")
        terms.append(
            weights_term(
                shape,
                name="frozen_base_weights",
                precision=base_precision,  # type: ignore[arg-type]
                double_quantisation=request.double_quantisation if method is TrainingMethod.QLORA else None,
                divisor=divisor,
                divisor_formula=divisor_formula,
                divisor_inputs={"t": t, "N": n, **({"p": p} if p > 1 else {})},
            )
        )
        adapters = lora_trainable_parameters(shape, request.lora_rank, request.lora_targets)
        stage_adapters = adapters if p == 1 else math.ceil(Fraction(adapters * stage.layers, layers))
        adapter_formula = "LoRA Σ r·(d_in + d_out)" + ("" if p == 1 else " over the stage's ⌈L/p⌉ layers")
        for term in model_state_terms(stage_adapters, stage_, n, t, **optimizer):
            terms.append(
                replace(
                    term,
                    formula=f"{term.formula}, P = {adapter_formula}",
                    inputs={
                        **term.inputs,
                        "r": request.lora_rank,
                        "targets": ",".join(request.lora_targets),
                        **stage_note,
                    },
                )
            )
    terms += _activation_terms(shape, request, stage)
    return terms


def estimate_training(shape: ModelShape, request: TrainingRequest) -> Breakdown:
    """Per-GPU memory to train: model states (mixed-precision Adam, ZeRO-sharded, optionally 8-bit or offloaded) or
    frozen base + LoRA adapters, activations, CUDA context/runtime, then the safety margin. With pipeline parallelism
    the estimate is the heavier of the first stage (embedding, p micro-batches of activations) and the last (head,
    output layer and loss)."""
    t, n, p = request.tensor_parallel, request.data_parallel_gpus, request.pipeline_parallel
    check_tensor_parallel(shape, t)
    if p > 1:
        layers = require(shape.num_layers, "num_layers", gettext_noop("pipeline stages"))
    else:
        layers = shape.num_layers or 1
    candidates = [_stage_terms(shape, request, stage) for stage in pipeline_stages(layers, p)]
    terms = max(candidates, key=lambda stage_terms: sum(term.size_bytes for term in stage_terms))
    terms.append(runtime_term(request.cuda_context_bytes, request.runtime_overhead_bytes))
    return Breakdown(EstimateKind.TRAINING, with_safety_margin(terms, request.safety_margin_fraction), gpus=t * p * n)
