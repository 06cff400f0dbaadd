"""`{% resilience_results job=job %}` / `{% resilience_results candidate=candidate %}`: the phase-3 results (failure
scenarios, cold start, checkpoint, interconnect, acceptance) of a job, or of every job measuring the candidate;
`{% acceptance_flags quote=quote %}`: the quote's candidates whose latest acceptance check is below its threshold."""

from __future__ import annotations

from django import template

from apps.benchmarks import resilience, resilience_charts

register = template.Library()


def _view(result) -> dict | None:
    summary = (result.summary or {}).get(resilience.SUMMARY_KEY) if isinstance(result.summary, dict) else None
    if not isinstance(summary, dict):
        return None
    dom_id = f"resilience-{result.pk}"
    charts = []
    if not summary.get("problem"):
        if summary["kind"] == "operations":
            for position, scenario in enumerate(summary.get("scenarios") or []):
                figure = resilience_charts.timeline(scenario)
                if figure is not None:
                    charts.append({"id": f"{dom_id}-timeline-{position}", "figure": figure})
            figure = resilience_charts.cold_start(summary.get("cold_start"))
            if figure is not None:
                charts.append({"id": f"{dom_id}-cold-start", "figure": figure})
        elif summary["kind"] == "allreduce":
            figure = resilience_charts.interconnect(summary)
            if figure is not None:
                charts.append({"id": f"{dom_id}-interconnect", "figure": figure})
    for chart in charts:
        chart["data_id"] = f"{chart['id']}-data"
    figures = [{"label": resilience.metric_label(name), "value": item.get("value"), "note": item.get("note")}
               for name, item in (summary.get("figures") or {}).items() if isinstance(item, dict)]
    return {"result": result, "job": result.job, "kind": summary.get("kind"), "s": summary, "charts": charts,
            "dom_id": dom_id, "figures": figures}


@register.inclusion_tag("benchmarks/partials/resilience_results.html")
def resilience_results(*, job=None, candidate=None, limit: int = 12):
    views = [view for view in (_view(result) for result in resilience.results_for(job=job, candidate=candidate)[:limit])
             if view is not None]
    flag = None
    if candidate is not None:
        flag = resilience.acceptance_flags([candidate]).get(candidate.pk)
    return {"views": views, "for_candidate": candidate is not None, "flag": flag}


@register.inclusion_tag("benchmarks/partials/acceptance_flags.html")
def acceptance_flags(*, quote):
    candidates = list(quote.candidates.all())
    flagged = resilience.acceptance_flags(candidates)
    return {"flagged": [(candidate, flagged[candidate.pk]) for candidate in candidates if candidate.pk in flagged]}


@register.filter
def scaled(value, divisor) -> str:
    """value ÷ divisor with four significant digits (bytes/s → GB/s, flop/s → TFLOP/s); empty when missing."""
    if value is None or value == "":
        return ""
    return f"{float(value) / float(divisor):.4g}"


@register.filter
def seconds(value) -> str:
    if value is None or value == "":
        return ""
    return f"{float(value):.3f}"
