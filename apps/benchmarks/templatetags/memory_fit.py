"""`{% memory_fit_panel candidate=… %}` / `{% memory_fit_panel summary=… %}`: phase-1 results on the candidate and
workload pages (their views stay as they are: the panel reads its own data, scoped to the signed-in user)."""

from django import template

from apps.accounts.roles import Role, has_role
from apps.benchmarks import phase1

register = template.Library()


@register.inclusion_tag("benchmarks/partials/memory_fit_panel.html", takes_context=True)
def memory_fit_panel(context, candidate=None, summary=None):
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"readings": [], "candidate": candidate, "summary": summary}
    readings = []
    for result in phase1.memory_fit_results(user, candidate=candidate, summary=summary)[:10]:
        if not isinstance(result.result, dict):
            continue
        reading = phase1.read_memory_fit(result.result, result.spec)
        readings.append({"result": result, "reading": reading, "origin": (result.spec or {}).get("origin") or {}})
    latest = readings[0] if readings else None
    chart_id = f"memory-fit-chart-{'candidate' if candidate is not None else 'summary'}-" \
               f"{candidate.pk if candidate is not None else summary.pk}"
    return {
        "candidate": candidate,
        "summary": summary,
        "readings": readings,
        "latest": latest,
        "figure": phase1.memory_fit_figure(latest["reading"]) if latest else None,
        "chart_id": chart_id,
        "chart_data_id": f"{chart_id}-data",
        "can_plan": candidate is not None and candidate.quote.gpu_id is not None
        and has_role(user, Role.PLATFORM, Role.ADMIN),
    }
