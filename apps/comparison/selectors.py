"""The phase-4 comparison of one workload version: every candidate's quoted, measured and estimated inputs turned into
`normalize()` rows, the six-mistakes check, the sensitivity of the leader and the break-even figures.

Reads only (a selector): `comparison_for(user, summary)` runs a fixed number of SQL queries whatever the number of
candidates. A bad input never raises out of here: it becomes a `Problem` naming the candidate and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

from django.core.exceptions import FieldDoesNotExist
from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from apps.benchmarks.measurements import counts_as_measured
from apps.common import decimals, work_units
from apps.common.provenance import ProvenanceKind
from apps.common.work_units import Conversion, WorkUnit
from apps.comparison import cost_model, hybrid, mistakes
from apps.comparison.models import MistakeWaiver
from apps.evidence.models import CandidateFigure, FigureMetric, FigureSource
from apps.quotes import checklist_data, kinds
from apps.quotes import selectors as quote_selectors
from apps.quotes.comparison_inputs import normalization_inputs
from apps.quotes.models import (
    NORMALIZATION_COST_KIND,
    Candidate,
    CandidateKind,
    ChecklistAnswer,
    CommercialModel,
    CostLine,
    CostPeriod,
    PriceVersion,
)
from apps.workloads import estimates
from apps.workloads.memory.breakdown import EstimateKind
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.layouts import Layout
from apps.workloads.memory.precisions import BYTES_PER_GIB
from apps.workloads.models import DecisionMetric, OperatingMode, WorkloadSummary, WorkloadType
from apps.workloads.selectors import catalog_gpus, with_calibrated_margins

D = Decimal
ZERO = D(0)
PERIOD_HOURS = cost_model.HOURS_PER_MONTH

MODE_OF_WORKLOAD = {
    WorkloadType.REALTIME_INFERENCE: cost_model.Mode.REALTIME,
    WorkloadType.EMBEDDING: cost_model.Mode.REALTIME,
    WorkloadType.BATCH_INFERENCE: cost_model.Mode.BATCH,
    WorkloadType.EVALUATION: cost_model.Mode.BATCH,
    WorkloadType.NOTEBOOK: cost_model.Mode.BATCH,
    WorkloadType.CODE_AGENT: cost_model.Mode.REALTIME,
    WorkloadType.IMAGE_GENERATION: cost_model.Mode.MEDIA,
    WorkloadType.VIDEO_GENERATION: cost_model.Mode.MEDIA,
    WorkloadType.TRAINING: cost_model.Mode.TRAINING,
    WorkloadType.FULL_FINE_TUNING: cost_model.Mode.TRAINING,
    WorkloadType.LORA_FINE_TUNING: cost_model.Mode.TRAINING,
}

#: The decision metrics costed per completed run (training and fine-tuning), and the units each metric counts: the
#: metric chosen in step 2 (or overridden with a reason) decides what the table's last column is.
TRAINING_DECISION_METRICS = frozenset({DecisionMetric.TRAINING_RUN, DecisionMetric.CHECKPOINT})
METRIC_UNITS = {
    DecisionMetric.TRAINING_RUN: (WorkUnit.TRAINING_RUN,),
    DecisionMetric.CHECKPOINT: (WorkUnit.CHECKPOINT,),
    DecisionMetric.RESPONSE: (WorkUnit.REQUEST,),
    # A batch of requests counted per accepted response is a batch of records of one request each.
    DecisionMetric.RECORD_OR_TOKEN: (WorkUnit.RECORD, WorkUnit.OUTPUT_TOKEN, WorkUnit.REQUEST),
    DecisionMetric.TASK: (WorkUnit.TASK,),
    DecisionMetric.IMAGE: (WorkUnit.IMAGE,),
    DecisionMetric.CLIP_SECOND: (WorkUnit.CLIP_SECOND,),
    DecisionMetric.EVAL_SUITE: (WorkUnit.EVAL_SUITE,),
}


def decision_metric(summary: WorkloadSummary) -> str | None:
    """The metric the comparison is judged by: the one chosen in step 2 (with its reason), else the proposed one."""
    return summary.effective_metric


def is_training_comparison(summary: WorkloadSummary) -> bool:
    """Costed per completed run: the decision metric is per training run or per checkpoint (without a metric, the
    workload type decides)."""
    metric = decision_metric(summary)
    if metric:
        return metric in TRAINING_DECISION_METRICS
    return MODE_OF_WORKLOAD.get(summary.workload_type) is cost_model.Mode.TRAINING


def work_unit(summary: WorkloadSummary) -> WorkUnit:
    """The unit the demand counts: the workload's unit of success, which must be one the decision metric counts.
    Raises NormalizationError on `unit_of_success` naming both when they disagree."""
    metric = decision_metric(summary)
    allowed = METRIC_UNITS.get(metric, ()) if metric else ()
    unit = work_units.unit_of_success(summary.unit_of_success)
    if unit is None:
        if len(allowed) == 1:
            return allowed[0]
        raise cost_model.NormalizationError(
            None, "unit_of_success", "the workload states no unit of success: say what one accepted output counts"
        )
    if allowed and unit not in allowed:
        names = " or ".join(work_units.unit_name(item) for item in allowed)
        raise cost_model.NormalizationError(
            None, "unit_of_success",
            f"the decision metric ({DecisionMetric(metric).label}) counts {names}, the unit of success counts "
            f"{work_units.unit_name(unit)}: change one of them",
        )
    return unit


#: The workload summary field behind each input of the demand (a problem names the field the user can fix).
DEMAND_FIELDS = {
    "accepted_outputs": "demand_per_month",
    "peak_rate": "arrival_rate_peak",
    "operating_hours": "hours_per_day",
    "quality_acceptance": "quality_acceptance_rate",
    "p95_latency_target_ms": "p95_e2e_ms",
    "mode": "workload_type",
    "runs_per_period": "days_per_month",
}

#: Phase-4 inputs that become fields of cost_model.CandidateInput (the rest feed the notes, charts and mistakes).
NORMALIZE_FIELDS = {
    FigureMetric.CAPACITY_AT_SLO: "capacity_at_slo_per_gpu",
    FigureMetric.RETRY_RATE: "retry_rate",
    FigureMetric.FAILURE_RATE: "failure_rate",
    FigureMetric.P95_LATENCY_MS: "p95_latency_ms",
    FigureMetric.MEMORY_MARGIN: "memory_margin",
    FigureMetric.HEADROOM: "headroom",
    FigureMetric.GPUS_PER_REPLICA: "gpus_per_replica",
    FigureMetric.QUALITY_ACCEPTANCE: "quality_acceptance",
}
#: Inputs that only a fleet of GPUs has (an API route is billed per token, not sized).
FLEET_ONLY_FIELDS = frozenset({"capacity_at_slo_per_gpu", "headroom", "gpus_per_replica", "memory_margin"})

#: How a problem names the field (the pure module speaks in CandidateInput field names).
FIELD_LABELS = {
    "unit_price": _("price per hour (quote)"),
    "price_unit": _("price unit (quote)"),
    "billing_granularity_hours": _("billing granularity (quote)"),
    "committed_hours": _("committed hours (quote)"),
    "overage_price": _("overage price (quote)"),
    "minimum_commitment": _("minimum commitment (quote)"),
    "commitment_months": _("term (quote)"),
    "gpus_per_node": _("GPUs per node (quote)"),
    "gpus_per_replica": _("GPUs per replica (phase-4 input)"),
    "capacity_at_slo_per_gpu": _("capacity at the SLO (phase-4 input)"),
    "capacity_unit": _("capacity unit (phase-4 input)"),
    "minimum_billed_hours": _("minimum charge per run (quote)"),
    "headroom": _("sizing headroom (phase-4 input)"),
    "spot_preemptions_per_hour": _("spot preemptions per GPU-hour (quote)"),
    "spot_rework_hours": _("rework hours per preemption (candidate)"),
    "capex_per_node": _("price per node bought (quote)"),
    "amortisation_months": _("amortisation (quote)"),
    "power_kw_per_node": _("power draw per node (quote)"),
    "pue": _("PUE (quote)"),
    "energy_price_per_kwh": _("energy price (quote)"),
    "colocation_per_kw_month": _("colocation price (quote)"),
    "maintenance_per_node_year": _("maintenance price (quote)"),
    "api_input_price_per_million": _("input token price (quote)"),
    "api_output_price_per_million": _("output token price (quote)"),
    "mean_input_tokens": _("mean input tokens (workload summary)"),
    "mean_output_tokens": _("mean output tokens (workload summary)"),
    "cost_lines": _("cost lines (quote)"),
    "retry_rate": _("retry rate"),
    "failure_rate": _("failure rate (phase-4 input)"),
    "quality_acceptance": _("quality acceptance"),
    "p95_latency_ms": _("p95 latency (phase-4 input)"),
    "memory_margin": _("memory margin (phase-4 input)"),
    "minimum_gpus_for_memory": _("memory layout (estimate)"),
    "currency": _("currency (exchange rate)"),
    "commercial_model": _("commercial model (quote)"),
    "id": _("candidate"),
    "label": _("candidate"),
    "kind": _("candidate kind"),
}


#: What a missing input means, by the billing model that needs it (cost_model.MissingInputError). Kept in English in
#: the problem (and so in a frozen record), shown in the reader's language (`Problem.text`).
MISSING_INPUT_TEXTS = {
    kinds.BillingModel.ON_DEMAND: gettext_noop("Needed to price a candidate billed on demand."),
    kinds.BillingModel.SPOT: gettext_noop("Needed to price a candidate billed as spot capacity."),
    kinds.BillingModel.RESERVED: gettext_noop("Needed to price a candidate billed as reserved capacity."),
    kinds.BillingModel.PURCHASE: gettext_noop("Needed to price hardware you buy."),
    kinds.BillingModel.API: gettext_noop("Needed to price a model/API route."),
}


@dataclass(frozen=True)
class Problem:
    """A bad or missing input: which candidate (None: the workload version) and which field, and what is wrong."""

    candidate_id: int | None
    candidate_label: str
    field: str
    message: str
    #: "unit_mismatch" when the comparison would mix two units without a conversion: it refuses the comparison;
    #: "no_memory_fit" when no layout of the candidate's GPU holds the workload's peak sessions: it is not priced.
    code: str = ""

    @classmethod
    def of(cls, candidate_id: int | None, label: str, error: cost_model.NormalizationError) -> Problem:
        code = "unit_mismatch" if isinstance(error, cost_model.UnitMismatchError) else ""
        message = error.message
        if isinstance(error, cost_model.MissingInputError) and error.billing in MISSING_INPUT_TEXTS:
            message = MISSING_INPUT_TEXTS[error.billing]
        return cls(candidate_id, label, error.field, message, code)

    @property
    def text(self) -> str:
        """The message in the reader's language where the catalogs have it (the cost model's other messages are
        English sentences, shown as they are)."""
        return gettext(self.message)

    @property
    def field_label(self) -> str:
        base = self.field.split("[")[0].split(".")[0]
        if self.candidate_id is None:
            try:
                return str(WorkloadSummary._meta.get_field(base).verbose_name)
            except FieldDoesNotExist:
                return self.field
        label = FIELD_LABELS.get(base)
        return str(label) if label is not None else self.field

    def to_dict(self) -> dict:
        return {
            "candidate_id": self.candidate_id,
            "candidate": self.candidate_label,
            "field": self.field,
            "field_label": self.field_label,
            "message": self.message,
            "code": self.code,
        }


@dataclass(frozen=True)
class MemoryFit:
    """The memory estimator's answer on one catalog GPU: its capacity, the planned per-GPU need (one replica of the
    plan's GPUs holding every session) and the cheapest fitting layout (None: no layout fits; always None for a
    training plan, whose fleet the quote sizes)."""

    gpu_name: str
    capacity_bytes: int
    planned_bytes: int
    layout: Layout | None
    inference: bool
    sessions: int = 0  # the plan's peak sessions (inference)
    context_tokens: int = 0  # the plan's p95 context (inference)
    safety_margin_source: str = ""

    @property
    def fits(self) -> bool:
        return not self.inference or self.layout is not None

    @property
    def need_bytes_per_gpu(self) -> int:
        """The per-GPU need the margin is taken at: the layout's (at its per-replica load), else the plan's."""
        return self.layout.breakdown.total_bytes if self.layout is not None else self.planned_bytes

    @property
    def margin(self) -> Decimal:
        """1 − need per GPU ÷ usable memory (negative when it does not fit)."""
        return D(self.capacity_bytes - self.need_bytes_per_gpu) / D(self.capacity_bytes)


@dataclass
class CandidateResult:
    """One candidate of the comparison: its inputs, its normalised row or the problem that stopped it."""

    candidate: Candidate
    inputs: dict[str, CandidateFigure]
    candidate_input: cost_model.CandidateInput | None = None
    row: cost_model.Row | None = None
    problem: Problem | None = None
    warnings: list[str] = field(default_factory=list)
    predicted_memory_margin: Decimal | None = None
    #: The memory estimate on the candidate's GPU (self-hosted candidates whose GPU has a memory figure).
    memory: MemoryFit | None = None
    facts: mistakes.CandidateFacts | None = None
    training_run: cost_model.TrainingRun | None = None
    training_row: cost_model.TrainingRow | None = None
    training_hourly_price: Decimal | None = None  # per GPU-hour in the reporting currency
    #: Figures a rehearsal (a CPU or the built-in mock) produced for this candidate: shown, labelled, never counted.
    rehearsals: list[dict] = field(default_factory=list)
    #: The rules a named person waived for this candidate: who, when, why (shown beside the mistakes check).
    waivers: list[dict] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.candidate.pk)

    @property
    def label(self) -> str:
        return self.candidate.label

    def value(self, metric: str) -> Decimal | None:
        item = self.inputs.get(metric)
        return item.value if item is not None else None

    def measured(self, metric: str) -> CandidateFigure | None:
        """The figure for `metric` when it is benchmark evidence: measured on this candidate, linked to the canonical
        result of its job, not a rehearsal (apps/benchmarks/measurements.counts_as_measured). The one test of
        "measured" the comparison and the mistake checks use; a typed "job:N" reference is not evidence."""
        item = self.inputs.get(metric)
        return item if item is not None and counts_as_measured(item) else None

    def measured_value(self, metric: str) -> Decimal | None:
        item = self.measured(metric)
        return item.value if item is not None else None

    @property
    def has_benchmark_evidence(self) -> bool:
        return any(self.measured(metric) is not None for metric in self.inputs)

    @property
    def is_fleet(self) -> bool:
        return self.candidate.kind != CandidateKind.API


@dataclass(frozen=True)
class FindingView:
    finding: mistakes.Finding
    candidate_label: str
    message: str


@dataclass(frozen=True)
class RuleResult:
    rule: mistakes.Rule
    title: str
    explanation: str
    findings: tuple[FindingView, ...]

    @property
    def raised(self) -> bool:
        return bool(self.findings)


@dataclass(frozen=True)
class BreakEven:
    """The three break-even figures, each None when the comparison lacks the candidates it needs."""

    reserve_utilisation: Decimal | None = None
    reserved_label: str = ""
    reserved_rate: Decimal | None = None
    on_demand_label: str = ""
    on_demand_rate: Decimal | None = None
    buy_months: Decimal | None = None
    purchase_label: str = ""
    rental_label: str = ""
    capex: Decimal | None = None
    cloud_monthly: Decimal | None = None
    owned_monthly_opex: Decimal | None = None
    buy_never_pays: bool = False
    api_tokens_per_month: Decimal | None = None
    api_label: str = ""
    self_host_label: str = ""
    self_host_monthly: Decimal | None = None
    blended_price_per_million: Decimal | None = None
    workload_tokens_per_month: Decimal | None = None


@dataclass(frozen=True)
class TrainingPlan:
    """What a training workload asks for: one completed run of `token_budget` tokens, checkpointed every
    `checkpoint_interval_hours`, with `failures_per_gpu_hour` interruptions (from the workload summary)."""

    token_budget: Decimal
    checkpoint_interval_hours: Decimal
    failures_per_gpu_hour: Decimal
    provenance: dict
    acceptance: Decimal = Decimal(1)
    unit: WorkUnit = WorkUnit.TRAINING_RUN


@dataclass
class Comparison:
    summary: WorkloadSummary
    currency: str
    demand: cost_model.Demand | None
    demand_problem: Problem | None
    results: list[CandidateResult]
    rules: list[RuleResult]
    chosen_id: str | None
    exchange_rates: tuple[cost_model.ExchangeRate, ...]
    focus: CandidateResult | None = None
    sensitivity: tuple[cost_model.SensitivityBar, ...] = ()
    sensitivity_problem: str = ""
    break_even: BreakEven = field(default_factory=BreakEven)
    training: TrainingPlan | None = None
    #: The cheapest mix of a base, burst and an API route (hybrid_option_for); never a candidate of the database.
    hybrid: HybridOption | None = None
    hybrid_problem: str = ""

    @property
    def is_training(self) -> bool:
        return self.training is not None or is_training_comparison(self.summary)

    @property
    def metric_label(self) -> str:
        """The decision metric the table's last column is (step 2's, chosen or proposed)."""
        return self.summary.get_effective_metric_display()

    @property
    def unit_label(self) -> str:
        """What one unit of the last column counts: the workload's unit of success, or the metric's own unit."""
        if self.summary.unit_of_success:
            return self.summary.get_unit_of_success_display()
        return {DecisionMetric.TRAINING_RUN: gettext("Completed training run"),
                DecisionMetric.CHECKPOINT: gettext("Accepted checkpoint")}.get(decision_metric(self.summary) or "", "")

    @property
    def shows_time_to_answer(self) -> bool:
        """An evaluation is judged by its cost per suite and by how long one suite takes."""
        return self.demand is not None and self.demand.unit is WorkUnit.EVAL_SUITE

    @property
    def waiver_lines(self) -> list[dict]:
        """Every recorded waiver, with the rule's title, the candidate, who took it, when and why."""
        titles = {rule.rule.code: rule.title for rule in self.rules}
        return [{**waiver, "rule_title": titles.get(waiver["rule"], waiver["rule"]), "candidate": result.label}
                for result in self.results for waiver in result.waivers]

    @property
    def rehearsal_results(self) -> list[CandidateResult]:
        """Candidates with figures from a rehearsal (a CPU or the built-in mock): shown as such, never counted."""
        return [result for result in self.results if result.rehearsals]

    @property
    def unit_mismatches(self) -> list[Problem]:
        """Problems that refuse the whole comparison: two units and no conversion between them."""
        return [problem for problem in self.problems if problem.code == "unit_mismatch"]

    @property
    def rows(self) -> list[CandidateResult]:
        return [result for result in self.results if result.row is not None]

    @property
    def training_rows(self) -> list[CandidateResult]:
        return [result for result in self.results if result.training_row is not None]

    @property
    def problems(self) -> list[Problem]:
        found = [self.demand_problem] if self.demand_problem else []
        return found + [result.problem for result in self.results if result.problem is not None]

    @property
    def cheapest(self) -> CandidateResult | None:
        """The lowest cost per accepted output (per completed run for a training workload)."""
        if self.unit_mismatches:
            return None  # a comparison that mixes units names no cheapest option
        if self.is_training:
            rows = self.training_rows
            return min(rows, key=lambda r: (r.training_row.cost_per_accepted_output, r.candidate.pk), default=None)
        return min(self.rows, key=lambda r: (r.row.effective_unit_cost, r.candidate.pk), default=None)

    @property
    def lowest_hourly(self) -> CandidateResult | None:
        if self.is_training:
            return min(self.training_rows, key=lambda r: (r.training_hourly_price, r.candidate.pk), default=None)
        priced = [result for result in self.rows if result.row.hourly_price is not None]
        return min(priced, key=lambda result: (result.row.hourly_price, result.candidate.pk)) if priced else None

    @property
    def raised_codes(self) -> list[str]:
        return [rule.rule.code for rule in self.rules if rule.raised]


