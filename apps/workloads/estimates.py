"""From a workload summary to memory estimates: the model shape and request it implies, the per-GPU breakdown, its
fit on every catalog GPU and the inverse answers (largest concurrency, fewest GPUs, smallest fitting GPU).

Plain Python (no Django): it reads the summary's attributes, so a saved WorkloadSummary, an unsaved one built from
a form, or any object with the same attribute names works. The stateless estimate API calls `analyse()` directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from apps.workloads import rules
from apps.workloads.memory.breakdown import Breakdown, EstimateKind
from apps.workloads.memory.capacity import Capacity, FitResult, fit
from apps.workloads.memory.errors import ShapeError, gettext_noop
from apps.workloads.memory.inference import InferenceRequest, estimate_inference
from apps.workloads.memory.precisions import Precision
from apps.workloads.memory.search import fewest_gpus_inference, fewest_gpus_training, largest_concurrency
from apps.workloads.memory.shapes import Architecture, ModelShape
from apps.workloads.memory.training import Recompute, TrainingMethod, TrainingRequest, estimate_training

# Summary fields that are ModelShape fields of the same name.
SHAPE_FIELDS = (
    "params",
    "active_params",
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "ffn_size",
    "vocab_size",
    "num_experts",
    "num_experts_per_token",
    "expert_ffn_size",
    "sliding_window",
    "sliding_window_layers",
    "max_context_tokens",
)
# ModelShape fields a summary keeps only as read from config.json (`shape_extras`): latent attention, shared experts,
# biases and encoder specifics.
EXTRA_SHAPE_FIELDS = (
    "gated_ffn",
    "qkv_bias",
    "double_quantisation",
    "num_shared_experts",
    "shared_expert_ffn_size",
    "first_dense_layers",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "q_lora_rank",
    "qk_nope_head_dim",
    "v_head_dim",
    "position_embeddings",
    "token_type_vocab_size",
    "pooler",
    "linear_biases",
    "layer_norm",
    "linear_attention_layers",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
    "pipeline_parts",
)
DEFAULT_ARCHITECTURE = Architecture.DENSE
DEFAULT_PRECISION = Precision.BF16
DEFAULT_LORA_RANK = 16

# Diffusion transformers (Stable Diffusion 3, FLUX) encode an image with a VAE that downsamples 8× per side and cut
# the latent into 2×2 patches: one token per 16×16 pixels. Video VAEs (Wan 2.1, HunyuanVideo) also compress time 4×,
# keeping the first frame: latent frames = 1 + ⌈(frames − 1)/4⌉.
PIXELS_PER_LATENT_TOKEN_SIDE = 16
VIDEO_TEMPORAL_COMPRESSION = 4
# A denoiser runs the whole latent batch in every step: no chunked prefill caps the tokens of one forward pass.
MEDIA_MAX_BATCHED_TOKENS = 2**24

# Which summary fields give the concurrent sequences of an inference estimate, first filled one wins.
SESSION_FIELDS: Mapping[str, tuple[str, ...]] = {
    rules.REALTIME_INFERENCE: ("concurrent_sessions_peak", "batch_size"),
    rules.CODE_AGENT: ("concurrent_sessions_peak", "batch_size"),
    rules.BATCH_INFERENCE: ("concurrent_sessions_peak", "batch_size"),
    rules.EVALUATION: ("concurrent_sessions_peak", "batch_size"),
    rules.EMBEDDING: ("batch_size", "concurrent_sessions_peak"),
    rules.NOTEBOOK: ("concurrent_sessions_peak", "batch_size"),
    rules.IMAGE_GENERATION: ("batch_size",),
    rules.VIDEO_GENERATION: ("batch_size",),
}
# Notebooks and media default to one session or image when nothing is stated.
SESSIONS_DEFAULT_ONE = frozenset({rules.NOTEBOOK, rules.IMAGE_GENERATION, rules.VIDEO_GENERATION})


class MissingInput(Exception):
    """The summary does not state enough to estimate yet; `fields` are the summary fields to fill."""

    def __init__(self, fields: Sequence[str]):
        super().__init__(", ".join(fields))
        self.fields = tuple(fields)


def _get(summary: Any, name: str) -> Any:
    value = getattr(summary, name, None)
    return None if value == "" else value


def model_shape(summary: Any) -> ModelShape:
    """The ModelShape the summary states (ShapeError names the field at fault)."""
    values: dict[str, Any] = {name: _get(summary, name) for name in SHAPE_FIELDS if _get(summary, name) is not None}
    extras = _get(summary, "shape_extras") or {}
    values.update({name: extras[name] for name in EXTRA_SHAPE_FIELDS if extras.get(name) is not None})
    return ModelShape(
        architecture=_get(summary, "architecture") or DEFAULT_ARCHITECTURE,
        precision=_get(summary, "precision") or DEFAULT_PRECISION,
        tied_embeddings=bool(_get(summary, "tied_embeddings")),
        **values,
    )


def _default(shape: ModelShape, name: str) -> Any:
    if name == "gated_ffn":  # resolved from the architecture when not given
        return shape.architecture is not Architecture.ENCODER
    return ModelShape.__dataclass_fields__[name].default


def shape_extras_from(shape: ModelShape) -> dict[str, Any]:
    """The ModelShape fields a summary has no column for, as JSON-ready values (defaults left out)."""
    extras = {}
    for name in EXTRA_SHAPE_FIELDS:
        value = getattr(shape, name)
        if value is not None and value != _default(shape, name):
            extras[name] = value
    return extras


def summary_values_from(shape: ModelShape) -> dict[str, Any]:
    """The summary field values a ModelShape (read from config.json) fills in."""
    values: dict[str, Any] = {name: getattr(shape, name) for name in SHAPE_FIELDS}
    values.update(
        architecture=shape.architecture.value,
        precision=shape.precision.value,
        tied_embeddings=shape.tied_embeddings,
        shape_extras=shape_extras_from(shape),
    )
    return values


# --------------------------------------------------------------------------------------------------------------------
# The estimate a summary asks for
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EstimatePlan:
    """The shape and the request of one summary's estimate, and how the request was derived from its fields."""

    kind: EstimateKind
    shape: ModelShape
    request: InferenceRequest | TrainingRequest
    derivation: Mapping[str, str] = field(default_factory=dict)  # request input → "formula (fields)"

    def breakdown(self) -> Breakdown:
        if isinstance(self.request, TrainingRequest):
            return estimate_training(self.shape, self.request)
        return estimate_inference(self.shape, self.request)


