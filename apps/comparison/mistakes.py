"""The guide's six common mistakes of GPU selection, and its closing rule (compare a commitment with a model/API route
before signing it), as checks over plain data (no Django).

The checks read evidence, never typed claims: interconnect needs a measured all-reduce bus bandwidth (or a waiver a
named person recorded), quality acceptance a measured or sourced rate, platform ownership an owner on each of the
guide's ten operations lines.

Each mistake is a `Rule`: a stable code, a check function `Situation -> tuple[Finding, ...]`, and its title,
explanation and finding messages, kept as data in `RULES`. The texts are the English, marked with `gettext_noop`; the
web layer translates them with `gettext` in the active language (apps/decisions/locale holds the French and Indonesian).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from apps.common.decimals import significant
from apps.common.i18n import gettext_noop
from apps.comparison.cost_model import Row
from apps.quotes.kinds import CandidateKind

SELF_HOSTED_KINDS = frozenset({CandidateKind.GPU, CandidateKind.PURCHASE})

#: The rules a named person may waive for one candidate, with a recorded reason (comparison.models.MistakeWaiver).
WAIVABLE_RULES = ("interconnect_ignored",)


@dataclass(frozen=True)
class WorkloadFacts:
    """What the workload summary states (None: not stated).

    `has_acceptance_criteria`: a unit of success and an acceptance rate are stated; `quality_acceptance_sourced`:
    that rate cites where it comes from (a bare number is a claim, not a criterion).
    """

    p95_context_tokens: int | None = None
    peak_concurrency: int | None = None
    has_acceptance_criteria: bool = False
    model_expected_life_months: Decimal | None = None
    quality_acceptance_rate: Decimal | None = None
    quality_acceptance_sourced: bool = False


@dataclass(frozen=True)
class CandidateFacts:
    """What is known of one candidate: its phase-4 figures and the evidence behind them.

    `tested_context_tokens` / `tested_concurrency`: the largest context and concurrency phase 1 ran (None: not
    tested); `gpus_per_job` / `nodes_per_job`: how many GPUs and nodes one replica or training job spans;
    `commitment_months`: the reservation term or the purchase's amortisation (None: no commitment);
    `is_commitment`: a reservation or a purchase (whether or not its term is known);
    `measured_bus_bandwidth_gbps`: the all-reduce bus bandwidth a benchmark measured (None: not measured; what the
    quote says of its interconnect does not count); `waived_rules`: the codes of the rules a named person waived for
    this candidate; `has_sourced_acceptance`: a quality acceptance rate measured on it or quoted with a reference;
    `unowned_operations`: the guide's operations lines (drivers, CUDA…) that name no owner.
    """

    id: str
    label: str
    kind: str
    hourly_price: Decimal | None = None
    effective_unit_cost: Decimal | None = None
    platform_labor: Decimal | None = None
    has_benchmark_evidence: bool = False
    tested_context_tokens: int | None = None
    tested_concurrency: int | None = None
    gpus_per_job: int = 1
    nodes_per_job: int = 1
    measured_bus_bandwidth_gbps: Decimal | None = None
    waived_rules: tuple[str, ...] = ()
    commitment_months: Decimal | None = None
    is_commitment: bool = False
    has_sourced_acceptance: bool = False
    unowned_operations: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: Row, **evidence: Any) -> CandidateFacts:
        """Facts from a normalised row; the evidence (benchmarks, phase 1, interconnect, commitment) is passed in."""
        return cls(id=row.candidate_id, label=row.label, kind=str(row.kind), hourly_price=row.hourly_price,
                   effective_unit_cost=row.effective_unit_cost, platform_labor=row.platform_labor, **evidence)


@dataclass(frozen=True)
class Situation:
    """The workload, its candidates and, when a decision record passes it, the chosen candidate's id."""

    workload: WorkloadFacts
    candidates: tuple[CandidateFacts, ...]
    chosen_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "candidates", tuple(self.candidates))
        ids = [candidate.id for candidate in self.candidates]
        if len(set(ids)) != len(ids):
            raise ValueError("two candidates share an id")
        if self.chosen_id is not None and self.chosen_id not in ids:
            raise ValueError(f"the chosen candidate {self.chosen_id!r} is not among the candidates")

    @property
    def chosen(self) -> CandidateFacts | None:
        return next((c for c in self.candidates if c.id == self.chosen_id), None)


