"""What a candidate hands to the phase-4 normalisation (apps/comparison/cost_model.py): its quoted and estimated
inputs as plain values, each with its provenance, keyed by the names of normalize.CandidateInput.

The measured inputs (capacity at the SLO, failure rate, p95 latency, memory margin) and the workload's demand come
from the benchmarks and workloads apps; this module only reads the quote side, and says what it could not supply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from apps.common import money
from apps.common.provenance import ProvenanceKind
from apps.quotes import selectors
from apps.quotes.kinds import HOURLY_UNITS, BillingModel
from apps.quotes.models import (
    NORMALIZATION_COST_KIND,
    Candidate,
    CandidateKind,
    CostPeriod,
    PriceComponent,
    PriceUnit,
    PriceVersion,
)

SECONDS_PER_HOUR = Decimal(3600)


@dataclass
class NormalizationInputs:
    """`values` and `cost_lines` in `currency`; `provenance[name]` is {"kind", "reference", "by", "why"}."""

    values: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    cost_lines: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    currency: str = ""


def _quoted(version: PriceVersion) -> dict:
    return {"kind": ProvenanceKind.QUOTED, "reference": f"price-version:{version.pk}", "by": "", "why": ""}


def _sourced(source: str) -> dict:
    # A non-price figure of the quote (PUE, power draw, preemption rate) cites its own source.
    return {"kind": ProvenanceKind.QUOTED, "reference": source, "by": "", "why": ""}


def normalization_inputs(candidate: Candidate) -> NormalizationInputs:
    quote = candidate.quote
    prices = selectors.current_prices(quote)
    rate = selectors.effective_rate(prices)
    currency = selectors.prices_currency(quote, prices)
    result = NormalizationInputs(currency=currency)
    values, provenance = result.values, result.provenance
    values.update(
        id=str(candidate.pk),
        label=candidate.label,
        kind=str(candidate.kind),
        commercial_model=quote.billing_model,
        currency=currency,
        gpus_per_node=1 if candidate.kind == CandidateKind.API else quote.gpus_per_node,
    )

    def price(name: str, component: str) -> None:
        version = prices.get(component)
        if version is None:
            return
        if version.currency != currency:
            result.problems.append(
                f"{name}: priced in {version.currency}, the candidate's other prices in {currency}"
            )
            return
        values[name] = version.amount
        provenance[name] = _quoted(version)

    billing = quote.billing_model
    if billing in (BillingModel.ON_DEMAND, BillingModel.SPOT, BillingModel.RESERVED):
        if rate is not None:
            values["unit_price"] = rate.amount
            provenance["unit_price"] = _quoted(rate)
        if quote.price_unit in HOURLY_UNITS:
            values["price_unit"] = str(quote.price_unit)
        if quote.billing_granularity_seconds:
            values["billing_granularity_hours"] = money.divide(quote.billing_granularity_seconds, SECONDS_PER_HOUR)
            provenance["billing_granularity_hours"] = _quoted(rate) if rate is not None else _sourced(str(quote))
        if quote.minimum_billed_seconds:
            values["minimum_billed_hours"] = money.divide(quote.minimum_billed_seconds, SECONDS_PER_HOUR)
            provenance["minimum_billed_hours"] = _quoted(rate) if rate is not None else _sourced(str(quote))
        price("minimum_commitment", PriceComponent.MINIMUM_COMMITMENT)
        if quote.term_months:
            values["commitment_months"] = Decimal(quote.term_months)
            provenance["commitment_months"] = _sourced(f"quote:{quote.pk}")
    if billing == BillingModel.RESERVED:
        values["committed_hours"] = quote.committed_hours_per_month
        provenance["committed_hours"] = _sourced(f"quote:{quote.pk}")
        price("overage_price", PriceComponent.OVERAGE_RATE)
    if billing == BillingModel.SPOT:
        if quote.spot_preemption_rate_per_hour is not None:
            values["spot_preemptions_per_hour"] = quote.spot_preemption_rate_per_hour
            provenance["spot_preemptions_per_hour"] = _sourced(quote.spot_preemption_source)
        if candidate.spot_rework_hours is not None:
            values["spot_rework_hours"] = candidate.spot_rework_hours
            provenance["spot_rework_hours"] = _sourced(candidate.spot_rework_source)
    if billing == BillingModel.PURCHASE:
        if rate is not None:
            values["capex_per_node"] = rate.amount
            provenance["capex_per_node"] = _quoted(rate)
        values["amortisation_months"] = Decimal(quote.amortisation_months)
        provenance["amortisation_months"] = _sourced(quote.amortisation_source)
        values["power_kw_per_node"] = quote.power_kw_per_node
        provenance["power_kw_per_node"] = _sourced(quote.power_source)
        values["pue"] = quote.pue
        provenance["pue"] = _sourced(quote.pue_source)
        price("energy_price_per_kwh", PriceComponent.ENERGY_PER_KWH)
        price("colocation_per_kw_month", PriceComponent.COLOCATION_PER_KW_MONTH)
        price("maintenance_per_node_year", PriceComponent.MAINTENANCE_PER_NODE_YEAR)
        if PriceComponent.SPARES_PER_NODE in prices:
            result.problems.append("spares per node are recorded but phase 4 has no input for them")
    if billing == BillingModel.API:
        price("api_input_price_per_million", PriceComponent.INPUT_TOKENS)
        price("api_output_price_per_million", PriceComponent.OUTPUT_TOKENS)
        price("minimum_commitment", PriceComponent.MINIMUM_COMMITMENT)
        if quote.price_unit == PriceUnit.REQUEST:
            result.problems.append("a per-request price has no phase-4 input (it takes per-token prices)")

    if candidate.expected_retry_rate is not None:
        values["retry_rate"] = candidate.expected_retry_rate
        provenance["retry_rate"] = _sourced(candidate.retry_rate_source)
    if candidate.quality_acceptance is not None:
        values["quality_acceptance"] = candidate.quality_acceptance
        provenance["quality_acceptance"] = _sourced(candidate.quality_acceptance_source)

    for line in selectors.candidate_cost_lines(candidate):
        if line.period != CostPeriod.MONTH:
            result.problems.append(f"cost line {line.pk} is per training run: use it in the training-run cost")
            continue
        if line.currency != currency:
            result.problems.append(f"cost line {line.pk} is in {line.currency}, the candidate in {currency}")
            continue
        if line.is_estimate:
            line_provenance = {
                "kind": ProvenanceKind.ESTIMATED,
                "reference": "",
                "by": line.estimated_by.get_username() if line.estimated_by else "",
                "why": line.estimate_reason,
            }
        else:
            line_provenance = {"kind": ProvenanceKind.QUOTED, "reference": f"cost-line:{line.pk}", "by": "", "why": ""}
        result.cost_lines.append(
            {
                "kind": NORMALIZATION_COST_KIND[line.kind],
                "unit_price": line.rate,
                "quantity": line.quantity,
                "unit": line.unit,
                "label": line.description or str(line.get_kind_display()),
                "provenance": line_provenance,
            }
        )
    return result