# ---------------------------------------------------------------------------------------------------------------
# Queries


def summaries_for(user) -> QuerySet[WorkloadSummary]:
    return WorkloadSummary.objects.for_user(user).select_related("team", "workload", "created_by", "ready_by")


def summary_get(user, pk) -> WorkloadSummary:
    return get_object_or_404(summaries_for(user), pk=pk)


def rehearsal_data(item: CandidateFigure) -> dict:
    """A rehearsal's figure as the page, the exports and a frozen record show it: what it measured, on which job, why
    it is a rehearsal."""
    result = item.measurement.result
    return {"metric": item.metric, "value": item.value, "capacity_unit": item.capacity_unit,
            "job_id": result.job_id, "reasons": list(result.rehearsal_reasons or ())}


def waiver_data(waiver) -> dict:
    """A recorded waiver as the page, the exports and a frozen record show it."""
    person = waiver.waived_by
    return {"rule": waiver.rule, "by": (person.get_full_name() or person.get_username()) if person else "",
            "reason": waiver.reason, "at": waiver.created_at.isoformat()}


def candidates_for_comparison(user, summary: WorkloadSummary) -> QuerySet[Candidate]:
    """The version's candidates with everything the comparison reads, prefetched (a fixed number of queries)."""
    return (
        Candidate.objects.for_user(user)
        .filter(workload_summary=summary)
        .select_related("quote__vendor", "quote__gpu", "team")
        .prefetch_related(
            # The mistakes check: the waivers and the checklist answers (owners of the operations lines).
            Prefetch("mistake_waivers", queryset=MistakeWaiver.objects.select_related("waived_by").order_by("pk")),
            Prefetch("quote__answers", queryset=ChecklistAnswer.objects.select_related("question")),
            Prefetch("quote__price_versions", queryset=PriceVersion.objects.order_by("component", "-number")),
            Prefetch(
                "quote__cost_lines",
                queryset=CostLine.objects.current().select_related("estimated_by"),
                to_attr="current_cost_lines",
            ),
            # A rehearsal's figure (CPU, mock stack) is no input: the comparison sees that figure as missing. Its
            # figures stay readable, labelled, as `candidate.rehearsal_figures` (each `.measurement.rehearsal`).
            Prefetch("figures", queryset=CandidateFigure.objects.select_related("entered_by", "measurement__result")
                     .exclude(measurement__rehearsal=True)),
            Prefetch("figures", queryset=CandidateFigure.objects.select_related("measurement__result__job")
                     .filter(measurement__rehearsal=True), to_attr="rehearsal_figures"),
        )
        .order_by("label", "pk")
    )


