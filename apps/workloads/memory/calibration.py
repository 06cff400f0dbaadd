"""The safety margin that phase-1 (memory-fit) results calibrate, per GPU architecture and model family.

Every estimate ends with a safety margin: a fraction of its subtotal (`breakdown.with_safety_margin`), by default
DEFAULT_SAFETY_MARGIN_FRACTION (10 %). A phase-1 result measures the device's real footprint beside the estimate's
"total without the safety margin" (the agent's `total_without_margin` row), so each result says by how much the
estimate fell short there: underestimate u = (measured − predicted) ÷ predicted, positive when the estimate was low.
That is the same quantity as the margin (a fraction of the subtotal), so a margin of u would have covered the run.

The rule, for one group:

- **Group**: a GPU architecture (the guide's GPU family code, `h100`, `h200`, …; a GPU it does not list goes by its
  own name) × a model family. The model family is the estimator's `ModelShape.architecture` (dense, moe, encoder,
  diffusion) and its weight precision (`ModelShape.precision`), written `dense/bf16` (`model_family()`): the two
  inputs that change which terms an estimate has and how they scale.
- **Results that count**: canonical, succeeded, non-rehearsal memory-fit results (a run on a CPU or against the mock
  stack never calibrates a GPU: `apps/benchmarks/rehearsal.py`) of the team, whose comparison has both a predicted and a
  measured total without the margin.
- **Below MIN_RUNS (3) results** the margin stays the default, and says how many more results it needs.
- **From MIN_RUNS results** the margin is the largest underestimate seen in the group, floored at 0 (a family every
  run of which used less than predicted needs no margin for estimate error), plus CUSHION (2 percentage points, for the
  run-to-run variation a handful of runs does not show), capped at MAX_MARGIN (50 %): margin = min(50 %, max(0, u_max)
  + 2 %). The largest, not a mean or a percentile: with the few results a team has, a margin one run already exceeded
  would not be safe. The underestimate is rounded up to 0.01 % (4 decimal places) before the cushion is added. A
  group whose largest underestimate reaches the cap says so: the estimate, not its margin, is what needs fixing.

The cushion and the cap are policy choices of this project, not measured figures.

Pure: plain values in, a Calibration out (no Django). The benchmarks app gathers the results and stores the outcome
(`workloads.CalibratedMargin`); `apps/workloads/selectors.calibrated_margins` chooses the margin of each GPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from apps.workloads.memory.breakdown import DEFAULT_SAFETY_MARGIN_FRACTION

#: Results a group needs before its margin replaces the default (the residuals page's "provisional under 3").
MIN_RUNS = 3
#: Added to the largest underestimate: run-to-run variation a handful of runs does not show (a policy choice).
CUSHION = Decimal("0.02")
#: The most a calibrated margin may be (a policy choice): beyond it the estimate itself is wrong for the family.
MAX_MARGIN = Decimal("0.50")
#: The precision the underestimate and the margin are stored with: 0.01 %.
PLACES = Decimal("0.0001")
#: The largest underestimate stored (10⁶, i.e. 10⁸ %): a total predicted as a few bytes is stored as this bound.
MAX_STORED_UNDERESTIMATE = Decimal(10) ** 6
#: The default margin as a Decimal, for display beside a calibrated one.
DEFAULT_MARGIN = Decimal(str(DEFAULT_SAFETY_MARGIN_FRACTION))


def model_family(architecture: str, precision: str) -> str:
    """The model family of the rule: the estimator's architecture and weight precision, `dense/bf16`."""
    return f"{architecture}/{precision}"


@dataclass(frozen=True)
class TotalResidual:
    """One result's total without the safety margin: what the estimate predicted and what the device measured."""

    result_id: int
    predicted_bytes: int
    measured_bytes: int

    @property
    def underestimate(self) -> Fraction:
        """(measured − predicted) ÷ predicted, exact; positive when the estimate was too low."""
        return Fraction(self.measured_bytes - self.predicted_bytes, self.predicted_bytes)


@dataclass(frozen=True)
class Calibration:
    """What a group's results give: how many counted, the largest underestimate (None without results) and the margin
    (None below MIN_RUNS: the default stands)."""

    runs: int
    largest_underestimate: Decimal | None
    margin_fraction: Decimal | None
    capped: bool = False
    result_ids: tuple[int, ...] = ()

    @property
    def calibrated(self) -> bool:
        return self.margin_fraction is not None

    @property
    def runs_missing(self) -> int:
        return max(0, MIN_RUNS - self.runs)


def _round_up(value: Fraction) -> Decimal:
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(PLACES, rounding=ROUND_CEILING)


def margin_from(largest_underestimate: Decimal) -> tuple[Decimal, bool]:
    """min(MAX_MARGIN, max(0, largest underestimate) + CUSHION), and whether the cap applied."""
    wanted = max(Decimal(0), largest_underestimate) + CUSHION
    return (MAX_MARGIN, True) if wanted > MAX_MARGIN else (wanted.quantize(PLACES), False)


def calibrate(totals: Iterable[TotalResidual]) -> Calibration:
    """The rule (module docstring) over one group's results; a total predicted as 0 bytes or less is left out."""
    counted = sorted((item for item in totals if item.predicted_bytes > 0 and item.measured_bytes >= 0),
                     key=lambda item: item.result_id)
    ids = tuple(item.result_id for item in counted)
    if not counted:
        return Calibration(runs=0, largest_underestimate=None, margin_fraction=None)
    largest = min(_round_up(max(item.underestimate for item in counted)), MAX_STORED_UNDERESTIMATE)
    if len(counted) < MIN_RUNS:
        return Calibration(runs=len(counted), largest_underestimate=largest, margin_fraction=None, result_ids=ids)
    margin, capped = margin_from(largest)
    return Calibration(runs=len(counted), largest_underestimate=largest, margin_fraction=margin, capped=capped,
                       result_ids=ids)
