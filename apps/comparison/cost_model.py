"""Finance normalisation: GPU quotes, purchases and model-API routes compared at equal delivered, accepted work.

Pure Python (no Django, no ORM): the inputs are frozen dataclasses, every amount is a `Decimal` and stays
unrounded; only the pages round, for display, with apps/common/money.py.

Conventions (docs/metrics.md states the same, with the worked cases):

* **Units.** Demand is stated in accepted units of success per period (a 730-hour month by default): requests,
  records, output tokens, images, clip-seconds, tasks, eval suites (`apps/common/work_units.py`). The peak is an
  arrival rate (requests per second). A capacity counts its own unit per second per GPU; an API route is priced per
  request. Each quantity is converted into the unit it is compared with only through a stated conversion (mean
  output tokens per request measured on the candidate, or declared by the workload with its source; requests per
  record, task or suite); the candidate's measured conversions win over the workload's. Two units with no path
  between them raise `UnitMismatchError`, naming both: a comparison never mixes units silently.
* **Quality acceptance drives load.** Rejected outputs are generated again: the volume *and* the peak rate are
  divided by the acceptance before sizing (`generated = accepted ÷ acceptance`).
* **Retries and failed attempts are work, counted once.** They are sent again, so they enlarge the work and the
  peak (× (1 + retry rate + failure rate)) and so the fleet and its hours; the bill therefore already pays for
  them. Their share of the billed GPU time (busy cost × rate ÷ (1 + retry rate + failure rate)) is moved from the
  GPU-cost column to the waste column and shown once, as `retry_waste` and `failure_loss`. An API route pays the
  retried and failed requests on top of the useful ones (`paid_requests`), shown the same way. Spot preemption
  rework is extra billed hours (billed hours × preemptions per hour × rework hours), added to the waste.
* **Sizing.** In whole replicas, then whole nodes::

      work          = generated × conversion to the capacity's unit × (1 + retry rate + failure rate)
      required rate = max(peak ÷ acceptance × conversion × (1 + retry + failure), work ÷ operating seconds)
      GPUs          = ceil(required rate × (1 + headroom) ÷ (capacity per GPU × GPUs per replica)) × GPUs per replica
      memory floor  : at least ceil(minimum GPUs for memory ÷ GPUs per replica) replicas, when the memory layout
                      states one (the peak sessions' KV cache must be held at once, whatever the rate)
                      rounded up to whole nodes

* **Billing.** A service with a peak to meet is up for its operating hours. Work sized by its volume (batch, or no
  peak) runs only as long as it takes on the sized fleet: busy hours = work ÷ (GPUs × capacity × 3600). On-demand and
  spot bill those hours, each run rounded up to the billing granularity and at least the minimum charge; a
  reservation bills its whole commitment, used or not, plus the hours beyond it at the overage price; owned
  hardware is amortised capex + energy (power × PUE × hours run) + colocation (per kW-month) + maintenance; an API
  route bills requests × the per-request token price. A minimum commitment tops the bill up to that amount.
  Worked case: 12,500,000 records at 50 records/s per 8-GPU node at 2.00 per GPU-hour billed per second =
  250,000 s = 69.44 h × 8 GPUs × 2.00 = 1,111.11, not a month's window.
* **Idle capacity** is part of the GPU cost, shown as its own figure and never added a second time::

      busy share = work ÷ (billed GPUs × capacity per GPU × 3600 × billed capacity hours), at most 1
      productive = bill before any top-up × busy share ÷ (1 + retry rate + failure rate)
      idle       = GPU cost − productive   (the unused hours and any minimum-commitment top-up)

  Worked example A: 3 GPUs × 730 h × 3.00 = 6,570.00 for 20,200,000 requests (1 % retried) of the 39,420,000 the
  fleet can serve: productive 3,333.33, retries 33.33, idle 3,203.33.
* Effective unit cost = (billed compute + spot rework + storage/network + platform labor + other cost lines)
  ÷ accepted units, kept unrounded (34 significant digits); the table shows it in the decision metric's unit.
* Training and fine-tuning are costed per completed run (`training_run_cost`), then per counted run: ÷ the share of
  runs that reach the target eval score, or ÷ the checkpoint acceptance rate.
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
from apps.common.work_units import Conversion, NoConversion, WorkUnit, conversion_path, unit_name
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


class MissingInputError(NormalizationError):
    """An input the candidate's billing model needs is missing (its capacity, say, until a benchmark measures it)."""

    def __init__(self, candidate: str | None, field: str, billing: str):
        self.billing = billing
        super().__init__(candidate, field, f"required to price a candidate billed as {billing}")


