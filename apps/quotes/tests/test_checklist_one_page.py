"""The whole checklist is answered on one page and in one API call: every answer saved in one transaction, or none,
with each refusal named by its question."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from apps.quotes import services
from apps.quotes.models import ChecklistAnswer, ChecklistQuestion
from apps.quotes.tests.factories import QuoteFactory, VendorFactory

API = "/api/v1/quotes/quotes/{pk}/checklist/answers/"


def page_data(answers):
    """POST data for the whole page: {code: (status, value, evidence)}; every other question left empty."""
    data = {}
    for question in ChecklistQuestion.objects.filter(active=True):
        status, value, evidence = answers.get(question.code, ("", "", ""))
        data.update({f"{question.code}-status": status, f"{question.code}-value": value,
                     f"{question.code}-evidence": evidence})
    return data


def people_answers(quote):
    return {
        answer.question.code: (answer.status, answer.value)
        for answer in ChecklistAnswer.objects.filter(quote=quote, origin="person").select_related("question")
    }


# One answer in each of the four groups.
FOUR_GROUPS = {
    "interconnect": ("answered", "NVLink 4 / NDR 400", "quote.pdf p. 2"),
    "access-model": ("answered", "Kubernetes", ""),
    "idle-capacity-billing": ("not_provided", "", ""),
    "data-retention": ("not_applicable", "", ""),
}


def test_the_page_is_one_form_for_every_question(client_for, quote, platform_user):
    html = client_for(platform_user).get(reverse("quotes:quote-checklist", args=[quote.pk])).content.decode()
    assert html.count("<form method=\"post\" action=\"/quotes/") == 1
    assert html.count('class="question"') == ChecklistQuestion.objects.filter(active=True).count() == 30
    assert "Save the checklist" in html


def test_one_post_saves_the_answers_of_every_group(client_for, quote, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:quote-checklist", args=[quote.pk]), page_data(FOUR_GROUPS)
    )
    assert response.status_code == 302
    assert people_answers(quote) == {code: (status, value) for code, (status, value, _e) in FOUR_GROUPS.items()}
    # The answers from the quote were posted back unchanged (empty status here): they stay the quote's.
    assert set(ChecklistAnswer.objects.filter(quote=quote, origin="quote").values_list("question__code", flat=True)) \
        == {"commercial-model", "placement"}


def test_one_refused_answer_saves_none_and_shows_the_error_at_its_question(client_for, quote, platform_user):
    data = page_data({**FOUR_GROUPS, "node-shape": ("answered", "   ", "")})
    response = client_for(platform_user).post(reverse("quotes:quote-checklist", args=[quote.pk]), data)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was saved: correct the answers marked below." in html
    node_shape = html[html.index('id="question-node-shape"'):html.index('id="question-placement"')]
    assert "Write the answer, or mark it not provided or not applicable." in node_shape
    assert people_answers(quote) == {}
    # What was typed stays in the form.
    assert "NVLink 4 / NDR 400" in html


def test_finance_cannot_post_the_checklist(client_for, quote, finance_user):
    response = client_for(finance_user).post(
        reverse("quotes:quote-checklist", args=[quote.pk]), page_data(FOUR_GROUPS)
    )
    assert response.status_code == 403
    assert people_answers(quote) == {}


def test_another_teams_checklist_is_404(client_for, quote, outsider):
    url = reverse("quotes:quote-checklist", args=[quote.pk])
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(outsider).post(url, page_data(FOUR_GROUPS)).status_code == 404
    assert people_answers(quote) == {}


def test_the_service_refuses_all_when_one_answer_is_refused(quote, platform_user, other_team):
    """The first answer is valid and written, the second cites another quote's document: the first is undone."""
    elsewhere = QuoteFactory(vendor=VendorFactory(team=other_team))
    document = services.document_attach(
        actor=platform_user, quote=elsewhere, upload=SimpleUploadedFile("x.pdf", b"%PDF-1.7 elsewhere")
    )
    questions = {q.code: q for q in ChecklistQuestion.objects.all()}
    with pytest.raises(services.ChecklistAnswersRefused) as error:
        services.checklist_answers_set(actor=platform_user, quote=quote, answers=[
            services.AnswerInput(questions["interconnect"], "answered", "NVLink 4"),
            services.AnswerInput(questions["node-shape"], "answered", "192 vCPU", evidence_document=document),
        ])
    assert set(error.value.per_question) == {"node-shape"}
    assert "evidence_document" in error.value.per_question["node-shape"].message_dict
    assert people_answers(quote) == {}


