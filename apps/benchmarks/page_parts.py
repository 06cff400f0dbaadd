"""What the benchmarks show on the pages of lower apps (registered in BenchmarksConfig.ready, see
apps/common/page_parts.py): the memory-fit panel on the workload version and the candidate, the throughput and
resilience results on the candidate, the acceptance flags on the quote. Each reads its own data, scoped to the
signed-in user."""

from __future__ import annotations

from django.template.loader import render_to_string

from apps.accounts.roles import Role, has_role
from apps.benchmarks import job_plan_forms, memory_fit
from apps.benchmarks.measurements import REHEARSAL_LABEL, UNLINKED_LABEL, reason_labels
from apps.benchmarks.models import FigureMeasurement
from apps.benchmarks.templatetags.resilience import acceptance_flags, resilience_results
from apps.benchmarks.templatetags.throughput_charts import throughput_results
from apps.benchmarks.verdicts import result_verdict
from apps.common import page_parts


def _memory_fit_context(request, candidate=None, summary=None) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"readings": [], "candidate": candidate, "summary": summary}
    readings = []
    for result in memory_fit.memory_fit_results(user, candidate=candidate, summary=summary)[:10]:
        if not isinstance(result.result, dict):
            continue
        reading = memory_fit.read_memory_fit(result.result, result.spec)
        readings.append({"result": result, "reading": reading, "verdict": result_verdict(result),
                         "origin": (result.spec or {}).get("origin") or {}})
    latest = readings[0] if readings else None
    chart_id = f"memory-fit-chart-{'candidate' if candidate is not None else 'summary'}-" \
               f"{candidate.pk if candidate is not None else summary.pk}"
    return {
        "candidate": candidate,
        "summary": summary,
        "readings": readings,
        "latest": latest,
        # An inconclusive result (the probe at the target timed out) has no figures to chart: it says so instead.
        "figure": memory_fit.memory_fit_figure(latest["reading"])
        if latest and not latest["verdict"].is_inconclusive else None,
        "chart_id": chart_id,
        "chart_data_id": f"{chart_id}-data",
        "can_plan": candidate is not None and candidate.quote.gpu_id is not None
        and has_role(user, Role.PLATFORM, Role.ADMIN),
    }


def memory_fit_on_candidate(request, *, candidate) -> str:
    return render_to_string("benchmarks/partials/memory_fit_panel.html",
                            _memory_fit_context(request, candidate=candidate), request=request)


def memory_fit_on_summary(request, *, summary, **_page) -> str:
    if not summary.is_ready:
        return ""
    return render_to_string("benchmarks/partials/memory_fit_panel.html",
                            _memory_fit_context(request, summary=summary), request=request)


def results_on_candidate(request, *, candidate) -> str:
    user = getattr(request, "user", None)
    link = ""
    if user is not None and has_role(user, Role.PLATFORM, Role.ADMIN):
        link = render_to_string("benchmarks/partials/candidate_plan_links.html",
                                {"plan_form_links": job_plan_forms.plan_form_links(candidate)}, request=request)
    throughput = render_to_string("benchmarks/partials/throughput_results.html",
                                  throughput_results(candidate=candidate), request=request)
    resilience = render_to_string("benchmarks/partials/resilience_results.html",
                                  resilience_results(candidate=candidate), request=request)
    return link + throughput + resilience


def acceptance_flags_on_quote(request, *, quote) -> str:
    return render_to_string("benchmarks/partials/acceptance_flags.html", acceptance_flags(quote=quote), request=request)


def measurement_on_figure(request, *, figure) -> str:
    """Beside a measured figure on the evidence pages: the result it is linked to, "rehearsal — not a GPU
    measurement", or "measured (unlinked)" (it does not count as measured)."""
    if figure.source != "measured":
        return ""
    link = (FigureMeasurement.objects.select_related("result__job", "result__attempt").filter(figure_id=figure.pk)
            .first())
    result = link.result if link is not None else None
    return render_to_string("benchmarks/partials/figure_measurement.html", {
        "figure": figure, "link": link, "result": result, "rehearsal_label": REHEARSAL_LABEL,
        "unlinked_label": UNLINKED_LABEL, "reasons": reason_labels(result.rehearsal_reasons) if result else [],
    }, request=request)


def register() -> None:
    page_parts.register("evidence.figure.measurement", measurement_on_figure)
    page_parts.register("workloads.summary.memory_fit", memory_fit_on_summary)
    page_parts.register("quotes.candidate.results", results_on_candidate)
    page_parts.register("quotes.candidate.memory_fit", memory_fit_on_candidate)
    page_parts.register("quotes.quote.flags", acceptance_flags_on_quote)
