"""The team administration API: the same rules as the pages (apps/teams/rules.py), audited, another team → 404."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from apps.accounts.models import Membership, Team
from apps.audit.models import ObjectChange
from apps.fleet import protocol
from apps.fleet.models import RegistrationToken
from apps.teams.services import roles_of
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


def post(client, url, body):
    return client.post(url, body, content_type="application/json")


def patch(client, url, body):
    return client.patch(url, body, content_type="application/json")


def test_teams_are_listed_for_the_user_and_every_team_for_a_superuser(client_for, platform_user, superuser, team,
                                                                      other_team):
    slugs = [row["slug"] for row in client_for(platform_user).get(reverse("teams-api:team-list")).json()["results"]]
    assert slugs == [team.slug]
    everyone = client_for(superuser).get(reverse("teams-api:team-list")).json()["results"]
    assert {row["slug"] for row in everyone} == {team.slug, other_team.slug}


def test_only_a_superuser_creates_a_team_once_one_exists(client_for, superuser, team_admin):
    body = {"name": "Research", "slug": "research", "reporting_currency": "EUR"}
    assert post(client_for(team_admin), reverse("teams-api:team-list"), body).status_code == 403
    response = post(client_for(superuser), reverse("teams-api:team-list"), body)
    assert response.status_code == 201 and response.json()["slug"] == "research"
    assert ObjectChange.objects.for_object(Team.objects.get(slug="research")).filter(action="create").exists()


def test_team_admin_creates_a_person_with_roles_never_staff(client_for, team_admin, team):
    response = post(client_for(team_admin), reverse("teams-api:person-create", args=[team.pk]), {
        "username": "fiona", "email": "fiona@example.test", "roles": ["finance"],
        "is_staff": True, "is_superuser": True,  # not fields of this API: ignored
    })
    assert response.status_code == 201, response.content
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    person = User.objects.get(username="fiona")
    assert person.check_password(body["one_time_password"])
    assert not person.is_staff and not person.is_superuser and roles_of(person) == {"finance"}
    assert body["membership"]["roles"] == ["finance"] and body["membership"]["team"] == team.slug
    assert ObjectChange.objects.for_object(person).filter(action="create", actor=team_admin).exists()


def test_a_role_that_is_not_one_of_the_four_is_refused(client_for, team_admin, team):
    response = post(client_for(team_admin), reverse("teams-api:person-create", args=[team.pk]),
                    {"username": "eve", "roles": ["superuser"]})
    assert response.status_code == 400 and "roles" in response.json()
    assert not User.objects.filter(username="eve").exists()


def test_another_teams_memberships_people_and_pools_answer_404(client_for, team_admin, other_team):
    stranger = UserFactory(username="stranger", roles=["product"], teams=[other_team])
    membership = Membership.objects.get(user=stranger)
    client = client_for(team_admin)
    detail = reverse("teams-api:membership-detail", args=[other_team.pk, membership.pk])
    assert client.get(reverse("teams-api:membership-list", args=[other_team.pk])).status_code == 404
    assert patch(client, detail, {"roles": ["admin"]}).status_code == 404
    assert client.delete(detail).status_code == 404
    assert post(client, reverse("teams-api:person-create", args=[other_team.pk]), {"username": "x"}).status_code == 404
    assert post(client, reverse("teams-api:pool-create", args=[other_team.pk]), {"name": "p"}).status_code == 404
    assert roles_of(stranger) == {"product"} and Membership.objects.filter(pk=membership.pk).exists()


def test_a_membership_of_another_team_is_not_reached_through_ones_own_team(client_for, team_admin, team, other_team):
    stranger = UserFactory(username="stranger", roles=["product"], teams=[other_team])
    membership = Membership.objects.get(user=stranger)
    url = reverse("teams-api:membership-detail", args=[team.pk, membership.pk])
    assert patch(client_for(team_admin), url, {"roles": ["admin"]}).status_code == 404


def test_patching_roles_gives_exactly_those_audited(client_for, team_admin, team, platform_user):
    membership = Membership.objects.get(user=platform_user)
    url = reverse("teams-api:membership-detail", args=[team.pk, membership.pk])
    response = patch(client_for(team_admin), url, {"roles": ["product", "platform"]})
    assert response.status_code == 200 and response.json()["roles"] == ["platform", "product"]
    entry = ObjectChange.objects.for_object(membership).get(action="update")
    assert entry.before == {"roles": ["platform"]} and entry.after == {"roles": ["platform", "product"]}


def test_a_team_admin_cannot_raise_their_own_roles_through_the_api(client_for, team_admin, team):
    membership = Membership.objects.get(user=team_admin)
    url = reverse("teams-api:membership-detail", args=[team.pk, membership.pk])
    response = patch(client_for(team_admin), url, {"roles": ["admin", "finance"]})
    assert response.status_code == 400 and "roles" in response.json()
    assert roles_of(team_admin) == {"admin"}


def test_adding_an_existing_person_needs_them_to_share_one_of_the_admins_teams(client_for, team, other_team):
    second = Team.objects.create(name="Second", slug="second")
    admin = UserFactory(username="two-teams", roles=["admin"], teams=[team, second])
    UserFactory(username="colleague", roles=["platform"], teams=[team])
    UserFactory(username="stranger", roles=["platform"], teams=[other_team])
    client = client_for(admin)
    url = reverse("teams-api:membership-list", args=[second.pk])
    assert post(client, url, {"user": "stranger"}).status_code == 400
    response = post(client, url, {"user": "colleague"})
    assert response.status_code == 201 and response.json()["roles"] == ["platform"]


def test_deleting_a_membership_removes_the_person_from_the_team_audited(client_for, team_admin, team, platform_user):
    membership = Membership.objects.get(user=platform_user)
    url = reverse("teams-api:membership-detail", args=[team.pk, membership.pk])
    assert client_for(team_admin).delete(url).status_code == 204
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert ObjectChange.objects.filter(object_id=str(membership.pk), action="delete", actor=team_admin).exists()


def test_other_roles_are_refused_the_memberships(client_for, platform_user, team):
    assert client_for(platform_user).get(reverse("teams-api:membership-list", args=[team.pk])).status_code == 403


def test_team_admin_creates_a_pool_with_its_token_in_the_answer_only(client_for, team_admin, team):
    response = post(client_for(team_admin), reverse("teams-api:pool-create", args=[team.pk]),
                    {"name": "vendor-b", "single_use": True, "expires_in_days": 7})
    assert response.status_code == 201, response.content
    body = response.json()
    token = RegistrationToken.objects.get(pool__team=team, pool__name="vendor-b")
    secret = body["registration_token"]["secret"]
    assert token.token_hash == protocol.token_hash(secret) and token.single_use and token.expires_at
    assert body["registration_token"]["register_command"].endswith(f"--registration-token {secret}")
    assert body["pool"]["team"] == team.slug
    assert ObjectChange.objects.for_object(token).filter(action="create", actor=team_admin).exists()
