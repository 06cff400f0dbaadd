"""An agent linked to the candidate whose node it runs on: its inventory is checked against the quote."""

import pytest
from django.urls import reverse

from apps.fleet.inventory_check import ExpectedNode, Interconnect
from apps.fleet.models import Agent
from apps.fleet.selectors import agents_flagged_for
from apps.fleet.services import agent_link_candidate, expected_node_for, record_inventory
from apps.fleet.tests.helpers import inventory


@pytest.fixture
def candidate(team):
    from apps.quotes.models import Quote
    from apps.quotes.tests.url_fixtures import make_candidate

    candidate = make_candidate(team)  # 8× NVIDIA H200 on a quote
    Quote.objects.filter(pk=candidate.quote_id).update(gpu_memory_gb=141, interconnect_intra_node="NVLink 4, NVSwitch")
    candidate.quote.refresh_from_db()
    return candidate


@pytest.mark.django_db
def test_the_expected_node_comes_from_the_quote(candidate):
    expected, description = expected_node_for(candidate)
    assert expected == ExpectedNode(gpu_model="NVIDIA H200", gpu_count=8, memory_mib=141 * 1024,
                                    interconnect=Interconnect.NVLINK)
    assert description["memory_basis"] == "quote GB"


@pytest.mark.django_db
def test_linking_an_agent_flags_a_node_that_is_not_the_quoted_one(agent, candidate):
    record_inventory(agent=agent, inventory=inventory(gpus=4, name="NVIDIA H100 80GB HBM3", memory_mib=81559),
                     source="job")
    agent_link_candidate(agent=agent, candidate=candidate)

    flagged = Agent.objects.get(pk=agent.pk)
    found = {mismatch["field"] for mismatch in flagged.inventory_mismatches}
    assert found == {"gpu_count", "gpu_model", "memory"}
    assert list(agents_flagged_for(candidate)) == [flagged]


@pytest.mark.django_db
def test_a_new_inventory_that_matches_clears_the_flag(agent, candidate):
    agent_link_candidate(agent=agent, candidate=candidate)  # registered with one GPU: flagged
    assert Agent.objects.get(pk=agent.pk).inventory_mismatches

    record_inventory(agent=agent, inventory=inventory(gpus=8), source="start")

    assert Agent.objects.get(pk=agent.pk).inventory_mismatches == []
    assert list(agents_flagged_for(candidate)) == []


@pytest.mark.django_db
def test_a_candidate_of_another_team_cannot_be_linked(agent, other_team):
    from django.core.exceptions import ValidationError

    from apps.quotes.tests.url_fixtures import make_candidate

    with pytest.raises(ValidationError):
        agent_link_candidate(agent=agent, candidate=make_candidate(other_team))


@pytest.mark.django_db
def test_the_agent_page_links_a_candidate_and_shows_the_mismatches(client_for, platform_user, finance_user, agent,
                                                                    candidate):
    response = client_for(platform_user).post(reverse("fleet:agent-candidate", args=[agent.pk]),
                                              {"candidate": candidate.pk})
    assert response.status_code == 302
    page = client_for(finance_user).get(agent.get_absolute_url()).content.decode()
    assert 'id="inventory-mismatches"' in page and candidate.label in page
    assert client_for(finance_user).post(reverse("fleet:agent-candidate", args=[agent.pk]),
                                         {"candidate": ""}).status_code == 403


@pytest.mark.django_db
def test_the_candidate_partial_flags_the_agents_whose_node_differs(rf, agent, candidate):
    from django.template.loader import render_to_string

    agent_link_candidate(agent=agent, candidate=candidate)  # registered with one GPU, the quote says 8
    html = render_to_string("fleet/partials/candidate_agents.html", {"candidate": candidate})
    assert agent.name in html and "difference from the quote" in html


@pytest.mark.django_db
def test_the_candidate_page_flags_an_agent_whose_node_differs_from_the_quote(client_for, finance_user, agent,
                                                                             candidate):
    agent_link_candidate(agent=agent, candidate=candidate)  # registered with one GPU, the quote says 8
    page = client_for(finance_user).get(candidate.get_absolute_url()).content.decode()
    section = page[page.index('id="candidate-agents"'):]
    assert agent.name in section and "difference from the quote" in section
