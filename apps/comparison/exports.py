"""Exports of a comparison: JSON data (the API's answer), CSV, and an XLSX workbook for finance whose formulas
recompute the fleet, the GPU cost, the waste, the total and the effective unit cost from raw, unrounded input cells.

The workbook reproduces `normalize()` cell by cell (the conventions are in that module's docstring): change a price,
a capacity or the demand in a spreadsheet and the effective unit cost follows. A spreadsheet computes in binary
floating point, so it agrees with Dossier's exact figures to about 15 significant digits, not all 34. Each formula
cell also stores the value Dossier computed (its cached value), so a viewer that does not recalculate shows the
figures, not blanks or zeros.

Every figure is written by apps/common/money.py's one rule: the JSON and the CSV carry exact figures
(`money.exact`: plain notation, never `0E-30`), the JSON adds a `display` object per row with the figures as shown
(`money.shown`: money to the currency's minor unit, unit costs to six significant digits, quantities to six
significant digits). Database ids are ints everywhere in the JSON.
"""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import re
import zipfile
from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from apps.common import money, spreadsheet
from apps.comparison import cost_model
from apps.comparison.selectors import HYBRID_ID, CandidateResult, Comparison, HybridOption
from apps.evidence.models import FigureMetric
from apps.quotes.kinds import BillingModel

# ---------------------------------------------------------------------------------------------------------------
# JSON

QUANTITY = money.FigureKind.QUANTITY


def _plain(value: Any) -> Any:
    """A Decimal as its exact string (apps/common/money.exact: plain, never 0E-30); anything else as it is."""
    if isinstance(value, Decimal):
        return money.exact(value)
    return value


def _id(value: Any) -> int | None:
    """A database id as the JSON's one id type: an int (the pure modules carry ids as strings)."""
    return None if value is None or value == "" else int(value)


def _exact_figures(data: dict) -> dict:
    """Every Decimal of a dict (nested mappings included) as its exact string; enums as their value."""
    return {key: _exact_figures(dict(value)) if isinstance(value, Mapping) else
            str(value) if isinstance(value, StrEnum) else _plain(value) for key, value in data.items()}


def _display_figures(data: dict, currency: str, kind: money.FigureKind | None = None) -> dict:
    """Every Decimal of a dict as it is shown (money.shown), by each figure's kind: named by its key, or `kind` for
    the parts of a figure (a GPU cost's parts are money, whatever they are called). A figure that is not there
    (None: an API route's hourly price) is null; values that are not figures (ints, text) are left out."""
    shown = {}
    for key, value in data.items():
        this_kind = kind or money.figure_kind(key)
        if isinstance(value, Mapping):
            shown[key] = _display_figures(dict(value), currency, this_kind)
        elif isinstance(value, Decimal) or value is None:
            shown[key] = money.shown(value, this_kind, currency)
    return shown


class _ShownParam:
    """A note parameter in the English note text: shown by the rule with `{name}`, formatted as asked otherwise
    (`{share:.1%}`)."""

    def __init__(self, name: str, value: Decimal, currency: str):
        self.name, self.value, self.currency = name, value, currency

    def __format__(self, spec: str) -> str:
        if spec:
            return format(self.value, spec)
        kind = money.FigureKind.MONEY if self.name == "amount" else money.figure_kind(self.name)
        return money.shown(self.value, kind, self.currency) or ""


def note_text(note: cost_model.Note, currency: str) -> str:
    """A row note in English with its figures shown by the rule (never 2.00000E+7 or 730.000…1)."""
    params = {name: _ShownParam(name, value, currency) if isinstance(value, Decimal) else value
              for name, value in note.params.items()}
    return cost_model.NOTE_TEXTS[note.code].format(**params)


def _figure_fields(row: Any) -> dict:
    """The figures of a row dataclass (cost_model.Row or TrainingRow) by name, whatever fields it gains."""
    return {item.name: getattr(row, item.name) for item in dataclasses.fields(row)
            if item.name not in ("notes", "provenance")}


def row_data(row: cost_model.Row) -> dict:
    """A row JSON-ready: each figure exact (a string), `display` with the figures as shown, ids as ints."""
    figures = _figure_fields(row)
    data = _exact_figures(figures)
    data["candidate_id"] = _id(row.candidate_id)
    data["display"] = _display_figures(figures, row.currency)
    data["notes"] = [{"code": note.code, "params": _exact_figures(dict(note.params)),
                      "text": note_text(note, row.currency)} for note in row.notes]
    data["provenance"] = {name: [item.to_dict() for item in items] for name, items in row.provenance.items()}
    return data


def result_data(result: CandidateResult) -> dict:
    candidate = result.candidate
    currency = (result.row.currency if result.row is not None
                else result.training_row.currency if result.training_row is not None else None)
    data = {
        "candidate_id": candidate.pk,
        "label": candidate.label,
        "kind": str(candidate.kind),
        "quote_id": candidate.quote_id,
        "vendor": candidate.quote.vendor.name,
        "inputs": [
            {
                "metric": item.metric,
                "value": _plain(item.value),
                "capacity_unit": item.capacity_unit,
                "source": item.source,
                "reference": item.reference,
                "estimated_by": item.estimated_by,
                "estimate_reason": item.estimate_reason,
            }
            for item in sorted(result.inputs.values(), key=lambda item: item.metric)
        ],
        "predicted_memory_margin": _plain(result.predicted_memory_margin),
        "warnings": list(result.warnings),
        "row": row_data(result.row) if result.row is not None else None,
        "training_row": training_row_data(result.training_row) if result.training_row is not None else None,
        "training_hourly_price": _plain(result.training_hourly_price),
        "error": _problem_data(result.problem) if result.problem is not None else None,
        # A rehearsal (a CPU or the built-in mock) is shown with its figures, never as a GPU measurement.
        "rehearsals": [{**item, "value": money.exact(item["value"]), "label": "rehearsal — not a GPU measurement"}
                       for item in result.rehearsals],
        "waivers": [dict(item) for item in result.waivers],
    }
    data["display"] = {
        "predicted_memory_margin": money.shown(result.predicted_memory_margin, money.FigureKind.QUANTITY),
        "training_hourly_price": money.shown(result.training_hourly_price, money.FigureKind.UNIT_COST, currency),
    }
    return data


