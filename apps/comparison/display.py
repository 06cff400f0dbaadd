"""How the comparison page shows a comparison: provenance badges with their references and links, the row notes in
the active language, and the figures of each table row. Nothing here computes a cost."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.utils import formats
from django.utils.translation import gettext as _

from apps.common import money
from apps.common.provenance import ProvenanceKind
from apps.comparison import charts, cost_model
from apps.comparison.selectors import CandidateResult, Comparison, HybridNote, HybridOption
from apps.evidence.display import SOURCE_LABELS, Badge, input_badge, reference_url
from apps.evidence.models import FigureMetric


def _describe(item: cost_model.Provenance) -> str:
    if item.kind is ProvenanceKind.ESTIMATED:
        return f"{item.by}: {item.why}"
    return item.reference


def badges(sources: tuple[cost_model.Provenance, ...] | list[cost_model.Provenance], quote_url: str) -> list[Badge]:
    """One badge per kind of source (measured, quoted, estimated), its title listing every reference."""
    grouped: dict[str, list[cost_model.Provenance]] = {}
    for item in sources:
        grouped.setdefault(str(item.kind), []).append(item)
    result = []
    for kind in ProvenanceKind:
        items = grouped.get(kind)
        if not items:
            continue
        url = next((found for found in (reference_url(item.reference, quote_url) for item in items if item.reference)
                    if found), "")
        result.append(Badge(str(kind), str(SOURCE_LABELS[kind]), "; ".join(dict.fromkeys(map(_describe, items))), url))
    return result


def _show(value: Decimal) -> str:
    return formats.number_format(value, use_l10n=True, force_grouping=True)


def _number(value) -> str:
    """A quantity in a sentence, by money.py's rule: six significant digits, integer digits kept (730.000…1 → 730)."""
    if isinstance(value, Decimal):
        return _show(money.round_quantity(value))
    return str(value)


def _money(amount: Decimal, currency: str) -> str:
    try:
        return _show(money.round_figure(amount, money.FigureKind.MONEY, currency))
    except money.MoneyError:
        return _number(amount)


def _percent(value) -> str:
    return _show(money.percent(value)) + " %"


def note_text(note: cost_model.Note, currency: str) -> str:
    """A row note in the active language (the pure module keeps notes as codes with parameters)."""
    params = note.params
    code = note.code
    if code == "quality_acceptance":
        return _("quality acceptance %(value)s") % {"value": _number(params["value"])}
    if code == "p95_latency":
        verdict = _("meets") if params["verdict"] == "meets" else _("misses")
        return _("p95 latency %(measured)s ms against a %(target)s ms target: %(verdict)s") % {
            "measured": _number(params["measured_ms"]), "target": _number(params["target_ms"]), "verdict": verdict}
    if code == "p95_latency_unmeasured":
        return _("p95 latency not measured")
    if code == "p95_latency_no_target":
        return _("p95 latency %(measured)s ms (the workload states no target)") % {
            "measured": _number(params["measured_ms"])}
    if code == "memory_margin":
        return _("memory margin %(value)s of the device memory") % {"value": _percent(params["value"])}
    if code == "idle_share":
        return _("idle capacity is %(share)s of the GPU cost") % {"share": _percent(params["share"])}
    if code == "sized_by":
        if params["basis"] == "memory":
            return _("sized by the memory layout: %(gpus)s GPUs on %(nodes)s nodes") % {
                "gpus": params["gpus"], "nodes": params["nodes"]}
        basis = _("peak") if params["basis"] == "peak" else _("volume")
        return _("sized by the %(basis)s rate: %(gpus)s GPUs on %(nodes)s nodes") % {
            "basis": basis, "gpus": params["gpus"], "nodes": params["nodes"]}
    if code == "memory_floor":
        return _("the memory layout needs at least %(gpus)s GPUs to hold the peak sessions at once") % {
            "gpus": params["minimum_gpus"]}
    if code == "granularity":
        return _("%(billed)s billed hours per GPU for %(operating)s operating hours (billing granularity)") % {
            "billed": _number(params["billed_hours"]), "operating": _number(params["operating_hours"])}
    if code == "overage":
        return _("%(hours)s hours per GPU beyond the commitment, at the overage price") % {
            "hours": _number(params["hours"])}
    if code == "minimum_commitment":
        return _("the minimum commitment adds %(amount)s %(currency)s (counted as idle)") % {
            "amount": _money(params["amount"], currency), "currency": currency}
    if code == "rate_not_given":
        field = _("retry rate") if params["field"] == "retry_rate" else _("failure rate")
        return _("%(field)s not given: counted as 0") % {"field": field}
    if code == "derived_hourly_price":
        return _("hourly price derived from the owned cost per GPU-hour")
    if code == "idle_power_not_counted":
        return _("power outside the %(hours)s operating hours is not counted") % {
            "hours": _number(params["operating_hours"])}
    if code == "currency_converted":
        return _("converted from %(source)s at %(rate)s %(target)s per %(source)s") % {
            "source": params["source"], "target": params["target"], "rate": _number(params["rate"])}
    if code == "billed_by_use":
        return _("%(billed)s billed hours per GPU: the %(busy)s hours the work takes on %(gpus)s GPUs, of the "
                 "%(operating)s hours available") % {
            "billed": _number(params["billed_hours"]), "busy": _number(params["busy_hours"]), "gpus": params["gpus"],
            "operating": _number(params["operating_hours"])}
    if code == "converted_units":
        return _("%(factor)s %(want)s per %(have)s (%(source)s)") % {
            "factor": _number(params["factor"]), "want": params["want"], "have": params["have"],
            "source": params["source"]}
    if code == "retries_in_gpu_time":
        return _("retries and failed attempts use %(share)s of the billed GPU time, shown once as waste") % {
            "share": _percent(params["share"])}
    if code == "paid_requests":
        return _("%(paid)s paid requests for %(generated)s generated outputs") % {
            "paid": _number(params["paid"]), "generated": _number(params["generated"])}
    return note.text


