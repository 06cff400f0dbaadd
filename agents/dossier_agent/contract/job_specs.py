"""The parts of job specs the server checks before it dispatches a job, parsed exactly as the agent parses them: the
`operations` job's spec and the operations it will run on the node, and the environment a job group (`allreduce`)
may pass to its ranks. The jobs themselves (`dossier_agent.jobs.operations`, `dossier_agent.jobs.allreduce`) import
them from here; their module docstrings describe the specs.
"""

from __future__ import annotations

from typing import Any

from dossier_agent.contract.operation_names import OPERATIONS

# ----------------------------------------------------------------------------------------------------------------------
# The `operations` job
# ----------------------------------------------------------------------------------------------------------------------

SCENARIOS = ("kill_worker", "restart", "bad_deploy", "drain", "stop")
DEFAULT_RECOVERY = {"kill_worker": ("restart", "start"), "bad_deploy": ("restart", "start"), "stop": ("start",),
                    "restart": (), "drain": ("restart", "start")}
DEFAULT_LOAD = {"rate_per_s": 20.0, "before_s": 5.0, "after_s": 5.0, "timeout_s": 10.0, "output_tokens": 8,
                "input_words": 16, "drain_s": 15.0, "max_connections": 512,
                "retry": {"max_attempts": 4, "backoff_s": 0.1, "factor": 2.0}}
DEFAULT_HEALTH = {"interval_s": 0.05, "timeout_s": 120.0, "detect_timeout_s": 30.0}


class OperationsSpecError(ValueError):
    """The `operations` job spec holds a bad value; the message names it."""


