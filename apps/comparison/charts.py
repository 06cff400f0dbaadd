"""The comparison's charts as plain Plotly figures (data + layout dicts), drawn by the locally served plotly.min.js.

Each builder takes a `Comparison` and returns a figure, or None when the comparison lacks the figures the chart
needs (the page then says what is missing). Amounts are plotted as floats (a chart is a picture; the table and the
exports keep the exact Decimals); titles and legends are translated here, labels of candidates are data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

from django.utils.translation import gettext as _

from apps.common.chart_text import chart_text, escaped_figure, readable_chart
from apps.comparison import cost_model
from apps.comparison.selectors import Comparison
from apps.evidence.models import FigureMetric

COLORS = {
    "productive": "#2f5d8a",
    "idle": "#9db6cf",
    "storage_network": "#6b8e23",
    "platform_labor": "#c58b2b",
    "other_costs": "#8c6bb1",
    "failure_waste": "#b5443b",
    "p50": "#9db6cf",
    "p95": "#2f5d8a",
    "p99": "#1d2330",
    "target": "#b5443b",
    "predicted": "#9db6cf",
    "measured": "#2f5d8a",
}
HOVER_UNIT_COST = "%{y:.6g}"


def _float(value: Decimal | int | None) -> float | None:
    return None if value is None else float(value)


def _layout(title: str, *, x_title: str = "", y_title: str = "", **extra) -> dict:
    layout = {
        "title": {"text": title, "x": 0, "xanchor": "left"},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "font": {"family": "system-ui, sans-serif", "size": 12, "color": "#1d2330"},
        "margin": {"l": 70, "r": 20, "t": 50, "b": 90},
        "height": 380,
        "legend": {"orientation": "h", "y": -0.3},
        "xaxis": {"title": {"text": x_title}, "automargin": True, "gridcolor": "#e5e8ee"},
        "yaxis": {"title": {"text": y_title}, "automargin": True, "gridcolor": "#e5e8ee", "exponentformat": "none"},
    }
    layout.update(extra)
    return layout


@readable_chart(lambda figure: _(
    "Each bar is one candidate's cost per accepted output, split by what it pays for: the lower the bar, the cheaper "
    "the useful work."))
@escaped_figure
def cost_breakdown(comparison: Comparison) -> dict | None:
    """Stacked cost per accepted output: productive and idle GPU, storage/network, labor, other, failure waste."""
    if comparison.is_training:
        return training_cost_breakdown(comparison)
    rows = comparison.rows
    if not rows:
        return None
    labels = [result.label for result in rows]
    parts = (
        ("productive", _("GPU, productive"), lambda row: row.productive_capacity),
        ("idle", _("GPU, idle capacity"), lambda row: row.idle_capacity),
        ("storage_network", _("Storage and network"), lambda row: row.storage_network),
        ("platform_labor", _("Platform labor"), lambda row: row.platform_labor),
        ("other_costs", _("Other costs"), lambda row: row.other_costs),
        ("failure_waste", _("Failure and retry waste"), lambda row: row.failure_waste),
    )
    data = []
    for key, name, amount in parts:
        values = [_float(amount(result.row) / result.row.accepted_outputs) for result in rows]
        if not any(values):
            continue
        data.append({
            "type": "bar", "name": name, "x": labels, "y": values, "marker": {"color": COLORS[key]},
            "hovertemplate": HOVER_UNIT_COST + "<extra>" + chart_text(name) + "</extra>",
        })
    unit = _("%(currency)s per accepted output") % {"currency": comparison.currency}
    return {"data": data, "layout": _layout(_("Cost per accepted output, by component"), y_title=unit,
                                            barmode="stack")}


@readable_chart(lambda figure: _(
    "Each bar is one candidate's cost of one completed training run, split by what it pays for: the lower the bar, "
    "the cheaper the run."))
@escaped_figure
def training_cost_breakdown(comparison: Comparison) -> dict | None:
    """Stacked cost per completed training run: GPU compute, checkpointing, failed-run waste and the cost lines."""
    rows = comparison.training_rows
    if not rows:
        return None
    labels = [result.label for result in rows]
    parts = (
        ("productive", _("GPU compute"), lambda row: row.gpu_compute),
        ("idle", _("Checkpointing"), lambda row: row.checkpointing),
        ("failure_waste", _("Failed-run waste"), lambda row: row.failed_run_waste),
        ("storage_network", _("Storage and network"), lambda row: row.storage + row.network),
        ("platform_labor", _("Platform labor"), lambda row: row.platform_labor),
        ("other_costs", _("Other costs"), lambda row: row.other_costs),
    )
    data = []
    for key, name, amount in parts:
        values = [_float(amount(result.training_row)) for result in rows]
        if not any(values):
            continue
        data.append({
            "type": "bar", "name": name, "x": labels, "y": values, "marker": {"color": COLORS[key]},
            "hovertemplate": "%{y:,.2f}<extra>" + chart_text(name) + "</extra>",
        })
    unit = _("%(currency)s per completed run") % {"currency": comparison.currency}
    return {"data": data, "layout": _layout(_("Cost per completed training run, by component"), y_title=unit,
                                            barmode="stack")}


@readable_chart(lambda figure: _(
    "Each candidate's response time for half (p50), 95 in 100 (p95) and 99 in 100 (p99) of the requests, in "
    "milliseconds: a bar above a dashed target line misses the service-level objective."))
@escaped_figure
def latency(comparison: Comparison) -> dict | None:
    """p50/p95/p99 latency per candidate (phase-4 inputs) against the workload's end-to-end targets."""
    percentiles = (("p50", FigureMetric.P50_LATENCY_MS), ("p95", FigureMetric.P95_LATENCY_MS),
                   ("p99", FigureMetric.P99_LATENCY_MS))
    measured = [result for result in comparison.results
                if any(result.value(metric) is not None for _name, metric in percentiles)]
    if not measured:
        return None
    labels = [result.label for result in measured]
    data = [
        {"type": "bar", "name": name, "x": labels, "y": [_float(result.value(metric)) for result in measured],
         "marker": {"color": COLORS[name]}, "hovertemplate": "%{y} ms<extra>" + chart_text(name) + "</extra>"}
        for name, metric in percentiles
    ]
    shapes, annotations = [], []
    summary = comparison.summary
    for name, target in (("p95", summary.p95_e2e_ms), ("p99", summary.p99_e2e_ms)):
        if target is None:
            continue
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": target, "y1": target,
                       "line": {"color": COLORS["target"], "dash": "dash" if name == "p95" else "dot", "width": 2}})
        annotations.append({"xref": "paper", "x": 1, "y": target, "xanchor": "right", "yanchor": "bottom",
                            "showarrow": False, "text": _("%(percentile)s target") % {"percentile": name},
                            "font": {"color": COLORS["target"]}})
    return {"data": data, "layout": _layout(_("Latency percentiles against the SLO"), y_title=_("milliseconds"),
                                            barmode="group", shapes=shapes, annotations=annotations)}