def training_row_data(row: cost_model.TrainingRow) -> dict:
    figures = _figure_fields(row)
    data = _exact_figures(figures)
    data["run_id"] = _id(row.run_id)
    data["display"] = _display_figures(figures, row.currency)
    data["provenance"] = {name: [source.to_dict() for source in sources] for name, sources in row.provenance.items()}
    return data


def _problem_data(problem) -> dict:
    return {**problem.to_dict(), "candidate_id": _id(problem.candidate_id)}


def hybrid_data(option: HybridOption | None) -> dict | None:
    """The hybrid row JSON-ready: the mix's figures (exact) with `display`, its parts (with the candidate ids they come
    from), the profile, which part serves each block of it, the break-even points, notes and provenance."""
    if option is None:
        return None
    plan = option.plan
    currency = option.currency
    figures = {name: getattr(plan, name) for name in (
        "billed_compute", "gpu_cost", "productive_capacity", "idle_capacity", "failure_waste", "storage_network",
        "platform_labor", "other_costs", "total_cost", "accepted_outputs", "effective_unit_cost", "api_outputs")}
    break_even = dataclasses.asdict(plan.break_even)
    profile = plan.profile
    return {
        "id": HYBRID_ID,
        "label": option.label,
        "currency": currency,
        **_exact_figures(figures),
        "base_gpus": plan.base_gpus,
        "burst_gpus": plan.burst_gpus,
        "display": _display_figures(figures, currency),
        "parts": [
            {"part": part.part, "candidate_id": _id(part.id), "label": part.label, "used": part.used,
             "units": part.units, "gpus": part.gpus, "capacity_measured": part.capacity_measured,
             **_exact_figures({"outputs": part.outputs, "billed": part.billed, "waste": part.waste,
                               **{name: part.fixed_costs.get(name, Decimal(0)) if part.used else Decimal(0)
                                  for name in ("storage_network", "platform_labor", "other_costs")}})}
            for part in plan.parts
        ],
        "unmeasured_parts": list(option.unmeasured),
        "profile": {"shape": profile.shape, **_exact_figures({
            "windows": profile.windows, "window_hours": profile.window_hours, "peak_hours": profile.peak_hours,
            "peak": profile.peak, "mean": profile.mean})},
        "blocks": [_exact_figures(dataclasses.asdict(block)) for block in plan.blocks],
        "break_even": {**_exact_figures(break_even), "display": _display_figures(break_even, currency, QUANTITY)},
        "notes": [{"code": note.code, "params": _exact_figures(dict(note.params)), "text": note.text}
                  for note in option.notes],
        "provenance": {name: [item.to_dict() for item in items] for name, items in option.provenance.items()},
    }


def comparison_data(comparison: Comparison) -> dict:
    """Everything the page shows, JSON-ready: exact decimals as strings, every figure with its provenance."""
    summary = comparison.summary
    demand = comparison.demand
    cheapest, lowest_hourly = comparison.cheapest, comparison.lowest_hourly
    break_even = comparison.break_even
    return {
        "workload_summary": {"id": summary.pk, "name": summary.name, "version": summary.version},
        "currency": comparison.currency,
        "demand": None if demand is None else {
            "accepted_outputs": _plain(demand.accepted_outputs),
            "period_hours": _plain(demand.period_hours),
            "peak_rate": _plain(demand.peak_rate),
            "operating_hours": _plain(demand.operating_hours),
            "mode": str(demand.mode),
            "quality_acceptance": _plain(demand.quality_acceptance),
            "runs_per_period": demand.runs_per_period,
            "p95_latency_target_ms": _plain(demand.p95_latency_target_ms),
            "provenance": {name: item.to_dict() for name, item in demand.provenance.items()},
        },
        "training": None if comparison.training is None else {
            "token_budget": _plain(comparison.training.token_budget),
            "checkpoint_interval_hours": _plain(comparison.training.checkpoint_interval_hours),
            "failures_per_gpu_hour": _plain(comparison.training.failures_per_gpu_hour),
            "provenance": {name: item.to_dict() for name, item in comparison.training.provenance.items()},
        },
        "exchange_rates": [
            {"currency": rate.currency, "rate": _plain(rate.rate), "provenance": rate.provenance.to_dict()}
            for rate in comparison.exchange_rates
        ],
        "candidates": [result_data(result) for result in comparison.results],
        "errors": [_problem_data(problem) for problem in comparison.problems],
        "cheapest_per_accepted_output": cheapest.candidate.pk if cheapest else None,
        "lowest_hourly_price": lowest_hourly.candidate.pk if lowest_hourly else None,
        "chosen": _id(comparison.chosen_id),
        "mistakes": [
            {
                "code": rule.rule.code,
                "number": rule.rule.number,
                "title": rule.title,
                "explanation": rule.explanation,
                "raised": rule.raised,
                "findings": [
                    {
                        "reason": view.finding.reason,
                        "candidate_id": _id(view.finding.candidate_id),
                        "severity": view.finding.severity,
                        "message": view.message,
                    }
                    for view in rule.findings
                ],
            }
            for rule in comparison.rules
        ],
        "sensitivity": {
            "candidate_id": comparison.focus.candidate.pk if comparison.focus else None,
            "bars": [
                {"factor": bar.factor, "low": _plain(bar.low), "high": _plain(bar.high), "base": _plain(bar.base),
                 "display": {name: money.shown(getattr(bar, name), money.FigureKind.UNIT_COST, comparison.currency)
                             for name in ("low", "high", "base")}}
                for bar in comparison.sensitivity
            ],
        },
        "break_even": {
            "reserve_vs_on_demand_utilisation": _plain(break_even.reserve_utilisation),
            "buy_vs_rent_months": _plain(break_even.buy_months),
            "buy_never_pays": break_even.buy_never_pays,
            "api_vs_self_host_tokens_per_month": _plain(break_even.api_tokens_per_month),
            "display": {
                "reserve_vs_on_demand_utilisation": money.shown(break_even.reserve_utilisation, QUANTITY),
                "buy_vs_rent_months": money.shown(break_even.buy_months, QUANTITY),
                "api_vs_self_host_tokens_per_month": money.shown(break_even.api_tokens_per_month, QUANTITY),
            },
        },
        "hybrid": hybrid_data(comparison.hybrid),
        "hybrid_problem": comparison.hybrid_problem,
    }


# ---------------------------------------------------------------------------------------------------------------
# CSV

