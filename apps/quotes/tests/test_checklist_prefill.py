"""Checklist answers that are facts on the quote are answered from it (origin "quote"), rewritten when the facts
change, removed when they no longer answer the question, and never written over a person's answer."""

import datetime

from django.urls import reverse
from django.utils import timezone

from apps.audit.models import ObjectChange
from apps.quotes import checklist_prefill, services
from apps.quotes.models import AnswerOrigin, ChecklistAnswer, ChecklistQuestion, CommercialModel, PriceUnit

READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def from_quote(quote) -> dict[str, str]:
    return {
        answer.question.code: answer.value
        for answer in ChecklistAnswer.objects.filter(quote=quote, origin=AnswerOrigin.QUOTE).select_related("question")
    }


def full_quote(team, vendor, gpu, user):
    return services.quote_create(
        actor=user, team=team, vendor=vendor, title="8× H200 reserved 12 months", gpu=gpu, gpus_per_node=8,
        gpu_memory_gb="141", form_factor="HGX 8-GPU", interconnect_intra_node="NVLink 4 with NVSwitch",
        interconnect_inter_node="8× 400 Gb/s InfiniBand NDR", vcpus_per_node=192, ram_gb_per_node=2048,
        local_nvme_tb_per_node="30.72", storage_bandwidth="100 Gb/s", network_bandwidth="3.2 Tb/s",
        region="eu-west", zone="eu-west-1b", commercial_model=CommercialModel.RESERVED,
        price_unit=PriceUnit.GPU_HOUR, currency="USD", term_months=12, committed_hours_per_month="730",
        payment_option="no_upfront", cancellation_terms="No cancellation after day 30", support_tier="Enterprise",
    )


def test_the_mapping_reads_each_fact_from_the_quote(team, vendor, gpu, platform_user):
    facts = checklist_prefill.quote_facts(full_quote(team, vendor, gpu, platform_user))
    assert set(facts) == {
        "gpu-model-memory-node", "interconnect", "node-shape", "placement", "commercial-model", "commitment-terms",
        "ancillary-costs",
    }
    assert facts["gpu-model-memory-node"].value == (
        f"GPU: {gpu}; memory per GPU (GB): 141; node form factor: HGX 8-GPU; GPUs per node: 8"
    )
    assert facts["interconnect"].value == (
        "interconnect inside the node: NVLink 4 with NVSwitch; interconnect between nodes: 8× 400 Gb/s InfiniBand NDR"
    )
    assert facts["placement"].value == "region: eu-west; zone: eu-west-1b"
    assert facts["commercial-model"].value == (
        "commercial model: Reserved; payment option: No upfront; term (months): 12"
    )
    # Committed hours stand for the minimum commitment; the overage rate is a price the quote does not have yet.
    assert facts["commitment-terms"].missing == ("Overage rate",)
    assert facts["ancillary-costs"].missing == (
        "Storage", "Network and egress", "Snapshots", "Public IP", "Load balancer", "Private network",
    )
    for code in ("gpu-model-memory-node", "interconnect", "node-shape", "placement", "commercial-model"):
        assert facts[code].complete, code


def test_creating_a_quote_answers_the_complete_questions_only(team, vendor, gpu, platform_user):
    quote = full_quote(team, vendor, gpu, platform_user)
    answers = from_quote(quote)
    assert set(answers) == {"gpu-model-memory-node", "interconnect", "node-shape", "placement", "commercial-model"}
    answer = ChecklistAnswer.objects.get(quote=quote, question__code="node-shape")
    assert (answer.status, answer.evidence, answer.answered_by) == ("answered", "", platform_user)
    assert answer.value == (
        "vCPUs per node: 192; RAM per node (GB): 2048; local NVMe per node (TB): 30.72; "
        "storage bandwidth: 100 Gb/s; network bandwidth: 3.2 Tb/s"
    )
    assert ObjectChange.objects.for_object(answer).get().action == "create"


def test_a_partial_question_is_not_answered(quote):
    """The fixture quote names its GPU and GPUs per node but not the memory nor the form factor."""
    facts = checklist_prefill.quote_facts(quote)["gpu-model-memory-node"]
    assert facts.missing == ("memory per GPU (GB)", "node form factor")
    assert "gpu-model-memory-node" not in from_quote(quote)


