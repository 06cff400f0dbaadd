"""The guide's tables as data: step 1 readiness, step 2 metrics, the quick-answer matrix, the GPU cheat sheet and the
rent/reserve/buy/API table.

Plain Python (no Django): every text is the English, marked with `gettext_noop`; the web layer shows it with
`gettext(text)` in the active language and the app's catalogs (apps/workloads/locale) hold the French and Indonesian.
The checks that use these tables live in readiness.py and shortlist.py. Codes (workload types, field names, metric
codes) match apps/workloads/models.py, and tests/test_rules.py checks that they stay in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from apps.common.i18n import gettext_noop

# --------------------------------------------------------------------------------------------------------------------
# Workload types and the groups the tables use
# --------------------------------------------------------------------------------------------------------------------

TRAINING = "training"
FULL_FINE_TUNING = "full_fine_tuning"
LORA_FINE_TUNING = "lora_fine_tuning"
BATCH_INFERENCE = "batch_inference"
REALTIME_INFERENCE = "realtime_inference"
CODE_AGENT = "code_agent"
EMBEDDING = "embedding"
IMAGE_GENERATION = "image_generation"
VIDEO_GENERATION = "video_generation"
EVALUATION = "evaluation"
NOTEBOOK = "notebook"

WORKLOAD_TYPES = (
    TRAINING,
    FULL_FINE_TUNING,
    LORA_FINE_TUNING,
    BATCH_INFERENCE,
    REALTIME_INFERENCE,
    CODE_AGENT,
    EMBEDDING,
    IMAGE_GENERATION,
    VIDEO_GENERATION,
    EVALUATION,
    NOTEBOOK,
)
ALL = frozenset(WORKLOAD_TYPES)
TRAINS = frozenset({TRAINING, FULL_FINE_TUNING, LORA_FINE_TUNING})
SERVES_LLM = frozenset({BATCH_INFERENCE, REALTIME_INFERENCE, CODE_AGENT, EVALUATION})
MEDIA = frozenset({IMAGE_GENERATION, VIDEO_GENERATION})
PRODUCTION = ALL - {NOTEBOOK}

# How the memory estimate treats each type: "training" (model states, activations), "inference" (weights, KV cache,
# activation peak), or "media" (a diffusion denoiser: weights and the activation peak over its latent tokens).
ESTIMATE_KIND: Mapping[str, str] = MappingProxyType(
    {
        TRAINING: "training",
        FULL_FINE_TUNING: "training",
        LORA_FINE_TUNING: "training",
        BATCH_INFERENCE: "inference",
        REALTIME_INFERENCE: "inference",
        CODE_AGENT: "inference",
        EMBEDDING: "inference",
        IMAGE_GENERATION: "media",
        VIDEO_GENERATION: "media",
        EVALUATION: "inference",
        NOTEBOOK: "inference",
    }
)


# --------------------------------------------------------------------------------------------------------------------
# Step 1: which fields a workload summary needs, per workload type, and why ("if you cannot fill this table, pause
# GPU selection")
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """Fields a summary must state before it is ready, for the workload types in `applies_to`.

    `check`: "present" (every field has a value), or the name of a test in readiness.py ("parameter_count": a stated
    count or a layer shape it can be computed from; "ffn": a dense or expert FFN size). `when`: extra conditions on
    other fields ({"architecture": ("moe",)}).
    """

    code: str
    fields: tuple[str, ...]
    applies_to: frozenset[str]
    why: str
    check: str = "present"
    when: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


READINESS: tuple[Requirement, ...] = (
    Requirement(
        "workload_type",
        ("workload_type",),
        ALL,
        gettext_noop("Training, serving and media load a GPU in different ways; every later comparison starts here."),
    ),
    Requirement(
        "model_name",
        ("model_name",),
        ALL,
        gettext_noop("Quotes and benchmarks must test the same model, or its closest proxy."),
    ),
    Requirement(
        "architecture",
        ("architecture",),
        ALL,
        gettext_noop("The architecture decides which memory terms apply: a KV cache, experts, or none."),
    ),
    Requirement(
        "parameter_count",
        ("params",),
        ALL,
        gettext_noop(
            "Weights take parameters × bytes per parameter: state the count, or the layer shape it follows from."
        ),
        check="parameter_count",
    ),
    Requirement(
        "precision",
        ("precision",),
        ALL,
        gettext_noop("FP16, FP8 or INT4 weights change the memory by 2–4× and so which GPUs fit."),
    ),
    Requirement(
        "attention_shape",
        ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads"),
        TRAINS | SERVES_LLM,
        gettext_noop(
            "The KV cache and the activations grow with layers, hidden size and (KV) heads; grouped-query attention "
            "cuts the cache by the heads-to-KV-heads ratio."
        ),
    ),
    Requirement(
        "hidden_size",
        ("hidden_size",),
        frozenset({EMBEDDING}) | MEDIA,
        gettext_noop("The activation peak of one forward pass grows with the hidden size."),
    ),
    Requirement(
        "ffn_size",
        ("ffn_size",),
        SERVES_LLM | frozenset({EMBEDDING}) | MEDIA,
        gettext_noop("The FFN intermediates are the largest live tensors of a forward pass."),
        check="ffn",
    ),
    Requirement(
        "vocab_size",
        ("vocab_size",),
        TRAINS | SERVES_LLM,
        gettext_noop("Logits and the output layer take sequence × vocabulary memory."),
    ),
    Requirement(
        "context_window",
        ("max_context_tokens",),
        SERVES_LLM | frozenset({EMBEDDING}),
        gettext_noop("The p95 context must fit the model's window; a longer window invites longer prompts later."),
    ),
    Requirement(
        "modality",
        ("modality",),
        ALL,
        gettext_noop("Text, image, video and audio pipelines stress memory, storage and kernels differently."),
    ),
    Requirement(
        "tokenizer",
        ("tokenizer",),
        TRAINS | SERVES_LLM | frozenset({EMBEDDING}),
        gettext_noop("Token counts, and so every cost per token, depend on the tokenizer."),
    ),
    Requirement(
        "model_change_cadence",
        ("model_change_cadence",),
        ALL,
        gettext_noop("A model that changes every month argues against long commitments (mistake 6)."),
    ),
    Requirement(
        "input_tokens",
        ("mean_input_tokens", "p95_input_tokens"),
        SERVES_LLM | frozenset({EMBEDDING}),
        gettext_noop("Memory is sized at the p95 input, cost at the mean."),
    ),
    Requirement(
        "output_tokens",
        ("mean_output_tokens", "p95_output_tokens"),
        SERVES_LLM,
        gettext_noop("The KV cache holds input and output tokens; output length also sets the decode time."),
    ),
    Requirement(
        "image_size",
        ("image_width_px", "image_height_px"),
        MEDIA,
        gettext_noop("The image size sets the number of latent tokens the denoiser works on."),
    ),
    Requirement(
        "video_length",
        ("video_duration_seconds", "video_frames_per_second"),
        frozenset({VIDEO_GENERATION}),
        gettext_noop("Duration × frame rate multiplies the latent tokens of a clip."),
    ),
    Requirement(
        "batch_size",
        ("batch_size",),
        TRAINS | frozenset({BATCH_INFERENCE, EMBEDDING, EVALUATION}) | MEDIA,
        gettext_noop("Each sequence or image in a batch adds its own activations and cache."),
    ),
    Requirement(
        "concurrency",
        ("concurrent_sessions_mean", "concurrent_sessions_peak"),
        frozenset({REALTIME_INFERENCE, CODE_AGENT}),
        gettext_noop("A GPU that fits one user may not fit production concurrency: the KV cache is sized at the peak."),
    ),
    Requirement(
        "arrival_rate",
        ("arrival_rate_mean", "arrival_rate_peak"),
        frozenset({REALTIME_INFERENCE, CODE_AGENT, EMBEDDING}),
        gettext_noop("The benchmark replays this load, and the peak sets how many nodes are needed at the SLO."),
    ),
    Requirement(
        "records_per_job",
        ("records_per_job",),
        frozenset({BATCH_INFERENCE, EVALUATION}),
        gettext_noop("A batch job is sized and billed by the records it must finish."),
    ),
    Requirement(
        "demand",
        ("demand_per_month",),
        PRODUCTION,
        gettext_noop("Cost per accepted output needs the accepted outputs per month."),
    ),
    Requirement(
        "operating_hours",
        ("hours_per_day", "days_per_month"),
        ALL,
        gettext_noop("Hours of use decide between on-demand and reserved capacity and how much of it sits idle."),
    ),
    Requirement(
        "training_plan",
        ("tokens_to_train", "training_sequence_length", "checkpoint_interval_minutes"),
        TRAINS,
        gettext_noop(
            "A run's cost is its GPU-hours to the target plus checkpointing; the sequence length sets the activations."
        ),
    ),
    Requirement(
        "eval_target",
        ("target_eval_metric", "target_eval_score"),
        TRAINS,
        gettext_noop("A training run only counts as completed when it reaches the target evaluation score."),
    ),
    Requirement(
        "failure_rate",
        ("expected_failures_per_1000_gpu_hours", "failure_rate_source"),
        TRAINS,
        gettext_noop("Restarts waste GPU-hours: the expected failure rate, with its source, prices that risk."),
    ),
    Requirement(
        "lora_rank",
        ("lora_rank",),
        frozenset({LORA_FINE_TUNING}),
        gettext_noop("The adapter rank sets the trainable parameters and their optimizer states."),
    ),
    Requirement(
        "unit_of_success",
        ("unit_of_success",),
        ALL,
        gettext_noop("Step 2 divides the cost by accepted outputs: name what counts as one."),
    ),
    Requirement(
        "quality_acceptance",
        ("quality_acceptance_rate", "quality_acceptance_source"),
        PRODUCTION,
        gettext_noop(
            "Benchmark accepted outputs, not generated ones (mistake 4): state the expected acceptance rate and where "
            "it comes from."
        ),
    ),
    Requirement(
        "latency_class",
        ("latency_class",),
        ALL,
        gettext_noop("Offline work can trade latency for throughput; sub-second work cannot."),
    ),
    Requirement(
        "latency_limits",
        ("p95_ttft_ms", "p99_ttft_ms", "p95_tpot_ms", "p95_e2e_ms", "p99_e2e_ms", "streaming"),
        frozenset({REALTIME_INFERENCE}),
        gettext_noop("Real-time serving is judged at the tail: the p95/p99 limits define an accepted response."),
    ),
    Requirement(
        "agent_latency",
        ("p95_e2e_ms", "p99_e2e_ms"),
        frozenset({CODE_AGENT}),
        gettext_noop(
            "A code agent makes many model calls per task (tool calls, test runs): the p95/p99 limit of each call "
            "adds up to how long a developer waits for the patch."
        ),
    ),
    Requirement(
        "embedding_latency",
        ("p95_e2e_ms",),
        frozenset({EMBEDDING}),
        gettext_noop("Online embedding and reranking sit inside another request's latency budget."),
    ),
    Requirement(
        "operating_mode",
        ("operating_mode",),
        ALL,
        gettext_noop("Always-on, scheduled, bursty and experimental work call for different capacity models."),
    ),
    Requirement(
        "operating_boundary",
        ("operating_boundary",),
        ALL,
        gettext_noop("Data and network boundaries rule out some providers before any price is compared."),
    ),
    Requirement(
        "tools",
        ("tools",),
        PRODUCTION,
        gettext_noop("The provider must support your serving stack and scheduler (procurement checklist)."),
    ),
)


# --------------------------------------------------------------------------------------------------------------------
# Step 2: the decision metric per workload
# --------------------------------------------------------------------------------------------------------------------

METRICS: Mapping[str, str] = MappingProxyType(
    {
        "cost_per_training_run": gettext_noop("Cost per completed training run that reaches the target eval score"),
        "cost_per_checkpoint": gettext_noop("Cost per accepted fine-tuned checkpoint"),
        "cost_per_response": gettext_noop("Cost per accepted response at the target p95/p99 latency"),
        "cost_per_record_or_token": gettext_noop("Cost per accepted record or accepted output token"),
        "cost_per_task": gettext_noop("Cost per accepted task, accepted patch, or resolved issue"),
        "cost_per_image": gettext_noop("Cost per accepted image after quality filters"),
        "cost_per_clip_second": gettext_noop("Cost per accepted second or accepted clip"),
        "cost_per_eval_suite": gettext_noop("Cost per completed eval suite and time to answer"),
    }
)

# The step-2 row each workload type starts from. A code agent is the guide's "code agent" row (an accepted task, an
# accepted patch or a resolved issue); embedding and reranking are billed per accepted record; a notebook is judged
# like a code agent, by the tasks it gets done.
PROPOSED_METRIC: Mapping[str, str] = MappingProxyType(
    {
        TRAINING: "cost_per_training_run",
        FULL_FINE_TUNING: "cost_per_checkpoint",
        LORA_FINE_TUNING: "cost_per_checkpoint",
        BATCH_INFERENCE: "cost_per_record_or_token",
        REALTIME_INFERENCE: "cost_per_response",
        CODE_AGENT: "cost_per_task",
        EMBEDDING: "cost_per_record_or_token",
        IMAGE_GENERATION: "cost_per_image",
        VIDEO_GENERATION: "cost_per_clip_second",
        EVALUATION: "cost_per_eval_suite",
        NOTEBOOK: "cost_per_task",
    }
)


# --------------------------------------------------------------------------------------------------------------------
# The GPU cheat sheet
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuFamily:
    """One row of the guide's GPU cheat sheet; `catalog_names` are the catalog GPU names that belong to it."""

    code: str
    label: str  # a product name, the same in every language
    catalog_names: tuple[str, ...]
    role: str
    best_fit: str
    watch: str

    def matches(self, gpu_name: str) -> bool:
        return any(gpu_name == name or gpu_name.startswith(name + " ") for name in self.catalog_names)