@dataclass(frozen=True)
class Finding:
    """One mistake found: the rule, which variant (`reason`), the candidate concerned (None: the whole comparison).

    `severity` is "warning" when it concerns a choice or a candidate, "note" when it informs a comparison
    that has no choice yet.
    """

    code: str
    reason: str
    candidate_id: str | None
    params: Mapping[str, Any] = field(default_factory=dict)
    severity: str = "warning"

    @property
    def template(self) -> str:
        """The English sentence of this finding, with `%(name)s` placeholders for its parameters."""
        return RULES_BY_CODE[self.code].reasons[self.reason]

    def message(self, translate: Callable[[str], str] = gettext_noop) -> str:
        """The finding as a sentence. `translate` turns the English template into the reader's language (the web
        layer passes Django's `gettext`); the parameters are filled in afterwards."""
        return translate(self.template) % {name: _shown(value) for name, value in self.params.items()}


@dataclass(frozen=True)
class Rule:
    code: str
    number: int
    title: str
    explanation: str
    reasons: Mapping[str, str]  # reason code → English message template
    check: Callable[[Situation], tuple[Finding, ...]]


def _shown(value: Any) -> str:
    """A parameter as shown in a message: Decimals keep up to 6 significant digits (more are rounded to 6)."""
    if isinstance(value, Decimal):
        if len(value.as_tuple().digits) > 6:
            value = significant(value, 6)
        return format(value, "f")
    if isinstance(value, list | tuple):
        return ", ".join(_shown(item) for item in value)
    return str(value)


# --- the checks ------------------------------------------------------------------------------------------------


def _leaders(candidates: Iterable[CandidateFacts], attribute: str) -> list[CandidateFacts]:
    """The candidates tied for the lowest value of `attribute`, ignoring those without one."""
    known = [c for c in candidates if getattr(c, attribute) is not None]
    if not known:
        return []
    lowest = min(getattr(c, attribute) for c in known)
    return [c for c in known if getattr(c, attribute) == lowest]


def check_chose_by_hourly_rate(situation: Situation) -> tuple[Finding, ...]:
    code = "chose_by_hourly_rate"
    hour_leaders = _leaders(situation.candidates, "hourly_price")
    output_leaders = _leaders(situation.candidates, "effective_unit_cost")
    chosen = situation.chosen
    if chosen is None:
        if hour_leaders and output_leaders and not {c.id for c in hour_leaders} & {c.id for c in output_leaders}:
            return (Finding(code, "hour_and_output_leaders_differ", None, {
                "hour_leaders": [c.label for c in hour_leaders],
                "output_leaders": [c.label for c in output_leaders],
            }, severity="note"),)
        return ()
    findings = []
    if (chosen in hour_leaders and chosen.effective_unit_cost is not None and output_leaders
            and chosen not in output_leaders):
        cheapest = output_leaders[0]
        findings.append(Finding(code, "cheapest_hour_not_cheapest_output", chosen.id, {
            "chosen": chosen.label, "chosen_hourly": chosen.hourly_price,
            "chosen_unit_cost": chosen.effective_unit_cost,
            "cheapest": [c.label for c in output_leaders], "cheapest_unit_cost": cheapest.effective_unit_cost,
        }))
    if not chosen.has_benchmark_evidence:
        findings.append(Finding(code, "chosen_without_benchmark", chosen.id, {"chosen": chosen.label}))
    return tuple(findings)


