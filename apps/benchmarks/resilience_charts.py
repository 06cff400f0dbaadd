"""The phase-3 charts as plain Plotly figures (data + layout dicts) from a result's stored `phase3` summary, drawn by
the locally served plotly.min.js (the phase-2 script draws every `data-throughput-chart`): a timeline per failure
scenario, the cold-start distribution and the interconnect curve. Numbers are the stored ones, nothing recomputed."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from apps.benchmarks.throughput_charts import _layout
from apps.common.chart_text import escaped_figure, readable_chart

COLORS = {"sent": "#2f5d8a", "retries": "#c58b2b", "succeeded": "#6b8e23", "errors": "#b5443b", "p99": "#1d2330",
          "marker": "#9aa0a6", "healthy": "#6b8e23", "busbw": "#2f5d8a", "algbw": "#9db6cf"}


def marker_labels() -> dict[str, str]:
    return {
        "event_start": _("event"), "failure_detected": _("failure detected"), "recovery_start": _("recovery started"),
        "ready_logged": _("stack logged ready"), "healthy": _("healthy again"), "first_success": _("first success"),
    }


@readable_chart(lambda figure: _(
    "What happened second by second during the failure scenario: the dashed lines mark the event and the recovery, "
    "the red bars are failed attempts, and the time from the event to \"healthy again\" is the outage a user sees."))
@escaped_figure
def timeline(scenario: dict[str, Any]) -> dict[str, Any] | None:
    """Requests sent, retries, successes and failed attempts per second, the p99 of each second's successes on a
    second axis, and the events as vertical lines."""
    line = scenario.get("timeline") or {}
    rows = line.get("rows") or []
    if not rows:
        return None
    seconds = [row["t"] for row in rows]
    data = [
        {"type": "scatter", "mode": "lines", "name": _("requests sent per second"), "x": seconds,
         "y": [row["sent"] for row in rows], "line": {"color": COLORS["sent"], "shape": "hv"}},
        {"type": "scatter", "mode": "lines", "name": _("retries per second"), "x": seconds,
         "y": [row["retries"] for row in rows], "line": {"color": COLORS["retries"], "shape": "hv"}},
        {"type": "scatter", "mode": "lines", "name": _("successes per second"), "x": seconds,
         "y": [row["succeeded"] for row in rows], "line": {"color": COLORS["succeeded"], "shape": "hv"}},
        # a bar is drawn centred on its x: the second [t, t + 1) is centred on t + 0.5, where the step lines run
        {"type": "bar", "name": _("failed attempts per second"), "x": [t + 0.5 for t in seconds],
         "y": [row["errors"] for row in rows],
         "marker": {"color": COLORS["errors"]}, "opacity": 0.6},
        {"type": "scatter", "mode": "lines+markers", "name": _("p99 latency of the second's successes (s)"),
         "x": seconds, "y": [row["p99_s"] for row in rows], "yaxis": "y2", "connectgaps": False,
         "line": {"color": COLORS["p99"], "dash": "dot"}},
    ]
    shapes, annotations = [], []
    labels = marker_labels()
    for key, label in labels.items():
        moment = (line.get("markers") or {}).get(key)
        if moment is None:
            continue
        shapes.append({"type": "line", "x0": moment, "x1": moment, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": COLORS["healthy"] if key == "healthy" else COLORS["marker"], "dash": "dash"}})
        # Markers often fall within a fraction of a second of each other: one label per line, stepped down.
        annotations.append({"x": moment, "yref": "paper", "y": 1 - 0.075 * len(annotations), "text": label,
                            "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": 10},
                            "bgcolor": "rgba(255,255,255,0.8)"})
    title = _("Timeline of the scenario %(scenario)s") % {"scenario": scenario.get("name")}
    return {"data": data, "layout": _layout(
        title, _("seconds from the start of the load"), _("per second"),
        yaxis2={"title": {"text": _("seconds")}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
        shapes=shapes, annotations=annotations, bargap=0.1,
        # the legend below the axis title, the right margin for the second axis
        legend={"orientation": "h", "y": -0.3}, margin={"t": 48, "r": 64, "b": 110, "l": 64})}


@readable_chart(lambda figure: _(
    "How long a stopped server takes to be healthy and to send its first token, one point per restart: the higher "
    "the points, the longer a scale-up or a recovery leaves requests waiting."))
@escaped_figure
def cold_start(cold: dict[str, Any] | None) -> dict[str, Any] | None:
    """Each cold start's time to healthy and to the first token, as points over a box."""
    runs = (cold or {}).get("runs") or []
    if not runs:
        return None
    data = []
    for key, name, color in (("time_to_healthy_s", _("time to healthy"), COLORS["healthy"]),
                             ("time_to_first_token_s", _("time to the first token"), COLORS["sent"]),
                             ("logged_ready_s", _("ready as the stack logs it"), COLORS["marker"])):
        values = [run[key] for run in runs if run.get(key) is not None]
        if values:
            data.append({"type": "box", "name": name, "y": values, "boxpoints": "all", "jitter": 0.3,
                         "marker": {"color": color}})
    if not data:
        return None
    return {"data": data, "layout": _layout(_("Cold start (stop → start)"), "", _("seconds"), showlegend=False)}


@readable_chart(lambda figure: _(
    "Bandwidth between the GPUs as the messages grow: the level where the bus-bandwidth curve flattens is what the "
    "interconnect delivers to multi-GPU work."))
@escaped_figure
def interconnect(allreduce: dict[str, Any]) -> dict[str, Any] | None:
    """Bus and algorithm bandwidth against the message size (log scale), labelled with the device and backend."""
    rows = allreduce.get("rows") or []
    if not rows:
        return None
    sizes = [row["size_bytes"] for row in rows]
    data = [
        {"type": "scatter", "mode": "lines+markers", "name": _("bus bandwidth (GB/s)"), "x": sizes,
         "y": [row["busbw_gbps"] for row in rows], "line": {"color": COLORS["busbw"]}},
        {"type": "scatter", "mode": "lines+markers", "name": _("algorithm bandwidth (GB/s)"), "x": sizes,
         "y": [row["algbw_gbps"] for row in rows], "line": {"color": COLORS["algbw"], "dash": "dot"}},
    ]
    title = _("All-reduce bandwidth, %(ranks)s ranks, %(device)s/%(backend)s") % {
        "ranks": allreduce.get("world_size"), "device": str(allreduce.get("label") or "").upper(),
        "backend": allreduce.get("backend")}
    return {"data": data, "layout": _layout(title, _("message size (bytes, log scale)"), _("GB/s"),
                                            xaxis={"type": "log",
                                                   "title": {"text": _("message size (bytes, log scale)")}})}
