"""The `throughput` job (phase 2): load an OpenAI-compatible or generic HTTP endpoint, record every request, and
report latency percentiles, throughput, SLO attainment, goodput and — with a sweep — the capacity at the SLO.

Spec: the load spec of `dossier_agent.loadgen.runner.LoadSpec` (endpoint, profile, duration, prompts, slo, …) plus
- `sweep` (optional): levels or a capacity search (`dossier_agent.loadgen.sweep`);
- `self_check` (optional): `{"enabled": true, "refuse": false, "seconds_per_level": 1.0}` — measure this node's
  client ceiling against the loopback mock first; above half of it the job warns (or refuses).
- `direct` (instead of an endpoint): the phase-1 proxy's own prefill/decode or training-step throughput on this node
  (`dossier_agent.loadgen.direct`; needs torch).
`endpoint.url` may be `"builtin-mock"`: the job then starts the loopback mock itself (`endpoint.mock`: its options
as command-line flags, e.g. `{"ttft-ms": 50}`), which is what `dossier-agent self-test` runs.

Artifacts: per-request records (`records*.jsonl.gz`, one JSON object a line, docs/metrics.md "Record"; and the
same as numpy columns, `records*.npz`, the fast form for the server's ingest) and the full summary (`summary.json`).
The result carries the summary without histograms, the self-check and the sweep.
Nothing here imports a third-party package: the load path is plain asyncio (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

KIND = "throughput"
SELF_TEST_SPEC: dict[str, Any] = {
    "endpoint": {"url": "builtin-mock", "api": "chat", "mock": {"ttft-ms": 5, "token-ms": 1}},
    "profile": {"kind": "constant", "rate": 20}, "duration_s": 2.0, "warmup_s": 0.5, "cooldown_s": 0.2,
    "min_window_s": 1.0, "output_tokens": 8, "prompts": {"synthetic": {"input_tokens_mean": 16}},
    "slo": {"ttft_max_s": 1.0, "target": 0.9}, "send_lag_p99_limit_s": 0.05, "self_check": {"enabled": False},
}
SELF_TEST_TIMEOUT_S = 60
_JOB_KEYS = ("sweep", "self_check")


def _strip(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key != "histograms"}


def _run_direct(spec: dict[str, Any], ctx) -> dict[str, Any]:
    """Item 5: the phase-1 proxy's prefill/decode (or training step) throughput on this node's device."""
    from dossier_agent.loadgen.direct import DirectSpecError, parse_direct, run_direct

    try:
        settings = parse_direct(spec["direct"])
    except DirectSpecError as error:
        raise ValueError(f"invalid throughput spec: direct: {error}") from None
    import torch

    device = settings["device"]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        raise ValueError("invalid throughput spec: direct.device is cuda but torch sees no GPU")
    result = run_direct(settings, device_name=device, progress=ctx.progress, cancelled=ctx.cancelled)
    ctx.raise_if_cancelled()
    for point in result["points"]:
        ctx.event("measurement", {k: v for k, v in point.items() if k != "roofline"})
    ctx.add_artifact(json.dumps(result, indent=1, default=str).encode(), "direct.json", "application/json")
    result["model"] = settings["shape"].as_dict()
    return {"direct": result}


def run(spec: dict[str, Any], ctx) -> dict[str, Any]:
    if spec.get("direct") is not None:
        return _run_direct(spec, ctx)
    from dossier_agent.contract.load_spec import LoadSpec, SpecError
    from dossier_agent.loadgen import selfcheck
    from dossier_agent.loadgen.runner import run_load
    from dossier_agent.loadgen.sweep import run_sweep

    load = {key: value for key, value in spec.items() if key not in _JOB_KEYS}
    endpoint = dict(load.get("endpoint") or {})
    mock = None
    if endpoint.get("url") == "builtin-mock":
        options = [f"--{name}={value}" for name, value in (endpoint.pop("mock", None) or {}).items()]
        mock = selfcheck.MockProcess(*options)
        endpoint["url"] = mock.url
        load["endpoint"] = endpoint
    try:
        try:
            load_spec = LoadSpec.from_dict(load)
        except SpecError as error:
            raise ValueError(f"invalid throughput spec: {error}") from None
        result: dict[str, Any] = {"spec": load_spec.redacted()}
        check = dict(spec.get("self_check") or {"enabled": True})
        if check.get("enabled", True):
            ctx.progress(0.0, "self-check: measuring this node's client ceiling")
            ceiling = selfcheck.measure_ceiling_sync(seconds_per_level=float(check.get("seconds_per_level", 1.0)),
                                                     lag_limit_s=load_spec.send_lag_p99_limit_s)
            verdict = selfcheck.judge(spec, ceiling, refuse=bool(check.get("refuse", False)))
            result["self_check"] = {"ceiling": ceiling, **verdict}
            ctx.event("self_check", {"open_loop_ceiling_per_s": ceiling["open_loop_ceiling_per_s"],
                                     "closed_loop_per_s": ceiling["closed_loop_per_s"], "verdict": verdict["verdict"]})
            if verdict["verdict"] == "refuse":
                raise RuntimeError("self-check refused the run: " + verdict["reason"])
            if verdict["verdict"] == "warn":
                ctx.log("self-check warning: " + verdict["reason"], level="warning")

        def log(message: str, **fields: Any) -> None:
            ctx.log(message, **fields)

        if spec.get("sweep"):
            def on_level(point: dict[str, Any], level_result) -> None:
                ctx.event("measurement", {k: v for k, v in point.items() if k != "invalid_reasons"})
                ctx.add_artifact(level_result.records_jsonl_gz(), f"records-{point['offered']:g}.jsonl.gz",
                                 "application/gzip")
                ctx.add_artifact(level_result.records_npz(), f"records-{point['offered']:g}.npz", "application/x-npz")

            sweep = asyncio.run(run_sweep(load_spec, spec["sweep"], cancelled=ctx.cancelled,
                                          progress=ctx.progress, log=log, on_level=on_level))
            ctx.raise_if_cancelled()
            result["sweep"] = sweep
            result["capacity_at_slo"] = sweep["capacity"]
            result["valid"] = all(point["valid"] for point in sweep["points"])
            ctx.add_artifact(json.dumps(sweep, indent=1).encode(), "sweep.json", "application/json")
        else:
            run_result = asyncio.run(run_load(load_spec, cancelled=ctx.cancelled, progress=ctx.progress, log=log))
            ctx.raise_if_cancelled()
            result["meta"] = run_result.meta
            result["summary"] = _strip(run_result.summary)
            result["valid"] = run_result.summary["valid"]
            result["records_sha256"] = ctx.add_artifact(run_result.records_jsonl_gz(), "records.jsonl.gz",
                                                        "application/gzip")
            result["records_npz_sha256"] = ctx.add_artifact(run_result.records_npz(), "records.npz",
                                                            "application/x-npz")
            ctx.add_artifact(json.dumps(run_result.summary).encode(), "summary.json", "application/json")
            if not run_result.summary["valid"]:
                ctx.log("run invalid: " + "; ".join(run_result.summary["invalid_reasons"]), level="warning")
            if run_result.summary["output_length"]["flag"]:
                ctx.log("mean output length is more than 10 % off its target", level="warning",
                        mean=run_result.summary["output_length"]["mean"], target=load_spec.output_tokens)
        if mock is not None:
            result["mock"] = {"ready_unix": mock.ready.get("ready_unix")}
        ctx.progress(1.0, "done")
        return result
    finally:
        if mock is not None:
            mock.close()