# (dimension, the candidate's phase-1 attribute, the workload's target attribute)
_MEMORY_DIMENSIONS = (
    ("context", "tested_context_tokens", "p95_context_tokens"),
    ("concurrency", "tested_concurrency", "peak_concurrency"),
)


def check_memory_fit_yes_no(situation: Situation) -> tuple[Finding, ...]:
    code = "memory_fit_yes_no"
    workload = situation.workload
    stated = [dimension for dimension in _MEMORY_DIMENSIONS if getattr(workload, dimension[2]) is not None]
    findings = []
    for candidate in situation.candidates:
        if candidate.kind not in SELF_HOSTED_KINDS or not stated:
            continue
        if all(getattr(candidate, tested) is None for _, tested, _ in _MEMORY_DIMENSIONS):
            findings.append(Finding(code, "no_phase1_evidence", candidate.id, {"candidate": candidate.label}))
            continue
        for dimension, tested_attribute, target_attribute in stated:
            tested = getattr(candidate, tested_attribute)
            target = getattr(workload, target_attribute)
            if tested is None:
                findings.append(Finding(code, f"{dimension}_untested", candidate.id,
                                        {"candidate": candidate.label, "target": target}))
            elif tested < target:
                findings.append(Finding(code, f"{dimension}_below_target", candidate.id,
                                        {"candidate": candidate.label, "tested": tested, "target": target}))
    return tuple(findings)


def check_interconnect_ignored(situation: Situation) -> tuple[Finding, ...]:
    code = "interconnect_ignored"
    findings = []
    for candidate in situation.candidates:
        spans_nodes = candidate.nodes_per_job > 1
        if candidate.kind not in SELF_HOSTED_KINDS or not (spans_nodes or candidate.gpus_per_job > 1):
            continue
        if candidate.measured_bus_bandwidth_gbps is not None or code in candidate.waived_rules:
            continue
        findings.append(Finding(code, "multi_node" if spans_nodes else "multi_gpu", candidate.id, {
            "candidate": candidate.label, "gpus": candidate.gpus_per_job, "nodes": candidate.nodes_per_job,
        }))
    return tuple(findings)


def check_generated_not_accepted(situation: Situation) -> tuple[Finding, ...]:
    """A sourced workload acceptance rate covers every candidate; without one, each candidate needs its own measured
    or sourced rate. When none has one, one finding for the comparison says what the workload lacks."""
    code = "generated_not_accepted"
    workload = situation.workload
    if workload.has_acceptance_criteria and workload.quality_acceptance_sourced:
        return ()
    uncovered = [candidate for candidate in situation.candidates if not candidate.has_sourced_acceptance]
    if situation.candidates and not uncovered:
        return ()
    if len(uncovered) < len(situation.candidates):
        return tuple(Finding(code, "candidate_acceptance_unsourced", candidate.id, {"candidate": candidate.label})
                     for candidate in uncovered)
    if workload.quality_acceptance_rate is not None and not workload.quality_acceptance_sourced:
        return (Finding(code, "acceptance_unsourced", None, {"rate": workload.quality_acceptance_rate}),)
    return (Finding(code, "no_acceptance_criteria", None),)


def check_no_platform_ownership(situation: Situation) -> tuple[Finding, ...]:
    code = "no_platform_ownership"
    findings = []
    for candidate in situation.candidates:
        if candidate.kind not in SELF_HOSTED_KINDS:
            continue
        if not candidate.platform_labor:
            findings.append(Finding(code, "zero_platform_labor", candidate.id, {"candidate": candidate.label}))
        if candidate.unowned_operations:
            findings.append(Finding(code, "unowned_operations", candidate.id, {
                "candidate": candidate.label, "count": len(candidate.unowned_operations),
                "lines": list(candidate.unowned_operations),
            }))
    return tuple(findings)