# ---------------------------------------------------------------------------------------------------------------
# From the models to the pure inputs


def _summary_provenance(summary: WorkloadSummary, what: str) -> cost_model.Provenance:
    author = summary.ready_by or summary.created_by
    by = author.get_username() if author else summary.team.name
    return cost_model.Provenance.estimated(by, f"workload summary “{summary.name}” v{summary.version}: {what}")


def operating_hours(summary: WorkloadSummary) -> Decimal | None:
    """Always-on runs the whole 730-hour month; anything else runs hours per day × days per month (at most 730)."""
    if summary.operating_mode == OperatingMode.ALWAYS_ON:
        return PERIOD_HOURS
    hours = summary.operating_hours_per_month
    return None if hours is None else min(D(hours), PERIOD_HOURS)


def demand_from_summary(summary: WorkloadSummary) -> cost_model.Demand:
    """The demand of one 730-hour month as the workload summary states it; NormalizationError names the field."""

    def missing(name: str, message: str) -> cost_model.NormalizationError:
        return cost_model.NormalizationError(None, DEMAND_FIELDS.get(name, name), message)

    mode = MODE_OF_WORKLOAD.get(summary.workload_type)
    if mode is None:
        raise missing("mode", "the workload type is not set")
    if is_training_comparison(summary):
        raise missing("mode", "a training workload is compared per completed run, not per accepted output")
    if mode is cost_model.Mode.TRAINING:
        # A training or fine-tuning workload judged by a serving metric (overridden with a reason) is served as a batch.
        mode = cost_model.Mode.BATCH
    unit = work_unit(summary)
    if summary.demand_per_month is None:
        raise missing("accepted_outputs", "the workload states no demand per month")
    hours = operating_hours(summary)
    if hours is None:
        raise missing("operating_hours", "the workload states no operating hours per day and days per month")
    peak = summary.arrival_rate_peak
    if peak is None and mode is cost_model.Mode.REALTIME:
        raise missing("peak_rate", "a real-time workload needs its peak arrival rate")
    runs = 1
    if summary.operating_mode == OperatingMode.SCHEDULED_BATCH and summary.days_per_month:
        runs = int(D(summary.days_per_month).to_integral_value(rounding=ROUND_CEILING))
    acceptance = summary.quality_acceptance_rate
    provenance = {
        "accepted_outputs": _summary_provenance(summary, "demand per month"),
        "operating_hours": _summary_provenance(summary, "operating hours"),
    }
    if peak is not None:
        provenance["peak_rate"] = _summary_provenance(summary, "peak arrival rate")
    if acceptance is not None:
        provenance["quality_acceptance"] = _summary_provenance(summary, "quality acceptance")
    if summary.p95_e2e_ms is not None:
        provenance["p95_latency_target_ms"] = _summary_provenance(summary, "p95 end-to-end latency target")
    conversions = []
    if summary.mean_output_tokens:
        # Declared by the workload, with the summary as its source; a candidate's measured figure wins over it.
        conversions.append(Conversion(WorkUnit.REQUEST, WorkUnit.OUTPUT_TOKEN, D(summary.mean_output_tokens),
                                      _summary_provenance(summary, "mean output tokens per request")))
    try:
        return cost_model.Demand(
            accepted_outputs=D(summary.demand_per_month),
            period_hours=PERIOD_HOURS,
            peak_rate=D(peak) if peak is not None else ZERO,
            operating_hours=hours,
            mode=mode,
            quality_acceptance=D(acceptance) if acceptance is not None else D(1),
            runs_per_period=runs,
            p95_latency_target_ms=D(summary.p95_e2e_ms) if summary.p95_e2e_ms is not None else None,
            unit=unit,
            peak_unit=WorkUnit.REQUEST,  # the summary's arrival rate counts requests per second
            conversions=tuple(conversions),
            provenance=provenance,
        )
    except cost_model.NormalizationError as error:
        raise missing(error.field, error.message) from None


