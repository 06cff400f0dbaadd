"""The `memory_fit` job (benchmark phase 1): does the workload fit this device, and how close is the estimate?

It builds a proxy of the workload's model shape (`dossier_agent.proxies`) in a probe process, runs it at the workload's
p95 context and peak concurrency (or training micro-batch), then searches the largest concurrency that fits, each
probe in its own process with a timeout (`dossier_agent.probe`). The result sets the measured memory per component
beside the server's prediction, with the error in percent, the headroom at the target, the largest fitting
concurrency, the OOMs met on the way, and the usable memory the device reports (NVML total) with its source.

Spec (JSON object; the model fields are those of the estimator's `ModelShape`):

    {
      "model": {"architecture": "dense", "precision": "bf16", "num_layers": 32, "hidden_size": 4096, ...},
      "workload": "inference",                      # or "training"
      "inference": {"p95_context_tokens": 8192, "concurrent_sessions": 32, "kv_cache_precision": null,
                    "block_size_tokens": 16, "max_batched_tokens": 8192, "decode_steps": 4},
      "training": {"sequence_length": 4096, "micro_batch_size": 1, "method": "full" | "lora" | "qlora",
                   "lora_rank": 16, "lora_targets": ["q", ...], "recompute": "none" | "selective" | "full",
                   "double_quantisation": true, "steps": 2},
      "diffusion": {"patch_size": 2, "in_channels": 4, "out_channels": null, "num_classes": 1000,
                    "denoise_steps": 2},
      "predicted": {... the server's Breakdown.as_dict() for the target ...},
      "device": "auto" | "cuda" | "cpu",
      "model_path": null,                           # the node's own checkpoint folder (see below)
      "search": {"max_probes": 6, "probe_timeout_s": 300, "minimum": 1, "maximum": 1024,
                 "address_space_limit_bytes": null, "cpu_threads": 1},
      "seed": 0
    }

The exact model (`model_path`): an absolute path, on the node that runs the job, to a folder with `config.json` and
`*.safetensors` (a `save_pretrained` folder; `exact_model_path` is read as the same field). It is never a model id and
nothing is ever downloaded. The job first inspects it in its own process (`dossier_agent.exact_model`): the
safetensors headers give the checkpoint's parameter count and weight bytes (no tensor loaded), then transformers,
offline and local-files-only, must build the checkpoint's architecture. When it can, every probe loads the real weights
onto the device at the target precision and runs the same phases as the proxy (the KV cache is transformers'
StaticCache allocated up front for the target context × concurrency), measured by the same meter with the same report,
so the search and the OOM handling are shared. When it cannot — no path, a path missing on this node, no config.json
or safetensors, transformers or safetensors absent, an architecture transformers cannot load, a precision the
checkpoint is not loaded at (fp8/int8/int4/nf4), LoRA/QLoRA training, a diffusion model, an fp8/int8 KV cache, or a
first exact probe that fails without running out of memory — the proxy of the spec's shape runs, and the result says
why: `model_source` "exact" | "proxy", `proxy_reason`, and `checkpoint` (the header figures) whenever the folder could
be read.

Events: one `measurement` event per probe (n, outcome, footprint, components). Artifact: `memory_fit_probes.json`,
every probe's full report (phases, allocator statistics, stderr tail).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dossier_agent.errors import JobCancelled
from dossier_agent.exact_model import EXACT_PRECISIONS, folder_problem
from dossier_agent.proxies.shape import DiffusionGeometry, ProxyShape, ProxyShapeError, default_kv_precision

KIND = "memory_fit"
REQUIRES = ("torch",)
SCHEMA = 1
MIB = 2**20

SELF_TEST_SPEC: dict[str, Any] = {
    "model": {
        "architecture": "dense", "precision": "bf16", "num_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "num_kv_heads": 2, "ffn_size": 128, "vocab_size": 256,
    },
    "workload": "inference",
    "inference": {"p95_context_tokens": 128, "concurrent_sessions": 1, "decode_steps": 2, "max_batched_tokens": 256},
    "device": "auto",
    "search": {"max_probes": 2, "maximum": 2, "probe_timeout_s": 25},
}
SELF_TEST_TIMEOUT_S = 60

DEFAULT_SEARCH = {
    "max_probes": 6,
    "probe_timeout_s": 300.0,
    "minimum": 1,
    "maximum": None,  # inference: 1024 sessions; training: 256 sequences per micro-batch
    "address_space_limit_bytes": None,
    "cpu_threads": 1,
}


class MemoryFitSpecError(ValueError):
    """The job spec is missing something or holds a bad value; the message names it."""


# ----------------------------------------------------------------------------------------------------------------------
# Spec
# ----------------------------------------------------------------------------------------------------------------------


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MemoryFitSpecError(f"{name} must be a whole number ≥ 1, got {value!r}")
    return value


@dataclass
class SearchSettings:
    max_probes: int
    probe_timeout_s: float
    minimum: int
    maximum: int
    address_space_limit_bytes: int | None
    address_space_limit_source: str | None
    cpu_threads: int


@dataclass
class FitPlan:
    shape: ProxyShape
    workload: str
    device: str
    device_reason: str
    target: int  # concurrency (inference) or micro-batch size (training)
    target_tokens: int  # p95 context (inference) or sequence length (training)
    probe_base: dict[str, Any]
    search: SearchSettings
    predicted: dict[str, Any] | None
    model_path: str | None = None
    proxy_reason: str | None = None  # why the exact model is not used (None: not asked for, or used)
    exact: dict[str, Any] | None = None  # the inspection's report (checkpoint summary, model class)

    @property
    def variable(self) -> str:
        return "concurrent_sessions" if self.workload == "inference" else "micro_batch_size"

    def probe_spec(self, n: int) -> dict[str, Any]:
        return {**self.probe_base, "n": n}


def resolve_device(requested: str, inventory: dict[str, Any]) -> tuple[str, str]:
    """(device, why): `auto` takes the GPU when NVML saw one and the installed torch was built with CUDA."""
    if requested in ("cuda", "cpu"):
        return requested, "requested by the spec"
    if requested != "auto":
        raise MemoryFitSpecError(f"device must be auto, cuda or cpu, got {requested!r}")
    software = inventory.get("software") or {}
    if inventory.get("gpu_present") and inventory.get("gpus"):
        if software.get("torch_cuda_version"):
            return "cuda", "auto: NVML reports a GPU and torch has CUDA"
        return "cpu", "auto: NVML reports a GPU but the installed torch has no CUDA build"
    why = f" ({inventory['gpu_error']})" if inventory.get("gpu_error") else ""
    return "cpu", "auto: no GPU reported by NVML" + why


def _model_path(spec: dict[str, Any]) -> str | None:
    value = spec.get("model_path", spec.get("exact_model_path"))
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MemoryFitSpecError(f"model_path must be a folder path on the node, got {value!r}")
    if "://" in value:
        raise MemoryFitSpecError(f"model_path must be a local folder, never a URL: {value!r}")
    return value


def exact_model_problem(plan: FitPlan) -> str | None:
    """Why the spec itself rules the exact model out (None when only the folder and the node can say)."""
    if plan.model_path is None:
        return None
    shape = plan.shape
    if shape.architecture == "diffusion":
        return "diffusion transformers are not loaded through transformers: proxy used"
    if shape.precision not in EXACT_PRECISIONS:
        return (f"the exact path loads the checkpoint at fp32/bf16/fp16; {shape.precision} weights use the proxy's "
                "quantised storage: proxy used")
    if plan.workload == "training" and plan.probe_base["training"]["method"] != "full":
        return (f"{plan.probe_base['training']['method']} training attaches the proxy's adapters (no peft on the "
                "exact path): proxy used")
    kv = (plan.probe_base.get("inference") or {}).get("kv_cache_precision")
    if kv is not None and kv not in EXACT_PRECISIONS:
        return f"transformers' static cache holds 16/32-bit keys and values, not {kv}: proxy used"
    return folder_problem(plan.model_path)


def choose_model(plan: FitPlan, inspector: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Set the plan's model source: the exact checkpoint when the node can load it, else the proxy with the reason.
    `inspector` runs `dossier_agent.exact_model.inspect` (in its own process in the job)."""
    if plan.model_path is None:
        return
    problem = exact_model_problem(plan)
    folder_ok = folder_problem(plan.model_path) is None
    if problem is not None and not folder_ok:
        plan.proxy_reason = problem
        return
    report = inspector({"path": str(Path(os.path.expanduser(plan.model_path))), "shape": plan.shape.as_dict(),
                        "encoder": plan.shape.architecture == "encoder"})
    plan.exact = report
    if problem is not None:
        plan.proxy_reason = problem
    elif not report.get("usable"):
        plan.proxy_reason = report.get("reason") or "the checkpoint cannot be loaded: proxy used"
    else:
        plan.probe_base["exact_model"] = {"path": report["checkpoint"]["path"],
                                          "auto_class": report.get("auto_class"),
                                          "model_class": report.get("model_class")}


