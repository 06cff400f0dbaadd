"""The list of a team's workload summaries, filtered by the FilterSet the API shares."""

import pytest
from django.urls import reverse

from apps.workloads.tests.factories import WorkloadSummaryFactory, draft_summary, ready_summary

pytestmark = pytest.mark.django_db


def names(response):
    return [row["summary"].name for row in response.context["rows"]]


def test_the_list_shows_the_newest_version_of_each_team_workload(client_for, platform_user, team, other_team):
    ready = ready_summary(team, name="Chat")
    draft_summary(team, name="Chat", workload=ready.workload, version=2)
    WorkloadSummaryFactory(team=team, name="Batch", workload_type="batch_inference")
    WorkloadSummaryFactory(team=other_team, name="Secret")
    response = client_for(platform_user).get(reverse("workloads:list"))
    assert sorted(names(response)) == ["Batch", "Chat"]
    assert [row["summary"].version for row in response.context["rows"] if row["summary"].name == "Chat"] == [2]


def test_the_list_filters_by_type_status_and_text(client_for, platform_user, team):
    ready_summary(team, name="Chat")
    WorkloadSummaryFactory(team=team, name="Nightly batch", workload_type="batch_inference")
    client = client_for(platform_user)
    assert names(client.get(reverse("workloads:list"), {"workload_type": "batch_inference"})) == ["Nightly batch"]
    assert names(client.get(reverse("workloads:list"), {"status": "ready"})) == ["Chat"]
    assert names(client.get(reverse("workloads:list"), {"search": "llama"})) == ["Chat"]  # the model name matches


def test_every_version_is_listed_when_asked(client_for, platform_user, team):
    ready = ready_summary(team, name="Chat")
    draft_summary(team, name="Chat", workload=ready.workload, version=2)
    response = client_for(platform_user).get(reverse("workloads:list"), {"latest": "false"})
    assert sorted(row["summary"].version for row in response.context["rows"]) == [1, 2]


def test_finance_sees_the_list_without_the_file_button(client_for, finance_user, team):
    WorkloadSummaryFactory(team=team)
    page = client_for(finance_user).get(reverse("workloads:list")).content.decode()
    assert 'id="new-workload"' not in page and 'id="workload-table"' in page