CSV_HEADERS = (
    "candidate_id", "label", "kind", "commercial_model", "currency", "gpus", "nodes", "billed_hours_per_gpu",
    "gpu_cost", "productive_capacity", "idle_capacity", "storage_network", "platform_labor", "other_costs",
    "retry_waste", "failure_loss", "preemption_rework", "failure_waste", "total_cost", "generated_outputs",
    "accepted_outputs", "effective_unit_cost", "hourly_price", "quality_acceptance", "p95_latency_ms",
    "p99_latency_ms", "memory_margin", "predicted_memory_margin", "notes", "provenance", "error_field", "error",
    "unit", "billed_compute", "time_to_answer_hours", "rehearsals",
)


def _provenance_text(row: cost_model.Row) -> str:
    items = []
    for name, sources in row.provenance.items():
        for source in sources:
            detail = source.reference or f"{source.by}: {source.why}"
            items.append(f"{name}={source.kind}({detail})")
    return "; ".join(items)


TRAINING_CSV_HEADERS = (
    "candidate_id", "label", "kind", "currency", "gpus", "price_per_gpu_hour", "compute_hours", "checkpoints",
    "checkpoint_hours", "expected_failures", "failed_run_waste_hours", "wall_clock_hours", "gpu_hours",
    "gpu_compute", "checkpointing", "failed_run_waste", "storage", "network", "platform_labor", "other_costs",
    "cost_per_completed_run", "error_field", "error", "acceptance", "unit", "cost_per_accepted_output", "rehearsals",
)


def _rehearsals_text(result: CandidateResult) -> str:
    """A rehearsal's figures in one cell, labelled: they are never a GPU measurement."""
    return " | ".join(f"rehearsal — not a GPU measurement: {item['metric']} = {money.exact(item['value'])} "
                      f"(job {item['job_id']})" for item in result.rehearsals)


def _training_csv(comparison: Comparison) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(TRAINING_CSV_HEADERS)
    for result in comparison.results:
        head = [result.candidate.pk, result.label, str(result.candidate.kind)]
        row, run = result.training_row, result.training_run
        if row is None:
            problem = result.problem
            writer.writerow(spreadsheet.safe_row([
                *head, *[""] * (len(TRAINING_CSV_HEADERS) - 9), problem.field if problem else "",
                problem.text if problem else "", "", "", "", _rehearsals_text(result)]))
            continue
        writer.writerow([spreadsheet.safe_cell(_plain(value)) for value in [
            *head, row.currency, run.gpus, result.training_hourly_price, row.compute_hours, row.checkpoints,
            row.checkpoint_hours, row.expected_failures, row.failed_run_waste_hours, row.wall_clock_hours,
            row.gpu_hours, row.gpu_compute, row.checkpointing, row.failed_run_waste, row.storage, row.network,
            row.platform_labor, row.other_costs, row.cost_per_completed_run, "", "", row.acceptance, row.unit,
            row.cost_per_accepted_output, _rehearsals_text(result),
        ]])
    return buffer.getvalue()


def comparison_csv(comparison: Comparison) -> str:
    """One line per candidate, every figure exact and unrounded as money.exact() writes it (plain, never 0E-30);
    the notes show their figures by the rule. A candidate stopped by a bad input carries its error instead."""
    if comparison.is_training:
        return _training_csv(comparison)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_HEADERS)
    for result in comparison.results:
        row = result.row
        measured = [result.value(metric) for metric in (FigureMetric.P95_LATENCY_MS, FigureMetric.P99_LATENCY_MS,
                                                         FigureMetric.MEMORY_MARGIN)]
        head = [result.candidate.pk, result.label, str(result.candidate.kind)]
        if row is None:
            problem = result.problem
            writer.writerow(spreadsheet.safe_row([
                *head, *[""] * (len(CSV_HEADERS) - 9), problem.field if problem else "",
                problem.text if problem else "", "", "", "", _rehearsals_text(result)]))
            continue
        writer.writerow([spreadsheet.safe_cell(_plain(value)) for value in [
            *head, str(row.commercial_model), row.currency, row.gpus, row.nodes, row.billed_hours_per_gpu,
            row.gpu_cost, row.productive_capacity, row.idle_capacity, row.storage_network, row.platform_labor,
            row.other_costs, row.retry_waste, row.failure_loss, row.preemption_rework, row.failure_waste,
            row.total_cost, row.generated_outputs, row.accepted_outputs, row.effective_unit_cost,
            row.hourly_price, row.quality_acceptance, *measured,
            result.predicted_memory_margin, " | ".join(note_text(note, row.currency) for note in row.notes),
            _provenance_text(row), "", "", row.unit, row.billed_compute, row.time_to_answer_hours,
            _rehearsals_text(result),
        ]])
    if comparison.hybrid is not None:
        writer.writerow(_hybrid_csv_line(comparison.hybrid))
    return buffer.getvalue()


def _hybrid_csv_line(option: HybridOption) -> list:
    """The hybrid row's line: `candidate_id` "hybrid", kind "hybrid", commercial model "mix"; its GPUs the base and the
    most burst GPUs; the columns a mix has no figure for are empty."""
    plan = option.plan
    values = {
        "candidate_id": HYBRID_ID, "label": option.label, "kind": "hybrid", "commercial_model": "mix",
        "currency": option.currency, "gpus": plan.base_gpus + plan.burst_gpus, "gpu_cost": plan.gpu_cost,
        "productive_capacity": plan.productive_capacity, "idle_capacity": plan.idle_capacity,
        "storage_network": plan.storage_network, "platform_labor": plan.platform_labor,
        "other_costs": plan.other_costs, "failure_waste": plan.failure_waste, "total_cost": plan.total_cost,
        "accepted_outputs": plan.accepted_outputs, "effective_unit_cost": plan.effective_unit_cost,
        "notes": " | ".join(note.text for note in option.notes),
        "provenance": "; ".join(f"{name}={item.kind}({item.reference or f'{item.by}: {item.why}'})"
                                for name, items in option.provenance.items() for item in items),
        "billed_compute": plan.billed_compute,
    }
    return [spreadsheet.safe_cell(_plain(values.get(header, ""))) for header in CSV_HEADERS]


# ---------------------------------------------------------------------------------------------------------------
# XLSX with live formulas

WORKLOAD_SHEET = "Workload"
LINES_SHEET = "Cost lines"
TABLE_SHEET = "Comparison"