def fall_back_to_proxy(plan: FitPlan, reason: str) -> None:
    plan.probe_base.pop("exact_model", None)
    plan.proxy_reason = reason


def model_source(plan: FitPlan) -> str:
    return "exact" if plan.probe_base.get("exact_model") else "proxy"


def parse_spec(spec: dict[str, Any], inventory: dict[str, Any] | None = None) -> FitPlan:
    if not isinstance(spec, dict):
        raise MemoryFitSpecError("the spec must be a JSON object")
    try:
        shape = ProxyShape.from_spec(spec.get("model") or {})
        geometry = DiffusionGeometry.from_spec(spec.get("diffusion"))
    except ProxyShapeError as error:
        raise MemoryFitSpecError(f"model.{error.field}: {error.message}") from None
    workload = spec.get("workload", "inference")
    if workload not in ("inference", "training"):
        raise MemoryFitSpecError(f"workload must be inference or training, got {workload!r}")
    device, reason = resolve_device(spec.get("device", "auto"), inventory or {})
    search_values = {**DEFAULT_SEARCH, **(spec.get("search") or {})}
    limit = search_values["address_space_limit_bytes"]
    limit_source = "the spec (search.address_space_limit_bytes)"
    if limit is not None:
        _positive_int(limit, "search.address_space_limit_bytes")
    elif device == "cpu":
        # A CPU probe must fail with ENOMEM, not wake the kernel's OOM killer among the host's other processes:
        # its address space (always ≥ its resident memory) is capped at what the host has available now.
        limit = host_available_bytes()
        limit_source = "the host's available memory when the job started"
    probe_base: dict[str, Any] = {
        "model": shape.as_dict(),
        "workload": workload,
        "device": device,
        "seed": int(spec.get("seed", 0)),
        "threads": _positive_int(search_values["cpu_threads"], "search.cpu_threads"),
        "diffusion": geometry.as_dict() | {"denoise_steps": (spec.get("diffusion") or {}).get("denoise_steps", 2)},
    }
    if workload == "inference":
        settings = spec.get("inference") or {}
        target_tokens = _positive_int(settings.get("p95_context_tokens"), "inference.p95_context_tokens")
        target = _positive_int(settings.get("concurrent_sessions", 1), "inference.concurrent_sessions")
        kv = settings.get("kv_cache_precision")
        if kv is not None and kv not in ("fp32", "bf16", "fp16", "fp8", "int8"):
            raise MemoryFitSpecError(f"inference.kv_cache_precision {kv!r} is not a KV cache format")
        probe_base["inference"] = {
            "context_tokens": target_tokens,
            "decode_steps": int(settings.get("decode_steps", 4)),
            "max_batched_tokens": _positive_int(settings.get("max_batched_tokens", 8192),
                                                "inference.max_batched_tokens"),
            "block_size_tokens": _positive_int(settings.get("block_size_tokens", 16), "inference.block_size_tokens"),
            "kv_cache_precision": kv or default_kv_precision(shape.precision),
        }
        default_maximum = 1024
    else:
        settings = spec.get("training") or {}
        target_tokens = _positive_int(settings.get("sequence_length"), "training.sequence_length")
        target = _positive_int(settings.get("micro_batch_size", 1), "training.micro_batch_size")
        method = settings.get("method", "full")
        if method not in ("full", "lora", "qlora"):
            raise MemoryFitSpecError(f"training.method must be full, lora or qlora, got {method!r}")
        if method == "full" and shape.precision not in ("fp32", "bf16", "fp16"):
            raise MemoryFitSpecError(f"full training of {shape.precision} weights: use training.method lora or qlora")
        recompute = settings.get("recompute", "none")
        if recompute not in ("none", "selective", "full"):
            raise MemoryFitSpecError(f"training.recompute must be none, selective or full, got {recompute!r}")
        probe_base["training"] = {
            "sequence_length": target_tokens,
            "method": method,
            "lora_rank": _positive_int(settings.get("lora_rank", 16), "training.lora_rank"),
            "lora_targets": list(settings.get("lora_targets") or ("q", "k", "v", "o", "gate", "up", "down")),
            "double_quantisation": bool(settings.get("double_quantisation", True)),
            "recompute": recompute,
            "steps": _positive_int(settings.get("steps", 2), "training.steps"),
        }
        default_maximum = 256
    maximum = search_values["maximum"] or max(default_maximum, target)
    search = SearchSettings(
        max_probes=_positive_int(search_values["max_probes"], "search.max_probes"),
        probe_timeout_s=float(search_values["probe_timeout_s"]),
        minimum=_positive_int(search_values["minimum"], "search.minimum"),
        maximum=_positive_int(maximum, "search.maximum"),
        address_space_limit_bytes=limit,
        address_space_limit_source=limit_source if limit is not None else None,
        cpu_threads=probe_base["threads"],
    )
    if search.probe_timeout_s <= 0:
        raise MemoryFitSpecError("search.probe_timeout_s must be positive")
    if search.minimum > search.maximum:
        raise MemoryFitSpecError("search.minimum exceeds search.maximum")
    if search_values["address_space_limit_bytes"] is not None and device != "cpu":
        raise MemoryFitSpecError("search.address_space_limit_bytes applies to CPU probes only")
    predicted = spec.get("predicted")
    if predicted is not None and not isinstance(predicted, dict):
        raise MemoryFitSpecError("predicted must be the estimator's breakdown object")
    return FitPlan(
        shape=shape, workload=workload, device=device, device_reason=reason,
        target=min(max(target, search.minimum), search.maximum), target_tokens=target_tokens,
        probe_base=probe_base, search=search, predicted=predicted,
        model_path=_model_path(spec),
    )