GPU_FAMILIES: tuple[GpuFamily, ...] = (
    GpuFamily(
        "a100",
        "NVIDIA A100",
        ("NVIDIA A100",),
        gettext_noop("Mature baseline for training and inference"),
        gettext_noop("Existing recipes, 40GB/80GB variants, broad cloud availability, budget-sensitive workloads"),
        gettext_noop("Older generation; lower memory bandwidth and fewer newer precision paths than H100/H200/B200"),
    ),
    GpuFamily(
        "h100",
        "NVIDIA H100",
        ("NVIDIA H100",),
        gettext_noop("Hopper-class workhorse for training and inference"),
        gettext_noop(
            "Strong framework maturity, FP8 Transformer Engine support, high memory bandwidth, NVLink/NVSwitch options"
        ),
        gettext_noop(
            "Supply and pricing can still constrain; memory may be insufficient for very long-context, "
            "high-concurrency inference"
        ),
    ),
    GpuFamily(
        "h200",
        "NVIDIA H200",
        ("NVIDIA H200",),
        gettext_noop("Hopper variant with larger memory capacity"),
        gettext_noop(
            "More HBM capacity and bandwidth than H100; useful for long-context inference and memory-heavy jobs"
        ),
        gettext_noop("Availability and pricing vary; compare against H100 for your specific workload"),
    ),
    GpuFamily(
        "b200",
        "NVIDIA B200",
        ("NVIDIA B200",),
        gettext_noop("Blackwell-class accelerator"),
        gettext_noop(
            "Heavy training and inference, newer low-precision format support, large memory capacity and high "
            "bandwidth"
        ),
        gettext_noop("Requires stack readiness, provider availability, and topology checks"),
    ),
    GpuFamily(
        "gb200",
        "NVIDIA GB200",
        ("NVIDIA GB200",),
        gettext_noop("Large-scale training and high-density inference (rack-scale systems)"),
        gettext_noop("Cluster-scale jobs where the system architecture matters as much as the GPU chip"),
        gettext_noop("Procurement and operations are system-level decisions, not just a GPU choice"),
    ),
    GpuFamily(
        "l40s",
        "NVIDIA L40S",
        ("NVIDIA L40S",),
        gettext_noop("Cost-sensitive inference and media jobs"),
        gettext_noop("48GB memory, image/video pipelines, small LLM inference, batch jobs"),
        gettext_noop("Not a universal replacement for H100/H200 in large training or strict p99 LLM inference"),
    ),
    GpuFamily(
        "rtx",
        "NVIDIA RTX",
        ("NVIDIA RTX",),
        gettext_noop("Local experimentation and creator workflows (RTX-class local GPUs)"),
        gettext_noop("Prototyping, small models, personal workstation iteration"),
        gettext_noop("Limited memory, less data-center operating track record, and not a production cluster by itself"),
    ),
)
GPU_FAMILIES_BY_CODE: Mapping[str, GpuFamily] = MappingProxyType({family.code: family for family in GPU_FAMILIES})


