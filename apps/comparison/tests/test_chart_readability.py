"""Charts a finance reader understands: every chart builder (the registry `chart_text.CHART_BUILDERS`) gives its
figure a one-line caption and automargin axes; the memory-headroom chart has a named zero line; the Pareto chart
places every candidate kind, the model/API route included; the reserve break-even says what u* is."""

from decimal import Decimal
from types import SimpleNamespace

import pytest

from apps.benchmarks import memory_fit, resilience_charts, throughput_charts
from apps.common.chart_text import CAPTION, CHART_BUILDERS
from apps.comparison import charts
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import measured, worked_example
from apps.comparison.tests.test_charts_and_exports import _full
from apps.workloads.charts import memory_chart

D = Decimal
MIB = 1024 * 1024

#: One small input per builder outside the comparison (whose builders are drawn from a real comparison below).
SAMPLES = {
    memory_chart: lambda: memory_chart(terms=[("Weights", 16 * 10**9)], gpus=[("H100 SXM", 80 * 10**9)],
                                       title="Memory", axis_title="GiB per GPU", capacity_label="Usable memory"),
    throughput_charts.latency_cdf: lambda: throughput_charts.latency_cdf(
        {"histograms": {"ttft": {"cdf": {"value_s": [0.1, 0.2], "q": [0.5, 1.0]}}}}),
    throughput_charts.throughput_latency: lambda: throughput_charts.throughput_latency(
        {"points": [{"requests_per_s": 2.0, "e2e_p50_s": 0.4, "offered": 2.0}]}),
    throughput_charts.goodput_offered: lambda: throughput_charts.goodput_offered(
        {"points": [{"offered": 2.0, "valid": True, "goodput_per_s": 1.9, "requests_per_s": 2.0}]}),
    resilience_charts.timeline: lambda: resilience_charts.timeline(
        {"name": "kill", "timeline": {"rows": [{"t": 0, "sent": 3, "retries": 0, "succeeded": 3, "errors": 0,
                                                 "p99_s": 0.2}], "markers": {"event_start": 0}}}),
    resilience_charts.cold_start: lambda: resilience_charts.cold_start({"runs": [{"time_to_healthy_s": 31.0}]}),
    resilience_charts.interconnect: lambda: resilience_charts.interconnect(
        {"rows": [{"size_bytes": 1024, "busbw_gbps": 10.0, "algbw_gbps": 5.0}], "world_size": 2, "label": "cuda",
         "backend": "nccl"}),
    memory_fit.memory_fit_figure: lambda: memory_fit.memory_fit_figure(SimpleNamespace(
        components=(memory_fit.ComponentRow("weights", 80 * MIB, 82 * MIB, 2.5, None),), capacity_bytes=1000 * MIB)),
    memory_fit.residuals_figure: lambda: memory_fit.residuals_figure(memory_fit.group_residuals(
        [memory_fit.Residual("h100", "bf16", "weights", 2.5, 2500)])),
}


def _readable(figure: dict, name: str) -> None:
    caption = figure.get(CAPTION)
    assert isinstance(caption, str) and caption.endswith(".") and len(caption) > 40, name
    layout = figure["layout"]
    for axis in ("xaxis", "yaxis"):
        assert layout[axis]["automargin"] is True, (name, axis)
    if "yaxis2" in layout:
        assert layout["yaxis2"]["automargin"] is True, name


def test_every_chart_builder_outside_the_comparison_has_a_caption_and_automargin():
    comparison_builders = {builder for _chart_id, builder in charts.CHARTS} | {charts.training_cost_breakdown}
    others = [builder for builder in CHART_BUILDERS if builder not in comparison_builders]
    assert set(others) == set(SAMPLES), "a new chart builder needs a sample here"
    for builder in others:
        _readable(SAMPLES[builder](), builder.__qualname__)


@pytest.mark.django_db
def test_every_comparison_chart_has_a_caption_and_automargin(team, platform_user):
    assert {builder for _chart_id, builder in charts.CHARTS} <= set(CHART_BUILDERS)
    example, _bought = _full(team, platform_user)
    figures = charts.all_charts(comparison_for(platform_user, example.summary))
    for chart_id, figure in figures.items():
        _readable(figure, chart_id)