# ----------------------------------------------------------------------------------------------------------------------
# Search
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class SearchState:
    """Largest n known to fit (`fits`), smallest n known not to (`fails`), and the probes so far."""

    minimum: int
    maximum: int
    capacity_bytes: int | None = None
    fits: int | None = None
    fails: int | None = None
    footprints: dict[int, int] = field(default_factory=dict)
    slopes: dict[int, float] = field(default_factory=dict)  # per-unit growth measured inside a fitting probe
    bisect_next: bool = False
    creep: int = 0  # consecutive fitting probes that raised the lower bound by exactly one
    predicted_slope_bytes: float | None = None  # the prediction's increase per unit of n, until two probes fit

    def record(self, n: int, fitted: bool, footprint: int | None, slope: float | None = None) -> None:
        width_before = self.width()
        if fitted:
            self.creep = self.creep + 1 if self.fits is not None and n == self.fits + 1 else 0
            self.fits = n if self.fits is None else max(self.fits, n)
            if footprint:
                self.footprints[n] = footprint
            if slope:
                self.slopes[n] = slope
            # Safeguard of the interpolation: a line that keeps underestimating by one gives way to bisection.
            self.bisect_next = self.creep >= 2
        else:
            self.fails = n if self.fails is None else min(self.fails, n)
            width_after = self.width()
            # ...and so does an overshoot that did not halve the bracket.
            self.bisect_next = width_before is not None and width_after is not None and width_after * 2 > width_before

    def width(self) -> int | None:
        low = self.fits if self.fits is not None else self.minimum - 1
        high = self.fails if self.fails is not None else None
        return None if high is None else high - low

    def extrapolated(self) -> int | None:
        """Largest n whose footprint stays within the capacity, from the line through the two largest fitting
        probes (base + n · per-request increase); with one fitting probe, from its footprint and the increase it
        measured itself (its KV cache or activations per unit of n), else the predicted increase."""
        if self.capacity_bytes is None or not self.footprints:
            return None
        if len(self.footprints) >= 2:
            (n1, f1), (n2, f2) = sorted(self.footprints.items())[-2:]
            slope = (f2 - f1) / (n2 - n1)
        else:
            (n2, f2) = next(iter(self.footprints.items()))
            slope = self.slopes.get(n2) or self.predicted_slope_bytes
            if not slope:
                return None
        if slope <= 0:
            return None
        return math.floor(n2 + (self.capacity_bytes - f2) / slope)

    def done(self) -> bool:
        if self.fits is not None and self.fits >= self.maximum:
            return True
        if self.fails is not None and self.fails <= self.minimum:
            return True
        return self.fails is not None and self.fits is not None and self.fails - self.fits <= 1

    def next_candidate(self, start: int) -> int | None:
        if self.done():
            return None
        if self.fits is None and self.fails is None:
            return start
        low = self.fits if self.fits is not None else self.minimum - 1
        high = self.fails if self.fails is not None else self.maximum + 1
        guess = None if self.bisect_next else self.extrapolated()
        if guess is not None:
            candidate = min(max(guess, low + 1), high - 1)
        elif self.fails is None:
            candidate = min(self.maximum, max(low * 2, low + 1))
        else:
            candidate = (low + high) // 2
            if candidate <= low:
                candidate = low + 1
        if not low < candidate < high:
            return None
        return candidate