def family_of(gpu_name: str) -> GpuFamily | None:
    """The cheat-sheet row of a catalog GPU ("NVIDIA H200" → h200), or None for a GPU the guide does not list.
    The longest matching name wins, so "NVIDIA GB200" is not taken for a B200."""
    matches = [family for family in GPU_FAMILIES if family.matches(gpu_name)]
    return max(matches, key=lambda family: max(len(name) for name in family.catalog_names), default=None)


# --------------------------------------------------------------------------------------------------------------------
# The quick-answer matrix
# --------------------------------------------------------------------------------------------------------------------

# What a workload's ranking weighs after memory fit: the multi-GPU interconnect for training, the decode
# speed behind p99 latency for real-time serving, and for throughput work the least memory that still fits (cost per
# output, until quotes give real prices).
NEED_INTERCONNECT = "interconnect"
NEED_TAIL_LATENCY = "tail_latency"
NEED_COST_PER_OUTPUT = "cost_per_output"
NEEDS = (NEED_INTERCONNECT, NEED_TAIL_LATENCY, NEED_COST_PER_OUTPUT)

NEED_TEXTS: Mapping[str, str] = MappingProxyType(
    {
        NEED_INTERCONNECT: gettext_noop(
            "Multi-GPU interconnect first (NVLink bandwidth from the catalog): training scales across GPUs."
        ),
        NEED_TAIL_LATENCY: gettext_noop(
            "p99 latency first: decoding is bound by memory bandwidth (from the catalog), so faster memory ranks "
            "higher."
        ),
        NEED_COST_PER_OUTPUT: gettext_noop(
            "Cost per output first: the smallest GPU that fits wastes the least; quotes replace this with real prices."
        ),
    }
)


