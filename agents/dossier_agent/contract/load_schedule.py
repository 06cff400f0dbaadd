"""Load profiles. Open-loop profiles are computed before the run as an array of scheduled send times (seconds
from the start of the run, sorted); the closed loop (`concurrency`) has no schedule: a request is scheduled the
moment a worker is free. Every schedule is bounded: at most `max_requests` entries, all before `duration_s`.

Profiles (`spec["profile"]["kind"]`):

- `concurrency`: `{"concurrency": N}` closed loop, N requests in flight;
- `constant`: `{"rate": r}` one request every 1/r s;
- `poisson`: `{"rate": r}` exponential gaps;
- `gamma`: `{"rate": r, "burstiness": k}` gamma gaps of shape k and mean 1/r (k = 1 is Poisson, k < 1 burstier);
- `burst`: `{"burst_size": n, "period_s": p, "rate": base}` n requests at once every p s, over an optional base rate;
- `ramp`: `{"start_rate": r0, "end_rate": r1}` rate changing linearly over the duration;
- `trace`: `{"timestamps": [...]}` or `{"path": file}` (one number a line, or JSON lines with `timestamp`; the first
  is time 0), `speed` to replay faster or slower.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

OPEN_LOOP = ("constant", "poisson", "gamma", "burst", "ramp", "trace")
KINDS = ("concurrency", *OPEN_LOOP)
MAX_REQUESTS = 10_000_000


class ScheduleError(ValueError):
    pass


def _positive(profile: Mapping[str, Any], key: str) -> float:
    value = profile.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ScheduleError(f"profile.{key} must be a positive number, got {value!r}")
    return float(value)


def _bounded(times: np.ndarray, duration_s: float, max_requests: int) -> np.ndarray:
    times = np.sort(times[(times >= 0) & (times < duration_s)])
    return times[:max_requests]


def _renewal(rng: np.random.Generator, rate: float, duration_s: float, max_requests: int, draw) -> np.ndarray:
    """Arrival times of a renewal process: draw gaps in blocks until the duration (or the cap) is covered."""
    parts, now, total = [], 0.0, 0
    block = int(min(max_requests, max(16, rate * duration_s * 1.2 + 16)))
    while now < duration_s and total < max_requests:
        gaps = draw(rng, block)
        times = now + np.cumsum(gaps)
        parts.append(times)
        total += times.size
        now = float(times[-1])
    return _bounded(np.concatenate(parts) if parts else np.zeros(0), duration_s, max_requests)


def build_schedule(profile: Mapping[str, Any], duration_s: float, *, max_requests: int = MAX_REQUESTS,
                   seed: int = 0) -> np.ndarray | None:
    """Scheduled send times for an open-loop profile; `None` for the closed loop."""
    kind = profile.get("kind")
    if kind not in KINDS:
        raise ScheduleError(f"profile.kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not (isinstance(duration_s, (int, float)) and duration_s > 0):
        raise ScheduleError("duration_s must be positive")
    max_requests = int(min(max_requests, MAX_REQUESTS))
    if max_requests < 1:
        raise ScheduleError("max_requests must be at least 1")
    rng = np.random.default_rng(seed)
    if kind == "concurrency":
        concurrency = profile.get("concurrency")
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not 1 <= concurrency <= 100_000:
            raise ScheduleError(f"profile.concurrency must be an integer from 1 to 100000, got {concurrency!r}")
        return None
    if kind == "constant":
        rate = _positive(profile, "rate")
        count = min(max_requests, math.ceil(duration_s * rate - 1e-9))
        return np.arange(count, dtype=np.float64) / rate
    if kind == "poisson":
        rate = _positive(profile, "rate")
        return _renewal(rng, rate, duration_s, max_requests, lambda g, n: g.exponential(1.0 / rate, n))
    if kind == "gamma":
        rate = _positive(profile, "rate")
        shape = _positive(profile, "burstiness")
        return _renewal(rng, rate, duration_s, max_requests, lambda g, n: g.gamma(shape, 1.0 / (rate * shape), n))
    if kind == "burst":
        size = profile.get("burst_size")
        if not isinstance(size, int) or size < 1:
            raise ScheduleError(f"profile.burst_size must be a positive integer, got {size!r}")
        period = _positive(profile, "period_s")
        bursts = np.repeat(np.arange(0.0, duration_s, period), size)
        base = np.zeros(0)
        if profile.get("rate"):
            rate = _positive(profile, "rate")
            base = np.arange(min(max_requests, math.ceil(duration_s * rate - 1e-9)), dtype=np.float64) / rate
        return _bounded(np.concatenate([bursts, base]), duration_s, max_requests)
    if kind == "ramp":
        start, end = _positive(profile, "start_rate"), _positive(profile, "end_rate")
        # N(t) = start·t + (end − start)·t²/(2·D); the k-th request is sent where N(t) = k.
        total = (start + end) / 2.0 * duration_s
        k = np.arange(min(max_requests, math.floor(total - 1e-9) + 1), dtype=np.float64)
        slope = (end - start) / duration_s
        if abs(slope) < 1e-12:
            times = k / start
        else:
            times = (-start + np.sqrt(np.maximum(start * start + 2.0 * slope * k, 0.0))) / slope
        return _bounded(times, duration_s, max_requests)
    return _trace(profile, duration_s, max_requests)


def read_trace(path: str | Path) -> list[float]:
    """Timestamps from a file: one number a line, or JSON lines with a `timestamp` field. Bad lines are reported
    with their line numbers."""
    values: list[float] = []
    problems: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                value = json.loads(text)
                if isinstance(value, dict):
                    value = value["timestamp"]
                value = float(value)
                if not math.isfinite(value):
                    raise ValueError("not finite")
            except (ValueError, KeyError, TypeError) as error:
                problems.append(f"line {number}: {error}")
                if len(problems) >= 20:
                    break
                continue
            values.append(value)
    if problems:
        raise ScheduleError("trace file: " + "; ".join(problems))
    return values


def _trace(profile: Mapping[str, Any], duration_s: float, max_requests: int) -> np.ndarray:
    if "timestamps" in profile:
        raw = profile["timestamps"]
        if not isinstance(raw, list) or not all(isinstance(v, (int, float)) for v in raw):
            raise ScheduleError("profile.timestamps must be a list of numbers")
        values = [float(v) for v in raw]
    elif "path" in profile:
        values = read_trace(profile["path"])
    else:
        raise ScheduleError("a trace profile needs timestamps or path")
    if not values:
        raise ScheduleError("the trace has no timestamps")
    speed = float(profile.get("speed", 1.0))
    if speed <= 0:
        raise ScheduleError("profile.speed must be positive")
    times = np.asarray(values, dtype=np.float64)
    times = (times - times.min()) / speed
    return _bounded(times, duration_s, max_requests)


def offered_rate(profile: Mapping[str, Any], schedule: np.ndarray | None, duration_s: float) -> float | None:
    """The nominal offered rate of an open-loop profile (requests/s); None for the closed loop."""
    if schedule is None:
        return None
    if profile.get("rate") and profile.get("kind") in ("constant", "poisson", "gamma"):
        return float(profile["rate"])
    return schedule.size / duration_s if duration_s > 0 else None
