"""The quote side of phase 4: a candidate's inputs feed apps/comparison/cost_model.py as they are.

The worked example of the comparison (candidate A, on-demand H100 at 3.00 USD per GPU-hour) is rebuilt from a
quote, its cost lines and an estimated retry rate; with the measured capacity added, normalize() gives 0.0004245
(the retries inside the bill, counted once).
"""

import datetime
from decimal import Decimal

from apps.comparison import cost_model
from apps.quotes import services
from apps.quotes.comparison_inputs import normalization_inputs
from apps.quotes.kinds import CandidateKind
from apps.quotes.models import CommercialModel, CostKind, PriceUnit
from apps.quotes.tests.conftest import answer_base_tier
from apps.quotes.tests.factories import GpuFactory

READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def provenance(data):
    return cost_model.Provenance(**data)


def candidate_input(inputs, **measured):
    values = {name: value for name, value in inputs.values.items() if value is not None}
    lines = [
        cost_model.CostLine(
            kind=line["kind"], unit_price=line["unit_price"], quantity=line["quantity"], unit=line["unit"],
            label=line["label"], provenance=provenance(line["provenance"]),
        )
        for line in inputs.cost_lines
    ]
    figures = {name: provenance(data) for name, data in inputs.provenance.items()}
    figures.update({name: cost_model.Provenance.measured("job-1") for name in measured})
    return cost_model.CandidateInput(**values, **measured, cost_lines=lines, provenance=figures)


def test_the_worked_example_a_from_a_quote(team, vendor, ready_workload, platform_user):
    h100 = GpuFactory(name="NVIDIA H100", variant="SXM")
    quote = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="H100 on-demand", gpu=h100, gpus_per_node=1,
        commercial_model=CommercialModel.ON_DEMAND, price_unit=PriceUnit.GPU_HOUR, currency="USD",
    )
    services.price_record(
        actor=platform_user, quote=quote, component="list_price", amount="3.00", source_kind="price_page",
        source_reference="https://acme.test/pricing", observed_at=READ_AT,
    )
    answer_base_tier(quote, platform_user)
    candidate = services.candidate_create(
        actor=platform_user, team=team, quote=quote, workload_summary=ready_workload, label="A",
        expected_retry_rate="0.01", retry_rate_source="gateway logs, October",
    )
    services.cost_line_add(
        actor=platform_user, quote=quote, kind=CostKind.STORAGE, quantity="1", unit="month", rate="120.00",
        source_reference="https://acme.test/pricing#storage", observed_at=READ_AT,
    )
    services.cost_line_add(
        actor=platform_user, quote=quote, candidate=candidate, kind=CostKind.PLATFORM_LABOR, quantity="20",
        unit="hours", rate="90.00", estimate_reason="on-call and upgrades",
    )
    inputs = normalization_inputs(candidate)
    assert inputs.problems == []
    assert inputs.values["unit_price"] == Decimal("3.00") and inputs.values["commercial_model"] == "on_demand"
    assert inputs.provenance["unit_price"]["reference"].startswith("price-version:")

    demand = cost_model.Demand(
        accepted_outputs=Decimal("20000000"), period_hours=Decimal("730"), peak_rate=Decimal("12"),
        operating_hours=Decimal("730"), mode="realtime",
    )
    built = candidate_input(inputs, capacity_at_slo_per_gpu=Decimal("5"))
    row = cost_model.normalize(demand, [built], currency="USD")[0]
    assert row.effective_unit_cost == Decimal("0.0004245")
    assert row.total_cost == Decimal("8490.00")


def test_an_api_route_hands_over_its_token_prices(team, vendor, ready_workload, platform_user):
    route = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Route", served_model="llama",
        commercial_model=CommercialModel.MODEL_API, price_unit=PriceUnit.MILLION_TOKENS, currency="USD",
    )
    for component, amount in (("input_tokens", "0.40"), ("output_tokens", "1.60")):
        services.price_record(
            actor=platform_user, quote=route, component=component, amount=amount, source_kind="price_page",
            source_reference="https://route.test/pricing", observed_at=READ_AT,
        )
    answer_base_tier(route, platform_user)
    candidate = services.candidate_create(actor=platform_user, team=team, quote=route, workload_summary=ready_workload)
    inputs = normalization_inputs(candidate)
    assert inputs.values["kind"] == "api" and inputs.values["commercial_model"] == "api"
    assert (inputs.values["api_input_price_per_million"], inputs.values["api_output_price_per_million"]) == (
        Decimal("0.40"), Decimal("1.60"),
    )
    built = candidate_input(inputs, mean_input_tokens=Decimal("800"), mean_output_tokens=Decimal("300"))
    assert built.kind is CandidateKind.API
