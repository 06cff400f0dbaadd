"""Comparisons built the way users build them: a ready workload version, vendors, quotes with sourced prices and cost
lines, checklists that meet the policy, candidates and their phase-4 inputs — all through the apps' services.

`worked_example(team, actor)` is the issue's worked example (A on-demand H100 at 3.00, B reserved H200 at 3.50,
C an API route); `gpu_candidate(...)` makes one more self-hosted candidate for the other tests and the benchmark.
"""

from __future__ import annotations

import datetime
import itertools
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone

from apps.quotes import services as quote_services
from apps.quotes.models import ChecklistQuestion, Quote
from apps.quotes.tests.factories import GpuFactory
from apps.workloads.tests.factories import ready_summary

_numbers = itertools.count(1)

#: The worked example's workload: 20,000,000 accepted responses per always-on month, peak 12 req/s, acceptance 1.0.
WORKED_EXAMPLE_WORKLOAD = {
    "demand_per_month": Decimal(20_000_000),
    "arrival_rate_peak": Decimal(12),
    "operating_mode": "always_on",
    "quality_acceptance_rate": Decimal(1),
    "quality_acceptance_source": "acceptance suite of 1,000 transcripts",
    "unit_of_success": "accepted_response",
    "mean_input_tokens": 800,
    "mean_output_tokens": 300,
    "p95_e2e_ms": 2000,
    "p99_e2e_ms": 4000,
    "model_change_cadence": "yearly",
}


def observed_at() -> datetime.datetime:
    return timezone.now() - datetime.timedelta(hours=2)


def answer_every_question(quote: Quote, actor) -> None:
    """Answer the whole procurement checklist with evidence, so any commitment tier is met."""
    for question in ChecklistQuestion.objects.filter(active=True):
        quote_services.checklist_answer_set(
            actor=actor, quote=quote, question=question, status="answered", value="Confirmed in writing",
            evidence="https://vendor.example.test/terms",
        )


def workload(team, **changes):
    return ready_summary(team, **{**WORKED_EXAMPLE_WORKLOAD, **changes})


def make_quote(team, actor, *, vendor_name: str | None = None, prices: dict[str, str], **terms) -> Quote:
    vendor = quote_services.vendor_create(
        actor=actor, team=team, name=vendor_name or f"Vendor {next(_numbers)}", website="https://vendor.example.test"
    )
    quote = quote_services.quote_create(actor=actor, team=team, vendor=vendor, **terms)
    for component, amount in prices.items():
        quote_services.price_record(
            actor=actor, quote=quote, component=component, amount=amount, source_kind="price_page",
            source_reference=f"https://vendor.example.test/pricing#{component}", observed_at=observed_at(),
        )
    answer_every_question(quote, actor)
    return quote


def add_sourced_line(quote: Quote, actor, *, kind: str, rate: str, quantity: str = "1", unit: str = "month"):
    return quote_services.cost_line_add(
        actor=actor, quote=quote, kind=kind, quantity=quantity, unit=unit, rate=rate,
        source_reference=f"https://vendor.example.test/pricing#{kind}", observed_at=observed_at(),
    )


def add_estimated_line(quote: Quote, actor, *, kind: str, rate: str, quantity: str, unit: str = "hour"):
    return quote_services.cost_line_add(
        actor=actor, quote=quote, kind=kind, quantity=quantity, unit=unit, rate=rate,
        estimate_reason="on-call share of the serving team",
    )


def measured(candidate, actor, metric: str, value: str, job: str, **extra):
    """A measured figure as a benchmark writes it: linked to the canonical result of a job on the candidate's node
    (a person cannot type one; `job` stays the reference text)."""
    from apps.benchmarks.tests.helpers import measured_figure

    return measured_figure(candidate, metric, value, job, actor=actor, **extra)


def gpu_candidate(
    team, actor, summary, *, label: str, price: str, capacity: str, retry_rate: str = "0.01",
    commercial_model: str = "on_demand", gpu_name: str = "NVIDIA H100", storage: str = "120.00",
    labor_hours: str = "20", committed_hours: str | None = None, term_months: int | None = None,
    gpus_per_node: int = 1, currency: str = "USD", price_unit: str = "gpu_hour", extra_prices: dict | None = None,
    **terms,
):
    """A self-hosted GPU rental candidate with the worked example's storage and labor lines and measured inputs."""
    quote = make_quote(
        team, actor, vendor_name=f"{label} vendor {next(_numbers)}",
        prices={"list_price": price, **(extra_prices or {})},
        title=f"{label} quote", gpu=GpuFactory(name=gpu_name), gpus_per_node=gpus_per_node,
        commercial_model=commercial_model, price_unit=price_unit, currency=currency,
        committed_hours_per_month=Decimal(committed_hours) if committed_hours is not None else None,
        term_months=term_months, **terms,
    )
    if storage:
        add_sourced_line(quote, actor, kind="storage", rate=storage)
    if labor_hours:
        add_estimated_line(quote, actor, kind="platform_labor", rate="90.00", quantity=labor_hours)
    candidate = quote_services.candidate_create(
        actor=actor, team=team, quote=quote, workload_summary=summary, label=label
    )
    number = candidate.pk
    measured(candidate, actor, "capacity_at_slo", capacity, f"job:{number}01", capacity_unit="requests_per_second")
    measured(candidate, actor, "retry_rate", retry_rate, f"job:{number}02")
    return candidate