def _first(summary: Any, names: Iterable[str]) -> tuple[str, Any] | None:
    for name in names:
        value = _get(summary, name)
        if value is not None:
            return name, value
    return None


def _media_tokens(summary: Any, workload_type: str) -> tuple[int, str]:
    width, height = _get(summary, "image_width_px"), _get(summary, "image_height_px")
    missing = [name for name, value in (("image_width_px", width), ("image_height_px", height)) if value is None]
    side = PIXELS_PER_LATENT_TOKEN_SIDE
    if workload_type == rules.VIDEO_GENERATION:
        duration, fps = _get(summary, "video_duration_seconds"), _get(summary, "video_frames_per_second")
        missing += [
            name
            for name, value in (("video_duration_seconds", duration), ("video_frames_per_second", fps))
            if value is None
        ]
        if missing:
            raise MissingInput(missing)
        frames = max(1, math.ceil(duration * fps))
        latent_frames = 1 + math.ceil((frames - 1) / VIDEO_TEMPORAL_COMPRESSION)
        tokens = math.ceil(width / side) * math.ceil(height / side) * latent_frames
        formula = (
            f"⌈w/{side}⌉·⌈h/{side}⌉·(1 + ⌈(seconds·fps − 1)/{VIDEO_TEMPORAL_COMPRESSION}⌉) "
            f"= ⌈{width}/{side}⌉·⌈{height}/{side}⌉·{latent_frames} = {tokens}"
        )
        return tokens, formula
    if missing:
        raise MissingInput(missing)
    tokens = math.ceil(width / side) * math.ceil(height / side)
    return tokens, f"⌈w/{side}⌉·⌈h/{side}⌉ = ⌈{width}/{side}⌉·⌈{height}/{side}⌉ = {tokens}"