FIGURES = ("gpu_cost", "storage_network", "platform_labor", "other_costs", "failure_waste", "accepted_outputs",
           "effective_unit_cost", "hourly_price", "notes")


@dataclass
class TableRow:
    result: CandidateResult
    badges: dict[str, list[Badge]]
    notes: list[str]
    input_badges: dict[str, Badge]
    is_cheapest: bool
    is_lowest_hourly: bool
    is_chosen: bool

    @property
    def row(self) -> cost_model.Row:
        return self.result.row

    @property
    def candidate(self):
        return self.result.candidate

    @property
    def p95(self) -> Decimal | None:
        return self.result.value(FigureMetric.P95_LATENCY_MS)

    @property
    def memory_margin(self) -> Decimal | None:
        return self.result.value(FigureMetric.MEMORY_MARGIN)


def table_rows(comparison: Comparison) -> list[TableRow]:
    cheapest, lowest = comparison.cheapest, comparison.lowest_hourly
    rows = []
    for result in comparison.rows:
        quote_url = result.candidate.quote.get_absolute_url()
        rows.append(TableRow(
            result=result,
            badges={name: badges(result.row.provenance.get(name, ()), quote_url) for name in FIGURES},
            notes=[*([_("one %(unit)s answered in %(hours)s hours on this fleet") % {
                "unit": comparison.unit_label, "hours": _number(result.row.time_to_answer_hours)}]
                     if comparison.shows_time_to_answer and result.row.time_to_answer_hours is not None else []),
                   *(note_text(note, comparison.currency) for note in result.row.notes)],
            input_badges={metric: input_badge(item, quote_url) for metric, item in result.inputs.items()},
            is_cheapest=result is cheapest,
            is_lowest_hourly=result is lowest,
            is_chosen=comparison.chosen_id == result.id,
        ))
    return rows


TRAINING_FIGURES = ("gpu_compute", "checkpointing", "failed_run_waste", "cost_lines", "cost_per_completed_run")


@dataclass
class TrainingTableRow:
    result: CandidateResult
    badges: dict[str, list[Badge]]
    input_badges: dict[str, Badge]
    is_cheapest: bool
    is_lowest_hourly: bool
    is_chosen: bool

    @property
    def row(self) -> cost_model.TrainingRow:
        return self.result.training_row

    @property
    def candidate(self):
        return self.result.candidate

    @property
    def storage_network(self) -> Decimal:
        return self.row.storage + self.row.network


def training_table_rows(comparison: Comparison) -> list[TrainingTableRow]:
    cheapest, lowest = comparison.cheapest, comparison.lowest_hourly
    rows = []
    for result in comparison.training_rows:
        quote_url = result.candidate.quote.get_absolute_url()
        rows.append(TrainingTableRow(
            result=result,
            badges={name: badges(result.training_row.provenance.get(name, ()), quote_url)
                    for name in TRAINING_FIGURES},
            input_badges={metric: input_badge(item, quote_url) for metric, item in result.inputs.items()},
            is_cheapest=result is cheapest,
            is_lowest_hourly=result is lowest,
            is_chosen=comparison.chosen_id == result.id,
        ))
    return rows


