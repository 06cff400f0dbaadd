"""The checklist page saves section by section (htmx), shows progress, and names the answers the policy still needs."""

from django.urls import reverse

from apps.quotes.models import ChecklistAnswer, ChecklistQuestion


def section_data(group, answers):
    """POST data for one section: {code: (status, value, evidence)}; other questions of the section stay empty."""
    data = {}
    for question in ChecklistQuestion.objects.filter(group=group):
        status, value, evidence = answers.get(question.code, ("", "", ""))
        data[f"{question.code}-status"] = status
        data[f"{question.code}-value"] = value
        data[f"{question.code}-evidence"] = evidence
    return data


def test_the_checklist_page_lists_the_four_groups_and_the_missing_answers(client_for, priced_quote, platform_user):
    html = client_for(platform_user).get(reverse("quotes:quote-checklist", args=[priced_quote.pk])).content.decode()
    for group in ("hardware", "software", "commercial", "security"):
        assert f'id="section-{group}"' in html
    # commercial-model and placement (region "eu-west") are answered from the quote's own terms.
    assert "2 of 30 questions answered" in html
    assert "This quote cannot back a candidate yet." in html
    assert ChecklistQuestion.objects.get(code="idle-capacity-billing").text_en in html


def test_one_save_takes_the_answers_of_every_section(client_for, priced_quote, platform_user):
    url = reverse("quotes:quote-checklist", args=[priced_quote.pk])
    data = {
        **section_data("hardware", {
            "gpu-model-memory-node": ("answered", "8× H200 SXM 141 GB, HGX board", "quote.pdf p. 1"),
            "interconnect": ("not_provided", "", ""),
            "placement": ("not_applicable", "", ""),
        }),
        **section_data("software", {"access-model": ("answered", "K8s", "")}),
    }
    response = client_for(platform_user).post(url, data)
    assert response.status_code == 302
    assert response["Location"] == url
    answers = {answer.question.code: answer.status for answer in ChecklistAnswer.objects.filter(quote=priced_quote)}
    # The four given (placement's answer from the quote's region becomes the person's) + commercial-model from the
    # quote.
    assert answers == {"gpu-model-memory-node": "answered", "interconnect": "not_provided",
                       "placement": "not_applicable", "access-model": "answered", "commercial-model": "answered"}
    html = client_for(platform_user).get(url).content.decode()
    assert "5 of 30 questions answered" in html


def test_an_answer_without_its_value_refuses_the_whole_page(client_for, priced_quote, platform_user):
    url = reverse("quotes:quote-checklist", args=[priced_quote.pk])
    data = {
        **section_data("hardware", {"interconnect": ("answered", "NVLink 4", "")}),
        **section_data("software", {"software-versions": ("answered", "", ""),
                                    "access-model": ("answered", "K8s", "")}),
    }
    response = client_for(platform_user).post(url, data)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was saved: correct the answers marked below." in html
    assert "Write the answer, or mark it not provided or not applicable." in html
    assert not ChecklistAnswer.objects.filter(origin="person").exists()


def test_finance_sees_the_answers_read_only(client_for, priced_quote, platform_user, finance_user):
    client_for(platform_user).post(
        reverse("quotes:quote-checklist", args=[priced_quote.pk]),
        section_data("hardware", {"interconnect": ("answered", "NVLink 4 / NDR 400", "")}),
    )
    html = client_for(finance_user).get(reverse("quotes:quote-checklist", args=[priced_quote.pk])).content.decode()
    assert "NVLink 4 / NDR 400" in html
    assert "hx-post" not in html