def _headroom_caption(figure: dict) -> str:
    values = [value for trace in figure["data"] for value in trace["y"] if value is not None]
    if values and all(value < 0 for value in values):
        return _("Share of GPU memory left free once the workload is loaded: every bar is below zero, so no "
                 "candidate's GPU layout holds the workload as planned (a negative bar is memory missing).")
    return _("Share of GPU memory left free once the workload is loaded: above zero it fits with that margin, below "
             "zero (a negative bar) it does not fit. Model/API routes have no GPU of their own and are not shown.")


@readable_chart(_headroom_caption)
@escaped_figure
def memory_headroom(comparison: Comparison) -> dict | None:
    """Memory margin per self-hosted candidate: the estimator's prediction beside the measured margin, in %."""
    fleet = [result for result in comparison.results if result.is_fleet
             and (result.predicted_memory_margin is not None or result.value(FigureMetric.MEMORY_MARGIN) is not None)]
    if not fleet:
        return None
    labels = [result.label for result in fleet]

    def percent(value: Decimal | None) -> float | None:
        return None if value is None else float(value * 100)

    data = [
        {"type": "bar", "name": _("Predicted (memory estimator)"), "x": labels,
         "y": [percent(result.predicted_memory_margin) for result in fleet],
         "marker": {"color": COLORS["predicted"]}, "hovertemplate": "%{y:.1f} %<extra></extra>"},
        {"type": "bar", "name": _("Measured (phase 1)"), "x": labels,
         "y": [percent(result.value(FigureMetric.MEMORY_MARGIN)) for result in fleet],
         "marker": {"color": COLORS["measured"]}, "hovertemplate": "%{y:.1f} %<extra></extra>"},
    ]
    layout = _layout(_("Memory headroom, predicted and measured"), y_title=_("GPU memory left free (per cent)"),
                     barmode="group")
    # Zero is "just fits": always on the axis, drawn bold and named, so that bars below it read as "does not fit".
    layout["yaxis"].update({"rangemode": "tozero", "zeroline": True, "zerolinecolor": "#1d2330", "zerolinewidth": 2})
    layout["annotations"] = [{"xref": "paper", "x": 0, "y": 0, "xanchor": "left", "yanchor": "bottom",
                              "showarrow": False, "text": _("0 = just fits; below = does not fit"),
                              "font": {"size": 11, "color": "#1d2330"}, "bgcolor": "rgba(255,255,255,0.8)"}]
    return {"data": data, "layout": layout}


