"""The mistakes check reads evidence, not typed claims (issue item 8), through `comparison_for` and the real records:
mistake 3 wants a measured all-reduce bus bandwidth or a waiver a named person recorded, mistake 4 a measured or
sourced acceptance rate, mistake 5 an owner on each of the guide's ten operations lines, and a reservation or a
purchase is compared with a model/API route."""

from decimal import Decimal

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.comparison import services
from apps.comparison.models import MistakeWaiver
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import api_candidate, gpu_candidate, measured, workload
from apps.evidence.services import candidate_figure_set
from apps.quotes import checklist_data
from apps.quotes import services as quote_services
from apps.quotes.models import ChecklistQuestion
from apps.workloads.models import WorkloadSummary

pytestmark = pytest.mark.django_db


def findings(user, summary, code, **options):
    (rule,) = [rule for rule in comparison_for(user, summary, **options).rules if rule.rule.code == code]
    return [(view.finding.reason, view.candidate_label) for view in rule.findings]


def multi_gpu(team, actor, summary, **terms):
    """A 2-GPU replica on one 8-GPU node whose quote describes its interconnect in words."""
    candidate = gpu_candidate(team, actor, summary, label="A H100 x2", price="3.00", capacity="5", gpus_per_node=8,
                              interconnect_intra_node="NVLink 4, 900 GB/s per GPU", **terms)
    measured(candidate, actor, "gpus_per_replica", "2", "job:8001")
    return candidate


# --- 3: interconnect --------------------------------------------------------------------------------------------


def test_interconnect_text_on_the_quote_does_not_pass_mistake_3(team, platform_user):
    summary = workload(team)
    multi_gpu(team, platform_user, summary)
    assert findings(platform_user, summary, "interconnect_ignored") == [("multi_gpu", "A H100 x2")]


@pytest.mark.parametrize(("source", "extra"), [
    ("quoted", {"reference": "vendor datasheet p.4"}),
    ("estimated", {"estimated_by": "pat", "estimate_reason": "NVLink spec sheet"}),
])
def test_a_quoted_or_estimated_bus_bandwidth_does_not_pass_mistake_3(team, platform_user, source, extra):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    candidate_figure_set(actor=platform_user, candidate=candidate, metric="interconnect_busbw_gbps", value="180",
                         source=source, **extra)
    assert findings(platform_user, summary, "interconnect_ignored") == [("multi_gpu", "A H100 x2")]


def test_a_measured_all_reduce_passes_mistake_3(team, platform_user):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    measured(candidate, platform_user, "interconnect_busbw_gbps", "182.5", "job:8002")
    comparison = comparison_for(platform_user, summary)
    assert "interconnect_ignored" not in comparison.raised_codes
    (result,) = [r for r in comparison.results if r.candidate == candidate]
    assert result.facts.measured_bus_bandwidth_gbps == Decimal("182.5")


def test_a_waiver_by_a_named_person_passes_mistake_3_and_is_audited(team, platform_user):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    reason = "  Tensor parallel over NVLink inside one node; tested by the vendor. "
    waiver = services.mistake_waiver_create(actor=platform_user, candidate=candidate, rule="interconnect_ignored",
                                            reason=reason)
    assert (waiver.waived_by, waiver.team, waiver.reason) == (
        platform_user, team, "Tensor parallel over NVLink inside one node; tested by the vendor.")
    assert waiver.created_at is not None
    (entry,) = ObjectChange.objects.for_object(waiver)
    assert (entry.action, entry.actor) == (ObjectChange.Action.CREATE, platform_user)
    comparison = comparison_for(platform_user, summary)
    assert "interconnect_ignored" not in comparison.raised_codes
    assert comparison.results[0].facts.waived_rules == ("interconnect_ignored",)


def test_a_waiver_needs_a_reason_and_is_taken_once(team, platform_user):
    from django.core.exceptions import ValidationError

    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    with pytest.raises(ValidationError) as blank:
        services.mistake_waiver_create(actor=platform_user, candidate=candidate, rule="interconnect_ignored",
                                       reason="   ")
    assert "reason" in blank.value.message_dict
    services.mistake_waiver_create(actor=platform_user, candidate=candidate, rule="interconnect_ignored", reason="ok")
    with pytest.raises(ValidationError) as twice:
        services.mistake_waiver_create(actor=platform_user, candidate=candidate, rule="interconnect_ignored",
                                       reason="again")
    assert "rule" in twice.value.message_dict
    with pytest.raises(ValidationError):
        services.mistake_waiver_create(actor=platform_user, candidate=candidate, rule="memory_fit_yes_no",
                                       reason="not waivable")
    assert MistakeWaiver.objects.count() == 1


