"""The comparison's number of SQL queries does not grow with its candidates: 2 candidates and 50 take the same."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.comparison.tests.builders import many_candidates, workload

pytestmark = pytest.mark.django_db


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


@pytest.mark.parametrize("url_name", ["comparison:comparison", "comparison:comparison-print",
                                      "comparison:comparison-csv", "comparison:comparison-xlsx",
                                      "comparison-api:comparison"])
def test_queries_do_not_grow_with_the_candidates(client, team, other_team, platform_user, url_name):
    small = workload(team)
    large = workload(team)
    many_candidates(team, small, 2, actor=platform_user)
    many_candidates(team, large, 50, actor=platform_user)
    client.force_login(platform_user)
    _queries(client, reverse(url_name, args=[small.pk]))  # warm the per-process caches (content types, roles)
    few = _queries(client, reverse(url_name, args=[small.pk]))
    many = _queries(client, reverse(url_name, args=[large.pk]))
    assert 0 < few <= 25, f"{url_name}: {few} queries"
    assert few == many, f"{url_name}: {few} queries for 2 candidates, {many} for 50"


def test_fifty_candidates_are_all_compared(client, team, platform_user):
    summary = workload(team)
    many_candidates(team, summary, 50, actor=platform_user)
    client.force_login(platform_user)
    data = client.get(reverse("comparison-api:comparison", args=[summary.pk])).json()
    assert data["errors"] == []
    assert len([item for item in data["candidates"] if item["row"]]) == 50
