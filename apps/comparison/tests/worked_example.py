"""The issue's worked example as inputs: real-time inference, 20M accepted responses per 730-hour month, peak 12 req/s.

Shared by the normalisation and mistakes tests.
"""

import dataclasses
from decimal import Decimal

from apps.comparison.cost_model import CandidateInput, CostKind, CostLine, Demand, Provenance

D = Decimal
QUOTE_A = Provenance.quoted("price-version-17")
QUOTE_B = Provenance.quoted("price-version-23")
QUOTE_API = Provenance.quoted("price-version-31")
MEASURED = Provenance.measured("job-101")
ESTIMATED = Provenance.estimated("platform lead", "on-call share of the serving team")


def realtime_demand(**changes):
    demand = Demand(
        accepted_outputs=D(20_000_000), period_hours=D(730), peak_rate=D(12), operating_hours=D(730),
        mode="realtime", quality_acceptance=D(1),
    )
    return dataclasses.replace(demand, **changes)


def self_hosted_lines():
    return (
        CostLine(CostKind.STORAGE, D("120.00"), Provenance.quoted("storage-quote-4"), label="storage and network"),
        CostLine(CostKind.PLATFORM_LABOR, D("90.00"), ESTIMATED, quantity=D(20), unit="hour"),
    )


def candidate_a(**changes):
    candidate = CandidateInput(
        id="A", label="Provider A H100", kind="gpu", commercial_model="on_demand", unit_price=D("3.00"),
        capacity_at_slo_per_gpu=D(5), retry_rate=D("0.01"), cost_lines=self_hosted_lines(),
        provenance={"unit_price": QUOTE_A, "capacity_at_slo_per_gpu": MEASURED,
                    "retry_rate": Provenance.measured("job-102")},
    )
    return dataclasses.replace(candidate, **changes)


def candidate_b(**changes):
    candidate = CandidateInput(
        id="B", label="Provider B H200", kind="gpu", commercial_model="reserved", unit_price=D("3.50"),
        committed_hours=D(730), capacity_at_slo_per_gpu=D(9), retry_rate=D("0.01"), cost_lines=self_hosted_lines(),
        provenance={"unit_price": QUOTE_B, "committed_hours": QUOTE_B,
                    "capacity_at_slo_per_gpu": Provenance.measured("job-201"),
                    "retry_rate": Provenance.measured("job-202")},
    )
    return dataclasses.replace(candidate, **changes)


def candidate_c(**changes):
    candidate = CandidateInput(
        id="C", label="Model/API route", kind="api", commercial_model="api",
        api_input_price_per_million=D("0.40"), api_output_price_per_million=D("1.60"),
        mean_input_tokens=D(800), mean_output_tokens=D(300), retry_rate=D("0.02"),
        cost_lines=(
            CostLine(CostKind.GATEWAY, D("150.00"), Provenance.quoted("gateway-quote-2")),
            CostLine(CostKind.PLATFORM_LABOR, D("90.00"), ESTIMATED, quantity=D(2), unit="hour"),
        ),
        provenance={"api_input_price_per_million": QUOTE_API, "api_output_price_per_million": QUOTE_API,
                    "mean_input_tokens": Provenance.measured("job-301"),
                    "mean_output_tokens": Provenance.measured("job-301"),
                    "retry_rate": Provenance.measured("job-302")},
    )
    return dataclasses.replace(candidate, **changes)
