"""Browser pages of the comparison: the comparison of one workload version (screen and print), its CSV and XLSX
exports.

Every role of the owning team reads (finance included). Objects are fetched through `for_user` querysets, so another
team's workload answers 404.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from apps.accounts.roles import Role, has_role
from apps.comparison import display, exports
from apps.comparison.selectors import comparison_for, summary_get
from apps.workloads import progress


def can_write(user) -> bool:
    return has_role(user, Role.PLATFORM, Role.ADMIN)


def _comparison_context(request, pk: int) -> dict:
    summary = summary_get(request.user, pk)
    chosen = request.GET.get("chosen") or None
    focus = request.GET.get("focus") or None
    comparison = comparison_for(request.user, summary, chosen_id=chosen, focus_id=focus)
    return {
        "summary": summary,
        "comparison": comparison,
        "rows": display.table_rows(comparison),
        "training_rows": display.training_table_rows(comparison),
        "hybrid": display.hybrid_row(comparison),
        "charts": display.chart_list(comparison),
        "can_write": can_write(request.user),
    }


def comparison_page(request, pk: int):
    context = _comparison_context(request, pk)
    # The workload's progress strip, with the comparison already computed here (not computed twice).
    context["progress"] = progress.render_strip(request, context["summary"], {"comparison": context["comparison"]})
    return render(request, "comparison/comparison.html", context)


def comparison_print(request, pk: int):
    return render(request, "comparison/comparison_print.html", _comparison_context(request, pk))


def _filename(summary, extension: str) -> str:
    return f"dossier-comparison-{summary.workload_id}-v{summary.version}.{extension}"


def comparison_csv(request, pk: int):
    summary = summary_get(request.user, pk)
    comparison = comparison_for(request.user, summary, chosen_id=request.GET.get("chosen") or None)
    response = HttpResponse(exports.comparison_csv(comparison), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(summary, "csv")}"'
    return response


def comparison_xlsx(request, pk: int):
    summary = summary_get(request.user, pk)
    comparison = comparison_for(request.user, summary)
    response = HttpResponse(
        exports.comparison_xlsx(comparison),
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    response["Content-Disposition"] = f'attachment; filename="{_filename(summary, "xlsx")}"'
    return response