class UnitMismatchError(NormalizationError):
    """Two quantities of one comparison in different units with no stated conversion: the comparison refuses them."""

    def __init__(self, candidate: str | None, field: str, have: WorkUnit | None, want: WorkUnit | None, what: str):
        self.units = (have, want)
        super().__init__(
            candidate, field,
            f"{what} is counted in {unit_name(want)} and the demand in {unit_name(have)}, with no conversion between "
            f"them: state how many {unit_name(want)} one of the {unit_name(have)} makes (measured, or declared with "
            "its source)",
        )


def _validated_conversions(owner: str | None, conversions: Iterable[Conversion]) -> tuple[Conversion, ...]:
    checked = []
    for index, conversion in enumerate(conversions):
        if not isinstance(conversion, Conversion):
            raise NormalizationError(owner, f"conversions[{index}]", "must be a Conversion")
        if not isinstance(conversion.source, Provenance):
            raise NormalizationError(owner, f"conversions[{index}]", "every conversion needs its provenance")
        checked.append(conversion)
    return tuple(checked)


def _factor(
    owner: str | None, field: str, what: str, have: WorkUnit | None, want: WorkUnit | None,
    conversions: tuple[Conversion, ...],
) -> tuple[Decimal, tuple[Conversion, ...]]:
    """How many `want` units one `have` unit makes. An unstated unit on either side (a pure caller that counts
    everything in one unit) converts by 1; two stated units need a stated path, else UnitMismatchError."""
    if have is None or want is None:
        return ONE, ()
    try:
        return conversion_path(have, want, conversions)
    except NoConversion:
        raise UnitMismatchError(owner, field, have, want, what) from None


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

    `accepted_outputs` counts `unit` (None: a caller that counts everything, capacity included, in one unit);
    `peak_rate` is the offered load at peak in `peak_unit` per second (arrivals: requests; None: `unit`), 0 for work
    sized by volume; `operating_hours` are the hours per period the service may run (the period for always-on);
    `runs_per_period` is how many separate runs those hours come in (billing granularity applies per run);
    `conversions` are the workload's declared conversions (mean output tokens per request…), each with its source.
    """

    accepted_outputs: Decimal
    period_hours: Decimal
    peak_rate: Decimal
    operating_hours: Decimal
    mode: Mode
    quality_acceptance: Decimal = ONE
    runs_per_period: int = 1
    p95_latency_target_ms: Decimal | None = None
    unit: WorkUnit | None = None
    peak_unit: WorkUnit | None = None
    conversions: tuple[Conversion, ...] = ()
    provenance: Mapping[str, Provenance] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def setter(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        try:
            setter("mode", Mode(self.mode))
        except ValueError:
            raise NormalizationError(None, "mode", f"unknown mode {self.mode!r}") from None
        for name in ("unit", "peak_unit"):
            if getattr(self, name) is not None:
                try:
                    setter(name, WorkUnit(getattr(self, name)))
                except ValueError:
                    raise NormalizationError(None, name, f"unknown unit {getattr(self, name)!r}") from None
        setter("conversions", _validated_conversions(None, self.conversions))
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

    @property
    def billed_by_use(self) -> bool:
        """Work sized by its volume (batch, or no peak to serve): a pay-per-use fleet runs only until it is done."""
        return self.mode is Mode.BATCH or self.peak_rate == ZERO


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
                                "minimum_billed_hours", "minimum_commitment", "capacity_at_slo_per_gpu", "headroom"),
    BillingModel.SPOT: (*_PRICE_INPUTS[BillingModel.SPOT], "billing_granularity_hours", "minimum_billed_hours",
                           "minimum_commitment", "capacity_at_slo_per_gpu", "headroom", "spot_preemptions_per_hour",
                           "spot_rework_hours"),
    BillingModel.RESERVED: (*_PRICE_INPUTS[BillingModel.RESERVED], "billing_granularity_hours",
                               "minimum_billed_hours", "minimum_commitment", "capacity_at_slo_per_gpu", "headroom"),
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
    `minimum_commitment` money per period; `capacity_at_slo_per_gpu` units of `capacity_unit` (None: the demand's
    unit) per second per GPU at the SLO; `conversions` are the candidate's measured conversions (they win over the
    workload's declared ones); `minimum_billed_hours` is the minimum charge per run and GPU of a pay-per-use quote;
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
    #: The memory floor: the whole GPUs the cheapest fitting memory layout needs to hold the peak sessions at once
    #: (replicas × tensor × pipeline parallel); None when no layout was estimated. Needs its provenance.
    minimum_gpus_for_memory: int | None = None
    capacity_at_slo_per_gpu: Decimal | None = None
    capacity_unit: WorkUnit | None = None
    conversions: tuple[Conversion, ...] = ()
    minimum_billed_hours: Decimal | None = None
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
        if self.minimum_gpus_for_memory is not None:
            setter("minimum_gpus_for_memory",
                   _positive_int(cid, "minimum_gpus_for_memory", self.minimum_gpus_for_memory))
            if self.kind is CandidateKind.API:
                raise NormalizationError(cid, "minimum_gpus_for_memory", "does not apply to an API route")

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
                raise MissingInputError(cid, name, str(self.commercial_model))

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
        if self.capacity_unit is not None:
            try:
                setter("capacity_unit", WorkUnit(self.capacity_unit))
            except ValueError:
                raise NormalizationError(cid, "capacity_unit", f"unknown unit {self.capacity_unit!r}") from None
        setter("conversions", _validated_conversions(cid, self.conversions))
        all_inputs = set(_OPTIONAL_NUMBERS) | {"headroom", "retry_rate", "failure_rate", "minimum_gpus_for_memory"}
        setter("provenance", _frozen_provenance(cid, all_inputs, self.provenance))
        if self.minimum_gpus_for_memory is not None and "minimum_gpus_for_memory" not in self.provenance:
            raise NormalizationError(cid, "minimum_gpus_for_memory",
                                     "every input needs its provenance (measured, quoted or estimated)")
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
    "memory_floor": "the memory layout needs at least {minimum_gpus} GPUs to hold the peak sessions at once",
    "granularity": "{billed_hours} billed hours per GPU for {operating_hours} operating hours (billing granularity)",
    "billed_by_use": "{billed_hours} billed hours per GPU: the {busy_hours} hours the work takes on {gpus} GPUs, "
                     "of the {operating_hours} hours available",
    "converted_units": "{factor} {want} per {have} ({source})",
    "retries_in_gpu_time": "retries and failed attempts use {share:.2%} of the billed GPU time, shown once as waste",
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
    `productive_capacity` split `gpu_cost` (they are not added to the total). `billed_compute` is what the provider
    bills for compute: gpu_cost + retry_waste + failure_loss (the retried and failed work's share is moved from the
    bill to the waste column, so each is counted once). `unit` is what `accepted_outputs` counts and
    `effective_unit_cost` is per one of it; `time_to_answer_hours` is how long the sized fleet takes for one unit.
    """

    candidate_id: str
    label: str
    kind: CandidateKind
    commercial_model: BillingModel
    currency: str
    gpus: int
    nodes: int
    billed_hours_per_gpu: Decimal | None
    billed_compute: Decimal
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
    unit: str
    capacity_unit: str
    time_to_answer_hours: Decimal | None
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
    """The compute part of a row in the candidate's own currency. `billed` is the provider's bill for compute (the
    minimum-commitment top-up included); `retry_waste` and `failure_loss` are the shares of it (GPU) or the paid
    requests on top of it (API) that retried and failed work used."""

    gpus: int
    nodes: int
    billed_hours_per_gpu: Decimal | None
    billed: Decimal
    gpu_cost_parts: dict[str, Decimal]
    productive: Decimal
    retry_waste: Decimal
    failure_loss: Decimal
    preemption_rework: Decimal
    paid_requests: Decimal | None
    hourly_price: Decimal | None
    time_to_answer_hours: Decimal | None
    conversions: tuple[Conversion, ...]
    notes: tuple[Note, ...]

    @property
    def gpu_cost(self) -> Decimal:
        """The GPU-cost column: the bill less the retried and failed work's share (that share is the waste column)."""
        if self.paid_requests is not None:
            return self.billed
        return self.billed - self.retry_waste - self.failure_loss


