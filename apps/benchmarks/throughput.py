"""Phase-2 ingest: a `throughput` result's per-request records → the stored summary, and the candidate's figures.

Called by `services.result_ingest` (kind → handler, inside its transaction, so it runs exactly once per result).
Every number comes from the agent package's metrics module (`dossier_agent.contract.metrics`, the one definition the
agent uses on the node; docs/metrics.md): the records are read from the `records*.npz` artifacts and summarised with
the parameters the agent ran with (its stored load spec), so the server's figures and the agent's agree.

A single run stores `metrics.summarize` (percentiles per request and token-weighted with their method, no p99 from
under 100 samples, time slices, histogram/CDF bins, SLO attainment with its Wilson interval, goodput, validity).
A sweep stores one point per level (each recomputed from its own records) and `metrics.capacity_at_slo` over the
valid levels, plus the full summary of the level at the capacity. A level is valid only when its client kept its
schedule: send-lag p99 within the limit and the requests actually sent inside the window within that limit's
allowance of the scheduled ones (`metrics.rate_check`), so a level the client could not offer is never a capacity;
each point carries the scheduled and the sent rate, and `capacity_sent_per_s` is the rate the capacity level
really sent.

When the job measures a candidate (`Job.candidate`: named by its plan at dispatch, or the candidate of the node of
the agent that ran it offline) and this result is the job's canonical one, the measured figures go to the
candidate's phase-4 inputs with the job as reference, each linked to this result (apps/benchmarks/measurements.py)
when the run was on the candidate's node or its quoted GPU model; a rehearsal (CPU, mock stack) stores them linked as
a rehearsal, which never counts as measured and never replaces another figure: capacity at the SLO per GPU
(sweeps), p95/p99 end-to-end latency and the failure fraction (a valid run, or the capacity level of a sweep). An
invalid run (the client fell behind its schedule) is flagged and never stored there.
"""

from __future__ import annotations

import logging
import zipfile
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from dossier_agent.contract import metrics
from dossier_agent.contract.load_spec import LoadSpec, level_spec

from apps.benchmarks.measurements import FigureKept, measured_figure_set, measures_candidate
from apps.benchmarks.models import Result, ResultStatus
from apps.benchmarks.storage import artifact_storage
from apps.common.decimals import from_float
from apps.evidence.models import CandidateFigure, CapacityUnit, FigureMetric

logger = logging.getLogger(__name__)

KIND = "throughput"
ACTOR = "ingest_result"
SUMMARY_KEY = "phase2"


class RecordsMissing(Exception):
    """The records a throughput result needs are not there (never uploaded, purged, or unreadable)."""


# --- reading ----------------------------------------------------------------------------------------------------------


def _npz_artifacts(result: Result) -> dict[str, Any]:
    return {artifact.name: artifact for artifact in result.artifacts.all() if artifact.name.endswith(".npz")}


