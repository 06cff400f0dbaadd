"""Addresses that moved (config/legacy_urls.py) answer a permanent redirect to the new page, query string kept, and
still refuse another team's objects."""

import pytest

from apps.comparison.tests.url_fixtures import make_compared_workload
from apps.evidence.tests.url_fixtures import make_figure

pytestmark = pytest.mark.django_db


def test_an_old_comparison_bookmark_lands_on_the_new_page(client, team, finance_user):
    summary = make_compared_workload(team)
    client.force_login(finance_user)
    response = client.get(f"/decisions/workloads/{summary.pk}/comparison/?chosen=3")
    assert response.status_code == 301
    assert response["Location"] == f"/comparison/workloads/{summary.pk}/?chosen=3"
    assert client.get(response["Location"]).status_code == 200


def test_old_figure_and_export_addresses_redirect(client, team, platform_user):
    figure = make_figure(team)
    client.force_login(platform_user)
    assert client.get(f"/decisions/inputs/{figure.pk}/edit/")["Location"] == f"/evidence/figures/{figure.pk}/edit/"
    assert (client.get(f"/decisions/candidates/{figure.candidate_id}/inputs/")["Location"]
            == f"/evidence/candidates/{figure.candidate_id}/figures/")
    summary_id = figure.candidate.workload_summary_id
    assert (client.get(f"/decisions/workloads/{summary_id}/comparison.xlsx")["Location"]
            == f"/comparison/workloads/{summary_id}/comparison.xlsx")


def test_another_teams_object_is_not_found_at_the_old_address(client, team, other_team):
    from tests.factories import UserFactory

    summary = make_compared_workload(team)
    outsider = UserFactory(username="outsider", roles=["finance"], teams=[other_team])
    client.force_login(outsider)
    assert client.get(f"/decisions/workloads/{summary.pk}/comparison/").status_code == 404