# Workload sheet: (row, label, attribute of the Demand)
WORKLOAD_CELLS = (
    (2, "accepted outputs per period", "accepted_outputs"),
    (3, "period hours", "period_hours"),
    (4, "operating hours per period", "operating_hours"),
    (5, "peak rate (requests/s)", "peak_rate"),
    (6, "quality acceptance (workload)", "quality_acceptance"),
    (7, "runs per period", "runs_per_period"),
    (8, "billed by use (1: the hours the work takes; 0: the operating hours)", "billed_by_use"),
)
ACCEPTED = f"{WORKLOAD_SHEET}!$B$2"
PERIOD = f"{WORKLOAD_SHEET}!$B$3"
OPERATING = f"{WORKLOAD_SHEET}!$B$4"
PEAK = f"{WORKLOAD_SHEET}!$B$5"
WORKLOAD_ACCEPTANCE = f"{WORKLOAD_SHEET}!$B$6"
RUNS = f"{WORKLOAD_SHEET}!$B$7"
BY_USE = f"{WORKLOAD_SHEET}!$B$8"

#: The raw input columns of the comparison sheet: (key, header, CandidateInput attribute or a callable).
INPUT_COLUMNS = (
    ("id", "candidate id", "id"),
    ("label", "candidate", "label"),
    ("model", "commercial model", "commercial_model"),
    ("currency", "currency", "currency"),
    ("rate", "exchange rate to the reporting currency", None),
    ("unit_price", "price per price unit", "unit_price"),
    ("price_unit", "price unit", "price_unit"),
    ("gpn", "GPUs per node", "gpus_per_node"),
    ("gpr", "GPUs per replica", "gpus_per_replica"),
    ("min_gpus", "minimum GPUs for memory (memory layout)", "minimum_gpus_for_memory"),
    ("capacity", "capacity at SLO per GPU (capacity units/s)", "capacity_at_slo_per_gpu"),
    ("to_capacity", "capacity units per demand unit (conversion)", "to_capacity"),
    ("peak_to_capacity", "capacity units per peak request (conversion)", "peak_to_capacity"),
    ("to_requests", "requests per demand unit (API conversion)", "to_requests"),
    ("headroom", "headroom", "headroom"),
    ("committed", "committed hours per period", "committed_hours"),
    ("overage_price", "overage price", "overage_price"),
    ("granularity", "billing granularity (hours)", "billing_granularity_hours"),
    ("min_billed", "minimum charge per run (hours)", "minimum_billed_hours"),
    ("minimum", "minimum commitment per period", "minimum_commitment"),
    ("preemptions", "spot preemptions per GPU-hour", "spot_preemptions_per_hour"),
    ("rework", "rework hours per preemption", "spot_rework_hours"),
    ("capex", "capex per node", "capex_per_node"),
    ("amortisation", "amortisation months", "amortisation_months"),
    ("power", "power per node (kW)", "power_kw_per_node"),
    ("pue", "PUE", "pue"),
    ("energy", "energy price per kWh", "energy_price_per_kwh"),
    ("colocation", "colocation per kW-month", "colocation_per_kw_month"),
    ("maintenance", "maintenance per node-year", "maintenance_per_node_year"),
    ("input_price", "API input price per 1M tokens", "api_input_price_per_million"),
    ("output_price", "API output price per 1M tokens", "api_output_price_per_million"),
    ("input_tokens", "mean input tokens", "mean_input_tokens"),
    ("output_tokens", "mean output tokens", "mean_output_tokens"),
    ("retry", "retry rate", "retry_rate"),
    ("failure", "failure rate", "failure_rate"),
    ("acceptance", "quality acceptance (candidate; empty: the workload's)", "quality_acceptance"),
)
FORMULA_COLUMNS = (
    ("accept", "quality acceptance used"),
    ("generated", "generated outputs"),
    ("storage_network", "storage/network"),
    ("platform_labor", "platform labor"),
    ("other_costs", "other costs"),
    ("work", "work incl. retries (capacity units)"),
    ("required_rate", "required rate (capacity units/s)"),
    ("gpus", "GPUs"),
    ("nodes", "nodes"),
    ("needed_hours", "hours the fleet must run"),
    ("billed_hours", "billed hours per GPU"),
    ("overage_hours", "overage hours"),
    ("per_request", "API price per request"),
    ("base_cost", "GPU cost before minimum commitment"),
    ("billed", "compute billed"),
    ("busy_cost", "billed cost of the busy time"),
    ("gpu_cost", "GPU cost"),
    ("productive", "productive capacity"),
    ("idle", "idle capacity"),
    ("retry_waste", "retry waste"),
    ("failure_loss", "failure loss"),
    ("preemption_rework", "preemption rework"),
    ("failure_waste", "failure waste"),
    ("total", "total cost (reporting currency)"),
    ("unit_cost", "effective unit cost"),
    ("hourly", "hourly price per GPU (reporting currency)"),
    ("dossier", "effective unit cost computed by Dossier (exact)"),
)
COLUMN = {
    key: get_column_letter(index)
    for index, key in enumerate([key for key, *_rest in INPUT_COLUMNS] + [key for key, _h in FORMULA_COLUMNS], 1)
}


def _cell_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)  # a flag the formulas compare with 1 (Excel's TRUE is not equal to 1)
    if isinstance(value, Decimal | int):
        return value
    return spreadsheet.safe_text(str(value))  # a label's `=…` is text, never a formula


