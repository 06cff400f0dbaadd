"""The hybrid plan: the cheapest mix of a reserved (or bought) base, on-demand burst and an API route for overflow.

Pure Python (no Django). Every amount is a `Decimal` computed in the cost model's decimal context; the parts are
built from the comparison's own rows (`cost_model.normalize()`), so a mix is made of the other candidates' figures
and follows their conventions (acceptance, retries, conversions, billing granularity): nothing is re-derived.

**The demand profile.** A representative window (a day of operation) of blocks, each `hours` long at a `load` in
accepted outputs per hour, repeated `windows` times in the period. From the workload summary's peak, volume and
operating hours (`two_level_profile`) the shape is a two-level load-duration curve, the flattest one that holds the
stated peak: the peak for `peak_hours` (1 by default) hours of each window and the rest of the window's volume spread
evenly over its other hours::

    windows  = operating hours ÷ window hours
    volume   = accepted outputs ÷ windows                           (per window)
    base     = (volume − peak × peak hours) ÷ (window hours − peak hours)
    mean     = volume ÷ window hours                                (peak ÷ mean is the peak-to-average ratio)

When the volume cannot fill even the peak hours (base < 0) the peak lasts volume ÷ peak hours and the rest of the
window is idle; when the stated peak is at most the mean, the window is flat at the mean.

**The parts** (each in units of `unit_gpus` GPUs: a replica, in whole nodes when the price is per node or the
hardware is bought), capacity in accepted outputs per unit-hour at the SLO, the sizing headroom kept free::

    outputs per GPU-hour = capacity per GPU × 3600 × acceptance ÷ (capacity units per output × (1 + retry + failure))

* a base (`ReservedPart`): paid every hour of its commitment whether used or not — its row's compute bill per GPU
  (committed hours × price + overage, or amortised capex + energy + colocation + maintenance); it serves the
  demand up to its capacity every hour;
* burst (`OnDemandPart`): paid per used hour, each block's run rounded up to the quote's billing granularity and
  minimum charge (`cost_model` billing); the number of burst units is chosen hour block by hour block;
* overflow (`ApiPart`): paid per accepted output (its row's compute bill ÷ accepted outputs: paid retries included).

A part's cost lines (storage/network, platform labor, other) are paid in full once the mix uses it; a minimum
commitment tops that part's bill up. **The search is exact**: for every subset of the parts and every whole number
of base units from 1 to the peak's (or none), each block takes the cheapest whole number of burst units (none, ⌊rest ÷
burst capacity⌋ or ⌈rest ÷ burst capacity⌉; the rest to the API); the cheapest total wins (ties: fewer parts, fewer
base units). Minimum commitments are applied as top-ups after each block's choice.

**Break-even points** (per unit of capacity, so GPUs of different speeds compare):

    reserve vs on demand  u* = (base cost per period × burst outputs per hour ÷ (base outputs per hour × operating
                               hours)) ÷ burst price per unit-hour: both per hour of one burst unit's capacity
                               (cost_model.reserve_vs_on_demand_utilisation)
                          reserving a slice of load pays off when it is needed more than u* × operating hours
    burst vs API          v* = burst price per unit-hour ÷ API cost per output: a burst unit beats the API in an
                               hour it serves more than v* accepted outputs (at most its capacity)
    base vs API           base cost per period ÷ API cost per output: outputs per period a base unit must serve

**Worked case** (the done-when test, 10:1 peak to average): 6,557,760 accepted requests in 720 operating hours of a
730-hour month, peak 25.3 req/s; 1 req/s per GPU (3,600 per GPU-hour) on each fleet; reserved 2.00 per GPU-hour over
a 720-hour commitment (1,440.00 per GPU), on demand 4.00 per GPU-hour billed per hour, API 0.0025 per request.
Window 24 h, 30 windows; 218,592 per window; peak 91,080 per hour for 1 h; base (218,592 − 91,080) ÷ 23 = 5,544 per
hour. Two base GPUs (7,200/h) hold the base hours; the peak hour's 83,880 go to 23 burst GPUs (82,800, 92.00) and
1,080 to the API (2.70): 2 × 1,440 + 30 × 92 + 30 × 2.70 = 2,880 + 2,760 + 81 = 5,721.00, against 26 reserved GPUs
37,440.00, 26 on-demand GPUs for 720 h 74,880.00, the API alone 16,394.40. u* = (1,440 ÷ (3,600 × 720)) ÷
(4 ÷ 3,600) = 0.5 (360 h); v* = 4 ÷ 0.0025 = 1,600 requests per burst GPU-hour; base vs API 576,000 per period.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal, localcontext
from types import MappingProxyType

from apps.comparison import cost_model
from apps.comparison.cost_model import DECIMAL_CONTEXT, ONE, SECONDS_PER_HOUR, ZERO, NormalizationError
from apps.quotes.kinds import BillingModel, CandidateKind, PriceUnit

#: The fixed cost columns a part brings (the phase-4 table's), paid once when the mix uses the part.
FIXED_COLUMNS = ("storage_network", "platform_labor", "other_costs")
RESERVED, ON_DEMAND, API = "reserved", "on_demand", "api"
#: The most base units the search tries (it tries each whole number up to the peak's): beyond, a figure is surely
#: mistyped (a capacity in the wrong unit), and the plan says so instead of searching for seconds.
MAX_BASE_UNITS = 5000
PARTS = (RESERVED, ON_DEMAND, API)


def _d(name: str, value) -> Decimal:
    return cost_model._decimal(None, name, value)


def _floor(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_FLOOR))


# --- the demand profile -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileBlock:
    """`hours` of one window at `load` accepted outputs per hour."""

    hours: Decimal
    load: Decimal


@dataclass(frozen=True)
class DemandProfile:
    """A representative window of blocks (in the order the chart shows them), recurring `windows` times a period."""

    blocks: tuple[ProfileBlock, ...]
    windows: Decimal
    shape: str = "explicit"  # "two_level", "peak_only", "flat" or "explicit"
    peak_hours: Decimal | None = None

    def __post_init__(self) -> None:
        blocks = []
        for index, block in enumerate(self.blocks):
            hours, load = _d(f"blocks[{index}].hours", block.hours), _d(f"blocks[{index}].load", block.load)
            cost_model._check_range(None, f"blocks[{index}].hours", hours, positive=True)
            cost_model._check_range(None, f"blocks[{index}].load", load)
            blocks.append(ProfileBlock(hours, load))
        if not blocks:
            raise NormalizationError(None, "profile", "a demand profile needs at least one block")
        object.__setattr__(self, "blocks", tuple(blocks))
        windows = _d("windows", self.windows)
        cost_model._check_range(None, "windows", windows, positive=True)
        object.__setattr__(self, "windows", windows)

    @property
    def window_hours(self) -> Decimal:
        return sum((block.hours for block in self.blocks), ZERO)

    @property
    def operating_hours(self) -> Decimal:
        return self.window_hours * self.windows

    @property
    def peak(self) -> Decimal:
        return max(block.load for block in self.blocks)

    @property
    def volume(self) -> Decimal:
        """Accepted outputs per period."""
        with localcontext(DECIMAL_CONTEXT):
            return sum((block.hours * block.load for block in self.blocks), ZERO) * self.windows

    @property
    def mean(self) -> Decimal:
        with localcontext(DECIMAL_CONTEXT):
            return self.volume / self.operating_hours


def two_level_profile(
    *, accepted_outputs: Decimal, peak_per_hour: Decimal, operating_hours: Decimal, window_hours: Decimal,
    peak_hours: Decimal = ONE,
) -> DemandProfile:
    """The flattest two-level profile that holds the stated peak (module docstring): the peak for `peak_hours` of each
    window, the rest of the window's volume spread evenly over its other hours."""
    with localcontext(DECIMAL_CONTEXT):
        values = {name: _d(name, value) for name, value in (
            ("accepted_outputs", accepted_outputs), ("peak_per_hour", peak_per_hour),
            ("operating_hours", operating_hours), ("window_hours", window_hours), ("peak_hours", peak_hours))}
        for name, value in values.items():
            cost_model._check_range(None, name, value, positive=True)
        window, peak, hours = values["window_hours"], values["peak_per_hour"], values["peak_hours"]
        if window > values["operating_hours"]:
            window = values["operating_hours"]
        windows = values["operating_hours"] / window
        volume = values["accepted_outputs"] / windows
        if volume >= peak * window or hours >= window:
            return DemandProfile((ProfileBlock(window, volume / window),), windows, "flat", ZERO)
        if volume <= peak * hours:
            lasting = volume / peak
            return DemandProfile((ProfileBlock(lasting, peak), ProfileBlock(window - lasting, ZERO)), windows,
                                 "peak_only", lasting)
        base = (volume - peak * hours) / (window - hours)
        return DemandProfile((ProfileBlock(hours, peak), ProfileBlock(window - hours, base)), windows, "two_level",
                             hours)