def input_provenance(item: CandidateFigure) -> cost_model.Provenance:
    if item.source == FigureSource.ESTIMATED:
        return cost_model.Provenance.estimated(item.estimated_by, item.estimate_reason)
    return cost_model.Provenance(ProvenanceKind(item.source), reference=item.reference)


def _provenance_from(data: dict) -> cost_model.Provenance:
    return cost_model.Provenance(
        ProvenanceKind(data["kind"]), reference=data.get("reference", ""), by=data.get("by", ""),
        why=data.get("why", ""),
    )


MEMORY_LAYOUT_BY = "memory layout"


def memory_layout_provenance(summary: WorkloadSummary, memory: MemoryFit) -> cost_model.Provenance:
    """The memory floor's source: estimated by the memory layout from the workload version's shape and peak."""
    layout = memory.layout
    assert layout is not None
    why = (
        f"workload summary “{summary.name}” v{summary.version} on {memory.gpu_name}: {layout.replicas} replicas "
        f"× {layout.gpus_per_replica} GPUs per replica (TP {layout.tensor_parallel}, PP {layout.pipeline_parallel}), "
        f"{layout.sessions_per_replica} sessions per replica = {layout.gpus} GPUs"
    )
    if memory.safety_margin_source:
        why += f"; safety margin: {memory.safety_margin_source}"
    return cost_model.Provenance.estimated(MEMORY_LAYOUT_BY, why)


def candidate_input_for(
    candidate: Candidate, summary: WorkloadSummary, inputs: dict[str, CandidateFigure],
    memory: MemoryFit | None = None,
) -> tuple[cost_model.CandidateInput, list[str]]:
    """The pure input of one candidate: the quote side (apps.quotes.comparison_inputs), the phase-4 inputs and, for an
    API route, the workload's mean tokens. With a memory layout of a self-hosted candidate's GPU: the fleet's memory
    floor (`minimum_gpus_for_memory`, the layout's whole GPUs) and, when the inputs state no GPUs per replica, the
    layout's t·pp. Raises NormalizationError naming the field."""
    cid = str(candidate.pk)
    quoted = normalization_inputs(candidate)
    values = dict(quoted.values)
    provenance: dict[str, cost_model.Provenance] = {}
    for name, data in quoted.provenance.items():
        try:
            provenance[name] = _provenance_from(data)
        except ValueError as error:
            raise cost_model.NormalizationError(cid, name, f"its source is missing ({error})") from None
    is_api = candidate.kind == CandidateKind.API
    for metric, name in NORMALIZE_FIELDS.items():
        item = inputs.get(metric)
        if item is None or (is_api and name in FLEET_ONLY_FIELDS):
            continue
        if name == "gpus_per_replica":
            values[name] = int(item.value)  # a whole number of GPUs: sizing structure, not a priced input
            continue
        if name == "capacity_at_slo_per_gpu":
            values["capacity_unit"] = work_units.CAPACITY_UNIT.get(item.capacity_unit)
        values[name] = item.value
        try:
            provenance[name] = input_provenance(item)
        except ValueError as error:
            raise cost_model.NormalizationError(cid, name, f"its source is incomplete ({error})") from None
    conversions = []
    for metric, per, unit in (
        (FigureMetric.OUTPUT_TOKENS_PER_REQUEST, WorkUnit.REQUEST, WorkUnit.OUTPUT_TOKEN),
        (FigureMetric.REQUESTS_PER_OUTPUT, work_units.unit_of_success(summary.unit_of_success), WorkUnit.REQUEST),
    ):
        item = inputs.get(metric)
        if item is None or per is None or per == unit:
            continue
        try:
            conversions.append(Conversion(per, unit, item.value, input_provenance(item)))
        except ValueError as error:
            raise cost_model.NormalizationError(cid, "conversions", str(error)) from None
    values["conversions"] = tuple(conversions)
    if not is_api and memory is not None and memory.layout is not None:
        values.setdefault("gpus_per_replica", memory.layout.gpus_per_replica)
        values["minimum_gpus_for_memory"] = memory.layout.gpus
        provenance["minimum_gpus_for_memory"] = memory_layout_provenance(summary, memory)
    if is_api:
        for name in ("mean_input_tokens", "mean_output_tokens"):
            tokens = getattr(summary, name)
            if tokens is not None:
                values[name] = D(tokens)
                provenance[name] = _summary_provenance(summary, name.replace("_", " "))
    lines = []
    for index, line in enumerate(quoted.cost_lines):
        try:
            line_provenance = _provenance_from(line["provenance"])
        except ValueError as error:
            raise cost_model.NormalizationError(cid, f"cost_lines[{index}].provenance", str(error)) from None
        lines.append(
            cost_model.CostLine(
                kind=line["kind"], unit_price=line["unit_price"], provenance=line_provenance,
                quantity=line["quantity"], unit=line["unit"], label=line["label"],
            )
        )
    if not values.get("currency"):
        raise cost_model.NormalizationError(cid, "currency", "the quote has no currency")
    # The provenance of a price that is not set (a quote without a minimum commitment) is not an input.
    provenance = {name: item for name, item in provenance.items() if values.get(name) is not None}
    return cost_model.CandidateInput(**values, cost_lines=tuple(lines), provenance=provenance), list(quoted.problems)


TRAINING_FIELDS = {
    "token_budget": "tokens_to_train",
    "checkpoint_interval_hours": "checkpoint_interval_minutes",
    "failures_per_gpu_hour": "expected_failures_per_1000_gpu_hours",
}


