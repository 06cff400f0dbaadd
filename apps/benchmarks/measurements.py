"""Measured figures: the one way a candidate's figure becomes "measured", and the one test of whether it counts.

`measured_figure_set` (called by the ingest handlers, inside the result's ingest transaction) writes the figure with
source "measured" through the evidence service and links it to the canonical result that measured it
(`FigureMeasurement`). A person cannot type a measured figure (apps/evidence/services.candidate_figure_enter).

`counts_as_measured(figure)` is what the comparison asks (apps/comparison/selectors.CandidateResult.measured): a
measured figure counts only when it is linked to the canonical, succeeded result of its job, on this candidate, and
that result is not a rehearsal (apps/benchmarks/rehearsal.py). A measured figure without a link (none can be made any
more; the migration turned the old ones into estimates) and a rehearsal's figure do not count.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import transaction
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.benchmarks import rehearsal as rehearsal_rules
from apps.benchmarks.models import FigureMeasurement, Result, ResultStatus
from apps.evidence.models import CandidateFigure, FigureSource
from apps.evidence.services import candidate_figure_set
from apps.fleet.inventory_check import model_matches

REHEARSAL_LABEL = _("rehearsal — not a GPU measurement")
UNLINKED_LABEL = _("measured (unlinked)")
REASON_LABELS = {
    rehearsal_rules.MOCK_STACK: _("ran against the built-in mock serving stack"),
    rehearsal_rules.CPU_DEVICE: _("ran on the CPU"),
    rehearsal_rules.NO_GPU: _("the node reported no GPU"),
    rehearsal_rules.NO_INVENTORY: _("the node reported no inventory"),
}


class FigureKept(Exception):
    """A rehearsal does not replace a figure that counts more (measured on a GPU, quoted or estimated)."""


# --- what a result is ------------------------------------------------------------------------------------------


def inventory_of(attempt) -> dict | None:
    """The node's inventory for this attempt: the one it reported at start, else the agent's latest."""
    snapshot = attempt.start_inventory or attempt.agent.latest_inventory()
    return snapshot.data if snapshot is not None else None


def result_rehearsal_reasons(*, spec, result_data, attempt) -> list[str]:
    return list(rehearsal_rules.rehearsal_reasons(spec, result_data, inventory_of(attempt)))


def reason_labels(codes) -> list[str]:
    return [str(REASON_LABELS.get(code, code)) for code in codes or ()]


def measures_candidate(result: Result, candidate) -> tuple[bool, str]:
    """Did this result's run measure `candidate`? On the candidate's node (the agent linked to it), or on a node whose
    GPUs are the candidate's quoted GPU model. Returns (yes, why not)."""
    agent = result.attempt.agent
    if agent.candidate_id == candidate.pk:
        return True, ""
    gpu = candidate.quote.gpu if candidate.quote_id else None
    inventory = inventory_of(result.attempt) or {}
    names = [str(item.get("name") or "") for item in inventory.get("gpus") or [] if isinstance(item, dict)]
    if gpu is not None and names and all(model_matches(gpu.name, name) for name in names):
        return True, ""
    found = ", ".join(sorted(set(names))) or "no GPU"
    quoted = gpu.name if gpu is not None else "no GPU model"
    return False, (f"the run was neither on the candidate's node nor on its quoted GPU ({quoted}): "
                   f"agent {agent.name} reported {found}")


# --- the write ---------------------------------------------------------------------------------------------------


def _figure_rank(figure: CandidateFigure) -> str:
    """'rehearsal' when the figure is a rehearsal's, else what it is (a rehearsal replaces only its own kind)."""
    link = measurement_of(figure)
    if figure.source == FigureSource.MEASURED and link is not None and link.rehearsal:
        return "rehearsal"
    return str(figure.source)


@transaction.atomic
def measured_figure_set(
    *, actor, result: Result, candidate, metric: str, value: Decimal | int | str, reference: str,
    capacity_unit: str = "",
) -> FigureMeasurement:
    """Write `metric` on the candidate as measured by `result` and link the two (one transaction).

    The result must be its job's canonical, succeeded result. A rehearsal result stores its figure linked as a
    rehearsal, and only where the candidate has no figure for the metric or a rehearsal's: it never replaces a
    measured, quoted or estimated figure (FigureKept)."""
    if not result.canonical or result.status != ResultStatus.SUCCEEDED:
        raise ValidationError({"source": gettext("Only the canonical, succeeded result of a job measures a figure.")})
    existing = (CandidateFigure.objects.select_for_update(of=("self",)).select_related("measurement")
                .filter(candidate=candidate, metric=metric).first())
    if result.rehearsal and existing is not None and _figure_rank(existing) != "rehearsal":
        raise FigureKept(f"{metric}: a rehearsal does not replace the {existing.source} figure")
    figure = candidate_figure_set(actor=actor, candidate=candidate, metric=metric, value=value,
                                  source=FigureSource.MEASURED, reference=reference[:500], capacity_unit=capacity_unit)
    link, _created = FigureMeasurement.objects.update_or_create(
        figure=figure, defaults={"result": result, "rehearsal": result.rehearsal}
    )
    return link


def unlink_unless_measured(*, figure: CandidateFigure) -> None:
    """A figure changed to quoted or estimated is no longer anyone's measurement (post_save of CandidateFigure)."""
    if figure.source != FigureSource.MEASURED:
        FigureMeasurement.objects.filter(figure_id=figure.pk).delete()


# --- the reads ---------------------------------------------------------------------------------------------------


def measurement_of(figure: CandidateFigure) -> FigureMeasurement | None:
    """The figure's link (prefetch `measurement__result` to read many without a query each)."""
    try:
        return figure.measurement
    except ObjectDoesNotExist:
        return None


def counts_as_measured(figure: CandidateFigure) -> bool:
    """The one test of "measured": linked to the canonical, succeeded result of a job that measured it, not a
    rehearsal."""
    if figure.source != FigureSource.MEASURED:
        return False
    link = measurement_of(figure)
    if link is None or link.rehearsal:
        return False
    result = link.result
    return result.canonical and result.status == ResultStatus.SUCCEEDED and not result.rehearsal


def is_rehearsal_figure(figure: CandidateFigure) -> bool:
    link = measurement_of(figure)
    return figure.source == FigureSource.MEASURED and link is not None and link.rehearsal