# --- the parts --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    id: str
    label: str
    fixed_costs: Mapping[str, Decimal] = field(default_factory=dict)
    minimum_commitment: Decimal = ZERO
    #: The retried and failed attempts' share of the work: (retry + failure) ÷ (1 + retry + failure).
    waste_fraction: Decimal = ZERO
    capacity_measured: bool = True

    @property
    def fixed_total(self) -> Decimal:
        return sum((self.fixed_costs.get(name, ZERO) for name in FIXED_COLUMNS), ZERO)


@dataclass(frozen=True)
class ReservedPart(_Part):
    """A reserved or bought base: `cost_per_unit` per period (paid whatever the use), `billed_hours` per period."""

    unit_gpus: int = 1
    outputs_per_unit_hour: Decimal = ZERO  # at the SLO, before headroom
    headroom: Decimal = ZERO
    cost_per_unit: Decimal = ZERO
    billed_hours: Decimal = ZERO

    @property
    def serving(self) -> Decimal:
        return self.outputs_per_unit_hour / (ONE + self.headroom)


@dataclass(frozen=True)
class OnDemandPart(_Part):
    """On-demand burst: `price_per_unit_hour` per billed hour, each run rounded up as its quote bills."""

    unit_gpus: int = 1
    outputs_per_unit_hour: Decimal = ZERO
    headroom: Decimal = ZERO
    price_per_unit_hour: Decimal = ZERO
    billing_granularity_hours: Decimal | None = None
    minimum_billed_hours: Decimal | None = None

    @property
    def serving(self) -> Decimal:
        return self.outputs_per_unit_hour / (ONE + self.headroom)

    def billed_hours(self, hours: Decimal) -> Decimal:
        """One run of `hours`, billed as the cost model bills an on-demand run."""
        return cost_model._billed_run_hours(hours, 1, self.billing_granularity_hours, self.minimum_billed_hours)