# ----------------------------------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------------------------------

INFERENCE_COMPONENTS = (
    # (component, predicted term names summed, measured component, note)
    ("weights", ("weights",), "weights", None),
    ("kv_cache", ("kv_cache",), "kv_cache", None),
    ("activation_peak", ("activation_peak",), "activation_peak", "peak above weights and KV cache during the "
                                                                  "engine's peak prefill step and the decode steps"),
)
TRAINING_COMPONENTS = (
    ("weights", ("weights", "frozen_base_weights"), "weights", None),
    ("adapters", ("weights",), "adapters", "LoRA adapter weights"),
    ("gradients", ("gradients",), "gradients", None),
    ("optimizer_states", ("optimizer_states",), "optimizer_states", "fp32 master weights and Adam moments"),
    ("activations", ("activations", "output_activations"), "activations",
     "peak of forward + backward above the model states (gradients made before the peak included)"),
)


def predicted_terms(predicted: dict[str, Any] | None) -> dict[str, int]:
    if not predicted:
        return {}
    terms = {}
    for term in predicted.get("terms") or []:
        if isinstance(term, dict) and isinstance(term.get("size_bytes"), int):
            terms[term["name"]] = term["size_bytes"]
    return terms


def error_percent(predicted: int | None, measured: int | None) -> float | None:
    if predicted is None or measured is None or predicted == 0:
        return None
    return round(100.0 * (measured - predicted) / predicted, 2)


