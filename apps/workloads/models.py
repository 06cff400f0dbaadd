"""Workload summaries: the eight fields of the guide's step 1, versioned.

A `Workload` is the lineage a team files once; each `WorkloadSummary` row is one version of it (1, 2, …). A draft
version is edited in place; marking it ready freezes it, and editing a ready version makes version N+1 (a draft),
so quotes, benchmark plans and decisions attached to version N keep exactly what they were made for.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Exists, F, OuterRef, Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.accounts.fields import user_foreign_key
from apps.accounts.scoping import TeamScopedQuerySet
from apps.common.models import (
    TeamOwnedModel,
    source_field,
    sourced_pair_constraints,
    team_foreign_key,
)
from apps.workloads import rules
from apps.workloads.memory import inference, precisions, shapes, training


class WorkloadType(models.TextChoices):
    TRAINING = rules.TRAINING, _("Training / pre-training")
    FULL_FINE_TUNING = rules.FULL_FINE_TUNING, _("Full fine-tuning")
    # In context: the quick-answer row of rules.QUICK_ANSWERS has the same English, worded differently in Indonesian.
    LORA_FINE_TUNING = rules.LORA_FINE_TUNING, pgettext_lazy("workload type", "LoRA/QLoRA fine-tuning")
    BATCH_INFERENCE = rules.BATCH_INFERENCE, _("Batch LLM inference")
    REALTIME_INFERENCE = rules.REALTIME_INFERENCE, _("Real-time LLM inference")
    CODE_AGENT = rules.CODE_AGENT, _("Code agent / coding assistant")
    EMBEDDING = rules.EMBEDDING, _("Embedding / reranking")
    IMAGE_GENERATION = rules.IMAGE_GENERATION, _("Image generation")
    VIDEO_GENERATION = rules.VIDEO_GENERATION, _("Video generation")
    EVALUATION = rules.EVALUATION, _("Evaluation / synthetic data")
    NOTEBOOK = rules.NOTEBOOK, _("Developer notebook")


class Architecture(models.TextChoices):
    DENSE = shapes.Architecture.DENSE.value, _("Dense decoder")
    MOE = shapes.Architecture.MOE.value, _("Mixture of experts (MoE)")
    ENCODER = shapes.Architecture.ENCODER.value, _("Encoder")
    DIFFUSION = shapes.Architecture.DIFFUSION.value, _("Diffusion transformer")
    OTHER = shapes.Architecture.OTHER.value, _("Other")


class Precision(models.TextChoices):
    # Format names, the same in every language: not marked for translation.
    FP32 = "fp32", "FP32"
    BF16 = "bf16", "BF16"
    FP16 = "fp16", "FP16"
    FP8 = "fp8", "FP8"
    INT8 = "int8", "INT8"
    INT4 = "int4", "INT4"
    NF4 = "nf4", "NF4"


KV_CACHE_PRECISIONS = [(value, label) for value, label in Precision.choices if value in precisions.KV_CACHE_PRECISIONS]


class Modality(models.TextChoices):
    TEXT = "text", _("Text")
    IMAGE = "image", _("Still images")
    VIDEO = "video", _("Video clips")
    AUDIO = "audio", _("Speech and audio")
    MULTIMODAL = "multimodal", _("Multimodal (text with images, audio or video)")


class ChangeCadence(models.TextChoices):
    STABLE = "stable", _("Stable (rarely changes)")
    YEARLY = "yearly", _("About once a year")
    QUARTERLY = "quarterly", _("About once a quarter")
    MONTHLY = "monthly", _("Monthly or faster")


# How long a model is expected to last, in months, for the "buying only for today's model" check.
EXPECTED_LIFE_MONTHS = {
    ChangeCadence.YEARLY: Decimal(12),
    ChangeCadence.QUARTERLY: Decimal(3),
    ChangeCadence.MONTHLY: Decimal(1),
}


class UnitOfSuccess(models.TextChoices):
    TRAINING_RUN = "completed_training_run", _("Completed training run")
    CHECKPOINT = "accepted_checkpoint", _("Accepted checkpoint")
    RESPONSE = "accepted_response", _("Accepted response")
    TOKEN = "accepted_token", _("Accepted token")
    TASK = "accepted_task", _("Accepted task or patch")
    IMAGE = "accepted_image", _("Accepted image")
    CLIP = "accepted_clip_second", _("Accepted clip or second of video")
    RECORD = "accepted_record", _("Accepted record")
    EVAL_SUITE = "completed_eval_suite", _("Completed eval suite")


class LatencyClass(models.TextChoices):
    OFFLINE = "offline", _("Offline")
    MINUTES = "minutes", _("Within minutes")
    SECONDS = "seconds", _("Within seconds")
    SUB_SECOND = "sub_second", _("Under a second")


class OperatingMode(models.TextChoices):
    ALWAYS_ON = "always_on", _("Always-on")
    SCHEDULED_BATCH = "scheduled_batch", _("Scheduled batch")
    SEASONAL_BURST = "seasonal_burst", _("Seasonal burst")
    EXPERIMENT = "experiment", _("Experiment")
    NOTEBOOK = "notebook", _("Developer notebook")


class OperatingBoundary(models.TextChoices):
    PUBLIC_CLOUD = "public_cloud", _("Public cloud")
    PRIVATE_NETWORK = "private_network", _("Private network")
    DEDICATED_CLUSTER = "dedicated_cluster", _("Dedicated cluster")
    ON_PREM = "on_prem", _("On-premises")
    DATA_RESIDENCY = "data_residency", _("Data residency")
    MANAGED_API = "managed_api", _("Managed API")


class Tool(models.TextChoices):
    # Product names, the same in every language, except the last one.
    VLLM = "vllm", "vLLM"
    SGLANG = "sglang", "SGLang"
    TENSORRT_LLM = "tensorrt_llm", "TensorRT-LLM"
    TRITON = "triton", "Triton"
    RAY = "ray", "Ray"
    SLURM = "slurm", "Slurm"
    KUBERNETES = "kubernetes", "Kubernetes"
    COMFYUI = "comfyui", "ComfyUI"
    PROVIDER_ENDPOINT = "provider_endpoint", _("Provider-managed endpoint")


class DecisionMetric(models.TextChoices):
    # Labels in context where the step-2 texts of rules.METRICS have the same English, worded differently in Indonesian.
    TRAINING_RUN = "cost_per_training_run", _("Cost per completed training run at the target eval score")
    CHECKPOINT = "cost_per_checkpoint", pgettext_lazy("decision metric", "Cost per accepted fine-tuned checkpoint")
    RESPONSE = "cost_per_response", pgettext_lazy(
        "decision metric", "Cost per accepted response at the target p95/p99 latency"
    )
    RECORD_OR_TOKEN = "cost_per_record_or_token", _("Cost per accepted record or output token")
    TASK = "cost_per_task", _("Cost per accepted task or patch")
    IMAGE = "cost_per_image", pgettext_lazy("decision metric", "Cost per accepted image after quality filters")
    CLIP_SECOND = "cost_per_clip_second", _("Cost per accepted second or clip")
    EVAL_SUITE = "cost_per_eval_suite", _("Cost per completed eval suite")


class Recompute(models.TextChoices):
    NONE = training.Recompute.NONE.value, _("None")
    SELECTIVE = training.Recompute.SELECTIVE.value, _("Selective (attention scores)")
    FULL = training.Recompute.FULL.value, _("Full (keep each layer's input)")


class OptimizerOffload(models.TextChoices):
    NONE = training.OptimizerOffload.NONE.value, _("None (on the GPU)")
    CPU = training.OptimizerOffload.CPU.value, _("CPU memory (ZeRO-Offload)")
    NVME = training.OptimizerOffload.NVME.value, _("NVMe (ZeRO-Infinity)")


class OptimizerBits(models.IntegerChoices):
    THIRTY_TWO = 32, _("32-bit Adam")
    EIGHT = 8, _("8-bit Adam (bitsandbytes)")


class Status(models.TextChoices):
    DRAFT = "draft", _("Draft")
    READY = "ready", _("Ready")


def validate_tools(value) -> None:
    """A list of distinct Tool codes."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(_("Choose tools from the list."), code="not_a_list")
    unknown = [item for item in value if item not in Tool.values]
    if unknown:
        raise ValidationError(_("Unknown tool: %(tools)s."), code="unknown_tool", params={"tools": ", ".join(unknown)})
    if len(set(value)) != len(value):
        raise ValidationError(_("A tool is listed twice."), code="duplicate_tool")