@dataclass(frozen=True)
class ApiPart(_Part):
    """An API route: `cost_per_output` per accepted output (retried and failed requests paid included)."""

    cost_per_output: Decimal = ZERO


def _waste_fraction(candidate: cost_model.CandidateInput) -> Decimal:
    rates = candidate.retry_rate + candidate.failure_rate
    return rates / (ONE + rates)


def _fixed(row: cost_model.Row) -> Mapping[str, Decimal]:
    return MappingProxyType({name: getattr(row, name) for name in FIXED_COLUMNS})


def _top_up(row: cost_model.Row) -> Decimal:
    return row.gpu_cost_parts.get("minimum_commitment_top_up", ZERO)


def fleet_outputs_per_gpu_hour(demand: cost_model.Demand, candidate: cost_model.CandidateInput) -> Decimal:
    """Accepted outputs one GPU of a fleet candidate serves per hour at the SLO (no headroom): its capacity through
    the cost model's conversions, ÷ the work one accepted output takes (rejected outputs and retries included)."""
    with localcontext(DECIMAL_CONTEXT):
        factors = cost_model.work_factors(demand, candidate)
        quality = candidate.quality_acceptance if candidate.quality_acceptance is not None \
            else demand.quality_acceptance
        work_per_output = factors.to_capacity * (ONE + candidate.retry_rate + candidate.failure_rate) / quality
        return candidate.capacity_at_slo_per_gpu * SECONDS_PER_HOUR / work_per_output


def peak_outputs_per_hour(demand: cost_model.Demand, candidates: Iterable[cost_model.CandidateInput]) -> Decimal:
    """The peak arrival rate as accepted outputs per hour, through each fleet candidate's conversions (the largest,
    when their measured conversions differ)."""
    with localcontext(DECIMAL_CONTEXT):
        peaks = []
        for candidate in candidates:
            if candidate.kind is CandidateKind.API:
                continue
            factors = cost_model.work_factors(demand, candidate)
            peaks.append(demand.peak_rate * SECONDS_PER_HOUR * factors.peak_to_capacity / factors.to_capacity)
        if not peaks:
            raise NormalizationError(None, "peak_rate", "a hybrid plan needs a self-hosted part to convert the peak")
        return max(peaks)


