"""Cost centres, budgets and the policy through the API and the pages: finance and admin write (audited), the other
roles read, another team gets 404, bad input is refused with the field named."""

import pytest
from django.urls import reverse

from apps.audit.models import ObjectChange
from apps.budgets.models import Budget, BudgetPolicy, CostCentre
from apps.budgets.tests.builders import budget, cost_centre

pytestmark = pytest.mark.django_db


def test_finance_creates_a_cost_centre_and_a_budget_through_the_api_and_each_write_is_audited(
    client, team, finance_user
):
    client.force_login(finance_user)
    centre = client.post(reverse("budgets-api:cost-centre-list"), {"team": team.slug, "code": "CC-7", "name": "Eval"},
                         content_type="application/json")
    assert centre.status_code == 201, centre.content
    created = client.post(
        reverse("budgets-api:budget-list"),
        {"team": team.slug, "cost_centre": centre.json()["id"], "amount": "1234567.89", "currency": "EUR",
         "period": "quarterly", "start_date": "2026-01-01"}, content_type="application/json",
    )
    assert created.status_code == 201, created.content
    saved = Budget.objects.get()
    assert (str(saved.amount), saved.owner, created.json()["amount"]) == ("1234567.89", finance_user, "1234567.89")
    assert ObjectChange.objects.filter(object_id=str(saved.pk), action="create").exists()
    policy = client.post(reverse("budgets-api:policy-list"), {"team": team.slug, "mode": "block",
                                                              "warn_fraction": "0.9"},
                         content_type="application/json")
    assert policy.status_code == 201 and BudgetPolicy.objects.get(team=team).mode == "block"


def test_bad_budgets_are_refused_naming_the_field(client, team, finance_user, other_team):
    client.force_login(finance_user)
    centre = cost_centre(team)
    for body, field in (
        ({"amount": "0", "period": "annual"}, "amount"),
        ({"amount": 12.5, "period": "annual"}, "amount"),  # a JSON number has already lost digits
        ({"amount": "10", "period": "weekly"}, "period"),
    ):
        response = client.post(reverse("budgets-api:budget-list"),
                               {"team": team.slug, "cost_centre": centre.pk, "currency": "USD",
                                "start_date": "2026-01-01", **body}, content_type="application/json")
        assert response.status_code == 400 and field in response.json(), (body, response.content)
    duplicate = client.post(reverse("budgets-api:cost-centre-list"), {"team": team.slug, "code": centre.code,
                                                                     "name": "again"}, content_type="application/json")
    assert duplicate.status_code == 400 and "code" in duplicate.json()
    assert client.post(reverse("budgets-api:policy-list"), {"team": team.slug, "mode": "warn", "warn_fraction": "2"},
                       content_type="application/json").status_code == 400


def test_platform_and_product_read_but_may_not_write_and_another_team_sees_nothing(
    client, team, platform_user, product_user, outsider
):
    made = budget(team)
    for user in (platform_user, product_user):
        client.force_login(user)
        assert client.get(reverse("budgets-api:budget-detail", args=[made.pk])).status_code == 200
        assert client.post(reverse("budgets-api:cost-centre-list"), {"code": "X", "name": "x"},
                           content_type="application/json").status_code == 403
        assert client.post(reverse("budgets:budget-create"), {}).status_code == 403
    client.force_login(outsider)
    assert client.get(reverse("budgets-api:budget-detail", args=[made.pk])).status_code == 404
    assert client.get(reverse("budgets:budget-edit", args=[made.pk])).status_code == 404
    assert client.get(reverse("budgets:finance")).context["rows"] == []


def test_the_budget_page_form_validates_and_saves(client, team, finance_user):
    client.force_login(finance_user)
    centre = cost_centre(team)
    bad = client.post(reverse("budgets:budget-create"), {"cost_centre": centre.pk, "amount": "-5", "currency": "USD",
                                                         "period": "annual", "start_date": "2026-01-01"})
    assert bad.status_code == 400 and "amount" in bad.context["form"].errors
    good = client.post(reverse("budgets:budget-create"), {"cost_centre": centre.pk, "amount": "5000.50",
                                                          "currency": "USD", "period": "monthly",
                                                          "start_date": "2026-01-01"})
    assert good.status_code == 302 and str(Budget.objects.get().amount) == "5000.50"
    named = client.post(reverse("budgets:cost-centre-create"), {"code": "=CMD()", "name": "@risky"})
    assert named.status_code == 302 and CostCentre.objects.filter(code="=CMD()").exists()
    exported = client.get(reverse("budgets:export-csv")).content.decode()
    assert "'=CMD()" in exported and "'@risky" in exported  # formula-injection safe text cells