def _limits(maximum: int, minimum: int = 1) -> list:
    return [MinValueValidator(minimum), MaxValueValidator(maximum)]


SHAPE_LIMITS = shapes.SHAPE_LIMITS
MAX_TOKENS = inference.MAX_CONTEXT_TOKENS
MAX_SESSIONS = inference.MAX_CONCURRENT_SESSIONS
MAX_LATENCY_MS = 3_600_000  # one hour: anything slower is not a latency target


class Workload(TeamOwnedModel):
    """The lineage of a workload summary: one team's workload across all its versions."""

    team = team_foreign_key("workloads")

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("workload")
        verbose_name_plural = _("workloads")

    def __str__(self) -> str:
        latest = self.latest_version()
        return latest.name if latest else str(_("Workload %(id)s") % {"id": self.pk})

    def get_absolute_url(self) -> str:
        latest = self.latest_version()
        return latest.get_absolute_url() if latest else reverse("workloads:list")

    def latest_version(self) -> WorkloadSummary | None:
        return self.versions.order_by("-version").first()


class WorkloadSummaryQuerySet(TeamScopedQuerySet):
    def ready(self):
        return self.filter(status=Status.READY)

    def latest_versions(self):
        """Only the newest version of each workload."""
        newer = WorkloadSummary.objects.filter(workload_id=OuterRef("workload_id"), version__gt=OuterRef("version"))
        return self.filter(~Exists(newer))


