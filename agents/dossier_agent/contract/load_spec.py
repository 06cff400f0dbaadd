"""The throughput job's load spec: its fields and defaults, the checks of `LoadSpec.from_dict`, the measured window
and latency limits, and the spec of each level of a sweep. The agent runs a load from it; the server recomputes the
run's summary with the same parameters (`dossier_agent.contract.metrics.summarize`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from dossier_agent.contract import lengths, load_schedule, metrics

APIS = ("chat", "completions", "embeddings", "generic")


@dataclass(frozen=True)
class Target:
    """An endpoint URL, parsed: the scheme, host, port and path prefix the load generator connects to."""

    scheme: str
    host: str
    port: int
    base_path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"endpoint URL must be http(s)://host[:port][/path], got {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def netloc(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


class SpecError(ValueError):
    """The load spec holds a bad value; the message names it."""


@dataclass
class LoadSpec:
    endpoint: dict[str, Any]
    profile: dict[str, Any]
    duration_s: float = 60.0
    warmup_s: float = 5.0
    cooldown_s: float = 2.0
    min_window_s: float = 10.0
    max_requests: int = 1_000_000
    seed: int = 0
    prompts: dict[str, Any] = field(default_factory=dict)
    output_tokens: int | None = None
    slo: dict[str, Any] = field(default_factory=dict)
    send_lag_p99_limit_s: float = metrics.DEFAULT_SEND_LAG_P99_LIMIT_S
    timeout_s: float = 120.0
    idle_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    drain_s: float | None = None
    max_connections: int = 4096
    prewarm_connections: int | None = None
    calibrate: bool = True
    keep_text: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadSpec:
        if not isinstance(data, Mapping):
            raise SpecError("the load spec must be an object")
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(f"unknown load spec fields: {', '.join(unknown)}")
        endpoint = data.get("endpoint")
        if not isinstance(endpoint, Mapping) or not endpoint.get("url"):
            raise SpecError("endpoint.url is required")
        if endpoint.get("api", "chat") not in APIS:
            raise SpecError(f"endpoint.api must be one of {', '.join(APIS)}")
        try:
            Target.parse(endpoint["url"])
        except ValueError as error:
            raise SpecError(str(error)) from None
        profile = data.get("profile")
        if not isinstance(profile, Mapping):
            raise SpecError("profile is required")
        spec = cls(**{key: value for key, value in data.items() if key in known})
        spec.endpoint, spec.profile = dict(endpoint), dict(profile)
        for name in ("duration_s", "timeout_s", "idle_timeout_s", "connect_timeout_s", "send_lag_p99_limit_s"):
            value = getattr(spec, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise SpecError(f"{name} must be a positive number")
        if spec.duration_s > 24 * 3600:
            raise SpecError("duration_s is limited to 24 hours")
        if spec.warmup_s < 0 or spec.cooldown_s < 0 or spec.warmup_s + spec.cooldown_s >= spec.duration_s:
            raise SpecError("warmup_s + cooldown_s must be shorter than duration_s")
        if spec.duration_s - spec.warmup_s - spec.cooldown_s < spec.min_window_s:
            raise SpecError(f"the measured window (duration − warm-up − cool-down) must last at least "
                            f"min_window_s = {spec.min_window_s} s")
        if not isinstance(spec.max_requests, int) or spec.max_requests < 1:
            raise SpecError("max_requests must be a positive integer")
        unknown_limits = set(spec.slo) - set(metrics.LIMIT_KEYS) - {"target"}
        if unknown_limits:
            raise SpecError(f"unknown slo fields: {', '.join(sorted(unknown_limits))}")
        try:
            load_schedule.build_schedule(spec.profile, min(spec.duration_s, 1.0), max_requests=1)
        except load_schedule.ScheduleError as error:
            raise SpecError(str(error)) from None
        if not isinstance(spec.prompts, Mapping):
            raise SpecError("prompts must be an object")
        synthetic = spec.prompts.get("synthetic")
        if synthetic is not None and spec.prompts.get("dataset_lines") is None and not spec.prompts.get("dataset"):
            if not isinstance(synthetic, Mapping):
                raise SpecError("prompts.synthetic must be an object")
            # The lengths the agent's prompt builder can draw (dossier_agent.contract.lengths), checked before a run.
            synthetic = dict(synthetic)
            if spec.output_tokens and "output_tokens_mean" not in synthetic and "output_tokens" not in synthetic:
                synthetic["output_tokens"] = spec.output_tokens
            try:
                lengths.check_synthetic(synthetic)
            except lengths.LengthError as error:
                raise SpecError(str(error)) from None
        return spec

    @property
    def window(self) -> tuple[float, float]:
        return self.warmup_s, self.duration_s - self.cooldown_s

    @property
    def limits(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.slo.items() if k in metrics.LIMIT_KEYS and v is not None}

    def redacted(self) -> dict[str, Any]:
        """The spec as stored beside the results: the API key never appears (only where it was read from)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        endpoint = dict(self.endpoint)
        headers = dict(endpoint.get("headers") or {})
        for name in list(headers):
            if name.lower() in ("authorization", "x-api-key", "api-key"):
                headers[name] = "(redacted)"
        if headers:
            endpoint["headers"] = headers
        data["endpoint"] = endpoint
        profile = dict(self.profile)
        if isinstance(profile.get("timestamps"), list):
            profile["timestamps"] = f"({len(profile['timestamps'])} timestamps)"
        data["profile"] = profile
        if isinstance(self.prompts.get("dataset_lines"), list):
            data["prompts"] = dict(self.prompts, dataset_lines=f"({len(self.prompts['dataset_lines'])} lines)")
        return data


def level_spec(base: LoadSpec, key: str, value: float, sweep: Mapping[str, Any]) -> LoadSpec:
    """The spec of one sweep level: the base spec at offered load `value` (a rate, or a concurrency when `key` is
    "concurrency"), each level with its own duration, warm-up, cool-down (`level_*_s` of the sweep spec) and seed."""
    profile = dict(base.profile)
    if key == "concurrency":
        profile = {"kind": "concurrency", "concurrency": max(1, round(value))}
    else:
        if profile.get("kind") not in ("constant", "poisson", "gamma"):
            profile = {"kind": "constant"}
        profile["rate"] = float(value)
    duration = float(sweep.get("level_duration_s", base.duration_s))
    warmup = float(sweep.get("level_warmup_s", min(base.warmup_s, duration / 4)))
    cooldown = float(sweep.get("level_cooldown_s", min(base.cooldown_s, duration / 4)))
    drain = base.drain_s
    if drain is None and base.limits.get("e2e_max_s"):
        # A request still running e2e_max_s after the level ended has missed the SLO whatever happens next:
        # waiting longer for it changes no verdict, and an overloaded level would otherwise drain its whole queue.
        drain = 1.5 * base.limits["e2e_max_s"] + 0.1
    return replace(base, profile=profile, duration_s=duration, warmup_s=warmup, cooldown_s=cooldown,
                   min_window_s=min(base.min_window_s, duration - warmup - cooldown), drain_s=drain,
                   seed=base.seed + int(value * 1000) % 100_000)
