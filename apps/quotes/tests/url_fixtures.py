"""How the URL-access tests build the quote objects that URL parameters point at (see tests/url_registry.py)."""

import datetime
import itertools

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.quotes import services
from apps.quotes.models import ChecklistQuestion, CommitmentTier, StalePriceFlag
from apps.quotes.tests.factories import QuoteFactory, VendorFactory
from tests.url_registry import global_object, team_object

ACTOR = "url fixtures"
READ_AT = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
_days = itertools.count()  # one rate per team, pair and day: each built rate gets a day of its own


def make_quote(team):
    return QuoteFactory(vendor=VendorFactory(team=team))


def make_priced_quote(team):
    quote = make_quote(team)
    services.price_record(
        actor=ACTOR, quote=quote, component="list_price", amount="3.50", source_kind="price_page",
        source_reference="https://acme.test/pricing", observed_at=READ_AT,
    )
    return quote


def make_cost_line(team):
    return services.cost_line_add(
        actor=ACTOR, quote=make_quote(team), kind="storage", quantity="10", unit="TB-month", rate="20",
        source_reference="https://acme.test/pricing#storage", observed_at=READ_AT,
    )


def make_document(team):
    return services.document_attach(
        actor=ACTOR, quote=make_quote(team), upload=SimpleUploadedFile("quote.pdf", b"%PDF-1.7 url fixture")
    )


def make_answer(team):
    return services.checklist_answer_set(
        actor=ACTOR, quote=make_quote(team), question=ChecklistQuestion.objects.get(code="interconnect"),
        status="answered", value="NVLink 4",
    )


def make_rate(team):
    return services.exchange_rate_record(
        actor=ACTOR, team=team, from_currency="EUR", to_currency="USD", rate="1.0835",
        source="https://www.ecb.europa.eu/", as_of=datetime.date(2026, 11, 30) - datetime.timedelta(days=next(_days)),
    )


def make_flag(team):
    price = make_priced_quote(team).price_versions.get()
    return StalePriceFlag.objects.create(price=price, team=team, reason="stale", flagged_at=timezone.now())


def make_candidate(team):
    from apps.workloads.tests.factories import ready_summary

    quote = make_priced_quote(team)
    tier = min(CommitmentTier.objects.all(), key=lambda tier: tier.minimum_commitment)
    for question in tier.required_questions.all():
        services.checklist_answer_set(actor=ACTOR, quote=quote, question=question, status="answered", value="yes")
    return services.candidate_create(actor=ACTOR, team=team, quote=quote, workload_summary=ready_summary(team))


URL_FIXTURES = {
    "quotes:quote-detail": team_object(make_priced_quote),
    "quotes:quote-edit": team_object(make_quote),
    "quotes:price-create": team_object(make_quote),
    "quotes:document-upload": team_object(make_quote),
    "quotes:cost-line-create": team_object(make_quote),
    "quotes:quote-checklist": team_object(make_quote),
    "quotes:document-download": team_object(make_document),
    "quotes:cost-line-edit": team_object(make_cost_line),
    "quotes:cost-line-remove": team_object(make_cost_line),
    "quotes:vendor-detail": team_object(lambda team: VendorFactory(team=team)),
    "quotes:vendor-edit": team_object(lambda team: VendorFactory(team=team)),
    "quotes:candidate-detail": team_object(make_candidate),
    "quotes:candidate-edit": team_object(make_candidate),
    "quotes-api:vendor-detail": team_object(lambda team: VendorFactory(team=team)),
    "quotes-api:quote-detail": team_object(make_priced_quote),
    "quotes-api:quote-checklist-answers": team_object(make_quote),
    "quotes-api:price-version-detail": team_object(lambda team: make_priced_quote(team).price_versions.get()),
    "quotes-api:cost-line-detail": team_object(make_cost_line),
    "quotes-api:document-detail": team_object(make_document),
    "quotes-api:document-download": team_object(make_document),
    "quotes-api:checklist-answer-detail": team_object(make_answer),
    "quotes-api:exchange-rate-detail": team_object(make_rate),
    "quotes-api:stale-price-detail": team_object(make_flag),
    "quotes-api:candidate-detail": team_object(make_candidate),
    "quotes-api:checklist-question-detail": global_object(lambda team: ChecklistQuestion.objects.first()),
    "quotes-api:commitment-tier-detail": global_object(lambda team: CommitmentTier.objects.first()),
}