def training_plan_from_summary(summary: WorkloadSummary) -> TrainingPlan:
    """The run a training workload asks for; NormalizationError names the workload summary's field."""
    if not summary.tokens_to_train:
        raise cost_model.NormalizationError(None, "tokens_to_train", "the workload states no token budget")
    if not summary.checkpoint_interval_minutes:
        raise cost_model.NormalizationError(None, "checkpoint_interval_minutes",
                                           "the workload states no checkpoint interval")
    failures = summary.expected_failures_per_1000_gpu_hours
    provenance = {
        "token_budget": _summary_provenance(summary, "tokens to train"),
        "checkpoint_interval_hours": _summary_provenance(summary, "checkpoint interval"),
    }
    if failures:
        author = summary.ready_by or summary.created_by
        provenance["failures_per_gpu_hour"] = cost_model.Provenance.estimated(
            author.get_username() if author else summary.team.name,
            summary.failure_rate_source or f"workload summary “{summary.name}” v{summary.version}: failure rate",
        )
    # What one counted run is: a run that reaches the target eval score, or an accepted checkpoint; the quality
    # acceptance rate is the share of completed runs that count.
    checkpoint = decision_metric(summary) == DecisionMetric.CHECKPOINT
    acceptance = summary.quality_acceptance_rate
    if not checkpoint and summary.target_eval_score is None:
        raise cost_model.NormalizationError(
            None, "target_eval_score", "a training run is costed per run that reaches the target eval score: state it"
        )
    if acceptance is not None and acceptance != 1:
        what = "checkpoint acceptance rate" if checkpoint else "share of runs that reach the target eval score"
        author = summary.ready_by or summary.created_by
        provenance["acceptance"] = cost_model.Provenance.estimated(
            author.get_username() if author else summary.team.name,
            summary.quality_acceptance_source or f"workload summary “{summary.name}” v{summary.version}: {what}",
        )
    return TrainingPlan(
        token_budget=D(summary.tokens_to_train),
        checkpoint_interval_hours=D(summary.checkpoint_interval_minutes) / 60,
        failures_per_gpu_hour=D(failures or 0) / 1000,
        provenance=provenance,
        acceptance=D(acceptance) if acceptance is not None else D(1),
        unit=WorkUnit.CHECKPOINT if checkpoint else WorkUnit.TRAINING_RUN,
    )


TRAINING_INPUTS = {
    FigureMetric.TRAINING_THROUGHPUT: "throughput_tokens_per_second",
    FigureMetric.CHECKPOINT_WRITE_HOURS: "checkpoint_write_hours",
    FigureMetric.RESTART_HOURS: "restart_hours",
}


def training_run_for(
    candidate: Candidate, plan: TrainingPlan, inputs: dict[str, CandidateFigure]
) -> tuple[cost_model.TrainingRun, list[str]]:
    """One completed run on the candidate's quoted cluster (all its GPUs) at its price per GPU-hour, with the
    measured cluster throughput and the per-run cost lines. Raises NormalizationError naming the field."""
    cid = str(candidate.pk)
    quote = candidate.quote
    if quote.billing_model not in (kinds.BillingModel.ON_DEMAND, kinds.BillingModel.SPOT, kinds.BillingModel.RESERVED):
        raise cost_model.NormalizationError(
            cid, "commercial_model", "a training run is priced per GPU-hour: compare GPU rentals for it"
        )
    quoted = normalization_inputs(candidate)
    values = quoted.values
    if values.get("unit_price") is None:
        raise cost_model.NormalizationError(cid, "unit_price", "the quote has no price per hour")
    price = values["unit_price"]
    if values.get("price_unit") == kinds.PriceUnit.NODE_HOUR:
        price = price / quote.gpus_per_node
    provenance = {
        "price_per_gpu_hour": _provenance_from(quoted.provenance["unit_price"]),
        "token_budget": plan.provenance["token_budget"],
        "checkpoint_interval_hours": plan.provenance["checkpoint_interval_hours"],
    }
    for name in ("failures_per_gpu_hour", "acceptance"):
        if name in plan.provenance:
            provenance[name] = plan.provenance[name]
    measured = {}
    for metric, name in TRAINING_INPUTS.items():
        item = inputs.get(metric)
        if item is not None:
            measured[name] = item.value
            provenance[name] = input_provenance(item)
    if "throughput_tokens_per_second" not in measured:
        raise cost_model.NormalizationError(
            cid, "throughput_tokens_per_second", "the cluster's training throughput is not measured yet"
        )
    currency = values["currency"]
    lines, warnings = [], []
    for line in quote_selectors.candidate_cost_lines(candidate):
        if line.period != CostPeriod.RUN:
            warnings.append(f"cost line {line.pk} is per month: a per-run cost leaves it out")
            continue
        if line.currency != currency:
            raise cost_model.NormalizationError(cid, "cost_lines", f"cost line {line.pk} is in {line.currency}")
        if line.is_estimate:
            by = line.estimated_by.get_username() if line.estimated_by else ""
            source = cost_model.Provenance.estimated(by, line.estimate_reason)
        else:
            source = cost_model.Provenance.quoted(f"cost-line:{line.pk}")
        lines.append(cost_model.CostLine(
            kind=NORMALIZATION_COST_KIND[line.kind], unit_price=line.rate, provenance=source,
            quantity=line.quantity, unit=line.unit, label=line.description or str(line.get_kind_display()),
        ))
    run = cost_model.TrainingRun(
        id=cid, label=candidate.label, gpus=quote.gpus_quoted, price_per_gpu_hour=price,
        token_budget=plan.token_budget, checkpoint_interval_hours=plan.checkpoint_interval_hours,
        failures_per_gpu_hour=plan.failures_per_gpu_hour, acceptance=plan.acceptance, unit=plan.unit,
        currency=currency, cost_lines=tuple(lines),
        provenance=provenance, **measured,
    )
    return run, warnings


def exchange_rates_for(team, currencies: Iterable[str]) -> tuple[cost_model.ExchangeRate, ...]:
    """The team's newest rate into its reporting currency for each currency (none: normalize() names the gap)."""
    book = quote_selectors.RateBook(team)
    rates = []
    for currency in sorted(set(currencies) - {team.reporting_currency}):
        rate = book.rate(currency, team.reporting_currency)
        if rate is not None:
            rates.append(
                cost_model.ExchangeRate(currency, rate.rate, cost_model.Provenance.quoted(f"exchange-rate:{rate.pk}"))
            )
    return tuple(rates)


# ---------------------------------------------------------------------------------------------------------------
# Evidence for the six mistakes and the memory chart


def _count(result: CandidateResult, metric: str) -> int | None:
    value = result.value(metric)
    return int(value) if value is not None else None


def commitment_months(candidate: Candidate) -> Decimal | None:
    """The reservation term or the purchase's amortisation; None for pay-as-you-go and API routes."""
    quote = candidate.quote
    if quote.commercial_model == CommercialModel.PURCHASE:
        return D(quote.amortisation_months) if quote.amortisation_months else None
    if quote.billing_model == kinds.BillingModel.RESERVED or quote.commercial_model == CommercialModel.RESERVED:
        return D(quote.term_months) if quote.term_months else None
    if quote.commercial_model in (CommercialModel.DEDICATED_CLUSTER, CommercialModel.PRIVATE_CLOUD):
        return D(quote.term_months) if quote.term_months else None
    return None