def pareto_front(points: Iterable[tuple[Decimal, Decimal, str]]) -> list[tuple[Decimal, Decimal, str]]:
    """The points no other point beats on both latency and cost (lower is better on both), by latency."""
    front: list[tuple[Decimal, Decimal, str]] = []
    best_cost = None
    for point in sorted(points, key=lambda item: (item[0], item[1])):
        if best_cost is None or point[1] < best_cost:
            front.append(point)
            best_cost = point[1]
    return front


@readable_chart(lambda figure: _(
    "Each point is a candidate: lower is cheaper per accepted output, further left is faster for 99 in 100 requests "
    "(p99); the line joins the candidates no other beats on both. A candidate without a p99 latency is a dotted "
    "line at its cost."))
@escaped_figure
def cost_vs_p99(comparison: Comparison) -> dict | None:
    """Every normalised candidate of every kind (GPU rental, purchase, model/API route): a point at its p99 latency
    and cost per accepted output, or, without a p99 latency (often a model/API route), a dotted line at its cost."""
    placed = [result for result in comparison.rows if result.value(FigureMetric.P99_LATENCY_MS) is not None]
    unplaced = [result for result in comparison.rows if result.value(FigureMetric.P99_LATENCY_MS) is None]
    if not placed:
        return None
    points = [(result.value(FigureMetric.P99_LATENCY_MS), result.row.effective_unit_cost, result.label)
              for result in placed]
    front = pareto_front(points)
    xs, ys = [_float(p[0]) for p in points], [_float(p[1]) for p in points]
    # Room around the points for their labels (drawn above each point): 15 % of the span on each side.
    span_x = (max(xs) - min(xs)) or max(xs) or 1.0
    x_range = [min(xs) - span_x * 0.15, max(xs) + span_x * 0.15]
    costs = ys + [_float(result.row.effective_unit_cost) for result in unplaced]
    span_y = (max(costs) - min(costs)) or max(costs) or 1.0
    data = [
        {"type": "scatter", "mode": "markers+text", "name": _("Candidates"), "x": xs, "y": ys,
         "text": [p[2] for p in points], "textposition": "top center", "cliponaxis": False,
         "customdata": [str(result.candidate.get_kind_display()) for result in placed],
         "marker": {"size": 10, "color": COLORS["measured"]},
         "hovertemplate": "%{text} (%{customdata}): %{x} ms, %{y:.6g}<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": _("Pareto front"), "x": [_float(p[0]) for p in front],
         "y": [_float(p[1]) for p in front], "line": {"color": COLORS["target"], "shape": "hv"},
         "hoverinfo": "skip"},
    ]
    for result in unplaced:
        cost = _float(result.row.effective_unit_cost)
        name = _("%(candidate)s (%(kind)s): no p99 latency, cost only") % {
            "candidate": result.label, "kind": result.candidate.get_kind_display()}
        data.append({"type": "scatter", "mode": "lines", "name": name, "x": x_range, "y": [cost, cost],
                     "line": {"color": COLORS["idle"], "dash": "dot", "width": 2},
                     "hovertemplate": "%{y:.6g}<extra>" + chart_text(result.label) + "</extra>"})
    unit = _("%(currency)s per accepted output") % {"currency": comparison.currency}
    layout = _layout(_("Cost per accepted output against p99 latency"), x_title=_("p99 latency (ms)"), y_title=unit)
    layout["xaxis"]["range"] = x_range
    layout["yaxis"]["range"] = [max(min(costs) - span_y * 0.15, 0), max(costs) + span_y * 0.2]
    layout["margin"] = {**layout["margin"], "t": 60, "r": 40}
    return {"data": data, "layout": layout}