def read_columns(artifact) -> metrics.Columns:
    if artifact.purged_at is not None or not artifact.storage_name:
        raise RecordsMissing(f"{artifact.name}: the artifact was purged")
    try:
        with artifact_storage().open(artifact.storage_name, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise RecordsMissing(f"{artifact.name}: {error}") from None
    try:
        return metrics.columns_from_npz(data)
    except (ValueError, KeyError, OSError, zipfile.BadZipFile) as error:
        raise RecordsMissing(f"{artifact.name}: not a records archive ({error})") from None


# --- the agent's parameters ---------------------------------------------------------------------------------------


def load_spec(result: Result):
    """The agent's load spec as it ran (stored in the result, every default filled in), else the job's spec."""

    stored = (result.result or {}).get("spec") if isinstance(result.result, dict) else None
    data = stored if isinstance(stored, dict) else {k: v for k, v in (result.spec or {}).items()
                                                       if k not in ("sweep", "self_check")}
    known = LoadSpec.__dataclass_fields__
    return LoadSpec(**{key: value for key, value in data.items() if key in known})


def summarize_parameters(spec) -> dict[str, Any]:
    """The keyword arguments of `metrics.summarize` for a run of this load spec (the agent's own call)."""
    return {
        "window": spec.window,
        "limits": spec.limits,
        "slo_target": spec.slo.get("target"),
        "target_output_tokens": spec.output_tokens if spec.endpoint.get("api", "chat") in ("chat", "completions")
        else None,
        "send_lag_p99_limit_s": spec.send_lag_p99_limit_s,
    }


# --- summaries --------------------------------------------------------------------------------------------------------


def _e2e(summary: dict[str, Any], q: str) -> float | None:
    return summary["latency_s"]["e2e"]["per_request"][q]


def level_point(key: str, value: float, summary: dict[str, Any]) -> dict[str, Any]:
    """One sweep level for the charts and the capacity rule, from its recomputed summary."""
    counts, latency = summary["counts"], summary["latency_s"]
    return {
        key: value, "offered": value, "attainment": summary["slo"]["attainment"], "ci": summary["slo"]["ci"],
        "measured": counts["measured"], "accepted": counts["accepted"], "errors": counts["errors"],
        "failure_fraction": counts["errors"] / counts["measured"] if counts["measured"] else None,
        "valid": summary["valid"], "invalid_reasons": summary["invalid_reasons"],
        "requests_per_s": summary["throughput"]["requests_per_s"],
        "scheduled_per_s": summary["throughput"]["scheduled_per_s"],  # the schedule's rate in the window…
        "sent_per_s": summary["throughput"]["sent_per_s"],  # …and what the client really sent (metrics.rate_check)
        "output_tokens_per_s": summary["throughput"]["output_tokens_per_s"],
        "goodput_per_s": summary["goodput"]["accepted_per_s"],
        "goodput_tokens_per_s": summary["goodput"]["accepted_tokens_per_s"],
        **{f"{metric}_{q}_s": latency[metric]["per_request"][q] for metric in ("ttft", "e2e")
           for q in ("p50", "p95", "p99")},
        "send_lag_p99_s": summary["send_lag_s"]["p99"],
    }


def summarize_run(result: Result, artifacts: dict[str, Any], spec) -> dict[str, Any]:
    npz = artifacts.get("records.npz")
    if npz is None:
        raise RecordsMissing("records.npz was not uploaded")
    agent_summary = (result.result or {}).get("summary") or {}
    summary = metrics.summarize(read_columns(npz), offered_rate=agent_summary.get("offered_rate"),
                                **summarize_parameters(spec))
    return {"mode": "run", "records_artifact": npz.sha256, "summary": summary,
            "valid": summary["valid"], "invalid_reasons": summary["invalid_reasons"]}


def summarize_sweep(result: Result, artifacts: dict[str, Any], spec, sweep_spec: dict[str, Any]) -> dict[str, Any]:

    agent_sweep = (result.result or {}).get("sweep") or {}
    key = agent_sweep.get("key") or sweep_spec.get("key", "rate")
    target = agent_sweep.get("target") or spec.slo.get("target")
    if target is None:
        raise RecordsMissing("the sweep has no SLO target (slo.target)")
    values = sorted({float(point["offered"]) for point in agent_sweep.get("points") or []})
    if not values:
        raise RecordsMissing("the sweep reported no level")
    points, summaries = [], {}
    for value in values:
        name = f"records-{value:g}.npz"
        if name not in artifacts:
            raise RecordsMissing(f"{name} was not uploaded")
        level = level_spec(spec, key, value, sweep_spec)
        summary = metrics.summarize(read_columns(artifacts[name]), offered_rate=value if key == "rate" else None,
                                    **summarize_parameters(level))
        summaries[value] = (summary, artifacts[name].sha256)
        points.append(level_point(key, value, summary))
    # Only valid levels: one whose client fell behind (send lag, or sent rate short of the schedule) measured a load
    # the server was never offered, so it can be no capacity.
    capacity = metrics.capacity_at_slo([p for p in points if p["valid"]], float(target), key="offered")
    at_capacity = next((p for p in points if p["offered"] == capacity["capacity"]), None)
    out: dict[str, Any] = {
        "mode": "sweep", "key": key, "target": float(target), "points": points, "capacity": capacity,
        "capacity_sent_per_s": at_capacity["sent_per_s"] if at_capacity else None,
        "valid": all(p["valid"] for p in points),
        "invalid_reasons": [f"level {p['offered']:g}: {reason}" for p in points for reason in p["invalid_reasons"]],
        "stopped": agent_sweep.get("stopped"),
        "agent_capacity": (agent_sweep.get("capacity") or {}).get("capacity"),
    }
    shown = capacity["capacity"] if capacity["capacity"] is not None else values[0]
    out["summary"], out["records_artifact"] = summaries[shown]
    out["summary_level"] = shown
    return out


# --- the candidate's phase-4 inputs ------------------------------------------------------------------------------


def candidate_of(result: Result):
    """The candidate the job measures (set at dispatch from its plan, or from the agent's node for offline runs)."""
    return result.job.candidate


def _gpus_under_test(result: Result, candidate) -> tuple[int | None, str]:
    """The GPUs behind the endpoint: stated in the plan (`gpus_per_replica`, the sweep form asks for it), else the
    candidate's phase-4 input, else the GPUs of the agent's start inventory."""
    plan_spec = result.job.plan.spec if result.job.plan_id and isinstance(result.job.plan.spec, dict) else {}
    stated = plan_spec.get("gpus_per_replica")
    if isinstance(stated, int) and not isinstance(stated, bool) and stated > 0:
        return stated, "GPUs per replica (stated in the plan)"
    per_replica = CandidateFigure.objects.filter(candidate=candidate, metric=FigureMetric.GPUS_PER_REPLICA).first()
    if per_replica is not None and per_replica.value > 0:
        return int(per_replica.value), "GPUs per replica (phase-4 input)"
    snapshot = result.attempt.start_inventory
    if snapshot is not None and snapshot.gpu_count > 0:
        return snapshot.gpu_count, "GPUs in the agent's start inventory"
    return None, ""


def store_on_candidate(result: Result, measured: dict[str, Any]) -> dict[str, Any]:
    """Write the measured figures on the candidate's phase-4 inputs; returns what was stored and what was not."""

    candidate = candidate_of(result)
    if candidate is None:
        return {"candidate_id": None, "stored": [], "skipped": ["the plan names no candidate of this team"]}
    report: dict[str, Any] = {"candidate_id": candidate.pk, "stored": [], "skipped": []}
    if not result.canonical or result.status != ResultStatus.SUCCEEDED:
        report["skipped"].append("not the job's canonical, succeeded result")
        return report
    report["rehearsal"] = result.rehearsal
    if not result.rehearsal:
        measures, why_not = measures_candidate(result, candidate)
        if not measures:
            report["skipped"].append(why_not)
            return report
    reference = f"job:{result.job_id}"
    figures: list[tuple[str, Decimal, str, str]] = []
    summary = measured["summary"]
    if measured["mode"] == "sweep":
        capacity = measured["capacity"]["capacity"]
        if capacity is None:
            report["skipped"].append("no valid level met the SLO target: no capacity")
            return report
        level = next(p for p in measured["points"] if p["offered"] == capacity)
        gpus, gpu_source = _gpus_under_test(result, candidate)
        rate = capacity if measured["key"] == "rate" else level["requests_per_s"]
        if gpus is None:
            report["skipped"].append("capacity: the number of GPUs behind the endpoint is unknown")
        elif rate:
            note = (f"{reference} (measured): {measured['key']} {capacity:g} at the SLO, {rate:.6g} req/s "
                    f"÷ {gpus} ({gpu_source})")
            figures.append((FigureMetric.CAPACITY_AT_SLO, from_float(rate / gpus, 6), CapacityUnit.REQUESTS_PER_SECOND,
                            note))
    elif not summary["valid"]:
        report["skipped"].append("the run is invalid: nothing stored")
        return report
    for q, metric in (("p95", FigureMetric.P95_LATENCY_MS), ("p99", FigureMetric.P99_LATENCY_MS)):
        value = _e2e(summary, q)
        if value is None:
            report["skipped"].append(f"{q}: too few samples")
        else:
            figures.append((metric, from_float(value * 1000, 3), "", f"{reference} (measured): end-to-end {q}"))
    mean_tokens = (summary.get("output_length") or {}).get("mean")
    if mean_tokens:
        # The conversion between requests and output tokens the comparison needs for a demand counted in tokens.
        figures.append((FigureMetric.OUTPUT_TOKENS_PER_REQUEST, from_float(mean_tokens, 3), "",
                        f"{reference} (measured): mean output tokens of the requests served"))
    measured, errors = summary["counts"]["measured"], summary["counts"]["errors"]
    if measured:
        # Per request served, as phase 4 charges failures: generated × (1 + retry rate + failure rate).
        served = measured - errors
        fraction = errors / served if served else None
        if fraction is not None and fraction < 1:
            figures.append((FigureMetric.FAILURE_RATE, from_float(fraction, 8), "",
                            f"{reference} (measured): failed requests ÷ requests served = {errors} ÷ {served}"))
        else:
            report["skipped"].append("failure rate: as many requests failed as were served, or more")
    for metric, value, unit, note in figures:
        if result.rehearsal:
            note = note.replace("(measured)", "(rehearsal — not a GPU measurement)", 1)
        try:
            measured_figure_set(actor=ACTOR, result=result, candidate=candidate, metric=metric, value=value,
                                reference=note[:500], capacity_unit=unit)
        except ValidationError as error:
            report["skipped"].append(f"{metric}: {'; '.join(error.messages)}")
        except FigureKept as kept:
            report["skipped"].append(str(kept))
        else:
            report["stored"].append(str(metric))
    return report


# --- the handler --------------------------------------------------------------------------------------------------


def ingest_throughput(*, result: Result, now=None) -> dict[str, Any]:
    """The kind handler: returns the keys to add to the result's summary (`phase2`, and the candidate report)."""
    spec_data = result.spec or {}
    if spec_data.get("direct") is not None:
        return {SUMMARY_KEY: {"mode": "direct", "direct": (result.result or {}).get("direct")}}
    if result.status != ResultStatus.SUCCEEDED:
        return {SUMMARY_KEY: {"mode": "none", "problem": f"the run did not succeed ({result.status})"}}
    try:
        spec = load_spec(result)
        artifacts = _npz_artifacts(result)
        if spec_data.get("sweep"):
            measured = summarize_sweep(result, artifacts, spec, dict(spec_data["sweep"]))
        else:
            measured = summarize_run(result, artifacts, spec)
    except (RecordsMissing, TypeError, ValueError) as error:
        logger.warning("throughput result %s not summarised: %s", result.pk, error)
        return {SUMMARY_KEY: {"mode": "none", "problem": str(error)}}
    measured["phase4"] = store_on_candidate(result, measured)
    return {SUMMARY_KEY: measured}
