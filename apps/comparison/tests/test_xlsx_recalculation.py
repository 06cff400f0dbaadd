"""The XLSX export recomputes the effective unit cost from its raw input cells with live formulas: change an input,
recalculate in LibreOffice, and the spreadsheet agrees with normalize() on the changed inputs to 6 significant
digits (a spreadsheet computes in binary floating point)."""

import dataclasses
from decimal import Decimal

import openpyxl
import pytest
from django.urls import reverse

from apps.comparison import cost_model
from apps.comparison.exports import TABLE_SHEET, WORKLOAD_SHEET
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import (
    add_estimated_line,
    add_sourced_line,
    gpu_candidate,
    make_quote,
    measured,
    workload,
)
from apps.comparison.tests.spreadsheet import columns, recalculate, row_of
from apps.quotes import services as quote_services
from apps.quotes.tests.factories import GpuFactory

pytestmark = pytest.mark.django_db
UNIT_COST = "effective unit cost"


def _agree(spreadsheet_value, exact: Decimal) -> None:
    """Agreement to 6 significant digits: the relative difference is below half a unit of the 6th digit."""
    assert spreadsheet_value is not None, "the spreadsheet left the formula uncomputed"
    assert abs(Decimal(repr(spreadsheet_value)) - exact) <= abs(exact) * Decimal("5e-7"), (spreadsheet_value, exact)