def _formulas(model: BillingModel, r: int) -> dict[str, str]:
    """The formula of each computed column for one candidate row (`r`), by its commercial model."""

    def c(key: str) -> str:
        return f"{COLUMN[key]}{r}"

    def lines(column: str) -> str:
        return (f"SUMIFS('{LINES_SHEET}'!$I:$I,'{LINES_SHEET}'!$A:$A,{c('id')},"
                f"'{LINES_SHEET}'!$C:$C,\"{column}\")")

    formulas = {
        "accept": f"=IF(ISBLANK({c('acceptance')}),{WORKLOAD_ACCEPTANCE},{c('acceptance')})",
        "generated": f"={ACCEPTED}/{c('accept')}",
        "storage_network": "=" + lines("storage_network"),
        "platform_labor": "=" + lines("platform_labor"),
        "other_costs": "=" + lines("other_costs"),
        "preemption_rework": "=0",
    }
    if model is BillingModel.API:
        requests = f"{c('generated')}*{c('to_requests')}"
        formulas.update({
            "per_request": f"=({c('input_tokens')}*{c('input_price')}+{c('output_tokens')}*{c('output_price')})"
                           "/1000000",
            "base_cost": f"={requests}*{c('per_request')}",
            "billed": f"=MAX({c('base_cost')},{c('minimum')})",
            "gpu_cost": f"={c('billed')}",
            "productive": f"={c('base_cost')}",
            "retry_waste": f"={requests}*{c('retry')}*{c('per_request')}",
            "failure_loss": f"={requests}*{c('failure')}*{c('per_request')}",
        })
    else:
        waste_share = f"(1+{c('retry')}+{c('failure')})"
        units = f"IF({c('price_unit')}=\"node_hour\",{c('nodes')},{c('gpus')})"
        busy = f"{c('work')}/({c('gpus')}*{c('capacity')}*3600)"
        formulas.update({
            "work": f"={c('generated')}*{c('to_capacity')}*{waste_share}",
            "required_rate": (f"=MAX({PEAK}*{c('peak_to_capacity')}/{c('accept')}*{waste_share},"
                              f"{c('work')}/({OPERATING}*3600))*(1+{c('headroom')})"),
            # Replicas: the rate's, or the memory layout's floor when larger (an empty floor counts as 0).
            "nodes": f"=ROUNDUP(MAX(ROUNDUP({c('required_rate')}/({c('capacity')}*{c('gpr')}),0),"
                     f"ROUNDUP(N({c('min_gpus')})/{c('gpr')},0))*{c('gpr')}/{c('gpn')},0)",
            "gpus": f"={c('nodes')}*{c('gpn')}",
            "needed_hours": f"=IF({BY_USE}=1,MIN({busy},{OPERATING}),{OPERATING})",
            "billed": f"=MAX({c('base_cost')},{c('minimum')})",
            "busy_cost": (f"={c('base_cost')}*MIN(1,{c('work')}/({c('gpus')}*{c('capacity')}*3600"
                          f"*{c('billed_hours')}))"),
            "productive": f"={c('busy_cost')}/{waste_share}",
            "retry_waste": f"={c('busy_cost')}*{c('retry')}/{waste_share}",
            "failure_loss": f"={c('busy_cost')}*{c('failure')}/{waste_share}",
            "gpu_cost": f"={c('billed')}-{c('retry_waste')}-{c('failure_loss')}",
        })
        needed = c("needed_hours")
        if model is BillingModel.PURCHASE:
            months = f"({PERIOD}/730)"
            formulas.update({
                "billed_hours": f"={PERIOD}",
                "base_cost": (f"={c('nodes')}*{c('capex')}/{c('amortisation')}*{months}"
                              f"+{c('nodes')}*{c('power')}*{c('pue')}*{needed}*{c('energy')}"
                              f"+{c('nodes')}*{c('power')}*{c('colocation')}*{months}"
                              f"+{c('nodes')}*{c('maintenance')}*{months}/12"),
            })
        elif model is BillingModel.RESERVED:
            overage = f"MAX(0,{needed}-{c('committed')})"
            formulas.update({
                "overage_hours": (f"=IF(ISBLANK({c('granularity')}),{overage},"
                                  f"ROUNDUP({overage}/{c('granularity')},0)*{c('granularity')})"),
                "billed_hours": f"={c('committed')}+{c('overage_hours')}",
                "base_cost": (f"={units}*{c('committed')}*{c('unit_price')}"
                              f"+{units}*{c('overage_hours')}*{c('overage_price')}"),
            })
        else:
            per_run = f"{needed}/{RUNS}"
            rounded = (f"IF(ISBLANK({c('granularity')}),{per_run},"
                       f"ROUNDUP({per_run}/{c('granularity')},0)*{c('granularity')})")
            formulas.update({
                "billed_hours": (f"=IF(ISBLANK({c('min_billed')}),{rounded},MAX({rounded},{c('min_billed')}))"
                                 f"*{RUNS}"),
                "base_cost": f"={units}*{c('billed_hours')}*{c('unit_price')}",
            })
            if model is BillingModel.SPOT:
                formulas["preemption_rework"] = (f"={units}*{c('billed_hours')}*{c('preemptions')}*{c('rework')}"
                                                 f"*{c('unit_price')}")
        if model is BillingModel.PURCHASE:
            formulas["hourly"] = f"={c('billed')}*{c('rate')}/({c('gpus')}*{PERIOD})"
        else:
            formulas["hourly"] = (f"=IF({c('price_unit')}=\"node_hour\",{c('unit_price')}/{c('gpn')},"
                                  f"{c('unit_price')})*{c('rate')}")
    formulas.update({
        "idle": f"={c('gpu_cost')}-{c('productive')}",
        "failure_waste": f"={c('retry_waste')}+{c('failure_loss')}+{c('preemption_rework')}",
        "total": (f"={c('rate')}*({c('gpu_cost')}+{c('storage_network')}+{c('platform_labor')}+{c('other_costs')}"
                  f"+{c('failure_waste')})"),
        "unit_cost": f"={c('total')}/{ACCEPTED}",
    })
    return formulas


def _rate(comparison: Comparison, currency: str) -> Decimal:
    if currency == comparison.currency:
        return Decimal(1)
    return next(rate.rate for rate in comparison.exchange_rates if rate.currency == currency)


# --- cached values: each formula cell also stores the value Dossier computed, so a viewer that does not recalculate
# (a preview, a mail client, openpyxl with data_only=True) shows the figures instead of blanks. openpyxl writes a
# formula with an empty <v/>; the saved sheets get the values written in.