# --- 4: accepted outputs ----------------------------------------------------------------------------------------


def _blank_source(summary):
    # The database asks for a source; a source of blanks gets past it (only the form strips it).
    WorkloadSummary.objects.filter(pk=summary.pk).update(quality_acceptance_source="   ")
    return WorkloadSummary.objects.get(pk=summary.pk)


def test_a_workload_acceptance_rate_without_a_source_raises_mistake_4(team, platform_user):
    summary = _blank_source(workload(team))
    gpu_candidate(team, platform_user, summary, label="A H100", price="3.00", capacity="5")
    api_candidate(team, platform_user, summary)
    assert findings(platform_user, summary, "generated_not_accepted") == [("acceptance_unsourced", "")]


def test_a_sourced_workload_acceptance_rate_passes_mistake_4(team, platform_user):
    summary = workload(team)
    gpu_candidate(team, platform_user, summary, label="A H100", price="3.00", capacity="5")
    assert findings(platform_user, summary, "generated_not_accepted") == []


def test_a_measured_candidate_acceptance_passes_mistake_4_an_estimated_one_does_not(team, platform_user):
    summary = _blank_source(workload(team))
    gpu = gpu_candidate(team, platform_user, summary, label="A H100", price="3.00", capacity="5")
    api = api_candidate(team, platform_user, summary)
    measured(gpu, platform_user, "quality_acceptance", "0.93", "job:8101")
    candidate_figure_set(actor=platform_user, candidate=api, metric="quality_acceptance", value="0.97",
                         source="estimated", estimated_by="pat", estimate_reason="feels right")
    assert findings(platform_user, summary, "generated_not_accepted") == [
        ("candidate_acceptance_unsourced", "C API route")]
    candidate_figure_set(actor=platform_user, candidate=api, metric="quality_acceptance", value="0.97",
                         source="quoted", reference="vendor eval report 2026-10, table 3")
    assert findings(platform_user, summary, "generated_not_accepted") == []


# --- 5: platform ownership --------------------------------------------------------------------------------------


def _answer_owners(quote, actor, **answers):
    for code, (status, value) in answers.items():
        quote_services.checklist_answer_set(actor=actor, quote=quote, question=ChecklistQuestion.objects.get(code=code),
                                            status=status, value=value)


def test_the_ten_ownership_lines_are_checklist_questions():
    assert [line for _code, line, *_texts in checklist_data.OWNERSHIP_LINES] == [
        "drivers", "CUDA", "containers", "model server", "autoscaling", "quotas", "logging", "alerts", "incidents",
        "spend reporting"]
    questions = ChecklistQuestion.objects.filter(code__in=checklist_data.OWNERSHIP_CODES, active=True)
    assert questions.count() == 10
    assert all(question.text_fr and question.text_id for question in questions)


def test_an_operations_line_without_an_owner_raises_mistake_5_on_a_self_operated_candidate(team, platform_user):
    summary = workload(team)
    gpu = gpu_candidate(team, platform_user, summary, label="A H100", price="3.00", capacity="5")
    api = api_candidate(team, platform_user, summary)
    assert findings(platform_user, summary, "no_platform_ownership") == []
    _answer_owners(gpu.quote, platform_user, **{"owner-autoscaling": ("answered", "TBD"),
                                                "owner-incidents": ("not_applicable", ""),
                                                "owner-drivers": ("answered", "the vendor (managed images)")})
    _answer_owners(api.quote, platform_user, **{"owner-autoscaling": ("not_provided", "")})
    (result,) = [r for r in comparison_for(platform_user, summary).results if r.candidate == gpu]
    assert result.facts.unowned_operations == ("autoscaling", "incidents")
    assert findings(platform_user, summary, "no_platform_ownership") == [("unowned_operations", "A H100")]
    _answer_owners(gpu.quote, platform_user, **{"owner-autoscaling": ("answered", "Platform team (pat)"),
                                                "owner-incidents": ("answered", "Rina, on-call lead")})
    assert findings(platform_user, summary, "no_platform_ownership") == []