def _download(client, user, summary, tmp_path):
    client.force_login(user)
    response = client.get(reverse("comparison:comparison-xlsx", args=[summary.pk]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.openxmlformats")
    path = tmp_path / "comparison.xlsx"
    path.write_bytes(response.content)
    return path


def _unit_costs(workbook, candidates):
    sheet = workbook[TABLE_SHEET]
    column = columns(sheet)[UNIT_COST]
    return {candidate.pk: sheet[f"{column}{row_of(sheet, candidate.pk)}"].value for candidate in candidates}


def test_unchanged_workbook_recomputes_the_worked_example(client, platform_user, example, tmp_path):
    path = _download(client, platform_user, example.summary, tmp_path)
    raw = openpyxl.load_workbook(path)[TABLE_SHEET]
    header = columns(raw)
    row_a = row_of(raw, example.a.pk)
    assert str(raw[f"{header[UNIT_COST]}{row_a}"].value).startswith("=")  # a live formula, not a number
    assert str(raw[f"{header['nodes']}{row_a}"].value).startswith("=ROUNDUP(")
    assert raw[f"{header['price per price unit']}{row_a}"].value == 3  # the raw input, unrounded
    values = _unit_costs(recalculate(path, tmp_path), (example.a, example.b, example.c))
    for candidate, expected in ((example.a, "0.0004245"), (example.b, "0.0003515"), (example.c, "0.0008325")):
        _agree(values[candidate.pk], Decimal(expected))


def test_changed_inputs_recompute_like_normalize(client, platform_user, example, tmp_path):
    path = _download(client, platform_user, example.summary, tmp_path)
    workbook = openpyxl.load_workbook(path)
    table, demand_sheet = workbook[TABLE_SHEET], workbook[WORKLOAD_SHEET]
    header = columns(table)
    changes = {  # candidate → {column header: new value}
        example.a: {"price per price unit": Decimal("2.75")},
        example.b: {"capacity at SLO per GPU (capacity units/s)": Decimal(7), "failure rate": Decimal("0.003")},
        example.c: {"retry rate": Decimal("0.05"), "API output price per 1M tokens": Decimal("1.20")},
    }
    for candidate, cells in changes.items():
        for heading, value in cells.items():
            table[f"{header[heading]}{row_of(table, candidate.pk)}"] = value
    demand_sheet["B2"] = 25_000_000  # accepted outputs per period
    demand_sheet["B5"] = 15  # peak rate
    changed = tmp_path / "changed.xlsx"
    workbook.save(changed)
    values = _unit_costs(recalculate(changed, tmp_path), changes)

    comparison = comparison_for(platform_user, example.summary)
    demand = dataclasses.replace(comparison.demand, accepted_outputs=Decimal(25_000_000), peak_rate=Decimal(15))
    field = {"price per price unit": "unit_price",
             "capacity at SLO per GPU (capacity units/s)": "capacity_at_slo_per_gpu",
             "failure rate": "failure_rate", "retry rate": "retry_rate",
             "API output price per 1M tokens": "api_output_price_per_million"}
    by_id = {result.candidate.pk: result for result in comparison.rows}
    provenance = cost_model.Provenance.estimated("finance", "what-if in the spreadsheet")
    for candidate, cells in changes.items():
        given = by_id[candidate.pk].candidate_input
        updates = {field[heading]: value for heading, value in cells.items()}
        changed_input = dataclasses.replace(
            given, **updates, provenance={**given.provenance, **dict.fromkeys(updates, provenance)}
        )
        (row,) = cost_model.normalize(demand, [changed_input], currency="USD")
        _agree(values[candidate.pk], row.effective_unit_cost)
        assert row.effective_unit_cost != by_id[candidate.pk].row.effective_unit_cost


def _other_models(team, actor):
    """A scheduled batch workload with a spot rental, a node-hour rental billed per day with a minimum commitment
    and a purchase option: the commercial models the worked example does not use."""
    summary = workload(
        team, workload_type="batch_inference", operating_mode="scheduled_batch", hours_per_day=Decimal(10),
        days_per_month=Decimal(22), demand_per_month=Decimal(3_000_000), arrival_rate_peak=Decimal(4),
    )
    spot_quote = make_quote(
        team, actor, prices={"list_price": "1.90"}, title="H100 spot", gpu=GpuFactory(name="NVIDIA H100"),
        gpus_per_node=1, commercial_model="spot", price_unit="gpu_hour", currency="USD",
        spot_preemption_rate_per_hour=Decimal("0.02"), spot_preemption_source="provider's interruption report",
    )
    add_estimated_line(spot_quote, actor, kind="platform_labor", rate="90.00", quantity="12")
    spot = quote_services.candidate_create(
        actor=actor, team=team, quote=spot_quote, workload_summary=summary, label="Spot H100",
        spot_rework_hours=Decimal("0.5"), spot_rework_source="checkpoint every 30 minutes",
    )
    measured(spot, actor, "capacity_at_slo", "3", "job:901", capacity_unit="requests_per_second")
    measured(spot, actor, "failure_rate", "0.004", "job:902")

    node = gpu_candidate(
        team, actor, summary, label="Node-hour L40S", price="14.40", capacity="1.5", gpus_per_node=8,
        price_unit="node_hour", gpu_name="NVIDIA L40S", billing_granularity_seconds=86400,
        extra_prices={"minimum_commitment": "9000"},
    )
    purchase_quote = make_quote(
        team, actor, prices={"list_price": "280000", "energy_per_kwh": "0.14", "colocation_per_kw_month": "160",
                             "maintenance_per_node_year": "15000"},
        title="8× H200 bought", gpu=GpuFactory(name="NVIDIA H200"), gpus_per_node=8, commercial_model="purchase",
        price_unit="node_purchase", currency="USD", amortisation_months=36, amortisation_source="finance policy",
        power_kw_per_node=Decimal("10.2"), power_source="vendor spec sheet", pue=Decimal("1.35"),
        pue_source="colocation contract",
    )
    add_sourced_line(purchase_quote, actor, kind="storage", rate="300.00")
    add_estimated_line(purchase_quote, actor, kind="platform_labor", rate="90.00", quantity="40")
    bought = quote_services.candidate_create(
        actor=actor, team=team, quote=purchase_quote, workload_summary=summary, label="Bought H200 node"
    )
    measured(bought, actor, "capacity_at_slo", "4", "job:951", capacity_unit="requests_per_second")
    measured(bought, actor, "gpus_per_replica", "2", "job:952")
    return summary, spot, node, bought


def test_other_commercial_models_recompute_like_normalize(client, team, platform_user, tmp_path):
    summary, spot, node, bought = _other_models(team, platform_user)
    comparison = comparison_for(platform_user, summary)
    assert comparison.problems == []
    path = _download(client, platform_user, summary, tmp_path)
    exact = {result.candidate.pk: result.row.effective_unit_cost for result in comparison.rows}
    values = _unit_costs(recalculate(path, tmp_path), (spot, node, bought))
    for candidate in (spot, node, bought):
        _agree(values[candidate.pk], exact[candidate.pk])

    workbook = openpyxl.load_workbook(path)
    table = workbook[TABLE_SHEET]
    header = columns(table)
    changes = {
        spot: {"spot preemptions per GPU-hour": Decimal("0.05")},
        node: {"price per price unit": Decimal("20.00")},  # above the minimum commitment now
        bought: {"energy price per kWh": Decimal("0.30"), "capex per node": Decimal("250000")},
    }
    field = {"spot preemptions per GPU-hour": "spot_preemptions_per_hour", "price per price unit": "unit_price",
             "energy price per kWh": "energy_price_per_kwh", "capex per node": "capex_per_node"}
    for candidate, cells in changes.items():
        for heading, value in cells.items():
            table[f"{header[heading]}{row_of(table, candidate.pk)}"] = value
    changed = tmp_path / "changed.xlsx"
    workbook.save(changed)
    values = _unit_costs(recalculate(changed, tmp_path), changes)
    by_id = {result.candidate.pk: result for result in comparison.rows}
    for candidate, cells in changes.items():
        given = by_id[candidate.pk].candidate_input
        updates = {field[heading]: value for heading, value in cells.items()}
        (row,) = cost_model.normalize(comparison.demand, [dataclasses.replace(given, **updates)], currency="USD")
        _agree(values[candidate.pk], row.effective_unit_cost)
        assert row.effective_unit_cost != by_id[candidate.pk].row.effective_unit_cost
