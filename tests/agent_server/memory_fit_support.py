"""Shared by the phase-1 tests: a tiny ready workload, a candidate for it, and memory-fit results in the agent's own
format (made by the agent's build_result from probe reports)."""

from __future__ import annotations

from typing import Any

from dossier_agent.jobs import memory_fit as agent_memory_fit

from apps.quotes.tests.url_fixtures import make_candidate

MIB = 2**20

#: A decoder small enough for a CPU probe in a second: 2 layers, hidden 64, GQA 4/2 heads, vocabulary 256.
TINY_SHAPE = {
    "architecture": "dense", "precision": "bf16", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "num_kv_heads": 2, "ffn_size": 128, "vocab_size": 256, "max_context_tokens": 512,
    "mean_input_tokens": 64, "p95_input_tokens": 96, "mean_output_tokens": 16, "p95_output_tokens": 32,
    "concurrent_sessions_mean": 1, "concurrent_sessions_peak": 2,
}


def tiny_candidate(team, **changes):
    """A candidate (quote with a GPU × a ready version) whose workload is the tiny decoder."""
    candidate = make_candidate(team)
    summary = candidate.workload_summary
    for name, value in {**TINY_SHAPE, **changes}.items():
        setattr(summary, name, value)
    summary.save()
    return candidate


def probe_report(n: int, *, outcome: str = "ok", weights: int, kv_per_request: int, activation: int,
                 runtime: int = 0, nvml_total: int | None = None) -> dict[str, Any]:
    """A probe's report as dossier_agent.probe writes it (the parts the job reads)."""
    components = {"weights": weights, "kv_cache": kv_per_request * n, "activation_peak": activation,
                  "runtime_baseline": 300 * MIB}
    footprint = weights + kv_per_request * n + activation + runtime
    report: dict[str, Any] = {"n": n, "outcome": outcome, "wall_s": 0.5}
    if outcome == "ok":
        report["components"] = components
        report["totals"] = {"footprint_bytes": footprint, "footprint_source": "test probe",
                            "torch_allocated_peak_bytes": footprint - runtime}
    if nvml_total is not None:
        report["device_info"] = {"nvml_total_bytes": nvml_total, "nvml_used_by_others_bytes": 0,
                                 "nvml_name": "NVIDIA H200"}
    return report


def agent_result(spec: dict[str, Any], probes: list[dict[str, Any]], fails: int | None = None) -> dict[str, Any]:
    """The RESULT the agent's memory_fit job builds from these probes (its own build_result)."""
    plan = agent_memory_fit.parse_spec(spec, {})
    state = agent_memory_fit.SearchState(minimum=plan.search.minimum, maximum=plan.search.maximum)
    for probe in probes:
        fitted = probe["outcome"] == "ok"
        state.record(probe["n"], fitted, (probe.get("totals") or {}).get("footprint_bytes") if fitted else None)
    return agent_memory_fit.build_result(plan, {"state": state, "probes": probes, "stopped": None}, {})
