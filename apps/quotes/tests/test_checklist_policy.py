"""The procurement checklist is data in three languages; the commitment policy decides which answers must exist."""

import datetime

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation

from apps.audit.models import ObjectChange
from apps.quotes import selectors, services
from apps.quotes.models import (
    AnswerStatus,
    ChecklistGroup,
    ChecklistQuestion,
    CommercialModel,
    CommitmentTier,
    PriceComponent,
    SourceKind,
)

READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def answer(quote, user, code, status=AnswerStatus.ANSWERED, value="Yes, see the quote", **extra):
    question = ChecklistQuestion.objects.get(code=code)
    return services.checklist_answer_set(
        actor=user, quote=quote, question=question, status=status, value=value, **extra
    )


def price(quote, user, component, amount):
    services.price_record(
        actor=user, quote=quote, component=component, amount=amount, source_kind=SourceKind.EMAIL,
        source_reference="sales@acme.test, 30 Nov", observed_at=READ_AT,
    )


def make_reserved(quote, user, *, hourly="2.50", hours="730", months=12):
    services.quote_update(
        actor=user, quote=quote, commercial_model=CommercialModel.RESERVED, committed_hours_per_month=hours,
        term_months=months,
    )
    price(quote, user, PriceComponent.CONTRACTED_PRICE, hourly)


def test_the_guide_four_groups_are_seeded_in_three_languages(db):
    questions = ChecklistQuestion.objects.all()
    assert {question.group for question in questions} == set(ChecklistGroup.values)
    assert questions.count() == 30  # the 20 of the procurement checklist and the 10 owners of mistake 5
    for question in questions:
        assert question.text_en and question.text_fr and question.text_id
        assert len({question.text_en, question.text_fr, question.text_id}) == 3
    interconnect = ChecklistQuestion.objects.get(code="interconnect")
    with translation.override("fr"):
        assert interconnect.text == "Interconnexion à l’intérieur du nœud et entre les nœuds."
    with translation.override("id"):
        assert interconnect.text == "Interkoneksi di dalam node dan antarnode."


def test_the_default_policy_grows_with_the_commitment(db):
    tiers = sorted(CommitmentTier.objects.all(), key=lambda tier: tier.minimum_commitment)
    counts = [tier.required_questions.count() for tier in tiers]
    assert counts[0] < counts[-1] and tiers[-1].evidence_required and not tiers[0].evidence_required


def test_answers_can_be_a_value_not_provided_or_not_applicable(quote, platform_user):
    answer(quote, platform_user, "interconnect", value="NVLink 4 + 8× 400G InfiniBand")
    answer(quote, platform_user, "node-shape", status=AnswerStatus.NOT_PROVIDED, value="")
    answer(quote, platform_user, "placement", status=AnswerStatus.NOT_APPLICABLE, value="")
    progress = selectors.checklist_progress(quote)
    # The three above (placement's answer from the quote's region becomes the person's) + commercial-model, which
    # the quote's own commercial model answers.
    assert (progress.answered, progress.total) == (4, 30)


def test_an_answered_question_needs_its_value(quote, platform_user):
    with pytest.raises(ValidationError):
        answer(quote, platform_user, "interconnect", value="  ")


def test_re_answering_replaces_the_answer_and_keeps_the_old_one_in_the_audit_log(quote, platform_user):
    first = answer(quote, platform_user, "interconnect", status=AnswerStatus.NOT_PROVIDED, value="")
    second = answer(quote, platform_user, "interconnect", value="NVLink 4")
    assert first.pk == second.pk
    entries = ObjectChange.objects.for_object(second)
    assert entries.filter(action="update").get().changes["status"] == ["not_provided", "answered"]


def test_an_unanswered_pay_as_you_go_quote_lists_the_base_tier_answers(priced_quote):
    check = selectors.policy_check(priced_quote)
    assert not check.ok
    assert check.commitment == 0
    # The base tier's five questions but commercial-model: the quote's commercial model answers it.
    assert {missing.question.code for missing in check.missing} == {
        "gpu-model-memory-node", "commitment-terms", "ancillary-costs", "idle-capacity-billing",
    }
    assert {missing.reason for missing in check.missing} == {"not answered"}


