"""Browser pages of actuals: the upload of a sheet for an accepted record (finance, platform, admin), the template of
the format, and the CSV of one version. The panel itself sits on the record's page (page_parts.py)."""

from __future__ import annotations

import csv
import io
import re

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from apps.actuals import parsing, selectors, services
from apps.actuals.forms import ActualsUploadForm
from apps.actuals.models import ActualsUpload
from apps.actuals.page_parts import panel_context
from apps.common import money
from apps.common.forms import add_service_errors
from apps.common.spreadsheet import safe_row
from apps.decisions import selectors as decision_selectors

CONFLICT = 409


def _download(content: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def upload(request, pk: int):
    """GET: the panel with its form; POST: a new version from the sheet, or the panel again naming each bad row."""
    record = decision_selectors.record_get(request.user, pk)
    if not services.may_upload(request.user):
        raise PermissionDenied(_("Only the finance, platform and admin roles send actuals."))
    form = ActualsUploadForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload_file = form.cleaned_data["file"]
            try:
                result = services.actuals_upload_file(
                    actor=request.user, record=record, name=upload_file.name, content=upload_file.read(),
                    source=form.cleaned_data["source"],
                )
            except services.ActualsConflict as error:
                form.add_error(None, error.messages)
                status = CONFLICT
            except services.ActualsRejected as error:
                errors = [detail["message"] for detail in error.details["errors"]]
                status = 400
            except ValidationError as error:
                add_service_errors(form, error)
                status = 400
            else:
                text = _("Actuals version %(version)s saved: %(days)s day(s).") % {
                    "version": result.upload.version, "days": result.upload.row_count}
                if result.flag_opened:
                    text += " " + _("The actual cost drifted beyond the team's threshold: the record is flagged.")
                messages.success(request, text)
                return redirect(record.get_absolute_url() + "#actuals")
        else:
            status = 400
    context = panel_context(request, record, form=form, errors=errors)
    if not context["may_upload"] and request.method == "POST" and status == 200:
        status = CONFLICT
    return render(request, "actuals/upload.html", context, status=status)


@require_safe
def template(request):
    """The header of the format and one example day."""
    return _download(parsing.template_csv(), "actuals-template.csv")


@require_safe
def export(request, pk: int):
    """One version's days as CSV, in the upload format (it can be sent again as it is). Every cell goes through
    safe_row, as in every export."""
    try:
        upload_row = selectors.upload_get(request.user, pk)
    except ActualsUpload.DoesNotExist:
        raise Http404 from None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(parsing.COLUMN_NAMES)
    for day in selectors.days_of(upload_row):
        writer.writerow(safe_row([day.date.isoformat(), money.exact(day.gpu_hours), money.exact(day.outputs),
                                  money.exact(day.accepted_outputs), money.exact(day.spend), day.currency]))
    slug = re.sub(r"[^A-Za-z0-9]+", "-", upload_row.record.reference).strip("-")
    return _download(buffer.getvalue(), f"{slug}-actuals-v{upload_row.version}.csv")
