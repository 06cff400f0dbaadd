"""The issue's worked example, built as users build it (workload version, quotes with sourced prices and cost lines,
candidates, measured phase-4 inputs), must come out to the digits on the comparison page and through the API."""

from decimal import Decimal

import pytest
from django.urls import reverse

EXPECTED = {"a": "0.0004245", "b": "0.0003515", "c": "0.0008325"}

pytestmark = pytest.mark.django_db


def _api(client, user, summary, **params):
    client.force_login(user)
    response = client.get(reverse("comparison-api:comparison", args=[summary.pk]), params)
    assert response.status_code == 200, response.content
    return response.json()


def _rows(data):
    return {item["candidate_id"]: item for item in data["candidates"]}


def test_api_gives_the_worked_example_unit_costs_exactly(client, platform_user, example):
    data = _api(client, platform_user, example.summary)
    rows = _rows(data)
    assert data["errors"] == []
    for name, expected in EXPECTED.items():
        row = rows[getattr(example, name).pk]["row"]
        assert Decimal(row["effective_unit_cost"]) == Decimal(expected)
        assert row["effective_unit_cost"] == expected
    a, b, c = (rows[getattr(example, name).pk]["row"] for name in "abc")
    # The bill (retries inside it, shown once as waste): cost_model's worked example A and B.
    assert (Decimal(a["billed_compute"]), Decimal(a["total_cost"]), a["gpus"]) == (Decimal("6570.00"),
                                                                                   Decimal("8490.00"), 3)
    assert Decimal(a["idle_capacity"]).quantize(Decimal("0.01")) == Decimal("3203.33")
    assert Decimal(a["retry_waste"]).quantize(Decimal("0.01")) == Decimal("33.33")
    assert (Decimal(b["billed_compute"]), Decimal(b["total_cost"]), b["gpus"]) == (Decimal("5110.00"),
                                                                                   Decimal("7030.00"), 2)
    assert Decimal(b["idle_capacity"]).quantize(Decimal("0.01")) == Decimal("2927.90")
    assert Decimal(c["paid_requests"]) == Decimal(20_400_000)
    assert Decimal(c["total_cost"]) == Decimal("16650.00")
    assert data["cheapest_per_accepted_output"] == example.b.pk
    assert data["lowest_hourly_price"] == example.a.pk


def test_every_figure_in_the_api_carries_its_provenance(client, platform_user, example):
    row = _rows(_api(client, platform_user, example.summary))[example.a.pk]["row"]
    kinds = {name: {item["kind"] for item in items} for name, items in row["provenance"].items()}
    assert {"measured", "quoted"} <= kinds["gpu_cost"]  # capacity at the SLO (job) and the price version
    assert kinds["platform_labor"] == {"estimated"}
    assert kinds["storage_network"] == {"quoted"}
    assert "measured" in kinds["failure_waste"]
    estimated = next(item for item in row["provenance"]["platform_labor"])
    assert estimated["by"] == "pat" and "on-call" in estimated["why"]
    quoted = [item["reference"] for item in row["provenance"]["gpu_cost"] if item["kind"] == "quoted"]
    assert any(reference.startswith("price-version:") for reference in quoted)


def test_page_shows_the_worked_example_unit_costs_exactly(client, platform_user, example):
    client.force_login(platform_user)
    response = client.get(reverse("comparison:comparison", args=[example.summary.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    for name, expected in EXPECTED.items():
        candidate = getattr(example, name)
        row_html = page.split(f'id="candidate-{candidate.pk}"')[1].split("</tr>")[0]
        assert f'data-exact="{expected}"' in row_html
        assert expected in row_html.split('data-exact=')[1]  # the shown figure (at least six significant digits)
    assert "0.000424500<" in page and "0.000351500<" in page and "0.000832500<" in page
    assert "6,536.67" in page and "3,203.33" in page and "2,927.90" in page and "16,650.00" not in page
    assert "3.00000" in page and "3.50000" in page  # the hourly price beside the unit cost


def test_page_marks_the_cheapest_output_and_the_cheapest_hour(client, platform_user, example):
    client.force_login(platform_user)
    page = client.get(reverse("comparison:comparison", args=[example.summary.pk])).content.decode()
    row_a = page.split(f'id="candidate-{example.a.pk}"')[1].split("</tr>")[0]
    row_b = page.split(f'id="candidate-{example.b.pk}"')[1].split("</tr>")[0]
    assert "lowest hourly price" in row_a and "cheapest per accepted output" not in row_a
    assert "cheapest per accepted output" in row_b


def test_page_shows_the_provenance_of_each_figure(client, platform_user, example):
    client.force_login(platform_user)
    page = client.get(reverse("comparison:comparison", args=[example.summary.pk])).content.decode()
    row_a = page.split(f'id="candidate-{example.a.pk}"')[1].split("</tr>")[0]
    assert 'class="badge source-measured"' in row_a
    assert 'class="badge source-quoted"' in row_a
    assert 'class="badge source-estimated"' in row_a
    assert f"job:{example.a.pk}01" in row_a  # the capacity's benchmark job, in the badge's title
    assert f'href="{example.a.quote.get_absolute_url()}#price-' in row_a  # the quoted price links to its version


def test_choosing_a_raises_chose_by_hourly_rate_in_the_api_and_on_the_page(client, platform_user, example):
    data = _api(client, platform_user, example.summary, chosen=example.a.pk)
    rule = next(item for item in data["mistakes"] if item["code"] == "chose_by_hourly_rate")
    assert rule["raised"]
    assert [finding["reason"] for finding in rule["findings"]] == ["cheapest_hour_not_cheapest_output"]
    assert "0.0003515" in rule["findings"][0]["message"]

    url = reverse("comparison:comparison", args=[example.summary.pk])
    chose_b = client.get(url, {"chosen": example.b.pk}).content.decode()
    assert 'data-reason="cheapest_hour_not_cheapest_output"' not in chose_b
    chose_a = client.get(url, {"chosen": example.a.pk}).content.decode()
    assert 'data-reason="cheapest_hour_not_cheapest_output"' in chose_a
    assert 'data-mistake="chose_by_hourly_rate" data-raised="yes"' in chose_a


def test_without_a_choice_the_comparison_notes_that_the_leaders_differ(client, platform_user, example):
    data = _api(client, platform_user, example.summary)
    rule = next(item for item in data["mistakes"] if item["code"] == "chose_by_hourly_rate")
    assert [(finding["reason"], finding["severity"]) for finding in rule["findings"]] == [
        ("hour_and_output_leaders_differ", "note")
    ]


def test_workload_and_candidate_pages_link_to_the_comparison(client, platform_user, example):
    client.force_login(platform_user)
    comparison_url = reverse("comparison:comparison", args=[example.summary.pk])
    workload_page = client.get(example.summary.get_absolute_url()).content.decode()
    assert f'href="{comparison_url}"' in workload_page
    candidate_page = client.get(example.a.get_absolute_url()).content.decode()
    assert f'href="{comparison_url}"' in candidate_page
    assert f'href="{reverse("evidence:candidate-figures", args=[example.a.pk])}"' in candidate_page