FACTOR_LABELS = {
    "price": lambda: _("Price"),
    "utilisation": lambda: _("Utilisation (demand volume)"),
    "acceptance": lambda: _("Quality acceptance"),
    "failure_rate": lambda: _("Failure and retry rate"),
}


@readable_chart(lambda figure: _(
    "How far the cost per accepted output moves when one factor is 20 per cent lower or higher and the others "
    "stay as they are: the longest bar is the figure to check first."))
@escaped_figure
def tornado(comparison: Comparison) -> dict | None:
    """Each factor moved 20 % down and up, the others at base: how far the focus candidate's unit cost moves."""
    bars: Sequence[cost_model.SensitivityBar] = comparison.sensitivity
    if not bars or comparison.focus is None:
        return None
    factors = [FACTOR_LABELS[bar.factor]() for bar in reversed(bars)]
    base = float(bars[0].base)
    data = [
        {"type": "bar", "orientation": "h", "name": name, "y": factors, "base": base,
         "x": [float(getattr(bar, attribute)) - base for bar in reversed(bars)],
         "marker": {"color": color},
         "customdata": [float(getattr(bar, attribute)) for bar in reversed(bars)],
         "hovertemplate": "%{customdata:.6g}<extra>" + chart_text(name) + "</extra>"}
        for name, attribute, color in ((_("Factor −20 %"), "low", COLORS["predicted"]),
                                       (_("Factor +20 %"), "high", COLORS["failure_waste"]))
    ]
    title = _("Sensitivity of %(candidate)s's cost per accepted output") % {"candidate": comparison.focus.label}
    unit = _("%(currency)s per accepted output") % {"currency": comparison.currency}
    layout = _layout(title, x_title=unit, barmode="overlay")
    layout["shapes"] = [{"type": "line", "yref": "paper", "y0": 0, "y1": 1, "x0": base, "x1": base,
                         "line": {"color": "#1d2330", "width": 1}}]
    layout["xaxis"]["exponentformat"] = "none"
    return {"data": data, "layout": layout}


def _span(maximum: float, steps: int = 40) -> list[float]:
    return [maximum * index / steps for index in range(steps + 1)]


def _reserve_caption(figure: dict) -> str:
    if figure["layout"].get("shapes"):
        return _("Cost of each GPU-hour actually used, by the share of the committed hours in use: above the "
                 "break-even utilisation u* (the dotted line, where the lines cross), reserving costs less than on "
                 "demand; below it, on demand does.")
    return _("Cost of each GPU-hour actually used, by the share of the committed hours in use: reserving would pay "
             "only above full use (the break-even utilisation u* is above 100 per cent), so on demand costs less at "
             "any utilisation.")


