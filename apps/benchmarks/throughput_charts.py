"""The phase-2 charts as plain Plotly figures (data + layout dicts) from a result's stored `phase2` summary, drawn
by the locally served plotly.min.js: the latency CDF against the SLO limits, the throughput–latency curve of a sweep
and goodput against offered load. Titles are translated here; numbers are the stored ones, nothing is recomputed."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from apps.common.chart_text import escaped_figure, readable_chart

COLORS = {"ttft": "#2f5d8a", "e2e": "#c58b2b", "slo": "#b5443b", "p50": "#9db6cf", "p95": "#2f5d8a",
          "p99": "#1d2330", "goodput": "#6b8e23", "throughput": "#2f5d8a", "ideal": "#9aa0a6"}


def _layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "xaxis": {"title": {"text": x_title}, "automargin": True},
            "yaxis": {"title": {"text": y_title}, "automargin": True},
            "margin": {"t": 48, "r": 16, "b": 48, "l": 64}, "legend": {"orientation": "h"}, **extra}


@readable_chart(lambda figure: _(
    "Share of the requests answered within a given time: the further left a curve reaches the top, the faster; a "
    "curve still below the top at a dashed SLO limit means requests over that limit."))
@escaped_figure
def latency_cdf(summary: dict[str, Any]) -> dict[str, Any] | None:
    """TTFT and end-to-end CDFs (per request, succeeded requests) with the SLO limits as vertical lines."""
    histograms = summary.get("histograms") or {}
    data, shapes, top = [], [], 1.0
    names = {"ttft": _("time to first token"), "e2e": _("end-to-end latency")}
    for metric, name in names.items():
        cdf = (histograms.get(metric) or {}).get("cdf") or {}
        if cdf.get("value_s"):
            data.append({"type": "scatter", "mode": "lines", "name": name, "x": cdf["value_s"], "y": cdf["q"],
                         "line": {"color": COLORS[metric], "shape": "hv"}})
    if not data:
        return None
    limits = (summary.get("slo") or {}).get("limits") or {}
    for key, name in (("ttft_max_s", _("SLO limit, time to first token")), ("e2e_max_s", _("SLO limit, end-to-end"))):
        if limits.get(key):
            shapes.append({"type": "line", "x0": limits[key], "x1": limits[key], "y0": 0, "y1": top,
                           "line": {"color": COLORS["slo"], "dash": "dash"}})
            data.append({"type": "scatter", "mode": "lines", "name": name, "x": [limits[key], limits[key]],
                         "y": [0, top], "line": {"color": COLORS["slo"], "dash": "dash"}, "hoverinfo": "name+x"})
    return {"data": data, "layout": _layout(_("Latency CDF against the SLO"), _("seconds (log scale)"),
                                            _("share of requests"), xaxis={"type": "log",
                                                                           "title": {"text": _("seconds (log scale)")}},
                                            shapes=shapes)}


@readable_chart(lambda figure: _(
    "Response time at each load level of the sweep, for half (p50), 95 in 100 (p95) and 99 in 100 (p99) of the "
    "requests: where the curves turn upward, the endpoint is near its capacity."))
@escaped_figure
def throughput_latency(measured: dict[str, Any]) -> dict[str, Any] | None:
    """End-to-end p50/p95/p99 against the achieved request throughput, one point per sweep level."""
    points = measured.get("points") or []
    if len(points) < 1:
        return None
    data = []
    for q in ("p50", "p95", "p99"):
        pairs = [(p["requests_per_s"], p[f"e2e_{q}_s"], p["offered"]) for p in points
                 if p.get("requests_per_s") is not None and p.get(f"e2e_{q}_s") is not None]
        if pairs:
            data.append({"type": "scatter", "mode": "lines+markers", "name": _("end-to-end %(q)s") % {"q": q},
                         "x": [a for a, _b, _c in pairs], "y": [b for _a, b, _c in pairs],
                         "customdata": [c for _a, _b, c in pairs], "line": {"color": COLORS[q]},
                         "hovertemplate": "%{x:.4g} req/s · %{y:.4g} s · offered %{customdata:.4g}"})
    if not data:
        return None
    return {"data": data, "layout": _layout(_("Throughput against latency (sweep)"), _("requests per second"),
                                            _("seconds"))}


@readable_chart(lambda figure: _(
    "Requests answered within the SLO per second (goodput) as the offered load grows: the dashed line is the "
    "capacity at the SLO, beyond which more load buys no more useful work; a cross marks an invalid level."))
@escaped_figure
def goodput_offered(measured: dict[str, Any]) -> dict[str, Any] | None:
    """Goodput (accepted/s), throughput and the rate actually sent against the offered load, with the capacity at
    the SLO marked."""
    points = measured.get("points") or []
    if not points:
        return None
    offered = [p["offered"] for p in points]
    symbols = ["circle" if p["valid"] else "x" for p in points]
    data = [
        {"type": "scatter", "mode": "lines+markers", "name": _("goodput (accepted per second)"), "x": offered,
         "y": [p["goodput_per_s"] for p in points], "marker": {"symbol": symbols, "size": 9},
         "line": {"color": COLORS["goodput"]}},
        {"type": "scatter", "mode": "lines+markers", "name": _("throughput (succeeded per second)"), "x": offered,
         "y": [p["requests_per_s"] for p in points], "marker": {"symbol": symbols},
         "line": {"color": COLORS["throughput"]}},
    ]
    if any(p.get("sent_per_s") is not None for p in points):  # what the client really sent, beside the schedule
        data.append({"type": "scatter", "mode": "lines+markers", "name": _("sent (requests actually sent per second)"),
                     "x": offered, "y": [p.get("sent_per_s") for p in points], "marker": {"symbol": symbols},
                     "line": {"color": COLORS["ideal"], "dash": "dot"}})
    shapes = []
    capacity = (measured.get("capacity") or {}).get("capacity")
    if capacity is not None:
        shapes.append({"type": "line", "x0": capacity, "x1": capacity, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": COLORS["slo"], "dash": "dash"}})
    key = measured.get("key")
    x_title = _("offered concurrency") if key == "concurrency" else _("offered requests per second")
    return {"data": data, "layout": _layout(_("Goodput against offered load"), x_title, _("requests per second"),
                                            shapes=shapes)}


def figures(measured: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    summary = measured.get("summary") or {}
    for name, figure in (("cdf", latency_cdf(summary)), ("curve", throughput_latency(measured)),
                         ("goodput", goodput_offered(measured))):
        if figure is not None:
            out[name] = figure
    return out