def _unit(candidate: cost_model.CandidateInput) -> tuple[int, int]:
    """(GPUs in one step, GPUs of it that serve): a replica, rounded up to whole nodes when billed per node or
    bought."""
    per_replica = candidate.gpus_per_replica
    whole_nodes = candidate.price_unit is PriceUnit.NODE_HOUR or candidate.commercial_model is BillingModel.PURCHASE
    if not whole_nodes:
        return per_replica, per_replica
    node = candidate.gpus_per_node
    step = -(-per_replica // node) * node
    return step, step // per_replica * per_replica


def _unit_outputs(demand: cost_model.Demand, candidate: cost_model.CandidateInput, peak: Decimal
                  ) -> tuple[int, Decimal]:
    """One step's GPUs and its accepted outputs per hour; the memory floor (the peak sessions need at least that many
    GPUs) caps what one GPU serves at the peak's share it can hold: peak × (1 + headroom) ÷ minimum GPUs."""
    step, serving = _unit(candidate)
    per_gpu = fleet_outputs_per_gpu_hour(demand, candidate)
    if candidate.minimum_gpus_for_memory:
        per_gpu = min(per_gpu, peak * (ONE + candidate.headroom) / candidate.minimum_gpus_for_memory)
    return step, per_gpu * serving


def reserved_part(demand: cost_model.Demand, candidate: cost_model.CandidateInput, row: cost_model.Row, *,
                  rate: Decimal, peak: Decimal, capacity_measured: bool = True) -> ReservedPart:
    """The base a reserved or purchase row offers: its compute bill per GPU (before any minimum-commitment top-up),
    for the hours its row bills, per step of GPUs. `rate`: reporting currency per unit of the quote's."""
    with localcontext(DECIMAL_CONTEXT):
        step, outputs = _unit_outputs(demand, candidate, peak)
        per_gpu = (row.billed_compute - _top_up(row)) / row.gpus
        return ReservedPart(
            id=candidate.id, label=candidate.label, fixed_costs=_fixed(row),
            minimum_commitment=(candidate.minimum_commitment or ZERO) * rate,
            waste_fraction=_waste_fraction(candidate), capacity_measured=capacity_measured, unit_gpus=step,
            outputs_per_unit_hour=outputs, headroom=candidate.headroom, cost_per_unit=per_gpu * step,
            billed_hours=row.billed_hours_per_gpu or demand.period_hours,
        )


def on_demand_part(demand: cost_model.Demand, candidate: cost_model.CandidateInput, row: cost_model.Row, *,
                   rate: Decimal, peak: Decimal, capacity_measured: bool = True) -> OnDemandPart:
    """The burst an on-demand row offers: its hourly price per GPU (reporting currency) per step of GPUs."""
    with localcontext(DECIMAL_CONTEXT):
        step, outputs = _unit_outputs(demand, candidate, peak)
        return OnDemandPart(
            id=candidate.id, label=candidate.label, fixed_costs=_fixed(row),
            minimum_commitment=(candidate.minimum_commitment or ZERO) * rate,
            waste_fraction=_waste_fraction(candidate), capacity_measured=capacity_measured, unit_gpus=step,
            outputs_per_unit_hour=outputs, headroom=candidate.headroom, price_per_unit_hour=row.hourly_price * step,
            billing_granularity_hours=candidate.billing_granularity_hours,
            minimum_billed_hours=candidate.minimum_billed_hours,
        )


def api_part(candidate: cost_model.CandidateInput, row: cost_model.Row, *, rate: Decimal) -> ApiPart:
    """The overflow an API row offers: its compute bill (paid retries included, top-up excluded) per accepted
    output."""
    with localcontext(DECIMAL_CONTEXT):
        return ApiPart(
            id=candidate.id, label=candidate.label, fixed_costs=_fixed(row),
            minimum_commitment=(candidate.minimum_commitment or ZERO) * rate,
            waste_fraction=_waste_fraction(candidate),
            cost_per_output=(row.billed_compute - _top_up(row)) / row.accepted_outputs,
        )


# --- the plan ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockServed:
    """Who serves one block of the window: per hour, the base's outputs, the burst's and the API's."""

    hours: Decimal
    load: Decimal
    base_outputs: Decimal
    burst_units: int
    burst_outputs: Decimal
    api_outputs: Decimal
    burst_billed_hours: Decimal  # per burst unit and run


@dataclass(frozen=True)
class PartCost:
    """One part's share of the plan, per period: its bill (top-up included), the busy share of it that retried and
    failed work used, and its cost lines (when used)."""

    part: str
    id: str
    label: str
    units: int
    gpus: int
    outputs: Decimal
    billed: Decimal
    busy: Decimal
    waste: Decimal
    fixed_costs: Mapping[str, Decimal]
    capacity_measured: bool

    @property
    def used(self) -> bool:
        return self.units > 0 or self.outputs > 0


@dataclass(frozen=True)
class BreakEvens:
    """The break-even points between the parts (None when the plan lacks one of the two)."""

    reserve_utilisation: Decimal | None = None
    reserve_hours: Decimal | None = None
    burst_outputs_per_hour: Decimal | None = None
    base_outputs_vs_api: Decimal | None = None


@dataclass(frozen=True)
class HybridPlan:
    """The cheapest mix, per period, in the reporting currency, unrounded. `total_cost` = billed_compute +
    storage_network + platform_labor + other_costs; `gpu_cost` = billed_compute − failure_waste (the retried and
    failed work's share, shown once); productive + idle = gpu_cost."""

    profile: DemandProfile
    base_units: int
    base_gpus: int
    burst_units: int  # the most burst units running in any block
    burst_gpus: int
    api_outputs: Decimal
    blocks: tuple[BlockServed, ...]
    parts: tuple[PartCost, ...]
    billed_compute: Decimal
    gpu_cost: Decimal
    productive_capacity: Decimal
    idle_capacity: Decimal
    failure_waste: Decimal
    storage_network: Decimal
    platform_labor: Decimal
    other_costs: Decimal
    total_cost: Decimal
    accepted_outputs: Decimal
    effective_unit_cost: Decimal
    break_even: BreakEvens

    @property
    def used_parts(self) -> tuple[PartCost, ...]:
        return tuple(part for part in self.parts if part.used)

    @property
    def unmeasured_parts(self) -> tuple[PartCost, ...]:
        return tuple(part for part in self.used_parts if not part.capacity_measured)

    def part(self, name: str) -> PartCost | None:
        return next((item for item in self.parts if item.part == name), None)


def _block_choice(rest: Decimal, hours: Decimal, windows: Decimal, on_demand: OnDemandPart | None,
                  api: ApiPart | None, run: Decimal | None = None) -> tuple[int, Decimal, Decimal] | None:
    """(burst units, burst outputs per hour, cost per period) of the cheapest way to serve `rest` per hour for
    `hours` of each window; None when neither burst nor API is there to serve it. `run`: one burst unit's bill for
    this block per period (computed once per block by the search)."""
    if rest == ZERO:
        return 0, ZERO, ZERO
    options = []
    if on_demand is not None and on_demand.serving > ZERO:
        if run is None:
            run = _burst_run(on_demand, hours, windows)
        exact = rest / on_demand.serving
        counts = {_floor(exact), -_floor(-exact)} if api is not None else {-_floor(-exact)}
        for count in sorted(counts):
            served = min(rest, count * on_demand.serving)
            overflow = (rest - served) * hours * windows * api.cost_per_output if api is not None else ZERO
            options.append((count * run + overflow, count, served))
    if api is not None:
        options.append((rest * hours * windows * api.cost_per_output, 0, ZERO))
    if not options:
        return None
    cost, count, served = min(options, key=lambda option: (option[0], option[1]))
    return count, served, cost


def _burst_run(on_demand: OnDemandPart, hours: Decimal, windows: Decimal) -> Decimal:
    """One burst unit's bill per period for a block of `hours` in each window (one billed run per window)."""
    return on_demand.billed_hours(hours) * on_demand.price_per_unit_hour * windows


def _total(profile: DemandProfile, base_units: int, reserved: ReservedPart | None, on_demand: OnDemandPart | None,
           api: ApiPart | None, runs: Sequence[Decimal | None]) -> Decimal | None:
    """The total `_plan` reports, without building the plan: the search's inner loop (one per base count)."""
    base_capacity = base_units * reserved.serving if reserved is not None else ZERO
    burst = overflow = ZERO
    bursting = False
    for block, run in zip(profile.blocks, runs, strict=True):
        rest = block.load - min(block.load, base_capacity)
        choice = _block_choice(rest, block.hours, profile.windows, on_demand, api, run)
        if choice is None:
            return None
        count, served, _cost = choice
        if count:
            burst += count * run
            bursting = True
        overflow += (rest - served) * block.hours
    total = ZERO
    if reserved is not None and base_units:
        total += max(base_units * reserved.cost_per_unit, reserved.minimum_commitment) + reserved.fixed_total
    if bursting:
        total += max(burst, on_demand.minimum_commitment) + on_demand.fixed_total
    if overflow > ZERO:
        total += max(overflow * profile.windows * api.cost_per_output, api.minimum_commitment) + api.fixed_total
    return total


def _plan(profile: DemandProfile, base_units: int, reserved: ReservedPart | None, on_demand: OnDemandPart | None,
          api: ApiPart | None) -> tuple[Decimal, tuple[BlockServed, ...], tuple[PartCost, ...]] | None:
    windows = profile.windows
    base_capacity = base_units * reserved.serving if reserved is not None else ZERO
    blocks = []
    burst_cost = burst_busy = burst_outputs_total = api_outputs_total = ZERO
    base_outputs_total = ZERO
    most_burst = 0
    for block in profile.blocks:
        base = min(block.load, base_capacity)
        choice = _block_choice(block.load - base, block.hours, windows, on_demand, api)
        if choice is None:
            return None
        count, burst, _cost = choice
        billed_run = on_demand.billed_hours(block.hours) if count else ZERO
        overflow = block.load - base - burst
        if count:
            bill = count * billed_run * on_demand.price_per_unit_hour * windows
            capacity = count * on_demand.outputs_per_unit_hour * billed_run
            burst_cost += bill
            burst_busy += bill * min(ONE, burst * block.hours / capacity)
        most_burst = max(most_burst, count)
        base_outputs_total += base * block.hours * windows
        burst_outputs_total += burst * block.hours * windows
        api_outputs_total += overflow * block.hours * windows
        blocks.append(BlockServed(block.hours, block.load, base, count, burst, overflow, billed_run))

    parts = []
    if reserved is not None:
        bill = base_units * reserved.cost_per_unit
        capacity = base_units * reserved.outputs_per_unit_hour * reserved.billed_hours
        busy = bill * min(ONE, base_outputs_total / capacity) if capacity else ZERO
        billed = max(bill, reserved.minimum_commitment) if base_units else ZERO
        parts.append(PartCost(RESERVED, reserved.id, reserved.label, base_units, base_units * reserved.unit_gpus,
                              base_outputs_total, billed, busy, busy * reserved.waste_fraction,
                              reserved.fixed_costs, reserved.capacity_measured))
    if on_demand is not None:
        used = most_burst > 0
        billed = max(burst_cost, on_demand.minimum_commitment) if used else ZERO
        parts.append(PartCost(ON_DEMAND, on_demand.id, on_demand.label, most_burst, most_burst * on_demand.unit_gpus,
                              burst_outputs_total, billed, burst_busy, burst_busy * on_demand.waste_fraction,
                              on_demand.fixed_costs, on_demand.capacity_measured))
    if api is not None:
        variable = api_outputs_total * api.cost_per_output
        billed = max(variable, api.minimum_commitment) if api_outputs_total else ZERO
        parts.append(PartCost(API, api.id, api.label, 0, 0, api_outputs_total, billed, variable,
                              variable * api.waste_fraction, api.fixed_costs, True))
    total = sum((part.billed + (sum(part.fixed_costs.get(name, ZERO) for name in FIXED_COLUMNS) if part.used
                                else ZERO) for part in parts), ZERO)
    return total, tuple(blocks), tuple(parts)


def _break_evens(profile: DemandProfile, reserved: ReservedPart | None, on_demand: OnDemandPart | None,
                 api: ApiPart | None) -> BreakEvens:
    values: dict = {}
    if reserved is not None and on_demand is not None and reserved.serving and on_demand.serving:
        hours = profile.operating_hours
        # Both rates per hour of one burst unit's worth of capacity: the base's cost spread over the operating hours.
        utilisation = cost_model.reserve_vs_on_demand_utilisation(
            reserved.cost_per_unit * on_demand.serving / (reserved.serving * hours), on_demand.price_per_unit_hour)
        values.update(reserve_utilisation=utilisation, reserve_hours=utilisation * hours)
    if api is not None and api.cost_per_output > ZERO:
        if on_demand is not None:
            values["burst_outputs_per_hour"] = on_demand.price_per_unit_hour / api.cost_per_output
        if reserved is not None:
            values["base_outputs_vs_api"] = reserved.cost_per_unit / api.cost_per_output
    return BreakEvens(**values)


def cheapest_mix(
    profile: DemandProfile, *, reserved: ReservedPart | None = None, on_demand: OnDemandPart | None = None,
    api: ApiPart | None = None, accepted_outputs: Decimal | None = None,
) -> HybridPlan:
    """The cheapest mix of the given parts for the profile (module docstring); at least two parts.
    `accepted_outputs` (default: the profile's volume) is what the cost per accepted output divides by: the demand's
    own figure, so the mix and the rows divide by the same number. Raises NormalizationError when no mix of them can
    serve the peak (a part with no capacity)."""
    given = {RESERVED: reserved, ON_DEMAND: on_demand, API: api}
    if sum(part is not None for part in given.values()) < 2:
        raise NormalizationError(None, "parts", "a hybrid plan needs at least two of a base, burst and an API route")
    with localcontext(DECIMAL_CONTEXT):
        for name in (RESERVED, ON_DEMAND):
            part = given[name]
            if part is not None and part.outputs_per_unit_hour <= ZERO:
                raise NormalizationError(part.id, "capacity_at_slo_per_gpu", "a fleet part needs a capacity")
        best = None
        available = [name for name in PARTS if given[name] is not None]
        for size in range(1, len(available) + 1):
            for subset in itertools.combinations(available, size):
                chosen = {name: given[name] if name in subset else None for name in PARTS}
                base = chosen[RESERVED]
                if base is None:
                    counts: Sequence[int] = (0,)
                else:
                    most = -_floor(-profile.peak / base.serving) if profile.peak else 1
                    if most > MAX_BASE_UNITS:
                        raise NormalizationError(base.id, "capacity_at_slo_per_gpu",
                                                 f"the peak needs {most} base units, more than the {MAX_BASE_UNITS} "
                                                 "the hybrid search tries: check the capacity's unit")
                    # A base alone must hold the peak: only the peak's count serves; otherwise try every count.
                    counts = range(most, most + 1) if len(subset) == 1 else range(1, most + 1)
                burst = chosen[ON_DEMAND]
                runs = [_burst_run(burst, block.hours, profile.windows) if burst is not None else None
                        for block in profile.blocks]
                for count in counts:
                    total = _total(profile, count, base, burst, chosen[API], runs)
                    if total is None:
                        continue
                    key = (total, size, count)
                    if best is None or key < best[0]:
                        best = (key, count, subset)
        if best is None:
            raise NormalizationError(None, "parts", "no mix of these parts serves the peak")
        _key, base_units, subset = best
        total, blocks, parts = _plan(profile, base_units, *(given[name] if name in subset else None
                                                            for name in PARTS))
        # The plan reports every given part (unused ones at zero), in the order base, burst, API.
        named = {part.part: part for part in parts}
        parts = tuple(named.get(name) or PartCost(name, given[name].id, given[name].label, 0, 0, ZERO, ZERO, ZERO,
                                                  ZERO, given[name].fixed_costs, given[name].capacity_measured)
                      for name in available)
        used = [part for part in parts if part.used]
        billed = sum((part.billed for part in used), ZERO)
        waste = sum((part.waste for part in used), ZERO)
        busy = sum((part.busy for part in used), ZERO)
        fixed = {name: sum((part.fixed_costs.get(name, ZERO) for part in used), ZERO) for name in FIXED_COLUMNS}
        accepted = profile.volume if accepted_outputs is None else _d("accepted_outputs", accepted_outputs)
        burst = named.get(ON_DEMAND)
        return HybridPlan(
            profile=profile, base_units=base_units,
            base_gpus=named[RESERVED].gpus if RESERVED in named else 0,
            burst_units=burst.units if burst is not None else 0, burst_gpus=burst.gpus if burst is not None else 0,
            api_outputs=named[API].outputs if API in named else ZERO, blocks=blocks, parts=parts,
            billed_compute=billed, gpu_cost=billed - waste, productive_capacity=busy - waste,
            idle_capacity=billed - busy, failure_waste=waste, total_cost=total, accepted_outputs=accepted,
            effective_unit_cost=total / accepted, break_even=_break_evens(profile, reserved, on_demand, api),
            **fixed,
        )