def _llm_context(summary: Any, workload_type: str) -> tuple[int, str]:
    p95_in, p95_out = _get(summary, "p95_input_tokens"), _get(summary, "p95_output_tokens")
    if p95_in is not None and p95_out is not None:
        return p95_in + p95_out, f"p95_input_tokens + p95_output_tokens = {p95_in} + {p95_out}"
    if p95_in is not None and workload_type in (rules.EMBEDDING, rules.NOTEBOOK):
        return p95_in, f"p95_input_tokens = {p95_in}"
    window = _get(summary, "max_context_tokens")
    if workload_type == rules.NOTEBOOK and window is not None:
        return window, f"max_context_tokens = {window}"
    needed = ["p95_input_tokens"] if p95_in is None else []
    if workload_type != rules.EMBEDDING and p95_out is None:
        needed.append("p95_output_tokens")
    raise MissingInput(needed)


def _inference_request(summary: Any, workload_type: str) -> tuple[InferenceRequest, dict[str, str]]:
    if workload_type in rules.MEDIA:
        context, context_formula = _media_tokens(summary, workload_type)
    else:
        context, context_formula = _llm_context(summary, workload_type)
    session_fields = SESSION_FIELDS.get(workload_type, ("concurrent_sessions_peak", "batch_size"))
    found = _first(summary, session_fields)
    if found is None:
        if workload_type not in SESSIONS_DEFAULT_ONE:
            raise MissingInput(session_fields[:1])
        sessions, sessions_formula = 1, "1"
    else:
        sessions, sessions_formula = found[1], f"{found[0]} = {found[1]}"
    extra: dict[str, Any] = {}
    if workload_type in rules.MEDIA:
        extra["max_batched_tokens"] = MEDIA_MAX_BATCHED_TOKENS
    request = InferenceRequest(
        p95_context_tokens=context,
        concurrent_sessions=sessions,
        kv_cache_precision=_get(summary, "kv_cache_precision"),
        **extra,
    )
    return request, {"c": context_formula, "sessions": sessions_formula}


def training_method(summary: Any) -> TrainingMethod:
    """Full training for pre-training and full fine-tuning; LoRA, or QLoRA when the base is stored in 4 bits."""
    if _get(summary, "workload_type") != rules.LORA_FINE_TUNING:
        return TrainingMethod.FULL
    precision = _get(summary, "precision")
    if precision in (Precision.NF4, Precision.INT4):
        return TrainingMethod.QLORA
    return TrainingMethod.LORA


def _training_request(summary: Any) -> tuple[TrainingRequest, dict[str, str]]:
    sequence = _get(summary, "training_sequence_length")
    if sequence is None:
        raise MissingInput(["training_sequence_length"])
    batch = _get(summary, "batch_size") or 1
    request = TrainingRequest(
        sequence_length=sequence,
        micro_batch_size=batch,
        method=training_method(summary),
        zero_stage=_get(summary, "zero_stage") or 0,
        data_parallel_gpus=_get(summary, "data_parallel_gpus") or 1,
        recompute=_get(summary, "recompute") or Recompute.NONE,
        tensor_parallel=_get(summary, "tensor_parallel") or 1,
        sequence_parallel=bool(_get(summary, "sequence_parallel")),
        pipeline_parallel=_get(summary, "pipeline_parallel") or 1,
        optimizer_offload=_get(summary, "optimizer_offload") or "none",
        optimizer_bits=_get(summary, "optimizer_bits") or 32,
        lora_rank=_get(summary, "lora_rank") or DEFAULT_LORA_RANK,
    )
    return request, {"s": f"training_sequence_length = {sequence}", "b": f"batch_size = {batch}"}


def plan_for(summary: Any) -> EstimatePlan:
    """The estimate the summary asks for. MissingInput names the fields still empty; ShapeError a field at fault."""
    workload_type = _get(summary, "workload_type")
    if workload_type is None:
        raise MissingInput(["workload_type"])
    shape = model_shape(summary)
    if rules.ESTIMATE_KIND[workload_type] == "training":
        request, derivation = _training_request(summary)
        return EstimatePlan(EstimateKind.TRAINING, shape, request, derivation)
    request, derivation = _inference_request(summary, workload_type)
    return EstimatePlan(EstimateKind.INFERENCE, shape, request, derivation)


# --------------------------------------------------------------------------------------------------------------------
# Fit on each GPU and the inverse answers
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuCapacity:
    """One catalog GPU as the estimate sees it: its usable memory (with the figure's source) and the figures the
    shortlist ranks by."""

    key: Any
    name: str
    capacity: Capacity
    family: str | None = None  # rules.GPU_FAMILIES code
    nvlink_gbps: float | None = None
    memory_bandwidth_tbps: float | None = None


