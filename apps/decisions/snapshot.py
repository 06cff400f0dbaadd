"""A decision record's snapshot: the phase-4 comparison written down as plain data, and read back into a
`comparison.Comparison` that the comparison's own table, charts and exports (display.py, charts.py, exports.py) draw
without touching the database.

Plain data means str, int, bool, None, lists and dicts; every Decimal is kept as its exact string. The canonical JSON
(sorted keys, no spaces, UTF-8) of that data is what a proposal hashes with SHA-256.

comparison.py offers no serialisable form of a Comparison that can be read back, so this module writes one
(`comparison_to_data`) and reads it (`comparison_from_data`).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any

from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import get_language, gettext

from apps.budgets import check as budget_rules
from apps.comparison import cost_model, mistakes
from apps.comparison import selectors as comparison_selectors
from apps.evidence.models import CandidateFigure
from apps.quotes.models import Candidate, Quote, Vendor
from apps.workloads.models import WorkloadSummary

#: A note parameter that reads as a number was a number (Decimal or int) when the snapshot was written.
NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")

#: The languages of the guide: a snapshot keeps the texts of the six mistakes in each, as they read when it was frozen.
LANGUAGES = ("en", "fr", "id")


# ---------------------------------------------------------------------------------------------------------------
# Writing


def plain(value: Any) -> Any:
    """JSON-ready data: Decimals as exact strings, enums as their values, dataclasses and mappings as dicts."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Enum):
        return plain(value.value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, float):
        # A float has no exact decimal string of its own; repr() is the shortest one that reads back the same.
        return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: plain(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((plain(item) for item in value), key=canonical_json)
    if isinstance(value, Promise):  # a lazy translation
        return str(value)
    raise TypeError(f"{type(value).__name__} is not snapshot data")


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _in_each_language(render: Callable[..., str], *arguments: Any) -> dict[str, str]:
    """{language: `render(*arguments)` with that language active}, for each language of the guide."""
    texts = {}
    for language in LANGUAGES:
        with translation.override(language):
            texts[language] = render(*arguments)
    return texts


def _result_data(result: comparison_selectors.CandidateResult) -> dict:
    candidate = result.candidate
    quote = candidate.quote
    return {
        "id": result.id,
        "label": result.label,
        "kind": str(candidate.kind),
        "quote_id": quote.pk,
        "quote_title": quote.title,
        "vendor_id": quote.vendor_id,
        "vendor": quote.vendor.name,
        "gpu": quote.gpu.display_name if quote.gpu_id else "",
        "commercial_model": str(quote.commercial_model),
        "price_unit": str(quote.price_unit),
        "currency": quote.currency,
        "inputs": {
            metric: {
                "value": item.value,
                "source": item.source,
                "reference": item.reference,
                "estimated_by": item.estimated_by,
                "estimate_reason": item.estimate_reason,
                "capacity_unit": item.capacity_unit,
            }
            for metric, item in sorted(result.inputs.items())
        },
        "candidate_input": result.candidate_input,
        "row": result.row.to_dict() if result.row is not None else None,
        "problem": result.problem.to_dict() if result.problem is not None else None,
        "warnings": list(result.warnings),
        "predicted_memory_margin": result.predicted_memory_margin,
        "facts": result.facts,
        "rehearsals": [dict(item) for item in result.rehearsals],
        "waivers": [dict(item) for item in result.waivers],
    }


def comparison_to_data(comparison: comparison_selectors.Comparison) -> dict:
    """Everything the record page, its charts and its exports show, as plain data: the phase-4 table with every
    input and its provenance, the six mistakes with their texts in the three languages of the guide, the
    sensitivity and the break-even figures."""
    summary = comparison.summary
    rules = []
    for rule_result in comparison.rules:
        rule = rule_result.rule
        rules.append(
            {
                "code": rule.code,
                "number": rule.number,
                "title": _in_each_language(gettext, rule.title),
                "explanation": _in_each_language(gettext, rule.explanation),
                "findings": [
                    {
                        "code": view.finding.code,
                        "reason": view.finding.reason,
                        "candidate_id": view.finding.candidate_id,
                        "candidate_label": view.candidate_label,
                        "severity": view.finding.severity,
                        "params": dict(view.finding.params),
                        "message": _in_each_language(view.finding.message, gettext),
                    }
                    for view in rule_result.findings
                ],
            }
        )
    cheapest, lowest_hourly = comparison.cheapest, comparison.lowest_hourly
    return plain(
        {
            "summary": {
                "id": summary.pk,
                "workload_id": summary.workload_id,
                "team_id": summary.team_id,
                "name": summary.name,
                "version": summary.version,
                "p95_e2e_ms": summary.p95_e2e_ms,
                "p99_e2e_ms": summary.p99_e2e_ms,
            },
            "currency": comparison.currency,
            "demand": comparison.demand,
            "demand_problem": comparison.demand_problem.to_dict() if comparison.demand_problem else None,
            "results": [_result_data(result) for result in comparison.results],
            "rules": rules,
            "chosen_id": comparison.chosen_id,
            "cheapest_id": cheapest.id if cheapest else None,
            "lowest_hourly_id": lowest_hourly.id if lowest_hourly else None,
            "exchange_rates": list(comparison.exchange_rates),
            "focus_id": comparison.focus.id if comparison.focus else None,
            "sensitivity": list(comparison.sensitivity),
            "sensitivity_problem": comparison.sensitivity_problem,
            "break_even": comparison.break_even,
            "hybrid": _hybrid_data(comparison.hybrid),
            "hybrid_problem": comparison.hybrid_problem,
        }
    )


def _hybrid_data(option: comparison_selectors.HybridOption | None) -> dict | None:
    """The hybrid row as signed: its plan and figures, and the candidates its parts come from (by id)."""
    if option is None:
        return None
    return {
        "plan": option.plan,
        "parts": {name: result.id for name, result in option.parts.items()},
        "provenance": option.provenance,
        "notes": option.notes,
        "unmeasured": option.unmeasured,
        "currency": option.currency,
        "label": option.label,
    }


# ---------------------------------------------------------------------------------------------------------------
# Reading


def _number_or_text(value: Any) -> Any:
    if isinstance(value, str) and NUMBER.match(value):
        try:
            return Decimal(value)
        except InvalidOperation:
            return value
    return value


def rebuild(hint: Any, data: Any) -> Any:
    """The value of type `hint` that `plain()` turned into `data` (frozen dataclasses are rebuilt as they were
    stored, without running their validation again: a snapshot is read, never re-judged)."""
    if data is None:
        return None
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if hint is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        options = [option for option in arguments if option is not type(None)]
        return rebuild(options[0], data) if len(options) == 1 else data
    if hint is Decimal:
        return Decimal(data)
    if hint in (int, str, bool):
        return hint(data)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(data)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _rebuild_dataclass(hint, data)
    if origin in (Mapping, dict, typing.Mapping) or hint in (dict, Mapping):
        value_hint = arguments[1] if len(arguments) == 2 else Any
        return {key: rebuild(value_hint, item) for key, item in data.items()}
    if origin is tuple:
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(rebuild(arguments[0], item) for item in data)
        return tuple(rebuild(item_hint, item) for item_hint, item in zip(arguments, data, strict=False))
    if origin is list:
        return [rebuild(arguments[0] if arguments else Any, item) for item in data]
    return data


#: Fields the cost model gained after some records were frozen, and what such an older snapshot means by them: a
#: record is read as it was signed, never re-judged (its row's GPU cost was then the whole compute bill; its training
#: row counted every completed run).
ADDED_FIELDS: dict[type, dict[str, Any]] = {
    cost_model.Row: {
        "billed_compute": lambda data: data["gpu_cost"],
        "unit": lambda data: "",
        "capacity_unit": lambda data: "",
        "time_to_answer_hours": lambda data: None,
    },
    cost_model.TrainingRow: {
        "acceptance": lambda data: "1",
        "unit": lambda data: "training_run",
        "cost_per_accepted_output": lambda data: data["cost_per_completed_run"],
    },
}


def _rebuild_dataclass(cls: type, data: Mapping[str, Any]) -> Any:
    if cls is cost_model.Note:
        return cost_model.Note(data["code"], {name: _number_or_text(value) for name, value in data["params"].items()})
    hints = typing.get_type_hints(cls)
    instance = object.__new__(cls)
    added = ADDED_FIELDS.get(cls, {})
    for item in dataclasses.fields(cls):
        if item.name in data:
            value = rebuild(hints[item.name], data[item.name])
        elif item.name in added:
            value = rebuild(hints[item.name], added[item.name](data))
        elif item.default is not dataclasses.MISSING:
            value = item.default
        elif item.default_factory is not dataclasses.MISSING:
            value = item.default_factory()
        else:
            raise ValueError(f"the snapshot lacks {cls.__name__}.{item.name}")
        object.__setattr__(instance, item.name, value)
    return instance


def _problem(data: Mapping | None) -> comparison_selectors.Problem | None:
    if data is None:
        return None
    return comparison_selectors.Problem(data["candidate_id"], data["candidate"], data["field"], data["message"])


def _summary(data: Mapping) -> WorkloadSummary:
    """An unsaved stand-in with the figures the table, charts and exports read."""
    return WorkloadSummary(
        pk=data["id"],
        workload_id=data["workload_id"],
        team_id=data["team_id"],
        name=data["name"],
        version=data["version"],
        p95_e2e_ms=data["p95_e2e_ms"],
        p99_e2e_ms=data["p99_e2e_ms"],
    )


def _candidate(data: Mapping, summary: WorkloadSummary) -> Candidate:
    vendor = Vendor(pk=data["vendor_id"], name=data["vendor"])
    quote = Quote(
        pk=data["quote_id"],
        title=data["quote_title"],
        vendor=vendor,
        commercial_model=data["commercial_model"],
        price_unit=data["price_unit"],
        currency=data["currency"],
    )
    candidate = Candidate(pk=int(data["id"]), label=data["label"], kind=data["kind"], quote=quote)
    candidate.workload_summary = summary
    return candidate


def _inputs(data: Mapping[str, Mapping]) -> dict[str, CandidateFigure]:
    return {
        metric: CandidateFigure(
            metric=metric,
            value=Decimal(item["value"]),
            source=item["source"],
            reference=item["reference"],
            estimated_by=item["estimated_by"],
            estimate_reason=item["estimate_reason"],
            capacity_unit=item["capacity_unit"],
        )
        for metric, item in data.items()
    }


def _language(language: str | None) -> str:
    """The snapshot language for a language tag: its primary subtag if a snapshot has it ('fr-CA' → 'fr'), else
    English."""
    primary = (language or get_language() or "en").lower().replace("_", "-").split("-")[0]
    return primary if primary in LANGUAGES else "en"


def _rule(data: Mapping, language: str) -> comparison_selectors.RuleResult:
    rule = mistakes.RULES_BY_CODE.get(data["code"]) or mistakes.Rule(
        data["code"], data["number"], data["title"]["en"], data["explanation"]["en"], {}, lambda situation: ()
    )
    findings = tuple(
        comparison_selectors.FindingView(
            mistakes.Finding(
                finding["code"],
                finding["reason"],
                finding["candidate_id"],
                {name: _number_or_text(value) for name, value in finding["params"].items()},
                finding["severity"],
            ),
            finding["candidate_label"],
            finding["message"][language],
        )
        for finding in data["findings"]
    )
    return comparison_selectors.RuleResult(rule, data["title"][language], data["explanation"][language], findings)


def comparison_from_data(data: Mapping, *, language: str | None = None) -> comparison_selectors.Comparison:
    """The Comparison a snapshot froze, in `language` (default: the active one); reads nothing from the database."""
    language = _language(language)
    summary = _summary(data["summary"])
    results = []
    for item in data["results"]:
        results.append(
            comparison_selectors.CandidateResult(
                candidate=_candidate(item, summary),
                inputs=_inputs(item["inputs"]),
                candidate_input=rebuild(cost_model.CandidateInput, item["candidate_input"]),
                row=rebuild(cost_model.Row, item["row"]),
                problem=_problem(item["problem"]),
                warnings=list(item["warnings"]),
                predicted_memory_margin=rebuild(Decimal, item["predicted_memory_margin"]),
                facts=rebuild(mistakes.CandidateFacts, item["facts"]),
                rehearsals=[{**entry, "value": Decimal(entry["value"])} for entry in item.get("rehearsals", ())],
                waivers=[dict(entry) for entry in item.get("waivers", ())],
            )
        )
    by_id = {result.id: result for result in results}
    return comparison_selectors.Comparison(
        summary=summary,
        currency=data["currency"],
        demand=rebuild(cost_model.Demand, data["demand"]),
        demand_problem=_problem(data["demand_problem"]),
        results=results,
        rules=[_rule(rule, language) for rule in data["rules"]],
        chosen_id=data["chosen_id"],
        exchange_rates=tuple(rebuild(cost_model.ExchangeRate, rate) for rate in data["exchange_rates"]),
        focus=by_id.get(data["focus_id"] or ""),
        sensitivity=tuple(rebuild(cost_model.SensitivityBar, bar) for bar in data["sensitivity"]),
        sensitivity_problem=data["sensitivity_problem"],
        break_even=rebuild(comparison_selectors.BreakEven, data["break_even"]),
        hybrid=_hybrid(data.get("hybrid"), by_id),
        hybrid_problem=data.get("hybrid_problem", ""),
    )


def _hybrid(data: Mapping | None, by_id: Mapping[str, comparison_selectors.CandidateResult]
            ) -> comparison_selectors.HybridOption | None:
    """The frozen hybrid row (None in a snapshot frozen before hybrid rows were frozen: the record had none)."""
    if data is None:
        return None
    hints = typing.get_type_hints(comparison_selectors.HybridOption)
    return comparison_selectors.HybridOption(
        plan=rebuild(hints["plan"], data["plan"]),
        parts={name: by_id[candidate_id] for name, candidate_id in data["parts"].items()},
        provenance=rebuild(hints["provenance"], data["provenance"]),
        notes=rebuild(hints["notes"], data["notes"]),
        unmeasured=list(data["unmeasured"]),
        currency=data["currency"],
        label=data["label"],
    )


# ---------------------------------------------------------------------------------------------------------------
# The budget check

#: The layout of a snapshot's "budget_check" (apps/budgets/selectors.RecordCheck.data): "input" and "result" are the
#: pure check's dataclasses as plain data (apps/budgets/check.py), "context" what was read (cost centre, budget,
#: records counted, rates), "message" the sentence as it read when frozen. Snapshots frozen before budgets existed,
#: or of a record without a cost centre, have no such key: they were never checked, and read as such (None).
BUDGET_CHECK_KEY = "budget_check"


def budget_check_of(data: Mapping | None) -> dict | None:
    """The frozen budget check of a snapshot, or None for one frozen without (older, or no cost centre)."""
    if not data:
        return None
    return data.get(BUDGET_CHECK_KEY)


def budget_result_of(data: Mapping | None):
    """The frozen check's outcome rebuilt as `apps.budgets.check.BudgetCheck` (None when there is none); a field the
    check gains later takes its dataclass default, or the value ADDED_FIELDS gives it."""
    frozen = budget_check_of(data)
    return rebuild(budget_rules.BudgetCheck, frozen["result"]) if frozen else None