def compare(plan: FitPlan, probe: dict[str, Any], usable_bytes: int | None) -> list[dict[str, Any]]:
    """Predicted vs measured per component where measurable, and the total without the safety margin."""
    terms = predicted_terms(plan.predicted)
    measured = probe.get("components") or {}
    lora = plan.workload == "training" and plan.probe_base["training"]["method"] != "full"
    rows = []
    table = INFERENCE_COMPONENTS if plan.workload == "inference" else TRAINING_COMPONENTS
    for component, names, measured_key, note in table:
        if plan.workload == "training":
            if component == "adapters" and not lora:
                continue
            if component == "weights":
                names = ("frozen_base_weights",) if lora else ("weights",)
        present = [name for name in names if name in terms]
        predicted = sum(terms[name] for name in present) if present else None
        value = measured.get(measured_key)
        rows.append({"component": component, "predicted_bytes": predicted, "measured_bytes": value,
                     "error_pct": error_percent(predicted, value), "predicted_terms": present, "note": note})
    totals = probe.get("totals") or {}
    if plan.device == "cuda":
        runtime = None
        if totals.get("footprint_bytes") is not None and totals.get("torch_allocated_peak_bytes") is not None:
            runtime = totals["footprint_bytes"] - totals["torch_allocated_peak_bytes"]
        rows.append({"component": "cuda_runtime", "predicted_bytes": terms.get("cuda_runtime"),
                     "measured_bytes": runtime, "error_pct": error_percent(terms.get("cuda_runtime"), runtime),
                     "predicted_terms": ["cuda_runtime"] if "cuda_runtime" in terms else [],
                     "note": "CUDA context + allocator reserve + workspaces: "
                             "process peak minus torch's allocated peak"})
    else:
        rows.append({"component": "cuda_runtime", "predicted_bytes": terms.get("cuda_runtime"),
                     "measured_bytes": None, "error_pct": None, "predicted_terms": [],
                     "note": "not measurable on the CPU; the process's Python + torch baseline is "
                             f"{measured.get('runtime_baseline')} bytes resident"})
    if terms:
        subtotal = sum(size for name, size in terms.items() if name != "safety_margin")
        footprint = totals.get("footprint_bytes")
        rows.append({"component": "total_without_margin", "predicted_bytes": subtotal, "measured_bytes": footprint,
                     "error_pct": error_percent(subtotal, footprint), "predicted_terms": sorted(terms),
                     "note": f"measured: {totals.get('footprint_source')}"})
    return rows