def _number(value: Any, name: str, *, minimum: float = 0.0, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise OperationsSpecError(f"{name} must be a {'whole ' if integer else ''}number, got {value!r}")
    if value < minimum:
        raise OperationsSpecError(f"{name} must be at least {minimum}, got {value!r}")
    return value


def _merged(defaults: dict[str, Any], given: Any, name: str) -> dict[str, Any]:
    if given is None:
        return dict(defaults)
    if not isinstance(given, dict):
        raise OperationsSpecError(f"{name} must be an object")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise OperationsSpecError(f"unknown {name} key(s) {', '.join(unknown)}; known: {', '.join(sorted(defaults))}")
    return {**defaults, **given}


def parse_operations_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The `operations` job's plan; nothing in it can name a command, only operations (checked against the node's
    declared ones later)."""
    known = {"target", "mock", "endpoint", "load", "scenarios", "cold_start", "proxy_model", "health",
             "ready_tolerance", "log_window_s"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise OperationsSpecError(f"unknown spec key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    target = spec.get("target", "declared")
    if target not in ("declared", "builtin_mock"):
        raise OperationsSpecError(f"target must be declared or builtin_mock, got {target!r}")
    mock = _merged({"port": None, "startup_delay_s": 1.0, "ttft_ms": 0.0, "token_ms": 0.0}, spec.get("mock"), "mock")
    for key in ("startup_delay_s", "ttft_ms", "token_ms"):
        _number(mock[key], f"mock.{key}")
    if mock["port"] is not None:
        _number(mock["port"], "mock.port", minimum=1, integer=True)
    endpoint = _merged({"api": "chat", "model": "default"}, spec.get("endpoint"), "endpoint")
    if endpoint["api"] not in ("chat", "completions"):
        raise OperationsSpecError("endpoint.api must be chat or completions")
    load = _merged({key: value for key, value in DEFAULT_LOAD.items() if key != "retry"} | {"retry": None},
                   spec.get("load"), "load")
    load["retry"] = _merged(DEFAULT_LOAD["retry"], load["retry"], "load.retry")
    _number(load["rate_per_s"], "load.rate_per_s", minimum=0.1)
    for key in ("before_s", "after_s", "drain_s"):
        _number(load[key], f"load.{key}")
    _number(load["timeout_s"], "load.timeout_s", minimum=0.1)
    for key in ("output_tokens", "input_words", "max_connections"):
        _number(load[key], f"load.{key}", minimum=1, integer=True)
    _number(load["retry"]["max_attempts"], "load.retry.max_attempts", minimum=1, integer=True)
    _number(load["retry"]["backoff_s"], "load.retry.backoff_s")
    _number(load["retry"]["factor"], "load.retry.factor", minimum=1.0)
    scenarios = []
    for position, entry in enumerate(spec.get("scenarios") or []):
        entry = {"name": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or set(entry) - {"name", "recovery"}:
            raise OperationsSpecError(f"scenarios[{position}] must be {{\"name\": ..., \"recovery\": ...}}")
        if entry.get("name") not in SCENARIOS:
            raise OperationsSpecError(f"scenarios[{position}].name must be one of {', '.join(SCENARIOS)}, "
                                      f"got {entry.get('name')!r}")
        recovery = entry.get("recovery")
        if recovery is not None and recovery != "none" and recovery not in OPERATIONS:
            raise OperationsSpecError(f"scenarios[{position}].recovery must be an operation or none, "
                                      f"got {recovery!r}")
        scenarios.append({"name": entry["name"], "recovery": recovery})
    cold = _merged({"repeats": 0}, spec.get("cold_start"), "cold_start")
    _number(cold["repeats"], "cold_start.repeats", integer=True)
    proxy = spec.get("proxy_model")
    if proxy is not None:
        proxy = _merged({"model": None, "device": "auto", "repeats": 2, "prompt_tokens": 16, "timeout_s": 300.0},
                        proxy, "proxy_model")
        if not isinstance(proxy["model"], dict):
            raise OperationsSpecError("proxy_model.model must be a model shape object")
        _number(proxy["repeats"], "proxy_model.repeats", minimum=1, integer=True)
        _number(proxy["prompt_tokens"], "proxy_model.prompt_tokens", minimum=1, integer=True)
    health = _merged(DEFAULT_HEALTH, spec.get("health"), "health")
    for key in health:
        _number(health[key], f"health.{key}", minimum=0.001)
    tolerance = _merged({"abs_s": 0.2, "rel": 0.1}, spec.get("ready_tolerance"), "ready_tolerance")
    if not scenarios and not cold["repeats"] and proxy is None:
        raise OperationsSpecError("nothing to do: give scenarios, cold_start.repeats or proxy_model")
    return {"target": target, "mock": mock, "endpoint": endpoint, "load": load, "scenarios": scenarios,
            "cold_start": cold, "proxy_model": proxy, "health": health, "ready_tolerance": tolerance,
            "log_window_s": _number(spec.get("log_window_s", 5.0), "log_window_s")}


def resolve_recovery(scenario: dict[str, Any], declared: list[str]) -> str:
    """The operation that recovers from a scenario: the spec's, else the first declared default, else none."""
    if scenario["recovery"] is not None:
        return scenario["recovery"]
    for candidate in DEFAULT_RECOVERY[scenario["name"]]:
        if candidate in declared:
            return candidate
    return "none"


def required_operations(plan: dict[str, Any], declared: list[str]) -> list[str]:
    """Every operation the plan will run (the server puts the same list in the job's `required_operations`)."""
    needed = set()
    for scenario in plan["scenarios"]:
        needed.add(scenario["name"])
        recovery = resolve_recovery(scenario, declared)
        if recovery != "none":
            needed.add(recovery)
    if plan["cold_start"]["repeats"]:
        needed.update({"stop", "start"})
    return sorted(needed)


# ----------------------------------------------------------------------------------------------------------------------
# Job groups (`allreduce`)
# ----------------------------------------------------------------------------------------------------------------------

# Settings the server may pass to the ranks (network interface choices and debug output; nothing that loads code).
ALLOWED_ENV = frozenset({
    "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_DEBUG",
    "NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_IB_GID_INDEX", "GLOO_SOCKET_IFNAME",
})
