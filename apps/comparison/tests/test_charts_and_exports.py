"""The charts (plain Plotly figures) and the CSV/JSON exports of a comparison with every kind of candidate."""

import csv
import datetime
import io
import json
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.catalog.models import SpecKey
from apps.catalog.services import gpu_spec_set
from apps.comparison import charts
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import make_quote, measured, worked_example
from apps.quotes import services as quote_services
from apps.quotes.tests.factories import GpuFactory

pytestmark = pytest.mark.django_db
D = Decimal


def _full(team, actor):
    """The worked example plus a purchase option, latency percentiles, measured memory margins and catalog memory."""
    for name, gigabytes in (("NVIDIA H100", "80"), ("NVIDIA H200", "141")):
        gpu_spec_set(actor="test", gpu=GpuFactory(name=name), key=SpecKey.MEMORY_GB, value=gigabytes,
                     source="https://nvidia.example.test/datasheet.pdf", as_of=datetime.date(2025, 1, 15))
    example = worked_example(team, actor)
    bought_quote = make_quote(
        team, actor, prices={"list_price": "250000", "energy_per_kwh": "0.12"}, title="8× H200 bought",
        gpu=GpuFactory(name="NVIDIA H200"), gpus_per_node=8, commercial_model="purchase", price_unit="node_purchase",
        currency="USD", amortisation_months=36, amortisation_source="finance policy",
        power_kw_per_node=D("10.2"), power_source="spec sheet", pue=D("1.3"), pue_source="colocation contract",
    )
    bought = quote_services.candidate_create(actor=actor, team=team, quote=bought_quote,
                                             workload_summary=example.summary, label="D bought H200")
    measured(bought, actor, "capacity_at_slo", "9", "job:4001", capacity_unit="requests_per_second")
    for candidate, p50, p95, p99, margin in ((example.a, 600, 1500, 2600, "0.31"), (example.b, 450, 1100, 1900, "0.52"),
                                             (example.c, 700, 1800, 3900, None), (bought, 460, 1150, 2000, "0.50")):
        measured(candidate, actor, "p50_latency_ms", str(p50), f"job:{candidate.pk}50")
        measured(candidate, actor, "p95_latency_ms", str(p95), f"job:{candidate.pk}95")
        measured(candidate, actor, "p99_latency_ms", str(p99), f"job:{candidate.pk}99")
        if margin:
            measured(candidate, actor, "memory_margin", margin, f"job:{candidate.pk}10")
    return example, bought


def test_pareto_front_keeps_the_points_no_other_beats_on_both_axes():
    points = [(D(2600), D("0.00043"), "A"), (D(1900), D("0.00035"), "B"), (D(3900), D("0.00083"), "C"),
              (D(2000), D("0.00034"), "D"), (D(1000), D("0.0009"), "E")]
    assert [label for _x, _y, label in charts.pareto_front(points)] == ["E", "B", "D"]


def test_every_chart_is_drawn_for_a_complete_comparison(team, platform_user):
    example, bought = _full(team, platform_user)
    comparison = comparison_for(platform_user, example.summary)
    assert comparison.problems == []
    figures = charts.all_charts(comparison)
    assert [name for name, figure in figures.items() if figure is None] == []
    json.dumps(figures)  # plain data, ready for json_script

    stacked = figures["cost-breakdown"]
    assert stacked["layout"]["barmode"] == "stack"
    total_a = sum(trace["y"][0] for trace in stacked["data"])
    assert total_a == pytest.approx(0.0004245, rel=1e-9)  # the stack adds up to the unit cost

    latency = figures["latency"]
    assert [shape["y0"] for shape in latency["layout"]["shapes"]] == [2000, 4000]  # p95 and p99 targets
    memory = figures["memory-headroom"]
    predicted, measured_margin = memory["data"]
    assert predicted["y"][0] is not None and measured_margin["y"][0] == pytest.approx(31.0)

    front = figures["cost-vs-p99"]["data"][1]
    assert front["x"] == [1900.0]  # B is faster and cheaper than the bought node (2,000 ms, 0.000405301)

    tornado = figures["sensitivity"]
    assert {trace["base"] for trace in tornado["data"]} == {float(comparison.focus.row.effective_unit_cost)}
    assert comparison.focus.candidate == example.b  # the cheapest per accepted output, without a choice

    break_even = comparison.break_even
    assert str(break_even.reserve_utilisation).startswith("1.1666666666")
    # capex 250,000 ÷ (B's 7,030.00 a month − the bought node's 1,161.576 of energy a month)
    assert str(break_even.buy_months).startswith("42.6008754")
    assert break_even.rental_label == "B reserved H200" and break_even.purchase_label == bought.label
    assert break_even.api_tokens_per_month > 0