def _billed_run_hours(
    needed_hours: Decimal, runs: int, granularity: Decimal | None, minimum: Decimal | None
) -> Decimal:
    """Hours per GPU as billed: each run's hours rounded up to the billing granularity, and at least the minimum
    charge (per run)."""
    per_run = needed_hours / runs
    if granularity is not None:
        per_run = _ceil(per_run / granularity) * granularity
    if minimum is not None:
        per_run = max(per_run, minimum)
    return per_run * runs


def _conversion_notes(conversions: Iterable[Conversion]) -> list[Note]:
    def source(provenance: Provenance) -> str:
        return f"{provenance.kind}: {provenance.reference or provenance.by}"

    return [Note("converted_units", {"factor": item.factor, "want": unit_name(item.unit), "have": unit_name(item.per),
                                     "source": source(item.source)})
            for item in dict.fromkeys(conversions)]


@dataclass(frozen=True)
class WorkFactors:
    """The unit conversions a row uses: capacity units per demand unit and per peak unit (a fleet), requests per
    demand unit (an API route), and the stated conversions they came through."""

    to_capacity: Decimal = ONE
    peak_to_capacity: Decimal = ONE
    to_requests: Decimal = ONE
    used: tuple[Conversion, ...] = ()


def work_factors(demand: Demand, candidate: CandidateInput) -> WorkFactors:
    """The conversions between the demand's units and the candidate's (one function: the rows and the workbook's
    formulas read the same factors). Raises UnitMismatchError naming both units when no stated path exists."""
    with localcontext(DECIMAL_CONTEXT):
        if candidate.kind is CandidateKind.API:
            own = Conversion(WorkUnit.REQUEST, WorkUnit.OUTPUT_TOKEN, candidate.mean_output_tokens,
                             candidate.provenance.get("mean_output_tokens")) if candidate.mean_output_tokens else None
            conversions = (candidate.conversions + ((own,) if own is not None and own.source is not None else ())
                           + demand.conversions)
            to_requests, used = _factor(candidate.id, "mean_output_tokens", "the route's price (per request)",
                                        demand.unit, WorkUnit.REQUEST if demand.unit is not None else None,
                                        conversions)
            return WorkFactors(to_requests=to_requests, used=used)
        conversions = candidate.conversions + demand.conversions
        what = "the capacity at the SLO"
        to_capacity, used = _factor(candidate.id, "capacity_unit", what, demand.unit, candidate.capacity_unit,
                                    conversions)
        peak_to_capacity = ONE
        if demand.peak_rate:
            peak_unit = demand.peak_unit if demand.peak_unit is not None else demand.unit
            peak_to_capacity, peak_used = _factor(candidate.id, "capacity_unit", what, peak_unit,
                                                  candidate.capacity_unit, conversions)
            used += peak_used
        return WorkFactors(to_capacity=to_capacity, peak_to_capacity=peak_to_capacity, used=used)


