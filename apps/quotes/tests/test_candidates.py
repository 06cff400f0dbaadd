"""Candidates: a quote × a ready workload version, a purchase option or a model/API route, gated by the policy."""

import datetime

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from apps.audit.models import ObjectChange
from apps.quotes import selectors, services
from apps.quotes.models import Candidate, CandidateKind, CommercialModel, CostKind, PriceUnit
from apps.quotes.tests.conftest import answer_base_tier
from apps.workloads.tests.factories import draft_summary, ready_summary

READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def make(team, quote, summary, user, **values):
    return services.candidate_create(actor=user, team=team, quote=quote, workload_summary=summary, **values)


def api_route(team, vendor, user):
    route = services.quote_create(
        actor=user, team=team, vendor=vendor, title="Llama 3 8B via API", served_model="llama-3-8b-instruct",
        commercial_model=CommercialModel.MODEL_API, price_unit=PriceUnit.MILLION_TOKENS, currency="USD",
    )
    for component, amount in (("input_tokens", "0.40"), ("output_tokens", "1.60")):
        services.price_record(
            actor=user, quote=route, component=component, amount=amount, source_kind="price_page",
            source_reference="https://route.test/pricing", observed_at=READ_AT,
        )
    answer_base_tier(route, user)
    return route


def test_a_quote_attaches_to_a_ready_workload_version(team, backed_quote, ready_workload, platform_user):
    candidate = make(team, backed_quote, ready_workload, platform_user)
    assert candidate.kind == CandidateKind.GPU
    assert candidate.workload_summary == ready_workload
    assert ObjectChange.objects.for_object(candidate).get().action == "create"


def test_a_candidate_update_is_audited_and_keeps_its_quote(
    team, backed_quote, ready_workload, platform_user
):
    candidate = make(team, backed_quote, ready_workload, platform_user)
    services.candidate_update(actor=platform_user, candidate=candidate, notes="Reserved for the pilot.")
    entry = ObjectChange.objects.for_object(candidate).filter(action="update").get()
    assert entry.changes == {"notes": ["", "Reserved for the pilot."]}
    with pytest.raises(TypeError):
        services.candidate_update(actor=platform_user, candidate=candidate, quote=backed_quote)


def test_a_draft_workload_version_is_refused(team, backed_quote, platform_user):
    with pytest.raises(ValidationError) as error:
        make(team, backed_quote, draft_summary(team), platform_user)
    assert "workload_summary" in error.value.message_dict
    assert not Candidate.objects.exists()


def test_another_teams_workload_is_refused(team, other_team, backed_quote, platform_user):
    with pytest.raises(ValidationError):
        make(team, backed_quote, ready_summary(other_team), platform_user)


def test_a_quote_below_the_policy_cannot_back_a_candidate_and_the_missing_answers_are_named(
    team, priced_quote, ready_workload, platform_user
):
    with pytest.raises(services.PolicyNotMet) as error:
        make(team, priced_quote, ready_workload, platform_user)
    # commercial-model is not missing: the quote's own commercial model answers it.
    assert {missing.question.code for missing in error.value.policy.missing} == {
        "gpu-model-memory-node", "commitment-terms", "ancillary-costs", "idle-capacity-billing",
    }
    assert "Interconnect" not in str(error.value)
    assert not Candidate.objects.exists()


def test_a_quote_without_its_price_cannot_back_a_candidate(team, quote, ready_workload, platform_user):
    answer_base_tier(quote, platform_user)
    with pytest.raises(ValidationError) as error:
        make(team, quote, ready_workload, platform_user)
    assert "List price" in str(error.value.message_dict["quote"])