def hybrid_note_text(note: HybridNote, currency: str) -> str:
    """A note of the hybrid row in the active language."""
    params = note.params
    code = note.code
    if code == "profile":
        return _("demand profile assumed: the peak of %(peak)s per hour for %(hours)s h of each %(window)s h window, "
                 "%(base)s per hour the other hours (the workload states no hourly profile)") % {
            "peak": _number(params["peak"]), "hours": _number(params["peak_hours"]),
            "window": _number(params["window"]), "base": _number(params["base"])}
    if code == "base":
        return _("base: %(gpus)s GPUs of %(label)s, paid every hour") % params
    if code == "burst":
        return _("burst: up to %(gpus)s GPUs of %(label)s on demand, paid per used hour") % params
    if code == "overflow":
        return _("overflow: %(outputs)s accepted outputs per period to %(label)s") % {
            "outputs": _number(params["outputs"]), "label": params["label"]}
    if code == "unused":
        return _("%(label)s is not used: the mix is cheaper without it") % params
    if code == "reserve_break_even":
        return _("reserving beats on demand for load needed more than %(hours)s hours a period (the break-even "
                 "utilisation: %(share)s of the operating hours)") % {
            "hours": _number(params["hours"]), "share": _percent(params["utilisation"])}
    if code == "burst_break_even":
        return _("a burst GPU-hour beats the API above %(outputs)s accepted outputs") % {
            "outputs": _number(params["outputs"])}
    if code == "base_break_even":
        return _("a base unit beats the API above %(outputs)s accepted outputs a period") % {
            "outputs": _number(params["outputs"])}
    if code == "unmeasured":
        return _("uses an unmeasured part: %(labels)s (capacity not measured by a benchmark)") % params
    if code == "versus_cheapest":
        return _("%(saving)s %(currency)s per accepted output below the cheapest single candidate (%(label)s)") % {
            "saving": _show(money.round_figure(params["saving"], money.FigureKind.UNIT_COST, currency)),
            "currency": currency, "label": params["label"]}
    if code == "not_cheaper":
        return _("no cheaper than the cheapest single candidate (%(label)s)") % params
    return note.text


HYBRID_FIGURES = ("gpu_cost", "storage_network", "platform_labor", "other_costs", "failure_waste",
                  "accepted_outputs", "effective_unit_cost")


@dataclass
class HybridTableRow:
    """The hybrid row of the table: the mix's figures, its badges and its notes in the active language."""

    option: HybridOption
    badges: dict[str, list[Badge]]
    notes: list[str]

    @property
    def plan(self):
        return self.option.plan


def hybrid_row(comparison: Comparison) -> HybridTableRow | None:
    option = comparison.hybrid
    if option is None:
        return None
    # Each source links to its own candidate's quote: the badges of each part's sources, merged by kind.
    owners = {item: result.candidate.quote.get_absolute_url() for result in option.used_results
              for items in result.row.provenance.values() for item in items}

    def merged(name: str) -> list[Badge]:
        by_kind: dict[str, list[Badge]] = {}
        for item in option.provenance.get(name, ()):
            by_kind.setdefault(str(item.kind), []).extend(badges((item,), owners.get(item, "")))
        return [Badge(found[0].kind, found[0].label, "; ".join(dict.fromkeys(badge.title for badge in found)),
                      next((badge.url for badge in found if badge.url), ""))
                for kind in ProvenanceKind if (found := by_kind.get(kind))]

    return HybridTableRow(
        option=option,
        badges={name: merged(name) for name in HYBRID_FIGURES},
        notes=[hybrid_note_text(note, comparison.currency) for note in option.notes],
    )


def chart_titles() -> dict[str, str]:
    """What each chart shows, and what it needs when it cannot be drawn yet."""
    return {
        "cost-breakdown": _("No candidate could be normalised yet."),
        "latency": _("No latency percentile entered yet: add p50/p95/p99 latency as phase-4 inputs."),
        "memory-headroom": _("Neither a memory estimate for the candidates' GPUs nor a measured memory margin yet."),
        "cost-vs-p99": _("No p99 latency entered yet: add it as a phase-4 input."),
        "sensitivity": _("No candidate to test the sensitivity of."),
        "break-even-reserve": _("Needs a reserved and an on-demand candidate."),
        "break-even-buy": _("Needs a purchase option and a GPU rental candidate."),
        "break-even-api": _("Needs a model/API route and a self-hosted candidate."),
        "hybrid-hours": _("Needs two of a reserved or bought candidate, an on-demand candidate and an API route, "
                          "for a workload with a peak to serve."),
    }


def chart_captions() -> dict[str, str]:
    """A one-line caption under the charts that have one."""
    return {
        "hybrid-hours": _("Which part of the cheapest mix serves each hour of a representative day: the reserved "
                          "base, on-demand burst, then the API route for the overflow."),
    }


def chart_list(comparison: Comparison) -> list[dict]:
    missing = chart_titles()
    if comparison.is_training:
        inference_only = _("Computed for inference and media workloads, which are compared per accepted output.")
        for chart_id in ("sensitivity", "break-even-reserve", "break-even-buy", "break-even-api", "hybrid-hours"):
            missing[chart_id] = inference_only
    captions = chart_captions()
    return [{"id": chart_id, "element_id": f"{chart_id}-data", "figure": figure, "missing": missing[chart_id],
             "caption": captions.get(chart_id, "")}
            for chart_id, figure in charts.all_charts(comparison).items()]