def test_changed_terms_rewrite_the_answer_and_removed_ones_delete_it(quote, platform_user):
    assert from_quote(quote)["placement"] == "region: eu-west"
    services.quote_update(actor=platform_user, quote=quote, region="us-east", placement="Dedicated rack")
    assert from_quote(quote)["placement"] == "region: us-east; placement assumptions: Dedicated rack"
    answer = ChecklistAnswer.objects.get(quote=quote, question__code="placement")
    services.quote_update(actor=platform_user, quote=quote, region="")
    assert "placement" not in from_quote(quote)
    assert ObjectChange.objects.for_object(answer).filter(action="delete").exists()


def test_a_persons_answer_is_never_rewritten(quote, platform_user):
    question = ChecklistQuestion.objects.get(code="placement")
    services.checklist_answer_set(
        actor=platform_user, quote=quote, question=question, status="answered", value="eu-west, rack 12 (email)",
    )
    services.quote_update(actor=platform_user, quote=quote, region="us-east")
    answer = ChecklistAnswer.objects.get(quote=quote, question=question)
    assert (answer.origin, answer.value) == ("person", "eu-west, rack 12 (email)")
    services.quote_update(actor=platform_user, quote=quote, region="")
    assert ChecklistAnswer.objects.filter(pk=answer.pk).exists()


def test_prices_and_sourced_cost_lines_answer_commitment_and_ancillary_costs(team, vendor, gpu, platform_user):
    quote = full_quote(team, vendor, gpu, platform_user)
    services.price_record(
        actor=platform_user, quote=quote, component="overage_rate", amount="4.10", source_kind="email",
        source_reference="sales@acme.test, 30 Nov", observed_at=READ_AT,
    )
    assert from_quote(quote)["commitment-terms"] == (
        "committed hours per month: 730; term (months): 12; cancellation rights: No cancellation after day 30; "
        "Overage rate: 4.10 USD (sales@acme.test, 30 Nov); support tier: Enterprise"
    )
    kinds = ["storage", "network_egress", "snapshots", "public_ip", "load_balancer"]
    for kind in kinds:
        services.cost_line_add(
            actor=platform_user, quote=quote, kind=kind, quantity="1", unit="month", rate="10",
            source_reference=f"https://acme.test/pricing#{kind}", observed_at=READ_AT,
        )
    # An estimate is not the vendor's fact: the private network is still missing.
    estimate = services.cost_line_add(
        actor=platform_user, quote=quote, kind="private_network", quantity="1", unit="month", rate="5",
        estimate_reason="our guess",
    )
    assert "ancillary-costs" not in from_quote(quote)
    services.cost_line_replace(
        actor=platform_user, line=estimate, source_reference="https://acme.test/pricing#vpc", observed_at=READ_AT,
    )
    assert from_quote(quote)["ancillary-costs"].startswith("Storage: 1 month × 10 USD per month (https://acme.test/")


def test_the_checklist_page_marks_answers_from_the_quote_and_suggests_partial_ones(client_for, quote, platform_user):
    html = client_for(platform_user).get(reverse("quotes:quote-checklist", args=[quote.pk])).content.decode()
    placement = html[html.index('id="question-placement"'):html.index('id="question-failed-hardware-replacement"')]
    assert "From the quote" in placement
    gpu_question = html[html.index('id="question-gpu-model-memory-node"'):html.index('id="question-interconnect"')]
    assert "From the quote, incomplete" in gpu_question
    assert "memory per GPU (GB), node form factor" in gpu_question
    assert "GPU: NVIDIA H200" in gpu_question  # offered as the initial answer


def test_the_api_says_where_an_answer_comes_from(quote, platform_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(platform_user)
    body = client.get("/api/v1/quotes/checklist-answers/", {"quote": quote.pk}).json()
    origins = {item["question"]: item["origin"] for item in body["results"]}
    assert origins == {"commercial-model": "quote", "placement": "quote"}


def test_an_answer_edited_by_a_person_becomes_theirs(quote, platform_user):
    before = timezone.now()
    services.checklist_answer_set(
        actor=platform_user, quote=quote, question=ChecklistQuestion.objects.get(code="commercial-model"),
        status="answered", value="On-demand, billed per second",
    )
    answer = ChecklistAnswer.objects.get(quote=quote, question__code="commercial-model")
    assert answer.origin == "person" and answer.answered_at >= before