@readable_chart(_reserve_caption)
@escaped_figure
def reserve_break_even(comparison: Comparison) -> dict | None:
    """Cost per used GPU-hour against utilisation: on-demand is flat, reserved is its rate ÷ utilisation."""
    figures = comparison.break_even
    if figures.reserve_utilisation is None:
        return None
    reserved, on_demand = float(figures.reserved_rate), float(figures.on_demand_rate)
    utilisation = [value for value in _span(1.0) if value > 0]
    data = [
        {"type": "scatter", "mode": "lines", "name": figures.on_demand_label, "x": utilisation,
         "y": [on_demand for _value in utilisation], "line": {"color": COLORS["productive"]}},
        {"type": "scatter", "mode": "lines", "name": figures.reserved_label, "x": utilisation,
         "y": [reserved / value for value in utilisation], "line": {"color": COLORS["failure_waste"]}},
    ]
    share = f"{figures.reserve_utilisation * 100:.1f}"
    if figures.reserve_utilisation < 1:
        title = _("Reserve or stay on demand: break-even utilisation u* = %(share)s %%") % {"share": share}
    else:
        title = _("Reserve or stay on demand: break-even utilisation u* = %(share)s %%, above full use") % {
            "share": share}
    layout = _layout(title, x_title=_("share of the committed hours in use"),
                     y_title=_("%(currency)s per used GPU-hour") % {"currency": comparison.currency})
    layout["yaxis"]["range"] = [0, max(reserved, on_demand) * 3]
    layout["xaxis"]["tickformat"] = ".0%"
    if figures.reserve_utilisation < 1:
        u_star = float(figures.reserve_utilisation)
        layout["shapes"] = [{"type": "line", "yref": "paper", "y0": 0, "y1": 1, "x0": u_star, "x1": u_star,
                             "line": {"color": "#1d2330", "dash": "dot", "width": 1}}]
        layout["annotations"] = [{"x": u_star, "yref": "paper", "y": 1, "showarrow": False, "yanchor": "bottom",
                                  "text": _("u* (break-even)")}]
    return {"data": data, "layout": layout}


@readable_chart(lambda figure: _(
    "Cumulative cost of buying (the purchase price, then the running costs) and of renting, month by month: where "
    "the lines cross, buying has paid for itself."))
@escaped_figure
def buy_break_even(comparison: Comparison) -> dict | None:
    """Cumulative cost of buying (capex, then owned running costs) and of renting, month by month."""
    figures = comparison.break_even
    if figures.capex is None:
        return None
    horizon = float(figures.buy_months) * 2 if figures.buy_months else 60.0
    months = _span(max(horizon, 12.0))
    capex, opex, cloud = float(figures.capex), float(figures.owned_monthly_opex), float(figures.cloud_monthly)
    data = [
        {"type": "scatter", "mode": "lines", "name": figures.purchase_label, "x": months,
         "y": [capex + opex * month for month in months], "line": {"color": COLORS["failure_waste"]}},
        {"type": "scatter", "mode": "lines", "name": figures.rental_label, "x": months,
         "y": [cloud * month for month in months], "line": {"color": COLORS["productive"]}},
    ]
    if figures.buy_months is not None:
        title = _("Buy or rent: buying pays off after %(months)s months") % {"months": f"{figures.buy_months:.1f}"}
    else:
        title = _("Buy or rent: buying never pays off at these prices")
    return {"data": data, "layout": _layout(title, x_title=_("months"),
                                            y_title=_("cumulative cost (%(currency)s)") % {
                                                "currency": comparison.currency})}


@readable_chart(lambda figure: _(
    "Monthly cost of the model API, which grows with the tokens, and of self-hosting, which does not: left of the "
    "crossing the API is cheaper; the dotted line is this workload's volume."))