def _fleet(demand: Demand, candidate: CandidateInput, generated: Decimal, quality: Decimal) -> _Compute:
    """Size the fleet and bill it. Retried and failed attempts are work the fleet does: they enlarge the work (and so
    the fleet and the hours), and their share of the billed GPU time is reported once, as waste."""
    cid = candidate.id
    capacity = candidate.capacity_at_slo_per_gpu
    assert capacity is not None  # guaranteed by CandidateInput validation
    factors = work_factors(demand, candidate)
    to_capacity, used = factors.to_capacity, factors.used
    notes: list[Note] = []
    waste_share = ONE + candidate.retry_rate + candidate.failure_rate
    useful = generated * to_capacity  # outputs to generate, in the capacity's unit
    work = useful * waste_share  # … with the retried and failed attempts
    mean_rate = work / (demand.operating_hours * SECONDS_PER_HOUR)
    # Rejected outputs are generated again, and retries are sent again: both add load at the peak too.
    peak = demand.peak_rate * factors.peak_to_capacity / quality * waste_share
    basis = "peak" if peak >= mean_rate else "volume"
    required_rate = max(peak, mean_rate) * (ONE + candidate.headroom)
    replicas = _ceil(required_rate / (capacity * candidate.gpus_per_replica))
    floor = candidate.minimum_gpus_for_memory
    memory_replicas = -(-floor // candidate.gpus_per_replica) if floor is not None else 0
    if memory_replicas > replicas:
        # The peak sessions' KV cache must be held at once: memory, not the rate, sets the replicas.
        basis, replicas = "memory", memory_replicas
    nodes = -(-(replicas * candidate.gpus_per_replica) // candidate.gpus_per_node)
    gpus = nodes * candidate.gpus_per_node
    notes.append(Note("sized_by", {"basis": basis, "gpus": gpus, "nodes": nodes}))
    if basis == "memory":
        notes.append(Note("memory_floor", {"minimum_gpus": floor}))
    notes.extend(_conversion_notes(used))
    billing_units = Decimal(nodes if candidate.price_unit is PriceUnit.NODE_HOUR else gpus)
    # The hours the fleet must be up: a service with a peak to meet, its operating hours; work sized by its volume,
    # the hours the work takes on this fleet (it is switched off when done).
    busy_hours = work / (gpus * capacity * SECONDS_PER_HOUR)
    needed_hours = min(busy_hours, demand.operating_hours) if demand.billed_by_use else demand.operating_hours

    parts: dict[str, Decimal] = {}
    preemption_rework = ZERO
    model = candidate.commercial_model
    if model is BillingModel.PURCHASE:
        months = demand.period_hours / HOURS_PER_MONTH
        power = candidate.power_kw_per_node
        parts["amortised_capex"] = nodes * candidate.capex_per_node / candidate.amortisation_months * months
        parts["energy"] = nodes * power * candidate.pue * needed_hours * candidate.energy_price_per_kwh
        parts["colocation"] = nodes * power * (candidate.colocation_per_kw_month or ZERO) * months
        parts["maintenance"] = nodes * (candidate.maintenance_per_node_year or ZERO) * months / MONTHS_PER_YEAR
        capacity_hours = demand.period_hours
        billed_hours: Decimal | None = demand.period_hours
        notes.append(Note("derived_hourly_price"))
        if needed_hours < demand.period_hours:
            notes.append(Note("idle_power_not_counted", {"operating_hours": needed_hours}))
    elif model is BillingModel.RESERVED:
        # The commitment is billed whole, used or not; only hours beyond it are billed by use, rounded up to the
        # billing granularity.
        committed = candidate.committed_hours
        if committed > demand.period_hours:
            raise NormalizationError(cid, "committed_hours", "cannot exceed the hours of the period")
        overage = max(ZERO, needed_hours - committed)
        granularity = candidate.billing_granularity_hours
        if overage and granularity is not None:
            overage = _ceil(overage / granularity) * granularity
        if overage and candidate.overage_price is None:
            raise NormalizationError(cid, "committed_hours",
                                     f"the workload runs {needed_hours} h, the commitment covers "
                                     f"{committed} h and no overage price is given")
        parts["committed"] = billing_units * committed * candidate.unit_price
        if overage:
            parts["overage"] = billing_units * overage * candidate.overage_price
            notes.append(Note("overage", {"hours": overage}))
        capacity_hours = billed_hours = committed + overage
    else:
        used_hours = _billed_run_hours(needed_hours, demand.runs_per_period, candidate.billing_granularity_hours,
                                       candidate.minimum_billed_hours)
        if demand.billed_by_use:
            notes.append(Note("billed_by_use", {"billed_hours": used_hours, "busy_hours": busy_hours, "gpus": gpus,
                                                "operating_hours": demand.operating_hours}))
        elif used_hours != demand.operating_hours:
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
    capacity_outputs = gpus * capacity * SECONDS_PER_HOUR * capacity_hours
    # The billed GPU time the work used (at most all of it), split between the useful outputs, the retries and the
    # failed attempts in proportion to their work; the rest (and any top-up) is idle.
    busy_cost = base_cost * min(ONE, work / capacity_outputs)
    retry_waste = busy_cost * candidate.retry_rate / waste_share
    failure_loss = busy_cost * candidate.failure_rate / waste_share
    if retry_waste or failure_loss:
        notes.append(Note("retries_in_gpu_time", {"share": (retry_waste + failure_loss) / (base_cost + top_up)}))
    if model is BillingModel.PURCHASE:
        hourly_price = (base_cost + top_up) / (gpus * demand.period_hours)
    else:
        hourly_price = candidate.hourly_price_per_gpu
    return _Compute(
        gpus=gpus, nodes=nodes, billed_hours_per_gpu=billed_hours, billed=base_cost + top_up, gpu_cost_parts=parts,
        productive=busy_cost / waste_share, retry_waste=retry_waste, failure_loss=failure_loss,
        preemption_rework=preemption_rework, paid_requests=None, hourly_price=hourly_price,
        time_to_answer_hours=to_capacity / (gpus * capacity * SECONDS_PER_HOUR), conversions=used,
        notes=tuple(notes),
    )


def _api_route(demand: Demand, candidate: CandidateInput, generated: Decimal) -> _Compute:
    """An API route is paid per request: the demand is converted to requests (its own mean output tokens per request
    is a conversion), and retried and failed requests are paid requests on top."""
    factors = work_factors(demand, candidate)
    used = factors.used
    requests = generated * factors.to_requests
    price_per_request = (
        candidate.mean_input_tokens * candidate.api_input_price_per_million
        + candidate.mean_output_tokens * candidate.api_output_price_per_million
    ) / TOKENS_PER_PRICE_UNIT
    compute = requests * price_per_request
    parts = {"requests": compute}
    top_up = max(ZERO, (candidate.minimum_commitment or ZERO) - compute)
    notes = _conversion_notes(used)
    if top_up:
        parts["minimum_commitment_top_up"] = top_up
        notes.append(Note("minimum_commitment", {"amount": top_up}))
    paid = requests * (ONE + candidate.retry_rate + candidate.failure_rate)
    notes.append(Note("paid_requests", {"paid": paid, "generated": requests}))
    return _Compute(
        gpus=0, nodes=0, billed_hours_per_gpu=None, billed=compute + top_up, gpu_cost_parts=parts,
        productive=compute, retry_waste=requests * candidate.retry_rate * price_per_request,
        failure_loss=requests * candidate.failure_rate * price_per_request, preemption_rework=ZERO,
        paid_requests=paid, hourly_price=None, time_to_answer_hours=None, conversions=used, notes=tuple(notes),
    )


def _figure_provenance(
    demand: Demand, candidate: CandidateInput, exchange_rate: ExchangeRate, converted: bool,
    conversions: tuple[Conversion, ...] = (), memory_sized: bool = False,
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
    sizing = [demand.provenance[name] for name in ("peak_rate", "operating_hours") if name in demand.provenance] \
        + [item.source for item in conversions]
    if memory_sized:  # the memory floor set the fleet: its estimate is a source of the GPU cost
        sizing += inputs("minimum_gpus_for_memory")
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
        compute = _api_route(demand, candidate, generated)
    else:
        compute = _fleet(demand, candidate, generated, quality)

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
    # The bill for compute, counted once: a fleet's retried and failed work is a share of its bill (moved to the waste
    # column); an API route's retried and failed requests are paid on top of the useful ones.
    billed_compute = compute.billed * rate if candidate.kind is not CandidateKind.API \
        else gpu_cost + retry_waste + failure_loss
    total = billed_compute + preemption_rework + sum(column_totals.values(), ZERO)
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
        billed_compute=billed_compute,
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
        unit=str(demand.unit) if demand.unit is not None else "",
        capacity_unit=str(candidate.capacity_unit or demand.unit or "") if candidate.kind is not CandidateKind.API
        else str(WorkUnit.REQUEST),
        time_to_answer_hours=compute.time_to_answer_hours,
        notes=tuple(notes),
        provenance=MappingProxyType(_figure_provenance(
            demand, candidate, exchange_rate, converted, compute.conversions,
            memory_sized=any(note.code == "memory_floor" for note in compute.notes))),
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
    the time to detect a failure, restart and restore the last checkpoint. `acceptance` is the share of completed
    runs that count (a training run that reaches the target eval score; a fine-tuned checkpoint that is accepted), and
    `unit` what one counted run is. Every non-zero input needs provenance; an acceptance below 1 needs it too.
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
    acceptance: Decimal = ONE
    unit: WorkUnit = WorkUnit.TRAINING_RUN
    currency: str = "USD"
    cost_lines: tuple[CostLine, ...] = ()
    provenance: Mapping[str, Provenance] = field(default_factory=dict)

    _NUMBERS = ("price_per_gpu_hour", "token_budget", "throughput_tokens_per_second", "checkpoint_interval_hours",
                "checkpoint_write_hours", "failures_per_gpu_hour", "restart_hours", "acceptance")
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
        _check_range(rid, "acceptance", self.acceptance, positive=True, at_most=ONE)
        try:
            object.__setattr__(self, "unit", WorkUnit(self.unit))
        except ValueError:
            raise NormalizationError(rid, "unit", f"unknown unit {self.unit!r}") from None
        object.__setattr__(self, "provenance", _frozen_provenance(rid, self._NUMBERS, self.provenance))
        for name in self._NUMBERS:
            if name == "acceptance" and self.acceptance == ONE:
                continue
            if getattr(self, name) != ZERO and name not in self.provenance:
                raise NormalizationError(rid, name, "every input needs its provenance (measured, quoted or estimated)")


@dataclass(frozen=True)
class TrainingRow:
    """Cost of one completed run, in the reporting currency, unrounded.

    cost_per_completed_run = gpu_compute + checkpointing + failed_run_waste + storage + network + platform_labor
    + other cost lines; cost_per_accepted_output = cost_per_completed_run ÷ acceptance (the decision metric: per run
    that reaches the target eval score, per accepted checkpoint), in `unit`.
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
    acceptance: Decimal
    unit: str
    cost_per_accepted_output: Decimal
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
        figures["cost_per_accepted_output"] = figures["cost_per_completed_run"] + inputs("acceptance")
        return TrainingRow(
            run_id=run.id, label=run.label, currency=currency, compute_hours=compute_hours, checkpoints=checkpoints,
            checkpoint_hours=checkpoint_hours, expected_failures=expected_failures,
            failed_run_waste_hours=waste_hours, wall_clock_hours=wall_clock, gpu_hours=run.gpus * wall_clock,
            gpu_compute=gpu_compute, checkpointing=checkpointing, failed_run_waste=failed_run_waste,
            storage=storage, network=network, platform_labor=labor, other_costs=other, cost_per_completed_run=total,
            acceptance=run.acceptance, unit=str(run.unit), cost_per_accepted_output=total / run.acceptance,
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
