"""The team switcher: only to a team of one's own; the active team follows the session."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from apps.accounts.middleware import ACTIVE_TEAM_SESSION_KEY, active_team_for
from tests.factories import TeamFactory, UserFactory


@pytest.fixture
def two_team_user(team, other_team):
    return UserFactory(username="both", roles=["platform"], teams=[team, other_team])


def test_member_switches_to_another_of_their_teams(client_for, two_team_user, other_team):
    client = client_for(two_team_user)
    response = client.post(reverse("accounts:team-switch"), {"team": other_team.pk, "next": "/catalog/"})
    assert response.status_code == 302 and response["Location"] == "/catalog/"
    assert client.session[ACTIVE_TEAM_SESSION_KEY] == other_team.pk
    assert [str(message) for message in get_messages(response.wsgi_request)] == ["You now work in Other Team."]


def test_switching_to_a_team_you_are_not_in_is_refused(client_for, platform_user, other_team):
    client = client_for(platform_user)
    response = client.post(reverse("accounts:team-switch"), {"team": other_team.pk})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert ACTIVE_TEAM_SESSION_KEY not in client.session
    assert [str(message) for message in get_messages(response.wsgi_request)] == ["That team is not one of yours."]


def test_switch_ignores_a_next_on_another_site(client_for, two_team_user, other_team):
    response = client_for(two_team_user).post(
        reverse("accounts:team-switch"), {"team": other_team.pk, "next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("home")


def test_switch_needs_a_post(client_for, two_team_user):
    assert client_for(two_team_user).get(reverse("accounts:team-switch")).status_code == 405


def test_superuser_may_switch_to_any_team(client_for, db):
    superuser = UserFactory(username="root", is_superuser=True, is_staff=True)
    elsewhere = TeamFactory(name="Elsewhere", slug="elsewhere")
    client = client_for(superuser)
    client.post(reverse("accounts:team-switch"), {"team": elsewhere.pk})
    assert client.session[ACTIVE_TEAM_SESSION_KEY] == elsewhere.pk


def test_active_team_is_the_chosen_one_while_still_a_member(rf, two_team_user, team, other_team):
    request = rf.get("/")
    request.user = two_team_user
    request.session = {ACTIVE_TEAM_SESSION_KEY: other_team.pk}
    assert active_team_for(request) == other_team

    two_team_user.memberships.filter(team=other_team).delete()
    assert active_team_for(request) == team


def test_active_team_defaults_to_the_first_team_by_name(rf, two_team_user):
    request = rf.get("/")
    request.user = two_team_user
    request.session = {}
    assert active_team_for(request).name == "Other Team"


def test_header_lists_only_the_users_teams(client_for, platform_user, other_team):
    html = client_for(platform_user).get(reverse("home")).content.decode()
    assert "Platform Team" in html and "Other Team" not in html