def test_a_model_api_route_is_a_first_class_candidate(team, vendor, ready_workload, platform_user):
    route = api_route(team, vendor, platform_user)
    services.cost_line_add(
        actor=platform_user, quote=route, kind=CostKind.GATEWAY_OPERATIONS, quantity="1", unit="month", rate="150",
        estimate_reason="gateway instance and its on-call share",
    )
    candidate = make(
        team, route, ready_workload, platform_user, expected_retry_rate="0.02",
        retry_rate_source="gateway logs, Oct 2026", quality_acceptance="0.97",
        quality_acceptance_source="eval of 500 transcripts",
    )
    assert candidate.kind == CandidateKind.API
    row = selectors.candidate_rows([selectors.candidates_for(platform_user).get(pk=candidate.pk)])[0]
    assert str(row.input_per_million.amount) == "0.40" and str(row.output_per_million.amount) == "1.60"
    assert not row.labor_missing  # an API route has no GPU to operate
    assert [line.kind for line in row.cost_lines] == ["gateway_operations"]


def test_a_retry_rate_and_a_quality_acceptance_need_sources_and_sane_values(
    team, backed_quote, ready_workload, platform_user
):
    with pytest.raises(ValidationError):
        make(team, backed_quote, ready_workload, platform_user, expected_retry_rate="0.02")
    with pytest.raises(ValidationError):
        make(team, backed_quote, ready_workload, platform_user, quality_acceptance="1.2",
             quality_acceptance_source="eval")


def test_a_purchase_option_is_a_candidate(team, vendor, gpu, ready_workload, platform_user):
    purchase = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Buy 1 HGX H200", gpu=gpu, gpus_per_node=8,
        commercial_model=CommercialModel.PURCHASE, price_unit=PriceUnit.NODE_PURCHASE, currency="USD",
        amortisation_months=48, amortisation_source="finance policy", power_kw_per_node="10.2",
        power_source="vendor datasheet", pue="1.3", pue_source="colo contract",
    )
    for component, amount in (("list_price", "5000"), ("energy_per_kwh", "0.12")):
        services.price_record(
            actor=platform_user, quote=purchase, component=component, amount=amount, source_kind="email",
            source_reference="sales@vendor.test", observed_at=READ_AT,
        )
    answer_base_tier(purchase, platform_user)
    assert make(team, purchase, ready_workload, platform_user).kind == CandidateKind.PURCHASE


def test_zero_platform_labor_on_a_gpu_candidate_is_a_visible_warning(
    client_for, team, backed_quote, ready_workload, platform_user
):
    candidate = make(team, backed_quote, ready_workload, platform_user)
    assert selectors.platform_labor_missing(candidate)
    html = client_for(platform_user).get(candidate.get_absolute_url()).content.decode()
    assert 'id="labor-warning"' in html
    listing = client_for(platform_user).get(reverse("quotes:candidate-list")).content.decode()
    assert "no platform labor" in listing
    services.cost_line_add(
        actor=platform_user, quote=backed_quote, candidate=candidate, kind=CostKind.PLATFORM_LABOR, quantity="0",
        unit="hours", rate="90", estimate_reason="nobody yet",
    )
    assert selectors.platform_labor_missing(candidate)  # zero hours is still zero labor
    services.cost_line_add(
        actor=platform_user, quote=backed_quote, candidate=candidate, kind=CostKind.PLATFORM_LABOR, quantity="20",
        unit="hours", rate="90", estimate_reason="two SREs, 10 h each a month",
    )
    assert not selectors.platform_labor_missing(candidate)
    assert 'id="labor-warning"' not in client_for(platform_user).get(candidate.get_absolute_url()).content.decode()


def test_a_candidate_line_only_counts_for_its_own_candidate(team, backed_quote, platform_user):
    first = make(team, backed_quote, ready_summary(team, name="Chat"), platform_user)
    second = make(team, backed_quote, ready_summary(team, name="Batch"), platform_user)
    services.cost_line_add(
        actor=platform_user, quote=backed_quote, candidate=first, kind=CostKind.PLATFORM_LABOR, quantity="20",
        unit="hours", rate="90", estimate_reason="chat on-call",
    )
    assert not selectors.platform_labor_missing(first)
    assert selectors.platform_labor_missing(second)


