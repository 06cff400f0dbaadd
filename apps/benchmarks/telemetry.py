"""Summarise the telemetry samples of one attempt (docs/agent-protocol.md §3.6), per GPU. No Django.

Each sample is one GPU's reading at one moment; a field the driver does not support is None and is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_PEAK_FIELDS = ("memory_used_mib", "power_w", "temperature_c", "utilization_gpu_pct", "sm_clock_mhz",
                "ecc_uncorrected_volatile", "ecc_corrected_volatile")
_MEAN_FIELDS = ("utilization_gpu_pct", "power_w")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def summarise_samples(samples: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{gpu index (str): {"samples": n, "peak_<field>": …, "mean_<field>": …, "energy_used_mj": …, …}}."""
    per_gpu: dict[str, dict[str, Any]] = {}
    for sample in samples:
        if not isinstance(sample, dict):
            continue
        index = sample.get("index")
        key = str(index) if isinstance(index, int) and not isinstance(index, bool) else "?"
        state = per_gpu.setdefault(key, {"samples": 0, "sums": {}, "counts": {}, "peaks": {}, "energy": [],
                                         "reasons": set(), "xids": []})
        state["samples"] += 1
        for name in _PEAK_FIELDS:
            value = _number(sample.get(name))
            if value is not None:
                state["peaks"][name] = max(value, state["peaks"].get(name, value))
        for name in _MEAN_FIELDS:
            value = _number(sample.get(name))
            if value is not None:
                state["sums"][name] = state["sums"].get(name, 0.0) + value
                state["counts"][name] = state["counts"].get(name, 0) + 1
        energy = _number(sample.get("energy_mj"))
        if energy is not None:
            state["energy"].append(energy)
        reasons = sample.get("clock_event_reasons")
        if isinstance(reasons, list):
            state["reasons"].update(str(reason) for reason in reasons)
        xids = sample.get("xid_events")
        if isinstance(xids, list):
            state["xids"].extend(event.get("xid") for event in xids if isinstance(event, dict))

    summary: dict[str, dict[str, Any]] = {}
    for key, state in sorted(per_gpu.items()):
        entry: dict[str, Any] = {"samples": state["samples"]}
        for name, value in state["peaks"].items():
            entry[f"peak_{name}"] = value
        for name, total in state["sums"].items():
            entry[f"mean_{name}"] = total / state["counts"][name]
        if len(state["energy"]) >= 2:
            entry["energy_used_mj"] = max(state["energy"]) - min(state["energy"])
        entry["clock_event_reasons"] = sorted(state["reasons"])
        entry["xid_errors"] = state["xids"]
        summary[key] = entry
    return summary


def telemetry_samples(event_data: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The per-GPU samples inside telemetry events' data ({"gpus": [sample, …]})."""
    for data in event_data:
        gpus = data.get("gpus") if isinstance(data, dict) else None
        if isinstance(gpus, list):
            yield from (gpu for gpu in gpus if isinstance(gpu, dict))
