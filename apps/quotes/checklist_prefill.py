"""Checklist answers that are already facts on the quote: the quote's terms, its current prices and its sourced cost
lines. `quote_facts(quote)` says, per question, what the quote already states and what it still lacks;
`services.checklist_prefill` turns the complete ones into answers marked "from the quote" (AnswerOrigin.QUOTE).

The mapping, question by question (apps/quotes/checklist_data.py holds the questions):

=========================== ==================================================================== =================
question                    facts read from the quote                                            complete when
=========================== ==================================================================== =================
gpu-model-memory-node       gpu, gpu_memory_gb, form_factor, gpus_per_node                       all four are set
interconnect                interconnect_intra_node, interconnect_inter_node                     both are set
node-shape                  vcpus_per_node, ram_gb_per_node, local_nvme_tb_per_node,             all five are set
                            storage_bandwidth, network_bandwidth
placement                   region (then zone and placement, when set)                           the region is set
commercial-model            commercial_model (then payment_option, term_months,                  always (required)
                            billing_granularity_seconds, minimum_billed_seconds, when set)
commitment-terms            minimum commitment (the "minimum commitment" price, else             all four are set
                            committed_hours_per_month), cancellation_terms, the "overage rate"
                            price, support_tier
ancillary-costs             the quote's current cost lines *with a source* (an estimate is not   one line of each
                            the vendor's fact) of kinds storage, network_egress, snapshots,      of the six kinds
                            public_ip, load_balancer, private_network
=========================== ==================================================================== =================

No other question is a fact on the quote: the hardware replacement process, the software stack, usage exports,
idle billing and shutdown, security and the ten ownership lines need the vendor's (or the team's) word. The vendor
and each price's source are facts of the quote and of its price versions, but no question asks for them.

Only a complete question is answered; an incomplete one is shown on the checklist page as a suggestion (the facts
found, and what to add) and saved only when a person picks a status. No answer says what the quote does not: an
on-demand quote's missing commitment is not read as "no commitment".

The answer's text is written in the active language (labels are the fields' own names); it is data from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.utils.translation import gettext as _

from apps.common import money
from apps.quotes import selectors
from apps.quotes.models import CostKind, CostLine, PriceComponent, PriceVersion, Quote


@dataclass(frozen=True)
class QuoteFacts:
    """What the quote states for one question (`value`, "label: value; …") and what it lacks (`missing` labels)."""

    code: str
    value: str
    missing: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing and bool(self.value)


def _label(name: str) -> str:
    return str(Quote._meta.get_field(name).verbose_name)


def _shown(quote: Quote, name: str) -> str | None:
    """The field's value as text ("" and None are not facts), choices by their label, decimals exactly."""
    value = getattr(quote, name)
    if value is None or value == "":
        return None
    field = Quote._meta.get_field(name)
    if field.choices:
        return str(getattr(quote, f"get_{name}_display")())
    if hasattr(value, "as_tuple"):
        return money.canonical(value)
    return " ".join(str(value).split())


class _Collector:
    def __init__(self, code: str):
        self.code = code
        self.parts: list[str] = []
        self.missing: list[str] = []

    def fact(self, label: str, text: str | None, *, required: bool = True) -> None:
        if text:
            self.parts.append(f"{label}: {text}")
        elif required:
            self.missing.append(label)

    def field(self, quote: Quote, name: str, *, required: bool = True) -> None:
        self.fact(_label(name), _shown(quote, name), required=required)

    def result(self) -> QuoteFacts:
        return QuoteFacts(code=self.code, value="; ".join(self.parts), missing=tuple(self.missing))


def _price_text(price: PriceVersion | None) -> str | None:
    if price is None:
        return None
    return f"{money.canonical(price.amount)} {price.currency} ({price.source_reference})"


def _fields(code: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> Callable[..., QuoteFacts]:
    def facts(quote: Quote, prices: dict, lines: list[CostLine]) -> QuoteFacts:
        collected = _Collector(code)
        for name in required:
            collected.field(quote, name)
        for name in optional:
            collected.field(quote, name, required=False)
        return collected.result()

    return facts


def _commitment_terms(quote: Quote, prices: dict, lines: list[CostLine]) -> QuoteFacts:
    collected = _Collector("commitment-terms")
    minimum = _price_text(prices.get(PriceComponent.MINIMUM_COMMITMENT))
    if minimum:
        collected.fact(str(PriceComponent.MINIMUM_COMMITMENT.label), minimum)
    else:
        # Committed hours are the minimum commitment of a reserved quote (billed whether used or not).
        collected.field(quote, "committed_hours_per_month")
        if quote.committed_hours_per_month is not None:
            collected.field(quote, "term_months", required=False)
    collected.field(quote, "cancellation_terms")
    collected.fact(str(PriceComponent.OVERAGE_RATE.label), _price_text(prices.get(PriceComponent.OVERAGE_RATE)))
    collected.field(quote, "support_tier")
    return collected.result()


#: The ancillary costs the question names, as the cost line kinds that price them.
ANCILLARY_KINDS = (
    CostKind.STORAGE,
    CostKind.NETWORK_EGRESS,
    CostKind.SNAPSHOTS,
    CostKind.PUBLIC_IP,
    CostKind.LOAD_BALANCER,
    CostKind.PRIVATE_NETWORK,
)


def _ancillary_costs(quote: Quote, prices: dict, lines: list[CostLine]) -> QuoteFacts:
    collected = _Collector("ancillary-costs")
    for kind in ANCILLARY_KINDS:
        sourced = [line for line in lines if line.kind == kind and line.source_reference]
        text = "; ".join(
            _("%(quantity)s %(unit)s × %(rate)s %(currency)s %(period)s (%(source)s)")
            % {
                "quantity": money.canonical(line.quantity),
                "unit": line.unit,
                "rate": money.canonical(line.rate),
                "currency": line.currency,
                "period": line.get_period_display(),
                "source": line.source_reference,
            }
            for line in sourced
        )
        collected.fact(str(kind.label), text or None)
    return collected.result()


#: question code → how the quote's facts answer it (see the table above).
RULES: dict[str, Callable[..., QuoteFacts]] = {
    "gpu-model-memory-node": _fields(
        "gpu-model-memory-node", ("gpu", "gpu_memory_gb", "form_factor", "gpus_per_node")
    ),
    "interconnect": _fields("interconnect", ("interconnect_intra_node", "interconnect_inter_node")),
    "node-shape": _fields(
        "node-shape",
        ("vcpus_per_node", "ram_gb_per_node", "local_nvme_tb_per_node", "storage_bandwidth", "network_bandwidth"),
    ),
    "placement": _fields("placement", ("region",), ("zone", "placement")),
    "commercial-model": _fields(
        "commercial-model",
        ("commercial_model",),
        ("payment_option", "term_months", "billing_granularity_seconds", "minimum_billed_seconds"),
    ),
    "commitment-terms": _commitment_terms,
    "ancillary-costs": _ancillary_costs,
}


def quote_facts(quote: Quote) -> dict[str, QuoteFacts]:
    """Per question code of RULES: what the quote (terms, current prices, current quote-level cost lines) states."""
    prices = selectors.current_prices(quote)
    lines = list(CostLine.objects.filter(quote=quote, candidate__isnull=True).current())
    return {code: rule(quote, prices, lines) for code, rule in RULES.items()}
