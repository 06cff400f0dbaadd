"""The `acceptance` job's spec, parsed exactly as the agent parses it (`dossier_agent.jobs.acceptance` imports it
from here, its docstring describes the spec): the server runs the same parser when a plan is written, so a spec the
agent would refuse is refused before it is dispatched.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.resources
import json
from typing import Any

THRESHOLDS_FILE = "acceptance_thresholds.json"

DEFAULT_SIZES = {
    "cuda": {"copy_bytes": 2**30, "matmul_n": 8192, "host_bytes": 512 * 2**20},
    "cpu": {"copy_bytes": 64 * 2**20, "matmul_n": 512, "host_bytes": 0},
}
DEFAULT_TIMING = {
    "cuda": {"target_s": 0.2, "repeats": 5, "max_iterations": 1000, "warmup": 2},
    "cpu": {"target_s": 0.1, "repeats": 5, "max_iterations": 1000, "warmup": 1},
}
MATMUL_PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")
_PRECISION_ALIASES = {
    "float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
    "fp8_e4m3": "fp8", "float8": "fp8", "e4m3": "fp8",
}
_WEIGHT_ONLY_QUANTISED = {"int8", "int4", "nf4", "awq", "gptq"}


class AcceptanceSpecError(ValueError):
    """The job spec holds a bad value; the message names it."""


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load_thresholds(override: dict[str, Any] | None = None) -> dict[str, Any]:
    """The packaged thresholds, with the spec's `thresholds` laid over them; `source` says which applied."""
    resource = importlib.resources.files("dossier_agent").joinpath(THRESHOLDS_FILE)
    try:
        raw = resource.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"dossier_agent/{THRESHOLDS_FILE} is missing from this installation (package data not installed)"
        ) from None
    thresholds = json.loads(raw)
    source = f"agent file {THRESHOLDS_FILE} (sha256 {hashlib.sha256(raw).hexdigest()[:16]})"
    if override:
        if not isinstance(override, dict):
            raise AcceptanceSpecError("thresholds must be an object shaped like acceptance_thresholds.json")
        thresholds = _merge(thresholds, override)
        source = f"job spec over {source}"
    thresholds["source"] = source
    return thresholds


def matmul_precision(precision: str | None, label: str) -> tuple[str, str | None]:
    """The precision of the matrix product for a workload precision, with a note when it differs."""
    text = str(precision or "bf16").strip().lower()
    text = _PRECISION_ALIASES.get(text, text)
    note = None
    if text in _WEIGHT_ONLY_QUANTISED:
        note = f"{text} weights are dequantised for the matrix product; measured in bf16"
        text = "bf16"
    elif text not in MATMUL_PRECISIONS:
        raise AcceptanceSpecError(f"precision must be one of {', '.join(MATMUL_PRECISIONS)} "
                                  f"(or a weight-only quantisation), got {precision!r}")
    if label == "cpu" and text == "tf32":
        return "fp32", "TF32 is a GPU tensor-core mode; the CPU multiplies in fp32"
    if label == "cpu" and text == "fp8":
        return "bf16", "the CPU has no fp8 matrix product; measured in bf16"
    return text, note


# ----------------------------------------------------------------------------------------------------------------------
# Spec
# ----------------------------------------------------------------------------------------------------------------------


def _positive(value: Any, name: str, *, integer: bool = False, allow_zero: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise AcceptanceSpecError(f"{name} must be a {'whole ' if integer else ''}number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise AcceptanceSpecError(f"{name} must be greater than 0, got {value!r}")
    return value


def parse_spec(spec: dict[str, Any], label: str) -> dict[str, Any]:
    known = {"device", "gpus", "precision", "datasheet", "thresholds", "sizes", "timing", "health", "dcgm",
             "cpu_threads"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise AcceptanceSpecError(f"unknown spec key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    sizes = {**DEFAULT_SIZES[label], **(spec.get("sizes") or {})}
    for key in ("copy_bytes", "matmul_n", "host_bytes"):
        _positive(sizes[key], f"sizes.{key}", integer=True, allow_zero=key == "host_bytes")
    timing = {**DEFAULT_TIMING[label], **(spec.get("timing") or {})}
    unknown_timing = sorted(set(timing) - set(DEFAULT_TIMING[label]))
    if unknown_timing:
        raise AcceptanceSpecError(f"unknown timing key(s) {', '.join(unknown_timing)}")
    _positive(timing["target_s"], "timing.target_s")
    for key in ("repeats", "max_iterations"):
        _positive(timing[key], f"timing.{key}", integer=True)
    _positive(timing["warmup"], "timing.warmup", integer=True, allow_zero=True)
    datasheet = spec.get("datasheet") or {}
    if not isinstance(datasheet, dict):
        raise AcceptanceSpecError("datasheet must be an object")
    gpus = spec.get("gpus", "all")
    if gpus != "all" and (not isinstance(gpus, list) or not all(isinstance(i, int) and i >= 0 for i in gpus)):
        raise AcceptanceSpecError(f"gpus must be \"all\" or a list of device indices, got {gpus!r}")
    precision, precision_note = matmul_precision(spec.get("precision"), label)
    health = {"interval_s": 0.5, **(spec.get("health") or {})}
    _positive(health["interval_s"], "health.interval_s")
    dcgm = {"enabled": True, "level": 1, "timeout_s": 180, **(spec.get("dcgm") or {})}
    if dcgm["level"] not in (1, 2, 3, 4):
        raise AcceptanceSpecError(f"dcgm.level must be 1-4, got {dcgm['level']!r}")
    threads = spec.get("cpu_threads")
    if threads is not None:
        _positive(threads, "cpu_threads", integer=True)
    return {"sizes": sizes, "timing": timing, "datasheet": datasheet, "gpus": gpus, "precision": precision,
            "precision_requested": spec.get("precision") or "bf16", "precision_note": precision_note,
            "health": health, "dcgm": dcgm, "cpu_threads": threads,
            "thresholds": load_thresholds(spec.get("thresholds"))}