@pytest.mark.parametrize(("status", "value", "owned"), [
    ("answered", "our team", True), ("answered", "the vendor", True), ("answered", "Rina Wijaya", True),
    ("answered", "TBD", False), ("answered", " nobody. ", False), ("answered", "?", False),
    ("not_provided", "", False), ("not_applicable", "", False),
])
def test_an_owner_is_named(status, value, owned):
    assert checklist_data.names_an_owner(status, value) is owned


# --- 7: a commitment compared with a model/API route ------------------------------------------------------------


def test_a_reservation_never_compared_with_an_api_route_is_flagged(team, platform_user):
    summary = workload(team)
    reserved = gpu_candidate(team, platform_user, summary, label="B reserved H200", price="3.50", capacity="9",
                             commercial_model="reserved", committed_hours="730", term_months=12)
    gpu_candidate(team, platform_user, summary, label="A on-demand H100", price="3.00", capacity="5")
    assert findings(platform_user, summary, "committed_without_api_comparison") == [
        ("reserve_without_api", "B reserved H200")]
    assert findings(platform_user, summary, "committed_without_api_comparison", chosen_id=reserved.pk) == [
        ("reserve_without_api", "B reserved H200")]
    api_candidate(team, platform_user, summary)
    assert findings(platform_user, summary, "committed_without_api_comparison", chosen_id=reserved.pk) == []


# --- the API of the waivers -------------------------------------------------------------------------------------


def _post(client, candidate, reason="NVLink inside one node; all-reduce measured by the vendor, report 12"):
    return client.post(reverse("comparison-api:waiver-list"),
                       {"candidate": candidate.pk, "rule": "interconnect_ignored", "reason": reason},
                       content_type="application/json")


def test_platform_records_a_waiver_through_the_api_and_the_comparison_shows_it_waived(client, team, platform_user):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    client.force_login(platform_user)
    url = reverse("comparison-api:comparison", args=[summary.pk])
    assert client.get(url).json()["mistakes"][2]["raised"] is True
    response = _post(client, candidate)
    assert response.status_code == 201, response.content
    assert response.json()["waived_by"] == "pat"
    assert client.get(url).json()["mistakes"][2]["raised"] is False
    listed = client.get(reverse("comparison-api:waiver-list"), {"candidate": candidate.pk}).json()
    items = listed["results"] if isinstance(listed, dict) else listed
    assert [(item["candidate"], item["rule"], item["waived_by"]) for item in items] == [
        (candidate.pk, "interconnect_ignored", "pat")]
    # The comparison's API and page say who waived it and why, beside the mistakes check.
    (entry,) = [item for item in client.get(url).json()["candidates"] if item["candidate_id"] == candidate.pk]
    assert [(waiver["rule"], waiver["by"]) for waiver in entry["waivers"]] == [("interconnect_ignored", "pat")]
    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    waivers = page.split('id="waivers"')[1].split("</ul>")[0]
    assert "waived for" in waivers and "pat" in waivers and candidate.label in waivers


def test_a_waiver_with_a_blank_reason_or_twice_is_refused(client, team, platform_user):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    client.force_login(platform_user)
    assert _post(client, candidate, reason="   ").status_code == 400
    assert _post(client, candidate).status_code == 201
    assert _post(client, candidate).status_code == 400
    assert MistakeWaiver.objects.count() == 1


def test_finance_and_product_read_waivers_but_may_not_record_one(client, team, platform_user, finance_user,
                                                                 product_user):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    for user in (finance_user, product_user):
        client.force_login(user)
        assert _post(client, candidate).status_code == 403
        assert client.get(reverse("comparison-api:waiver-list")).status_code == 200
    assert not MistakeWaiver.objects.exists()


def test_an_outsider_can_neither_waive_nor_see_another_teams_candidate(client, team, platform_user, outsider):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    services.mistake_waiver_create(actor=platform_user, candidate=candidate, rule="interconnect_ignored",
                                   reason="NVLink inside one node")
    client.force_login(outsider)
    assert _post(client, candidate).status_code == 400
    listed = client.get(reverse("comparison-api:waiver-list")).json()
    items = listed["results"] if isinstance(listed, dict) else listed
    assert items == []
    assert client.get(reverse("comparison-api:waiver-detail", args=[MistakeWaiver.objects.get().pk])).status_code == 404


def test_signed_out_may_not_record_a_waiver(client, team, platform_user):
    summary = workload(team)
    candidate = multi_gpu(team, platform_user, summary)
    assert _post(client, candidate).status_code in (401, 403)