def usable_memory(plan: FitPlan, probes: list[dict[str, Any]], inventory: dict[str, Any]) -> dict[str, Any]:
    """The memory this device really offers, with where the figure came from."""
    if plan.device == "cuda":
        for probe in probes:
            info = probe.get("device_info") or {}
            if info.get("nvml_total_bytes"):
                return {
                    "total_mib": info["nvml_total_bytes"] // MIB,
                    "total_bytes": info["nvml_total_bytes"],
                    "source": "nvml: nvmlDeviceGetMemoryInfo.total in the probe process",
                    "used_by_others_bytes": info.get("nvml_used_by_others_bytes"),
                    "device_name": info.get("nvml_name") or info.get("name"),
                    "device_uuid": info.get("nvml_uuid"),
                    "torch_total_memory_bytes": info.get("total_memory_bytes"),
                }
        for gpu in inventory.get("gpus") or []:
            if gpu.get("memory_total_mib"):
                return {"total_mib": gpu["memory_total_mib"], "total_bytes": gpu["memory_total_mib"] * MIB,
                        "source": "nvml: the agent's inventory (memory_total_mib)", "device_name": gpu.get("name"),
                        "device_uuid": gpu.get("uuid")}
        for probe in probes:
            info = probe.get("device_info") or {}
            if info.get("total_memory_bytes"):
                return {"total_mib": info["total_memory_bytes"] // MIB, "total_bytes": info["total_memory_bytes"],
                        "source": "torch.cuda.get_device_properties().total_memory (NVML unavailable)",
                        "device_name": info.get("name")}
        return {"total_mib": None, "total_bytes": None, "source": "unknown: no probe reached the device"}
    limit = plan.search.address_space_limit_bytes
    if limit:
        return {"total_mib": limit // MIB, "total_bytes": limit,
                "source": f"cpu: the probes' address-space limit (RLIMIT_AS), from "
                          f"{plan.search.address_space_limit_source}",
                "host_memory_bytes": host_memory_bytes()}
    total = host_memory_bytes()
    return {"total_mib": total // MIB if total else None, "total_bytes": total,
            "source": "cpu: host memory (MemTotal)"}


def host_memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:
        pass
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def host_available_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        return host_memory_bytes()


def search_capacity(plan: FitPlan, probe: dict[str, Any]) -> int | None:
    """What the footprint must stay under, for the extrapolation (the search itself trusts only real probes)."""
    if plan.device == "cuda":
        info = probe.get("device_info") or {}
        if info.get("nvml_total_bytes"):
            return info["nvml_total_bytes"] - (info.get("nvml_used_by_others_bytes") or 0)
        return info.get("total_memory_bytes")
    if plan.search.address_space_limit_bytes:
        return int(plan.search.address_space_limit_bytes)
    return host_available_bytes()


# ----------------------------------------------------------------------------------------------------------------------
# The job
# ----------------------------------------------------------------------------------------------------------------------


def _summary(probe: dict[str, Any]) -> dict[str, Any]:
    totals = probe.get("totals") or {}
    return {
        "n": probe.get("n"),
        "outcome": probe.get("outcome"),
        "fits": probe.get("outcome") == "ok",
        "footprint_bytes": totals.get("footprint_bytes"),
        "footprint_source": totals.get("footprint_source"),
        "components": probe.get("components"),
        "error": probe.get("error"),
        "wall_s": probe.get("wall_s"),
    }


def predicted_slope(plan: FitPlan) -> float | None:
    """Bytes the prediction adds per request (KV cache) or per sequence of the micro-batch (activations)."""
    terms = predicted_terms(plan.predicted)
    names = ("kv_cache",) if plan.workload == "inference" else ("activations", "output_activations")
    growth = sum(terms.get(name, 0) for name in names)
    return growth / plan.target if growth > 0 else None


def measured_slope(plan: FitPlan, probe: dict[str, Any]) -> float | None:
    """The growth per unit of n a fitting probe measured: its KV cache per request, else (encoders, DiT) its
    activation peak per request, or for training its activations per sequence."""
    components = probe.get("components") or {}
    n = probe.get("n") or 0
    if plan.workload == "inference":
        growth = components.get("kv_cache") or components.get("activation_peak")
    else:
        growth = components.get("activations")
    return growth / n if growth and n else None


