"""The one verdict of a benchmark result and of a job, as every page and the results API show it.

An agent's "succeeded" only says the job ran to its end; it does not say the figures mean something. A result is:

- `succeeded`: it ran and its figures stand;
- `inconclusive` (with the reason): it ran to its end but what it was asked to settle stays open — a memory probe at
  the target that timed out or was never probed, a throughput run the ingest marked invalid (the client fell behind
  its schedule) or could not summarise, a phase-3 result the ingest could not read;
- `failed` (with the error), `cancelled`, or `pending` (not ingested yet: its verdict is not known).

The job page, the candidate page and `/api/v1/benchmarks/results/` (`verdict`) all call `result_verdict`; the job's
own verdict (`job_verdict`) is that of its canonical result once it is final.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

SUCCEEDED = "succeeded"
INCONCLUSIVE = "inconclusive"
FAILED = "failed"
CANCELLED = "cancelled"
PENDING = "pending"
OUTCOMES = (SUCCEEDED, INCONCLUSIVE, FAILED, CANCELLED, PENDING)


@dataclass(frozen=True)
class Verdict:
    outcome: str
    reason: str = ""

    @property
    def is_inconclusive(self) -> bool:
        return self.outcome == INCONCLUSIVE

    @property
    def label(self) -> str:
        return str({SUCCEEDED: _("succeeded"), INCONCLUSIVE: _("inconclusive"), FAILED: _("failed"),
                    CANCELLED: _("cancelled"), PENDING: _("pending")}[self.outcome])

    def as_dict(self) -> dict[str, str]:
        return {"outcome": self.outcome, "reason": self.reason}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def error_text(error: Any) -> str:
    """An agent's error object as one line: "Type: message" (either part may be missing)."""
    error = _mapping(error)
    kind, message = str(error.get("type") or "").strip(), str(error.get("message") or "").strip()
    return ": ".join(part for part in (kind, message) if part)


def memory_fit_inconclusive(result_data: Any) -> str | None:
    """Why a memory-fit RESULT object settles nothing at its target, or None when it does.

    The agent reports `fits_at_target` false both when the target ran out of memory (a real "no") and when its probe
    timed out or never ran: only the first is an answer.
    """
    data = _mapping(result_data)
    if not data:
        return _("the agent sent no memory-fit result")
    target = _mapping(data.get("target"))
    variable = str(_mapping(data.get("largest_fitting")).get("variable") or "")
    wanted = target.get(variable) if variable else None
    probes = [probe for probe in data.get("probes") or [] if isinstance(probe, Mapping)]
    at_target = next((probe for probe in probes if wanted is not None and probe.get("n") == wanted), None)
    if at_target is None:
        stopped = data.get("search_stopped")
        return (_("the target (%(variable)s = %(value)s) was never probed") % {"variable": variable or "?",
                                                                                "value": wanted}
                + (f" ({stopped})" if stopped else ""))
    outcome = at_target.get("outcome")
    if outcome == "timeout":
        wall = at_target.get("wall_s")
        return _("the probe at the target (%(variable)s = %(value)s) timed out%(after)s: whether it fits is "
                 "unknown") % {"variable": variable, "value": wanted,
                               "after": (" " + _("after %(seconds)s s") % {"seconds": f"{float(wall):.3g}"}
                                         if isinstance(wall, (int, float)) else "")}
    if outcome not in ("ok", "oom"):
        return _("the probe at the target (%(variable)s = %(value)s) ended %(outcome)s, neither fitting nor out of "
                 "memory") % {"variable": variable, "value": wanted, "outcome": outcome}
    return None


def _summary_inconclusive(kind: str, summary: Mapping[str, Any]) -> str | None:
    if kind == "throughput":
        phase2 = _mapping(summary.get("phase2"))
        if not phase2:
            return None
        if phase2.get("mode") == "none":
            return _("the run could not be summarised: %(problem)s") % {"problem": phase2.get("problem") or "?"}
        if phase2.get("mode") in ("run", "sweep") and not phase2.get("valid", True):
            reasons = [str(reason) for reason in phase2.get("invalid_reasons") or []]
            return _("the run is invalid (the load generator did not keep its schedule): %(reasons)s") % {
                "reasons": "; ".join(reasons) or "?"}
    phase3 = _mapping(summary.get("phase3"))
    if phase3.get("problem"):
        return _("the run could not be summarised: %(problem)s") % {"problem": phase3["problem"]}
    return None


def result_verdict(result) -> Verdict:
    """The verdict of one stored result (a `Result` row)."""
    status = result.status
    if status == "failed":
        return Verdict(FAILED, error_text(result.error) or _("the agent reported a failure without a message"))
    if status in ("cancelled", "handed_back"):
        return Verdict(CANCELLED if status == "cancelled" else FAILED,
                       error_text(result.error) or (_("handed back") if status == "handed_back" else ""))
    kind = result.job.kind
    if kind == "memory_fit":
        reason = memory_fit_inconclusive(result.result)
        if reason:
            return Verdict(INCONCLUSIVE, reason)
    if result.ingested_at is None and kind != "memory_fit":
        return Verdict(PENDING, _("waiting for the ingest"))
    reason = _summary_inconclusive(kind, _mapping(result.summary))
    if reason:
        return Verdict(INCONCLUSIVE, reason)
    return Verdict(SUCCEEDED)


def job_verdict(job) -> Verdict:
    """The job's verdict: pending until it is final, then that of its canonical result (or its own failure)."""
    if not job.is_final:
        return Verdict(PENDING)
    if job.status == "cancelled":
        return Verdict(CANCELLED, job.cancel_reason)
    result = job.canonical_result()
    if job.status == "failed":
        return Verdict(FAILED, job.failure_reason or (error_text(result.error) if result is not None else ""))
    if result is None:
        return Verdict(SUCCEEDED)
    return result_verdict(result)