def api_candidate(team, actor, summary, *, label: str = "C API route", retry_rate: str = "0.02"):
    quote = make_quote(
        team, actor, vendor_name=f"Model API {next(_numbers)}",
        prices={"input_tokens": "0.40", "output_tokens": "1.60"},
        title="Hosted model API", served_model="llama-3-8b-instruct", commercial_model="model_api",
        price_unit="million_tokens", currency="USD", gpus_per_node=1,
    )
    add_sourced_line(quote, actor, kind="gateway_operations", rate="150.00")
    add_estimated_line(quote, actor, kind="platform_labor", rate="90.00", quantity="2")
    candidate = quote_services.candidate_create(
        actor=actor, team=team, quote=quote, workload_summary=summary, label=label
    )
    measured(candidate, actor, "retry_rate", retry_rate, f"job:{candidate.pk}02")
    return candidate


@dataclass
class WorkedExample:
    summary: object
    a: object
    b: object
    c: object


def worked_example(team, actor, **workload_changes) -> WorkedExample:
    summary = workload(team, **workload_changes)
    a = gpu_candidate(team, actor, summary, label="A on-demand H100", price="3.00", capacity="5")
    b = gpu_candidate(
        team, actor, summary, label="B reserved H200", price="3.50", capacity="9", commercial_model="reserved",
        gpu_name="NVIDIA H200", committed_hours="730", term_months=12,
    )
    c = api_candidate(team, actor, summary)
    return WorkedExample(summary, a, b, c)


def many_candidates(team, summary, count: int, *, actor) -> list:
    """`count` priced candidates with cost lines and phase-4 inputs, made with factories and plain creates (fast
    enough for 50; the services are exercised by the worked example). Every fifth one is an API route."""
    from apps.benchmarks.models import FigureMeasurement
    from apps.benchmarks.tests.helpers import measuring_result
    from apps.evidence.models import CandidateFigure
    from apps.quotes.models import Candidate, CostLine
    from apps.quotes.tests.factories import PriceVersionFactory, QuoteFactory, VendorFactory

    gpu = GpuFactory(name="NVIDIA H100")
    candidates = []
    shared_result = None
    for index in range(count):
        vendor = VendorFactory(team=team)
        api = index % 5 == 4
        if api:
            quote = QuoteFactory(vendor=vendor, gpu=None, served_model="llama", gpus_per_node=1,
                                 commercial_model="model_api", price_unit="million_tokens")
            PriceVersionFactory(quote=quote, component="input_tokens", amount="0.40", number=1)
            PriceVersionFactory(quote=quote, component="output_tokens", amount=f"1.{index:02d}", number=1)
        else:
            quote = QuoteFactory(vendor=vendor, gpu=gpu, gpus_per_node=1)
            PriceVersionFactory(quote=quote, amount=f"{2 + index / 100:.2f}", number=1)
        CostLine.objects.create(quote=quote, kind="storage", quantity=1, unit="month", rate=Decimal("120.00"),
                                currency="USD", source_reference="https://vendor.example.test/storage",
                                observed_at=observed_at())
        CostLine.objects.create(quote=quote, kind="platform_labor", quantity=Decimal(20), unit="hour",
                                rate=Decimal("90.00"), currency="USD", estimated_by=actor,
                                estimate_reason="on-call share")
        candidate = Candidate.objects.create(team=team, quote=quote, workload_summary=summary,
                                             kind="api" if api else "gpu", label=f"Candidate {index:02d}")
        figures = [("retry_rate", Decimal("0.01"), ""), ("p95_latency_ms", Decimal(900 + index), ""),
                   ("p99_latency_ms", Decimal(1500 + 10 * index), "")]
        if not api:
            figures += [("capacity_at_slo", Decimal(4 + index % 6), "requests_per_second"),
                        ("memory_margin", Decimal("0.25"), "")]
        created = CandidateFigure.objects.bulk_create([
            CandidateFigure(candidate=candidate, metric=metric, value=value, capacity_unit=unit, source="measured",
                        reference=f"job:{candidate.pk}{number}", entered_by=actor)
            for number, (metric, value, unit) in enumerate(figures)
        ])
        # Measured: linked to a benchmark result (one shared result keeps 50 candidates fast to build).
        if shared_result is None:
            shared_result = measuring_result(candidate)
        FigureMeasurement.objects.bulk_create([FigureMeasurement(figure=item, result=shared_result)
                                               for item in created])
        candidates.append(candidate)
    return candidates