def _row_values(comparison: Comparison, result: CandidateResult) -> dict[str, Decimal | int | None]:
    """The value of each formula column of one candidate row, in the candidate's own currency where the sheet keeps
    it (the cost columns before the exchange rate), from the row normalize() computed."""
    row, given = result.row, result.candidate_input
    rate = _rate(comparison, given.currency)

    def own(value: Decimal) -> Decimal:
        return value if rate == 1 else money.divide(value, rate)

    base = money.add(*(value for name, value in row.gpu_cost_parts.items() if name != "minimum_commitment_top_up"))
    values: dict[str, Decimal | int | None] = {
        "accept": row.quality_acceptance, "generated": row.generated_outputs,
        "storage_network": own(row.storage_network), "platform_labor": own(row.platform_labor),
        "other_costs": own(row.other_costs), "gpus": row.gpus, "nodes": row.nodes,
        "billed_hours": row.billed_hours_per_gpu, "base_cost": own(base), "gpu_cost": own(row.gpu_cost),
        "billed": own(row.billed_compute - row.retry_waste - row.failure_loss)
        if given.commercial_model is BillingModel.API else own(row.billed_compute),
        "productive": own(row.productive_capacity), "idle": own(row.idle_capacity),
        "retry_waste": own(row.retry_waste), "failure_loss": own(row.failure_loss),
        "preemption_rework": own(row.preemption_rework), "failure_waste": own(row.failure_waste),
        "total": row.total_cost, "unit_cost": row.effective_unit_cost, "hourly": row.hourly_price,
    }
    model = given.commercial_model
    if model is BillingModel.API:
        values["per_request"] = money.divide(
            money.add(money.multiply(given.mean_input_tokens, given.api_input_price_per_million),
                      money.multiply(given.mean_output_tokens, given.api_output_price_per_million)),
            cost_model.TOKENS_PER_PRICE_UNIT)
    else:
        demand = comparison.demand
        factors = cost_model.work_factors(demand, given)
        waste_share = 1 + given.retry_rate + given.failure_rate
        work = money.multiply(row.generated_outputs, factors.to_capacity, waste_share)
        mean = money.divide(work, money.multiply(demand.operating_hours, cost_model.SECONDS_PER_HOUR))
        peak = money.divide(money.multiply(demand.peak_rate, factors.peak_to_capacity, waste_share),
                            row.quality_acceptance)
        busy_hours = money.divide(work, money.multiply(row.gpus, given.capacity_at_slo_per_gpu,
                                                       cost_model.SECONDS_PER_HOUR))
        values["work"] = work
        values["required_rate"] = money.multiply(max(peak, mean), 1 + given.headroom)
        values["needed_hours"] = min(busy_hours, demand.operating_hours) if demand.billed_by_use \
            else demand.operating_hours
        values["busy_cost"] = own(money.multiply(money.add(row.retry_waste, row.failure_loss,
                                                           row.productive_capacity), 1))
        if model is BillingModel.RESERVED:
            values["overage_hours"] = row.billed_hours_per_gpu - given.committed_hours
    return values


def _training_values(comparison: Comparison, result: CandidateResult) -> dict[str, Decimal | int | None]:
    row, run = result.training_row, result.training_run
    return {
        "compute_hours": row.compute_hours, "checkpoints": row.checkpoints, "checkpoint_hours": row.checkpoint_hours,
        "expected_failures": row.expected_failures, "waste_hours": row.failed_run_waste_hours,
        "hourly": money.multiply(run.gpus, run.price_per_gpu_hour, _rate(comparison, run.currency)),
        "gpu_compute": row.gpu_compute, "checkpointing": row.checkpointing, "failed_run_waste": row.failed_run_waste,
        "storage": row.storage, "network": row.network, "platform_labor": row.platform_labor,
        "other_costs": row.other_costs, "cost_per_run": row.cost_per_completed_run,
    }


def _cached_number(value: Decimal | int) -> str:
    """A value as a spreadsheet stores it: an int as it is, any other number as the nearest double."""
    if isinstance(value, int) or value == value.to_integral_value():
        return str(int(value))
    return repr(float(value))


_FORMULA_CELL = re.compile(r'<c r="([A-Z]+[0-9]+)"([^>]*)><f>(.*?)</f><v\s*/>(</c>)')


def _with_cached_values(data: bytes, cached: dict[str, dict[str, Decimal | int]]) -> bytes:
    """The saved workbook with `cached[sheet title][cell]` written as each formula cell's value."""
    source = zipfile.ZipFile(io.BytesIO(data))
    workbook_xml = source.read("xl/workbook.xml").decode()
    rels_xml = source.read("xl/_rels/workbook.xml.rels").decode()
    targets = dict(re.findall(r'<Relationship[^>]*?Id="([^"]+)"[^>]*?Target="([^"]+)"', rels_xml))
    targets.update({rid: target for target, rid in
                    re.findall(r'<Relationship[^>]*?Target="([^"]+)"[^>]*?Id="([^"]+)"', rels_xml)})
    paths = {}
    for name, rid in re.findall(r'<sheet [^>]*?name="([^"]+)"[^>]*?r:id="([^"]+)"', workbook_xml):
        target = targets[rid].lstrip("/")
        paths[target if target.startswith("xl/") else f"xl/{target}"] = html.unescape(name)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            content = source.read(item.filename)
            values = cached.get(paths.get(item.filename, ""), {})
            if values:
                def fill(match: re.Match, values=values) -> str:
                    value = values.get(match.group(1))
                    if value is None:
                        return match.group(0)
                    return (f'<c r="{match.group(1)}"{match.group(2)}><f>{match.group(3)}</f>'
                            f"<v>{_cached_number(value)}</v>{match.group(4)}")

                content = _FORMULA_CELL.sub(fill, content.decode()).encode()
            out.writestr(item, content)
    return buffer.getvalue()


TRAINING_CELLS = (
    (2, "tokens to train in one run", "token_budget"),
    (3, "checkpoint interval (hours)", "checkpoint_interval_hours"),
    (4, "failures per GPU-hour", "failures_per_gpu_hour"),
)
TRAINING_INPUT_COLUMNS = (
    ("id", "candidate id"), ("label", "candidate"), ("currency", "currency"),
    ("rate", "exchange rate to the reporting currency"), ("gpus", "GPUs"), ("price", "price per GPU-hour"),
    ("throughput", "training throughput (tokens/s)"), ("write", "checkpoint write stall (hours)"),
    ("restart", "restart after a failure (hours)"),
)
TRAINING_FORMULA_COLUMNS = (
    ("compute_hours", "compute hours"), ("checkpoints", "checkpoints"), ("checkpoint_hours", "checkpoint hours"),
    ("expected_failures", "expected failures"), ("waste_hours", "failed-run waste hours"),
    ("hourly", "cluster cost per hour (reporting currency)"), ("gpu_compute", "GPU compute"),
    ("checkpointing", "checkpointing"), ("failed_run_waste", "failed-run waste"), ("storage", "storage"),
    ("network", "network"), ("platform_labor", "platform labor"), ("other_costs", "other costs"),
    ("cost_per_run", "cost per completed run"), ("dossier", "cost per completed run computed by Dossier (exact)"),
)
TRAINING_COLUMN = {
    key: get_column_letter(index)
    for index, key in enumerate([key for key, _h in TRAINING_INPUT_COLUMNS + TRAINING_FORMULA_COLUMNS], 1)
}
TRAINING_LINE_COLUMNS = {"storage": "storage", "network": "network", "platform_labor": "platform_labor",
                         "checkpointing": "checkpointing"}


