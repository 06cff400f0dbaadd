"""Phase-3 ingest: `operations`, `acceptance`, `checkpoint` and `allreduce` results → the stored summary, the
candidate's measured phase-4 inputs, and the acceptance flags of the candidate and its quote.

Called by `services.result_ingest` (kind → handler, inside its transaction, exactly once per result). The figures
are checked and recomputed by the pure module `phase3_figures` (formulas in docs/metrics.md, "Phase 3 on the
server"); a malformed result is summarised with a `problem` and nothing of it reaches the candidate.

The candidate is the job's (`Job.candidate`, as for phase 2); only the job's canonical, succeeded result writes
phase-4 inputs, with source "measured" and reference `job:N`, each linked to this result
(apps/benchmarks/measurements.py): when the run was on the candidate's node or its quoted GPU model, or as a rehearsal
(CPU, built-in mock stack), which is labelled so and never counts as measured.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import zlib
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from apps.benchmarks import resilience_figures as figures
from apps.benchmarks.measurements import (
    FigureKept,
    counts_as_measured,
    measured_figure_set,
    measurement_of,
    measures_candidate,
)
from apps.benchmarks.models import Result, ResultStatus
from apps.benchmarks.storage import artifact_storage
from apps.benchmarks.throughput import candidate_of
from apps.evidence.models import CandidateFigure, FigureMetric

logger = logging.getLogger(__name__)

ACTOR = "ingest_result"
SUMMARY_KEY = "phase3"
KINDS = ("operations", "acceptance", "checkpoint", "allreduce")
REQUEST_RECORDS = re.compile(r"^requests-(\d+)-[a-z_]+\.jsonl\.gz$")
JOB_REFERENCE = re.compile(r"^job:(\d+) ")
#: the longest request-records file read back (uncompressed)
MAX_RECORDS_BYTES = 256 * 2**20


def _metric(name: str) -> str:

    return {
        "retry_rate": FigureMetric.RETRY_RATE,
        "failed_request_fraction": FigureMetric.FAILURE_RATE,
        "recovery_hours": FigureMetric.RESTART_HOURS,
        "cold_start_seconds": FigureMetric.COLD_START_SECONDS,
        "checkpoint_write_hours": FigureMetric.CHECKPOINT_WRITE_HOURS,
        "lost_work_gpu_hours": FigureMetric.LOST_WORK_GPU_HOURS,
        "busbw_gbps": FigureMetric.INTERCONNECT_BUS_BANDWIDTH_GBPS,
    }[name]


def metric_label(name: str) -> str:
    """The phase-4 input's own label (translated) for a figure's name; the name itself when it has none."""

    try:
        return str(FigureMetric(_metric(name)).label)
    except (KeyError, ValueError):
        return name


# --- the candidate's phase-4 inputs ------------------------------------------------------------------------------


def store_on_candidate(result: Result, kind: str, phase4: dict[str, Any], *, caveat: str = "") -> dict[str, Any]:
    """Write the computed figures on the candidate's phase-4 inputs; returns what was stored and what was not."""

    candidate = candidate_of(result)
    report: dict[str, Any] = {"candidate_id": candidate.pk if candidate else None, "stored": [],
                              "skipped": list(phase4["skipped"])}
    if candidate is None:
        report["skipped"].append("the job measures no candidate")
        return report
    if not result.canonical or result.status != ResultStatus.SUCCEEDED:
        report["skipped"].append("not the job's canonical, succeeded result")
        return report
    report["rehearsal"] = result.rehearsal
    if not result.rehearsal:
        measures, why_not = measures_candidate(result, candidate)
        if not measures:
            report["skipped"].append(why_not)
            return report
    kind_note = "rehearsal — not a GPU measurement" if result.rehearsal else "measured"
    for name, (value, note) in phase4["figures"].items():
        metric = _metric(name)
        steady = _steady_state_failure_rate(candidate) if name == "failed_request_fraction" else None
        if steady is not None:
            report["skipped"].append(f"failure rate: the steady-state figure measured by phase 2 ({steady}) stands; "
                                     "this one was measured under induced failures")
            continue
        reference = f"job:{result.job_id} ({kind_note}, phase 3 {kind}): {note}{caveat}"
        try:
            measured_figure_set(actor=ACTOR, result=result, candidate=candidate, metric=metric, value=Decimal(value),
                                reference=reference)
        except ValidationError as error:
            report["skipped"].append(f"{metric}: {'; '.join(error.messages)}")
        except FigureKept as kept:
            report["skipped"].append(str(kept))
        else:
            report["stored"].append(str(metric))
    return report


def _steady_state_failure_rate(candidate) -> str | None:
    """`job:N` when the candidate's failure rate was measured by a phase-2 (`throughput`) job, else None.

    Phase 2 measures failures at a steady load, phase 3 under failures it induces on purpose; phase 4 reads the failure
    rate as the steady waste of every hour, so a phase-2 figure is never replaced by a phase-3 one (whatever order the
    results are ingested in); phase 3's stands only where no steady-state figure exists."""
    current = (CandidateFigure.objects.select_related("measurement__result__job")
               .filter(candidate=candidate, metric=FigureMetric.FAILURE_RATE).first())
    if current is None or not counts_as_measured(current):
        return None
    job = measurement_of(current).result.job
    return f"job:{job.pk}" if job.kind == "throughput" else None