def test_not_provided_counts_as_missing_and_not_applicable_as_present(priced_quote, platform_user):
    for code in ("gpu-model-memory-node", "commercial-model", "commitment-terms", "ancillary-costs"):
        answer(priced_quote, platform_user, code)
    answer(priced_quote, platform_user, "idle-capacity-billing", status=AnswerStatus.NOT_PROVIDED, value="")
    check = selectors.policy_check(priced_quote)
    assert [(m.question.code, m.reason) for m in check.missing] == [
        ("idle-capacity-billing", "the vendor has not provided it")
    ]
    answer(priced_quote, platform_user, "idle-capacity-billing", status=AnswerStatus.NOT_APPLICABLE, value="")
    assert selectors.policy_check(priced_quote).ok


def test_a_larger_commitment_requires_more_answers(priced_quote, platform_user):
    for code in ("gpu-model-memory-node", "commercial-model", "commitment-terms", "ancillary-costs",
                 "idle-capacity-billing"):
        answer(priced_quote, platform_user, code)
    assert selectors.policy_check(priced_quote).ok
    # 8 GPUs × 730 h × 2.50 × 12 months = 175,200 USD: the top tier, every question, with evidence.
    make_reserved(priced_quote, platform_user)
    check = selectors.policy_check(priced_quote)
    assert check.commitment == 175200
    assert check.tier.evidence_required
    assert len(check.missing) == 20
    reasons = {m.question.code: m.reason for m in check.missing}
    assert reasons["interconnect"] == "not answered"
    assert reasons["commercial-model"] == "evidence missing"


def test_evidence_satisfies_the_top_tier(priced_quote, platform_user):
    make_reserved(priced_quote, platform_user)
    for question in ChecklistQuestion.objects.all():
        services.checklist_answer_set(
            actor=platform_user, quote=priced_quote, question=question, status=AnswerStatus.ANSWERED,
            value="Confirmed", evidence="MSA v3 §4",
        )
    assert selectors.policy_check(priced_quote).ok


def test_a_commitment_in_another_currency_needs_an_exchange_rate(team, priced_quote, platform_user):
    services.quote_update(actor=platform_user, quote=priced_quote, currency="IDR")
    make_reserved(priced_quote, platform_user, hourly="40000")
    for code in ("gpu-model-memory-node", "commercial-model", "commitment-terms", "ancillary-costs",
                 "idle-capacity-billing"):
        answer(priced_quote, platform_user, code)
    check = selectors.policy_check(priced_quote)
    assert check.problems and "IDR" in check.problems[0]
    assert not check.ok
    services.exchange_rate_record(
        actor=platform_user, team=team, from_currency="IDR", to_currency="USD", rate="0.0000625",
        source="https://www.bi.go.id/en/statistik/informasi-kurs/jisdor/", as_of=datetime.date(2026, 11, 30),
    )
    check = selectors.policy_check(priced_quote)
    # 8 × 730 × 40,000 × 12 = 2,803,200,000 IDR = 175,200 USD at 0.0000625: the top tier.
    assert check.commitment == 2803200000 and check.tier.evidence_required and not check.problems


def test_a_purchase_commits_its_capital_cost(team, vendor, gpu, platform_user):
    quote = services.quote_create(
        actor=platform_user, team=team, vendor=vendor, title="Buy 2 HGX", gpu=gpu,
        commercial_model=CommercialModel.PURCHASE, price_unit="node_purchase", currency="USD", node_count=2,
        amortisation_months=48, amortisation_source="policy", power_kw_per_node="10.2", power_source="datasheet",
        pue="1.3", pue_source="colo contract",
    )
    price(quote, platform_user, PriceComponent.LIST_PRICE, "300000")
    price(quote, platform_user, PriceComponent.SPARES_PER_NODE, "5000")
    assert selectors.commitment_of(quote) == 610000


def test_the_policy_is_data_an_admin_can_change(priced_quote, platform_user):
    CommitmentTier.objects.filter(minimum_commitment="0").get().required_questions.clear()
    assert selectors.policy_check(priced_quote).ok


def test_the_owners_of_mistake_5_are_questions_of_no_commitment_tier(db):
    from apps.quotes import checklist_data
    from apps.quotes.models import CommitmentTier

    owners = ChecklistQuestion.objects.filter(code__in=checklist_data.OWNERSHIP_CODES)
    assert owners.count() == 10
    assert {question.group for question in owners} == {checklist_data.OWNERSHIP_GROUP}
    assert not CommitmentTier.objects.filter(required_questions__in=owners).exists()
