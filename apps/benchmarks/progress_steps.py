"""The benchmarks' steps of a workload's progress strip (apps/workloads/progress.py, registered in
BenchmarksConfig.ready): memory fit, throughput and resilience, each per candidate of the workload version.

A candidate counts as measured for a step when a canonical result of that step's kind has the verdict "succeeded"
(apps/benchmarks/verdicts.py) and is not a rehearsal (Result.rehearsal: a CPU or the built-in mock serving stack is
never a GPU measurement). A step whose only results are rehearsals says "rehearsal only", never "done".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.benchmarks import resilience
from apps.benchmarks.memory_fit import MEMORY_FIT_KIND
from apps.benchmarks.models import FINAL_JOB_STATUSES, Job, Result
from apps.benchmarks.throughput import KIND as THROUGHPUT_KIND
from apps.benchmarks.verdicts import SUCCEEDED, result_verdict
from apps.quotes.kinds import CandidateKind
from apps.quotes.progress_steps import candidates_of
from apps.workloads import progress

MEASURED, REHEARSAL, RUNNING, NONE = "measured", "rehearsal", "running", "none"


@dataclass(frozen=True)
class StepKind:
    key: str
    kinds: tuple[str, ...]
    fleet_only: bool  # a model/API route has no GPU of its own to probe

    def label(self) -> str:
        return {"memory_fit": _("Memory fit"), "throughput": _("Throughput"),
                "resilience": _("Resilience")}[self.key]

    def missing(self, count: int) -> str:
        if self.key == "memory_fit":
            return ngettext("%(count)d candidate has no memory-fit result.",
                            "%(count)d candidates have no memory-fit result.", count) % {"count": count}
        if self.key == "throughput":
            return ngettext("%(count)d candidate has no throughput result.",
                            "%(count)d candidates have no throughput result.", count) % {"count": count}
        return ngettext("%(count)d candidate has no resilience result.",
                        "%(count)d candidates have no resilience result.", count) % {"count": count}


MEMORY_FIT_STEP = StepKind("memory_fit", (MEMORY_FIT_KIND,), fleet_only=True)
THROUGHPUT_STEP = StepKind("throughput", (THROUGHPUT_KIND,), fleet_only=False)
RESILIENCE_STEP = StepKind("resilience", tuple(resilience.KINDS), fleet_only=True)


def _candidate_of(job: Job) -> int | None:
    """The candidate a job measures: its own link, else the memory-fit spec's origin."""
    if job.candidate_id is not None:
        return job.candidate_id
    origin = (job.spec or {}).get("origin") or {}
    candidate_id = origin.get("candidate_id") if isinstance(origin, dict) else None
    return candidate_id if isinstance(candidate_id, int) else None


STEPS = (MEMORY_FIT_STEP, THROUGHPUT_STEP, RESILIENCE_STEP)
STEP_OF_KIND = {kind: step for step in STEPS for kind in step.kinds}


def candidate_states(candidates, team_id, known: dict | None = None) -> dict[str, dict[int, str]]:
    """step key → candidate id → MEASURED, REHEARSAL (only rehearsals succeeded), RUNNING (a job not final yet) or
    NONE, for the three steps at once (two queries; kept in `known` for the other steps of the strip)."""
    known = {} if known is None else known
    if "benchmark_states" in known:
        return known["benchmark_states"]
    ids = [candidate.pk for candidate in candidates]
    states = {step.key: dict.fromkeys(ids, NONE) for step in STEPS}
    known["benchmark_states"] = states
    if not ids:
        return states
    jobs = Job.objects.filter(Q(candidate_id__in=ids) | Q(kind=MEMORY_FIT_KIND, spec__origin__candidate_id__in=ids),
                              team_id=team_id, kind__in=list(STEP_OF_KIND))
    for job in jobs.exclude(status__in=FINAL_JOB_STATUSES).only("pk", "kind", "candidate_id", "spec"):
        found = states[STEP_OF_KIND[job.kind].key]
        candidate_id = _candidate_of(job)
        if candidate_id in found and found[candidate_id] == NONE:
            found[candidate_id] = RUNNING
    for result in Result.objects.filter(canonical=True, job__in=jobs).select_related("job"):
        found = states[STEP_OF_KIND[result.job.kind].key]
        candidate_id = _candidate_of(result.job)
        if candidate_id not in found or result_verdict(result).outcome != SUCCEEDED:
            continue
        if not result.rehearsal:
            found[candidate_id] = MEASURED
        elif found[candidate_id] != MEASURED:
            found[candidate_id] = REHEARSAL
    return states


def measurement_step(step: StepKind, summary, known: dict) -> progress.Step:
    label = step.label()
    candidates = candidates_of(summary, known)
    if not candidates:
        return progress.Step(step.key, label, progress.MISSING, _("No candidate to measure yet."))
    applicable = [candidate for candidate in candidates
                  if not (step.fleet_only and candidate.kind == CandidateKind.API.value)]
    if not applicable:
        return progress.Step(step.key, label, progress.DONE,
                             _("Model/API routes only: no GPU of your own to measure."))
    every = candidate_states(candidates, summary.team_id, known)[step.key]
    states = {candidate.pk: every[candidate.pk] for candidate in applicable}
    lacking = [candidate for candidate in applicable if states[candidate.pk] != MEASURED]
    counts = {state: sum(1 for value in states.values() if value == state)
              for state in (MEASURED, REHEARSAL, RUNNING, NONE)}
    url = (lacking[0] if lacking else applicable[0]).get_absolute_url()
    if not lacking:
        return progress.Step(step.key, label, progress.DONE,
                             ngettext("%(count)d candidate measured on its GPU.",
                                      "%(count)d candidates measured on their GPUs.", counts[MEASURED])
                             % {"count": counts[MEASURED]}, url)
    parts = [step.missing(len(lacking))]
    if counts[REHEARSAL]:
        parts.append(ngettext("%(count)d has a rehearsal only (a CPU or the mock stack), not a GPU measurement.",
                              "%(count)d have a rehearsal only (a CPU or the mock stack), not a GPU measurement.",
                              counts[REHEARSAL]) % {"count": counts[REHEARSAL]})
    if counts[RUNNING]:
        parts.append(ngettext("%(count)d is being measured.", "%(count)d are being measured.", counts[RUNNING])
                     % {"count": counts[RUNNING]})
    if counts[MEASURED] or counts[RUNNING]:
        state = progress.IN_PROGRESS
    elif counts[REHEARSAL]:
        state = progress.REHEARSAL_ONLY
    else:
        state = progress.MISSING
    return progress.Step(step.key, label, state, " ".join(parts), url)


def memory_fit_step(user, summary, known: dict) -> progress.Step:
    return measurement_step(MEMORY_FIT_STEP, summary, known)


def throughput_step(user, summary, known: dict) -> progress.Step:
    return measurement_step(THROUGHPUT_STEP, summary, known)


def resilience_step(user, summary, known: dict) -> progress.Step:
    return measurement_step(RESILIENCE_STEP, summary, known)


def register() -> None:
    progress.register_step(progress.MEMORY_FIT, memory_fit_step)
    progress.register_step(progress.THROUGHPUT, throughput_step)
    progress.register_step(progress.RESILIENCE, resilience_step)