def run_search(plan: FitPlan, probe_runner: Callable[[dict[str, Any]], dict[str, Any]], *,
               cancelled: Callable[[], bool] = lambda: False,
               on_probe: Callable[[dict[str, Any], int], None] | None = None) -> dict[str, Any]:
    """Probe the target first, then bisect (with interpolation from measured footprints) for the largest n that
    fits, within `max_probes`. A probe that errors (not an OOM, not a timeout) stops the search; when it is the
    first one the job fails with its message."""
    state = SearchState(minimum=plan.search.minimum, maximum=plan.search.maximum,
                        predicted_slope_bytes=predicted_slope(plan))
    probes: list[dict[str, Any]] = []
    stopped: str | None = None
    while len(probes) < plan.search.max_probes:
        if cancelled():
            raise JobCancelled("the memory-fit job was cancelled between probes")
        n = state.next_candidate(plan.target)
        if n is None:
            break
        probe = probe_runner(plan.probe_spec(n))
        probe["index"] = len(probes)
        probes.append(probe)
        outcome = probe.get("outcome")
        if outcome == "cancelled":
            raise JobCancelled("the memory-fit job was cancelled during a probe")
        if outcome in ("error", "crashed"):
            message = (probe.get("error") or {}).get("message", "no message")
            if len(probes) == 1:
                raise RuntimeError(f"the first memory probe (n={n}) failed: {message}; "
                                   f"stderr: {(probe.get('stderr_tail') or '')[-800:]}")
            stopped = f"probe n={n} {outcome}: {message}"
            if on_probe is not None:
                on_probe(probe, len(probes))
            break
        fitted = outcome == "ok"
        if state.capacity_bytes is None and fitted:
            state.capacity_bytes = search_capacity(plan, probe)
        footprint = (probe.get("totals") or {}).get("footprint_bytes") if fitted else None
        state.record(n, fitted, footprint, measured_slope(plan, probe) if fitted else None)
        if on_probe is not None:
            on_probe(probe, len(probes))
    return {"state": state, "probes": probes, "stopped": stopped}