def _plain(phase4: dict[str, Any]) -> dict[str, Any]:
    """The computed figures as JSON (exact decimals as text)."""
    return {name: {"value": str(value), "note": note} for name, (value, note) in phase4["figures"].items()}


# --- operations ---------------------------------------------------------------------------------------------------


def request_records(result: Result) -> dict[int, list[Any]]:
    """Each scenario's uploaded request records (position → lines), read back from the artifacts still stored."""
    found: dict[int, list[Any]] = {}
    for artifact in result.artifacts.all():
        match = REQUEST_RECORDS.match(artifact.name)
        if match is None or artifact.purged_at is not None or not artifact.storage_name:
            continue
        try:
            with artifact_storage().open(artifact.storage_name, "rb") as handle, \
                    gzip.GzipFile(fileobj=handle) as unpacked:
                data = unpacked.read(MAX_RECORDS_BYTES + 1)  # never more than the limit in memory
            if len(data) > MAX_RECORDS_BYTES:
                raise figures.ShapeError(f"{artifact.name}: more than {MAX_RECORDS_BYTES} bytes once uncompressed")
            lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as error:
            raise figures.ShapeError(f"{artifact.name}: not readable request records ({error})") from None
        found[int(match.group(1)) - 1] = lines
    return found


def _timeline(scenario: dict[str, Any]) -> dict[str, Any] | None:
    """The per-second timeline the chart needs, from the agent's result (compact: no per-kind error split)."""
    line = scenario.get("timeline")
    if not isinstance(line, dict) or not isinstance(line.get("rows"), list):
        return None
    rows = []
    for row in line["rows"]:
        if not isinstance(row, dict):
            return None
        errors = row.get("errors") if isinstance(row.get("errors"), dict) else {}
        rows.append({"t": row.get("t"), "sent": row.get("sent"), "retries": row.get("retries"),
                     "succeeded": row.get("succeeded"),
                     "errors": sum(v for v in errors.values() if isinstance(v, int) and not isinstance(v, bool)),
                     "p99_s": row.get("e2e_p99_s"), "p50_s": row.get("e2e_p50_s")})
    markers = line.get("markers") if isinstance(line.get("markers"), dict) else {}
    return {"rows": rows, "markers": {key: value for key, value in markers.items()
                                      if isinstance(value, (int, float)) and not isinstance(value, bool)}}


def summarize_operations(result: Result) -> dict[str, Any]:
    data = result.result
    checked = figures.operations_figures(data, request_records(result))
    agent_scenarios = data["scenarios"]
    scenarios = []
    for position, scenario in enumerate(checked["scenarios"]):
        source = agent_scenarios[position]
        scenarios.append({**scenario, "errors": source.get("errors") if isinstance(source.get("errors"), dict)
                          else {}, "timeline": _timeline(source),
                          "ready_within": (source.get("ready_check") or {}).get("within")
                          if isinstance(source.get("ready_check"), dict) else None})
    cold = data.get("cold_start") if isinstance(data.get("cold_start"), dict) else None
    observability = data.get("observability") if isinstance(data.get("observability"), dict) else {}
    metrics_before = observability.get("metrics_before") if isinstance(observability.get("metrics_before"),
                                                                       dict) else None
    return {
        "kind": "operations", "target": data.get("target"), "scenarios": scenarios, "totals": checked["totals"],
        "cold_start": {"runs": checked["cold_start_runs"],
                       "time_to_healthy_s": (cold or {}).get("time_to_healthy_s"),
                       "time_to_first_token_s": (cold or {}).get("time_to_first_token_s")} if cold else None,
        "proxy_model": data.get("proxy_model") if isinstance(data.get("proxy_model"), dict) else None,
        # None: the stack declares no metrics endpoint; else whether it answered and its text parsed.
        "observability": {"metrics_ok": bool(metrics_before.get("answers") and metrics_before.get("parses"))
                          if metrics_before and metrics_before.get("declared") else None,
                          "log_lines_captured": observability.get("log_lines_captured")},
        "figures": _plain(checked["phase4"]), "_phase4": checked["phase4"],
    }


def summarize_checkpoint(result: Result) -> dict[str, Any]:
    checked = figures.checkpoint_figures(result.result)
    return {"kind": "checkpoint", **{key: value for key, value in checked.items() if key != "phase4"},
            "figures": _plain(checked["phase4"]), "_phase4": checked["phase4"]}


def summarize_allreduce(result: Result) -> dict[str, Any]:
    checked = figures.allreduce_figures(result.result)
    return {"kind": "allreduce", **{key: value for key, value in checked.items() if key != "phase4"},
            "figures": _plain(checked["phase4"]), "_phase4": checked["phase4"]}