class WorkloadSummary(TeamOwnedModel):
    """One version of a workload summary: the eight fields of step 1, its decision metric, and its status."""

    workload = models.ForeignKey(
        Workload, on_delete=models.PROTECT, related_name="versions", verbose_name=_("workload")
    )
    team = team_foreign_key("workload_summaries")
    version = models.PositiveIntegerField(_("version number"), default=1)
    status = models.CharField(_("readiness status"), max_length=10, choices=Status.choices, default=Status.DRAFT)
    name = models.CharField(_("name"), max_length=200, help_text=_("What the workload is, e.g. “support chat”."))
    notes = models.TextField(_("remarks"), blank=True)

    # 1. Workload type
    workload_type = models.CharField(_("workload type"), max_length=30, choices=WorkloadType.choices, blank=True)

    # 2. Model shape
    model_name = models.CharField(
        _("model"), max_length=200, blank=True, help_text=_("The model or its closest public proxy.")
    )
    architecture = models.CharField(_("model architecture"), max_length=20, choices=Architecture.choices, blank=True)
    params = models.PositiveBigIntegerField(
        _("parameters"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["params"])
    )
    active_params = models.PositiveBigIntegerField(
        _("active parameters per token"),
        null=True,
        blank=True,
        validators=_limits(SHAPE_LIMITS["active_params"]),
        help_text=_("Mixture of experts only."),
    )
    num_layers = models.PositiveIntegerField(
        _("layers"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["num_layers"])
    )
    hidden_size = models.PositiveIntegerField(
        _("hidden size"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["hidden_size"])
    )
    num_attention_heads = models.PositiveIntegerField(
        _("attention heads"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["num_attention_heads"])
    )
    num_kv_heads = models.PositiveIntegerField(
        _("KV heads"),
        null=True,
        blank=True,
        validators=_limits(SHAPE_LIMITS["num_kv_heads"]),
        help_text=_("Equal to the attention heads for multi-head attention; fewer for grouped-query attention."),
    )
    head_dim = models.PositiveIntegerField(
        _("head dim"),
        null=True,
        blank=True,
        validators=_limits(SHAPE_LIMITS["head_dim"]),
        help_text=_("Only when the config states one; otherwise hidden size ÷ heads."),
    )
    ffn_size = models.PositiveIntegerField(
        _("FFN size"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["ffn_size"])
    )
    vocab_size = models.PositiveIntegerField(
        _("vocabulary"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["vocab_size"])
    )
    tied_embeddings = models.BooleanField(_("tied embeddings"), default=False)
    num_experts = models.PositiveIntegerField(
        _("number of experts"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["num_experts"])
    )
    num_experts_per_token = models.PositiveIntegerField(
        _("experts per token"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["num_experts_per_token"])
    )
    expert_ffn_size = models.PositiveIntegerField(
        _("expert FFN size"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["expert_ffn_size"])
    )
    sliding_window = models.PositiveIntegerField(
        _("sliding window (tokens)"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["sliding_window"])
    )
    sliding_window_layers = models.PositiveIntegerField(
        _("layers using the sliding window"),
        null=True,
        blank=True,
        validators=_limits(SHAPE_LIMITS["sliding_window_layers"], minimum=0),
    )
    precision = models.CharField(_("precision and quantisation"), max_length=10, choices=Precision.choices, blank=True)
    kv_cache_precision = models.CharField(
        _("KV-cache dtype"),
        max_length=10,
        choices=KV_CACHE_PRECISIONS,
        blank=True,
        help_text=_("Empty: the model's 16-bit dtype."),
    )
    max_context_tokens = models.PositiveIntegerField(
        _("context window (tokens)"), null=True, blank=True, validators=_limits(SHAPE_LIMITS["max_context_tokens"])
    )
    modality = models.CharField(_("modality"), max_length=20, choices=Modality.choices, blank=True)
    tokenizer = models.CharField(_("tokenizer used"), max_length=200, blank=True)
    model_change_cadence = models.CharField(
        _("how often the model changes"), max_length=20, choices=ChangeCadence.choices, blank=True
    )
    shape_extras = models.JSONField(
        _("further shape values from config.json"),
        default=dict,
        blank=True,
        help_text=_("Latent attention, shared experts, biases and encoder details, as read from config.json."),
    )
    config_json = models.JSONField(_("config.json as read"), null=True, blank=True)

    # 3. Request shape
    mean_input_tokens = models.PositiveIntegerField(
        _("mean input tokens"), null=True, blank=True, validators=_limits(MAX_TOKENS)
    )
    p95_input_tokens = models.PositiveIntegerField(
        _("p95 input tokens"), null=True, blank=True, validators=_limits(MAX_TOKENS)
    )
    mean_output_tokens = models.PositiveIntegerField(
        _("mean output tokens"), null=True, blank=True, validators=_limits(MAX_TOKENS)
    )
    p95_output_tokens = models.PositiveIntegerField(
        _("p95 output tokens"), null=True, blank=True, validators=_limits(MAX_TOKENS)
    )
    image_width_px = models.PositiveIntegerField(
        _("image width (px)"), null=True, blank=True, validators=_limits(32_768)
    )
    image_height_px = models.PositiveIntegerField(
        _("image height (px)"), null=True, blank=True, validators=_limits(32_768)
    )
    video_duration_seconds = models.PositiveIntegerField(
        _("video duration (s)"), null=True, blank=True, validators=_limits(86_400)
    )
    video_frames_per_second = models.PositiveIntegerField(
        _("video frames per second"), null=True, blank=True, validators=_limits(480)
    )
    batch_size = models.PositiveIntegerField(_("batch size"), null=True, blank=True, validators=_limits(65_536))
    concurrent_sessions_mean = models.PositiveIntegerField(
        _("concurrent sessions (mean)"), null=True, blank=True, validators=_limits(MAX_SESSIONS)
    )
    concurrent_sessions_peak = models.PositiveIntegerField(
        _("concurrent sessions (peak)"), null=True, blank=True, validators=_limits(MAX_SESSIONS)
    )
    arrival_rate_mean = models.DecimalField(
        _("arrival rate, mean (requests/s)"),
        max_digits=14,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.0001")), MaxValueValidator(Decimal(1_000_000))],
    )
    arrival_rate_peak = models.DecimalField(
        _("arrival rate, peak (requests/s)"),
        max_digits=14,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.0001")), MaxValueValidator(Decimal(1_000_000))],
    )
    records_per_job = models.PositiveBigIntegerField(
        _("records per job"), null=True, blank=True, validators=_limits(10**12)
    )
    demand_per_month = models.DecimalField(
        _("demand per month (units of success)"),
        max_digits=20,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal(10**15))],
    )
    hours_per_day = models.DecimalField(
        _("operating hours per day"),
        max_digits=4,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal(24))],
    )
    days_per_month = models.DecimalField(
        _("operating days per month"),
        max_digits=4,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal(31))],
    )

    # 4. Training and fine-tuning
    tokens_to_train = models.PositiveBigIntegerField(
        _("tokens to train"), null=True, blank=True, validators=_limits(10**15)
    )
    training_sequence_length = models.PositiveIntegerField(
        _("training sequence length (tokens)"), null=True, blank=True, validators=_limits(MAX_TOKENS)
    )
    zero_stage = models.PositiveSmallIntegerField(
        _("ZeRO stage"), null=True, blank=True, validators=_limits(3, minimum=0), help_text=_("0 to 3; empty: 0.")
    )
    data_parallel_gpus = models.PositiveIntegerField(
        _("data-parallel GPUs"), null=True, blank=True, validators=_limits(training.MAX_GPUS), help_text=_("Empty: 1.")
    )
    recompute = models.CharField(_("activation recomputation"), max_length=20, choices=Recompute.choices, blank=True)
    tensor_parallel = models.PositiveIntegerField(
        _("tensor-parallel GPUs"),
        null=True,
        blank=True,
        validators=_limits(1024),
        help_text=_("GPUs each layer is split over. Empty: 1."),
    )
    sequence_parallel = models.BooleanField(
        _("sequence parallelism"),
        default=False,
        blank=True,
        help_text=_("Splits the activations tensor parallelism leaves whole; needs more than one tensor-parallel GPU."),
    )
    pipeline_parallel = models.PositiveIntegerField(
        _("pipeline-parallel stages"),
        null=True,
        blank=True,
        validators=_limits(1024),
        help_text=_("The layers split over this many stages (1F1B schedule). Empty: 1."),
    )
    optimizer_offload = models.CharField(
        _("optimizer offload"),
        max_length=10,
        choices=OptimizerOffload.choices,
        blank=True,
        help_text=_("CPU needs ZeRO stage 1 or higher, NVMe ZeRO stage 3. Empty: none."),
    )
    optimizer_bits = models.PositiveSmallIntegerField(
        _("optimizer state bits"),
        choices=OptimizerBits.choices,
        null=True,
        blank=True,
        help_text=_("Adam's moments in 32 bits or in 8 bits (bitsandbytes). Empty: 32."),
    )
    lora_rank = models.PositiveIntegerField(
        _("LoRA rank"), null=True, blank=True, validators=_limits(65_536), help_text=_("LoRA/QLoRA only.")
    )
    target_eval_metric = models.CharField(_("target evaluation metric"), max_length=200, blank=True)
    target_eval_score = models.DecimalField(
        _("target evaluation score"), max_digits=14, decimal_places=4, null=True, blank=True
    )
    checkpoint_interval_minutes = models.PositiveIntegerField(
        _("checkpoint interval (minutes)"), null=True, blank=True, validators=_limits(10_080)
    )
    expected_failures_per_1000_gpu_hours = models.DecimalField(
        _("expected failures per 1,000 GPU-hours"),
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(1000))],
    )
    failure_rate_source = source_field(_("source of the failure rate"))

    # 5. Unit of success
    unit_of_success = models.CharField(_("unit of success"), max_length=30, choices=UnitOfSuccess.choices, blank=True)
    quality_acceptance_rate = models.DecimalField(
        _("expected quality acceptance"),
        max_digits=5,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.0001")), MaxValueValidator(Decimal(1))],
        help_text=_("A fraction: 0.95 means 95 in 100 outputs pass the evaluations."),
    )
    quality_acceptance_source = source_field(_("source of the acceptance rate"))

    # 6. Latency target
    latency_class = models.CharField(_("latency target"), max_length=20, choices=LatencyClass.choices, blank=True)
    p95_ttft_ms = models.PositiveIntegerField(
        _("p95 time to first token (ms)"), null=True, blank=True, validators=_limits(MAX_LATENCY_MS)
    )
    p99_ttft_ms = models.PositiveIntegerField(
        _("p99 time to first token (ms)"), null=True, blank=True, validators=_limits(MAX_LATENCY_MS)
    )
    p95_tpot_ms = models.PositiveIntegerField(
        _("p95 time per output token (ms)"), null=True, blank=True, validators=_limits(MAX_LATENCY_MS)
    )
    p99_tpot_ms = models.PositiveIntegerField(
        _("p99 time per output token (ms)"), null=True, blank=True, validators=_limits(MAX_LATENCY_MS)
    )
    p95_e2e_ms = models.PositiveIntegerField(
        _("p95 end-to-end latency (ms)"), null=True, blank=True, validators=_limits(MAX_LATENCY_MS)
    )
    p99_e2e_ms = models.PositiveIntegerField(
        _("p99 end-to-end latency (ms)"), null=True, blank=True, validators=_limits(MAX_LATENCY_MS)
    )
    streaming = models.BooleanField(_("streamed responses"), null=True, blank=True)

    # 7. Operating mode, 8. operating boundary, and the tools
    operating_mode = models.CharField(_("operating mode"), max_length=20, choices=OperatingMode.choices, blank=True)
    operating_boundary = models.CharField(
        _("operating boundary"), max_length=20, choices=OperatingBoundary.choices, blank=True
    )
    tools = models.JSONField(_("tools"), default=list, blank=True, validators=[validate_tools])

    # Step 2: the decision metric (empty: the one proposed for the workload type)
    decision_metric = models.CharField(_("decision metric"), max_length=40, choices=DecisionMetric.choices, blank=True)
    decision_metric_reason = models.TextField(_("why this metric"), blank=True)

    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    ready_by = user_foreign_key(_("marked ready by"))
    ready_at = models.DateTimeField(_("marked ready at"), null=True, blank=True)

    objects = WorkloadSummaryQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-pk"]
        verbose_name = _("workload summary")
        verbose_name_plural = _("workload summaries")
        constraints = [
            models.UniqueConstraint(fields=["workload", "version"], name="workloads_summary_unique_version"),
            models.UniqueConstraint(
                fields=["workload"],
                condition=Q(status="draft"),
                name="workloads_summary_one_draft",
                violation_error_message=_("A workload has at most one draft version."),
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="workloads_summary_version_positive"),
            models.CheckConstraint(condition=~Q(name=""), name="workloads_summary_named"),
            models.CheckConstraint(
                condition=Q(status="draft") | Q(ready_at__isnull=False),
                name="workloads_summary_ready_has_time",
            ),
            models.CheckConstraint(
                condition=Q(quality_acceptance_rate__isnull=True)
                | (Q(quality_acceptance_rate__gt=0) & Q(quality_acceptance_rate__lte=1)),
                name="workloads_summary_acceptance_is_fraction",
                violation_error_message=_("The quality acceptance is a fraction above 0 and at most 1."),
            ),
            # clean() asks for the same with a stricter test (a source of blanks is no source).
            *sourced_pair_constraints(
                "workloads_summary",
                failure_rate=(
                    "expected_failures_per_1000_gpu_hours", "failure_rate_source",
                    _("Say where the failure rate comes from."),
                ),
                acceptance=(
                    "quality_acceptance_rate", "quality_acceptance_source",
                    _("Say where the acceptance rate comes from (an evaluation run, a pilot, a vendor report)."),
                ),
            ),
            models.CheckConstraint(
                condition=Q(hours_per_day__isnull=True) | Q(hours_per_day__lte=24),
                name="workloads_summary_hours_per_day",
                violation_error_message=_("A day has at most 24 hours."),
            ),
            models.CheckConstraint(
                condition=Q(days_per_month__isnull=True) | Q(days_per_month__lte=31),
                name="workloads_summary_days_per_month",
                violation_error_message=_("A month has at most 31 days."),
            ),
            models.CheckConstraint(
                condition=Q(zero_stage__isnull=True) | Q(zero_stage__lte=3),
                name="workloads_summary_zero_stage",
                violation_error_message=_("ZeRO has stages 0 to 3."),
            ),
            models.CheckConstraint(
                condition=Q(optimizer_bits__isnull=True) | Q(optimizer_bits__in=[8, 32]),
                name="workloads_summary_optimizer_bits",
                violation_error_message=_("Adam keeps its states in 32 or 8 bits."),
            ),
            models.CheckConstraint(
                condition=Q(p95_input_tokens__isnull=True)
                | Q(mean_input_tokens__isnull=True)
                | Q(mean_input_tokens__lte=F("p95_input_tokens")),
                name="workloads_summary_input_mean_le_p95",
                violation_error_message=_("The mean input cannot exceed the p95 input."),
            ),
            models.CheckConstraint(
                condition=Q(p95_output_tokens__isnull=True)
                | Q(mean_output_tokens__isnull=True)
                | Q(mean_output_tokens__lte=F("p95_output_tokens")),
                name="workloads_summary_output_mean_le_p95",
                violation_error_message=_("The mean output cannot exceed the p95 output."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def get_absolute_url(self) -> str:
        return reverse("workloads:detail", args=[self.pk])

    # -- state -------------------------------------------------------------------------------------------------------

    @property
    def is_ready(self) -> bool:
        """Frozen and usable for quotes, benchmarks and decisions."""
        return self.status == Status.READY

    @property
    def is_draft(self) -> bool:
        return self.status == Status.DRAFT

    def newer_versions(self) -> models.QuerySet[WorkloadSummary]:
        return WorkloadSummary.objects.filter(workload_id=self.workload_id, version__gt=self.version).order_by(
            "version"
        )

    def latest_version(self) -> WorkloadSummary:
        return self.workload.versions.order_by("-version").first() or self

    @property
    def is_latest(self) -> bool:
        return not self.newer_versions().exists()

    # -- step 2 ------------------------------------------------------------------------------------------------------

    @property
    def proposed_metric(self) -> str | None:
        return rules.PROPOSED_METRIC.get(self.workload_type) if self.workload_type else None

    @property
    def effective_metric(self) -> str | None:
        """The metric this summary is judged by: the one chosen (with its reason), else the proposed one."""
        return self.decision_metric or self.proposed_metric

    @property
    def metric_differs_from_proposal(self) -> bool:
        return bool(self.decision_metric) and self.decision_metric != self.proposed_metric

    def get_effective_metric_display(self) -> str:
        metric = self.effective_metric
        return str(DecisionMetric(metric).label) if metric else ""

    # -- figures the later phases read --------------------------------------------------------------------------------

    @property
    def p95_context_tokens(self) -> int | None:
        """p95 input + p95 output tokens: the context the KV cache is sized for."""
        if self.p95_input_tokens is None:
            return None
        return self.p95_input_tokens + (self.p95_output_tokens or 0)

    @property
    def peak_concurrency(self) -> int | None:
        return self.concurrent_sessions_peak or self.batch_size

    @property
    def has_acceptance_criteria(self) -> bool:
        return bool(self.unit_of_success) and self.quality_acceptance_rate is not None

    @property
    def model_expected_life_months(self) -> Decimal | None:
        return EXPECTED_LIFE_MONTHS.get(self.model_change_cadence)

    @property
    def operating_hours_per_month(self) -> Decimal | None:
        if self.hours_per_day is None or self.days_per_month is None:
            return None
        return self.hours_per_day * self.days_per_month

    def get_tools_display(self) -> list[str]:
        labels = dict(Tool.choices)
        return [str(labels.get(code, code)) for code in self.tools or []]

    # -- validation --------------------------------------------------------------------------------------------------

    def clean(self) -> None:
        from apps.workloads.validation import summary_errors

        errors = summary_errors(self)
        if errors:
            raise ValidationError(errors)
