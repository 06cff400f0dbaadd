"""Phase-4 finance normalisation: GPU quotes, purchases and model-API routes compared at equal delivered work.

Pure Python (no Django, no ORM): the inputs are frozen dataclasses, every amount is a `Decimal` and stays
unrounded; only the pages round, for display, with apps/common/money.py.

Conventions (the issue's worked example is computed with exactly these):

* Demand is stated in accepted outputs per period (a 730-hour month by default). Each candidate must generate
  ``accepted ÷ quality acceptance`` outputs to deliver them; retries and failures are work on top of that.
* Capacity at the SLO is in outputs (requests) per second per GPU, and the peak rate is the offered load in
  requests per second. The fleet is sized in whole replicas, then whole nodes::

      required rate = max(peak rate, generated × (1 + retry rate + failure rate) ÷ operating seconds)
      GPUs          = ceil(required rate × (1 + headroom) ÷ (capacity per GPU × GPUs per replica)) × GPUs per replica
                      rounded up to whole nodes

* GPU cost is billed by the commercial model: on-demand and spot hours used (the operating hours, per run, rounded
  up to the quote's billing granularity), reserved committed hours regardless of use (plus the hours beyond the
  commitment at the overage price, rounded up to the granularity), purchase as amortised capex + energy
  (power × PUE × operating hours) + colocation (per kW-month) + maintenance, API as generated requests × the
  per-request token price. A minimum commitment tops the GPU cost up to that amount.
* **Idle capacity** is part of the GPU cost, shown as its own figure and never added a second time::

      productive share = generated outputs ÷ (billed GPUs × capacity per GPU × 3600 × billed capacity hours)
      productive       = GPU cost before any minimum-commitment top-up × min(1, productive share)
      idle             = GPU cost − productive

  Billed capacity hours are the hours the billed GPUs are available: the billed on-demand/spot hours, the committed
  (plus overage) hours, the whole period for owned hardware. Retries are not productive work: they are charged by
  the retry-waste line. Worked example A: 20,000,000 ÷ (3 × 5 × 3600 × 730 = 39,420,000) = 0.507357…, so
  productive = 6,570.00 × 0.507357… = 3,333.33 and idle = 3,236.67; B: 20,000,000 ÷ (2 × 9 × 3600 × 730) gives
  productive 2,160.49 and idle 2,949.51 of 5,110.00. An API route has no idle capacity (it pays per token) except a
  minimum-commitment top-up.
* Failure waste = retry waste (retry rate × GPU cost) + failure loss (failure rate × GPU cost) + spot preemption
  rework (extra billed hours = billed hours × preemptions per hour × rework hours per preemption). For an API route
  the retried and failed requests are paid requests: waste = generated × (retry + failure rate) × request price.
* Effective unit cost = (GPU cost + storage/network + platform labor + other cost lines + failure waste)
  ÷ accepted outputs, kept unrounded (34 significant digits).
* Money is converted to the reporting currency with `ExchangeRate` (reporting units per unit of the quote's
  currency); a candidate whose currency has no rate is an error, never a silent 1.

Bad inputs raise `NormalizationError` naming the candidate and the field; the computation runs in a decimal
context that traps division by zero and invalid operations, so no NaN or infinity can come out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
    localcontext,
)
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from apps.common.decimals import DecimalInputError, parse_decimal

# The inputs carry where each figure comes from; that vocabulary has its one home in the pure provenance module.
from apps.common.provenance import Provenance as Provenance
from apps.common.provenance import ProvenanceKind as ProvenanceKind
from apps.quotes.kinds import HOURLY_UNITS, BillingModel, CandidateKind, PriceUnit

SECONDS_PER_HOUR = Decimal(3600)
HOURS_PER_MONTH = Decimal(730)  # 8,760 hours a year ÷ 12: the month the guide and the quotes use
MONTHS_PER_YEAR = Decimal(12)
TOKENS_PER_PRICE_UNIT = Decimal(1_000_000)  # API prices are per 1M tokens
ZERO = Decimal(0)
ONE = Decimal(1)

# Every computation runs in this context: 34 significant digits (IEEE decimal128), and the signals that would
# otherwise produce NaN or infinity raise instead.
DECIMAL_CONTEXT = Context(prec=34, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])


class NormalizationError(ValueError):
    """A bad input: says which candidate (None for the demand or a helper's argument) and which field."""

    def __init__(self, candidate: str | None, field: str, message: str):
        self.candidate = candidate
        self.field = field
        self.message = message
        where = f"candidate {candidate!r}" if candidate is not None else "demand"
        super().__init__(f"{where}, field {field!r}: {message}")


class Mode(StrEnum):
    REALTIME = "realtime"
    BATCH = "batch"
    MEDIA = "media"
    TRAINING = "training"


class CostKind(StrEnum):
    STORAGE = "storage"
    NETWORK = "network"
    GATEWAY = "gateway"
    SERVING_STACK = "serving_stack"
    OBSERVABILITY = "observability"
    PLATFORM_LABOR = "platform_labor"
    MODERATION = "moderation"
    QUEUE_OVERHEAD = "queue_overhead"
    OPERATOR_REVIEW = "operator_review"
    CHECKPOINTING = "checkpointing"
    OTHER = "other"


# Which phase-4 column each typed cost line lands in (the guide's row puts the API route's gateway in
# "storage/network"); every other kind is shown in "other costs" and itemised in `Row.cost_lines`.
COST_COLUMN = {
    CostKind.STORAGE: "storage_network",
    CostKind.NETWORK: "storage_network",
    CostKind.GATEWAY: "storage_network",
    CostKind.PLATFORM_LABOR: "platform_labor",
}

KINDS_OF_MODEL = {
    BillingModel.ON_DEMAND: CandidateKind.GPU,
    BillingModel.RESERVED: CandidateKind.GPU,
    BillingModel.SPOT: CandidateKind.GPU,
    BillingModel.PURCHASE: CandidateKind.PURCHASE,
    BillingModel.API: CandidateKind.API,
}


def _decimal(candidate: str | None, name: str, value: Any) -> Decimal:
    """An input as an exact Decimal (apps/common/decimals.py's rules), refused as this candidate's field."""
    try:
        return parse_decimal(value, field=name)
    except DecimalInputError as error:
        raise NormalizationError(candidate, name, error.message) from None


def _check_range(
    candidate: str | None,
    name: str,
    value: Decimal,
    *,
    positive: bool = False,
    at_most: Decimal | None = None,
    below: Decimal | None = None,
    at_least: Decimal | None = None,
) -> None:
    if value < ZERO:
        raise NormalizationError(candidate, name, f"must not be negative (got {value})")
    if positive and value == ZERO:
        raise NormalizationError(candidate, name, "must be greater than zero")
    if at_least is not None and value < at_least:
        raise NormalizationError(candidate, name, f"must be at least {at_least} (got {value})")
    if at_most is not None and value > at_most:
        raise NormalizationError(candidate, name, f"must not be above {at_most} (got {value})")
    if below is not None and value >= below:
        raise NormalizationError(candidate, name, f"must be below {below} (got {value})")


def _positive_int(candidate: str | None, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NormalizationError(candidate, name, f"must be a whole number of at least 1 (got {value!r})")
    return value


def _frozen_provenance(candidate: str | None, allowed: Iterable[str], provenance: Any) -> Mapping[str, Provenance]:
    allowed = set(allowed)
    for key, value in dict(provenance).items():
        if key not in allowed:
            raise NormalizationError(candidate, key, "provenance given for a field that is not an input")
        if not isinstance(value, Provenance):
            raise NormalizationError(candidate, key, "provenance must be a Provenance")
    return MappingProxyType(dict(provenance))


@dataclass(frozen=True)
class CostLine:
    """A typed cost per period: `quantity` × `unit_price` (e.g. 20 hours × 90.00 of platform labor)."""

    kind: CostKind
    unit_price: Decimal
    provenance: Provenance
    quantity: Decimal = ONE
    unit: str = "period"
    label: str = ""

    @property
    def amount(self) -> Decimal:
        return self.quantity * self.unit_price


def _validated_cost_lines(owner: str | None, lines: Iterable[CostLine]) -> tuple[CostLine, ...]:
    checked = []
    for index, line in enumerate(lines):
        prefix = f"cost_lines[{index}]"
        if not isinstance(line, CostLine):
            raise NormalizationError(owner, prefix, "must be a CostLine")
        try:
            kind = CostKind(line.kind)
        except ValueError:
            raise NormalizationError(owner, f"{prefix}.kind", f"unknown cost kind {line.kind!r}") from None
        unit_price = _decimal(owner, f"{prefix}.unit_price", line.unit_price)
        quantity = _decimal(owner, f"{prefix}.quantity", line.quantity)
        _check_range(owner, f"{prefix}.unit_price", unit_price)
        _check_range(owner, f"{prefix}.quantity", quantity)
        if not isinstance(line.provenance, Provenance):
            raise NormalizationError(owner, f"{prefix}.provenance", "every cost line needs its provenance")
        checked.append(dataclasses.replace(line, kind=kind, unit_price=unit_price, quantity=quantity))
    return tuple(checked)


@dataclass(frozen=True)
class Demand:
    """What the workload asks for in one period (from the workload summary).

    `peak_rate` is the offered load at peak in requests per second (0 for batch work sized by volume);
    `operating_hours` are the hours per period the service runs (the period for always-on);
    `runs_per_period` is how many separate runs those hours come in (billing granularity applies per run).
    """

    accepted_outputs: Decimal
    period_hours: Decimal
    peak_rate: Decimal
    operating_hours: Decimal
    mode: Mode
    quality_acceptance: Decimal = ONE
    runs_per_period: int = 1
    p95_latency_target_ms: Decimal | None = None
    output_unit: str = "output"
    provenance: Mapping[str, Provenance] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def setter(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        try:
            setter("mode", Mode(self.mode))
        except ValueError:
            raise NormalizationError(None, "mode", f"unknown mode {self.mode!r}") from None
        for name in ("accepted_outputs", "period_hours", "peak_rate", "operating_hours", "quality_acceptance"):
            setter(name, _decimal(None, name, getattr(self, name)))
        _check_range(None, "accepted_outputs", self.accepted_outputs, positive=True)
        _check_range(None, "period_hours", self.period_hours, positive=True)
        _check_range(None, "peak_rate", self.peak_rate, positive=self.mode is Mode.REALTIME)
        _check_range(None, "operating_hours", self.operating_hours, positive=True, at_most=self.period_hours)
        _check_range(None, "quality_acceptance", self.quality_acceptance, positive=True, at_most=ONE)
        setter("runs_per_period", _positive_int(None, "runs_per_period", self.runs_per_period))
        if self.p95_latency_target_ms is not None:
            setter("p95_latency_target_ms", _decimal(None, "p95_latency_target_ms", self.p95_latency_target_ms))
            _check_range(None, "p95_latency_target_ms", self.p95_latency_target_ms, positive=True)
        inputs = ("accepted_outputs", "period_hours", "peak_rate", "operating_hours", "quality_acceptance",
                  "p95_latency_target_ms")
        setter("provenance", _frozen_provenance(None, inputs, self.provenance))

    @property
    def generated_outputs(self) -> Decimal:
        return self.accepted_outputs / self.quality_acceptance


# The numeric inputs each billing model uses; any other model-specific input must stay unset (None), so a
# mistyped quote (a purchase price on an API route) is an error instead of being ignored.
_PRICE_INPUTS = {
    BillingModel.ON_DEMAND: ("unit_price",),
    BillingModel.SPOT: ("unit_price",),
    BillingModel.RESERVED: ("unit_price", "committed_hours", "overage_price"),
    BillingModel.PURCHASE: ("capex_per_node", "amortisation_months", "power_kw_per_node", "pue",
                               "energy_price_per_kwh", "colocation_per_kw_month", "maintenance_per_node_year"),
    BillingModel.API: ("api_input_price_per_million", "api_output_price_per_million", "mean_input_tokens",
                          "mean_output_tokens"),
}
_MODEL_INPUTS = {
    BillingModel.ON_DEMAND: (*_PRICE_INPUTS[BillingModel.ON_DEMAND], "billing_granularity_hours",
                                "minimum_commitment", "capacity_at_slo_per_gpu", "headroom"),
    BillingModel.SPOT: (*_PRICE_INPUTS[BillingModel.SPOT], "billing_granularity_hours", "minimum_commitment",
                           "capacity_at_slo_per_gpu", "headroom", "spot_preemptions_per_hour", "spot_rework_hours"),
    BillingModel.RESERVED: (*_PRICE_INPUTS[BillingModel.RESERVED], "billing_granularity_hours",
                               "minimum_commitment", "capacity_at_slo_per_gpu", "headroom"),
    BillingModel.PURCHASE: (*_PRICE_INPUTS[BillingModel.PURCHASE], "capacity_at_slo_per_gpu", "headroom"),
    BillingModel.API: (*_PRICE_INPUTS[BillingModel.API], "minimum_commitment"),
}
_REQUIRED_INPUTS = {
    BillingModel.ON_DEMAND: ("unit_price", "capacity_at_slo_per_gpu"),
    BillingModel.SPOT: ("unit_price", "capacity_at_slo_per_gpu"),
    BillingModel.RESERVED: ("unit_price", "committed_hours", "capacity_at_slo_per_gpu"),
    BillingModel.PURCHASE: ("capex_per_node", "amortisation_months", "power_kw_per_node", "pue",
                               "energy_price_per_kwh", "capacity_at_slo_per_gpu"),
    BillingModel.API: _PRICE_INPUTS[BillingModel.API],
}
_COMMON_INPUTS = ("retry_rate", "failure_rate", "quality_acceptance", "p95_latency_ms", "memory_margin",
                  "commitment_months")
_OPTIONAL_NUMBERS = (
    *dict.fromkeys(name for names in _MODEL_INPUTS.values() for name in names if name != "headroom"),
    "p95_latency_ms", "memory_margin", "quality_acceptance", "commitment_months",
)
_POSITIVE_INPUTS = frozenset({"unit_price", "capacity_at_slo_per_gpu", "committed_hours", "amortisation_months",
                              "power_kw_per_node", "billing_granularity_hours", "quality_acceptance",
                              "p95_latency_ms", "commitment_months"})


@dataclass(frozen=True)
class CandidateInput:
    """One candidate of the comparison: a GPU quote, a purchase option or a model-API route.

    Units: `unit_price` per `price_unit` (GPU-hour or node-hour); `committed_hours` per GPU (or node) per period;
    `minimum_commitment` money per period; `capacity_at_slo_per_gpu` requests per second per GPU at the SLO;
    `headroom`, `retry_rate`, `failure_rate`, `quality_acceptance` and `memory_margin` are fractions (0.2 = 20 %);
    `spot_preemptions_per_hour` per GPU, `spot_rework_hours` lost per preemption; purchase money per node;
    API prices per 1M tokens. Every numeric input that is set and non-zero needs an entry in `provenance`
    (keyed by the field name); each cost line carries its own. `commercial_model` is how the quote bills
    (`Quote.billing_model`: several commercial models of a quote bill alike).
    """

    id: str
    label: str
    kind: CandidateKind
    commercial_model: BillingModel
    currency: str = "USD"
    unit_price: Decimal | None = None
    price_unit: PriceUnit = PriceUnit.GPU_HOUR
    billing_granularity_hours: Decimal | None = None
    committed_hours: Decimal | None = None
    overage_price: Decimal | None = None
    minimum_commitment: Decimal | None = None
    commitment_months: Decimal | None = None
    gpus_per_node: int = 1
    gpus_per_replica: int = 1
    capacity_at_slo_per_gpu: Decimal | None = None
    headroom: Decimal = ZERO
    spot_preemptions_per_hour: Decimal | None = None
    spot_rework_hours: Decimal | None = None
    capex_per_node: Decimal | None = None
    amortisation_months: Decimal | None = None
    power_kw_per_node: Decimal | None = None
    pue: Decimal | None = None
    energy_price_per_kwh: Decimal | None = None
    colocation_per_kw_month: Decimal | None = None
    maintenance_per_node_year: Decimal | None = None
    api_input_price_per_million: Decimal | None = None
    api_output_price_per_million: Decimal | None = None
    mean_input_tokens: Decimal | None = None
    mean_output_tokens: Decimal | None = None
    cost_lines: tuple[CostLine, ...] = ()
    retry_rate: Decimal = ZERO
    failure_rate: Decimal = ZERO
    quality_acceptance: Decimal | None = None
    p95_latency_ms: Decimal | None = None
    memory_margin: Decimal | None = None
    provenance: Mapping[str, Provenance] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cid = self.id

        def setter(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if not isinstance(cid, str) or not cid.strip():
            raise NormalizationError(None, "id", "a candidate needs a non-empty id")
        for name, enum in (("kind", CandidateKind), ("commercial_model", BillingModel), ("price_unit", PriceUnit)):
            try:
                setter(name, enum(getattr(self, name)))
            except ValueError:
                raise NormalizationError(cid, name, f"unknown value {getattr(self, name)!r}") from None
        if self.price_unit not in HOURLY_UNITS:
            raise NormalizationError(cid, "price_unit", f"must be per GPU-hour or per node-hour, not {self.price_unit}")
        if KINDS_OF_MODEL[self.commercial_model] is not self.kind:
            raise NormalizationError(cid, "commercial_model",
                                     f"a {self.kind} candidate cannot be billed as {self.commercial_model}")
        if not isinstance(self.currency, str) or len(self.currency) != 3 or not self.currency.isalpha():
            raise NormalizationError(cid, "currency", "must be a three-letter ISO 4217 code")
        setter("currency", self.currency.upper())
        setter("gpus_per_node", _positive_int(cid, "gpus_per_node", self.gpus_per_node))
        setter("gpus_per_replica", _positive_int(cid, "gpus_per_replica", self.gpus_per_replica))

        used = set(_MODEL_INPUTS[self.commercial_model]) | set(_COMMON_INPUTS)
        for name in _OPTIONAL_NUMBERS:
            value = getattr(self, name)
            if value is None:
                continue
            if name not in used:
                raise NormalizationError(cid, name, f"does not apply to a {self.commercial_model} candidate")
            setter(name, _decimal(cid, name, value))
            _check_range(cid, name, getattr(self, name), positive=name in _POSITIVE_INPUTS)
        for name in ("headroom", "retry_rate", "failure_rate"):
            setter(name, _decimal(cid, name, getattr(self, name)))
            _check_range(cid, name, getattr(self, name))
        if self.headroom and "headroom" not in used:
            raise NormalizationError(cid, "headroom", f"does not apply to a {self.commercial_model} candidate")
        for name in _REQUIRED_INPUTS[self.commercial_model]:
            if getattr(self, name) is None:
                raise NormalizationError(cid, name, f"a {self.commercial_model} candidate needs it")

        if self.quality_acceptance is not None:
            _check_range(cid, "quality_acceptance", self.quality_acceptance, positive=True, at_most=ONE)
        _check_range(cid, "failure_rate", self.failure_rate, below=ONE)
        if self.memory_margin is not None:
            _check_range(cid, "memory_margin", self.memory_margin, at_most=ONE)
        if self.pue is not None:
            _check_range(cid, "pue", self.pue, at_least=ONE)
        if self.commercial_model is BillingModel.SPOT:
            lost_share = (self.spot_preemptions_per_hour or ZERO) * (self.spot_rework_hours or ZERO)
            if lost_share >= ONE:
                raise NormalizationError(cid, "spot_rework_hours",
                                         "preemptions per hour × rework hours reaches 1: the work never completes")
        if self.kind is CandidateKind.API and self.gpus_per_node != 1:
            raise NormalizationError(cid, "gpus_per_node", "does not apply to an API route")

        setter("cost_lines", _validated_cost_lines(cid, self.cost_lines))
        all_inputs = set(_OPTIONAL_NUMBERS) | {"headroom", "retry_rate", "failure_rate"}
        setter("provenance", _frozen_provenance(cid, all_inputs, self.provenance))
        for name in sorted(used):
            value = getattr(self, name)
            if value is not None and value != ZERO and name not in self.provenance:
                raise NormalizationError(cid, name, "every input needs its provenance (measured, quoted or estimated)")

    @property
    def hourly_price_per_gpu(self) -> Decimal | None:
        """The quoted price per GPU-hour (a node-hour price shared by the node's GPUs); None for API and purchase."""
        if self.unit_price is None:
            return None
        if self.price_unit is PriceUnit.NODE_HOUR:
            return self.unit_price / self.gpus_per_node
        return self.unit_price


@dataclass(frozen=True)
class ExchangeRate:
    """`rate` units of the reporting currency per one unit of `currency`, with where the rate comes from."""

    currency: str
    rate: Decimal
    provenance: Provenance


@dataclass(frozen=True)
class Note:
    """A remark on a row: a stable `code` (the page translates it) and its parameters."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return NOTE_TEXTS[self.code].format(**self.params)


NOTE_TEXTS = {
    "quality_acceptance": "quality acceptance {value}",
    "p95_latency": "p95 latency {measured_ms} ms against a {target_ms} ms target ({verdict})",
    "p95_latency_unmeasured": "p95 latency not measured",
    "p95_latency_no_target": "p95 latency {measured_ms} ms (the workload states no target)",
    "memory_margin": "memory margin {value} of the device memory",
    "idle_share": "idle capacity is {share:.1%} of the GPU cost",
    "sized_by": "fleet sized by the {basis} rate: {gpus} GPUs on {nodes} nodes",
    "granularity": "{billed_hours} billed hours per GPU for {operating_hours} operating hours (billing granularity)",
    "overage": "{hours} hours per GPU beyond the commitment, billed at the overage price",
    "minimum_commitment": "minimum commitment tops the cost up by {amount} (counted as idle)",
    "rate_not_given": "{field} not given: counted as 0",
    "derived_hourly_price": "hourly price derived from the owned cost per GPU-hour",
    "idle_power_not_counted": "power drawn outside the {operating_hours} operating hours is not counted",
    "currency_converted": "converted from {source} at {rate} {target} per {source}",
    "paid_requests": "{paid} paid requests for {generated} generated outputs",
}


@dataclass(frozen=True)
class Row:
    """One phase-4 row. Money is in the reporting currency, per period, unrounded.

    `total_cost` = gpu_cost + storage_network + platform_labor + other_costs + failure_waste; `idle_capacity` and
    `productive_capacity` split `gpu_cost` (they are not added to the total).
    """

    candidate_id: str
    label: str
    kind: CandidateKind
    commercial_model: BillingModel
    currency: str
    gpus: int
    nodes: int
    billed_hours_per_gpu: Decimal | None
    gpu_cost: Decimal
    gpu_cost_parts: Mapping[str, Decimal]
    productive_capacity: Decimal
    idle_capacity: Decimal
    productive_share: Decimal
    storage_network: Decimal
    platform_labor: Decimal
    other_costs: Decimal
    cost_lines: Mapping[str, Decimal]
    retry_waste: Decimal
    failure_loss: Decimal
    preemption_rework: Decimal
    failure_waste: Decimal
    total_cost: Decimal
    generated_outputs: Decimal
    accepted_outputs: Decimal
    paid_requests: Decimal | None
    effective_unit_cost: Decimal
    hourly_price: Decimal | None
    quality_acceptance: Decimal
    notes: tuple[Note, ...]
    provenance: Mapping[str, tuple[Provenance, ...]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: Decimals as exact strings (unrounded), provenance as dicts per figure."""

        def plain(value: Any) -> Any:
            if isinstance(value, Decimal):
                return str(value)
            if isinstance(value, StrEnum):
                return str(value)
            if isinstance(value, Mapping):
                return {key: plain(item) for key, item in value.items()}
            return value

        data = {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in ("notes", "provenance")}
        data["notes"] = [{"code": note.code, "params": plain(dict(note.params)), "text": note.text}
                         for note in self.notes]
        data["provenance"] = {name: [item.to_dict() for item in items] for name, items in self.provenance.items()}
        return data


def _ceil(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _unique(items: Iterable[Provenance]) -> tuple[Provenance, ...]:
    return tuple(dict.fromkeys(items))


def _rate_table(currency: str, exchange_rates: Iterable[ExchangeRate]) -> dict[str, ExchangeRate]:
    table: dict[str, ExchangeRate] = {}
    for exchange_rate in exchange_rates:
        code = exchange_rate.currency.upper()
        rate = _decimal(None, f"exchange_rates[{code}]", exchange_rate.rate)
        _check_range(None, f"exchange_rates[{code}]", rate, positive=True)
        if not isinstance(exchange_rate.provenance, Provenance):
            raise NormalizationError(None, f"exchange_rates[{code}]", "an exchange rate needs its provenance")
        table[code] = dataclasses.replace(exchange_rate, currency=code, rate=rate)
    table[currency.upper()] = ExchangeRate(currency.upper(), ONE, Provenance.quoted("identity"))
    return table


@dataclass(frozen=True)
class _Compute:
    """The compute part of a row in the candidate's own currency."""

    gpus: int
    nodes: int
    billed_hours_per_gpu: Decimal | None
    gpu_cost: Decimal
    gpu_cost_parts: dict[str, Decimal]
    productive: Decimal
    retry_waste: Decimal
    failure_loss: Decimal
    preemption_rework: Decimal
    paid_requests: Decimal | None
    hourly_price: Decimal | None
    notes: tuple[Note, ...]


def _billed_run_hours(demand: Demand, granularity: Decimal | None) -> Decimal:
    """Operating hours per GPU as billed: each run rounded up to the billing granularity."""
    if granularity is None:
        return demand.operating_hours
    per_run = demand.operating_hours / demand.runs_per_period
    return _ceil(per_run / granularity) * granularity * demand.runs_per_period


def _fleet(demand: Demand, candidate: CandidateInput, generated: Decimal) -> _Compute:
    cid = candidate.id
    capacity = candidate.capacity_at_slo_per_gpu
    assert capacity is not None  # guaranteed by CandidateInput validation
    notes: list[Note] = []
    waste_share = ONE + candidate.retry_rate + candidate.failure_rate
    mean_rate = generated * waste_share / (demand.operating_hours * SECONDS_PER_HOUR)
    basis = "peak" if demand.peak_rate >= mean_rate else "volume"
    required_rate = max(demand.peak_rate, mean_rate) * (ONE + candidate.headroom)
    replicas = _ceil(required_rate / (capacity * candidate.gpus_per_replica))
    nodes = -(-(replicas * candidate.gpus_per_replica) // candidate.gpus_per_node)
    gpus = nodes * candidate.gpus_per_node
    notes.append(Note("sized_by", {"basis": basis, "gpus": gpus, "nodes": nodes}))
    billing_units = Decimal(nodes if candidate.price_unit is PriceUnit.NODE_HOUR else gpus)

    parts: dict[str, Decimal] = {}
    preemption_rework = ZERO
    model = candidate.commercial_model
    if model is BillingModel.PURCHASE:
        months = demand.period_hours / HOURS_PER_MONTH
        power = candidate.power_kw_per_node
        parts["amortised_capex"] = nodes * candidate.capex_per_node / candidate.amortisation_months * months
        parts["energy"] = nodes * power * candidate.pue * demand.operating_hours * candidate.energy_price_per_kwh
        parts["colocation"] = nodes * power * (candidate.colocation_per_kw_month or ZERO) * months
        parts["maintenance"] = nodes * (candidate.maintenance_per_node_year or ZERO) * months / MONTHS_PER_YEAR
        capacity_hours = demand.period_hours
        billed_hours: Decimal | None = demand.period_hours
        notes.append(Note("derived_hourly_price"))
        if demand.operating_hours < demand.period_hours:
            notes.append(Note("idle_power_not_counted", {"operating_hours": demand.operating_hours}))
    elif model is BillingModel.RESERVED:
        # Hours inside the commitment are prepaid, so only the overage is rounded to the billing granularity.
        committed = candidate.committed_hours
        if committed > demand.period_hours:
            raise NormalizationError(cid, "committed_hours", "cannot exceed the hours of the period")
        overage = max(ZERO, demand.operating_hours - committed)
        granularity = candidate.billing_granularity_hours
        if overage and granularity is not None:
            overage = _ceil(overage / granularity) * granularity
        if overage and candidate.overage_price is None:
            raise NormalizationError(cid, "committed_hours",
                                     f"the workload runs {demand.operating_hours} h, the commitment covers "
                                     f"{committed} h and no overage price is given")
        parts["committed"] = billing_units * committed * candidate.unit_price
        if overage:
            parts["overage"] = billing_units * overage * candidate.overage_price
            notes.append(Note("overage", {"hours": overage}))
        capacity_hours = billed_hours = committed + overage
    else:
        used_hours = _billed_run_hours(demand, candidate.billing_granularity_hours)
        if used_hours != demand.operating_hours:
            notes.append(Note("granularity", {"billed_hours": used_hours, "operating_hours": demand.operating_hours}))
        parts["hours_used"] = billing_units * used_hours * candidate.unit_price
        capacity_hours = billed_hours = used_hours
        if model is BillingModel.SPOT:
            lost_share = (candidate.spot_preemptions_per_hour or ZERO) * (candidate.spot_rework_hours or ZERO)
            preemption_rework = billing_units * used_hours * lost_share * candidate.unit_price

    base_cost = sum(parts.values(), ZERO)
    top_up = max(ZERO, (candidate.minimum_commitment or ZERO) - base_cost)
    if top_up:
        parts["minimum_commitment_top_up"] = top_up
        notes.append(Note("minimum_commitment", {"amount": top_up}))
    gpu_cost = base_cost + top_up
    capacity_outputs = gpus * capacity * SECONDS_PER_HOUR * capacity_hours
    productive = base_cost * min(ONE, generated / capacity_outputs)
    if model is BillingModel.PURCHASE:
        hourly_price = gpu_cost / (gpus * demand.period_hours)
    else:
        hourly_price = candidate.hourly_price_per_gpu
    return _Compute(
        gpus=gpus, nodes=nodes, billed_hours_per_gpu=billed_hours, gpu_cost=gpu_cost, gpu_cost_parts=parts,
        productive=productive, retry_waste=candidate.retry_rate * gpu_cost,
        failure_loss=candidate.failure_rate * gpu_cost, preemption_rework=preemption_rework, paid_requests=None,
        hourly_price=hourly_price, notes=tuple(notes),
    )


def _api_route(candidate: CandidateInput, generated: Decimal) -> _Compute:
    price_per_request = (
        candidate.mean_input_tokens * candidate.api_input_price_per_million
        + candidate.mean_output_tokens * candidate.api_output_price_per_million
    ) / TOKENS_PER_PRICE_UNIT
    compute = generated * price_per_request
    parts = {"requests": compute}
    top_up = max(ZERO, (candidate.minimum_commitment or ZERO) - compute)
    notes = []
    if top_up:
        parts["minimum_commitment_top_up"] = top_up
        notes.append(Note("minimum_commitment", {"amount": top_up}))
    paid = generated * (ONE + candidate.retry_rate + candidate.failure_rate)
    notes.append(Note("paid_requests", {"paid": paid, "generated": generated}))
    return _Compute(
        gpus=0, nodes=0, billed_hours_per_gpu=None, gpu_cost=compute + top_up, gpu_cost_parts=parts,
        productive=compute, retry_waste=generated * candidate.retry_rate * price_per_request,
        failure_loss=generated * candidate.failure_rate * price_per_request, preemption_rework=ZERO,
        paid_requests=paid, hourly_price=None, notes=tuple(notes),
    )


def _figure_provenance(
    demand: Demand, candidate: CandidateInput, exchange_rate: ExchangeRate, converted: bool
) -> dict[str, tuple[Provenance, ...]]:
    own = candidate.provenance

    def inputs(*names: str) -> list[Provenance]:
        return [own[name] for name in names if name in own]

    def lines(column: str | None) -> list[Provenance]:
        return [line.provenance for line in candidate.cost_lines if COST_COLUMN.get(line.kind) == column]

    rate = [exchange_rate.provenance] if converted else []
    price = inputs(*_MODEL_INPUTS[candidate.commercial_model]) + inputs("minimum_commitment")
    accepted = [demand.provenance[name] for name in ("accepted_outputs", "quality_acceptance")
                if name in demand.provenance] + inputs("quality_acceptance")
    sizing = [demand.provenance[name] for name in ("peak_rate", "operating_hours") if name in demand.provenance]
    figures = {
        "gpu_cost": price + sizing + rate,
        "productive_capacity": price + sizing + accepted + rate,
        "idle_capacity": price + sizing + accepted + rate,
        "storage_network": lines("storage_network") + rate,
        "platform_labor": lines("platform_labor") + rate,
        "other_costs": lines(None) + rate,
        "failure_waste": inputs("retry_rate", "failure_rate", "spot_preemptions_per_hour", "spot_rework_hours")
        + price + rate,
        "accepted_outputs": accepted,
        "hourly_price": inputs("unit_price") + rate if candidate.unit_price is not None else price + rate,
        "notes": inputs("p95_latency_ms", "memory_margin", "quality_acceptance"),
    }
    figures["effective_unit_cost"] = [item for name in ("gpu_cost", "storage_network", "platform_labor",
                                                        "other_costs", "failure_waste", "accepted_outputs")
                                      for item in figures[name]]
    return {name: _unique(items) for name, items in figures.items()}


def _normalize_one(demand: Demand, candidate: CandidateInput, currency: str,
                   rates: Mapping[str, ExchangeRate]) -> Row:
    exchange_rate = rates.get(candidate.currency)
    if exchange_rate is None:
        raise NormalizationError(candidate.id, "currency",
                                 f"no exchange rate from {candidate.currency} to {currency}")
    rate = exchange_rate.rate
    converted = candidate.currency != currency
    quality = candidate.quality_acceptance if candidate.quality_acceptance is not None else demand.quality_acceptance
    generated = demand.accepted_outputs / quality
    if candidate.kind is CandidateKind.API:
        compute = _api_route(candidate, generated)
    else:
        compute = _fleet(demand, candidate, generated)

    column_totals = {"storage_network": ZERO, "platform_labor": ZERO, "other_costs": ZERO}
    by_kind: dict[str, Decimal] = {}
    for line in candidate.cost_lines:
        column = COST_COLUMN.get(line.kind, "other_costs")
        column_totals[column] += line.amount * rate
        by_kind[str(line.kind)] = by_kind.get(str(line.kind), ZERO) + line.amount * rate

    gpu_cost = compute.gpu_cost * rate
    productive = compute.productive * rate
    retry_waste = compute.retry_waste * rate
    failure_loss = compute.failure_loss * rate
    preemption_rework = compute.preemption_rework * rate
    failure_waste = retry_waste + failure_loss + preemption_rework
    total = gpu_cost + sum(column_totals.values(), ZERO) + failure_waste
    idle = gpu_cost - productive

    notes = list(compute.notes)
    notes.append(Note("quality_acceptance", {"value": quality}))
    if candidate.p95_latency_ms is None:
        notes.append(Note("p95_latency_unmeasured"))
    elif demand.p95_latency_target_ms is None:
        notes.append(Note("p95_latency_no_target", {"measured_ms": candidate.p95_latency_ms}))
    else:
        verdict = "meets" if candidate.p95_latency_ms <= demand.p95_latency_target_ms else "misses"
        notes.append(Note("p95_latency", {"measured_ms": candidate.p95_latency_ms,
                                          "target_ms": demand.p95_latency_target_ms, "verdict": verdict}))
    if candidate.memory_margin is not None:
        notes.append(Note("memory_margin", {"value": candidate.memory_margin}))
    if gpu_cost and candidate.kind is not CandidateKind.API:
        notes.append(Note("idle_share", {"share": idle / gpu_cost}))
    for name in ("retry_rate", "failure_rate"):
        if getattr(candidate, name) == ZERO and name not in candidate.provenance:
            notes.append(Note("rate_not_given", {"field": name}))
    if converted:
        notes.append(Note("currency_converted", {"source": candidate.currency, "target": currency, "rate": rate}))

    return Row(
        candidate_id=candidate.id,
        label=candidate.label,
        kind=candidate.kind,
        commercial_model=candidate.commercial_model,
        currency=currency,
        gpus=compute.gpus,
        nodes=compute.nodes,
        billed_hours_per_gpu=compute.billed_hours_per_gpu,
        gpu_cost=gpu_cost,
        gpu_cost_parts=MappingProxyType({name: value * rate for name, value in compute.gpu_cost_parts.items()}),
        productive_capacity=productive,
        idle_capacity=idle,
        productive_share=productive / gpu_cost if gpu_cost else ZERO,
        storage_network=column_totals["storage_network"],
        platform_labor=column_totals["platform_labor"],
        other_costs=column_totals["other_costs"],
        cost_lines=MappingProxyType(by_kind),
        retry_waste=retry_waste,
        failure_loss=failure_loss,
        preemption_rework=preemption_rework,
        failure_waste=failure_waste,
        total_cost=total,
        generated_outputs=generated,
        accepted_outputs=demand.accepted_outputs,
        paid_requests=compute.paid_requests,
        effective_unit_cost=total / demand.accepted_outputs,
        hourly_price=compute.hourly_price * rate if compute.hourly_price is not None else None,
        quality_acceptance=quality,
        notes=tuple(notes),
        provenance=MappingProxyType(_figure_provenance(demand, candidate, exchange_rate, converted)),
    )


def normalize(
    demand: Demand,
    candidates: Iterable[CandidateInput],
    *,
    currency: str = "USD",
    exchange_rates: Iterable[ExchangeRate] = (),
) -> tuple[Row, ...]:
    """One `Row` per candidate, in the given order, all in `currency` and for the same delivered work."""
    if demand.mode is Mode.TRAINING:
        raise NormalizationError(None, "mode", "training is compared per completed run: use training_run_cost")
    currency = currency.upper()
    candidates = tuple(candidates)
    seen: set[str] = set()
    for candidate in candidates:
        if not isinstance(candidate, CandidateInput):
            raise NormalizationError(None, "candidates", "each candidate must be a CandidateInput")
        if candidate.id in seen:
            raise NormalizationError(candidate.id, "id", "two candidates share this id")
        seen.add(candidate.id)
    with localcontext(DECIMAL_CONTEXT):
        rates = _rate_table(currency, exchange_rates)
        return tuple(_normalize_one(demand, candidate, currency, rates) for candidate in candidates)


# --- training: cost per completed run -------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingRun:
    """A training (or fine-tuning) run on one candidate cluster.

    `throughput_tokens_per_second` is the whole cluster's measured rate; `checkpoint_write_hours` is the time
    training stalls per checkpoint; `failures_per_gpu_hour` the interruption rate per GPU-hour; `restart_hours`
    the time to detect a failure, restart and restore the last checkpoint. Every non-zero input needs provenance.
    """

    id: str
    label: str
    gpus: int
    price_per_gpu_hour: Decimal
    token_budget: Decimal
    throughput_tokens_per_second: Decimal
    checkpoint_interval_hours: Decimal
    checkpoint_write_hours: Decimal = ZERO
    failures_per_gpu_hour: Decimal = ZERO
    restart_hours: Decimal = ZERO
    currency: str = "USD"
    cost_lines: tuple[CostLine, ...] = ()
    provenance: Mapping[str, Provenance] = field(default_factory=dict)

    _NUMBERS = ("price_per_gpu_hour", "token_budget", "throughput_tokens_per_second", "checkpoint_interval_hours",
                "checkpoint_write_hours", "failures_per_gpu_hour", "restart_hours")
    _POSITIVE = ("price_per_gpu_hour", "token_budget", "throughput_tokens_per_second", "checkpoint_interval_hours")

    def __post_init__(self) -> None:
        rid = self.id
        if not isinstance(rid, str) or not rid.strip():
            raise NormalizationError(None, "id", "a training run needs a non-empty id")
        object.__setattr__(self, "gpus", _positive_int(rid, "gpus", self.gpus))
        for name in self._NUMBERS:
            value = _decimal(rid, name, getattr(self, name))
            _check_range(rid, name, value, positive=name in self._POSITIVE)
            object.__setattr__(self, name, value)
        if not isinstance(self.currency, str) or len(self.currency) != 3:
            raise NormalizationError(rid, "currency", "must be a three-letter ISO 4217 code")
        object.__setattr__(self, "currency", self.currency.upper())
        object.__setattr__(self, "cost_lines", _validated_cost_lines(rid, self.cost_lines))
        object.__setattr__(self, "provenance", _frozen_provenance(rid, self._NUMBERS, self.provenance))
        for name in self._NUMBERS:
            if getattr(self, name) != ZERO and name not in self.provenance:
                raise NormalizationError(rid, name, "every input needs its provenance (measured, quoted or estimated)")


@dataclass(frozen=True)
class TrainingRow:
    """Cost of one completed run, in the reporting currency, unrounded.

    cost_per_completed_run = gpu_compute + checkpointing + failed_run_waste + storage + network + platform_labor
    + other cost lines.
    """

    run_id: str
    label: str
    currency: str
    compute_hours: Decimal
    checkpoints: int
    checkpoint_hours: Decimal
    expected_failures: Decimal
    failed_run_waste_hours: Decimal
    wall_clock_hours: Decimal
    gpu_hours: Decimal
    gpu_compute: Decimal
    checkpointing: Decimal
    failed_run_waste: Decimal
    storage: Decimal
    network: Decimal
    platform_labor: Decimal
    other_costs: Decimal
    cost_per_completed_run: Decimal
    provenance: Mapping[str, tuple[Provenance, ...]]


def training_run_cost(
    run: TrainingRun, *, currency: str = "USD", exchange_rates: Iterable[ExchangeRate] = ()
) -> TrainingRow:
    """Cost per completed run.

    compute hours   = token budget ÷ measured cluster throughput ÷ 3600
    checkpoints     = floor(compute hours ÷ checkpoint interval); checkpoint hours = checkpoints × write hours
    expected fails  = failures per GPU-hour × GPUs × (compute + checkpoint hours)   (first order: failures during
                      the re-done work are not compounded)
    lost per fail   = min(interval, compute hours) ÷ 2 (failures land uniformly between checkpoints) + restart hours
    each hour costs GPUs × price per GPU-hour; the typed cost lines are added per run.
    """
    currency = currency.upper()
    with localcontext(DECIMAL_CONTEXT):
        rates = _rate_table(currency, exchange_rates)
        exchange_rate = rates.get(run.currency)
        if exchange_rate is None:
            raise NormalizationError(run.id, "currency", f"no exchange rate from {run.currency} to {currency}")
        rate = exchange_rate.rate
        hourly = run.gpus * run.price_per_gpu_hour * rate
        compute_hours = run.token_budget / run.throughput_tokens_per_second / SECONDS_PER_HOUR
        checkpoints = int((compute_hours / run.checkpoint_interval_hours).to_integral_value(rounding=ROUND_FLOOR))
        checkpoint_hours = checkpoints * run.checkpoint_write_hours
        expected_failures = run.failures_per_gpu_hour * run.gpus * (compute_hours + checkpoint_hours)
        lost_per_failure = min(run.checkpoint_interval_hours, compute_hours) / 2 + run.restart_hours
        waste_hours = expected_failures * lost_per_failure
        wall_clock = compute_hours + checkpoint_hours + waste_hours
        by_kind = {kind: ZERO for kind in CostKind}
        for line in run.cost_lines:
            by_kind[line.kind] += line.amount * rate
        gpu_compute = hourly * compute_hours
        checkpointing = hourly * checkpoint_hours + by_kind.pop(CostKind.CHECKPOINTING)
        failed_run_waste = hourly * waste_hours
        storage = by_kind.pop(CostKind.STORAGE)
        network = by_kind.pop(CostKind.NETWORK)
        labor = by_kind.pop(CostKind.PLATFORM_LABOR)
        other = sum(by_kind.values(), ZERO)
        total = gpu_compute + checkpointing + failed_run_waste + storage + network + labor + other
        own = run.provenance
        converted = [exchange_rate.provenance] if run.currency != currency else []

        def inputs(*names: str) -> list[Provenance]:
            return [own[name] for name in names if name in own]

        figures = {
            "gpu_compute": inputs("price_per_gpu_hour", "token_budget", "throughput_tokens_per_second") + converted,
            "checkpointing": inputs("price_per_gpu_hour", "checkpoint_interval_hours", "checkpoint_write_hours")
            + [line.provenance for line in run.cost_lines if line.kind is CostKind.CHECKPOINTING] + converted,
            "failed_run_waste": inputs("price_per_gpu_hour", "failures_per_gpu_hour", "checkpoint_interval_hours",
                                       "restart_hours") + converted,
            "cost_lines": [line.provenance for line in run.cost_lines] + converted,
        }
        figures["cost_per_completed_run"] = [item for items in figures.values() for item in items]
        return TrainingRow(
            run_id=run.id, label=run.label, currency=currency, compute_hours=compute_hours, checkpoints=checkpoints,
            checkpoint_hours=checkpoint_hours, expected_failures=expected_failures,
            failed_run_waste_hours=waste_hours, wall_clock_hours=wall_clock, gpu_hours=run.gpus * wall_clock,
            gpu_compute=gpu_compute, checkpointing=checkpointing, failed_run_waste=failed_run_waste,
            storage=storage, network=network, platform_labor=labor, other_costs=other, cost_per_completed_run=total,
            provenance=MappingProxyType({name: _unique(items) for name, items in figures.items()}),
        )


# --- media: cost per accepted asset ----------------------------------------------------------------------------


def media_cost_per_accepted_asset(row: Row) -> Decimal:
    """DESIGN's media formula on a row normalised in media mode.

    (gpu_cost + storage + failed_renders + moderation + queue_overhead + operator_review) / accepted_assets, where
    failed renders are the row's failure waste (failed and retried renders, preemption rework); renders rejected by
    the quality filter are inside gpu_cost (they were generated). Any other cost line the candidate carries
    (network, labor, serving stack) is part of the all-in cost too, so this equals the row's effective unit cost.
    """
    with localcontext(DECIMAL_CONTEXT):
        lines = row.cost_lines
        media_lines = sum((lines.get(str(kind), ZERO) for kind in (
            CostKind.STORAGE, CostKind.MODERATION, CostKind.QUEUE_OVERHEAD, CostKind.OPERATOR_REVIEW)), ZERO)
        rest = sum((amount for kind, amount in lines.items() if kind not in {
            CostKind.STORAGE, CostKind.MODERATION, CostKind.QUEUE_OVERHEAD, CostKind.OPERATOR_REVIEW}), ZERO)
        return (row.gpu_cost + media_lines + row.failure_waste + rest) / row.accepted_outputs


# --- break-even helpers ----------------------------------------------------------------------------------------


def reserve_vs_on_demand_utilisation(reserved_effective_rate: Decimal, on_demand_rate: Decimal) -> Decimal:
    """u* = reserved effective rate ÷ on-demand rate (both per GPU-hour, the reserved rate spread over every
    committed hour, upfront fees included). Reserving pays off when the share of the committed hours you would
    otherwise rent on demand is above u*; u* ≥ 1 means it never does."""
    with localcontext(DECIMAL_CONTEXT):
        reserved = _decimal(None, "reserved_effective_rate", reserved_effective_rate)
        on_demand = _decimal(None, "on_demand_rate", on_demand_rate)
        _check_range(None, "reserved_effective_rate", reserved)
        _check_range(None, "on_demand_rate", on_demand, positive=True)
        return reserved / on_demand


def buy_vs_rent_months(capex: Decimal, cloud_monthly: Decimal, owned_monthly_opex: Decimal) -> Decimal | None:
    """Months until buying beats renting: capex ÷ (cloud monthly − owned monthly opex).

    None when renting costs no more per month than running owned hardware (buying never breaks even)."""
    with localcontext(DECIMAL_CONTEXT):
        values = {name: _decimal(None, name, value) for name, value in
                  (("capex", capex), ("cloud_monthly", cloud_monthly), ("owned_monthly_opex", owned_monthly_opex))}
        for name, value in values.items():
            _check_range(None, name, value)
        saving = values["cloud_monthly"] - values["owned_monthly_opex"]
        if saving <= ZERO:
            return None
        return values["capex"] / saving


def blended_api_price_per_million(
    input_price_per_million: Decimal,
    output_price_per_million: Decimal,
    mean_input_tokens: Decimal,
    mean_output_tokens: Decimal,
) -> Decimal:
    """Price per 1M tokens of the workload's own input/output mix."""
    with localcontext(DECIMAL_CONTEXT):
        names = ("input_price_per_million", "output_price_per_million", "mean_input_tokens", "mean_output_tokens")
        values = dict(zip(names, (input_price_per_million, output_price_per_million, mean_input_tokens,
                                  mean_output_tokens), strict=True))
        values = {name: _decimal(None, name, value) for name, value in values.items()}
        for name, value in values.items():
            _check_range(None, name, value)
        tokens = values["mean_input_tokens"] + values["mean_output_tokens"]
        if tokens == ZERO:
            raise NormalizationError(None, "mean_output_tokens", "a request needs at least one token")
        spend = (values["mean_input_tokens"] * values["input_price_per_million"]
                 + values["mean_output_tokens"] * values["output_price_per_million"])
        return spend / tokens


def api_vs_self_host_tokens_per_month(self_host_monthly: Decimal, blended_price_per_million: Decimal) -> Decimal:
    """Monthly token volume above which self-hosting is cheaper: self-host monthly ÷ blended API price per token."""
    with localcontext(DECIMAL_CONTEXT):
        monthly = _decimal(None, "self_host_monthly", self_host_monthly)
        blended = _decimal(None, "blended_price_per_million", blended_price_per_million)
        _check_range(None, "self_host_monthly", monthly)
        _check_range(None, "blended_price_per_million", blended, positive=True)
        return monthly / (blended / TOKENS_PER_PRICE_UNIT)


# --- sensitivity (tornado) -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SensitivityBar:
    """Effective unit cost with one factor moved down and up by the swing, the rest at base."""

    factor: str
    low: Decimal
    high: Decimal
    base: Decimal

    @property
    def spread(self) -> Decimal:
        return abs(self.high - self.low)


def sensitivity(
    demand: Demand,
    candidate: CandidateInput,
    *,
    swing: Decimal = Decimal("0.2"),
    currency: str = "USD",
    exchange_rates: Iterable[ExchangeRate] = (),
) -> tuple[SensitivityBar, ...]:
    """Tornado bars for price, utilisation (demand volume on the same quote), acceptance and failure rate.

    Each factor is scaled by (1 − swing) and (1 + swing); acceptance is capped at 1 and the failure rate kept below 1.
    Bars come sorted widest first.
    """
    swing = _decimal(None, "swing", swing)
    _check_range(None, "swing", swing, below=ONE)
    exchange_rates = tuple(exchange_rates)

    def unit_cost(this_demand: Demand, this_candidate: CandidateInput) -> Decimal:
        (row,) = normalize(this_demand, [this_candidate], currency=currency, exchange_rates=exchange_rates)
        return row.effective_unit_cost

    def scaled(value: Decimal | None, factor: Decimal, cap: Decimal | None = None) -> Decimal | None:
        if value is None:
            return None
        result = value * factor
        return min(result, cap) if cap is not None else result

    def variants(factor: Decimal) -> dict[str, tuple[Demand, CandidateInput]]:
        prices = {name: scaled(getattr(candidate, name), factor)
                  for name in _PRICE_INPUTS[candidate.commercial_model]
                  if name not in ("committed_hours", "amortisation_months", "pue", "power_kw_per_node",
                                  "mean_input_tokens", "mean_output_tokens")}
        if candidate.quality_acceptance is not None:
            acceptance = (demand, dataclasses.replace(
                candidate, quality_acceptance=scaled(candidate.quality_acceptance, factor, ONE)))
        else:
            acceptance = (dataclasses.replace(
                demand, quality_acceptance=scaled(demand.quality_acceptance, factor, ONE)), candidate)
        failure_cap = Decimal("0.999999")
        return {
            "price": (demand, dataclasses.replace(candidate, **prices)),
            "utilisation": (dataclasses.replace(demand, accepted_outputs=demand.accepted_outputs * factor), candidate),
            "acceptance": acceptance,
            "failure_rate": (demand, dataclasses.replace(
                candidate, retry_rate=candidate.retry_rate * factor,
                failure_rate=scaled(candidate.failure_rate, factor, failure_cap))),
        }

    with localcontext(DECIMAL_CONTEXT):
        base = unit_cost(demand, candidate)
        low_variants = variants(ONE - swing)
        high_variants = variants(ONE + swing)
        bars = [
            SensitivityBar(name, unit_cost(*low_variants[name]), unit_cost(*high_variants[name]), base)
            for name in low_variants
        ]
    return tuple(sorted(bars, key=lambda bar: bar.spread, reverse=True))