def test_the_candidate_page_says_when_the_workload_has_a_newer_version(
    client_for, team, backed_quote, ready_workload, platform_user
):
    from apps.workloads.tests.factories import WorkloadSummaryFactory

    candidate = make(team, backed_quote, ready_workload, platform_user)
    WorkloadSummaryFactory(team=team, workload=ready_workload.workload, version=2, name=ready_workload.name)
    html = client_for(platform_user).get(candidate.get_absolute_url()).content.decode()
    assert "a newer version exists" in html


def test_the_candidate_form_lists_the_missing_answers(client_for, team, priced_quote, ready_workload, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:candidate-create"), {"quote": priced_quote.pk, "workload_summary": ready_workload.pk}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "This quote is below the commitment policy" in html
    assert "Whether idle capacity is billed and how shutdown automation works." in html
    assert not Candidate.objects.exists()


def test_the_candidate_form_creates_one(client_for, team, backed_quote, ready_workload, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:candidate-create"), {"quote": backed_quote.pk, "workload_summary": ready_workload.pk}
    )
    assert response.status_code == 302
    assert Candidate.objects.get().quote == backed_quote


def test_the_api_refuses_a_candidate_below_the_policy_with_the_missing_answers(
    team, priced_quote, ready_workload, platform_user, finance_user
):
    client = APIClient()
    client.force_authenticate(platform_user)
    response = client.post(
        "/api/v1/quotes/candidates/", {"quote": priced_quote.pk, "workload_summary": ready_workload.pk},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"quote", "missing_answers", "problems"}
    assert {item["question"] for item in response.json()["missing_answers"]} >= {"commitment-terms"}
    answer_base_tier(priced_quote, platform_user)
    created = client.post(
        "/api/v1/quotes/candidates/", {"quote": priced_quote.pk, "workload_summary": ready_workload.pk},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["platform_labor_warning"] is True
    finance = APIClient()
    finance.force_authenticate(finance_user)
    assert finance.get(f"/api/v1/quotes/candidates/{created.json()['id']}/").status_code == 200
    assert finance.patch(
        f"/api/v1/quotes/candidates/{created.json()['id']}/", {"label": "x"}, format="json"
    ).status_code == 403


def test_an_outsider_cannot_see_a_candidate(client_for, team, backed_quote, ready_workload, platform_user, outsider):
    candidate = make(team, backed_quote, ready_workload, platform_user)
    assert client_for(outsider).get(candidate.get_absolute_url()).status_code == 404
    assert client_for(outsider).get(reverse("quotes:candidate-edit", args=[candidate.pk])).status_code == 404
    client = APIClient()
    client.force_authenticate(outsider)
    assert client.get(f"/api/v1/quotes/candidates/{candidate.pk}/").status_code == 404


def test_the_cheapest_hour_ranking_for_the_workload_page(
    team, vendor, gpu, backed_quote, ready_workload, platform_user
):
    other = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Cheaper hour", gpu=gpu, gpus_per_node=8,
        commercial_model=CommercialModel.ON_DEMAND, price_unit=PriceUnit.NODE_HOUR, currency="USD",
    )
    services.price_record(
        actor=platform_user, quote=other, component="list_price", amount="24.00", source_kind="email",
        source_reference="sales@acme.test", observed_at=READ_AT,
    )
    answer_base_tier(other, platform_user)
    expensive = make(team, backed_quote, ready_workload, platform_user)
    cheap = make(team, other, ready_workload, platform_user)
    ranking = selectors.candidates_by_hourly_price(platform_user, ready_workload)
    assert [row.candidate for row in ranking] == [cheap, expensive]
    assert str(ranking[0].rate_per_gpu_hour.amount) == "3.00"  # 24.00 per node-hour ÷ 8 GPUs