def _training_formulas(r: int) -> dict[str, str]:
    """cost_model.training_run_cost() as formulas over the row's inputs and the Workload sheet."""

    def c(key: str) -> str:
        return f"{TRAINING_COLUMN[key]}{r}"

    def lines(column: str) -> str:
        return (f"{c('rate')}*SUMIFS('{LINES_SHEET}'!$I:$I,'{LINES_SHEET}'!$A:$A,{c('id')},"
                f"'{LINES_SHEET}'!$C:$C,\"{column}\")")

    budget, interval, failures = (f"{WORKLOAD_SHEET}!$B${row}" for row, _label, _name in TRAINING_CELLS)
    return {
        "compute_hours": f"={budget}/{c('throughput')}/3600",
        "checkpoints": f"=INT({c('compute_hours')}/{interval})",
        "checkpoint_hours": f"={c('checkpoints')}*{c('write')}",
        "expected_failures": f"={failures}*{c('gpus')}*({c('compute_hours')}+{c('checkpoint_hours')})",
        "waste_hours": f"={c('expected_failures')}*(MIN({interval},{c('compute_hours')})/2+{c('restart')})",
        "hourly": f"={c('gpus')}*{c('price')}*{c('rate')}",
        "gpu_compute": f"={c('hourly')}*{c('compute_hours')}",
        "checkpointing": f"={c('hourly')}*{c('checkpoint_hours')}+{lines('checkpointing')}",
        "failed_run_waste": f"={c('hourly')}*{c('waste_hours')}",
        "storage": "=" + lines("storage"),
        "network": "=" + lines("network"),
        "platform_labor": "=" + lines("platform_labor"),
        "other_costs": "=" + lines("other_costs"),
        "cost_per_run": (f"={c('gpu_compute')}+{c('checkpointing')}+{c('failed_run_waste')}+{c('storage')}"
                         f"+{c('network')}+{c('platform_labor')}+{c('other_costs')}"),
    }


def _lines_sheet(workbook):
    sheet = workbook.create_sheet(LINES_SHEET)
    sheet.append(["candidate id", "candidate", "column", "kind", "label", "quantity", "unit price", "unit",
                  "amount", "source"])
    return sheet


def _add_line(sheet, owner_id: str, owner_label: str, column: str, line: cost_model.CostLine,
              cached: dict[str, Decimal | int]) -> None:
    number = sheet.max_row + 1
    source = line.provenance
    # The amount (column I) is the sheet's own formula; every other cell is data, never a formula.
    sheet.append([*spreadsheet.safe_row([owner_id, owner_label, column, str(line.kind), line.label, line.quantity,
                                         line.unit_price, line.unit]),
                  f"=F{number}*G{number}",
                  spreadsheet.safe_text(source.reference or f"{source.kind}: {source.by}, {source.why}")])
    cached[f"I{number}"] = money.multiply(line.quantity, line.unit_price)


def _problems_sheet(workbook, comparison: Comparison) -> None:
    problems = workbook.create_sheet("Problems")
    problems.append(["candidate", "field", "problem"])
    for problem in comparison.problems:
        problems.append(spreadsheet.safe_row([problem.candidate_label, problem.field, problem.text]))
    if comparison.rehearsal_results:
        rehearsals = workbook.create_sheet("Rehearsals")
        rehearsals.append(["candidate", "figure", "value", "job", "why a rehearsal", "label"])
        for result in comparison.rehearsal_results:
            for item in result.rehearsals:
                rehearsals.append(spreadsheet.safe_row([
                    result.label, item["metric"], money.exact(item["value"]), item["job_id"],
                    "; ".join(item["reasons"]), "rehearsal — not a GPU measurement"]))


HYBRID_SHEET = "Hybrid plan"


def _hybrid_sheet(workbook, option: HybridOption) -> None:
    """The hybrid plan as exact values (the mix is a search, not a formula): its parts, which part serves each block
    of the profile, its totals and break-even points. The candidates' own rows stay on the Comparison sheet."""
    plan = option.plan
    sheet = workbook.create_sheet(HYBRID_SHEET)
    bold = Font(bold=True)

    def heading(*cells):
        sheet.append([_cell_value(cell) for cell in cells])
        for cell in sheet[sheet.max_row]:
            cell.font = bold

    def line(*cells):
        sheet.append([_cell_value(cell) for cell in cells])

    heading("hybrid plan", option.label)
    heading("part", "candidate id", "candidate", "used", "units", "GPUs", "accepted outputs per period",
            "billed", "retry and failure waste", "capacity measured")
    for part in plan.parts:
        line(part.part, part.id, part.label, part.used, part.units, part.gpus, part.outputs, part.billed, part.waste,
             part.capacity_measured)
    sheet.append([])
    profile = plan.profile
    heading("profile", profile.shape, "windows per period", "window hours")
    line("", "", profile.windows, profile.window_hours)
    heading("block hours", "load per hour", "base per hour", "burst units", "burst per hour", "API per hour",
            "billed hours per burst unit and run")
    for block in plan.blocks:
        line(block.hours, block.load, block.base_outputs, block.burst_units, block.burst_outputs, block.api_outputs,
             block.burst_billed_hours)
    sheet.append([])
    heading("figure", "value")
    for name in ("billed_compute", "gpu_cost", "productive_capacity", "idle_capacity", "failure_waste",
                 "storage_network", "platform_labor", "other_costs", "total_cost", "accepted_outputs",
                 "effective_unit_cost"):
        line(name, getattr(plan, name))
    for name, value in dataclasses.asdict(plan.break_even).items():
        line(name, value)
    for note in option.notes:
        line("note", note.text)