def test_the_memory_headroom_chart_names_its_zero_line_and_explains_negative_bars():
    """All bars negative (−20 % predicted, −5 % measured): zero stays on the axis, bold, named; the caption says no
    candidate's layout holds the workload."""
    result = SimpleNamespace(is_fleet=True, predicted_memory_margin=D("-0.20"), label="A H100",
                             value=lambda metric: D("-0.05") if metric == "memory_margin" else None)
    figure = charts.memory_headroom(SimpleNamespace(results=[result]))
    assert [trace["y"] for trace in figure["data"]] == [[-20.0], [-5.0]]
    axis = figure["layout"]["yaxis"]
    assert axis["zeroline"] is True and axis["zerolinewidth"] == 2 and axis["rangemode"] == "tozero"
    assert "0 = just fits; below = does not fit" in [note["text"] for note in figure["layout"]["annotations"]]
    assert "every bar is below zero" in figure[CAPTION] and "does not fit" not in figure[CAPTION].split(":")[0]
    mixed = SimpleNamespace(is_fleet=True, predicted_memory_margin=D("0.30"), label="B H200", value=lambda m: None)
    assert "below zero (a negative bar) it does not fit" in charts.memory_headroom(
        SimpleNamespace(results=[result, mixed]))[CAPTION]


@pytest.mark.django_db
def test_the_api_route_appears_on_the_pareto_chart_where_it_belongs(team, platform_user):
    """A and B have a p99 latency, the API route C has none: A and B are points, C a dotted line at its cost per
    accepted output, named with its kind; with a p99 latency C becomes a point like the others."""
    example = worked_example(team, platform_user)
    measured(example.a, platform_user, "p99_latency_ms", "2600", "job:9001")
    measured(example.b, platform_user, "p99_latency_ms", "1900", "job:9002")
    comparison = comparison_for(platform_user, example.summary)
    c_cost = float(next(result for result in comparison.rows if result.candidate == example.c).row.effective_unit_cost)
    figure = charts.cost_vs_p99(comparison)
    points, _front, *lines = figure["data"]
    assert sorted(points["text"]) == ["A on-demand H100", "B reserved H200"]
    assert points["cliponaxis"] is False  # labels drawn past the plot area, not cut at its edge
    assert [line["y"] for line in lines] == [[c_cost, c_cost]]
    assert lines[0]["name"] == f"{example.c.label} (Model/API route): no p99 latency, cost only"
    assert figure["layout"]["yaxis"]["range"][0] <= c_cost <= figure["layout"]["yaxis"]["range"][1]
    x_low, x_high = figure["layout"]["xaxis"]["range"]
    assert x_low < 1900 and x_high > 2600  # room for the labels of the outermost points

    measured(example.c, platform_user, "p99_latency_ms", "3900", "job:9003")
    figure = charts.cost_vs_p99(comparison_for(platform_user, example.summary))
    points = figure["data"][0]
    assert example.c.label in points["text"] and len(figure["data"]) == 2
    assert points["customdata"][points["text"].index(example.c.label)] == "Model/API route"


@pytest.mark.django_db
def test_the_reserve_break_even_says_what_u_star_is(client_for, team, platform_user):
    example = worked_example(team, platform_user)
    comparison = comparison_for(platform_user, example.summary)
    u_star = comparison.break_even.reserve_utilisation
    assert u_star is not None
    figure = charts.reserve_break_even(comparison)
    share = f"{u_star * 100:.1f}"
    assert f"break-even utilisation u* = {share} %" in figure["layout"]["title"]["text"]
    assert "u* = 1." not in figure["layout"]["title"]["text"] and "u* = 0." not in figure["layout"]["title"]["text"]
    assert "break-even utilisation u*" in figure[CAPTION]
    page = client_for(platform_user).get(f"/comparison/workloads/{example.summary.pk}/").content.decode()
    assert 'class="chart-caption" id="caption-break-even-reserve"' in page
    assert "aria-describedby=\"caption-break-even-reserve\"" in page


@pytest.mark.django_db
def test_the_hybrid_notes_name_the_break_even_utilisation_in_words(client_for, team, platform_user):
    """The hybrid row's note once read "(u* = 1.2800)": now a share of the operating hours, in words."""
    from apps.comparison.display import hybrid_row

    example = worked_example(team, platform_user)
    comparison = comparison_for(platform_user, example.summary)
    notes = hybrid_row(comparison).notes + [note.text for note in comparison.hybrid.notes]
    reserve = [note for note in notes if note.startswith("reserving beats on demand")]
    assert len(reserve) == 2 and all("break-even utilisation" in note for note in reserve)
    assert not any("u*" in note for note in notes)
    assert reserve[0].endswith("% of the operating hours)") and reserve[1].endswith("× the operating hours)")