# --- The API ------------------------------------------------------------------------------------------------------


@pytest.fixture
def api():
    def signed_in(user):
        client = APIClient()
        client.force_authenticate(user)
        return client

    return signed_in


def test_one_call_answers_many_questions(api, quote, platform_user):
    document = services.document_attach(
        actor=platform_user, quote=quote, upload=SimpleUploadedFile("quote.pdf", b"%PDF-1.7 acme")
    )
    payload = [
        {"question": "interconnect", "status": "answered", "value": "NVLink 4", "evidence_document": document.pk},
        {"question": "access-model", "status": "answered", "value": "Slurm"},
        {"question": "idle-capacity-billing", "status": "not_provided"},
        {"question": "data-retention", "status": "not_applicable"},
    ]
    response = api(platform_user).post(API.format(pk=quote.pk), payload, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [item["question"] for item in body["answers"]] == [item["question"] for item in payload]
    # 4 answered here + commercial-model and placement from the quote = 6 of 30.
    assert body["checklist"] == {"answered": 6, "total": 30}
    assert "met" in body["policy"]
    assert people_answers(quote) == {
        "interconnect": ("answered", "NVLink 4"), "access-model": ("answered", "Slurm"),
        "idle-capacity-billing": ("not_provided", ""), "data-retention": ("not_applicable", ""),
    }
    assert ChecklistAnswer.objects.get(quote=quote, question__code="interconnect").evidence_document == document


def test_the_api_refuses_all_and_names_each_refused_question(api, quote, platform_user, other_team):
    elsewhere = services.document_attach(
        actor=platform_user, quote=QuoteFactory(vendor=VendorFactory(team=other_team)),
        upload=SimpleUploadedFile("x.pdf", b"%PDF-1.7 elsewhere"),
    )
    payload = [
        {"question": "interconnect", "status": "answered", "value": "NVLink 4"},
        {"question": "node-shape", "status": "answered", "value": ""},
        {"question": "no-such-question", "status": "answered", "value": "x"},
        {"question": "placement", "status": "maybe"},
        {"question": "access-model", "status": "answered", "value": "K8s", "evidence_document": elsewhere.pk},
    ]
    response = api(platform_user).post(API.format(pk=quote.pk), payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"node-shape", "no-such-question", "placement", "access-model"}
    assert body["node-shape"] == {"value": ["Write the answer, or mark it not provided or not applicable."]}
    assert set(body["no-such-question"]) == {"question"}
    assert set(body["placement"]) == {"status"}
    assert set(body["access-model"]) == {"evidence_document"}
    assert people_answers(quote) == {}


def test_a_refusal_by_the_service_is_keyed_by_question_too(api, quote, platform_user):
    """A question switched off by an admin is refused by the service, after the input checks passed."""
    ChecklistQuestion.objects.filter(code="node-shape").update(active=False)
    payload = [
        {"question": "interconnect", "status": "answered", "value": "NVLink 4"},
        {"question": "node-shape", "status": "answered", "value": "192 vCPU"},
    ]
    response = api(platform_user).post(API.format(pk=quote.pk), payload, format="json")
    assert response.status_code == 400
    assert response.json() == {"node-shape": {"question": ["This question is no longer asked."]}}
    assert people_answers(quote) == {}


def test_the_same_question_twice_is_refused(api, quote, platform_user):
    payload = [{"question": "interconnect", "status": "not_provided"}] * 2
    response = api(platform_user).post(API.format(pk=quote.pk), payload, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"interconnect"}


def test_an_empty_or_non_list_body_is_refused(api, quote, platform_user):
    for body in ([], {"question": "interconnect", "status": "not_provided"}):
        response = api(platform_user).post(API.format(pk=quote.pk), body, format="json")
        assert response.status_code == 400


def test_the_bulk_api_permissions(api, quote, finance_user, outsider):
    payload = [{"question": "interconnect", "status": "not_provided"}]
    assert api(finance_user).post(API.format(pk=quote.pk), payload, format="json").status_code == 403
    assert api(outsider).post(API.format(pk=quote.pk), payload, format="json").status_code == 404
    assert people_answers(quote) == {}


def test_the_schema_documents_the_bulk_answer(api, platform_user):
    schema = api(platform_user).get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/quotes/quotes/{id}/checklist/answers/"]["post"]
    request = operation["requestBody"]["content"]["application/json"]["schema"]
    assert request["type"] == "array"
    assert request["items"]["$ref"].startswith("#/components/schemas/BulkAnswer")
    assert "200" in operation["responses"]