@dataclass(frozen=True)
class QuickAnswer:
    """One row of the quick-answer matrix: what the workload prioritises, the GPU directions and what to watch."""

    code: str
    workload: str
    prioritises: str
    directions: str
    families: tuple[str, ...]  # the cheat-sheet rows named in the directions, in the guide's order
    watch: str
    need: str


QUICK_ANSWERS: tuple[QuickAnswer, ...] = (
    QuickAnswer(
        "pretraining",
        gettext_noop("Pre-training or large-scale training"),
        gettext_noop("Multi-node networking, HBM capacity, memory bandwidth, BF16/FP8 performance, checkpoint I/O"),
        gettext_noop("H100/H200, B200/GB200-class systems, managed training clusters"),
        ("h100", "h200", "b200", "gb200"),
        gettext_noop("Hourly price is secondary to time-to-completed-run and restart risk"),
        NEED_INTERCONNECT,
    ),
    QuickAnswer(
        "full_fine_tuning",
        gettext_noop("Full fine-tuning"),
        gettext_noop("Memory headroom, optimizer state capacity, tensor parallelism, storage locality"),
        gettext_noop("H100, H200, B200, A100 for smaller models"),
        ("h100", "h200", "b200", "a100"),
        gettext_noop("VRAM shortfalls can force slower sharding or smaller batch sizes"),
        NEED_INTERCONNECT,
    ),
    QuickAnswer(
        "lora",
        gettext_noop("LoRA/QLoRA fine-tuning"),
        gettext_noop("VRAM fit, CUDA compatibility, price-performance"),
        gettext_noop("A100, L40S, H100, H200, high-end local GPUs for small jobs"),
        ("a100", "l40s", "h100", "h200", "rtx"),
        gettext_noop("Dataset and context length can change memory needs"),
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "batch_llm",
        gettext_noop("Batch LLM inference"),
        gettext_noop("Memory fit, batching efficiency, tokens per dollar, queue tolerance"),
        gettext_noop("L40S, A100, H100, H200, B200 depending on model size"),
        ("l40s", "a100", "h100", "h200", "b200"),
        gettext_noop("Low utilization can erase cheaper GPU rates"),
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "realtime_llm",
        gettext_noop("Real-time LLM inference"),
        gettext_noop("p95/p99 latency, KV cache capacity, streaming stability, serving framework support"),
        gettext_noop("H100/H200/B200 for large or long-context models; L40S/A100 for smaller models"),
        ("h100", "h200", "b200", "l40s", "a100"),
        gettext_noop("Tail latency and retries matter more than peak tokens/sec"),
        NEED_TAIL_LATENCY,
    ),
    # Code agents are not a row of the matrix; the guide names them in step 2 (cost per accepted task, patch or resolved
    # issue) and in mistake 4 (failed patches). Their repository contexts make them long-context serving, so the
    # real-time row's long-context direction applies, and the rent/reserve/buy/API table's model/API route fits low or
    # uncertain volume.
    QuickAnswer(
        "code_agent",
        gettext_noop("Code agents and coding assistants"),
        gettext_noop(
            "Long-context fit (32k–128k tokens of repository context), KV cache capacity at peak sessions, tail "
            "latency over the many model calls of one task"
        ),
        gettext_noop(
            "A model/API route at low or uncertain volume; H100/H200/B200 for self-hosted large or long-context "
            "models; L40S/A100 for smaller models"
        ),
        ("h100", "h200", "b200", "l40s", "a100"),
        gettext_noop(
            "Failed patches and retries count: judge the cost per accepted task (tests pass, the reviewer accepts "
            "the patch), not per generated token"
        ),
        NEED_TAIL_LATENCY,
    ),
    QuickAnswer(
        "embedding",
        gettext_noop("Embeddings and reranking"),
        gettext_noop("Throughput per dollar, CPU/GPU balance, batch size, serving simplicity"),
        gettext_noop("L40S, A100, smaller cloud GPUs, sometimes CPU for low volume"),
        ("l40s", "a100"),
        gettext_noop("Overprovisioned GPUs are common at low traffic"),
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "media",
        gettext_noop("Image and video generation"),
        gettext_noop("VRAM, media kernels, storage bandwidth, queue tolerance"),
        gettext_noop("L40S, H100/H200/B200 for heavier pipelines, RTX-class local workstations for creators"),
        ("l40s", "h100", "h200", "b200", "rtx"),
        gettext_noop("Final cost per accepted image/clip matters more than raw render speed"),
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "evaluation",
        gettext_noop("Evaluation and synthetic data"),
        gettext_noop("Burst capacity, cost control, model diversity"),
        gettext_noop("Spot/marketplace GPUs, batch APIs, or model/API routes"),
        (),
        gettext_noop("Avoid owning idle capacity for infrequent bursts"),
        NEED_COST_PER_OUTPUT,
    ),
    # Notebooks are not a row of the matrix; the cheat sheet's RTX row ("local experimentation … prototyping, small
    # models") and the adapter-tuning row's smaller GPUs give their direction.
    QuickAnswer(
        "notebook",
        gettext_noop("Developer notebooks"),
        gettext_noop("Fit for small models, fast iteration, low idle cost"),
        gettext_noop(
            "RTX-class local GPUs for prototyping and small models; L40S or A100 when a notebook outgrows them"
        ),
        ("rtx", "l40s", "a100"),
        gettext_noop("A notebook GPU is not a production cluster; idle hours dominate its cost"),
        NEED_COST_PER_OUTPUT,
    ),
)
QUICK_ANSWERS_BY_CODE: Mapping[str, QuickAnswer] = MappingProxyType({row.code: row for row in QUICK_ANSWERS})

