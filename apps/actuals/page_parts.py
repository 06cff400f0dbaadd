"""What the actuals app shows on the decision record's page (registered in ActualsConfig.ready, see
apps/common/page_parts.py): the "Planned against actual" panel, with the upload history and, for the roles that
send actuals, the upload form."""

from __future__ import annotations

from django.template.loader import render_to_string

from apps.actuals import parsing, selectors, services
from apps.actuals.forms import ActualsUploadForm
from apps.common import money, page_parts


def _share(value):
    return money.percent(value) if value is not None else None


def panel_context(request, record, *, form: ActualsUploadForm | None = None, errors=()) -> dict:
    user = request.user
    view = selectors.planned_against_actual(user, record)
    report = view.report
    planned = view.planned
    currency = planned.currency if planned is not None else ""
    figures = None
    if report is not None:
        actual = report.actual
        figures = {
            "planned_cost": money.shown(planned.cost_per_accepted_output, "unit_cost", currency),
            "actual_cost": money.shown(actual.cost_per_accepted_output, "unit_cost", currency),
            "planned_cost_exact": money.exact(planned.cost_per_accepted_output),
            "actual_cost_exact": (money.exact(actual.cost_per_accepted_output)
                                  if actual.cost_per_accepted_output is not None else ""),
            "drift_percent": money.percent(report.drift) if report.drift is not None else None,
            "planned_gpu_hours": money.shown(report.planned_gpu_hours_for_days, "quantity"),
            "actual_gpu_hours": money.shown(actual.gpu_hours, "quantity"),
            "gpu_hours_ratio": _share(report.gpu_hours_ratio),
            "planned_idle": _share(planned.idle_share),
            "actual_idle": _share(report.actual_idle_share),
            "planned_acceptance": _share(planned.quality_acceptance),
            "actual_acceptance": _share(actual.acceptance),
            "spend": money.shown(actual.spend, "money", currency),
            "accepted": money.shown(actual.accepted_outputs, "quantity"),
        }
    may_upload = services.may_upload(user) and selectors.receives_actuals(record) and planned is not None
    return {
        "record": record,
        "view": view,
        "planned": planned,
        "report": report,
        "figures": figures,
        "may_upload": may_upload,
        "form": form or (ActualsUploadForm() if may_upload else None),
        "errors": list(errors),
        "columns": parsing.COLUMN_NAMES,
        "max_rows": parsing.MAX_ROWS,
    }


def actuals_on_record(request, *, record) -> str:
    """The panel on an accepted record (or one that has actuals); nothing on a draft or a proposal."""
    if not selectors.receives_actuals(record) and not selectors.uploads_of(request.user, record).exists():
        return ""
    return render_to_string("actuals/partials/panel.html", panel_context(request, record), request=request)


def register() -> None:
    page_parts.register("decisions.record.detail", actuals_on_record)