@escaped_figure
def api_break_even(comparison: Comparison) -> dict | None:
    """Monthly cost against monthly token volume: the API route grows with volume, self-hosting is flat."""
    figures = comparison.break_even
    if figures.api_tokens_per_month is None:
        return None
    threshold, workload = float(figures.api_tokens_per_month), float(figures.workload_tokens_per_month)
    volumes = _span(max(threshold, workload) * 1.5)
    price = float(figures.blended_price_per_million) / 1_000_000
    hosted = float(figures.self_host_monthly)
    data = [
        {"type": "scatter", "mode": "lines", "name": figures.api_label, "x": volumes,
         "y": [price * volume for volume in volumes], "line": {"color": COLORS["failure_waste"]}},
        {"type": "scatter", "mode": "lines", "name": figures.self_host_label, "x": volumes,
         "y": [hosted for _volume in volumes], "line": {"color": COLORS["productive"]}},
    ]
    layout = _layout(_("API or self-host: break-even at %(tokens)s tokens per month") % {
        "tokens": f"{threshold:,.0f}"}, x_title=_("tokens per month"),
        y_title=_("%(currency)s per month") % {"currency": comparison.currency})
    layout["shapes"] = [{"type": "line", "yref": "paper", "y0": 0, "y1": 1, "x0": workload, "x1": workload,
                         "line": {"color": "#1d2330", "dash": "dot", "width": 1}}]
    layout["annotations"] = [{"x": workload, "yref": "paper", "y": 1, "showarrow": False, "yanchor": "bottom",
                              "text": _("this workload")}]
    return {"data": data, "layout": layout}


@readable_chart(lambda figure: _("Which part of the cheapest mix serves each hour of a representative day: the "
                                 "reserved base, on-demand burst, then the API route for the overflow."))
@escaped_figure
def hybrid_hours(comparison: Comparison) -> dict | None:
    """Which part of the hybrid plan serves each hour of a representative window: stacked bars, one per block of the
    profile (as wide as its hours), of the accepted outputs per hour the base, the burst and the API serve."""
    option = comparison.hybrid
    if option is None:
        return None
    plan = option.plan
    starts, position = [], 0.0
    for block in plan.blocks:
        starts.append(position)
        position += float(block.hours)
    middles = [start + float(block.hours) / 2 for start, block in zip(starts, plan.blocks, strict=True)]
    widths = [float(block.hours) for block in plan.blocks]
    labels = {part.part: option.parts[part.part].label for part in plan.used_parts}
    series = (
        ("reserved", _("Reserved base"), lambda block: block.base_outputs, COLORS["productive"]),
        ("on_demand", _("On-demand burst"), lambda block: block.burst_outputs, COLORS["platform_labor"]),
        ("api", _("API overflow"), lambda block: block.api_outputs, COLORS["failure_waste"]),
    )
    data = []
    for part, name, amount, color in series:
        if part not in labels:
            continue
        values = [_float(amount(block)) for block in plan.blocks]
        legend = f"{name}: {labels[part]}"
        data.append({
            "type": "bar", "name": legend, "x": middles, "width": widths, "y": values, "marker": {"color": color},
            "hovertemplate": "%{y:,.6g}<extra>" + chart_text(legend) + "</extra>",
        })
    layout = _layout(_("Hybrid plan: which part serves which hour"), barmode="stack",
                     x_title=_("hours of a representative day, by load"),
                     y_title=_("accepted outputs per hour"))
    layout["xaxis"]["range"] = [0, position]
    return {"data": data, "layout": layout}


#: (chart id, builder); display.chart_titles() says what a chart needs when its builder returns None.
CHARTS = (
    ("cost-breakdown", cost_breakdown),
    ("latency", latency),
    ("memory-headroom", memory_headroom),
    ("cost-vs-p99", cost_vs_p99),
    ("sensitivity", tornado),
    ("break-even-reserve", reserve_break_even),
    ("break-even-buy", buy_break_even),
    ("break-even-api", api_break_even),
    ("hybrid-hours", hybrid_hours),
)


def all_charts(comparison: Comparison) -> dict[str, dict | None]:
    return {chart_id: builder(comparison) for chart_id, builder in CHARTS}