def check_bought_for_todays_model(situation: Situation) -> tuple[Finding, ...]:
    life = situation.workload.model_expected_life_months
    if life is None:
        return ()
    return tuple(
        Finding("bought_for_todays_model", "commitment_outlives_model", candidate.id,
                {"candidate": candidate.label, "commitment": candidate.commitment_months, "life": life})
        for candidate in situation.candidates
        if candidate.commitment_months is not None and candidate.commitment_months > life
    )


def check_committed_without_api_comparison(situation: Situation) -> tuple[Finding, ...]:
    """A reservation or a purchase (the chosen one, or each one without a choice) in a comparison that costs no
    model/API route: the guide compares with the model/API options before signing a commitment."""
    code = "committed_without_api_comparison"
    if any(candidate.kind == CandidateKind.API and candidate.effective_unit_cost is not None
           for candidate in situation.candidates):
        return ()
    chosen = situation.chosen
    if chosen is not None:
        concerned, severity = ([chosen] if chosen.is_commitment else []), "warning"
    else:
        concerned, severity = [c for c in situation.candidates if c.is_commitment], "note"
    return tuple(
        Finding(code, "purchase_without_api" if candidate.kind == CandidateKind.PURCHASE else "reserve_without_api",
                candidate.id, {"candidate": candidate.label}, severity=severity)
        for candidate in concerned
    )


# --- the rules, with their texts -------------------------------------------------------------------------------

