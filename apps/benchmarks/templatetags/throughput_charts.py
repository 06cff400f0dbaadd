"""`{% throughput_results job=job %}` / `{% throughput_results candidate=candidate %}`: the phase-2 figures and charts
of a job's canonical throughput result, or of every throughput job whose plan names the candidate."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext as _

from apps.benchmarks.models import Result
from apps.benchmarks.throughput import KIND, SUMMARY_KEY
from apps.benchmarks.throughput_charts import figures
from apps.benchmarks.throughput_residuals import capacity_comparison

register = template.Library()

PERCENTILE_KEYS = ("p50", "p90", "p95", "p99")
LATENCY_ROWS = (("ttft", "per_request"), ("ttft", "token_weighted"), ("e2e", "per_request"),
                ("e2e", "token_weighted"), ("tpot", "per_request"), ("itl", "per_token"))


def _labels() -> dict[tuple[str, str], str]:
    return {
        ("ttft", "per_request"): _("Time to first token, per request"),
        ("ttft", "token_weighted"): _("Time to first token, token-weighted"),
        ("e2e", "per_request"): _("End-to-end latency, per request"),
        ("e2e", "token_weighted"): _("End-to-end latency, token-weighted"),
        ("tpot", "per_request"): _("Time per output token, per request"),
        ("itl", "per_token"): _("Inter-token latency, per token"),
    }


def _view(result: Result) -> dict:
    measured = result.summary[SUMMARY_KEY]
    summary = measured.get("summary") or {}
    latency = summary.get("latency_s") or {}
    rows = []
    for metric, weighting in LATENCY_ROWS:
        block = (latency.get(metric) or {}).get(weighting)
        if block:
            rows.append({"label": _labels()[(metric, weighting)], "n": block.get("n"), "method": block.get("method"),
                         "values": [(q, block.get(q)) for q in PERCENTILE_KEYS]})
    return {"result": result, "throughput": measured, "summary": summary, "rows": rows,
            "figures": figures(measured) if summary else {}, "dom_id": f"throughput-{result.pk}"}


@register.inclusion_tag("benchmarks/partials/throughput_results.html")
def throughput_results(*, job=None, candidate=None, limit: int = 5):
    results = Result.objects.filter(canonical=True, job__kind=KIND, ingested_at__isnull=False).select_related("job")
    if job is not None:
        results = results.filter(job=job)
    elif candidate is not None:
        results = results.filter(job__team_id=candidate.team_id, job__plan__spec__candidate_id=candidate.pk)
    else:
        results = results.none()
    views = [_view(result) for result in results.order_by("-recorded_at", "-pk")[:limit]
             if isinstance(result.summary, dict) and SUMMARY_KEY in result.summary]
    comparison = None
    if candidate is not None:
        comparison = capacity_comparison(candidate)
    return {"views": views, "for_candidate": candidate is not None, "capacity_comparison": comparison}


@register.filter
def as_ms(seconds) -> str:
    """Seconds → milliseconds with three significant decimals; an empty string for a missing value."""
    if seconds is None or seconds == "":
        return ""
    return f"{float(seconds) * 1000:.3g}" if float(seconds) * 1000 < 100 else f"{float(seconds) * 1000:.0f}"


@register.filter
def as_percent(fraction) -> str:
    return "" if fraction is None else f"{float(fraction) * 100:.2f}"
