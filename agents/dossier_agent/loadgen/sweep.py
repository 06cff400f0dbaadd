"""Sweeps and the capacity search: the highest offered rate (or concurrency) whose SLO attainment stays at or above
the target (`dossier_agent.contract.metrics.capacity_at_slo`), found by stepping up geometrically until a level
fails, then bisecting between the last passing and the first failing level. Bounded: at most `max_levels` runs.

Sweep spec (`spec["sweep"]`):
- `levels`: an explicit list of rates (or concurrencies) to run, in order; or
- `search`: `{"start": r, "factor": 2, "max": r_max, "tolerance": 0.05, "max_levels": 12}` for the capacity search;
- `key`: `rate` (open loop, the base profile's kind: constant or poisson…) or `concurrency` (closed loop);
- `level_duration_s`, `level_warmup_s`, `level_cooldown_s`: each level's run (defaults: the base spec's).
A level whose run is invalid (the client fell behind: send-lag p99 over the limit, or fewer requests sent in the
window than scheduled beyond what that limit allows, `metrics.rate_check`) stops the search there: its attainment
says nothing about the server, and it is never a capacity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from dossier_agent.contract import metrics
from dossier_agent.contract.load_spec import LoadSpec, SpecError, level_spec
from dossier_agent.loadgen.runner import LoadResult, run_load

DEFAULT_MAX_LEVELS = 12


def _point(key: str, value: float, result: LoadResult) -> dict[str, Any]:
    summary = result.summary
    slo = summary["slo"]
    latency = summary["latency_s"]
    return {
        key: value, "offered": value, "attainment": slo["attainment"], "ci": slo["ci"], "measured": slo["total"],
        "accepted": slo["accepted"], "valid": summary["valid"], "invalid_reasons": summary["invalid_reasons"],
        "requests_per_s": summary["throughput"]["requests_per_s"],
        "scheduled_per_s": summary["throughput"]["scheduled_per_s"], "sent_per_s": summary["throughput"]["sent_per_s"],
        "output_tokens_per_s": summary["throughput"]["output_tokens_per_s"],
        "goodput_per_s": summary["goodput"]["accepted_per_s"],
        "ttft_p50_s": latency["ttft"]["per_request"]["p50"], "ttft_p95_s": latency["ttft"]["per_request"]["p95"],
        "e2e_p50_s": latency["e2e"]["per_request"]["p50"], "e2e_p95_s": latency["e2e"]["per_request"]["p95"],
        "tpot_p50_s": latency["tpot"]["per_request"]["p50"],
        "send_lag_p99_s": summary["send_lag_s"]["p99"], "errors_by_kind": summary["counts"]["errors_by_kind"],
    }


async def run_sweep(base: LoadSpec, sweep: Mapping[str, Any], *, cancelled: Callable[[], bool] | None = None,
                    progress: Callable[[float, str], None] | None = None, log: Callable[..., None] | None = None,
                    on_level: Callable[[dict[str, Any], LoadResult], None] | None = None) -> dict[str, Any]:
    """Run the levels (explicit list, or the capacity search); returns the points and the capacity at the SLO."""
    key = sweep.get("key", "rate")
    if key not in ("rate", "concurrency"):
        raise SpecError("sweep.key must be rate or concurrency")
    target = base.slo.get("target")
    if target is None:
        raise SpecError("a sweep needs slo.target (the attainment to hold, e.g. 0.99)")
    cancelled = cancelled or (lambda: False)
    report = progress or (lambda fraction, message: None)
    points: list[dict[str, Any]] = []
    stop_reason = None

    async def level(value: float) -> dict[str, Any] | None:
        nonlocal stop_reason
        if cancelled():
            stop_reason = "cancelled"
            return None
        spec = level_spec(base, key, value, sweep)
        result = await run_load(spec, cancelled=cancelled, log=log)
        point = _point(key, value, result)
        points.append(point)
        if on_level is not None:
            on_level(point, result)
        if log is not None:
            log("sweep level", key=key, value=value, attainment=point["attainment"], valid=point["valid"])
        if not point["valid"]:
            stop_reason = f"level {value:g} invalid: " + "; ".join(point["invalid_reasons"])
        return point

    def passes(point: dict[str, Any]) -> bool:
        return point["attainment"] is not None and point["attainment"] >= target

    if "levels" in sweep:
        values = [float(v) for v in sweep["levels"]]
        if not values or any(v <= 0 for v in values) or len(values) > int(sweep.get("max_levels", 50)):
            raise SpecError("sweep.levels must be 1 to max_levels positive numbers")
        for i, value in enumerate(values):
            report(i / len(values), f"level {value:g}")
            point = await level(value)
            if point is None or stop_reason:
                break
    else:
        search = dict(sweep.get("search") or {})
        start = float(search.get("start", 1.0))
        factor = float(search.get("factor", 2.0))
        ceiling = float(search.get("max", start * factor ** 10))
        tolerance = float(search.get("tolerance", 0.05))
        max_levels = int(search.get("max_levels", DEFAULT_MAX_LEVELS))
        if start <= 0 or factor <= 1 or ceiling < start or not 0 < tolerance < 1 or max_levels < 2:
            raise SpecError("sweep.search needs start > 0, factor > 1, max >= start, 0 < tolerance < 1, "
                            "max_levels >= 2")
        low, high, value = None, None, start
        while len(points) < max_levels:  # geometric steps up to the first failure
            report(len(points) / max_levels, f"searching: level {value:g}")
            point = await level(value)
            if point is None or stop_reason:
                break
            if passes(point):
                low = value
                if value >= ceiling:
                    break
                value = min(ceiling, value * factor)
            else:
                high = value
                break
        while (low is not None and high is not None and not stop_reason and len(points) < max_levels
               and (high - low) / low > tolerance):  # bisection between last pass and first failure
            value = (low + high) / 2.0
            if key == "concurrency":
                value = float(math.floor(value))
                if value <= low:
                    break
            report(len(points) / max_levels, f"bisecting: level {value:g}")
            point = await level(value)
            if point is None or stop_reason:
                break
            if passes(point):
                low = value
            else:
                high = value
    valid_points = [p for p in points if p["valid"]]
    capacity = metrics.capacity_at_slo(valid_points, target, key="offered")
    report(1.0, "sweep done")
    return {"key": key, "target": target, "points": sorted(points, key=lambda p: p["offered"]),
            "capacity": capacity, "stopped": stop_reason, "levels_run": len(points),
            "limits": base.limits}
