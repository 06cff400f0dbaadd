"""The memory chart: the per-GPU need, stacked term by term, beside the memory each catalog GPU offers.

Builds a plain Plotly figure (data + layout dicts) that the page draws with the locally served plotly.min.js; the
caller passes the labels already translated.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.translation import gettext as _

from apps.common.chart_text import chart_text, escaped_figure, readable_chart
from apps.workloads.memory.precisions import BYTES_PER_GIB


def _gib(size_bytes: int) -> float:
    return round(size_bytes / BYTES_PER_GIB, 3)


@readable_chart(lambda figure: _(
    "Each bar is the memory one GPU needs for this workload, stacked by what uses it; where the bar rises above the "
    "GPU's usable-memory mark, the workload does not fit on that GPU as planned."))
@escaped_figure
def memory_chart(
    *,
    terms: Sequence[tuple[str, int]],
    gpus: Sequence[tuple[str, int]],
    title: str,
    axis_title: str,
    capacity_label: str,
) -> dict:
    """One stacked bar per GPU (the same need on each) and a marker at each GPU's usable memory, in GiB."""
    names = [name for name, _capacity in gpus]
    data: list[dict] = [
        {
            "type": "bar",
            "name": label,
            "x": names,
            "y": [_gib(size) for _ in names],
            "hovertemplate": "%{y:.2f} GiB<extra>" + chart_text(label) + "</extra>",
        }
        for label, size in terms
        if size > 0
    ]
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": capacity_label,
            "x": names,
            "y": [_gib(capacity) for _name, capacity in gpus],
            "marker": {"symbol": "line-ew", "size": 36, "line": {"width": 4, "color": "#1d2330"}},
            "hovertemplate": "%{y:.2f} GiB<extra>" + chart_text(capacity_label) + "</extra>",
        }
    )
    layout = {
        "title": {"text": title},
        "barmode": "stack",
        "yaxis": {"title": {"text": axis_title}, "rangemode": "tozero", "automargin": True},
        "xaxis": {"automargin": True, "tickangle": -35},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "traceorder": "normal"},
        "margin": {"t": 96, "r": 16, "l": 64, "b": 16},
    }
    return {"data": data, "layout": layout}