def summarize_acceptance(result: Result) -> dict[str, Any]:
    return {"kind": "acceptance", **figures.acceptance_review(result.result)}


SUMMARIZERS = {"operations": summarize_operations, "checkpoint": summarize_checkpoint,
               "allreduce": summarize_allreduce, "acceptance": summarize_acceptance}
CAVEATS = {"operations": " — under induced failures, not steady state"}


def ingest(*, result: Result, now=None) -> dict[str, Any]:
    """The kind handler of the four phase-3 kinds: the `phase3` summary, and the candidate report."""
    kind = result.job.kind
    if result.status != ResultStatus.SUCCEEDED:
        return {SUMMARY_KEY: {"kind": kind, "problem": f"the run did not succeed ({result.status})"}}
    try:
        summary = SUMMARIZERS[kind](result)
    except figures.ShapeError as error:
        logger.warning("%s result %s not summarised: %s", kind, result.pk, error)
        return {SUMMARY_KEY: {"kind": kind, "problem": str(error)}}
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as error:
        # A shape the checks did not foresee: summarised as a problem, so one bad result never blocks the ingest
        # queue (the re-drive would retry it for ever). Logged with its traceback: the checks should name it.
        logger.exception("%s result %s not summarised", kind, result.pk)
        return {SUMMARY_KEY: {"kind": kind, "problem": f"unexpected result shape ({type(error).__name__}: {error})"}}
    phase4 = summary.pop("_phase4", None)
    group = result.job.group if result.job.group_id else None
    if phase4 is not None and group is not None:
        summary["phase4"] = store_group_figures(result, kind, group)
    elif phase4 is not None:
        summary["phase4"] = store_on_candidate(result, kind, phase4, caveat=CAVEATS.get(kind, ""))
    else:
        candidate = candidate_of(result)
        summary["phase4"] = {"candidate_id": candidate.pk if candidate else None, "stored": [], "skipped": []}
    return {SUMMARY_KEY: summary}



def store_group_figures(result: Result, kind: str, group) -> dict[str, Any]:
    """A job group's figures count once every rank of one generation succeeded, and then from rank 0's result
    (docs/agent-protocol.md §8). The last rank to finish is ingested after the group succeeded, so its ingest stores
    them; a rank ingested earlier stores nothing."""
    from apps.benchmarks.models import JobGroupStatus

    group.refresh_from_db()
    if group.status != JobGroupStatus.SUCCEEDED:
        candidate = candidate_of(result)
        return {"candidate_id": candidate.pk if candidate else None, "stored": [],
                "skipped": [f"job group {group.public_id} has not succeeded (yet): its figures are stored once every "
                            "rank of one generation succeeded, from rank 0's result"]}
    rank_zero = (Result.objects.select_related("job", "job__group").filter(
        job__group=group, job__group_rank=0, canonical=True, status=ResultStatus.SUCCEEDED).first())
    if rank_zero is None:
        return {"candidate_id": None, "stored": [], "skipped": [f"job group {group.public_id}: no result of rank 0"]}
    phase4 = SUMMARIZERS[kind](rank_zero)["_phase4"]
    report = store_on_candidate(rank_zero, kind, phase4, caveat=CAVEATS.get(kind, ""))
    report["from_result"] = rank_zero.pk
    return report


# --- reading back (candidate and quote pages) -----------------------------------------------------------------------


def results_for(*, job=None, candidate=None) -> QuerySet[Result]:
    """Ingested canonical phase-3 results of one job, or of every job measuring the candidate (newest first)."""
    results = Result.objects.filter(canonical=True, job__kind__in=KINDS, ingested_at__isnull=False)
    if job is not None:
        results = results.filter(job=job)
    elif candidate is not None:
        results = results.filter(job__candidate=candidate, job__team_id=candidate.team_id)
    else:
        return results.none()
    return results.select_related("job").order_by("-recorded_at", "-pk")


def acceptance_flags(candidates) -> dict[int, dict[str, Any]]:
    """candidate id → the latest acceptance result's flags, verdict and job (only candidates with flags)."""
    flagged: dict[int, dict[str, Any]] = {}
    ids = [candidate.pk for candidate in candidates]
    results = (Result.objects.filter(canonical=True, job__kind="acceptance", ingested_at__isnull=False,
                                     job__candidate_id__in=ids)
               .select_related("job").order_by("-recorded_at", "-pk"))
    seen: set[int] = set()
    for result in results:
        candidate_id = result.job.candidate_id
        if candidate_id in seen:
            continue
        seen.add(candidate_id)
        summary = (result.summary or {}).get(SUMMARY_KEY) if isinstance(result.summary, dict) else None
        if isinstance(summary, dict) and summary.get("flags"):
            flagged[candidate_id] = {"flags": summary["flags"], "verdict": summary.get("verdict"),
                                     "job": result.job, "label": summary.get("label")}
    return flagged