@dataclass(frozen=True)
class GpuFit:
    gpu: GpuCapacity
    fit: FitResult  # the planned per-GPU need against this GPU
    fewest_gpus: int | None  # inference: tensor-parallel degree; training: GPUs (t·N) at the planned ZeRO stage
    fewest_gpus_zero3: int | None = None  # training when the plan is not already ZeRO-3
    largest_concurrency: int | None = None  # inference on the planned degree; None with concurrency_unbounded
    concurrency_unbounded: bool = False

    @property
    def fits_somehow(self) -> bool:
        return self.fit.fits or self.fewest_gpus is not None or self.fewest_gpus_zero3 is not None


@dataclass(frozen=True)
class Analysis:
    plan: EstimatePlan
    breakdown: Breakdown
    fits: tuple[GpuFit, ...]
    smallest_fitting: GpuFit | None

    @property
    def kind(self) -> EstimateKind:
        return self.plan.kind


def _gpu_fit(plan: EstimatePlan, breakdown: Breakdown, gpu: GpuCapacity) -> GpuFit:
    result = fit(breakdown, gpu.capacity)
    if isinstance(plan.request, TrainingRequest):
        request = plan.request
        found = fewest_gpus_training(plan.shape, request, gpu.capacity)
        fewest = None if found is None else found[0] * request.tensor_parallel
        zero3 = None
        if request.zero_stage != 3:
            found3 = fewest_gpus_training(plan.shape, replace(request, zero_stage=3), gpu.capacity)
            zero3 = None if found3 is None else found3[0] * request.tensor_parallel
        return GpuFit(gpu, result, fewest, fewest_gpus_zero3=zero3)
    found = fewest_gpus_inference(plan.shape, plan.request, gpu.capacity)
    concurrency = largest_concurrency(plan.shape, plan.request, gpu.capacity)
    return GpuFit(
        gpu,
        result,
        None if found is None else found[0],
        largest_concurrency=concurrency,
        concurrency_unbounded=concurrency is None,
    )


def analyse(plan: EstimatePlan, gpus: Iterable[GpuCapacity]) -> Analysis:
    """The breakdown, its fit on every GPU with the inverse answers, and the smallest GPU it fits on."""
    breakdown = plan.breakdown()
    fits = tuple(_gpu_fit(plan, breakdown, gpu) for gpu in gpus)
    fitting = [item for item in fits if item.fit.fits]
    smallest = min(fitting, key=lambda item: item.gpu.capacity.total_bytes, default=None)
    return Analysis(plan, breakdown, fits, smallest)


def safe_plan(summary: Any) -> tuple[EstimatePlan | None, MissingInput | ShapeError | None]:
    """plan_for() that returns its error instead of raising it (pages show either the estimate or what it needs)."""
    try:
        return plan_for(summary), None
    except (MissingInput, ShapeError) as error:
        return None, error


def plan_from_inputs(kind: str, shape_values: Mapping[str, Any], request_values: Mapping[str, Any]) -> EstimatePlan:
    """A plan from explicit estimator inputs (the stateless API). Unknown keys raise ShapeError naming them."""
    shape = _build(ModelShape, shape_values, "shape")
    request_type = TrainingRequest if kind == EstimateKind.TRAINING else InferenceRequest
    request = _build(request_type, request_values, "request")
    return EstimatePlan(EstimateKind(kind), shape, request)


def _build(cls: type, values: Mapping[str, Any], where: str) -> Any:
    allowed = set(cls.__dataclass_fields__)
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ShapeError(
            unknown[0],
            f"Unknown {where} field {unknown[0]!r}.",
            template=gettext_noop("Unknown field %(name)r."),
            params={"name": unknown[0]},
        )
    if cls is TrainingRequest and isinstance(values.get("lora_targets"), list):
        values = {**values, "lora_targets": tuple(values["lora_targets"])}
    try:
        return cls(**values)
    except TypeError as error:  # a required field is absent
        missing = next((name for name in cls.__dataclass_fields__ if name in str(error)), where)
        raise ShapeError(
            missing,
            "This field is required.",
            template=gettext_noop("This field is required."),
        ) from None