RULES: tuple[Rule, ...] = (
    Rule(
        code="chose_by_hourly_rate",
        number=1,
        title=gettext_noop("Choosing by hourly rate"),
        explanation=gettext_noop(
            "Hourly rates ignore utilisation, retries, downtime, storage, networking, support and engineer time. Use "
            "the cost per completed workload instead."
        ),
        reasons={
            "cheapest_hour_not_cheapest_output": gettext_noop(
                "%(chosen)s has the lowest hourly price (%(chosen_hourly)s) but costs %(chosen_unit_cost)s per "
                "accepted output; %(cheapest)s delivers one for %(cheapest_unit_cost)s."
            ),
            "chosen_without_benchmark": gettext_noop(
                "%(chosen)s was chosen without benchmark evidence: its cost per accepted output rests on no "
                "measurement."
            ),
            "hour_and_output_leaders_differ": gettext_noop(
                "The lowest hourly price (%(hour_leaders)s) and the lowest cost per accepted output "
                "(%(output_leaders)s) belong to different candidates."
            ),
        },
        check=check_chose_by_hourly_rate,
    ),
    Rule(
        code="memory_fit_yes_no",
        number=2,
        title=gettext_noop("Treating memory fit as a yes/no question"),
        explanation=gettext_noop(
            "Memory fit at one prompt length or batch size does not prove production fit. Long context, high "
            "concurrency, model changes and serving-framework overhead can change the answer."
        ),
        reasons={
            "no_phase1_evidence": gettext_noop(
                "%(candidate)s has no phase-1 memory-fit evidence at the workload's p95 context or peak concurrency."
            ),
            "context_untested": gettext_noop(
                "%(candidate)s: phase 1 did not test the context length (the workload's p95 is %(target)s tokens)."
            ),
            "context_below_target": gettext_noop(
                "%(candidate)s: phase 1 tested %(tested)s tokens of context, below the workload's p95 of %(target)s."
            ),
            "concurrency_untested": gettext_noop(
                "%(candidate)s: phase 1 did not test concurrency (the workload's peak is %(target)s concurrent "
                "requests)."
            ),
            "concurrency_below_target": gettext_noop(
                "%(candidate)s: phase 1 tested %(tested)s concurrent requests, below the workload's peak of "
                "%(target)s."
            ),
        },
        check=check_memory_fit_yes_no,
    ),
    Rule(
        code="interconnect_ignored",
        number=3,
        title=gettext_noop("Ignoring interconnect"),
        explanation=gettext_noop(
            "For multi-GPU and multi-node jobs, topology is part of the GPU. A cheaper GPU pool with weak placement "
            "can lose to a more expensive but coherent cluster."
        ),
        reasons={
            "multi_gpu": gettext_noop(
                "%(candidate)s runs one job across %(gpus)s GPUs with no measured all-reduce bus bandwidth and no "
                "recorded waiver."
            ),
            "multi_node": gettext_noop(
                "%(candidate)s runs one job across %(nodes)s nodes with no measured all-reduce bus bandwidth and no "
                "recorded waiver."
            ),
        },
        check=check_interconnect_ignored,
    ),
    Rule(
        code="generated_not_accepted",
        number=4,
        title=gettext_noop("Benchmarking generated outputs instead of accepted outputs"),
        explanation=gettext_noop(
            "AI workloads include quality filters, safety filters, retries, failed generations, failed patches and "
            "failed evals. Measure the cost per accepted output."
        ),
        reasons={
            "no_acceptance_criteria": gettext_noop(
                "The workload states no acceptance criteria: the benchmarks can count generated outputs only, not "
                "accepted ones."
            ),
            "acceptance_unsourced": gettext_noop(
                "The workload's acceptance rate (%(rate)s) cites no source, and no candidate has a measured or "
                "sourced one: it counts as no acceptance criterion."
            ),
            "candidate_acceptance_unsourced": gettext_noop(
                "%(candidate)s has no measured or sourced quality acceptance, and the workload states no sourced "
                "rate: its cost counts generated outputs, not accepted ones."
            ),
        },
        check=check_generated_not_accepted,
    ),
    Rule(
        code="no_platform_ownership",
        number=5,
        title=gettext_noop("Forgetting platform ownership"),
        explanation=gettext_noop(
            "Someone must own drivers, CUDA, containers, model servers, autoscaling, quotas, logging, alerts, "
            "incidents and spend reporting. If no such team exists, price it in."
        ),
        reasons={
            "zero_platform_labor": gettext_noop(
                "%(candidate)s runs on GPUs you operate, yet carries no platform labor."
            ),
            "unowned_operations": gettext_noop(
                "%(candidate)s runs on GPUs you operate, yet %(count)s operations lines name no owner (the team, the "
                "vendor or a person): %(lines)s."
            ),
        },
        check=check_no_platform_ownership,
    ),
    Rule(
        code="bought_for_todays_model",
        number=6,
        title=gettext_noop("Buying only for today's model"),
        explanation=gettext_noop(
            "Model choices change. Context windows grow. Quantisation improves. Provider availability shifts. Keep "
            "the decision record flexible and avoid commitments that assume one model stays dominant."
        ),
        reasons={
            "commitment_outlives_model": gettext_noop(
                "%(candidate)s commits for %(commitment)s months, longer than the %(life)s months the workload "
                "expects its model to last."
            ),
        },
        check=check_bought_for_todays_model,
    ),
    Rule(
        code="committed_without_api_comparison",
        number=7,
        title=gettext_noop("Committing without comparing a model/API route"),
        explanation=gettext_noop(
            "Reserve or buy only after traffic, model choice and utilisation are validated, and compare with the "
            "model/API options before signing a commitment: GPU infrastructure brings ownership of the scheduler, "
            "runtime, security, FinOps and incidents."
        ),
        reasons={
            "reserve_without_api": gettext_noop(
                "%(candidate)s is a reservation, but this comparison costs no model/API route to weigh it against."
            ),
            "purchase_without_api": gettext_noop(
                "%(candidate)s is a purchase, but this comparison costs no model/API route to weigh it against."
            ),
        },
        check=check_committed_without_api_comparison,
    ),
)

RULES_BY_CODE: Mapping[str, Rule] = MappingProxyType({rule.code: rule for rule in RULES})


def check_mistakes(situation: Situation) -> tuple[Finding, ...]:
    """Every finding of the rules, in the guide's order."""
    return tuple(finding for rule in RULES for finding in rule.check(situation))