def _training_xlsx(comparison: Comparison) -> bytes:
    workbook = Workbook()
    input_fill = PatternFill("solid", fgColor="FFF6D5")
    sheet = workbook.active
    sheet.title = WORKLOAD_SHEET
    sheet.append(["figure", "value", "source"])
    plan = comparison.training
    for row_number, label, attribute in TRAINING_CELLS:
        sheet.cell(row=row_number, column=1, value=label)
        value = spreadsheet.safe_cell(getattr(plan, attribute)) if plan else None
        cell = sheet.cell(row=row_number, column=2, value=value)
        cell.fill = input_fill
        source = plan.provenance.get(attribute) if plan else None
        sheet.cell(row=row_number, column=3, value=spreadsheet.safe_cell(source.why) if source else "")
    sheet.cell(row=6, column=1, value="reporting currency")
    sheet.cell(row=6, column=2, value=spreadsheet.safe_text(comparison.currency))
    lines_sheet = _lines_sheet(workbook)
    table = workbook.create_sheet(TABLE_SHEET)
    table.append([header for _key, header in TRAINING_INPUT_COLUMNS + TRAINING_FORMULA_COLUMNS])
    for cell in table[1]:
        cell.font = Font(bold=True)
    cached_lines: dict[str, Decimal | int] = {}
    cached_table: dict[str, Decimal | int] = {}
    for row_number, result in enumerate(comparison.training_rows, 2):
        run = result.training_run
        values = {"id": run.id, "label": run.label, "currency": run.currency, "rate": _rate(comparison, run.currency),
                  "gpus": run.gpus, "price": run.price_per_gpu_hour, "throughput": run.throughput_tokens_per_second,
                  "write": run.checkpoint_write_hours, "restart": run.restart_hours}
        for key, value in values.items():
            cell = table[f"{TRAINING_COLUMN[key]}{row_number}"]
            cell.value = _cell_value(value)
            if key not in ("id", "label", "currency"):
                cell.fill = input_fill
        values = _training_values(comparison, result)
        for key, formula in _training_formulas(row_number).items():
            table[f"{TRAINING_COLUMN[key]}{row_number}"] = formula
            if values.get(key) is not None:
                cached_table[f"{TRAINING_COLUMN[key]}{row_number}"] = values[key]
        table[f"{TRAINING_COLUMN['dossier']}{row_number}"] = spreadsheet.safe_text(
            money.exact(result.training_row.cost_per_completed_run))
        for line in run.cost_lines:
            _add_line(lines_sheet, run.id, run.label, TRAINING_LINE_COLUMNS.get(str(line.kind), "other_costs"), line,
                      cached_lines)
    table.freeze_panes = "C2"
    _problems_sheet(workbook, comparison)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return _with_cached_values(buffer.getvalue(), {TABLE_SHEET: cached_table, LINES_SHEET: cached_lines})


def comparison_xlsx(comparison: Comparison) -> bytes:
    """The workbook: Workload (demand inputs), Cost lines (inputs with an amount formula), Comparison (candidate
    inputs, then formulas), Problems (candidates that could not be normalised). A training workload gets the same
    sheets with the cost per completed run."""
    if comparison.is_training:
        return _training_xlsx(comparison)
    workbook = Workbook()
    bold = Font(bold=True)
    input_fill = PatternFill("solid", fgColor="FFF6D5")

    sheet = workbook.active
    sheet.title = WORKLOAD_SHEET
    sheet.append(["figure", "value", "source"])
    demand = comparison.demand
    for row_number, label, attribute in WORKLOAD_CELLS:
        value = getattr(demand, attribute) if demand is not None else None
        source = demand.provenance.get(attribute) if demand is not None else None
        sheet.cell(row=row_number, column=1, value=label)
        cell = sheet.cell(row=row_number, column=2, value=_cell_value(value))
        cell.fill = input_fill
        sheet.cell(row=row_number, column=3, value=spreadsheet.safe_cell(source.why) if source else "")
    sheet.cell(row=9, column=1, value="reporting currency")
    sheet.cell(row=9, column=2, value=spreadsheet.safe_text(comparison.currency))
    sheet.cell(row=10, column=1, value="workload summary")
    summary = f"{comparison.summary.name} v{comparison.summary.version}"
    sheet.cell(row=10, column=2, value=spreadsheet.safe_text(summary))
    sheet.column_dimensions["A"].width = 34
    sheet.column_dimensions["B"].width = 22

    lines_sheet = _lines_sheet(workbook)
    table = workbook.create_sheet(TABLE_SHEET)
    table.append([header for _key, header, _attribute in INPUT_COLUMNS] + [header for _key, header in
                                                                           FORMULA_COLUMNS])
    for cell in table[1]:
        cell.font = bold
    row_number = 1
    cached_lines: dict[str, Decimal | int] = {}
    cached_table: dict[str, Decimal | int] = {}
    for result in comparison.rows:
        given = result.candidate_input
        factors = cost_model.work_factors(demand, given)
        row_number += 1
        for key, _header, attribute in INPUT_COLUMNS:
            if key == "rate":
                value = _rate(comparison, given.currency)
            elif key in ("to_capacity", "peak_to_capacity", "to_requests"):
                value = getattr(factors, attribute)
            else:
                value = getattr(given, attribute)
            cell = table[f"{COLUMN[key]}{row_number}"]
            cell.value = _cell_value(value)
            if key not in ("id", "label", "model", "currency"):
                cell.fill = input_fill
        values = _row_values(comparison, result)
        for key, formula in _formulas(given.commercial_model, row_number).items():
            table[f"{COLUMN[key]}{row_number}"] = formula
            if values.get(key) is not None:
                cached_table[f"{COLUMN[key]}{row_number}"] = values[key]
        table[f"{COLUMN['dossier']}{row_number}"] = spreadsheet.safe_text(money.exact(result.row.effective_unit_cost))
        for line in given.cost_lines:
            _add_line(lines_sheet, given.id, given.label, cost_model.COST_COLUMN.get(line.kind, "other_costs"), line,
                      cached_lines)
    table.freeze_panes = "C2"
    _problems_sheet(workbook, comparison)
    if comparison.hybrid is not None:
        _hybrid_sheet(workbook, comparison.hybrid)

    buffer = io.BytesIO()
    workbook.save(buffer)
    return _with_cached_values(buffer.getvalue(), {TABLE_SHEET: cached_table, LINES_SHEET: cached_lines})