def build_result(plan: FitPlan, search: dict[str, Any], inventory: dict[str, Any]) -> dict[str, Any]:
    state: SearchState = search["state"]
    probes: list[dict[str, Any]] = search["probes"]
    target_probe = next((probe for probe in probes if probe.get("n") == plan.target), None)
    usable = usable_memory(plan, probes, inventory)
    usable_bytes = usable.get("total_bytes")
    labels: dict[str, Any] = {
        "device_kind": plan.device,
        "device_choice": plan.device_reason,
        "memory_accounting": "cpu-process-rss" if plan.device == "cpu" else "torch-cuda-allocator+nvml",
        "model_source": model_source(plan),
        "architecture": plan.shape.architecture,
        "precision": plan.shape.precision,
    }
    if plan.proxy_reason:
        labels["proxy_reason"] = plan.proxy_reason
    reference = target_probe or next((probe for probe in probes if probe.get("details")), None)
    if reference is not None:
        labels.update((reference.get("details") or {}).get("labels") or {})
    fits_at_target = target_probe is not None and target_probe.get("outcome") == "ok"
    target_totals = (target_probe or {}).get("totals") or {}
    footprint = target_totals.get("footprint_bytes") if fits_at_target else None
    headroom = usable_bytes - footprint if usable_bytes is not None and footprint is not None else None
    terms = predicted_terms(plan.predicted)
    largest = state.fits
    result = {
        "schema": SCHEMA,
        "kind": KIND,
        "workload": plan.workload,
        "labels": labels,
        "model_source": model_source(plan),
        "proxy_reason": plan.proxy_reason if model_source(plan) == "proxy" else None,
        "model_path": plan.model_path,
        "checkpoint": (plan.exact or {}).get("checkpoint"),
        "exact_model": {key: (plan.exact or {}).get(key) for key in (
            "model_class", "model_type", "auto_class", "transformers_version", "meta_parameters", "config_shape",
            "shape_mismatches")} if model_source(plan) == "exact" else None,
        "model": plan.shape.as_dict(),
        "target": {plan.variable: plan.target,
                   ("p95_context_tokens" if plan.workload == "inference" else "sequence_length"): plan.target_tokens},
        "usable_memory": usable,
        "predicted": {
            "total_bytes": plan.predicted.get("total_bytes") if plan.predicted else None,
            "safety_margin_bytes": terms.get("safety_margin"),
            "terms": terms,
        } if plan.predicted else None,
        "measured_at_target": (target_probe or {}).get("components") if fits_at_target else None,
        "comparison": compare(plan, target_probe, usable_bytes) if fits_at_target else None,
        "comparison_note": None if fits_at_target else (
            f"the target ({plan.variable} = {plan.target}) did not fit or was not probed: no per-component "
            "comparison"),
        "peak_bytes": footprint,
        "peak_source": target_totals.get("footprint_source") if fits_at_target else None,
        "fits_at_target": fits_at_target,
        "headroom_bytes": headroom,
        "headroom_pct": round(100.0 * headroom / usable_bytes, 2) if headroom is not None and usable_bytes else None,
        "safety_margin": {
            "at": {plan.variable: plan.target, "tokens": plan.target_tokens},
            "measured_headroom_bytes": headroom,
            "predicted_margin_bytes": terms.get("safety_margin"),
            "predicted_total_bytes": plan.predicted.get("total_bytes") if plan.predicted else None,
            "predicted_fits": (plan.predicted.get("total_bytes") <= usable_bytes)
            if plan.predicted and usable_bytes and isinstance(plan.predicted.get("total_bytes"), int) else None,
        },
        "largest_fitting": {
            "variable": plan.variable,
            "value": largest,
            "smallest_failing": state.fails,
            "exact": largest is not None and state.fails is not None and state.fails - largest == 1,
            "limited_by_search_maximum": largest is not None and largest >= plan.search.maximum,
            "search_maximum": plan.search.maximum,
            "extrapolated_from_footprints": state.extrapolated(),
            "capacity_bytes_for_extrapolation": state.capacity_bytes,
        },
        "oom_count": sum(1 for probe in probes if probe.get("outcome") == "oom"),
        "timeout_count": sum(1 for probe in probes if probe.get("outcome") == "timeout"),
        "probe_count": len(probes),
        "search_stopped": search["stopped"],
        "probes": [_summary(probe) for probe in probes],
        "fragmentation_at_target": (target_probe or {}).get("fragmentation"),
    }
    return result


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    from dossier_agent.exact_model import run_inspection
    from dossier_agent.probe import probe_environment, run_probe

    if importlib.util.find_spec("torch") is None:
        raise RuntimeError("the memory_fit job needs torch on this node: pip install 'dossier-agent[torch]'")
    inventory = getattr(ctx, "inventory", None) or {}
    plan = parse_spec(spec, inventory)
    environment = probe_environment(plan.search.cpu_threads)
    choose_model(plan, lambda request: run_inspection(
        request, timeout_s=min(plan.search.probe_timeout_s, 600.0), environment=environment))
    ctx.log("memory fit planned", device=plan.device, device_choice=plan.device_reason, workload=plan.workload,
            architecture=plan.shape.architecture, target=plan.target, max_probes=plan.search.max_probes,
            model_source=model_source(plan), proxy_reason=plan.proxy_reason)
    ctx.progress(0.0, "probing the target")

    def probe_runner(probe_spec: dict[str, Any]) -> dict[str, Any]:
        return run_probe(
            probe_spec, timeout_s=plan.search.probe_timeout_s,
            address_space_limit=plan.search.address_space_limit_bytes, threads=plan.search.cpu_threads,
            cancelled=ctx.cancelled, environment=environment,
        )

    def on_probe(probe: dict[str, Any], count: int) -> None:
        summary = _summary(probe)
        ctx.event("measurement", {"probe": count - 1, **summary})
        ctx.log("memory probe", n=summary["n"], outcome=summary["outcome"],
                footprint_mib=(summary["footprint_bytes"] or 0) // MIB, wall_s=summary["wall_s"])
        ctx.progress(min(count / plan.search.max_probes, 0.99), f"probe {count}: n={summary['n']} "
                                                                 f"{summary['outcome']}")

    try:
        search = run_search(plan, probe_runner, cancelled=ctx.cancelled, on_probe=on_probe)
    except RuntimeError as error:
        if model_source(plan) != "exact":
            raise
        # The checkpoint inspected well but its first probe failed without running out of memory (a load error,
        # an unsupported forward): the proxy of the same shape runs the whole search instead.
        fall_back_to_proxy(plan, f"the exact model's first probe failed ({str(error)[:400]}): proxy used")
        ctx.log("exact model failed, proxy used", reason=plan.proxy_reason)
        search = run_search(plan, probe_runner, cancelled=ctx.cancelled, on_probe=on_probe)
    result = build_result(plan, search, inventory)
    artifact = json.dumps({"spec": spec, "probes": search["probes"]}, indent=1, sort_keys=True, default=str)
    result["probes_artifact_sha256"] = ctx.add_artifact(artifact.encode(), "memory_fit_probes.json",
                                                        "application/json")
    ctx.log("memory fit done", largest_fitting=result["largest_fitting"]["value"], oom_count=result["oom_count"],
            fits_at_target=result["fits_at_target"], headroom_mib=(result["headroom_bytes"] or 0) // MIB)
    ctx.progress(1.0, "done")
    return result