QUICK_ANSWER_FOR_TYPE: Mapping[str, str] = MappingProxyType(
    {
        TRAINING: "pretraining",
        FULL_FINE_TUNING: "full_fine_tuning",
        LORA_FINE_TUNING: "lora",
        BATCH_INFERENCE: "batch_llm",
        REALTIME_INFERENCE: "realtime_llm",
        CODE_AGENT: "code_agent",
        EMBEDDING: "embedding",
        IMAGE_GENERATION: "media",
        VIDEO_GENERATION: "media",
        EVALUATION: "evaluation",
        NOTEBOOK: "notebook",
    }
)


# --------------------------------------------------------------------------------------------------------------------
# Rent, reserve, buy or use a model API
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapacityRule:
    """One row of the guide's rent/reserve/buy/API table. It applies when any one of `conditions` holds; a condition
    maps field names to the values that satisfy it (all fields must match; "tools" matches when any listed tool is
    used)."""

    code: str
    situation: str
    starting_point: str
    conditions: tuple[Mapping[str, tuple[str, ...]], ...]


CAPACITY_RULES: tuple[CapacityRule, ...] = (
    CapacityRule(
        "uncertain_demand",
        gettext_noop("Uncertain demand, changing models, or prototype"),
        gettext_noop("Model API or short-term rental"),
        (
            {"model_change_cadence": ("monthly",)},
            {"operating_mode": ("experiment", "notebook")},
            {"workload_type": (NOTEBOOK,)},
            # A code agent that is not always on has low or uneven volume: the model/API route is its default.
            {"workload_type": (CODE_AGENT,), "operating_mode": ("scheduled_batch", "seasonal_burst")},
        ),
    ),
    CapacityRule(
        "irregular_experiments",
        gettext_noop("Irregular experiments and eval jobs"),
        gettext_noop("Spot/marketplace GPUs or batch model API"),
        (
            {"workload_type": (EVALUATION,)},
            {"operating_mode": ("seasonal_burst",)},
            {"operating_mode": ("experiment",), "workload_type": tuple(TRAINS)},
        ),
    ),
    CapacityRule(
        "steady_inference",
        gettext_noop("Steady high-load inference on one model"),
        gettext_noop("Reserved GPUs, dedicated endpoints, or reserved clusters"),
        (
            {
                "operating_mode": ("always_on",),
                "workload_type": (
                    BATCH_INFERENCE,
                    REALTIME_INFERENCE,
                    CODE_AGENT,
                    EMBEDDING,
                    IMAGE_GENERATION,
                    VIDEO_GENERATION,
                ),
                "model_change_cadence": ("stable", "yearly"),
            },
        ),
    ),
    CapacityRule(
        "multi_node_training",
        gettext_noop("Multi-node training with topology requirements"),
        gettext_noop("Dedicated training cluster or reserved high-speed fabric"),
        ({"workload_type": (TRAINING,)}, {"workload_type": (FULL_FINE_TUNING,), "tools": ("slurm", "ray")}),
    ),
    CapacityRule(
        "private_hardware",
        gettext_noop("Strict network isolation or private hardware"),
        gettext_noop("Private GPU cloud or dedicated cluster"),
        ({"operating_boundary": ("private_network", "dedicated_cluster", "on_prem", "data_residency")},),
    ),
    CapacityRule(
        "managed_models",
        gettext_noop("Need many official models, one balance, and fallback"),
        gettext_noop("Managed model/API route"),
        ({"operating_boundary": ("managed_api",)}, {"tools": ("provider_endpoint",)}),
    ),
)


def capacity_rule_matches(rule: CapacityRule, values: Mapping[str, object]) -> bool:
    """True when one of the rule's conditions holds for these field values (tools: a list of tool codes)."""

    def field_matches(name: str, accepted: tuple[str, ...]) -> bool:
        value = values.get(name)
        if name == "tools":
            return bool(set(value or ()) & set(accepted))  # type: ignore[arg-type]
        return value in accepted

    return any(
        all(field_matches(name, accepted) for name, accepted in condition.items()) for condition in rule.conditions
    )


def capacity_hints(values: Mapping[str, object]) -> tuple[CapacityRule, ...]:
    """The rows of the rent/reserve/buy/API table that apply, in the guide's order."""
    return tuple(rule for rule in CAPACITY_RULES if capacity_rule_matches(rule, values))


# The fields the capacity table reads (so a page can say which are still empty when no row applies).
CAPACITY_FIELDS = ("workload_type", "operating_mode", "operating_boundary", "model_change_cadence", "tools")