def candidate_facts(result: CandidateResult) -> mistakes.CandidateFacts:
    """The mistakes check's facts of one candidate, from evidence only: a measured all-reduce bus bandwidth (not what
    the quote says of its interconnect), a recorded waiver, a measured or sourced acceptance rate, an owner on each of
    the guide's operations lines (checklist answers). Reads the prefetched waivers and answers
    (`candidates_for_comparison`)."""
    candidate = result.candidate
    quote = candidate.quote
    # A training run spans the whole quoted cluster; a serving replica spans the GPUs the inputs say (default 1).
    default_gpus = quote.gpus_quoted if result.training_run is not None else 1
    gpus_per_job = _count(result, FigureMetric.GPUS_PER_REPLICA) or default_gpus
    nodes_per_job = _count(result, FigureMetric.NODES_PER_REPLICA) or -(-gpus_per_job // max(quote.gpus_per_node, 1))
    answers = {answer.question.code: answer for answer in quote.answers.all()}
    acceptance = result.inputs.get(FigureMetric.QUALITY_ACCEPTANCE)
    months = commitment_months(candidate)
    evidence = {
        "has_benchmark_evidence": result.has_benchmark_evidence,
        "tested_context_tokens": _count(result, FigureMetric.TESTED_CONTEXT_TOKENS),
        "tested_concurrency": _count(result, FigureMetric.TESTED_CONCURRENCY),
        "gpus_per_job": gpus_per_job,
        "nodes_per_job": nodes_per_job,
        "measured_bus_bandwidth_gbps": result.measured_value(FigureMetric.INTERCONNECT_BUS_BANDWIDTH_GBPS),
        "waived_rules": tuple(sorted({waiver.rule for waiver in candidate.mistake_waivers.all()})),
        "commitment_months": months,
        "is_commitment": months is not None or candidate.kind == CandidateKind.PURCHASE
        or quote.billing_model == kinds.BillingModel.RESERVED or quote.commercial_model == CommercialModel.RESERVED,
        "has_sourced_acceptance": (
            result.measured(FigureMetric.QUALITY_ACCEPTANCE) is not None
            or (acceptance is not None and acceptance.source == FigureSource.QUOTED
                and bool(acceptance.reference.strip()))
            or (candidate.quality_acceptance is not None and bool(candidate.quality_acceptance_source.strip()))
        ),
        "unowned_operations": tuple(
            line for code, line, *_texts in checklist_data.OWNERSHIP_LINES
            if code not in answers or not checklist_data.names_an_owner(answers[code].status, answers[code].value)
        ),
    }
    if result.row is not None:
        return mistakes.CandidateFacts.from_row(result.row, **evidence)
    if result.training_row is not None:
        return mistakes.CandidateFacts(
            id=result.id, label=result.label, kind=str(candidate.kind), hourly_price=result.training_hourly_price,
            effective_unit_cost=result.training_row.cost_per_completed_run,
            platform_labor=result.training_row.platform_labor, **evidence,
        )
    # A candidate stopped by a bad input still counts for the checks that need no cost.
    labor = sum(
        (line.amount for line in quote_selectors.candidate_cost_lines(candidate) if line.kind == "platform_labor"),
        ZERO,
    )
    return mistakes.CandidateFacts(
        id=result.id, label=result.label, kind=str(candidate.kind), platform_labor=labor, **evidence
    )


def workload_facts(summary: WorkloadSummary) -> mistakes.WorkloadFacts:
    rate = summary.quality_acceptance_rate
    return mistakes.WorkloadFacts(
        p95_context_tokens=summary.p95_context_tokens,
        peak_concurrency=summary.peak_concurrency,
        has_acceptance_criteria=summary.has_acceptance_criteria,
        model_expected_life_months=summary.model_expected_life_months,
        quality_acceptance_rate=rate,
        quality_acceptance_sourced=rate is not None and bool((summary.quality_acceptance_source or "").strip()),
    )


def rule_results(situation: mistakes.Situation, labels: dict[str, str]) -> list[RuleResult]:
    """The rules in the guide's order (the six mistakes, then its closing rule), each with its findings, in the
    active language."""
    results = []
    for rule in mistakes.RULES:
        findings = tuple(
            FindingView(finding, labels.get(finding.candidate_id or "", ""), finding.message(gettext))
            for finding in rule.check(situation)
        )
        results.append(RuleResult(rule, gettext(rule.title), gettext(rule.explanation), findings))
    return results


def memory_fits(summary: WorkloadSummary, results: list[CandidateResult]) -> None:
    """The memory estimate on each self-hosted candidate's GPU (`result.memory`): the same cheapest fitting layout the
    workload page shows (estimates.gpu_layout), with the GPU's calibrated safety margin. Nothing when the summary
    cannot be estimated yet or the GPU has no memory figure."""
    fleet = [result for result in results if result.is_fleet and result.candidate.quote.gpu_id]
    if not fleet:
        return
    plan, _error = estimates.safe_plan(summary)
    if plan is None:
        return
    gpu_ids = {result.candidate.quote.gpu_id for result in fleet}
    inference = plan.kind is EstimateKind.INFERENCE
    found: dict[int, MemoryFit] = {}
    team = summary.team if summary.team_id else None
    for item in with_calibrated_margins(catalog_gpus(gpu_ids), plan.shape, team=team):
        gpu = item.capacity
        if gpu.capacity.total_bytes <= 0:
            continue
        try:
            planned = estimates.EstimatePlan(plan.kind, plan.shape, gpu.request_for(plan.request)).breakdown()
            layout = estimates.gpu_layout(plan, gpu)
        except ShapeError:
            return
        found[item.gpu.pk] = MemoryFit(
            gpu_name=item.gpu.display_name, capacity_bytes=gpu.capacity.total_bytes,
            planned_bytes=planned.total_bytes, layout=layout, inference=inference,
            sessions=getattr(plan.request, "concurrent_sessions", 0),
            context_tokens=getattr(plan.request, "p95_context_tokens", 0),
            safety_margin_source=gpu.safety_margin_source,
        )
    for result in fleet:
        result.memory = found.get(result.candidate.quote.gpu_id)


def no_memory_fit_problem(summary: WorkloadSummary, result: CandidateResult) -> Problem:
    """The problem of a candidate whose GPU holds the workload in no layout: it names the GPU and the need."""
    memory = result.memory
    assert memory is not None
    message = gettext(
        "%(gpu)s (%(capacity)s GiB usable) holds the peak of %(sessions)s sessions at %(context)s tokens in no layout "
        "of replicas × tensor × pipeline parallel GPUs: one GPU would need %(need)s GiB. Not priced as viable."
    ) % {
        "gpu": memory.gpu_name,
        "capacity": decimals.significant(D(memory.capacity_bytes) / BYTES_PER_GIB, 4),
        "sessions": memory.sessions,
        "context": memory.context_tokens,
        "need": decimals.significant(D(memory.planned_bytes) / BYTES_PER_GIB, 4),
    }
    return Problem(result.candidate.pk, result.label, "minimum_gpus_for_memory", message, "no_memory_fit")


def predicted_memory_margins(results: list[CandidateResult]) -> None:
    """The memory estimator's margin on each self-hosted candidate's GPU (after memory_fits): 1 − need per GPU ÷
    usable memory, the need taken at the cheapest fitting layout's per-replica load (else, when none fits, at the
    plan: negative)."""
    for result in results:
        if result.memory is not None:
            result.predicted_memory_margin = decimals.significant(result.memory.margin, 6)


# ---------------------------------------------------------------------------------------------------------------
# Break-even


def break_even(comparison: Comparison) -> BreakEven:
    rows = comparison.rows
    values: dict = {}

    def cheapest(results):
        return min(results, key=lambda result: (result.row.effective_unit_cost, result.candidate.pk), default=None)

    reserved = [r for r in rows if r.row.commercial_model is kinds.BillingModel.RESERVED and r.row.gpus]
    on_demand = [r for r in rows if r.row.commercial_model is kinds.BillingModel.ON_DEMAND
                 and r.row.hourly_price]
    if reserved and on_demand:
        chosen_reserved = cheapest(reserved)
        chosen_on_demand = cheapest(on_demand)
        row = chosen_reserved.row
        rate = row.billed_compute / (row.gpus * row.billed_hours_per_gpu)  # the whole bill, retries included
        values.update(
            reserve_utilisation=cost_model.reserve_vs_on_demand_utilisation(rate, chosen_on_demand.row.hourly_price),
            reserved_label=chosen_reserved.label, reserved_rate=rate,
            on_demand_label=chosen_on_demand.label, on_demand_rate=chosen_on_demand.row.hourly_price,
        )
    months = comparison.demand.period_hours / PERIOD_HOURS if comparison.demand else D(1)
    purchases = [r for r in rows if r.row.commercial_model is kinds.BillingModel.PURCHASE]
    rentals = [r for r in rows if r.row.kind is kinds.CandidateKind.GPU]
    if purchases and rentals:
        bought = cheapest(purchases)
        rented = cheapest(rentals)
        parts = bought.row.gpu_cost_parts
        rate = _rate_of(comparison, bought.candidate_input.currency)
        capex = bought.row.nodes * bought.candidate_input.capex_per_node * rate
        owned_opex = (bought.row.total_cost - parts.get("amortised_capex", ZERO)) / months
        cloud = rented.row.total_cost / months
        result = cost_model.buy_vs_rent_months(capex, cloud, owned_opex)
        values.update(
            buy_months=result, buy_never_pays=result is None, purchase_label=bought.label, rental_label=rented.label,
            capex=capex, cloud_monthly=cloud, owned_monthly_opex=owned_opex,
        )
    apis = [r for r in rows if r.row.kind is kinds.CandidateKind.API]
    self_hosted = [r for r in rows if r.row.kind is not kinds.CandidateKind.API]
    if apis and self_hosted:
        api = cheapest(apis)
        hosted = cheapest(self_hosted)
        given = api.candidate_input
        rate = _rate_of(comparison, given.currency)
        blended = cost_model.blended_api_price_per_million(
            given.api_input_price_per_million * rate, given.api_output_price_per_million * rate,
            given.mean_input_tokens, given.mean_output_tokens,
        )
        monthly = hosted.row.total_cost / months
        if blended > 0:
            values.update(
                api_tokens_per_month=cost_model.api_vs_self_host_tokens_per_month(monthly, blended),
                api_label=api.label, self_host_label=hosted.label, self_host_monthly=monthly,
                blended_price_per_million=blended,
                workload_tokens_per_month=api.row.generated_outputs
                * (given.mean_input_tokens + given.mean_output_tokens) / months,
            )
    return BreakEven(**values)


def _rate_of(comparison: Comparison, currency: str) -> Decimal:
    if currency == comparison.currency:
        return D(1)
    for rate in comparison.exchange_rates:
        if rate.currency == currency:
            return rate.rate
    raise cost_model.NormalizationError(None, "currency", f"no exchange rate from {currency}")


# ---------------------------------------------------------------------------------------------------------------
# The comparison


def comparison_for(user, summary: WorkloadSummary, *, chosen_id: str | int | None = None,
                   focus_id: str | int | None = None, details: bool = True) -> Comparison:
    """Everything the comparison page, its exports and the API show about one workload version.

    `chosen_id` (a candidate id) asks the six-mistakes check about that choice (a decision record passes its own);
    `focus_id` picks the candidate of the sensitivity chart (default: the chosen one, else the cheapest).
    `details=False` stops after the rows and the six-mistakes check (no sensitivity, break-even or hybrid option):
    what a progress strip needs on every page view.
    """
    currency = summary.team.reporting_currency
    candidates = list(candidates_for_comparison(user, summary))
    results = [
        CandidateResult(candidate, {item.metric: item for item in candidate.figures.all()},
                        rehearsals=[rehearsal_data(item) for item in getattr(candidate, "rehearsal_figures", ())],
                        waivers=[waiver_data(waiver) for waiver in candidate.mistake_waivers.all()])
        for candidate in candidates
    ]
    demand = demand_problem = training = None
    memory_fits(summary, results)  # before pricing: the memory layout floors each self-hosted fleet
    if is_training_comparison(summary):
        try:
            training = training_plan_from_summary(summary)
        except cost_model.NormalizationError as error:
            demand_problem = Problem.of(None, str(summary), error)
        rates = _training_rows(summary, training, results, currency) if training else ()
    else:
        try:
            demand = demand_from_summary(summary)
        except cost_model.NormalizationError as error:
            demand_problem = Problem.of(None, str(summary), error)
        rates = _inference_rows(summary, demand, results, currency)
    predicted_memory_margins(results)

    for result in results:
        result.facts = candidate_facts(result)
    ids = {result.id for result in results}
    chosen = str(chosen_id) if chosen_id is not None and str(chosen_id) in ids else None
    situation = mistakes.Situation(workload_facts(summary), tuple(r.facts for r in results), chosen_id=chosen)
    labels = {result.id: result.label for result in results}
    comparison = Comparison(
        summary=summary, currency=currency, demand=demand, demand_problem=demand_problem, results=results,
        rules=rule_results(situation, labels), chosen_id=chosen, exchange_rates=rates, training=training,
    )
    if demand is None or not details:
        comparison.focus = comparison.cheapest
        return comparison
    by_id = {result.id: result for result in comparison.rows}
    focus = by_id.get(str(focus_id)) if focus_id is not None else None
    comparison.focus = focus or by_id.get(chosen or "") or comparison.cheapest
    if comparison.focus is not None:
        try:
            comparison.sensitivity = cost_model.sensitivity(
                demand, comparison.focus.candidate_input, currency=currency, exchange_rates=rates
            )
        except cost_model.NormalizationError as error:
            comparison.sensitivity_problem = str(error)
    try:
        comparison.break_even = break_even(comparison)
    except cost_model.NormalizationError:
        comparison.break_even = BreakEven()
    comparison.hybrid, comparison.hybrid_problem = hybrid_option_for(comparison)
    return comparison


def _inference_rows(summary, demand, results: list[CandidateResult], currency: str):
    """Each candidate's pure input and normalised row (or its problem); returns the exchange rates used."""
    currencies = set()
    for result in results:
        if result.memory is not None and not result.memory.fits:
            result.problem = no_memory_fit_problem(summary, result)  # never priced: its GPU cannot hold the peak
            continue
        try:
            result.candidate_input, result.warnings = candidate_input_for(
                result.candidate, summary, result.inputs, memory=result.memory
            )
        except cost_model.NormalizationError as error:
            result.problem = Problem.of(result.candidate.pk, result.label, error)
        else:
            currencies.add(result.candidate_input.currency)
    rates = exchange_rates_for(summary.team, currencies)
    if demand is None:
        return rates
    for result in results:
        if result.candidate_input is None:
            continue
        try:
            (result.row,) = cost_model.normalize(demand, [result.candidate_input], currency=currency,
                                                exchange_rates=rates)
        except cost_model.NormalizationError as error:
            result.problem = Problem.of(result.candidate.pk, result.label, error)
    return rates


def _training_rows(summary, plan: TrainingPlan, results: list[CandidateResult], currency: str):
    """Each candidate's cost per completed run (or its problem); returns the exchange rates used."""
    currencies = set()
    for result in results:
        try:
            result.training_run, result.warnings = training_run_for(result.candidate, plan, result.inputs)
        except cost_model.NormalizationError as error:
            result.problem = Problem.of(result.candidate.pk, result.label, error)
        else:
            currencies.add(result.training_run.currency)
    rates = exchange_rates_for(summary.team, currencies)
    by_currency = {rate.currency: rate.rate for rate in rates}
    for result in results:
        run = result.training_run
        if run is None:
            continue
        try:
            result.training_row = cost_model.training_run_cost(run, currency=currency, exchange_rates=rates)
        except cost_model.NormalizationError as error:
            result.problem = Problem.of(result.candidate.pk, result.label, error)
        else:
            rate = D(1) if run.currency == currency else by_currency[run.currency]
            result.training_hourly_price = run.price_per_gpu_hour * rate
    return rates


# ---------------------------------------------------------------------------------------------------------------
# The hybrid plan: a candidate of its own, made of the other candidates' rows

HYBRID_ID = "hybrid"
#: The profile's window: a day of operation; the summary's peak holds for this many hours of it (apps/comparison/
#: hybrid.py: the flattest two-level profile that holds the stated peak, the summary stating no hourly profile).
HYBRID_PEAK_HOURS = D(1)
HYBRID_BY = "hybrid plan"


@dataclass(frozen=True)
class HybridNote:
    """A remark on the hybrid row: a stable `code` (the page translates it) and its parameters."""

    code: str
    params: dict

    @property
    def text(self) -> str:
        return HYBRID_NOTE_TEXTS[self.code].format(**self.params)


HYBRID_NOTE_TEXTS = {
    "profile": "demand profile assumed: the peak {peak} per hour for {peak_hours} h of each {window} h window, "
               "{base} per hour the other hours (the workload states no hourly profile)",
    "base": "base: {gpus} GPUs of {label}, paid every hour",
    "burst": "burst: up to {gpus} GPUs of {label} on demand, paid per used hour",
    "overflow": "overflow: {outputs} accepted outputs per period to {label}",
    "unused": "{label} is not used: the mix is cheaper without it",
    "reserve_break_even": "reserving beats on demand for load needed more than {hours} hours a period "
                          "(the break-even utilisation: {utilisation} × the operating hours)",
    "burst_break_even": "a burst GPU-hour beats the API above {outputs} accepted outputs",
    "base_break_even": "a base unit beats the API above {outputs} accepted outputs a period",
    "unmeasured": "uses an unmeasured part: {labels} (capacity not measured by a benchmark)",
    "versus_cheapest": "{saving} per accepted output below the cheapest single candidate ({label})",
    "not_cheaper": "no cheaper than the cheapest single candidate ({label})",
}


@dataclass
class HybridOption:
    """The hybrid row: the plan, the candidates its parts come from (part name → result), where its figures come
    from (the parts' rows, the demand and the assumed profile) and its notes."""

    plan: hybrid.HybridPlan
    parts: dict[str, CandidateResult]
    provenance: dict[str, tuple[cost_model.Provenance, ...]]
    notes: list[HybridNote]
    unmeasured: list[str]
    currency: str
    label: str = ""

    id = HYBRID_ID

    @property
    def used_results(self) -> list[CandidateResult]:
        return [self.parts[part.part] for part in self.plan.used_parts]


def _hybrid_parts(comparison: Comparison, demand: cost_model.Demand, peak: Decimal):
    """The cheapest candidate of each kind of part, per unit of capacity (base, burst) or per accepted output (API),
    as hybrid parts built from its row."""
    choices: dict[str, tuple] = {}
    for result in comparison.rows:
        given, row = result.candidate_input, result.row
        rate = _rate_of(comparison, given.currency)
        measured = result.measured(FigureMetric.CAPACITY_AT_SLO) is not None
        model = given.commercial_model
        if model in (kinds.BillingModel.RESERVED, kinds.BillingModel.PURCHASE):
            name = hybrid.RESERVED
            part = hybrid.reserved_part(demand, given, row, rate=rate, peak=peak, capacity_measured=measured)
            key = part.cost_per_unit / part.serving
        elif model is kinds.BillingModel.ON_DEMAND:
            name = hybrid.ON_DEMAND
            part = hybrid.on_demand_part(demand, given, row, rate=rate, peak=peak, capacity_measured=measured)
            key = part.price_per_unit_hour / part.serving
        elif model is kinds.BillingModel.API:
            name, part = hybrid.API, hybrid.api_part(given, row, rate=rate)
            key = part.cost_per_output
        else:
            continue
        if name not in choices or (key, result.candidate.pk) < choices[name][0]:
            choices[name] = ((key, result.candidate.pk), part, result)
    return {name: (part, result) for name, (_key, part, result) in choices.items()}


def hybrid_option_for(comparison: Comparison) -> tuple[HybridOption | None, str]:
    """The hybrid row of an inference comparison with at least two of a reserved or bought base, an on-demand
    candidate and an API route, and a peak to serve (work sized by its volume runs only as long as it takes: no
    mix to make). (None, why) otherwise; a bad input says why instead of raising."""
    demand = comparison.demand
    if demand is None or comparison.is_training or comparison.unit_mismatches or demand.billed_by_use:
        return None, ""
    fleet_inputs = [result.candidate_input for result in comparison.rows if result.is_fleet]
    try:
        with cost_model.localcontext(cost_model.DECIMAL_CONTEXT):
            peak = hybrid.peak_outputs_per_hour(demand, fleet_inputs) if fleet_inputs else None
            if peak is None:
                return None, ""
            chosen = _hybrid_parts(comparison, demand, peak)
            if len(chosen) < 2:
                return None, ""
            summary = comparison.summary
            # The window is a day of operation: 24 h always on, else the summary's operating hours per day.
            window = D(24)
            if summary.operating_mode != OperatingMode.ALWAYS_ON and summary.hours_per_day:
                window = min(window, D(summary.hours_per_day))
            profile = hybrid.two_level_profile(
                accepted_outputs=demand.accepted_outputs, peak_per_hour=peak, operating_hours=demand.operating_hours,
                window_hours=window, peak_hours=HYBRID_PEAK_HOURS,
            )
            plan = hybrid.cheapest_mix(profile, accepted_outputs=demand.accepted_outputs,
                                       **{name: part for name, (part, _result) in chosen.items()})
    except cost_model.NormalizationError as error:
        return None, str(error)
    results = {name: result for name, (_part, result) in chosen.items()}
    return _hybrid_option(comparison, plan, results), ""


def _hybrid_option(comparison: Comparison, plan: hybrid.HybridPlan, results: dict[str, CandidateResult]
                   ) -> HybridOption:
    demand = comparison.demand
    profile = plan.profile
    used = [results[part.part] for part in plan.used_parts]
    assumed = cost_model.Provenance.estimated(
        HYBRID_BY, f"two-level demand profile: the peak for {profile.peak_hours} h of each {profile.window_hours} h "
                   "window, the rest spread evenly (the workload summary states no hourly profile)")
    demand_sources = [demand.provenance[name] for name in ("accepted_outputs", "peak_rate", "operating_hours")
                      if name in demand.provenance]

    def sources(*names: str) -> tuple[cost_model.Provenance, ...]:
        found = [item for result in used for name in names for item in result.row.provenance.get(name, ())]
        return tuple(dict.fromkeys(found))

    provenance = {name: sources(name) for name in ("gpu_cost", "storage_network", "platform_labor", "other_costs",
                                                     "failure_waste", "hourly_price", "notes")}
    provenance["gpu_cost"] = tuple(dict.fromkeys((*provenance["gpu_cost"], *demand_sources, assumed)))
    provenance["accepted_outputs"] = tuple(dict.fromkeys(demand_sources[:1]))
    provenance["effective_unit_cost"] = tuple(dict.fromkeys(
        item for name in ("gpu_cost", "storage_network", "platform_labor", "other_costs", "failure_waste",
                          "accepted_outputs") for item in provenance[name]))

    notes: list[HybridNote] = []
    if len(profile.blocks) == 2:
        notes.append(HybridNote("profile", {"peak": profile.blocks[0].load, "peak_hours": profile.peak_hours,
                                            "window": profile.window_hours, "base": profile.blocks[1].load}))
    for part in plan.parts:
        label = results[part.part].label
        if not part.used:
            notes.append(HybridNote("unused", {"label": label}))
        elif part.part == hybrid.RESERVED:
            notes.append(HybridNote("base", {"gpus": part.gpus, "label": label}))
        elif part.part == hybrid.ON_DEMAND:
            notes.append(HybridNote("burst", {"gpus": part.gpus, "label": label}))
        else:
            notes.append(HybridNote("overflow", {"outputs": part.outputs, "label": label}))
    figures = plan.break_even
    if figures.reserve_utilisation is not None:
        notes.append(HybridNote("reserve_break_even", {"hours": figures.reserve_hours,
                                                       "utilisation": figures.reserve_utilisation}))
    if figures.burst_outputs_per_hour is not None:
        notes.append(HybridNote("burst_break_even", {"outputs": figures.burst_outputs_per_hour}))
    if figures.base_outputs_vs_api is not None:
        notes.append(HybridNote("base_break_even", {"outputs": figures.base_outputs_vs_api}))
    unmeasured = [results[part.part].label for part in plan.unmeasured_parts]
    if unmeasured:
        notes.append(HybridNote("unmeasured", {"labels": ", ".join(unmeasured)}))
    cheapest = comparison.cheapest
    if cheapest is not None:
        saving = cheapest.row.effective_unit_cost - plan.effective_unit_cost
        notes.append(HybridNote("versus_cheapest", {"saving": saving, "label": cheapest.label}) if saving > 0
                     else HybridNote("not_cheaper", {"label": cheapest.label}))
    label = " + ".join(results[part.part].label for part in plan.used_parts)
    return HybridOption(plan=plan, parts=results, provenance=provenance, notes=notes, unmeasured=unmeasured,
                        currency=comparison.currency, label=label)