def test_predicted_memory_margin_comes_from_the_estimator_and_the_catalog(team, platform_user):
    example, _bought = _full(team, platform_user)
    comparison = comparison_for(platform_user, example.summary)
    by_id = {result.candidate.pk: result for result in comparison.results}
    h100, h200 = by_id[example.a.pk].predicted_memory_margin, by_id[example.b.pk].predicted_memory_margin
    assert h100 is not None and h200 is not None and h200 > h100  # 141 GB leaves more room than 80 GB
    assert by_id[example.c.pk].predicted_memory_margin is None  # an API route has no GPU of ours


def test_csv_export_has_one_raw_line_per_candidate(client, team, platform_user, example):
    client.force_login(platform_user)
    response = client.get(reverse("comparison:comparison-csv", args=[example.summary.pk]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert lines[-1]["candidate_id"] == "hybrid"  # the hybrid plan's line comes last (test_hybrid_comparison.py)
    rows = {int(row["candidate_id"]): row for row in lines[:-1]}
    assert rows[example.a.pk]["effective_unit_cost"] == "0.0004245"
    assert rows[example.b.pk]["effective_unit_cost"] == "0.0003515"
    assert rows[example.c.pk]["effective_unit_cost"] == "0.0008325"
    assert rows[example.a.pk]["idle_capacity"].startswith("3203.333333")  # unrounded
    assert "price-version:" in rows[example.a.pk]["provenance"]
    assert rows[example.a.pk]["error"] == ""


def test_json_lists_inputs_and_mistakes(client, team, platform_user, example):
    client.force_login(platform_user)
    data = client.get(reverse("comparison-api:comparison", args=[example.summary.pk])).json()
    a = next(item for item in data["candidates"] if item["candidate_id"] == example.a.pk)
    capacity = next(item for item in a["inputs"] if item["metric"] == "capacity_at_slo")
    assert capacity == {"metric": "capacity_at_slo", "value": "5", "capacity_unit": "requests_per_second",
                        "source": "measured", "reference": f"job:{example.a.pk}01", "estimated_by": "",
                        "estimate_reason": ""}
    assert [rule["number"] for rule in data["mistakes"]] == [1, 2, 3, 4, 5, 6, 7]
    assert data["demand"]["accepted_outputs"] == "20000000.00"
    assert data["sensitivity"]["candidate_id"] == example.b.pk
    assert data["break_even"]["reserve_vs_on_demand_utilisation"].startswith("1.16666")


def test_api_refuses_a_malformed_query(client, platform_user, example):
    client.force_login(platform_user)
    response = client.get(reverse("comparison-api:comparison", args=[example.summary.pk]), {"chosen": "abc"})
    assert response.status_code == 400 and "chosen" in response.json()


def _strings(value, key=""):
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


def test_a_candidate_label_with_markup_is_shown_as_text_in_every_chart(team, platform_user):
    """Plotly renders `<a href>` in labels, legends and hover text: a label holding a link became a clickable link.
    Every string of every figure now has & < > as entities (Plotly shows the characters), templates excepted."""
    from apps.quotes.models import Candidate

    example, _bought = _full(team, platform_user)
    label = 'A <a href="https://evil.example/">deal</a> & more'
    Candidate.objects.filter(pk=example.a.pk).update(label=label)
    figures = charts.all_charts(comparison_for(platform_user, example.summary))
    escaped = 'A &lt;a href="https://evil.example/"&gt;deal&lt;/a&gt; &amp; more'
    found = [value for figure in figures.values() if figure for _key, value in _strings(figure)]
    assert escaped in found  # the label is there, as text (cost breakdown x axis, scatter text, …)
    assert not [value for figure in figures.values() if figure
                for key, value in _strings(figure) if "<a" in value and not key.endswith("template")]


def test_chart_text_escapes_the_three_markup_characters_only():
    from apps.common.chart_text import chart_text, escape_figure_text

    assert chart_text('<b>"R&D"</b>') == '&lt;b&gt;"R&amp;D"&lt;/b&gt;'
    figure = {"data": [{"name": "<i>x</i>", "x": ["a<b", 1.5], "hovertemplate": "%{y}<extra>n</extra>"}],
              "layout": {"title": {"text": "T & U"}}}
    assert escape_figure_text(figure) == {
        "data": [{"name": "&lt;i&gt;x&lt;/i&gt;", "x": ["a&lt;b", 1.5], "hovertemplate": "%{y}<extra>n</extra>"}],
        "layout": {"title": {"text": "T &amp; U"}},
    }
