"""The team administration pages: a team admin sets up their own team (people, roles, a pool and its token), never
another team, never staff or superuser rights, never a role for themselves; a superuser creates teams."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from apps.accounts.models import Membership, Team
from apps.audit.models import ObjectChange
from apps.fleet import protocol
from apps.fleet.models import AgentPool, RegistrationToken
from apps.teams.services import roles_of
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


def entries_for(instance, action=None):
    entries = ObjectChange.objects.for_object(instance)
    return entries.filter(action=action) if action else entries


def test_team_admin_creates_a_person_with_roles_shown_a_one_time_password(client_for, team_admin, team):
    client = client_for(team_admin)
    response = client.post(reverse("teams:person-create", args=[team.pk]), {
        "username": "fiona", "email": "fiona@example.test", "roles": ["finance", "product"],
        "is_staff": "on", "is_superuser": "on",  # not fields of the form: ignored
    })
    assert response.status_code == 200
    password = response.context["password"]
    person = User.objects.get(username="fiona")
    assert person.check_password(password) and password not in person.password  # only the hash is stored
    assert roles_of(person) == {"finance", "product"}
    assert not person.is_staff and not person.is_superuser
    membership = Membership.objects.get(team=team, user=person)
    assert password in response.content.decode()
    assert password not in client.get(reverse("teams:detail", args=[team.pk])).content.decode()
    # Audited: the person (without the password hash), the membership, the roles before and after.
    created = entries_for(person, "create").get()
    assert created.actor == team_admin and created.team == team and "password" not in created.after
    assert entries_for(membership, "create").get().team == team
    roles_entry = entries_for(membership, "update").get()
    assert roles_entry.before == {"roles": []} and roles_entry.after == {"roles": ["finance", "product"]}


def test_the_new_person_logs_in_with_the_one_time_password_and_replaces_it(client, client_for, team_admin, team):
    password = client_for(team_admin).post(reverse("teams:person-create", args=[team.pk]),
                                           {"username": "pia", "roles": ["platform"]}).context["password"]
    client.logout()
    login = client.post(reverse("accounts:login"), {"username": "pia", "password": password})
    assert login.status_code == 302
    response = client.post(reverse("accounts:password-change"), {
        "old_password": password,
        "new_password1": "a-much-longer-phrase-42",
        "new_password2": "a-much-longer-phrase-42",
    })
    assert response.status_code == 302
    assert User.objects.get(username="pia").check_password("a-much-longer-phrase-42")


def test_team_admin_cannot_reach_another_teams_page_members_or_pools(client_for, team_admin, other_team):
    stranger = UserFactory(username="stranger", roles=["product"], teams=[other_team])
    membership = Membership.objects.get(user=stranger)
    client = client_for(team_admin)
    assert client.get(reverse("teams:detail", args=[other_team.pk])).status_code == 404
    assert client.post(reverse("teams:person-create", args=[other_team.pk]),
                       {"username": "sneaky", "roles": ["admin"]}).status_code == 404
    assert client.post(reverse("teams:pool-create", args=[other_team.pk]), {"name": "p"}).status_code == 404
    assert client.post(reverse("teams:membership-roles", args=[membership.pk]),
                       {"roles": ["admin"]}).status_code == 404
    assert client.post(reverse("teams:membership-remove", args=[membership.pk])).status_code == 404
    assert not User.objects.filter(username="sneaky").exists()
    assert roles_of(stranger) == {"product"} and Membership.objects.filter(pk=membership.pk).exists()
    assert not AgentPool.objects.exists()


def test_team_admin_cannot_give_themselves_a_role(client_for, team_admin):
    membership = Membership.objects.get(user=team_admin)
    response = client_for(team_admin).post(reverse("teams:membership-roles", args=[membership.pk]),
                                           {"roles": ["admin", "finance"]}, follow=True)
    assert roles_of(team_admin) == {"admin"}
    assert "You cannot give yourself a role" in response.content.decode()
    assert not entries_for(membership, "update").exists()


def test_team_admin_changes_a_members_roles_audited(client_for, team_admin, team, platform_user):
    membership = Membership.objects.get(user=platform_user)
    client_for(team_admin).post(reverse("teams:membership-roles", args=[membership.pk]),
                                {"roles": ["platform", "product"]})
    assert roles_of(platform_user) == {"platform", "product"}
    entry = entries_for(membership, "update").get()
    assert (entry.actor, entry.team) == (team_admin, team)
    assert entry.changes == {"roles": [["platform"], ["platform", "product"]]}


def test_team_admin_cannot_change_roles_of_someone_also_in_a_team_they_do_not_run(client_for, team_admin, team,
                                                                                   other_team):
    # Roles are groups: granting `admin` here would make them admin of other_team too.
    shared = UserFactory(username="shared", roles=["product"], teams=[team, other_team])
    membership = Membership.objects.get(user=shared, team=team)
    client_for(team_admin).post(reverse("teams:membership-roles", args=[membership.pk]), {"roles": ["admin"]})
    assert roles_of(shared) == {"product"}


def test_team_admin_cannot_change_a_superusers_roles_or_remove_them(client_for, team_admin, team):
    boss = UserFactory(username="boss", is_superuser=True, is_staff=True, teams=[team])
    membership = Membership.objects.get(user=boss)
    client = client_for(team_admin)
    client.post(reverse("teams:membership-roles", args=[membership.pk]), {"roles": ["finance"]})
    client.post(reverse("teams:membership-remove", args=[membership.pk]))
    assert roles_of(boss) == set() and Membership.objects.filter(pk=membership.pk).exists()


def test_team_admin_cannot_remove_themselves(client_for, team_admin):
    membership = Membership.objects.get(user=team_admin)
    client_for(team_admin).post(reverse("teams:membership-remove", args=[membership.pk]))
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_removing_a_persons_last_team_clears_their_roles_audited(client_for, team_admin, platform_user):
    membership = Membership.objects.get(user=platform_user)
    response = client_for(team_admin).post(reverse("teams:membership-remove", args=[membership.pk]))
    assert response.status_code == 302
    assert not Membership.objects.filter(user=platform_user).exists() and roles_of(platform_user) == set()
    assert ObjectChange.objects.filter(object_id=str(membership.pk), action="delete").exists()
    assert entries_for(platform_user, "update").get().after == {"roles": []}


def test_adding_an_existing_person_only_from_the_admins_own_teams(client_for, team, other_team):
    second = Team.objects.create(name="Second", slug="second")
    admin = UserFactory(username="two-teams", roles=["admin"], teams=[team, second])
    colleague = UserFactory(username="colleague", roles=["platform"], teams=[team])
    stranger = UserFactory(username="stranger", roles=["platform"], teams=[other_team])
    client = client_for(admin)
    assert client.post(reverse("teams:member-add", args=[second.pk]), {"username": "colleague"}).status_code == 302
    assert Membership.objects.filter(team=second, user=colleague).exists()
    assert client.post(reverse("teams:member-add", args=[second.pk]), {"username": "stranger"}).status_code == 400
    assert not Membership.objects.filter(team=second, user=stranger).exists()


def test_superuser_creates_a_team_audited(client_for, superuser):
    response = client_for(superuser).post(reverse("teams:start"), {
        "name": "Research", "slug": "research", "reporting_currency": "EUR"})
    team = Team.objects.get(slug="research")
    assert response.status_code == 302 and response["Location"] == reverse("teams:detail", args=[team.pk])
    entry = entries_for(team, "create").get()
    assert (entry.actor, entry.team) == (superuser, team)
    assert not Membership.objects.filter(user=superuser).exists()  # a superuser sees every team already


def test_team_admin_cannot_create_a_team_once_one_exists(client_for, team_admin):
    response = client_for(team_admin).post(reverse("teams:start"), {"name": "Mine", "slug": "mine"})
    assert response.status_code == 403 and not Team.objects.filter(slug="mine").exists()


def test_first_run_admin_creates_the_first_team_and_joins_it(client_for, db):
    assert not Team.objects.exists()
    admin = UserFactory(username="first", roles=["admin"])
    client = client_for(admin)
    assert "Create team" in client.get(reverse("teams:start")).content.decode()
    client.post(reverse("teams:start"), {"name": "First", "slug": "first", "reporting_currency": "USD"})
    assert Membership.objects.filter(team__slug="first", user=admin).exists()


def test_team_admin_creates_a_pool_and_its_token_shown_once(client_for, team_admin, team):
    client = client_for(team_admin)
    response = client.post(reverse("teams:pool-create", args=[team.pk]),
                           {"name": "vendor-a trial", "token_description": "vendor A", "single_use": "on"})
    assert response.status_code == 200
    secret = response.context["secret"]
    pool = AgentPool.objects.get(team=team, name="vendor-a trial")
    token = RegistrationToken.objects.get(pool=pool)
    assert token.token_hash == protocol.token_hash(secret) and token.single_use
    page = response.content.decode()
    assert f"dossier-agent register --server http://testserver --registration-token {secret}" in page
    assert f'<code id="registration-token" translate="no">{secret}</code>' in page  # fleet/_registration_token.html
    assert secret not in client.get(pool.get_absolute_url()).content.decode()
    assert secret not in client.get(reverse("teams:detail", args=[team.pk])).content.decode()
    assert entries_for(pool, "create").get().actor == team_admin
    assert entries_for(token, "create").get().after["token_prefix"] == token.token_prefix


def test_other_roles_cannot_use_team_administration(client_for, platform_user, team):
    client = client_for(platform_user)
    assert client.get(reverse("teams:start")).status_code == 403
    assert client.get(reverse("teams:detail", args=[team.pk])).status_code == 404
    assert client.post(reverse("teams:pool-create", args=[team.pk]), {"name": "p"}).status_code == 404


def test_the_header_links_admins_to_team_administration(client_for, team_admin, platform_user):
    link = f'href="{reverse("teams:start")}"'
    assert link in client_for(team_admin).get(reverse("home")).content.decode()
    assert link not in client_for(platform_user).get(reverse("home")).content.decode()


def test_a_platform_user_without_a_pool_sees_who_can_create_one(client_for, platform_user, team_admin, team):
    team_admin.email = "ada@example.test"
    team_admin.save()
    page = client_for(platform_user).get(reverse("fleet:pool-list")).content.decode()
    assert "No agent pool yet." in page and "ada@example.test" in page


def test_a_platform_user_of_a_team_without_admin_is_told_to_ask_a_superuser(client_for, platform_user):
    page = client_for(platform_user).get(reverse("fleet:pool-list")).content.decode()
    assert "ask a superuser" in page
